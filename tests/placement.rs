//! Where each device is driven from: a device that can use more than one CPU gets a worker
//! on each CPU it may use (a zram device: bio-based, no queue map, compressing each write on
//! the submitting CPU), devices outnumbering CPUs keep one ring per CPU, `--numjobs` gives
//! fio's N jobs per device; and whatever the layout the counts are exactly the kernel's and
//! `--verify` finds every block as written.

mod support;

use hostmax_simhost::{zram_available, ZramDevice};
use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

/// A zram device of 64 MiB, or the calling test skipped saying why there is none.
macro_rules! require_zram {
    () => {{
        if let Err(why) = zram_available() {
            skip!("{why}");
        }
        ZramDevice::new(64 * MIB, "lz4").unwrap_or_else(|e| panic!("zram: {e}"))
    }};
}

/// The CPUs this process may run on.
fn allowed_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Every successful write the report counts (ramp, window, drained) plus its errors.
fn counted_writes(device: &Value) -> u64 {
    device["ramp"]["writes"].as_u64().unwrap()
        + device["write"]["ios"].as_u64().unwrap()
        + device["drained"]["writes"].as_u64().unwrap()
        + device["errors"].as_u64().unwrap()
}

/// `hostmax ARGS` on one device, its report and the kernel's count of writes it completed
/// meanwhile.
fn run_counted(path: &str, name: &str, extra: &[&str]) -> (Value, u64) {
    let before = baseline_completions(&[path.to_string()], &[name.to_string()]);
    let mut args = vec![
        "--devices",
        path,
        "--rw",
        "randwrite",
        "--runtime",
        "1s",
        "--ramp",
        "1s",
        "--allow-write",
        "--force",
    ];
    args.extend_from_slice(extra);
    let report = run_json_stdout(&args, None);
    let after = kernel_completions(name);
    (report, after.1 - before[0].1)
}

#[test]
fn a_device_without_a_queue_map_gets_every_cpu_and_exact_counts() {
    require_root!();
    let cpus = allowed_cpus();
    if cpus < 2 {
        skip!("one CPU: nothing to spread over");
    }
    let z = require_zram!();
    let path = z.path().to_string_lossy().into_owned();
    let (report, kernel) = run_counted(&path, z.kernel_name(), &["--iodepth", "32"]);
    let device = &report["devices"][0];
    let drivers = device["drivers"].as_array().unwrap();
    // One worker per allowed CPU, each pinned to its own, the depth of 32 split among them.
    assert_eq!(drivers.len(), cpus, "{device:#}");
    let mut on: Vec<u64> = drivers.iter().map(|d| d["cpu"].as_u64().unwrap()).collect();
    on.sort_unstable();
    on.dedup();
    assert_eq!(on.len(), cpus, "distinct CPUs: {drivers:?}");
    let depth: u64 = drivers.iter().map(|d| d["iodepth"].as_u64().unwrap()).sum();
    assert_eq!(depth, 32, "--iodepth is the device's total: {drivers:?}");
    // Each took a fair part of the I/Os, and the parts add up to the device's.
    let ios: u64 = drivers.iter().map(|d| d["ios"].as_u64().unwrap()).sum();
    assert_eq!(ios, device["write"]["ios"].as_u64().unwrap());
    // On an emulated CPU (the kernel matrix) the vCPUs are not equal (the emulator's own
    // threads share them): every worker must still take part, none need take a fair half.
    let fair = if full_speed() {
        0.5 / cpus as f64
    } else {
        0.05 / cpus as f64
    };
    for d in drivers {
        let share = number(&d["share"]);
        assert!(share > fair, "{drivers:?}");
    }
    assert_eq!(
        report["load_generator"]["workers"]
            .as_array()
            .unwrap()
            .len(),
        cpus
    );
    // Every write the kernel completed is counted once, by one of the workers.
    assert_eq!(counted_writes(device), kernel, "{device:#}");
}

#[test]
fn numjobs_gives_each_job_the_whole_depth_on_its_own_cpu() {
    require_root!();
    let cpus = allowed_cpus();
    let z = require_zram!();
    let path = z.path().to_string_lossy().into_owned();
    let (report, kernel) = run_counted(
        &path,
        z.kernel_name(),
        &["--numjobs", "2", "--iodepth", "4"],
    );
    let device = &report["devices"][0];
    let drivers = device["drivers"].as_array().unwrap();
    assert_eq!(drivers.len(), 2, "{device:#}");
    assert!(drivers.iter().all(|d| d["iodepth"] == 4), "{drivers:?}");
    if cpus >= 2 {
        assert_ne!(drivers[0]["cpu"], drivers[1]["cpu"], "{drivers:?}");
    }
    assert_eq!(report["workload"]["numjobs"], 2);
    assert_eq!(counted_writes(device), kernel, "{device:#}");

    // More jobs than CPUs: allowed, and said.
    let jobs = (cpus + 1).to_string();
    let out = run_hostmax(
        &[
            "--devices",
            &path,
            "--rw",
            "randwrite",
            "--numjobs",
            &jobs,
            "--iodepth",
            "2",
            "--runtime",
            "1s",
            "--ramp",
            "0s",
            "--allow-write",
            "--force",
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!(
            "--numjobs {jobs} asked for {jobs} workers on {cpus} CPUs"
        )),
        "{stdout}"
    );
}

