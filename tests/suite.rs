//! `hostmax suite`: a short suite on throttled loop volumes that reaches steady state at round 5, resume after SIGINT
//! without repeating a finished cell, the read-only suite, bad input, and the HTML report
//! rendered by headless Chromium.

mod support;

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hostmax_simhost::{SimHostSpec, SimulatedHost};
use serde_json::Value;
use support::{
    assert_refused, hostmax_bin, kernel_completions, loop_volumes, one_cell_suite, rate_test_lock,
    run_hostmax, ScratchDir as Scratch,
};

const MIB: u64 = 1024 * 1024;

fn read_json(path: &str) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} is not JSON: {e}"))
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The cells of the short suite: 2 block sizes x 2 mixes.
const SHORT_CELLS: [&str; 4] = ["4k_100_0", "8k_100_0", "4k_0_100", "8k_0_100"];

fn short_suite_args(devices: &[String], json: &str, cell_time: &str) -> Vec<String> {
    let mut args: Vec<String> = vec!["suite".into(), "iops".into(), "--devices".into()];
    args.extend(devices.iter().cloned());
    for a in [
        "--block-sizes",
        "4k,8k",
        "--mixes",
        "100/0,0/100",
        "--cell-time",
        cell_time,
        "--max-rounds",
        "6",
        "--allow-write",
        "--json",
        json,
    ] {
        args.push(a.into());
    }
    args
}

