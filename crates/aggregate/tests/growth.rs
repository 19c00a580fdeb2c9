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

/// What a client that judges a run meets (issue 41, item 13): a flat promise needs no size,
/// a verdict and its judgement say themselves (`Display`), and the verdict's tolerance is the
/// `Tolerance` its figures' checks take.
#[test]
fn a_verdict_is_built_read_and_said_as_a_client_needs() {
    use hostmax_aggregate::hostmax_engine::{
        new_latency_histogram, DeviceResult, OpKind, OpResult, PerOp,
    };
    use hostmax_aggregate::spec::SpecError;
    use hostmax_aggregate::verdict::Judgement;
    use hostmax_aggregate::{judge, summarize};

    // One volume's 2000 reads of 4 KiB in 1 s at depth 32, 500 µs each: IOPS can be judged.
    let workload = Workload::default()
        .with_pattern(IoPattern::RandRead)
        .with_block_size(4096)
        .with_iodepth(32);
    let ops = PerOp::from_fn(|op| {
        let mut latency = new_latency_histogram();
        let ios = if op == OpKind::Read { 2000 } else { 0 };
        if ios > 0 {
            latency.record_n(500_000, ios).unwrap();
        }
        OpResult::new(ios, ios * 4096, latency)
    });
    let device = DeviceResult::new(PathBuf::from("/dev/x"), 0, ops);
    let result = RunResult::new(workload, vec![device], Duration::from_secs(1));
    let report = summarize(&result, Vec::new());

    let judged = |iops: &str| {
        let spec: VolumeSpec = iops.parse().unwrap();
        let promise = DeviceExpectation::flat("/dev/x", spec, "flat").unwrap();
        assert_eq!(promise.size_bytes, 0);
        let set = SpecSet::new(vec![promise], HostSpec::default(), Tolerance::DEFAULT);
        judge(&set, &[&report])
    };
    let kept = judged("iops=1900");
    assert_eq!(kept.judgement, Judgement::Pass);
    assert_eq!(kept.judgement.to_string(), "PASS");
    assert_eq!(
        kept.to_string(),
        "PASS: every judged figure is within 5% of its promise"
    );
    // The verdict's tolerance goes straight to its figures' checks.
    let t: Tolerance = kept.tolerance;
    assert_eq!(kept.devices[0].figures.checks(t), vec![("IOPS", true)]);
    // JSON keeps the fraction.
    assert_eq!(serde_json::to_value(&kept).unwrap()["tolerance"], 0.05);

    let broken = judged("iops=5000");
    assert_eq!(broken.judgement.to_string(), "FAIL");
    assert_eq!(broken.to_string(), "FAIL: /dev/x IOPS");

    // Nothing promised that the run could show: a p95 promise needs a depth-1 run.
    let unshown = judged("p95_ms=1");
    assert_eq!(unshown.judgement.to_string(), "NOT JUDGED");
    assert!(
        unshown
            .to_string()
            .starts_with("NOT JUDGED: no promise could be judged (volume p95 latency: needs "),
        "{unshown}"
    );

    // A per-GB promise needs the volume's size: refused without one, naming the way.
    let per_gb: VolumeSpec = "iops=60/GB".parse().unwrap();
    let err = DeviceExpectation::flat("/dev/x", per_gb, "per GB").unwrap_err();
    assert!(matches!(err, SpecError::NeedsSize(_)), "{err:?}");
    assert!(err.to_string().contains("DeviceExpectation::new"), "{err}");
}
