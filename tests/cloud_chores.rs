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
    let bursts = verdict["bursts"]
        .as_array()
        .unwrap_or_else(|| panic!("{verdict}"));
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
        assert!(
            (after - baseline as f64).abs() < 0.1 * baseline as f64,
            "{b}"
        );
    }
    // Judged on the baseline, not the whole run's mean (which the burst lifts to ~2x it).
    let measured = number(&verdict["devices"][0]["measured_iops"]);
    let whole = number(&report["devices"][0]["iops"]);
    assert!(
        (measured - baseline as f64).abs() < 0.1 * baseline as f64,
        "judged {measured}, the baseline is {baseline}: {verdict}"
    );
    assert!(
        whole > 1.4 * measured,
        "whole run {whole}, judged {measured}"
    );
    assert!(
        stderr.contains(&format!("burst: {device} held"))
            && stderr.contains("then dropped to")
            && stderr.contains("baseline from second"),
        "{stderr}"
    );
}

/// (sectors read, sectors written) of block device `kernel_name` so far: fields 3 and 7 of
/// `/sys/block/DEV/stat`, 512-byte sectors whatever the device's block size.
fn sectors(kernel_name: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/sys/block/{kernel_name}/stat")).unwrap();
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    (f[2], f[6])
}

fn prepare_args(paths: &[String], state: &str) -> Vec<String> {
    let mut args = vec!["prepare".to_string(), "--devices".to_string()];
    args.extend(paths.iter().cloned());
    args.extend(["--state".to_string(), state.to_string()]);
    args
}

/// Runs `hostmax prepare` on `paths` with `--state state` inside `throttle`'s cgroup and stops
/// it with SIGINT after its first progress line (a second in); returns its exit status and
/// stderr.
fn prepare_stopped_early(
    paths: &[String],
    state: &str,
    throttle: &IoThrottle,
) -> (std::process::ExitStatus, String) {
    let mut cmd = std::process::Command::new(hostmax_bin());
    cmd.args(prepare_args(paths, state))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    throttle.command_in_group(&mut cmd);
    let mut child = cmd.spawn().expect("run hostmax prepare");
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        use std::io::BufRead;
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "ended early: {seen}"
        );
        seen += &line;
        if line.starts_with("prepare: ") && line.contains("MiB/s") {
            break;
        }
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    (status, seen + &rest)
}

#[test]
fn prepare_reads_every_block_once_and_a_stopped_one_continues_where_it_stopped() {
    require_root!();
    const SIZE: u64 = 48 * MIB;
    let host = loop_volumes(2, SIZE);
    let paths = volume_paths(&host);
    let names = volume_kernel_names(&host);
    let scratch = ScratchDir::new("prepare");
    let state = scratch.join("state.json").display().to_string();
    // 16 MiB/s a volume: three seconds a volume, time to stop it half way.
    let throttle = IoThrottle::create().expect("a cgroup for the cap");
    for v in host.volumes() {
        throttle
            .limit_bps(v.major_minor().unwrap(), 16 * MIB)
            .unwrap();
    }
    let before: Vec<(u64, u64)> = names.iter().map(|n| sectors(n)).collect();
    let (status, seen) = prepare_stopped_early(&paths, &state, &throttle);
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(
        seen.contains("stopped with") && seen.contains("to continue"),
        "{seen}"
    );
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    let done: Vec<u64> = saved["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["done"].as_u64().unwrap())
        .collect();
    assert!(done.iter().all(|&d| d > 0 && d < SIZE), "half way: {saved}");
    let middle: Vec<(u64, u64)> = names.iter().map(|n| sectors(n)).collect();

    // The same command again reads the rest, and only the rest.
    let out = run_hostmax(&prepare_args(&paths, &state), Some(&throttle));
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("continuing") && text.contains("every block of 2 devices read once"),
        "{text}"
    );
    for (i, name) in names.iter().enumerate() {
        let after = sectors(name);
        assert_eq!(after.1, before[i].1, "{name}: prepare wrote");
        assert_eq!(
            (after.0 - middle[i].0) * 512,
            SIZE - done[i],
            "{name}: the rest, once"
        );
        // The first run read its prefix and at most the reads then in flight beyond it.
        let first = (middle[i].0 - before[i].0) * 512;
        assert!(
            first >= done[i] && first <= done[i] + 8 * MIB,
            "{name}: {first}"
        );
    }
    let finished: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert!(finished["devices"]
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d["done"].as_u64() == Some(SIZE)));
}

