//! `hostmax doctor` against real sysfs: settings of our own loop devices changed (and put
//! back) under it, and the one line a main run prints when the doctor would warn.

mod support;

use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

/// A queue setting of one of our loop devices, put back as it was on drop (loop devices are
/// reused after they are detached, and keep their queue settings).
struct QueueSetting {
    path: String,
    was: String,
}

impl QueueSetting {
    fn set(disk: &str, file: &str, value: &str) -> QueueSetting {
        let path = format!("/sys/block/{disk}/queue/{file}");
        let text = std::fs::read_to_string(&path).unwrap();
        // A selector (`[none] mq-deadline`) is put back by its bracketed choice.
        let was = match (text.find('['), text.find(']')) {
            (Some(a), Some(b)) => text[a + 1..b].to_string(),
            _ => text.trim().to_string(),
        };
        std::fs::write(&path, value).unwrap_or_else(|e| panic!("{path} <- {value}: {e}"));
        QueueSetting { path, was }
    }
}

impl Drop for QueueSetting {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.path, &self.was);
    }
}

fn finding<'a>(json: &'a Value, scope: &str, setting: &str) -> &'a Value {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["scope"] == scope && f["setting"] == setting)
        .unwrap_or_else(|| panic!("no {scope} {setting} in {json:#}"))
}

#[test]
fn doctor_reads_the_settings_of_real_loop_queues() {
    require_root!();
    let host = loop_volumes(2, 16 * MIB);
    let names = volume_kernel_names(&host);
    let paths = volume_paths(&host);
    let scheduler_offered =
        std::fs::read_to_string(format!("/sys/block/{}/queue/scheduler", names[0]))
            .unwrap()
            .contains("mq-deadline");
    let _settings = [
        QueueSetting::set(&names[0], "rq_affinity", "0"),
        QueueSetting::set(&names[0], "nomerges", "0"),
        QueueSetting::set(&names[1], "rq_affinity", "2"),
        QueueSetting::set(&names[1], "nomerges", "2"),
        QueueSetting::set(
            &names[0],
            "scheduler",
            if scheduler_offered {
                "mq-deadline"
            } else {
                "none"
            },
        ),
        QueueSetting::set(&names[1], "scheduler", "none"),
    ];
    let mut args = vec!["doctor".to_string(), "--devices".into()];
    args.extend(paths.iter().cloned());
    let json = run_json_stdout(&args, None);
    assert_eq!(json["devices"], serde_json::json!(names), "{json:#}");

    let f = finding(&json, &names[0], "rq_affinity");
    assert_eq!(
        (f["found"].as_str(), f["severity"].as_str()),
        (Some("0"), Some("warning"))
    );
    assert_eq!(
        f["fix"].as_str(),
        Some(format!("echo 2 > /sys/block/{}/queue/rq_affinity", names[0]).as_str())
    );
    assert_eq!(finding(&json, &names[1], "rq_affinity")["severity"], "ok");
    assert_eq!(finding(&json, &names[0], "nomerges")["severity"], "info");
    assert_eq!(finding(&json, &names[1], "nomerges")["severity"], "ok");
    assert_eq!(finding(&json, &names[1], "scheduler")["found"], "none");
    if scheduler_offered {
        let f = finding(&json, &names[0], "scheduler");
        assert_eq!(
            (f["found"].as_str(), f["severity"].as_str()),
            (Some("mq-deadline"), Some("warning"))
        );
    } else {
        say_skipped("mq-deadline not offered by this kernel: the scheduler warning is not checked");
    }
    // Most harmful first, and the host is checked too (the kernel's io_uring is probed).
    let order = |s: &str| {
        ["harmful", "warning", "info", "ok"]
            .iter()
            .position(|x| *x == s)
            .unwrap()
    };
    let sev: Vec<usize> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| order(f["severity"].as_str().unwrap()))
        .collect();
    assert!(sev.windows(2).all(|w| w[0] <= w[1]), "{json:#}");
    assert_eq!(
        finding(&json, "host", "io_uring features")["severity"],
        "ok"
    );

    // The table names the problem, why, and the command.
    let out = run_hostmax(&args, None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("WARNING") && text.contains("rq_affinity: 0"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "fix: echo 2 > /sys/block/{}/queue/rq_affinity",
            names[0]
        )),
        "{text}"
    );

    // A main run on the warned device says so in one line, after its report.
    let out = run_hostmax(
        &[
            "--devices",
            &paths[0],
            "--runtime",
            "1s",
            "--ramp",
            "0s",
            "--json",
            "-",
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("doctor")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("rq_affinity")
            && lines[0].contains(&format!("hostmax doctor --devices /dev/{}", names[0])),
        "{stderr}"
    );
    serde_json::from_slice::<Value>(&out.stdout).expect("stdout is only the report");
}

