//! Using hostmax as a library: drive some targets with the engine, merge their histograms
//! with the aggregator, and print per-device and host figures.
//!
//! `cargo run --release --example library -- /dev/loop0 /dev/loop1`
//! With no arguments it makes a 64 MiB file in the temporary directory and reads that
//! (regular files work for unprivileged users too).

use std::time::Duration;

use hostmax_aggregate::{summarize, TimeSeries};
use hostmax_engine::{IoPattern, RunConfig, Workload};

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
    let workload = Workload {
        pattern: IoPattern::RandRead,
        block_size: 4096,
        iodepth: 16,
        runtime: Duration::from_secs(2),
        ramp: Duration::from_millis(500),
        ..Workload::default()
    };
    let device_count = targets.len();
    let run = hostmax_engine::start(RunConfig {
        targets,
        workload: workload.clone(),
        cpus: None,
        live: true,
        layout: Default::default(),
        on_error: Default::default(),
        polling: Default::default(),
    })?;
    // One host point per second, merged from every device's interval histograms.
    let mut series = TimeSeries::new(device_count);
    while !run.is_finished() {
        if let Some(interval) = run.recv_interval(Duration::from_millis(200)) {
            if let Some(point) = series.push(interval) {
                println!("second {}: {:.0} IOPS", point.second, point.iops);
            }
        }
    }
    while let Some(interval) = run.recv_interval(Duration::ZERO) {
        series.push(interval);
    }
    let result = run.wait()?;
    let report = summarize(&result, &workload, series.finish());
    for d in &report.devices {
        println!(
            "{}: {:.0} IOPS, p99 {} ns, errors {}",
            d.path, d.figures.iops, d.figures.read.latency_ns.p99, d.figures.errors
        );
    }
    println!(
        "host: {:.0} IOPS, p99 {} ns (from the merged histograms)",
        report.host.iops, report.host.read.latency_ns.p99
    );
    assert!(report.host.read.ios > 0, "the run did no I/O");
    Ok(())
}

/// Removes the scratch directory when the example ends.
struct ScratchDir(std::path::PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