#[test]
fn prepare_refuses_a_state_file_of_another_volume() {
    require_root!();
    let host = loop_volumes(1, 16 * MIB);
    let paths = volume_paths(&host);
    let scratch = ScratchDir::new("prepare-state");
    let state = scratch.join("state.json");
    std::fs::write(
        &state,
        serde_json::json!({"devices": [{
            "path": paths[0],
            "size": 999,
            "logical_block_size": 512,
            "block_device": true,
            "done": 5
        }]})
        .to_string(),
    )
    .unwrap();
    let args = prepare_args(&paths, &state.display().to_string());
    let out = run_hostmax(&args, None);
    assert_refused(&args, &out, &["--state", "remove the file to start over"]);
}

/// A loop device pointed at another file of the same size between a stopped prepare and its
/// continuation (the same /dev/loopN, the same size: all the state kept before) is not the
/// volume the state was made for: refused (exit 2) naming both backing files, nothing read.
#[test]
fn prepare_refuses_to_continue_on_a_loop_device_pointed_at_another_file() {
    require_root!();
    const SIZE: u64 = 48 * MIB;
    let scratch = ScratchDir::new("prepare-repointed");
    let image = |name: &str| {
        let path = scratch.join(name);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        file.set_len(SIZE).unwrap();
        (file, path.display().to_string())
    };
    let ((a, a_path), (b, b_path)) = (image("a.img"), image("b.img"));
    // Read-only: the kernel re-points only a read-only loop device (LOOP_CHANGE_FD).
    let dev = hostmax_simhost::LoopDevice::attach(
        &a,
        &hostmax_simhost::LoopOptions::default().with_read_only(true),
    )
    .expect("a loop device");
    let paths = vec![dev.path().display().to_string()];
    let state = scratch.join("state.json").display().to_string();
    let throttle = IoThrottle::create().expect("a cgroup for the cap");
    throttle.limit_bps(dev.major_minor(), 16 * MIB).unwrap();
    let (status, seen) = prepare_stopped_early(&paths, &state, &throttle);
    assert_eq!(status.code(), Some(130), "{seen}");

    dev.change_backing(&b).expect("LOOP_CHANGE_FD");
    let before = sectors(dev.kernel_name());
    let args = prepare_args(&paths, &state);
    let out = run_hostmax(&args, None);
    assert_refused(
        &args,
        &out,
        &[
            "--state",
            &format!("{} was backing file {a_path} (", paths[0]),
            &format!("now backing file {b_path} ("),
            "remove the file to start over",
        ],
    );
    assert_eq!(sectors(dev.kernel_name()), before, "nothing read");
}

/// `prepare --state` on a FIFO (or anything but a regular file) is refused at once, not read
/// (a FIFO nobody writes would wait forever).
#[test]
fn prepare_refuses_a_state_that_is_not_a_regular_file_at_once() {
    let scratch = ScratchDir::new("prepare-fifo");
    let volume = scratch.join("v.img");
    std::fs::File::create(&volume)
        .unwrap()
        .set_len(4 * MIB)
        .unwrap();
    let fifo = scratch.join("state.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let args = prepare_args(&[volume.display().to_string()], &fifo.display().to_string());
    let clock = std::time::Instant::now();
    let mut child = std::process::Command::new(hostmax_bin())
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if clock.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("prepare --state FIFO still running after 5 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(clock.elapsed() < Duration::from_secs(1));
    assert_refused(&args, &out, &["--state", "not a regular file"]);
}