#[test]
fn short_suite_on_capped_volumes_reaches_steady_state_at_round_5() {
    require_root!();
    let _lock = rate_test_lock();
    const CAP: u64 = 400;
    let host =
        SimulatedHost::build_loop_devices(&SimHostSpec::new(2, 16 * MIB).with_volume_iops(CAP))
            .expect("capped loop volumes");
    let devices: Vec<String> = host
        .device_paths()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let dir = Scratch::new("steady");
    let json = dir.path("iops.json");
    let html = dir.path("iops.html");
    let mut args = short_suite_args(&devices, &json, "1s");
    // Each volume promises more than its cap allows: the suite says so and exits 1.
    args.extend(["--html", &html, "--expect-volume-iops", "500"].map(String::from));
    let out = run_hostmax(&args, host.throttle());
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let report = read_json(&json);
    let ss = &report["steady_state"];
    assert_eq!(ss["reached"], true, "{ss}");
    assert_eq!(ss["rounds"], 5, "{ss}");
    assert_eq!(ss["rounds_run"], 5);
    assert_eq!(ss["tracked"], "4k_0_100");
    assert_eq!(ss["window"].as_array().unwrap().len(), 5);
    assert_eq!(ss["status"], "steady state reached at round 5");
    let order: Vec<&str> = report["cell_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(order, SHORT_CELLS, "mix outer, block size inner");
    let cap_total = (2 * CAP) as f64;
    for key in SHORT_CELLS {
        let cell = &report["cells"][key];
        let rounds = cell["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 5, "{key}: one figure per round");
        let iops = cell["iops"].as_f64().unwrap();
        let mean: f64 = rounds.iter().map(|v| v.as_f64().unwrap()).sum::<f64>() / 5.0;
        assert!(
            (iops - mean).abs() < 1e-6 * mean,
            "{key}: iops is the window average"
        );
        // Both volumes are capped, so every cell runs at the caps' sum.
        assert!(
            (iops - cap_total).abs() <= 0.15 * cap_total,
            "{key}: {iops:.0} IOPS against caps totalling {cap_total}"
        );
        let devs = cell["devices"].as_array().unwrap();
        assert_eq!(devs.len(), 2);
        assert!(!cell["histograms"]["read"].as_str().unwrap().is_empty());
    }
    assert_eq!(report["cells"]["4k_100_0"]["write_latency_ns"]["p50"], 0);
    assert!(
        report["cells"]["4k_0_100"]["write_latency_ns"]["p50"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(report["preparation"]["purge"]["done"], true);
    assert_eq!(report["preparation"]["precondition"]["done"], true);
    assert_eq!(report["complete"], true);
    assert_eq!(report["read_only"], false);
    let volumes = report["spec"]["volumes"].as_array().unwrap();
    assert_eq!(volumes.len(), 2);
    for v in volumes {
        let check = &v["checks"][0];
        assert_eq!(check["figure"], "iops");
        assert_eq!(check["expected"], 500.0);
        assert_eq!(check["runs"], serde_json::json!(["4k_100_0", "4k_0_100"]));
        let measured = check["measured"].as_f64().unwrap();
        assert!((measured - CAP as f64).abs() <= 0.15 * CAP as f64, "{v}");
        assert_eq!(check["pass"], false, "{v}");
    }
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAIL"));
    let state = dir.0.join("iops.state/rounds");
    assert_eq!(
        fs::read_dir(&state).unwrap().count(),
        20,
        "5 rounds x 4 cells, each once"
    );
    assert!(fs::metadata(&html).unwrap().len() > 0);
    let page = fs::read_to_string(&html).unwrap();
    let run_id = report["run_id"].as_str().unwrap();
    assert!(
        page.contains(&format!("Run {run_id} on ")),
        "the page lacks its provenance"
    );
    let commit = report["hostmax_commit"].as_str().unwrap_or("unknown");
    assert!(
        page.contains(&format!("(commit {commit})")),
        "the page lacks the commit {commit}"
    );
}

#[test]
fn resume_after_sigint_repeats_no_finished_cell() {
    let _lock = rate_test_lock();
    let dir = Scratch::new("resume");
    let devices: Vec<String> = ["a", "b"]
        .iter()
        .map(|n| dir.file(n, 16 * MIB).display().to_string())
        .collect();
    let json = dir.path("run.json");
    let rounds_dir = dir.0.join("run.state/rounds");
    let mut child = Command::new(hostmax_bin())
        .args(short_suite_args(&devices, &json, "500ms"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let six cells finish, then interrupt the seventh while it runs.
    let deadline = Instant::now() + Duration::from_secs(60);
    while fs::read_dir(&rounds_dir).map_or(0, |d| d.count()) < 6 {
        assert!(Instant::now() < deadline, "the suite did not get going");
        assert!(child.try_wait().unwrap().is_none(), "the suite ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(400));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let first = child.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(130), "{}", stderr_of(&first));
    assert!(
        stderr_of(&first).contains("--resume"),
        "{}",
        stderr_of(&first)
    );
    let partial = read_json(&json);
    assert_eq!(partial["interrupted"], true);
    assert_eq!(partial["complete"], false);
    // The stop reason says what happened, not a window verdict it never had.
    let status = partial["steady_state"]["status"].as_str().unwrap();
    assert!(
        status.starts_with("stopped after ")
            && status.ends_with("before the 5-round window (interrupted)"),
        "{status}"
    );
    assert_eq!(partial["steady_state"]["fitted"], false);
    // Provenance, under the names every report uses.
    assert_eq!(partial["schema_version"], 1, "{partial}");
    assert!(partial.get("schema").is_none());
    let run_id = partial["run_id"].as_str().expect("run_id").to_string();
    for field in [
        "started_at",
        "ended_at",
        "hostname",
        "kernel",
        "hostmax_version",
    ] {
        assert!(partial[field].is_string(), "{field}");
    }
    let snapshot = |dir: &Path| -> BTreeMap<String, String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    fs::read_to_string(e.path()).unwrap(),
                )
            })
            .collect()
    };
    let before = snapshot(&rounds_dir);
    assert!(
        (6..=7).contains(&before.len()),
        "the interrupted cell is not recorded: {:?}",
        before.keys()
    );
    let precondition = fs::read_to_string(dir.0.join("run.state/precondition.json")).unwrap();

    let resumed = run_hostmax(
        &[
            "suite",
            "--resume",
            dir.path("run.state").as_str(),
            "--allow-write",
        ],
        None,
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr_of(&resumed));
    let after = snapshot(&rounds_dir);
    let report = read_json(&json);
    let rounds_run = report["steady_state"]["rounds_run"].as_u64().unwrap() as usize;
    assert!((5..=6).contains(&rounds_run), "{}", report["steady_state"]);
    assert_eq!(report["complete"], true);
    // The resumed suite is the same run, and its window starts where the first one's did.
    assert_eq!(report["run_id"], run_id.as_str());
    assert_eq!(report["started_at"], partial["started_at"]);
    assert!(report["ended_at"].as_str() > partial["ended_at"].as_str());
    // Every cell ran exactly once per round: one file each, nothing extra.
    assert_eq!(
        after.len(),
        rounds_run * SHORT_CELLS.len(),
        "{:?}",
        after.keys()
    );
    for round in 1..=rounds_run {
        for key in SHORT_CELLS {
            assert!(after.contains_key(&format!("r{round:03}-{key}.json")));
        }
    }
    for key in SHORT_CELLS {
        let n = report["cells"][key]["rounds"].as_array().unwrap().len();
        assert_eq!(n, rounds_run, "{key}");
    }
    // What finished before the signal was neither rerun nor rewritten; the rest is the resume's.
    let first_pid =
        serde_json::from_str::<Value>(before.values().next().unwrap()).unwrap()["pid"].clone();
    for (name, text) in &after {
        let pid = serde_json::from_str::<Value>(text).unwrap()["pid"].clone();
        match before.get(name) {
            Some(old) => assert_eq!(old, text, "{name} was rewritten"),
            None => assert_ne!(pid, first_pid, "{name} came from the resumed run"),
        }
    }
    assert_eq!(
        fs::read_to_string(dir.0.join("run.state/precondition.json")).unwrap(),
        precondition,
        "preconditioning is not redone"
    );
    // A finished suite resumed again runs nothing and reports the same.
    let again = run_hostmax(
        &[
            "suite",
            "--resume",
            dir.path("run.state").as_str(),
            "--allow-write",
        ],
        None,
    );
    assert_eq!(again.status.code(), Some(0), "{}", stderr_of(&again));
    assert_eq!(snapshot(&rounds_dir), after);
}

#[test]
fn without_allow_write_a_block_device_gets_a_read_only_suite() {
    require_root!();
    let _lock = rate_test_lock();
    let host = loop_volumes(1, 8 * MIB);
    let dev = host.device_paths()[0].display().to_string();
    let kernel = host.volumes()[0]
        .loop_device()
        .unwrap()
        .kernel_name()
        .to_string();
    let dir = Scratch::new("readonly");
    let json = dir.path("ro.json");
    let (_, writes_before) = kernel_completions(&kernel);
    let out = run_hostmax(
        &[
            "suite",
            "iops",
            "--devices",
            &dev,
            "--block-sizes",
            "4k",
            "--cell-time",
            "200ms",
            "--max-rounds",
            "5",
            "--json",
            &json,
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let (_, writes_after) = kernel_completions(&kernel);
    assert_eq!(writes_after, writes_before, "nothing was written");
    let report = read_json(&json);
    assert_eq!(report["read_only"], true);
    assert_eq!(report["steady_state"]["tracked"], "4k_100_0");
    assert_eq!(report["cell_order"], serde_json::json!(["4k_100_0"]));
    assert_eq!(report["preparation"]["purge"]["done"], false);
    assert_eq!(report["preparation"]["precondition"]["done"], false);
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("read-only") && notes.contains("4k_100_0 instead of 4k_0_100"),
        "{notes}"
    );
    assert!(stderr_of(&out).contains("read-only"));
}

#[test]
fn bad_suite_input_is_refused_with_exit_2() {
    let dir = Scratch::new("bad");
    let file = dir.file("f", 8 * MIB).display().to_string();
    let taken = dir.0.join("taken.state");
    fs::create_dir_all(&taken).unwrap();
    fs::write(taken.join("suite.json"), "{}").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["suite", "iops", "--devices", &file, "--skip-bs", "2k"],
            "--skip-bs 2k",
        ),
        (
            vec!["suite", "iops", "--devices", &file, "--size", "1500k"],
            "whole MiB",
        ),
        (
            vec!["suite", "iops", "--devices", &file, "--mixes", "65/30"],
            "add up to 100",
        ),
        (
            vec![
                "suite",
                "throughput",
                "--devices",
                &file,
                "--mixes",
                "65/35",
            ],
            "sequential",
        ),
        (
            vec!["suite", "iops", "--devices", &file, "--block-sizes", "2m"],
            "512b to 1m",
        ),
        (
            vec!["suite", "iops", "--devices", &file, "--max-rounds", "4"],
            "--max-rounds",
        ),
        (
            vec!["suite", "iops", "--devices", &file, "--cell-time", "0"],
            "--cell-time 0",
        ),
        (vec!["suite", "iops"], "--devices"),
        (
            vec!["suite", "--resume", "/nonexistent-suite-state"],
            "--resume",
        ),
        (
            vec!["suite", "--resume", "/tmp", "--devices", &file],
            "cannot be used with",
        ),
        (
            vec![
                "suite",
                "iops",
                "--devices",
                &file,
                "--state-dir",
                taken.to_str().unwrap(),
            ],
            "already holds a suite",
        ),
        (
            vec!["suite", "iops", "--devices", "/nonexistent-device"],
            "/nonexistent-device",
        ),
    ];
    for (args, expected) in cases {
        let out = run_hostmax(&args, None);
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: one line: {err}"
        );
    }
}

#[test]
fn read_only_suite_refuses_explicit_write_mixes_on_block_devices() {
    require_root!();
    let host = loop_volumes(1, 8 * MIB);
    let dev = host.device_paths()[0].display().to_string();
    let out = run_hostmax(
        &["suite", "iops", "--devices", &dev, "--mixes", "0/100"],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("--allow-write"),
        "{}",
        stderr_of(&out)
    );
}

/// Loads `page` in headless Chromium and returns the rendered size of every inline `<svg>`,
/// measured by a probe script added to a copy of the page (the report itself has no script).
fn rendered_svg_sizes(chrome: &Path, page: &str, scratch: &Scratch) -> Vec<(f64, f64)> {
    let probe = page.replace(
        "</body>",
        "<script>document.body.setAttribute('data-svg-sizes', Array.from(document.querySelectorAll('svg'))\
         .map(s => { const r = s.getBoundingClientRect(); return r.width + 'x' + r.height; }).join(','));</script></body>",
    );
    let probe_path = scratch.0.join("probe.html");
    fs::write(&probe_path, probe).unwrap();
    let profile = scratch.0.join("chromium-profile");
    let dom_path = scratch.0.join("dom.html");
    let mut child = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--window-size=1200,900",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", probe_path.display()))
        // To a file: the DOM is larger than a pipe holds, and nothing reads it until the end.
        .stdout(fs::File::create(&dom_path).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let dom = fs::read_to_string(&dom_path).unwrap();
    let attr = dom
        .split("data-svg-sizes=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| {
            panic!(
                "the probe did not run; chromium printed: {}",
                &dom[..dom.len().min(500)]
            )
        });
    attr.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let (w, h) = s.split_once('x').unwrap();
            (w.parse().unwrap(), h.parse().unwrap())
        })
        .collect()
}

