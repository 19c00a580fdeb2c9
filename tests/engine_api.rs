//! The engine as a library (what other Rust tools call): back-to-back runs in one process, and
//! stopping a run from another thread.

mod support;

use std::time::{Duration, Instant};

use hostmax_engine::{IoPattern, RunConfig, Workload};
use support::*;

fn write_config(path: std::path::PathBuf, runtime: Duration) -> RunConfig {
    RunConfig {
        targets: vec![path],
        workload: Workload {
            pattern: IoPattern::RandWrite,
            runtime,
            ramp: Duration::ZERO,
            iodepth: 8,
            ..Workload::default()
        },
        cpus: None,
        live: false,
        layout: Default::default(),
        on_error: Default::default(),
        polling: Default::default(),
    }
}

#[test]
fn back_to_back_write_runs_reopen_the_device_exclusively() {
    require_root!();
    let host = loop_volumes(1, 16 << 20);
    let dev = host.device_paths()[0].clone();
    // Each run holds the device O_EXCL; the next can only open it if the previous ring let go
    // of its registered files synchronously.
    for run in 0..10 {
        let handle = hostmax_engine::start(write_config(dev.clone(), Duration::from_millis(100)))
            .unwrap_or_else(|e| panic!("run {run}: {e}"));
        let result = handle.wait().unwrap();
        assert!(result.devices[0].write.ios > 0, "run {run} wrote nothing");
    }
}

#[test]
fn a_run_stopped_from_another_thread_ends_early_and_says_so() {
    require_root!();
    let host = loop_volumes(1, 16 << 20);
    let dev = host.device_paths()[0].clone();
    let started = Instant::now();
    let handle = hostmax_engine::start(write_config(dev, Duration::from_secs(30))).unwrap();
    let stopper = handle.stopper();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        stopper.stop();
    });
    let result = handle.wait().unwrap();
    assert!(result.stopped_early);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the stop was not honoured"
    );
    assert!(
        result.measured < Duration::from_secs(2),
        "{:?}",
        result.measured
    );
    assert!(result.devices[0].write.ios > 0);
}
