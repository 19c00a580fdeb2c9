//! Faults during a run, on real loop devices and a real full filesystem: a device turned
//! read-only mid-run (EPERM), a file target on a full tmpfs (ENOSPC), SIGINT and SIGTERM.
//! The faulty device is reported failed with its errno and first offsets while its neighbours'
//! counts still match the kernel's; a signal gives a complete report marked interrupted.
//! Every `blockdev --setro`, mount and loop device is undone in `Drop` guards.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use hostmax_simhost::LoopDevice;
use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;
const IODEPTH: u64 = 32;

/// A device set read-only with `blockdev --setro`, set back read-write on drop.
struct ReadOnly(String);

impl ReadOnly {
    fn set(dev: &LoopDevice) -> ReadOnly {
        let path = dev.path().display().to_string();
        let guard = ReadOnly(path.clone());
        let ok = tool_command("blockdev", "util-linux")
            .args(["--setro", &path])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "blockdev --setro {path}");
        guard
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = tool_command("blockdev", "util-linux")
            .args(["--setrw", &self.0])
            .status();
    }
}

/// A running `hostmax`, killed on drop if the test fails before it ends.
struct Running(Option<Child>);

impl Running {
    fn spawn(args: &[String]) -> Running {
        Running::spawn_in(args, None)
    }

    /// Starts hostmax, inside `group`'s cgroup when given (so its caps apply).
    fn spawn_in(args: &[String], group: Option<&IoThrottle>) -> Running {
        let mut cmd = Command::new(hostmax_bin());
        if let Some(group) = group {
            group.command_in_group(&mut cmd);
        }
        let child = cmd
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run hostmax");
        Running(Some(child))
    }

    fn pid(&self) -> i32 {
        self.0.as_ref().unwrap().id() as i32
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill only takes a pid and a signal number; the child is ours and not yet reaped.
        let ret = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(ret, 0, "kill: {}", std::io::Error::last_os_error());
    }

    fn wait(mut self) -> Output {
        self.0
            .take()
            .unwrap()
            .wait_with_output()
            .expect("wait for hostmax")
    }
}

/// Waits (up to a minute) until the kernel's (reads, writes) of device `kernel_name` satisfy
/// `reached`: the run is measuring. On an emulated CPU, starting takes seconds.
fn wait_for_io(kernel_name: &str, reached: impl Fn((u64, u64)) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !reached(kernel_completions(kernel_name)) {
        assert!(
            Instant::now() < deadline,
            "{kernel_name} saw no I/O within a minute"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// More reads than the write-safety probe issues: the run itself is reading.
const RUN_READS: u64 = 64;

/// Waits (up to a minute) until process `pid` catches SIGINT (its handler is installed).
fn wait_for_sigint_handler(pid: i32) {
    wait_for_handler(pid, libc::SIGINT);
}

/// Waits (up to a minute) until process `pid` catches `sig` (its `SigCgt` mask has it).
fn wait_for_handler(pid: i32, sig: i32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let caught = || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .is_some_and(|mask| mask & (1 << (sig - 1)) != 0)
    };
    while !caught() {
        assert!(
            Instant::now() < deadline,
            "hostmax never caught signal {sig}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn devices(host: &SimulatedHost) -> Vec<&LoopDevice> {
    host.volumes()
        .iter()
        .map(|v| v.loop_device().expect("a loop volume"))
        .collect()
}

fn read_report(path: &str, out: &Output) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "no report at {path} ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} is not valid JSON ({e})"))
}

/// Asserts a device was reported failed with `errno` and names its first failed offsets.
fn assert_failed_with(device: &Value, errno: i64) {
    let detail = &device["error_detail"];
    let by_errno = detail["by_errno"].as_object().expect("by_errno");
    let n = by_errno
        .get(&errno.to_string())
        .and_then(Value::as_u64)
        .unwrap_or(0);
    assert!(n >= 1, "no errno {errno} in {device}");
    assert_eq!(device["errors"].as_u64(), detail["count"].as_u64());
    let first = detail["first"].as_array().expect("first");
    assert!(!first.is_empty(), "no first offsets in {device}");
    for sample in first {
        assert_eq!(sample["errno"].as_i64(), Some(errno), "{sample}");
        assert_eq!(sample["op"], "write", "{sample}");
        let offset = sample["offset"].as_u64().expect("an offset");
        assert_eq!(offset % 4096, 0, "{sample}");
    }
}

/// Runs a 4 s randwrite on three loop volumes, turns the middle one read-only about 1 s in,
/// and returns the exit code, the report, the wall time, each device's kernel-counted write
/// completions during the run, and the table.
fn run_with_setro(on_error: &str) -> (Option<i32>, Value, Duration, Vec<u64>, String) {
    let scratch = ScratchDir::new(&format!("setro-{on_error}"));
    let host = loop_volumes(3, 64 * MIB);
    let devs = devices(&host);
    let json = scratch.join("out.json").display().to_string();
    let mut args: Vec<String> = vec!["--devices".into()];
    args.extend(devs.iter().map(|d| d.path().display().to_string()));
    args.extend(
        [
            "--rw",
            "randwrite",
            "--runtime",
            "4s",
            "--ramp",
            "0s",
            "--allow-write",
            "--on-error",
            on_error,
            "--json",
            &json,
        ]
        .map(String::from),
    );
    let before: Vec<u64> = devs
        .iter()
        .map(|d| kernel_completions(d.kernel_name()).1)
        .collect();
    let started = Instant::now();
    let running = Running::spawn(&args);
    // Once the middle device has taken writes (about 1 s in at full speed).
    wait_for_io(devs[1].kernel_name(), |(_, writes)| writes > before[1]);
    std::thread::sleep(Duration::from_millis(500));
    // Declared after `host`: set read-write again before the loop devices go.
    let _ro = ReadOnly::set(devs[1]);
    let out = running.wait();
    let wall = started.elapsed();
    let after: Vec<u64> = devs
        .iter()
        .map(|d| kernel_completions(d.kernel_name()).1)
        .collect();
    let report = read_report(&json, &out);
    for (i, d) in devs.iter().enumerate() {
        assert_eq!(
            report["devices"][i]["path"].as_str(),
            Some(d.path().to_str().unwrap())
        );
    }
    let deltas = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code(), report, wall, deltas, table)
}