/// Writes `text` at `rel` in the stand-in tree `dir`, making its directories.
fn put_in(dir: &ScratchDir, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn doctor_reads_a_stand_in_tree_and_refuses_bad_input() {
    let dir = ScratchDir::new("doctor-tree");
    let put = |rel: &str, text: &str| put_in(&dir, rel, text);
    put("sys/block/sdz/size", "1000\n");
    put("sys/block/sdz/mq/0/cpu_list", "0\n");
    put("sys/block/sdz/queue/nr_requests", "4\n");
    put("sys/block/sdz/queue/scheduler", "[bfq] none\n");
    put("sys/block/sdz/queue/rotational", "1\n");
    put("sys/block/loop9/size", "0\n");
    put("proc/sys/kernel/io_uring_disabled", "2\n");
    let json = run_json_stdout(
        &["doctor", "--sysroot", &dir.path(""), "--iodepth", "64"],
        None,
    );
    // The unattached loop device (size 0) is left out.
    assert_eq!(json["devices"], serde_json::json!(["sdz"]), "{json:#}");
    assert_eq!(json["harmful"], 2, "{json:#}");
    let first = &json["findings"][0];
    assert_eq!(first["severity"], "harmful");
    let f = finding(&json, "sdz", "nr_requests");
    assert!(f["why"].as_str().unwrap().contains("64 I/Os"), "{f}");
    // Jobs each keep the depth: 2 x 2 = 4 in flight fits 4 requests, 2 x 3 does not.
    let jobs = |depth: &str| {
        let args = [
            "doctor",
            "--sysroot",
            &dir.path(""),
            "--iodepth",
            depth,
            "--numjobs",
            "2",
        ];
        let json = run_json_stdout(&args, None);
        finding(&json, "sdz", "nr_requests")["severity"].clone()
    };
    assert_eq!(jobs("2"), "ok");
    assert_eq!(jobs("3"), "harmful");
    // A rotational disk's scheduler is only worth knowing.
    assert_eq!(finding(&json, "sdz", "scheduler")["severity"], "info");

    for (args, needle) in [
        (
            vec!["doctor", "--sysroot", "/nonexistent-root"],
            "--sysroot",
        ),
        (
            vec!["doctor", "--devices", "/dev/nonexistent-disk"],
            "/dev/nonexistent-disk",
        ),
        (vec!["doctor", "--iodepth", "0"], "--iodepth"),
        // The engine's range, as a run's --iodepth.
        (
            vec!["doctor", "--iodepth", "5000"],
            "queue depth 5000 is out of range: use 1 to 4096 (--iodepth)",
        ),
        (
            vec!["doctor", "--iodepth", "4096", "--numjobs", "2"],
            "8192 I/Os in flight per target",
        ),
    ] {
        let out = run_hostmax(&args, None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
    }
}

#[test]
fn doctor_measures_the_load_generators_ceiling_on_the_cpus_asked() {
    if let Err(e) = hostmax_engine::check_io_uring() {
        eprintln!("skipped: io_uring is not available here ({e})");
        return;
    }
    let first = hostmax_engine::placement::allowed_cpus().unwrap()[0];
    let cpu = first.to_string();
    let json = run_json_stdout(
        &["doctor", "--cpus", &cpu, "--ceiling-runtime", "300ms"],
        None,
    );
    let ceiling = &json["load_generator_ceiling"];
    let cpus = ceiling["cpus"]
        .as_array()
        .unwrap_or_else(|| panic!("{json:#}"));
    assert_eq!(cpus.len(), 1, "{ceiling:#}");
    assert_eq!(cpus[0]["cpu"], first, "{ceiling:#}");
    let ios = cpus[0]["ios"].as_u64().unwrap();
    // A NOP costs well under a microsecond; a worker issues many thousands in 0.3 s.
    assert!(ios > 1000, "{ceiling:#}");
    let secs = ceiling["measured_secs"].as_f64().unwrap();
    assert!((0.25..0.35).contains(&secs), "{ceiling:#}");
    assert_eq!(ceiling["iodepth"], 32);
    let line = finding(&json, "host", "load generator ceiling");
    assert_eq!(line["severity"], "info");
    let rate = ios as f64 / secs;
    // The same ceiling as CPU time per I/O, the unit of a run's load_generator.cpu_ns_per_io.
    let ns = ceiling["cpu_ns_per_io"].as_f64().unwrap();
    assert!((ns * rate - 1e9).abs() < 1e9 * 1e-6, "{ceiling:#}");
    assert!(
        line["found"].as_str().unwrap().contains(&format!(
            "{} I/Os/s per CPU (lowest of 1; {} ns of CPU per I/O)",
            rate.round(),
            ns.round()
        )),
        "{line}"
    );

    // 0s skips it; a CPU this process may not use is refused on one line.
    let json = run_json_stdout(&["doctor", "--ceiling-runtime", "0s"], None);
    assert!(json.get("load_generator_ceiling").is_none(), "{json:#}");
    let out = run_hostmax(&["doctor", "--cpus", "4095"], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--cpus"), "{stderr}");
}

/// A stand-in tree whose disk's `queue/scheduler` is a FIFO nobody writes: opening it to read
/// waits for a writer, as a hung driver's attribute holds its reader. Opening it once with a
/// writer (without waiting) on drop lets a reader still waiting go.
struct HungAttribute(std::path::PathBuf);

impl HungAttribute {
    fn make(dir: &ScratchDir) -> HungAttribute {
        let put = |rel: &str, text: &str| put_in(dir, rel, text);
        put("sys/block/sdz/size", "1000\n");
        put("sys/block/sdz/mq/0/cpu_list", "0\n");
        put("sys/block/sdz/queue/rotational", "0\n");
        put("proc/sys/kernel/io_uring_disabled", "0\n");
        let fifo = dir.join("sys/block/sdz/queue/scheduler");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        HungAttribute(fifo)
    }
}

impl Drop for HungAttribute {
    fn drop(&mut self) {
        use std::os::unix::fs::OpenOptionsExt;
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&self.0);
    }
}

/// Whether process `pid` catches SIGINT (its handler is installed).
fn catches_sigint(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGINT - 1)) != 0)
}