#[test]
fn html_report_renders_every_chart_in_chromium() {
    let _lock = rate_test_lock();
    let dir = Scratch::new("html");
    let devices: Vec<String> = ["a", "b"]
        .iter()
        .map(|n| dir.file(n, 8 * MIB).display().to_string())
        .collect();
    let html = dir.path("report.html");
    let mut args: Vec<String> = vec!["suite".into(), "iops".into(), "--devices".into()];
    args.extend(devices);
    for a in [
        "--block-sizes",
        "64k,4k",
        "--mixes",
        "100/0,0/100",
        "--cell-time",
        "200ms",
        "--max-rounds",
        "5",
        "--html",
        &html,
        "--expect-volume-iops",
        "1k",
    ] {
        args.push(a.into());
    }
    let out = run_hostmax(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let page = fs::read_to_string(&html).unwrap();
    // Self-contained: no script, stylesheet, image or frame to fetch.
    for tag in ["<script", "<link", "<img", "<iframe", "src=", "url("] {
        assert!(!page.contains(tag), "the page holds {tag}");
    }
    let figures = page.matches("<figure class=\"chart\"").count();
    assert_eq!(
        figures, 6,
        "IOPS and throughput by block size, steady state, convergence at 64k and at 4k, IOPS per volume against the promise"
    );
    assert!(
        page.contains("Convergence at 64k") && page.contains("Convergence at 4k"),
        "one convergence plot per block size"
    );
    assert!(page.contains("PASS") && !page.contains("FAIL"));
    assert_eq!(page.matches("<svg").count(), figures);
    for text in ["4k_0_100", "64k", "100/0", "steady state"] {
        assert!(page.contains(text), "the page lacks {text}");
    }
    let chrome = match support::require_tool("chromium", "chromium") {
        Ok(path) => path,
        Err(reason) => {
            support::say_skipped(&format!("the Chromium check: {reason}"));
            return;
        }
    };
    let sizes = rendered_svg_sizes(&chrome, &page, &dir);
    assert_eq!(
        sizes.len(),
        figures,
        "every chart is in the rendered page: {sizes:?}"
    );
    for (w, h) in sizes {
        assert!(w > 100.0 && h > 100.0, "a chart rendered at {w}x{h}");
    }
}

/// A one-cell suite of 5 rounds of 200 ms on `devices` (files: no purge or preconditioning),
/// its JSON to `json`; expects exit 0.
fn run_tiny_suite(devices: &[String], json: &str) {
    let devices: Vec<&str> = devices.iter().map(String::as_str).collect();
    let mut args = one_cell_suite(&devices, "200ms");
    args.extend(["--json", json].map(String::from));
    let out = run_hostmax(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

/// Two same-size targets that swap names between a suite's start and its `--resume` (what two
/// volumes do when they come back from a reboot as each other's /dev/sdX): the resume is
/// refused, naming both and what each was, and nothing runs. Also a target that is gone.
#[test]
fn resume_refuses_when_a_path_now_leads_to_another_device() {
    let dir = Scratch::new("swapped");
    let (a, b) = (dir.file("a.img", 8 * MIB), dir.file("b.img", 8 * MIB));
    let json = dir.path("s.json");
    let devices = [a.display().to_string(), b.display().to_string()];
    run_tiny_suite(&devices, &json);
    let report = read_json(&json);
    assert!(
        report["devices"][0]["identity"]["inode"].is_string(),
        "{}",
        report["devices"]
    );
    let state = dir.path("s.state");
    let resume = || run_hostmax(&["suite", "--resume", state.as_str()], None);
    assert_eq!(resume().status.code(), Some(0), "the same devices resume");

    let tmp = dir.0.join("tmp.img");
    fs::rename(&a, &tmp).unwrap();
    fs::rename(&b, &a).unwrap();
    fs::rename(&tmp, &b).unwrap();
    let before = fs::read_dir(dir.0.join("s.state/rounds")).unwrap().count();
    let out = resume();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    for d in &devices {
        assert!(err.contains(&format!("{d} was file ")), "{err}");
    }
    assert!(err.contains("started on other devices"), "{err}");
    assert_eq!(
        fs::read_dir(dir.0.join("s.state/rounds")).unwrap().count(),
        before
    );

    fs::remove_file(&a).unwrap();
    let out = resume();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{} of the suite in", devices[0])) && err.contains("is gone"),
        "{err}"
    );
    assert!(!a.exists(), "a resume made a missing file anew");
}

// LOOP_CHANGE_FD (linux/loop.h): a read-only loop device takes another backing file of the
// same size, in place; the device keeps its name and number.
nix::ioctl_write_int_bad!(loop_change_fd, 0x4C06);

/// The same on real loop devices: two read-only loop volumes whose backing files are swapped
/// in place (`LOOP_CHANGE_FD`) after the suite ran; `--resume` names both by backing file.
#[test]
fn resume_refuses_loop_devices_whose_backing_files_were_swapped() {
    require_root!();
    use hostmax_simhost::{LoopDevice, LoopOptions};
    use std::os::unix::io::AsRawFd;
    let dir = Scratch::new("loopswap");
    let (a, b) = (dir.file("a.img", 8 * MIB), dir.file("b.img", 8 * MIB));
    let options = LoopOptions::default().with_read_only(true);
    let open = |p: &Path| OpenOptions::new().read(true).open(p).unwrap();
    let (la, lb) = (
        LoopDevice::attach(&open(&a), &options).expect("a loop device"),
        LoopDevice::attach(&open(&b), &options).expect("a loop device"),
    );
    let devices = [
        la.path().display().to_string(),
        lb.path().display().to_string(),
    ];
    let json = dir.path("s.json");
    let mut args: Vec<String> = vec!["suite".into(), "iops".into(), "--devices".into()];
    args.extend(devices.iter().cloned());
    args.extend(
        [
            "--block-sizes",
            "4k",
            "--cell-time",
            "200ms",
            "--ramp",
            "0s",
            "--max-rounds",
            "5",
            "--json",
            &json,
        ]
        .map(String::from),
    );
    let out = run_hostmax(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let report = read_json(&json);
    let recorded = report["devices"][0]["identity"]["backing_file"]
        .as_str()
        .unwrap_or_default();
    assert!(recorded.ends_with("a.img"), "{}", report["devices"]);

    for (dev, file) in [(&la, &b), (&lb, &a)] {
        let backing = open(file);
        // SAFETY: LOOP_CHANGE_FD takes a file descriptor by value; both descriptors are open
        // for the duration of the call, and the kernel takes its own reference to the file.
        unsafe { loop_change_fd(dev.file().as_raw_fd(), backing.as_raw_fd()) }
            .unwrap_or_else(|e| panic!("LOOP_CHANGE_FD on {}: {e}", dev.path().display()));
    }
    let state = dir.path("s.state");
    let out = run_hostmax(&["suite", "--resume", state.as_str()], None);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        // Each file named, with the device and inode the loop driver reports beside it.
        err.contains(&format!(
            "{} was backing file {} (",
            devices[0],
            a.display()
        )) && err.contains(&format!("), now backing file {} (", b.display())),
        "{err}"
    );
    assert!(
        err.contains(&format!("{} was backing file", devices[1])),
        "{err}"
    );
}

/// Named through links (as `/dev/disk/by-id/...` names a disk whatever its kernel name), the
/// devices are found again after their kernel names swapped: `--resume` follows the names the
/// user gave, checks each one is the device it was, and goes on.
#[test]
fn resume_follows_the_names_the_user_gave_when_kernel_names_swap() {
    let dir = Scratch::new("byid");
    let (a, b) = (dir.file("sdc", 8 * MIB), dir.file("sdd", 8 * MIB));
    let (la, lb) = (dir.0.join("by-id-disk-A"), dir.0.join("by-id-disk-B"));
    std::os::unix::fs::symlink(&a, &la).unwrap();
    std::os::unix::fs::symlink(&b, &lb).unwrap();
    let json = dir.path("s.json");
    run_tiny_suite(&[la.display().to_string(), lb.display().to_string()], &json);
    let config: Value =
        serde_json::from_str(&fs::read_to_string(dir.0.join("s.state/suite.json")).unwrap())
            .unwrap();
    assert_eq!(
        config["devices"][0]["given"],
        la.display().to_string().as_str()
    );
    // "Reboot": the kernel names swap, the by-id names follow their disks.
    let tmp = dir.0.join("tmp");
    fs::rename(&a, &tmp).unwrap();
    fs::rename(&b, &a).unwrap();
    fs::rename(&tmp, &b).unwrap();
    for (link, to) in [(&la, &b), (&lb, &a)] {
        fs::remove_file(link).unwrap();
        std::os::unix::fs::symlink(to, link).unwrap();
    }
    let out = run_hostmax(&["suite", "--resume", dir.path("s.state").as_str()], None);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("{} now leads to {}", la.display(), b.display())),
        "{err}"
    );
    let report = read_json(&json);
    assert_eq!(
        report["devices"][0]["path"],
        b.display().to_string().as_str()
    );
}

