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
    let host = volumes(1, 16 << 20);
    let dev = host.device_paths()[0].clone();
    // Each run holds the device O_EXCL; the next can only open it if the previous one's claim
    // was gone by the time it returned (or went within the open's patience).
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
    let host = volumes(1, 16 << 20);
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

#[test]
fn an_exclusive_open_waits_out_a_brief_claim_but_not_a_lasting_one() {
    require_root!();
    use std::os::unix::fs::OpenOptionsExt;
    let host = volumes(1, 16 << 20);
    let dev = host.device_paths()[0].clone();
    let claim = || {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL)
            .open(&dev)
            .expect("claim the device")
    };
    // Someone else holds the device for 100 ms: the run waits and then starts.
    let brief = claim();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        drop(brief);
    });
    let handle = hostmax_engine::start(write_config(dev.clone(), Duration::from_millis(100)))
        .expect("a claim shorter than the open's patience is waited out");
    assert!(handle.wait().unwrap().devices[0].write.ios > 0);
    releaser.join().unwrap();
    // A claim that outlasts the patience is a refusal naming the device and EBUSY.
    let _lasting = claim();
    let err = hostmax_engine::start(write_config(dev.clone(), Duration::from_millis(100)))
        .err()
        .expect("a device held by someone else is refused");
    let text = err.to_string();
    assert!(text.contains(&dev.display().to_string()), "{text}");
    assert!(
        matches!(&err, hostmax_engine::EngineError::Open { source, .. } if source.raw_os_error() == Some(libc::EBUSY)),
        "{err:?}"
    );
}
