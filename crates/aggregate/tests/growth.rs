//! The libraries' growth rule, as a user outside them meets it: every input is built through
//! its constructor, `Default` and `with_*` setters (a struct literal would not compile, the
//! types being `#[non_exhaustive]`), and the device types the engine's API names come through
//! the engine. If a constructor or setter goes away, this file stops compiling.

use std::path::PathBuf;
use std::time::Duration;

use hostmax_aggregate::curve::{
    CurveLatency, CurvePoint, LatencyPromise, LatencyStat, PointFigures, VolumePoint,
};
use hostmax_aggregate::hostmax_engine::{
    CeilingConfig, ConsentWords, IoPattern, MeasureRequest, Polling, ReadPass, RunConfig,
    RunResult, SafetyCheck, TargetInfo, TargetKind, Workload, WriteData, WriteSafety,
};
use hostmax_aggregate::spec::{HostSpec, Tolerance, VolumeClass, VolumeSpec};
use hostmax_aggregate::verdict::{DeviceExpectation, SpecSet};
use hostmax_aggregate::{Provenance, SweepPoint};

#[test]
fn engine_inputs_are_built_with_constructors_and_setters() {
    let workload = Workload::default()
        .with_pattern(IoPattern::RandWrite)
        .with_iodepth(4)
        .with_runtime(Duration::from_secs(1))
        .with_write_data(WriteData::default().with_verify(true));
    assert_eq!(workload.iodepth, 4);
    assert!(workload.write_data.verify);

    let run = RunConfig::new(vec![PathBuf::from("/dev/x")], workload.clone())
        .with_cpus(Some(vec![0]))
        .with_polling(Polling::default().with_iopoll(true));
    let consent = WriteSafety::default().with_allow_write(true);
    let request = MeasureRequest::for_run(run).with_consent(consent);
    assert_eq!(request.safety, SafetyCheck::Full(consent));
    assert_eq!(request.run.cpus, Some(vec![0]));

    // Fields stay public: assignable on a value built by the constructor.
    let mut ceiling = CeilingConfig::default().with_iodepth(8);
    ceiling.runtime = Duration::from_millis(100);
    assert_eq!(
        (ceiling.iodepth, ceiling.runtime),
        (8, Duration::from_millis(100))
    );

    let pass = ReadPass::new(vec![PathBuf::from("/dev/x")]).with_depth(2);
    assert_eq!(pass.depth, 2);

    let words = ConsentWords::new("--yes", "--force", "--yes --force");
    assert_eq!(words.both, "--yes --force");

    let target = TargetInfo::new("/dev/x", TargetKind::BlockDevice, 1 << 30, 512)
        .with_device((7, 1), "loop1");
    assert_eq!(target.kernel_name.as_deref(), Some("loop1"));

    let result = RunResult::new(workload, Vec::new(), Duration::from_secs(1));
    assert_eq!(result.measured, Duration::from_secs(1));
}

#[test]
fn aggregate_inputs_are_built_with_constructors_and_setters() {
    let spec = VolumeSpec::default().with_p95_ms(Some(2.0));
    let class = VolumeClass::new(spec.clone(), "gold").with_size(Some(1 << 30));
    let device = DeviceExpectation::new("/dev/x", 1 << 30, class.spec, class.label);
    let host = HostSpec::default().with_iops(Some(1000.0));
    let set = SpecSet::new(vec![device], host, Tolerance::default());
    assert_eq!(set.devices[0].spec, spec);
    assert!(!set.is_empty());

    let provenance = Provenance::default().with_run_id(Some("run".into()));
    assert_eq!(provenance.run_id.as_deref(), Some("run"));

    let latency = CurveLatency::default().with_p99(1_000);
    let figures = PointFigures::new(100.0, 409_600.0, latency);
    let point = CurvePoint::new(
        1,
        figures.clone(),
        vec![VolumePoint::new("/dev/x", figures)],
    );
    assert!(LatencyPromise::new(LatencyStat::P99, 1_000).holds(&point.host.latency_ns));

    assert_eq!(SweepPoint::new(2, 10.0, 40_960.0).volumes, 2);
}