/// The neighbours of the read-only device: not failed, no errors, and `ios` equal to the
/// kernel's write completions within the queue depth.
fn assert_neighbours_exact(report: &Value, deltas: &[u64]) {
    for i in [0, 2] {
        let d = &report["devices"][i];
        assert_eq!(d["failed"], false, "{d}");
        assert_eq!(d["errors"], 0, "{d}");
        let ios = d["write"]["ios"].as_u64().unwrap();
        assert!(ios > 0, "{d}");
        assert!(
            ios.abs_diff(deltas[i]) <= IODEPTH,
            "device {i}: hostmax counted {ios} writes, the kernel {}",
            deltas[i]
        );
    }
}

#[test]
fn a_device_turned_read_only_mid_run_fails_alone() {
    require_root!();
    let (code, report, _, deltas, table) = run_with_setro("stop-device");
    assert_eq!(code, Some(3), "exit code: {report}");
    let failed = &report["devices"][1];
    assert_eq!(failed["failed"], true, "{failed}");
    assert_failed_with(failed, libc::EPERM as i64);
    // It was written before it turned read-only.
    let ios = failed["write"]["ios"].as_u64().unwrap();
    assert!(ios > 0, "{failed}");
    // It says when it stopped (it was made read-only 0.5 s after its first write, well
    // before the 4 s window ended), and its rate is over those seconds, not the window's.
    let stopped_at = number(&failed["stopped_at_secs"]);
    assert!((0.4..3.9).contains(&stopped_at), "{failed}");
    let rate = number(&failed["write"]["iops"]);
    assert!(
        (rate * stopped_at - ios as f64).abs() <= 1e-6 * ios as f64,
        "{rate} IOPS over {stopped_at} s for {ios} writes"
    );
    assert_eq!(number(&failed["iops"]), rate);
    for i in [0, 2] {
        assert!(report["devices"][i].get("stopped_at_secs").is_none());
    }
    let path = report["devices"][1]["path"].as_str().unwrap();
    assert!(
        table.contains(&format!(
            "{path} stopped at {stopped_at:.1} s, after a failed I/O: its rates are over those {stopped_at:.1} s"
        )),
        "{table}"
    );
    assert_neighbours_exact(&report, &deltas);
    assert_eq!(report["interrupted"], false);
    assert!(report["measured_secs"].as_f64().unwrap() >= 3.9, "{report}");
    assert!(report["host"]["errors"].as_u64().unwrap() >= 1);
}

#[test]
fn on_error_continue_keeps_counting_errors() {
    require_root!();
    let (code, report, _, deltas, _) = run_with_setro("continue");
    assert_eq!(code, Some(3), "exit code: {report}");
    let dev = &report["devices"][1];
    // Not taken out: it kept being tried, and every try failed.
    assert_eq!(dev["failed"], false, "{dev}");
    assert_failed_with(dev, libc::EPERM as i64);
    let errors = dev["errors"].as_u64().unwrap();
    assert!(
        errors > 10 * IODEPTH,
        "only {errors} errors after ~3 s read-only"
    );
    assert_neighbours_exact(&report, &deltas);
    assert!(report["measured_secs"].as_f64().unwrap() >= 3.9, "{report}");
}

#[test]
fn on_error_stop_all_ends_the_run_early() {
    require_root!();
    let (code, report, wall, _, table) = run_with_setro("stop-all");
    assert_eq!(code, Some(3), "exit code: {report}");
    assert_eq!(report["devices"][1]["failed"], true);
    assert_failed_with(&report["devices"][1], libc::EPERM as i64);
    let measured = report["measured_secs"].as_f64().unwrap();
    assert!(
        measured < 3.0,
        "stop-all ran {measured} s of a 4 s run after a failure at ~1 s"
    );
    assert!(wall < Duration::from_millis(3500), "took {wall:?}");
    let stopped_at = number(&report["devices"][1]["stopped_at_secs"]);
    assert!(stopped_at <= measured, "{report}");
    let path = report["devices"][1]["path"].as_str().unwrap();
    assert!(
        table.contains(&format!(
            "{path} stopped at {stopped_at:.1} s, after a failed I/O, and the run with it"
        )),
        "{table}"
    );
    // The others were stopped, not failed.
    assert_eq!(report["devices"][0]["failed"], false);
    assert_eq!(report["devices"][2]["failed"], false);
    assert_eq!(report["interrupted"], false);
}

#[test]
fn a_file_target_out_of_space_is_reported_failed_with_enospc() {
    require_root!();
    let scratch = ScratchDir::new("enospc");
    let _tmpfs = Mount::tmpfs(&scratch.0.join("small"), "4m");
    let target = scratch.0.join("small/target.img");
    // Sparse and 16 times larger than the filesystem under it.
    std::fs::File::create(&target)
        .and_then(|f| f.set_len(64 * MIB))
        .unwrap();
    let json = scratch.join("out.json").display().to_string();
    let args: Vec<String> = [
        "--devices",
        target.to_str().unwrap(),
        "--rw",
        "randwrite",
        "--runtime",
        "2s",
        "--ramp",
        "0s",
        "--json",
        &json,
    ]
    .map(String::from)
    .to_vec();
    let out = run_hostmax(&args, None);
    let report = read_report(&json, &out);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dev = &report["devices"][0];
    assert_eq!(dev["failed"], true, "{dev}");
    assert_failed_with(dev, libc::ENOSPC as i64);
    // It filled the filesystem before the first failure: at least half of its 1024 pages.
    let ios = dev["write"]["ios"].as_u64().unwrap();
    assert!(ios >= 512, "only {ios} writes before ENOSPC");
}

