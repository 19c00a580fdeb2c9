//! `--iopoll` and `--sqpoll`: polled runs where the devices support them, a clear refusal and
//! no figures where they do not (loop devices answer EOPNOTSUPP to every polled I/O).

mod support;

use support::*;

const MIB: u64 = 1 << 20;

#[test]
fn iopoll_on_devices_without_poll_queues_is_refused_before_any_io() {
    require_root!();
    // Loop devices, not `volumes`: null_blk may have a poll queue (the kernel's default).
    let host = loop_volumes(2, 16 * MIB);
    let names = volume_kernel_names(&host);
    let before: Vec<(u64, u64)> = names.iter().map(|n| kernel_completions(n)).collect();
    let mut args = vec!["--devices".to_string()];
    args.extend(volume_paths(&host));
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
        eprintln!(
            "skipped: no block device on this machine has poll queues (queue/io_poll = 1; \
             null_blk with poll_queues or NVMe with nvme.poll_queues would)"
        );
        return;
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
    let names = volume_kernel_names(&host);
    let before: Vec<(u64, u64)> = names.iter().map(|n| kernel_completions(n)).collect();
    let mut args = vec!["--devices".to_string()];
    args.extend(volume_paths(&host));
    args.extend(
        [
            "--sqpoll",
            "--iodepth",
            "8",
            "--runtime",
            "1s",
            "--ramp",
            "0s",
        ]
        .map(String::from),
    );
    let report = run_json_stdout(&args, None);
    for (i, name) in names.iter().enumerate() {
        let reads = report["devices"][i]["read"]["ios"].as_u64().unwrap();
        let kernel = kernel_completions(name).0 - before[i].0;
        assert!(reads > 0, "{name}: no reads counted");
        assert!(
            kernel >= reads && kernel - reads <= 8,
            "{name}: hostmax {reads}, kernel {kernel}"
        );
    }
}