#[test]
fn a_finished_suite_runs_again_only_with_fresh_and_json_to_stdout_keeps_state_out_of_the_cwd() {
    let dir = Scratch::new("fresh");
    let file = dir.file("vol", 8 * MIB).display().to_string();
    let run_in_dir = |extra: &[&str]| {
        let mut args: Vec<&str> = vec!["suite", "iops", "--devices", &file];
        args.extend([
            "--block-sizes",
            "4k",
            "--mixes",
            "100/0",
            "--cell-time",
            "50ms",
            "--max-rounds",
            "5",
            "--allow-write",
        ]);
        args.extend(extra);
        Command::new(hostmax_bin())
            .args(&args)
            .current_dir(&dir.0)
            .output()
            .unwrap()
    };
    // --json -: the state goes to a temporary directory, and the run says where.
    let out = run_in_dir(&["--json", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    let temp = std::env::temp_dir().display().to_string();
    let said = err
        .lines()
        .find_map(|l| l.split("checkpoint in ").nth(1))
        .unwrap_or_else(|| panic!("no checkpoint line: {err}"));
    assert!(said.starts_with(&temp), "{said}");
    let _ = fs::remove_dir_all(said);
    assert!(
        fs::read_dir(&dir.0).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".state")),
        "a state directory in the working directory"
    );
    // A finished suite in the same state directory: refused with the ways on, then --fresh.
    assert_eq!(run_in_dir(&["--json", "r.json"]).status.code(), Some(0));
    let again = run_in_dir(&["--json", "r.json"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr_of(&again).contains("--fresh"),
        "{}",
        stderr_of(&again)
    );
    let fresh = run_in_dir(&["--json", "r.json", "--fresh"]);
    assert_eq!(fresh.status.code(), Some(0), "{}", stderr_of(&fresh));
    assert!(
        stderr_of(&fresh)
            .contains("r.state holds an earlier suite (kept); running afresh in r.state.2"),
        "{}",
        stderr_of(&fresh)
    );
    assert!(
        dir.0.join("r.state/suite.json").exists() && dir.0.join("r.state.2/suite.json").exists()
    );
}

/// The ATA secure erase password is a secret: taken from a file or the environment, never
/// from the command line (`--secure-erase-password` is refused, its value not echoed), and
/// not in the report, the HTML page, the checkpoint or its rounds; a `--resume` before the
/// purge is done asks for it again (exit 2) and takes it. (A file has no ATA security: the
/// purge falls back to discard.)
#[test]
fn the_secure_erase_password_is_kept_out_of_reports_and_the_checkpoint() {
    let _lock = rate_test_lock();
    const SECRET: &str = "hunter2-secret";
    let dir = Scratch::new("secret");
    let file = dir.file("vol", 8 * MIB).display().to_string();
    let json = dir.path("s.json");
    let html = dir.path("s.html");
    let state = dir.path("s.state");
    let password_file = dir.path("password");
    fs::write(&password_file, format!("{SECRET}\n")).unwrap();
    let suite = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "suite",
            "iops",
            "--devices",
            &file,
            "--block-sizes",
            "4k",
            "--mixes",
            "100/0",
            "--cell-time",
            "200ms",
            "--max-rounds",
            "5",
            "--no-precondition",
            "--json",
            &json,
            "--html",
            &html,
            "--state-dir",
            &state,
        ]
        .map(String::from)
        .to_vec();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    // On the command line: refused before anything, naming the ways that are not seen.
    let args = suite(&["--secure-erase-password", SECRET]);
    let refused = run_hostmax(&args, None);
    let line = assert_refused(
        &args,
        &refused,
        &[
            "--secure-erase-password: a password on the command line is readable by every user",
            "--secure-erase-password-file PATH",
            "HOSTMAX_SECURE_ERASE_PASSWORD",
        ],
    );
    assert!(!line.contains(SECRET), "{line}");
    assert!(!Path::new(&state).exists());
    // --secure-erase with no password anywhere.
    let args = suite(&["--secure-erase"]);
    let out = Command::new(hostmax_bin())
        .args(&args)
        .env_remove("HOSTMAX_SECURE_ERASE_PASSWORD")
        .output()
        .unwrap();
    assert_refused(&args, &out, &["--secure-erase: no password given"]);
    // From the environment.
    let out = Command::new(hostmax_bin())
        .args(suite(&["--secure-erase"]))
        .env("HOSTMAX_SECURE_ERASE_PASSWORD", SECRET)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let report = read_json(&json);
    assert!(
        report["preparation"]["purge"]["record"]["method"][0]
            .as_str()
            .unwrap()
            .contains("after ATA secure erase"),
        "{}",
        report["preparation"]
    );
    let mut written = vec![
        Path::new(&json).to_path_buf(),
        Path::new(&html).to_path_buf(),
    ];
    let mut pending = vec![Path::new(&state).to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                written.push(path);
            }
        }
    }
    for path in &written {
        let text = fs::read_to_string(path).unwrap();
        assert!(
            !text.contains(SECRET),
            "{} holds the password",
            path.display()
        );
    }
    // Resumed before its purge is done: the password is asked for, then taken from a file.
    fs::remove_file(Path::new(&state).join("purge.json")).unwrap();
    let args = ["suite", "--resume", state.as_str()];
    let refused = Command::new(hostmax_bin())
        .args(args)
        .env_remove("HOSTMAX_SECURE_ERASE_PASSWORD")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr_of(&refused));
    assert!(
        stderr_of(&refused).contains("--secure-erase-password-file PATH"),
        "{}",
        stderr_of(&refused)
    );
    // New outputs given with it: suite.json is written again (their paths), still without it.
    let json2 = dir.path("s2.json");
    let html2 = dir.path("s2.html");
    let resumed = run_hostmax(
        &[
            "suite",
            "--resume",
            &state,
            "--secure-erase-password-file",
            &password_file,
            "--json",
            &json2,
            "--html",
            &html2,
        ],
        None,
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr_of(&resumed));
    assert!(
        Path::new(&state).join("purge.json").exists(),
        "purged again"
    );
    let suite_json = fs::read_to_string(Path::new(&state).join("suite.json")).unwrap();
    assert!(!suite_json.contains(SECRET));
    assert!(suite_json.contains(&json2), "{suite_json}");
    for path in [&json2, &html2] {
        let text = fs::read_to_string(path).unwrap();
        assert!(!text.contains(SECRET), "{path} holds the password");
    }
}

/// SIGINT during the first cell: the report says which cells of the round were not measured.
#[test]
fn an_interrupted_suite_names_the_cells_not_measured() {
    let _lock = rate_test_lock();
    let dir = Scratch::new("suite-interrupted");
    let file = dir.file("vol", 8 * MIB).display().to_string();
    let json = dir.path("s.json");
    let args: Vec<String> = [
        "suite",
        "iops",
        "--devices",
        &file,
        "--block-sizes",
        "4k,8k",
        "--mixes",
        "100/0",
        "--cell-time",
        "20s",
        "--no-precondition",
        "--no-purge",
        "--json",
        &json,
    ]
    .map(String::from)
    .to_vec();
    let out = support::interrupt_after(&args, "checkpoint in", Duration::from_millis(1500));
    assert_eq!(out.status.code(), Some(130), "{}", stderr_of(&out));
    let report = read_json(&json);
    assert_eq!(report["interrupted"], true);
    assert_eq!(
        report["cells_not_measured"],
        serde_json::json!(["4k_100_0", "8k_100_0"]),
        "{report}"
    );
}
