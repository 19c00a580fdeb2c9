//! The engine as a library (what other Rust tools call): back-to-back runs in one process,
//! stopping a run from another thread, the refusals a caller gets, its counts against the
//! kernel's own, an I/O limit, and the discard and zero fill a benchmark's purge uses.

// The harness's part that needs no hostmax binary (this package has none).
#[path = "../../../tests/support/volumes.rs"]
mod support;

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use hostmax_simhost::AlignedBlock;

use hostmax_engine::{
    measure, DeviceInterval, EngineError, IoPattern, MeasureRequest, Observer, OpKind, RunConfig,
    RunHandle, RunResult, SafetyCheck, Workload, WriteSafety,
};
use support::*;

/// Consent to write the scratch volumes these tests make.
const SCRATCH: WriteSafety = WriteSafety::NONE.with_allow_write(true).with_force(true);

fn write_config(path: std::path::PathBuf, runtime: Duration) -> RunConfig {
    let workload = Workload::default()
        .with_pattern(IoPattern::RandWrite)
        .with_runtime(runtime)
        .with_ramp(Duration::ZERO)
        .with_iodepth(8);
    RunConfig::new(vec![path], workload)
}

/// Writes exactly `blocks` 4 KiB blocks, however slow the machine: a short timed run can end
/// before a worker woken late has written anything (seen on 6.12's emulated CPUs, where a
/// 100 ms run's first write completed after its end), so a test that asserts the run wrote
/// bounds it by its I/O, with a runtime far past what the writes take.
fn write_blocks_config(path: std::path::PathBuf, blocks: u64) -> RunConfig {
    let mut config = write_config(path, Duration::from_secs(60));
    config.workload = config.workload.with_io_limit(Some(blocks * 4096));
    config
}

/// Measures `config` with only the re-check while the targets are held
/// ([`SafetyCheck::CheckedBefore`]): the full check's own exclusive-open probe (no patience)
/// would stand in front of what these tests look at, the run's own exclusive open.
fn run_checked_before(
    config: RunConfig,
    observer: &mut impl Observer,
) -> Result<RunResult, EngineError> {
    let request = MeasureRequest::for_run(config).with_safety(SafetyCheck::CheckedBefore(SCRATCH));
    measure(request, observer)
}

/// An observer that hears no interval (the runs here are not live).
fn quiet() -> impl FnMut(DeviceInterval) {
    |_| {}
}

#[test]
fn back_to_back_write_runs_reopen_the_device_exclusively() {
    require_root!();
    let host = volumes(1, 16 << 20);
    let dev = host.device_paths()[0].clone();
    // Each run holds the device O_EXCL; the next can only open it if the previous one's claim
    // was gone by the time it returned (or went within the open's patience).
    for run in 0..10 {
        let result = run_checked_before(write_blocks_config(dev.clone(), 64), &mut quiet())
            .unwrap_or_else(|e| panic!("run {run}: {e}"));
        assert_eq!(
            result.devices[0].ops[OpKind::Write].ios,
            64,
            "run {run} did not write its 64 blocks"
        );
    }
}

/// Stops the run it observes from another thread, `after` its start.
struct StopFromAnotherThread {
    after: Duration,
}

impl Observer for StopFromAnotherThread {
    fn started(&mut self, run: &RunHandle) {
        let stopper = run.stopper();
        let after = self.after;
        std::thread::spawn(move || {
            std::thread::sleep(after);
            stopper.stop();
        });
    }
}

#[test]
fn a_run_stopped_from_another_thread_ends_early_and_says_so() {
    require_root!();
    let host = volumes(1, 16 << 20);
    let dev = host.device_paths()[0].clone();
    let started = Instant::now();
    let mut stop = StopFromAnotherThread {
        after: Duration::from_millis(300),
    };
    let result = run_checked_before(write_config(dev, Duration::from_secs(30)), &mut stop).unwrap();
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
    let result = run_checked_before(write_blocks_config(dev.clone(), 64), &mut quiet())
        .expect("a claim shorter than the open's patience is waited out");
    assert_eq!(result.devices[0].ops[OpKind::Write].ios, 64);
    releaser.join().unwrap();
    // A claim that outlasts the patience is a refusal naming the device and EBUSY.
    let _lasting = claim();
    let err = run_checked_before(
        write_config(dev.clone(), Duration::from_millis(100)),
        &mut quiet(),
    )
    .expect_err("a device held by someone else is refused");
    let text = err.to_string();
    assert!(text.contains(&dev.display().to_string()), "{text}");
    assert!(
        matches!(&err, EngineError::Open { source, .. } if source.raw_os_error() == Some(libc::EBUSY)),
        "{err:?}"
    );
}