/// Interrupts a 10 s run over two loop volumes 1.5 s in with `sig` (called `name`), and
/// checks the report and the exit code.
fn interrupt_run(sig: i32, name: &str) {
    let scratch = ScratchDir::new(&format!("signal-{sig}"));
    let host = loop_volumes(2, 32 * MIB);
    let json = scratch.join("out.json").display().to_string();
    let mut args: Vec<String> = vec!["--devices".into()];
    args.extend(host.device_paths().iter().map(|p| p.display().to_string()));
    args.extend(["--runtime", "10s", "--ramp", "0s", "--json", &json].map(String::from));
    let names: Vec<String> = host
        .volumes()
        .iter()
        .map(|v| v.kernel_name().unwrap().to_string())
        .collect();
    let before = kernel_completions(&names[0]);
    let running = Running::spawn(&args);
    // Once it measures (about 1.5 s in at full speed), so the report has figures.
    // Reads a fresh device gets from elsewhere (6.1 in the matrix's VM counts some on null_blk
    // before hostmax starts) must not make this signal come before hostmax catches it.
    wait_for_handler(running.pid(), sig);
    wait_for_io(&names[0], |(reads, _)| reads > before.0 + RUN_READS);
    std::thread::sleep(Duration::from_millis(1000));
    let signalled = Instant::now();
    running.signal(sig);
    let out = running.wait();
    // It drains and reports, not runs on to its 10 s.
    assert!(
        signalled.elapsed() < Duration::from_secs(5),
        "{:?}",
        signalled.elapsed()
    );
    assert_eq!(
        out.status.code(),
        Some(128 + sig),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = read_report(&json, &out);
    assert_eq!(report["interrupted"], true);
    assert_eq!(report["interrupted_by"], name);
    assert_eq!(report["schema_version"], 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("hostmax: {name}: stopping")),
        "{stderr}"
    );
    let measured = report["measured_secs"].as_f64().unwrap();
    assert!(measured > 0.5 && measured < 10.0, "measured {measured} s");
    assert_eq!(report["devices"].as_array().unwrap().len(), 2);
    assert!(report["host"]["read"]["ios"].as_u64().unwrap() > 0);
    // Only the report is left beside it: no temporary file.
    let left: Vec<String> = std::fs::read_dir(&scratch.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["out.json".to_string()]);
    // The loop devices go with the host.
    let names: Vec<String> = devices(&host)
        .iter()
        .map(|d| d.kernel_name().to_string())
        .collect();
    drop(host);
    for name in names {
        let backing = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file"))
            .unwrap_or_default();
        assert!(
            !backing.contains(&format!("-{}-", std::process::id())),
            "{name} still attached to {backing}"
        );
    }
}

#[test]
fn sigint_gives_a_complete_interrupted_report_and_exit_130() {
    require_root!();
    interrupt_run(libc::SIGINT, "SIGINT");
}

#[test]
fn sigterm_gives_exit_143() {
    require_root!();
    interrupt_run(libc::SIGTERM, "SIGTERM");
}

/// A dropped ssh session (SIGHUP) and Ctrl-\\ (SIGQUIT) stop the run as SIGTERM does: drained,
/// reported (naming the signal), exit 128 + N, instead of killing it with no report.
#[test]
fn sighup_and_sigquit_drain_and_report_as_sigterm_does() {
    require_root!();
    interrupt_run(libc::SIGHUP, "SIGHUP");
    interrupt_run(libc::SIGQUIT, "SIGQUIT");
}

#[test]
fn a_signal_as_soon_as_hostmax_catches_it_still_ends_with_a_report() {
    require_root!();
    // The handler is installed before the devices are checked: a signal from then on stops
    // the run before or as it starts, and the report still comes (marked interrupted).
    let scratch = ScratchDir::new("early-signal");
    let host = volumes(1, 16 * MIB);
    let json = scratch.join("out.json").display().to_string();
    let mut args: Vec<String> = vec!["--devices".into()];
    args.extend(volume_paths(&host));
    args.extend(["--runtime", "30s", "--ramp", "0s", "--json", &json].map(String::from));
    let running = Running::spawn(&args);
    wait_for_sigint_handler(running.pid());
    running.signal(libc::SIGINT);
    let out = running.wait();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = read_report(&json, &out);
    assert_eq!(report["interrupted"], true);
    assert!(report["measured_secs"].as_f64().unwrap() < 30.0);
}

#[test]
fn a_second_signal_aborts_at_once_without_a_report() {
    require_root!();
    let _rate = rate_test_lock();
    // A volume capped at 20 IOPS with 32 I/Os in flight takes over a second to drain: the
    // first SIGINT starts that drain, the second must not wait for it.
    let spec = SimHostSpec::new(1, 16 * MIB).with_volume_iops_caps(vec![Some(20)]);
    let host = SimulatedHost::build_loop_devices(&spec).expect("simulated host");
    let scratch = ScratchDir::new("second-signal");
    let json = scratch.join("out.json").display().to_string();
    let mut args: Vec<String> = vec!["--devices".into()];
    args.extend(host.device_paths().iter().map(|p| p.display().to_string()));
    args.extend(["--runtime", "30s", "--ramp", "0s", "--json", &json].map(String::from));
    let name = host.volumes()[0].kernel_name().unwrap().to_string();
    let before = kernel_completions(&name);
    let running = Running::spawn_in(&args, host.throttle());
    wait_for_sigint_handler(running.pid());
    wait_for_io(&name, |(reads, _)| reads > before.0 + RUN_READS);
    running.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(100));
    let second = Instant::now();
    running.signal(libc::SIGINT);
    let out = running.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        second.elapsed() < Duration::from_millis(700),
        "took {:?} after the second signal",
        second.elapsed()
    );
    assert!(stderr.contains("second signal"), "{stderr}");
    assert!(
        !std::path::Path::new(&json).exists(),
        "an aborted run wrote a report"
    );
}

#[test]
fn sigint_during_the_demo_leaves_no_loop_devices() {
    require_root!();
    // The demo measures throttled rates: keep it away from other rate tests.
    let _rate = rate_test_lock();
    let mut running = Running::spawn(&["demo".to_string()]);
    let pid = running.pid();
    let stderr = running.0.as_mut().unwrap().stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.starts_with("hostmax demo:") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    // Once the host is built and the run under way, interrupt it.
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the demo never announced its host");
    std::thread::sleep(Duration::from_millis(1500));
    running.signal(libc::SIGINT);
    let out = running.wait();
    let stderr = reader.join().unwrap();
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let marker = format!("hostmax-sim-{pid}-");
    let attached = loops_left_by(pid);
    assert!(attached.is_empty(), "left attached: {attached:?}");
    let dirs: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&marker))
        .collect();
    assert!(dirs.is_empty(), "left in /dev/shm: {dirs:?}");
}

