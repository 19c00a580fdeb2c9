//! `--iopoll` and `--sqpoll`: polled runs where the devices support them, a clear refusal and
//! no figures where they do not (loop devices answer EOPNOTSUPP to every polled I/O).

mod support;

use hostmax_simhost::{NullBlkDevice, NullBlkOptions};
use support::*;

const MIB: u64 = 1 << 20;

#[test]
fn iopoll_on_devices_without_poll_queues_is_refused_before_any_io() {
    require_root!();
    // Loop devices have no poll queues; null_blk devices are made with none (the module's
    // default may give them some).
    let (_host, devices) = match test_backend() {
        TestBackend::Loop => {
            let host = loop_volumes(2, 16 * MIB);
            let devices = volume_paths(&host);
            (Some(host), devices)
        }
        TestBackend::NullBlk => (None, Vec::new()),
    };
    let null_blk: Vec<NullBlkDevice> = match test_backend() {
        TestBackend::Loop => Vec::new(),
        TestBackend::NullBlk => (0..2).map(|_| null_blk_device(16 * MIB, 0)).collect(),
    };
    let devices: Vec<String> = devices
        .into_iter()
        .chain(null_blk.iter().map(|d| d.path().display().to_string()))
        .collect();
    let names: Vec<String> = devices
        .iter()
        .map(|d| d.trim_start_matches("/dev/").to_string())
        .collect();
    for name in &names {
        let io_poll = std::fs::read_to_string(format!("/sys/block/{name}/queue/io_poll"));
        assert_eq!(io_poll.unwrap().trim(), "0", "{name} has poll queues");
    }
    let before = baseline_completions(&devices, &names);
    let mut args = vec!["--devices".to_string()];
    args.extend(devices.iter().cloned());
    args.extend(["--iopoll", "--runtime", "1s", "--json", "-"].map(String::from));
    let out = run_hostmax(&args, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--iopoll") && stderr.contains("poll queues"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(out.stdout.is_empty(), "no report may be written");
    for (name, b) in names.iter().zip(&before) {
        assert_eq!(kernel_completions(name), *b, "{name} saw I/O");
    }
}

#[test]
fn iopoll_counts_on_null_blk_poll_queues_match_the_kernels() {
    require_root!();
    if let Err(why) = null_blk_available() {
        skip!("null_blk is unavailable ({why}); iopoll_runs_on_a_device_with_poll_queues uses any pollable device there is");
    }
    let _rate = rate_test_lock();
    let devices: Vec<NullBlkDevice> = (0..2).map(|_| null_blk_device(32 * MIB, 2)).collect();
    let names: Vec<String> = devices
        .iter()
        .map(|d| d.kernel_name().to_string())
        .collect();
    for name in &names {
        let io_poll = std::fs::read_to_string(format!("/sys/block/{name}/queue/io_poll"));
        assert_eq!(io_poll.unwrap().trim(), "1", "{name} has no poll queues");
    }
    let paths: Vec<String> = devices
        .iter()
        .map(|d| d.path().display().to_string())
        .collect();
    polled_reads_match_the_kernels("--iopoll", &paths, &names);
}

/// Runs a 1 s read of `paths` (kernel names `names`) with `polling` (`--iopoll`, `--sqpoll`)
/// and asserts each device's reads, ramp, window and drain, equal the kernel's count exactly.
fn polled_reads_match_the_kernels(polling: &str, paths: &[String], names: &[String]) {
    let before = baseline_completions(paths, names);
    let mut args = vec!["--devices".to_string()];
    args.extend(paths.iter().cloned());
    args.extend([polling, "--iodepth", "8", "--runtime", "1s", "--ramp", "0s"].map(String::from));
    let report = run_json_stdout(&args, None);
    assert_eq!(report["host"]["errors"], 0);
    for (i, name) in names.iter().enumerate() {
        let device = &report["devices"][i];
        let reads = device["read"]["ios"].as_u64().unwrap();
        let all = reads
            + device["ramp"]["reads"].as_u64().unwrap()
            + device["drained"]["reads"].as_u64().unwrap()
            + device["errors"].as_u64().unwrap();
        let kernel = kernel_completions(name).0 - before[i].0;
        assert!(reads > 0, "{name}: no reads counted");
        assert_eq!(
            kernel, all,
            "{name}: hostmax {all} (window {reads}), kernel {kernel}"
        );
    }
}

/// A null_blk device of `size` bytes with `poll_queues` poll queues, removed on drop.
fn null_blk_device(size: u64, poll_queues: u32) -> NullBlkDevice {
    let options = NullBlkOptions::new(size)
        .unwrap()
        .with_poll_queues(Some(poll_queues));
    NullBlkDevice::create(&options).expect("make a null_blk device")
}

#[test]
fn iopoll_runs_on_a_device_with_poll_queues() {
    let pollable = std::fs::read_dir("/sys/block")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|d| {
            std::fs::read_to_string(format!("/sys/block/{d}/queue/io_poll"))
                .map(|v| v.trim() == "1")
                .unwrap_or(false)
        });
    let Some(disk) = pollable else {
        skip!(
            "no block device on this machine has poll queues (queue/io_poll = 1; \
             null_blk with poll_queues or NVMe with nvme.poll_queues would)"
        );
    };
    // Reads only: never write to a device this test did not make.
    let dev = format!("/dev/{disk}");
    let report = run_json_stdout(
        &[
            "--devices",
            &dev,
            "--iopoll",
            "--runtime",
            "1s",
            "--ramp",
            "0s",
        ],
        None,
    );
    assert!(report["host"]["read"]["ios"].as_u64().unwrap() > 0);
    assert_eq!(report["host"]["errors"], 0);
}

#[test]
fn sqpoll_counts_match_the_kernels() {
    require_root!();
    let _rate = rate_test_lock();
    let host = volumes(2, 32 * MIB);
    polled_reads_match_the_kernels(
        "--sqpoll",
        &volume_paths(&host),
        &volume_kernel_names(&host),
    );
}