/// A library user's measurement refuses a write to a device that is in use (another program
/// holds it `O_EXCL`) or that nobody consented to write, with the engine's own error type and
/// without writing a block; once the device is free and consent given, the same call runs.
#[test]
fn measure_refuses_a_device_in_use_with_the_library_error() {
    require_root!();
    use hostmax_device::RefusalReason;
    use std::os::unix::fs::OpenOptionsExt;
    let host = volumes(1, 16 << 20);
    let dev = host.device_paths()[0].clone();
    let name = volume_kernel_names(&host)[0].clone();
    let workload = write_config(dev.clone(), Duration::from_millis(1500)).workload;
    let request = || MeasureRequest::new(vec![dev.clone()], workload.clone());
    let writes_before = kernel_completions(&name).1;
    let intervals = std::cell::Cell::new(0);
    let mut count = |_: DeviceInterval| intervals.set(intervals.get() + 1);

    // No consent: refused, and the message says which setting grants it.
    let err = measure(request(), &mut count).expect_err("written without consent");
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
    let err = measure(request().with_consent(SCRATCH), &mut count)
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
    let result = measure(request().with_consent(SCRATCH), &mut count)
        .expect("a free device with consent is measured");
    assert!(result.devices[0].ops[OpKind::Write].ios > 0);
    assert!(intervals.get() > 0, "no interval reached the observer");
}

/// A library caller naming the same target twice, by any path (a hard link or a symlink to a
/// file, a second name for a block device), gets the engine's typed refusal before any I/O,
/// not a panic after the run: from the full check and from the run's own probe alike.
#[test]
fn the_same_target_named_twice_is_refused_before_any_io() {
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
        let config = write_config(file.clone(), Duration::from_millis(300))
            .with_targets(vec![file.clone(), second.clone()]);
        let err = run_checked_before(config.clone(), &mut quiet()).expect_err("measured");
        refused(second, err);
        let request = MeasureRequest::new(config.targets.clone(), config.workload.clone());
        let err = measure(request, &mut quiet()).expect_err("measured");
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
        let config = write_config(dev.clone(), Duration::from_millis(300))
            .with_targets(vec![dev.clone(), alias.clone()]);
        let err = run_checked_before(config, &mut quiet()).expect_err("measured");
        assert!(
            matches!(&err, EngineError::DuplicateTarget { path, first, what: "device" } if *path == alias && *first == dev),
            "{err:?}"
        );
    }
}

/// The counts of a mixed run equal the kernel's completions of each device, reads and
/// writes, with no slack: every I/O of the ramp, the window and the drain is counted once.
/// With only the re-check while held, which reads no device (the full check's signature probe
/// would add reads of its own before the run).
#[test]
fn mixed_run_counts_equal_the_kernels_completions() {
    require_root!();
    let result = counted_against_the_kernel(IoPattern::RandRw, 60);
    for d in &result.devices {
        assert!(
            d.ramp.total() > 100 && d.ops[OpKind::Read].ios > 500 && d.ops[OpKind::Write].ios > 500
        );
    }
}

/// A plain workload (reads only: no rate, nothing written) runs the worker's loop compiled
/// without the schedule, the write pool and the checks; its counts are the kernel's all the
/// same, on a ring without the SQ indirection array where the kernel has that (6.6+).
#[test]
fn plain_reads_counted_as_the_kernel_counts_on_the_ring_it_allows() {
    require_root!();
    let result = counted_against_the_kernel(IoPattern::RandRead, 100);
    for d in &result.devices {
        assert!(
            d.ramp.total() > 100 && d.ops[OpKind::Read].ios > 500,
            "{d:?}"
        );
        assert_eq!(d.ops[OpKind::Write].ios, 0);
    }
    let uts = nix::sys::utsname::uname().unwrap();
    let release = uts.release().to_string_lossy().into_owned();
    let mut numbers = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let version = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    assert!(!result.workers.is_empty());
    for w in &result.workers {
        assert_eq!(
            w.ring.no_sqarray,
            version >= (6, 6),
            "{release}: {:?}",
            w.ring
        );
    }
}

