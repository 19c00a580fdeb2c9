//! `hostmax demo`: the embedded default builds its simulated host, measures it, and removes
//! everything it made.

mod support;

use support::*;

#[test]
fn demo_measures_the_simulated_host_and_leaves_nothing_behind() {
    require_root!();
    let _rate = rate_test_lock();
    let out = run_hostmax(&["demo"], None);
    let (stdout, stderr) = succeeded(&out);
    // On tmpfs, or on null_blk where tmpfs takes no O_DIRECT (Linux before 6.6), said so.
    assert!(
        stderr.contains("loop devices on tmpfs")
            || stderr.contains("loop devices on null_blk")
                && stderr.contains("tmpfs takes O_DIRECT only from Linux 6.6"),
        "{stderr}"
    );
    // The host row, and the host cap of 15,000 IOPS reached within 5% (the volumes share the
    // parent's throttle, so the demo is not where exactness is tested: tests/accuracy.rs is).
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
    // Where the CPU cannot reach the cap (an emulated VM), the cap still bounds the host.
    assert!(
        (measured - 15_000.0).abs() <= 750.0 || !full_speed() && measured <= 15_750.0,
        "host measured {measured} against its cap of 15000"
    );
    // Everything the demo made is gone: its loop devices, its tmpfs files and its cgroup.
    let pid = out_pid_marker(&stderr);
    let left = loops_left_by(&pid);
    assert!(
        left.is_empty(),
        "loop devices of the demo are still attached: {left:?}"
    );
    for hierarchy in ["/sys/fs/cgroup/blkio", "/sys/fs/cgroup"] {
        assert!(
            !std::path::Path::new(&format!("{hierarchy}/hostmax-{pid}-0")).exists(),
            "the demo's cgroup is still there"
        );
    }
}

#[test]
fn demo_without_a_usable_cgroup_measures_uncapped_loop_volumes_and_says_why() {
    require_root!();
    let _rate = rate_test_lock();
    let scratch = ScratchDir::new("demo-cgroup");
    // A plain directory is no cgroup: the caps cannot be made, the volumes still can.
    let child = std::process::Command::new(hostmax_bin())
        .arg("demo")
        .env(hostmax_simhost::CGROUP_ROOT_ENV, &scratch.0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = succeeded(&out);
    assert!(
        (stderr.contains("loop devices on tmpfs without caps")
            || stderr.contains("loop devices on null_blk"))
            && stderr.contains("without caps")
            && stderr.contains("not a cgroup directory"),
        "{stderr}"
    );
    assert!(stdout.contains("no caps to compare against"), "{stdout}");
    let iops: f64 = stdout
        .lines()
        .find(|l| l.starts_with("host (8 devices)"))
        .and_then(|l| l.split_whitespace().nth(4))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no host IOPS in:\n{stdout}"));
    assert!(
        iops > 15_000.0 || !full_speed() && iops > 0.0,
        "uncapped volumes outrun the capped host's 15000 IOPS: {iops}"
    );
    // It made nothing in the directory it was pointed at, and left no loop device behind.
    assert_eq!(std::fs::read_dir(&scratch.0).unwrap().count(), 0);
    let left = loops_left_by(pid);
    assert!(
        left.is_empty(),
        "loop devices of the demo are still attached: {left:?}"
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

#[test]
fn demo_without_root_runs_on_plain_files_and_says_so() {
    require_root!(); // to drop to an unprivileged user we must start as root
    let Ok(setpriv) = which("setpriv") else {
        skip!("setpriv (util-linux) is not installed, so no way to drop root here");
    };
    let _rate = rate_test_lock();
    let out = std::process::Command::new(setpriv)
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(hostmax_bin())
        .arg("demo")
        .output()
        .expect("run the demo as nobody");
    let (stdout, stderr) = succeeded(&out);
    assert!(
        stderr.contains("plain files"),
        "it must say it ran on files: {stderr}"
    );
    assert!(stdout.contains("host (8 devices)"), "{stdout}");
    // Its scratch files are gone.
    let pid_dirs = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.metadata()
                .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 65534)
                .unwrap_or(false)
                && e.file_name().to_string_lossy().starts_with("hostmax-sim-")
        })
        .count();
    assert_eq!(pid_dirs, 0, "the demo left its files in /dev/shm");
}

/// The full path of a program on PATH.
/// The demo's stdout and stderr, once it exited 0 (else both are shown).
fn succeeded(out: &std::process::Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

fn which(program: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .ok_or(())
}

#[test]
fn demo_takes_a_volume_count_and_a_runtime() {
    require_root!();
    let _rate = rate_test_lock();
    let out = run_hostmax(&["demo", "--volumes", "3", "--runtime", "1s"], None);
    let (stdout, _) = succeeded(&out);
    assert!(
        stdout.lines().any(|l| l.starts_with("host (3 devices)")),
        "{stdout}"
    );
    // Three volumes of 1,000, 1,500 and 2,000 IOPS: the host's cap scales to 15/22 of 4,500.
    assert!(stdout.contains("cap   3000 IOPS"), "{stdout}");
    let refused = run_hostmax(&["demo", "--volumes", "0"], None);
    assert_eq!(refused.status.code(), Some(2));
    let refused = run_hostmax(&["demo", "--runtime", "0"], None);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--runtime 5s"));
}

#[test]
fn demo_says_once_that_its_reads_are_of_never_written_blocks_and_why_its_tails_are_100_ms() {
    require_root!();
    let _rate = rate_test_lock();
    let out = run_hostmax(&["demo", "--volumes", "4", "--runtime", "1s"], None);
    let (stdout, _) = succeeded(&out);
    let devices: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("/dev/loop"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(devices.len(), 4, "{stdout}");
    // Not one advice per volume to write it first: one line naming them all.
    assert!(!stdout.contains("returned zeros"), "{stdout}");
    let fresh: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("never-written block"))
        .collect();
    assert_eq!(fresh.len(), 1, "{stdout}");
    for d in &devices {
        assert!(fresh[0].contains(d), "{d} not named in {}", fresh[0]);
    }
    // The throttle's 100 ms slice, said once.
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.contains("blk-throttle") && l.contains("100 ms slices"))
            .count(),
        1,
        "{stdout}"
    );
}
