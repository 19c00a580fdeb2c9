//! The engine as a library (what other Rust tools call): back-to-back runs in one process, and
//! stopping a run from another thread.

mod support;

use std::time::{Duration, Instant};

use hostmax_engine::{IoPattern, OpKind, RunConfig, Workload};
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
        assert!(
            result.devices[0].ops[OpKind::Write].ios > 0,
            "run {run} wrote nothing"
        );
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
    assert!(result.devices[0].ops[OpKind::Write].ios > 0);
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
    assert!(handle.wait().unwrap().devices[0].ops[OpKind::Write].ios > 0);
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

/// A library user's measurement refuses a write to a device that is in use (another program
/// holds it `O_EXCL`) or that nobody consented to write, with the engine's own error type and
/// without writing a block; once the device is free and consent given, the same call runs.
#[test]
fn measure_refuses_a_device_in_use_with_the_library_error() {
    require_root!();
    use hostmax_device::{RefusalReason, WriteSafety};
    use hostmax_engine::{DeviceInterval, EngineError, MeasureRequest};
    use std::os::unix::fs::OpenOptionsExt;
    let host = volumes(1, 16 << 20);
    let dev = host.device_paths()[0].clone();
    let name = volume_kernel_names(&host)[0].clone();
    let workload = write_config(dev.clone(), Duration::from_millis(1500)).workload;
    let request = || MeasureRequest::new(vec![dev.clone()], workload.clone());
    let consent = WriteSafety {
        allow_write: true,
        force: true,
    };
    let writes_before = kernel_completions(&name).1;
    let intervals = std::cell::Cell::new(0);
    let mut count = |_: DeviceInterval| intervals.set(intervals.get() + 1);

    // No consent: refused, and the message says which setting grants it.
    let err = hostmax_engine::measure(request(), &mut count).expect_err("written without consent");
    let EngineError::WriteRefused(refused) = &err else {
        panic!("not a write refusal: {err:?}");
    };
    assert_eq!(refused.refusals[0].path, dev);
    assert_eq!(
        refused.refusals[0].reasons,
        vec![RefusalReason::NeedsAllowWrite]
    );
    assert!(
        err.to_string().contains("WriteSafety::allow_write"),
        "{err}"
    );

    // Held by another program: refused whatever the consent.
    let held = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(&dev)
        .expect("claim the device");
    let err = hostmax_engine::measure(request().with_consent(consent), &mut count)
        .expect_err("a device held by another program was written");
    let EngineError::WriteRefused(refused) = &err else {
        panic!("not a write refusal: {err:?}");
    };
    assert!(
        refused.refusals[0].reasons.contains(&RefusalReason::Busy),
        "{err}"
    );
    assert!(
        err.to_string().contains(&dev.display().to_string()),
        "{err}"
    );
    assert_eq!(
        kernel_completions(&name).1,
        writes_before,
        "a refused measurement wrote"
    );
    assert_eq!(intervals.get(), 0);

    // Free and consented: it measures, and the observer hears every second.
    drop(held);
    let result = hostmax_engine::measure(request().with_consent(consent), &mut count)
        .expect("a free device with consent is measured");
    assert!(result.devices[0].ops[OpKind::Write].ios > 0);
    assert!(intervals.get() > 0, "no interval reached the observer");
}

/// A library caller naming the same target twice, by any path (a hard link or a symlink to a
/// file, a second name for a block device), gets the engine's typed refusal before any I/O,
/// not a panic after the run.
#[test]
fn the_same_target_named_twice_is_refused_before_any_io() {
    use hostmax_engine::{EngineError, MeasureRequest};
    let scratch = ScratchDir::new("dup");
    let dir = scratch.0.clone();
    let file = dir.join("target.img");
    std::fs::write(&file, vec![0u8; 1 << 20]).unwrap();
    let hard = dir.join("hard.img");
    let soft = dir.join("soft.img");
    let _ = std::fs::remove_file(&hard);
    let _ = std::fs::remove_file(&soft);
    std::fs::hard_link(&file, &hard).unwrap();
    std::os::unix::fs::symlink(&file, &soft).unwrap();
    let refused = |second: &std::path::Path, err: EngineError| {
        assert!(
            matches!(&err, EngineError::DuplicateTarget { path, first, .. } if path == second && *first == file),
            "{err:?}"
        );
    };
    for second in [&hard, &soft, &file] {
        let config = RunConfig {
            targets: vec![file.clone(), second.clone()],
            ..write_config(file.clone(), Duration::from_millis(300))
        };
        let err = hostmax_engine::start(config.clone())
            .err()
            .expect("started");
        refused(second, err);
        let request = MeasureRequest::new(config.targets.clone(), config.workload.clone());
        let mut ignore = |_: hostmax_engine::DeviceInterval| {};
        let err = hostmax_engine::measure(request, &mut ignore).expect_err("measured");
        refused(second, err);
    }
    assert!(
        std::fs::read(&file).unwrap().iter().all(|&b| b == 0),
        "a refused run wrote"
    );

    // A block device under a second name (a symlink to its node).
    if is_root() {
        let host = volumes(1, 16 << 20);
        let dev = host.device_paths()[0].clone();
        let alias = dir.join("alias");
        let _ = std::fs::remove_file(&alias);
        std::os::unix::fs::symlink(&dev, &alias).unwrap();
        let config = RunConfig {
            targets: vec![dev.clone(), alias.clone()],
            ..write_config(dev.clone(), Duration::from_millis(300))
        };
        let err = hostmax_engine::start(config).err().expect("started");
        assert!(
            matches!(&err, EngineError::DuplicateTarget { path, first, what: "device" } if *path == alias && *first == dev),
            "{err:?}"
        );
    }
}

/// A report made through the libraries alone carries its run's id and measured window, so
/// `merge_reports` refuses it given twice.
#[test]
fn a_library_report_carries_its_run_id_and_window() {
    require_root!();
    let host = volumes(1, 16 << 20);
    let dev = host.device_paths()[0].clone();
    let mut config = write_config(dev, Duration::from_millis(300));
    config.workload.pattern = IoPattern::RandRead;
    let before = std::time::SystemTime::now();
    let result = hostmax_engine::start(config.clone())
        .unwrap()
        .wait()
        .unwrap();
    let from = result.measured_from.expect("the engine records its window");
    assert!(from >= before, "{from:?} before {before:?}");
    assert_ne!(result.run_id, 0);
    let report = hostmax_aggregate::summarize(&result, Vec::new());
    let p = &report.provenance;
    assert_eq!(p.run_id, Some(format!("{:016x}", result.run_id)));
    assert!(p.started_at.is_some() && p.ended_at.is_some(), "{p:?}");
    assert!(p.started_at < p.ended_at, "{p:?}");
    let err =
        hostmax_aggregate::merge_reports(&[("one".into(), report.clone()), ("two".into(), report)])
            .unwrap_err();
    assert!(
        matches!(err, hostmax_aggregate::MergeError::SameRun { .. }),
        "{err}"
    );
}