/// Runs `pattern` (`rwmixread` percent reads) at depth 16 for 2 s after a 1 s ramp on three
/// fresh volumes and checks that each volume's reads and writes (ramp, window and drain) are
/// exactly the kernel's completions on it.
fn counted_against_the_kernel(pattern: IoPattern, rwmixread: u8) -> RunResult {
    let _rate = rate_test_lock();
    let host = volumes(3, 64 << 20);
    let workload = Workload::default()
        .with_pattern(pattern)
        .with_rwmixread(rwmixread)
        .with_iodepth(16)
        .with_runtime(Duration::from_secs(2))
        .with_ramp(Duration::from_secs(1));
    let names = volume_kernel_names(&host);
    let before = baseline_completions(&volume_paths(&host), &names);
    let config = RunConfig::new(host.device_paths().to_vec(), workload);
    let result = run_checked_before(config, &mut quiet()).unwrap();
    for (i, name) in names.iter().enumerate() {
        let after = kernel_completions(name);
        let (kernel_reads, kernel_writes) = (after.0 - before[i].0, after.1 - before[i].1);
        let d = &result.devices[i];
        assert_eq!(d.errors.count, 0, "{name}: {:?}", d.errors);
        let reads = d.ramp[OpKind::Read] + d.ops[OpKind::Read].ios + d.drained[OpKind::Read];
        let writes = d.ramp[OpKind::Write] + d.ops[OpKind::Write].ios + d.drained[OpKind::Write];
        eprintln!(
            "{name}: hostmax {reads} reads {writes} writes (ramp {:?}, drained {:?}), kernel {kernel_reads} + {kernel_writes}",
            d.ramp, d.drained
        );
        assert_eq!((kernel_reads, kernel_writes), (reads, writes), "{name}");
    }
    result
}

const MIB: u64 = 1024 * 1024;

/// 4 KiB at `offset` read with O_DIRECT.
fn read_block(path: &Path, offset: u64) -> Vec<u8> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .unwrap();
    let mut block = AlignedBlock::new();
    assert_eq!(file.read_at(block.as_mut_slice(), offset).unwrap(), 4096);
    block.as_slice().to_vec()
}

#[test]
fn io_limit_ends_each_target_after_its_bytes() {
    let _lock = rate_test_lock();
    let dir = ScratchDir::new("limit");
    let files = vec![dir.file("a", 8 * MIB), dir.file("b", 8 * MIB)];
    let workload = Workload::default()
        .with_pattern(IoPattern::Write)
        .with_block_size(128 << 10)
        .with_iodepth(8)
        .with_working_set(Some(4 * MIB))
        .with_runtime(Duration::from_secs(600))
        .with_ramp(Duration::ZERO)
        .with_io_limit(Some(2 * 4 * MIB));
    let result = measure(
        MeasureRequest::new(files, workload).with_consent(SCRATCH),
        &mut |_: DeviceInterval| {},
    )
    .unwrap();
    for d in &result.devices {
        // Exactly two passes over the 4 MiB working set, then nothing more.
        assert_eq!(d.ops[OpKind::Write].bytes, 8 * MIB, "{}", d.path.display());
        assert_eq!(d.ops[OpKind::Write].ios, 64);
        assert_eq!(d.ops[OpKind::Read].ios, 0);
    }
    assert!(!result.stopped_early, "the limit is not a stop");
    assert!(
        result.measured < Duration::from_secs(600),
        "the run ended when the limit was used up, and measured only that long: {:?}",
        result.measured
    );
    let tiny = Workload::default().with_io_limit(Some(100));
    let refused = measure(
        MeasureRequest::new(vec![dir.file("c", MIB)], tiny),
        &mut |_: DeviceInterval| {},
    );
    match refused {
        Err(EngineError::InvalidWorkload(e)) => {
            assert!(e.to_string().contains("less than one block"), "{e}")
        }
        other => panic!("an I/O limit below one block was not refused: {other:?}"),
    }
}

