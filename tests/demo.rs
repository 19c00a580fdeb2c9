//! `hostmax demo`: the embedded default builds its simulated host, measures it, and removes
//! everything it made.

mod support;

use support::*;

#[test]
fn demo_measures_the_simulated_host_and_leaves_nothing_behind() {
    require_root!();
    let _rate = rate_test_lock();
    let out = run_hostmax(&["demo"], None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stderr.contains("loop devices on tmpfs"), "{stderr}");
    // The host row, and the host cap of 15,000 IOPS reached within 3%.
    let host_line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("host ") && l.contains("cap"))
        .unwrap_or_else(|| panic!("no host cap line in:\n{stdout}"));
    let measured: f64 = host_line
        .split("measured")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no measured figure in {host_line}"));
    assert!(
        (measured - 15_000.0).abs() <= 450.0,
        "host measured {measured} against its cap of 15000"
    );
    // Everything the demo made is gone: its loop devices, its tmpfs files and its cgroup.
    let pid = out_pid_marker(&stderr);
    let losetup = std::fs::read_dir("/sys/block")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("loop/backing_file")).ok())
        .filter(|b| b.contains(&format!("hostmax-sim-{pid}-")))
        .count();
    assert_eq!(losetup, 0, "loop devices of the demo are still attached");
    assert!(
        !std::path::Path::new(&format!("/sys/fs/cgroup/blkio/hostmax-{pid}-0")).exists(),
        "the demo's cgroup is still there"
    );
}

/// The demo's pid, from the cgroup path its banner names (`.../hostmax-PID-N`).
fn out_pid_marker(stderr: &str) -> String {
    stderr
        .split("hostmax-")
        .nth(1)
        .and_then(|rest| rest.split('-').next())
        .filter(|pid| pid.chars().all(|c| c.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no cgroup path in the banner: {stderr}"))
        .to_string()
}