#[test]
fn verify_holds_with_several_writers_on_one_device() {
    require_root!();
    let z = require_zram!();
    let path = z.path().to_string_lossy().into_owned();
    let report = run_json_stdout(
        &[
            "--devices",
            &path,
            "--rw",
            "randrw",
            "--size",
            "4m",
            "--iodepth",
            "16",
            "--runtime",
            "1s",
            "--ramp",
            "0s",
            "--verify",
            "--allow-write",
            "--force",
        ],
        None,
    );
    let verify = &report["devices"][0]["verify"];
    assert_eq!(verify["mismatches"], 0, "{verify:#}");
    assert!(
        verify["checked_after_run"].as_u64().unwrap() > 100,
        "{verify:#}"
    );
}

#[test]
fn devices_outnumbering_cpus_keep_one_ring_per_cpu_and_a_lone_loop_gets_them_all() {
    require_root!();
    let cpus = allowed_cpus();
    let host = loop_volumes(cpus + 1, 16 * MIB);
    let paths = volume_paths(&host);
    let mut args = vec!["--devices".to_string()];
    args.extend(paths.iter().cloned());
    args.extend(["--runtime", "1s", "--ramp", "0s"].map(String::from));
    let report = run_json_stdout(&args, None);
    for d in report["devices"].as_array().unwrap() {
        assert_eq!(d["drivers"].as_array().unwrap().len(), 1, "{d:#}");
    }
    assert_eq!(
        report["load_generator"]["workers"]
            .as_array()
            .unwrap()
            .len(),
        cpus,
        "one worker per CPU over many devices"
    );
    // One loop device: one queue serving every CPU, so every CPU drives it.
    let one = run_json_stdout(
        &["--devices", &paths[0], "--runtime", "1s", "--ramp", "0s"],
        None,
    );
    assert_eq!(
        one["devices"][0]["drivers"].as_array().unwrap().len(),
        cpus,
        "{:#}",
        one["devices"][0]
    );
}

/// A pid no process can have (`pid_max` is at most 2^22).
const DEAD_PID: u32 = (1 << 22) + 1;

#[test]
fn a_killed_owners_zram_device_is_swept_and_anyone_elses_is_left_alone() {
    require_root!();
    let ours = require_zram!();
    let id: u32 = ours
        .kernel_name()
        .trim_start_matches("zram")
        .parse()
        .unwrap();
    let shm = std::path::Path::new("/dev/shm");
    let marker =
        |pid: u32, id: u32| shm.join(format!("{}{pid}-{id}", hostmax_simhost::ZRAM_MARKER_PREFIX));
    assert!(
        marker(std::process::id(), id).is_dir(),
        "no marker for {id}"
    );
    // As if its process had been killed: the marker names a dead pid and nothing removes it.
    std::fs::rename(marker(std::process::id(), id), marker(DEAD_PID, id)).unwrap();
    std::mem::forget(ours);

    // Another device whose marker's size does not match it: the number was given to someone
    // else since, so it stays.
    let theirs = require_zram!();
    let their_id: u32 = theirs
        .kernel_name()
        .trim_start_matches("zram")
        .parse()
        .unwrap();
    let wrong = marker(DEAD_PID, their_id);
    std::fs::create_dir(&wrong).unwrap();
    std::fs::write(wrong.join("disksize"), "4096").unwrap();

    let swept = hostmax_simhost::sweep_stale_zram();
    let sys = format!("/sys/block/zram{id}");
    let state = || {
        let read = |f: &str| std::fs::read_to_string(format!("{sys}/{f}")).unwrap_or_default();
        let holders: Vec<_> = std::fs::read_dir(format!("{sys}/holders"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        format!(
            "swept {swept}; zram{id}: disksize {:?}, holders {holders:?}, in /proc/swaps: {}, in /proc/mounts: {}",
            read("disksize").trim(),
            std::fs::read_to_string("/proc/swaps").unwrap_or_default().contains(&format!("zram{id} ")),
            std::fs::read_to_string("/proc/mounts").unwrap_or_default().contains(&format!("zram{id} ")),
        )
    };
    assert!(
        !std::path::Path::new(&sys).exists(),
        "zram{id} of the dead owner is still there: {}",
        state()
    );
    assert!(swept >= 1, "{}", state());
    assert!(!marker(DEAD_PID, id).exists());
    assert!(
        std::path::Path::new(&format!("/sys/block/zram{their_id}")).exists(),
        "zram{their_id} was removed on a marker that does not match it"
    );
    assert!(!wrong.exists(), "the stale marker stays");
    drop(theirs);
}