/// The signal watch covers every command, also those that run no engine: a SIGINT while
/// `hostmax merge` waits for an input (a FIFO nobody has written yet) does not kill it; it
/// reads the input, writes its whole report, and then exits 130.
#[test]
fn a_signal_during_merge_lets_it_finish_its_report_then_exit_130() {
    let scratch = ScratchDir::new("merge-signal");
    let target = scratch.file("t.img", 8 * MIB).display().to_string();
    let mut reports = Vec::new();
    for name in ["a.json", "b.json"] {
        let path = scratch.join(name).display().to_string();
        let args = [
            "--devices",
            &target,
            "--runtime",
            "1s",
            "--ramp",
            "0s",
            "--json",
            &path,
        ];
        let made = run_hostmax(&args, None);
        assert_eq!(
            made.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
        reports.push(path);
    }
    let fleet = scratch.join("fleet.json").display().to_string();
    // (A FIFO once held the second input back until after the signal; merge now refuses
    // anything but a regular file. The handler is in place before merge reads anything, so a
    // signal sent once it is there comes during the merge.)
    let args: Vec<String> = [
        "merge",
        &reports[0],
        &reports[1],
        "--min-overlap",
        "0",
        "--json",
        &fleet,
    ]
    .map(String::from)
    .to_vec();
    let running = Running::spawn(&args);
    wait_for_sigint_handler(running.pid());
    running.signal(libc::SIGINT);
    let out = running.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(&fleet).unwrap()).unwrap();
    assert_eq!(
        merged["fleet"]["hosts"].as_array().map(Vec::len),
        Some(2),
        "{merged}"
    );
}

/// How long dm-delay holds each I/O of the stalled device: far beyond the run's end plus the
/// drain limit (12 s), and short enough that the device can be removed soon after, whatever
/// the kernel does with delayed I/O on suspend.
const DM_DELAY: Duration = Duration::from_secs(45);

/// Why device-mapper cannot be used here, if it cannot: no dm in the kernel (this machine's
/// own kernel has no modules), no dm-delay target, or no dmsetup.
fn dm_delay_unavailable() -> Option<String> {
    let _ = Command::new("modprobe")
        .args(["-a", "dm-mod", "dm-delay"])
        .output();
    let misc = std::fs::read_to_string("/proc/misc").unwrap_or_default();
    if !std::path::Path::new("/sys/module/dm_mod").exists() && !misc.contains("device-mapper") {
        return Some(
            "this kernel has no device-mapper (no /sys/module/dm_mod, no device-mapper in /proc/misc); the kernel matrix (tests/kernels/run.sh) runs it"
                .into(),
        );
    }
    let dmsetup = match require_tool("dmsetup", "dmsetup") {
        Ok(path) => path,
        Err(why) => return Some(why),
    };
    let targets = Command::new(dmsetup).arg("targets").output().ok()?;
    if !String::from_utf8_lossy(&targets.stdout).contains("delay") {
        return Some("this kernel has no dm-delay target (modprobe dm-delay failed)".into());
    }
    None
}

