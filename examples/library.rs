//! Using hostmax as a library: drive some targets with the engine and print what each did.
//!
//! `cargo run --release --example library -- /dev/loop0 /dev/loop1`
//! With no arguments it makes a 64 MiB file in the temporary directory and reads that.

use std::time::Duration;

use hostmax_engine::{IoPattern, RunConfig, Workload};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut targets: Vec<std::path::PathBuf> =
        std::env::args_os().skip(1).map(Into::into).collect();
    let _scratch;
    if targets.is_empty() {
        let dir = std::env::temp_dir().join(format!("hostmax-example-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let file = dir.join("volume.img");
        std::fs::File::create(&file)?.set_len(64 << 20)?;
        targets.push(file);
        _scratch = ScratchDir(dir);
    }
    let workload = Workload {
        pattern: IoPattern::RandRead,
        block_size: 4096,
        iodepth: 16,
        runtime: Duration::from_secs(2),
        ramp: Duration::from_millis(500),
        ..Workload::default()
    };
    let run = hostmax_engine::start(RunConfig {
        targets,
        workload: workload.clone(),
        cpus: None,
        live: false,
        on_error: Default::default(),
        layout: Default::default(),
    })?;
    let result = run.wait()?;
    let secs = result.measured.as_secs_f64();
    for d in &result.devices {
        println!(
            "{}: {:.0} IOPS, p99 {} us, errors {}",
            d.path.display(),
            d.read.ios as f64 / secs,
            d.read.latency.value_at_quantile(0.99) / 1000,
            d.errors.count
        );
    }
    for w in &result.workers {
        println!(
            "worker cpu {} devices {:?} ring {:?}",
            w.cpu, w.devices, w.ring
        );
    }
    Ok(())
}

/// Removes the scratch directory when the example ends.
struct ScratchDir(std::path::PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