/// Waits at most `limit` for `child` to end; kills it and fails the test otherwise.
fn ended_within(child: &mut std::process::Child, limit: std::time::Duration, what: &str) -> i32 {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hostmax doctor did not end within {limit:?} {what}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A sysfs attribute that never answers (issue 41: it held a run past every deadline, and
/// the first SIGINT was not heard): the doctor gives it up within its patience and reports
/// the rest, and a SIGINT while it waits ends it at once with 130.
#[test]
fn a_sysfs_attribute_that_never_answers_holds_nothing_past_its_deadline() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = ScratchDir::new("doctor-hung");
    let _hung = HungAttribute::make(&dir);
    let args = ["doctor", "--sysroot", &dir.path(""), "--json", "-"];
    let spawn = || {
        Command::new(hostmax_bin())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // SIGINT while it waits: heard at once.
    let mut child = spawn();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !catches_sigint(child.id()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    // A tree this small is read in milliseconds, up to the attribute that never answers.
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill only takes a pid and a signal number; the child is ours and not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let code = ended_within(&mut child, Duration::from_secs(5), "of its first SIGINT");
    assert_eq!(code, 130);
    // Left alone: it gives the attribute up within the read patience and reports the rest.
    let started = Instant::now();
    let child = spawn();
    let limit = hostmax_device::READ_PATIENCE + Duration::from_secs(10);
    let mut child = child;
    let code = ended_within(&mut child, limit, "of its start");
    assert_eq!(code, 0);
    assert!(started.elapsed() >= hostmax_device::READ_PATIENCE);
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    let json: Value = serde_json::from_str(&stdout).expect("the report");
    assert_eq!(json["devices"], serde_json::json!(["sdz"]), "{json:#}");
    assert!(
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["setting"] != "scheduler"),
        "{json:#}"
    );
}
