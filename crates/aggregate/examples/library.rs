//! Using hostmax as a library: measure some targets with the engine (write safety included),
//! merge their histograms with the aggregator, and print per-device and host figures.
//!
//! `cargo run --release --example library -- /dev/loop0 /dev/loop1`
//! With no arguments it makes a 64 MiB file in the temporary directory and reads that
//! (regular files work for unprivileged users too).

use std::time::Duration;

use hostmax_aggregate::{summarize, TimeSeries};
use hostmax_engine::{DeviceInterval, IoPattern, MeasureRequest, OpKind, Workload};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut targets: Vec<std::path::PathBuf> =
        std::env::args_os().skip(1).map(Into::into).collect();
    let _scratch;
    if targets.is_empty() {
        let dir = std::env::temp_dir().join(format!("hostmax-example-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        _scratch = ScratchDir(dir.clone());
        let file = dir.join("volume.img");
        std::fs::File::create(&file)?.set_len(64 << 20)?;
        targets.push(file);
    }
    let workload = Workload::default()
        .with_pattern(IoPattern::RandRead)
        .with_block_size(4096)
        .with_iodepth(16)
        .with_runtime(Duration::from_secs(2))
        .with_ramp(Duration::from_millis(500));
    // One host point per second, merged from every device's interval histograms.
    let mut series = TimeSeries::new(targets.len());
    // A writing workload would be refused on devices in use or without consent
    // (`.with_consent(WriteSafety { allow_write: true, .. })`), as the CLI refuses them.
    let request = MeasureRequest::new(targets, workload);
    let result = hostmax_engine::measure(request, &mut |interval: DeviceInterval| {
        if let Some(point) = series.push(interval) {
            println!("second {}: {:.0} IOPS", point.second, point.iops);
        }
    })?;
    let report = summarize(&result, series.finish());
    for d in &report.devices {
        println!(
            "{}: {:.0} IOPS, p99 {} ns, errors {}",
            d.path,
            d.figures.iops,
            d.figures.ops[OpKind::Read].latency_ns.p99,
            d.figures.errors
        );
    }
    println!(
        "host: {:.0} IOPS, p99 {} ns (from the merged histograms)",
        report.host.iops,
        report.host.ops[OpKind::Read].latency_ns.p99
    );
    assert!(report.host.ops[OpKind::Read].ios > 0, "the run did no I/O");
    Ok(())
}

/// Removes the scratch directory when the example ends.
struct ScratchDir(std::path::PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