#[test]
fn a_stalled_device_ends_the_run_within_the_drain_limit_naming_it() {
    require_root!();
    if let Some(why) = dm_delay_unavailable() {
        skip!("{why}");
    }
    let host = volumes(2, 32 * MIB);
    let paths = volume_paths(&host);
    let names = volume_kernel_names(&host);
    // Every I/O of the first volume, seen through dm-delay, waits DM_DELAY: a device that
    // stopped answering, as far as the run can tell.
    let sectors = 32 * MIB / 512;
    let table = format!("0 {sectors} delay {} 0 {}", paths[0], DM_DELAY.as_millis());
    let dm = DmDevice::create(&format!("hostmax-stall-{}", std::process::id()), &table)
        .unwrap_or_else(|e| panic!("{e}"));
    let stalled = dm.node();
    let healthy = &paths[1];
    let _ = baseline_completions(&paths[1..], &names[1..]);
    let before = kernel_completions(&names[1]);
    let dir = ScratchDir::new("stalled");
    let json = dir.0.join("report.json").display().to_string();
    let runtime = Duration::from_secs(2);
    let depth = 8;
    let args = [
        "--devices",
        &stalled,
        healthy,
        "--iodepth",
        &depth.to_string(),
        "--runtime",
        "2s",
        "--ramp",
        "0s",
        "--json",
        &json,
    ]
    .map(String::from);
    let started = Instant::now();
    let out = run_hostmax(&args, None);
    let took = started.elapsed();
    let after = kernel_completions(&names[1]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The bound: the runtime plus the drain limit, plus the start and the report (slow under
    // the matrix's emulated CPU), and not less than the drain limit itself.
    let limit = hostmax_engine::DRAIN_LIMIT;
    assert!(
        took < runtime + limit + Duration::from_secs(20) && took >= runtime + limit,
        "took {took:?}: {stderr}"
    );
    assert_eq!(out.status.code(), Some(6), "{stdout}{stderr}");
    let report = read_report(&json, &out);
    let devices = report["devices"].as_array().unwrap();
    assert_eq!(devices[0]["path"], stalled.as_str(), "{report}");
    assert_eq!(devices[0]["stalled_in_flight"], depth, "{}", devices[0]);
    assert!(
        devices[1].get("stalled_in_flight").is_none(),
        "{}",
        devices[1]
    );
    assert!(
        stdout.contains(&format!(
            "{stalled} stopped answering: {depth} I/Os still in flight"
        )),
        "{stdout}"
    );
    // The healthy device's count is exact: the kernel's equals hostmax's.
    let own = devices[1]["ramp"]["reads"].as_u64().unwrap()
        + devices[1]["read"]["ios"].as_u64().unwrap()
        + devices[1]["drained"]["reads"].as_u64().unwrap();
    assert!(own > 0);
    assert_eq!(own, after.0 - before.0, "{}", devices[1]);
    drop(dm);
    drop(host);
}

#[test]
fn a_device_that_cannot_drain_in_time_is_reported_stalled() {
    require_root!();
    let throttle = match IoThrottle::create() {
        Ok(t) => t,
        Err(e) => skip!("no usable cgroup io throttle here ({e})"),
    };
    let host = volumes(2, 32 * MIB);
    let paths = volume_paths(&host);
    let names = volume_kernel_names(&host);
    let slow = host.volumes()[0].major_minor().unwrap();
    let _ = baseline_completions(&paths, &names);
    // Two I/Os a second (io.max takes no less) with 64 in flight: at the run's end they need
    // ~32 s to drain, far more than the drain limit. No device-mapper needed: this runs on any
    // kernel with a throttle.
    throttle.limit_iops(slow, 2).unwrap();
    let before = kernel_completions(&names[1]);
    let dir = ScratchDir::new("undrained");
    let json = dir.0.join("report.json").display().to_string();
    let depth: u64 = 64;
    let args = [
        "--devices",
        &paths[0],
        &paths[1],
        "--iodepth",
        &depth.to_string(),
        "--runtime",
        "2s",
        "--ramp",
        "0s",
        "--json",
        &json,
    ]
    .map(String::from);
    let started = Instant::now();
    let out = run_hostmax(&args, Some(&throttle));
    let took = started.elapsed();
    // Let the throttled I/O go, so the volume can be taken down.
    throttle
        .limit(slow, &hostmax_simhost::DeviceLimit::default())
        .unwrap();
    let after = kernel_completions(&names[1]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let limit = hostmax_engine::DRAIN_LIMIT;
    assert!(
        took >= Duration::from_secs(2) + limit && took < Duration::from_secs(2) + limit * 2,
        "took {took:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(6), "{stdout}");
    let report = read_report(&json, &out);
    let slow_dev = &report["devices"][0];
    let stalled = slow_dev["stalled_in_flight"]
        .as_u64()
        .expect("stalled_in_flight");
    // What the drain brought back and what it gave up on were the I/Os in flight at the end.
    let drained = slow_dev["drained"]["reads"].as_u64().unwrap();
    assert!(stalled >= 1 && stalled + drained <= depth, "{slow_dev}");
    assert!(
        stdout.contains(&format!(
            "{} stopped answering: {stalled} I/Os still in flight",
            paths[0]
        )),
        "{stdout}"
    );
    let healthy = &report["devices"][1];
    assert!(healthy.get("stalled_in_flight").is_none(), "{healthy}");
    let own = healthy["ramp"]["reads"].as_u64().unwrap()
        + healthy["read"]["ios"].as_u64().unwrap()
        + healthy["drained"]["reads"].as_u64().unwrap();
    assert!(own > 0);
    assert_eq!(own, after.0 - before.0, "{healthy}");
    // The throttled I/O completes now that the rule is gone: nothing is left in flight.
    let inflight = format!("/sys/block/{}/inflight", names[0]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(&inflight)
        .map(|s| s.split_whitespace().any(|n| n != "0"))
        .unwrap_or(false)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(host);
}

/// A volume that stops answering near the end of a judged run (a blkio cgroup throttle of 2
/// IOPS from early in a 3 s run at depth 32: its I/Os in flight at the end need ~16 s, more
/// than the drain limit) while its figures over the window keep a low promise: exit 6, and
/// the verdict fails it (`verdict.pass` false, a "stopped answering" row), never PASS.
#[test]
fn a_volume_that_stopped_answering_never_passes_its_verdict() {
    require_root!();
    let throttle = match IoThrottle::create() {
        Ok(t) => t,
        Err(e) => skip!("no usable cgroup io throttle here ({e})"),
    };
    let host = volumes(1, 32 * MIB);
    let paths = volume_paths(&host);
    let names = volume_kernel_names(&host);
    let before = baseline_completions(&paths, &names)[0];
    let slow = host.volumes()[0].major_minor().unwrap();
    let dir = ScratchDir::new("stalled-verdict");
    let json = dir.0.join("report.json").display().to_string();
    let args = [
        "--devices",
        &paths[0],
        "--iodepth",
        "32",
        "--runtime",
        "3s",
        "--ramp",
        "0s",
        "--expect-volume-iops",
        "100",
        "--json",
        &json,
    ]
    .map(String::from);
    let running = Running::spawn_in(&args, Some(&throttle));
    // Measuring (more reads than anything but the run does: the plan's probe, udev's), then
    // held to 2 IOPS well before the end.
    wait_for_io(&names[0], |(reads, _)| reads > before.0 + 20_000);
    std::thread::sleep(Duration::from_millis(300));
    throttle.limit_iops(slow, 2).unwrap();
    let unthrottle = Unthrottle {
        group: &throttle,
        device: slow,
        kernel_name: names[0].clone(),
    };
    let out = running.wait_within(Duration::from_secs(60));
    drop(unthrottle);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(6), "{stdout}");
    let report = read_report(&json, &out);
    let stuck = report["devices"][0]["stalled_in_flight"]
        .as_u64()
        .unwrap_or_else(|| panic!("not stalled: {}", report["devices"][0]));
    // Its window kept the promise: only its answering fails it.
    assert!(
        report["devices"][0]["iops"].as_f64().unwrap() > 100.0,
        "{}",
        report["devices"][0]
    );
    let verdict = &report["verdict"];
    assert_eq!(verdict["pass"], false, "{verdict}");
    assert_eq!(verdict["devices"][0]["verdict"], "fail", "{verdict}");
    assert_eq!(
        verdict["devices"][0]["stalled_in_flight"], stuck,
        "{verdict}"
    );
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with(&paths[0]) && l.contains("iops=100"))
        .collect();
    assert!(
        rows.iter()
            .any(|r| r.contains("stopped answering") && r.ends_with("FAIL")),
        "{stdout}"
    );
    assert!(rows.iter().all(|r| !r.ends_with("PASS")), "{stdout}");
    assert!(
        stdout.contains(&format!("FAIL: {} stopped answering", paths[0])),
        "{stdout}"
    );
    drop(host);
}

/// What hostmax did beside a stalled volume ([`on_a_stalled_volume`]).
struct StalledOutcome {
    stderr: String,
    code: Option<i32>,
    /// From its start (or from the signal, when one was sent) to its exit.
    took: Duration,
    /// Whether the kernel saw a write to either volume.
    wrote: bool,
    /// The stalled volume.
    volume: String,
}

impl StalledOutcome {
    /// Asserts it ended with `code` within `at_least..below`, naming the stalled volume as
    /// not answering in its last line.
    fn assert_ended(&self, code: i32, at_least: Duration, below: Duration) {
        let (took, stderr) = (self.took, &self.stderr);
        assert!(took >= at_least && took < below, "took {took:?}: {stderr}");
        assert_eq!(self.code, Some(code), "{stderr}");
        let last = stderr.trim().lines().last().unwrap_or_default();
        assert!(
            last.contains(&self.volume) && last.contains("got no answer within 10 s"),
            "{stderr}"
        );
    }
}

/// Two volumes, the first throttled to a few bytes a second for reads (a 512 KiB read of it
/// would take hours: a device that stopped answering, as far as anyone can tell), and hostmax
/// started in the throttled group with the arguments `args` makes of the two paths; SIGINT
/// `signal_after` its read of the first volume began, if given. `Err` says why it cannot run
/// here (no cgroup io throttle).
fn on_a_stalled_volume(
    args: impl Fn(&str, &str) -> Vec<String>,
    signal_after: Option<Duration>,
) -> Result<StalledOutcome, String> {
    let throttle =
        IoThrottle::create().map_err(|e| format!("no usable cgroup io throttle here ({e})"))?;
    let host = volumes(2, 32 * MIB);
    let paths = volume_paths(&host);
    let names = volume_kernel_names(&host);
    let _ = baseline_completions(&paths, &names);
    let slow = host.volumes()[0].major_minor().unwrap();
    let crawl = hostmax_simhost::DeviceLimit::default().with_read_bps(Some(512));
    throttle.limit(slow, &crawl).unwrap();
    let unthrottle = Unthrottle {
        group: &throttle,
        device: slow,
        kernel_name: names[0].clone(),
    };
    let before: Vec<(u64, u64)> = names.iter().map(|n| kernel_completions(n)).collect();
    let args = args(&paths[0], &paths[1]);
    // The read waits in a ring of hostmax's: an io_uring descriptor (before any run: the
    // safety probe's or a read pass's).
    let ring_open = |pid: i32| {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|fds| {
                fds.flatten().any(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|l| l.to_string_lossy().contains("io_uring"))
                })
            })
            .unwrap_or(false)
    };
    let mut started = Instant::now();
    let mut running = Running::spawn_in(&args, Some(&throttle));
    if let Some(after) = signal_after {
        // The read is held by the throttle (in blk-throttle, before the device counts it in
        // flight): the signal comes while it waits.
        wait_for_sigint_handler(running.pid());
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ring_open(running.pid()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(ring_open(running.pid()), "hostmax never read {}", paths[0]);
        // A ring is open before its first read goes out (a read pass's readers each make
        // theirs, which takes seconds on the matrix's emulated CPUs): once the healthy
        // volume has been read, the stalled one's read, queued beside it, is waiting too.
        wait_for_io(&names[1], |(reads, _)| reads > before[1].0);
        std::thread::sleep(after);
        running.signal(libc::SIGINT);
        // Timed from the signal: starting takes seconds on the matrix's emulated CPUs.
        started = Instant::now();
    }
    // A hostmax held in the kernel by the read (as before the bound) is let go after a
    // minute, so the test fails on the time instead of hanging.
    let child = running.0.as_mut().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed();
    // Let the abandoned read go, so the volume can be taken down.
    drop(unthrottle);
    let out = running.wait();
    let wrote = names
        .iter()
        .zip(&before)
        .any(|(n, b)| kernel_completions(n).1 != b.1);
    drop(host);
    Ok(StalledOutcome {
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
        took,
        wrote,
        volume: paths[0].clone(),
    })
}

/// A short write run on both volumes.
fn write_run(stalled: &str, healthy: &str) -> Vec<String> {
    [
        "--devices",
        stalled,
        healthy,
        "--rw",
        "randwrite",
        "--allow-write",
        "--runtime",
        "1s",
        "--ramp",
        "0s",
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn a_device_stalled_before_a_write_run_ends_the_checks_with_exit_6_naming_it() {
    require_root!();
    let outcome = match on_a_stalled_volume(write_run, None) {
        Ok(outcome) => outcome,
        Err(why) => skip!("{why}"),
    };
    // One patience for the probe's read (all devices are probed at once), plus the start.
    let patience = hostmax_device::READ_PATIENCE;
    outcome.assert_ended(6, patience, patience + Duration::from_secs(20));
    let stderr = &outcome.stderr;
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("{} was not checked", outcome.volume))
            && stderr.contains("Nothing was written"),
        "{stderr}"
    );
    assert!(!outcome.wrote, "a volume was written: {stderr}");
}

#[test]
fn sigint_during_a_stalled_safety_probe_ends_it_at_once() {
    require_root!();
    let outcome = match on_a_stalled_volume(write_run, Some(Duration::from_secs(1))) {
        Ok(outcome) => outcome,
        Err(why) => skip!("{why}"),
    };
    // The read was in flight 1 s before the signal: had the signal not ended the wait, the
    // patience (10 s) would have ended it 9 s after the signal at the earliest.
    let stderr = &outcome.stderr;
    assert!(outcome.took < Duration::from_secs(6), "{stderr}");
    assert_eq!(outcome.code, Some(130), "{stderr}");
    assert!(!outcome.wrote, "a volume was written: {stderr}");
}

/// `hostmax prepare` of both volumes.
fn read_pass(stalled: &str, healthy: &str) -> Vec<String> {
    ["prepare", "--devices", stalled, healthy]
        .map(String::from)
        .to_vec()
}

#[test]
fn a_read_pass_on_a_stalled_device_ends_with_exit_6_naming_it() {
    require_root!();
    let outcome = match on_a_stalled_volume(read_pass, None) {
        Ok(outcome) => outcome,
        Err(why) => skip!("{why}"),
    };
    let limit = hostmax_engine::DRAIN_LIMIT;
    outcome.assert_ended(6, limit, limit + Duration::from_secs(20));
}

#[test]
fn sigint_during_a_stalled_read_pass_ends_within_the_drain_limit_naming_it() {
    require_root!();
    let outcome = match on_a_stalled_volume(read_pass, Some(Duration::from_secs(1))) {
        Ok(outcome) => outcome,
        Err(why) => skip!("{why}"),
    };
    // A stop waits for the reads in flight as a run's drain does, at most the drain limit
    // (the read began 1 s before the signal).
    let limit = hostmax_engine::DRAIN_LIMIT;
    outcome.assert_ended(130, Duration::ZERO, limit + Duration::from_secs(10));
}

/// Lifts `device`'s caps in the group on drop (also when the test fails), so the I/O the caps
/// held back completes and the volume can be taken down; then waits (up to 30 s) until the
/// kernel has none of the device's I/O in flight.
struct Unthrottle<'a> {
    group: &'a IoThrottle,
    device: (u32, u32),
    kernel_name: String,
}