#[test]
fn discard_and_zero_out_clear_a_loop_volume() {
    require_root!();
    let host = loop_volumes(1, 8 * MIB);
    let dev = host.device_paths()[0].clone();
    let info = hostmax_device::probe(&dev).unwrap();
    // Fill the first 2 MiB with the engine's random bytes.
    let fill = Workload::default()
        .with_pattern(IoPattern::Write)
        .with_block_size(64 << 10)
        .with_iodepth(4)
        .with_working_set(Some(2 * MIB))
        .with_runtime(Duration::from_secs(60))
        .with_ramp(Duration::ZERO)
        .with_io_limit(Some(2 * MIB));
    measure(
        MeasureRequest::new(vec![dev.clone()], fill).with_consent(SCRATCH),
        &mut |_: DeviceInterval| {},
    )
    .unwrap();
    // The run released its O_EXCL claim before it returned: an exclusive open (one try, no
    // patience) succeeds at once.
    let claimed = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_EXCL)
        .open(&dev);
    assert!(claimed.is_ok(), "{}: {:?}", dev.display(), claimed.err());
    drop(claimed);
    let written = |offset| read_block(&dev, offset).iter().any(|&b| b != 0);
    assert!(written(0) && written(MIB) && written(2 * MIB - 4096));
    hostmax_engine::discard(&info, 0..MIB).unwrap();
    assert!(
        !written(0) && !written(MIB - 4096),
        "discarded blocks read as zeroes"
    );
    assert!(written(MIB), "outside the range is untouched");
    hostmax_engine::zero_out(&info, MIB..2 * MIB).unwrap();
    assert!(!written(MIB) && !written(2 * MIB - 4096));
    // Misaligned or out-of-range requests are refused before any ioctl.
    for bad in [1..4096, 0..9 * MIB] {
        let err = hostmax_engine::discard(&info, bad).unwrap_err();
        assert!(err.to_string().contains("not within the target"), "{err}");
    }
}

/// Completions reaped in batches ([`Workload::complete_batch`]) are each counted once, as the
/// kernel counts them, and each timed once: the latencies of a batch, recorded together
/// where equal, add up to the I/Os in the run's histograms and in every second's.
#[test]
fn completions_reaped_in_batches_are_each_counted_and_timed() {
    require_root!();
    let _rate = rate_test_lock();
    let host = volumes(2, 64 << 20);
    let names = volume_kernel_names(&host);
    let before = baseline_completions(&volume_paths(&host), &names);
    let workload = Workload::default()
        .with_pattern(IoPattern::RandRw)
        .with_rwmixread(70)
        .with_iodepth(16)
        .with_complete_batch(8)
        .with_runtime(Duration::from_secs(2))
        .with_ramp(Duration::from_millis(500));
    let config = RunConfig::new(host.device_paths().to_vec(), workload).with_live(true);
    let mut seconds: Vec<DeviceInterval> = Vec::new();
    let result = run_checked_before(config, &mut |i: DeviceInterval| seconds.push(i)).unwrap();
    for (i, name) in names.iter().enumerate() {
        let after = kernel_completions(name);
        let d = &result.devices[i];
        assert_eq!(d.errors.count, 0, "{name}: {:?}", d.errors);
        let done = |op: OpKind| d.ramp[op] + d.ops[op].ios + d.drained[op];
        assert_eq!(
            (after.0 - before[i].0, after.1 - before[i].1),
            (done(OpKind::Read), done(OpKind::Write)),
            "{name}"
        );
        for op in [OpKind::Read, OpKind::Write] {
            let ops = &d.ops[op];
            assert!(ops.ios > 500, "{name} {op:?}: {} I/Os", ops.ios);
            assert_eq!(ops.latency.len(), ops.ios, "{name} {op:?}");
            assert!(ops.latency.min() > 0, "{name} {op:?}");
            let timed_by_second: u64 = seconds
                .iter()
                .filter(|s| s.device == i && s.second >= 0)
                .map(|s| s.ops[op].latency.len())
                .sum();
            assert_eq!(timed_by_second, ops.ios, "{name} {op:?} by second");
        }
    }
}
