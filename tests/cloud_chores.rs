//! The chores cloud providers' benchmark pages ask for, automated: a run that spends its burst
//! credits is judged on its baseline (a loop volume whose cgroup cap is lowered mid-run, as a
//! cloud volume's is when its credits run out), and `hostmax prepare` reads every block of
//! volumes restored from snapshots once, resumably.

mod support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

#[test]
fn a_run_whose_iops_drop_mid_run_is_judged_on_its_baseline_and_says_when() {
    require_root!();
    let host = loop_volumes(1, 64 * MIB);
    let volume = &host.volumes()[0];
    let device = volume.path().display().to_string();
    let (burst, baseline) = (scaled_cap(2000), scaled_cap(500));
    let throttle = IoThrottle::create().expect("a cgroup for the cap");
    let mm = volume.major_minor().expect("a block device");
    throttle.limit_iops(mm, burst).unwrap();
    let _lock = rate_test_lock();
    let mut cmd = std::process::Command::new(hostmax_bin());
    cmd.args([
        "--devices",
        &device,
        "--runtime",
        "16s",
        "--ramp",
        "0s",
        "--iodepth",
        "8",
        // Promised: what the burst gives; the baseline cannot keep it.
        "--expect-volume-iops",
        &burst.to_string(),
        "--json",
        "-",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    throttle.command_in_group(&mut cmd);
    let child = cmd.spawn().expect("run hostmax");
    // Credits spent 7 s in: the cap falls to the baseline.
    std::thread::sleep(Duration::from_secs(7));
    throttle.limit_iops(mm, baseline).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a failed verdict: {stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdict = &report["verdict"];
    let bursts = verdict["bursts"].as_array().unwrap_or_else(|| panic!("{verdict}"));
    let host_burst = bursts
        .iter()
        .find(|b| b["device"].is_null())
        .unwrap_or_else(|| panic!("no host burst: {verdict}"));
    let device_burst = bursts
        .iter()
        .find(|b| b["device"] == device.as_str())
        .unwrap_or_else(|| panic!("no device burst: {verdict}"));
    for b in [host_burst, device_burst] {
        // The process started ~0.1-0.5 s before the window: the drop lands in second 6 or 7.
        let at = b["drop_at_secs"].as_u64().unwrap();
        assert!((6..=7).contains(&at), "drop at {at}: {b}");
        let before = number(&b["burst_iops"]);
        let after = number(&b["baseline_iops"]);
        assert!((before - burst as f64).abs() < 0.1 * burst as f64, "{b}");
        assert!((after - baseline as f64).abs() < 0.1 * baseline as f64, "{b}");
    }
    // Judged on the baseline, not the whole run's mean (which the burst lifts to ~2x it).
    let measured = number(&verdict["devices"][0]["measured_iops"]);
    let whole = number(&report["devices"][0]["iops"]);
    assert!(
        (measured - baseline as f64).abs() < 0.1 * baseline as f64,
        "judged {measured}, the baseline is {baseline}: {verdict}"
    );
    assert!(whole > 1.4 * measured, "whole run {whole}, judged {measured}");
    assert!(
        stderr.contains(&format!("burst: {device} held"))
            && stderr.contains("then dropped to")
            && stderr.contains("baseline from second"),
        "{stderr}"
    );
}