impl Drop for Unthrottle<'_> {
    fn drop(&mut self) {
        let _ = self
            .group
            .limit(self.device, &hostmax_simhost::DeviceLimit::default());
        let inflight = format!("/sys/block/{}/inflight", self.kernel_name);
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::fs::read_to_string(&inflight)
            .map(|s| s.split_whitespace().any(|n| n != "0"))
            .unwrap_or(false)
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Running {
    /// Waits for the exit, at most `limit` (then the child is killed and the test fails: an
    /// unbounded wait is the fault under test).
    fn wait_within(mut self, limit: Duration) -> Output {
        let deadline = Instant::now() + limit;
        let child = self.0.as_mut().unwrap();
        while child.try_wait().expect("poll hostmax").is_none() {
            if Instant::now() >= deadline {
                let pid = child.id();
                let mut dump = String::new();
                for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
                    let t = t.unwrap().path();
                    dump += &std::fs::read_to_string(t.join("comm")).unwrap_or_default();
                    dump += &std::fs::read_to_string(t.join("wchan")).unwrap_or_default();
                    dump += "\n";
                    dump += &std::fs::read_to_string(t.join("stack")).unwrap_or_default();
                }
                panic!("hostmax did not end within {limit:?}: {dump}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.wait()
    }
}

/// Blocks in the working set of the read-back tests (`--size 1m` of 4 KiB blocks): a
/// sequential write at depth 64 or less writes each of them, never two at once to one block, so
/// every block is checkable.
const READ_BACK_BLOCKS: u64 = 256;

/// Starts a 2 s sequential `--verify` write of `paths` (1 MiB each, depth 8) inside `group`,
/// with `extra` options, and waits until `kernel_name` has taken the run's writes: past the
/// write-safety checks, whose reads a read cap set before would hold up.
fn start_verified_write(
    paths: &[String],
    json: &str,
    extra: &[&str],
    group: &IoThrottle,
    kernel_name: &str,
) -> Running {
    let before = kernel_completions(kernel_name);
    let mut args: Vec<String> = vec!["--devices".into()];
    args.extend(paths.iter().cloned());
    args.extend(
        [
            "--rw",
            "write",
            "--size",
            "1m",
            "--allow-write",
            "--verify",
            "--runtime",
            "2s",
            "--ramp",
            "0s",
            "--json",
            json,
        ]
        .map(String::from),
    );
    args.extend(extra.iter().map(|s| s.to_string()));
    let running = Running::spawn_in(&args, Some(group));
    wait_for_io(kernel_name, |(_, writes)| writes > before.1);
    running
}

/// The read-back after a `--verify` write run is bounded like the run's drain: a device that
/// completes none of its reads for the drain limit is reported stalled (exit 6, named, its
/// reads in flight left to the kernel) and its unread blocks are counted, not passed over.
#[test]
fn a_device_that_stops_answering_during_the_read_back_is_reported_stalled() {
    require_root!();
    let throttle = match IoThrottle::create() {
        Ok(t) => t,
        Err(e) => skip!("no usable cgroup io throttle here ({e})"),
    };
    let host = volumes(1, 16 * MIB);
    let paths = volume_paths(&host);
    let names = volume_kernel_names(&host);
    let dir = ScratchDir::new("read-back-stall");
    let json = dir.0.join("report.json").display().to_string();
    let started = Instant::now();
    let running = start_verified_write(&paths, &json, &["--iodepth", "8"], &throttle, &names[0]);
    let device = host.volumes()[0].major_minor().unwrap();
    let _unthrottle = Unthrottle {
        group: &throttle,
        device,
        kernel_name: names[0].clone(),
    };
    // Two bytes a second of reads (io.max takes no less): a 4 KiB read waits half an hour, so
    // the read-back hears nothing back. The run itself only writes, at full speed.
    let reads_held = hostmax_simhost::DeviceLimit::default().with_read_bps(Some(2));
    throttle.limit(device, &reads_held).unwrap();
    let limit = hostmax_engine::DRAIN_LIMIT;
    let out = running.wait_within(Duration::from_secs(2) + limit + Duration::from_secs(30));
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        took >= limit && took < Duration::from_secs(2) + limit + Duration::from_secs(20),
        "took {took:?}: {stderr}"
    );
    assert_eq!(out.status.code(), Some(6), "{stdout}{stderr}");
    let report = read_report(&json, &out);
    let dev = &report["devices"][0];
    let stalled = dev["stalled_in_flight"]
        .as_u64()
        .expect("stalled_in_flight");
    assert!((1..=8).contains(&stalled), "{dev}");
    let verify = &dev["verify"];
    assert_eq!(verify["reads_left_in_flight"], stalled, "{verify}");
    assert_eq!(verify["unknown"], 0, "{verify}");
    assert_eq!(verify["not_read_back"]["interrupted"], 0, "{verify}");
    let unread = verify["not_read_back"]["stalled"].as_u64().unwrap();
    let checked = verify["checked_after_run"].as_u64().unwrap();
    assert!(unread >= stalled, "{verify}");
    assert_eq!(checked + unread, READ_BACK_BLOCKS, "{verify}");
    assert_eq!(report["verify"]["not_read_back"]["stalled"], unread);
    assert!(
        stdout.contains(&format!(
            "{} stopped answering: {stalled} I/Os still in flight after",
            paths[0]
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "{}: {unread} written blocks not read back after the run ({unread} as the device stopped answering)",
            paths[0]
        )),
        "{stdout}"
    );
    assert!(stdout.contains("NOT read back"), "{stdout}");
}

/// A signal during the read-back ends it within about a second: exit 130, the report written,
/// saying how many written blocks were left unchecked.
#[test]
fn sigint_during_the_read_back_ends_it_and_counts_the_blocks_left() {
    require_root!();
    let throttle = match IoThrottle::create() {
        Ok(t) => t,
        Err(e) => skip!("no usable cgroup io throttle here ({e})"),
    };
    let host = volumes(1, 16 * MIB);
    let paths = volume_paths(&host);
    let names = volume_kernel_names(&host);
    let dir = ScratchDir::new("read-back-sigint");
    let json = dir.0.join("report.json").display().to_string();
    let running = start_verified_write(&paths, &json, &["--iodepth", "8"], &throttle, &names[0]);
    let writing = Instant::now();
    let device = host.volumes()[0].major_minor().unwrap();
    let _unthrottle = Unthrottle {
        group: &throttle,
        device,
        kernel_name: names[0].clone(),
    };
    throttle
        .limit(
            device,
            &hostmax_simhost::DeviceLimit::default().with_read_bps(Some(2)),
        )
        .unwrap();
    // The run ends 2 s after its first write; its read-back is then held for the drain limit
    // (10 s) before it is called stalled: 4 s after the first write it is reading back.
    std::thread::sleep(Duration::from_secs(4).saturating_sub(writing.elapsed()));
    let signalled = Instant::now();
    running.signal(libc::SIGINT);
    let out = running.wait_within(Duration::from_secs(20));
    let took = signalled.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(4), "took {took:?}: {stderr}");
    assert_eq!(out.status.code(), Some(130), "{stdout}{stderr}");
    let report = read_report(&json, &out);
    assert_eq!(report["interrupted"], true);
    let dev = &report["devices"][0];
    assert!(dev.get("stalled_in_flight").is_none(), "{dev}");
    let verify = &dev["verify"];
    let unread = verify["not_read_back"]["interrupted"].as_u64().unwrap();
    let checked = verify["checked_after_run"].as_u64().unwrap();
    assert_eq!(verify["not_read_back"]["stalled"], 0, "{verify}");
    assert_eq!(checked + unread, READ_BACK_BLOCKS, "{verify}");
    assert!(unread >= 1, "{verify}");
    let left = verify["reads_left_in_flight"].as_u64().unwrap();
    assert!((1..=8).contains(&left), "{verify}");
    assert!(
        stdout.contains(&format!(
            "{}: {unread} written blocks not read back after the run ({unread} as a signal ended the read-back)",
            paths[0]
        )),
        "{stdout}"
    );
}

/// Two devices on one worker (one CPU, one ring), one of which stalls during the run: the
/// other's written blocks are still all read back and checked, and the stalled one's are
/// counted as not read back.
#[test]
fn a_stall_during_the_run_leaves_the_read_back_of_a_device_on_the_same_cpu_whole() {
    require_root!();
    let throttle = match IoThrottle::create() {
        Ok(t) => t,
        Err(e) => skip!("no usable cgroup io throttle here ({e})"),
    };
    let host = volumes(2, 16 * MIB);
    let paths = volume_paths(&host);
    let names = volume_kernel_names(&host);
    let dir = ScratchDir::new("read-back-beside-stall");
    let json = dir.0.join("report.json").display().to_string();
    let depth: u64 = 64;
    let started = Instant::now();
    let running = start_verified_write(
        &paths,
        &json,
        &["--iodepth", &depth.to_string(), "--cpus", "0"],
        &throttle,
        &names[0],
    );
    let slow = host.volumes()[0].major_minor().unwrap();
    let _unthrottle = Unthrottle {
        group: &throttle,
        device: slow,
        kernel_name: names[0].clone(),
    };
    // Two I/Os a second with 64 in flight: at the run's end they need ~32 s to drain, far
    // more than the drain limit.
    throttle.limit_iops(slow, 2).unwrap();
    let limit = hostmax_engine::DRAIN_LIMIT;
    let out = running.wait_within(Duration::from_secs(2) + limit + Duration::from_secs(30));
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        took >= limit && took < Duration::from_secs(2) + limit + Duration::from_secs(20),
        "took {took:?}: {stderr}"
    );
    assert_eq!(out.status.code(), Some(6), "{stdout}{stderr}");
    let report = read_report(&json, &out);
    let devices = report["devices"].as_array().unwrap();
    // One worker drove both.
    for d in devices {
        let drivers = d["drivers"].as_array().expect("drivers");
        assert_eq!(drivers.len(), 1, "{d}");
        assert_eq!(drivers[0]["cpu"], 0, "{d}");
    }
    let (slow_dev, healthy) = (&devices[0], &devices[1]);
    assert!(healthy.get("stalled_in_flight").is_none(), "{healthy}");
    let healthy_verify = &healthy["verify"];
    assert_eq!(
        healthy_verify["checked_after_run"], READ_BACK_BLOCKS,
        "{healthy_verify}"
    );
    assert_eq!(healthy_verify["not_read_back"]["stalled"], 0);
    assert_eq!(healthy_verify["not_read_back"]["interrupted"], 0);
    assert_eq!(healthy_verify["mismatches"], 0, "{healthy_verify}");
    // The stalled device: nothing read back; its blocks written are counted unread, those
    // whose writes it still held unknown.
    let stalled = slow_dev["stalled_in_flight"]
        .as_u64()
        .expect("stalled_in_flight");
    let slow_verify = &slow_dev["verify"];
    assert_eq!(slow_verify["checked_after_run"], 0, "{slow_verify}");
    assert_eq!(slow_verify["unknown"], stalled, "{slow_verify}");
    let completed = slow_dev["write"]["ios"].as_u64().unwrap()
        + slow_dev["drained"]["writes"].as_u64().unwrap();
    let written = (completed + stalled).min(READ_BACK_BLOCKS);
    let unread = slow_verify["not_read_back"]["stalled"].as_u64().unwrap();
    assert_eq!(unread + stalled, written, "{slow_dev}");
    assert!(
        stdout.contains(&format!(
            "{} stopped answering: {stalled} I/Os still in flight {} s after the end",
            paths[0],
            limit.as_secs()
        )),
        "{stdout}"
    );
    if unread > 0 {
        assert!(
            stdout.contains(&format!(
                "{}: {unread} written blocks not read back after the run ({unread} as the device stopped answering)",
                paths[0]
            )),
            "{stdout}"
        );
    }
    assert!(
        !stdout
            .lines()
            .any(|l| l.starts_with(&paths[1]) && l.contains("not read back")),
        "the healthy device has nothing unread: {stdout}"
    );
}
