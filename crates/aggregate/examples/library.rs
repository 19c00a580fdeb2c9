//! Using hostmax as a library: measure some targets with the engine (write safety included),
//! merge their histograms with the aggregator, print per-device and host figures, and judge
//! them against a promise.
//!
//! `cargo run --release --example library -- [--write] /dev/loop0 /dev/loop1`
//! With no targets it makes a 64 MiB file in the temporary directory and reads that
//! (regular files work for unprivileged users too). `--write` writes them instead, with the
//! consent the tool's `--allow-write` gives.

use std::time::Duration;

use hostmax_aggregate::spec::{HostSpec, Tolerance, VolumeSpec};
use hostmax_aggregate::verdict::DeviceExpectation;
use hostmax_aggregate::{judge, summarize, SpecSet, TimeSeries};
use hostmax_engine::{DeviceInterval, IoPattern, MeasureRequest, OpKind, Workload, WriteSafety};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let writes = args.first().is_some_and(|a| a == "--write");
    if writes {
        args.remove(0);
    }
    let mut targets: Vec<std::path::PathBuf> = args.into_iter().map(Into::into).collect();
    let _scratch;
    if targets.is_empty() {
        let dir = std::env::temp_dir().join(format!("hostmax-example-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        _scratch = ScratchDir(dir.clone());
        let file = dir.join("volume.img");
        std::fs::File::create(&file)?.set_len(64 << 20)?;
        targets.push(file);
    }
    let (pattern, kind) = if writes {
        (IoPattern::RandWrite, OpKind::Write)
    } else {
        (IoPattern::RandRead, OpKind::Read)
    };
    let workload = Workload::default()
        .with_pattern(pattern)
        .with_block_size(4096)
        .with_iodepth(16)
        .with_runtime(Duration::from_secs(2))
        .with_ramp(Duration::from_millis(500));
    // One host point per second, merged from every device's interval histograms.
    let mut series = TimeSeries::new(targets.len());
    // A writing workload is refused on devices in use whatever the consent, and on devices
    // (or files holding data) without it, as the CLI refuses them.
    let request = MeasureRequest::new(targets, workload)
        .with_consent(WriteSafety::NONE.with_allow_write(writes));
    let result = hostmax_engine::measure(request, &mut |interval: DeviceInterval| {
        if let Some(point) = series.push(interval) {
            println!("second {}: {:.0} IOPS", point.second, point.iops);
        }
    })?;
    let report = summarize(&result, series.finish());
    for d in &report.devices {
        println!(
            "{}: {:.0} IOPS, p99 {} ns, errors {}",
            d.path, d.figures.iops, d.figures.ops[kind].latency_ns.p99, d.figures.errors
        );
    }
    println!(
        "host: {:.0} IOPS, p99 {} ns (from the merged histograms)",
        report.host.iops, report.host.ops[kind].latency_ns.p99
    );
    assert!(report.host.ops[kind].ios > 0, "the run did no I/O");

    // Every volume promised 1000 IOPS (a flat promise: no size needed), within 5%.
    let promise: VolumeSpec = "iops=1000".parse()?;
    let volumes = report
        .devices
        .iter()
        .map(|d| DeviceExpectation::flat(d.path.clone(), promise.clone(), "1000 IOPS"))
        .collect::<Result<Vec<_>, _>>()?;
    let specs = SpecSet::new(volumes, HostSpec::default(), Tolerance::DEFAULT);
    let verdict = judge(&specs, &[&report]);
    for d in &verdict.devices {
        println!("{}: {}", d.path, d.judgement);
    }
    println!("{verdict}");
    Ok(())
}

/// Removes the scratch directory when the example ends.
struct ScratchDir(std::path::PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
