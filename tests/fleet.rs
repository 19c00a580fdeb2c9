//! Runs on many hosts, end to end through the binary: `hostmax merge` of two real runs (exact
//! sums, percentiles of the added histograms), its refusals, the `--hdr-log` interval log read
//! back with the hdrhistogram crate's own reader, and `--start-at`.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use hostmax_aggregate::{decode_latency_histogram, LatencySummary};
use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

/// `name` inside `dir`, as an argument.
fn path_in(dir: &ScratchDir, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// Runs hostmax with `args` and expects exit 2 with one line on stderr; returns that line.
fn hostmax_refused(args: &[String]) -> String {
    let out = run_hostmax(args, None);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "hostmax {args:?}: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "not one line: {stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// A short randread run of `devices` for `runtime` writing its JSON report to `json`, plus
/// `extra` options.
fn short_run(devices: &[String], json: &str, runtime: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["--devices".to_string()];
    args.extend(devices.iter().cloned());
    for a in [
        "--runtime",
        runtime,
        "--ramp",
        "0s",
        "--iodepth",
        "8",
        "--json",
        json,
    ] {
        args.push(a.to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Runs hostmax once per argument list, all at the same time, and expects exit 0 from each.
fn together(runs: &[Vec<String>]) {
    let children: Vec<_> = runs
        .iter()
        .map(|args| {
            Command::new(hostmax_bin())
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn hostmax")
        })
        .collect();
    for (child, args) in children.into_iter().zip(runs) {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "hostmax {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn read_json(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn histogram(scope: &Value, op: &str) -> Histogram<u64> {
    let text = scope["histograms"][op]
        .as_str()
        .unwrap_or_else(|| panic!("no histograms.{op} in {scope}"));
    decode_latency_histogram(text).unwrap()
}

/// Every recorded bin as (highest equivalent value, count): equal bins whatever the length of
/// the counts arrays (which depends on how a growing histogram was resized).
fn bins(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

fn ios(scope: &Value, op: &str) -> u64 {
    scope[op]["ios"].as_u64().unwrap()
}

#[test]
fn merged_report_adds_counts_exactly_and_takes_percentiles_from_added_histograms() {
    require_root!();
    let scratch = ScratchDir::new("fleet-merge");
    let host = volumes(3, 32 * MIB);
    let paths = volume_paths(&host);
    let (a, b, fleet) = (
        path_in(&scratch, "a.json"),
        path_in(&scratch, "b.json"),
        path_in(&scratch, "fleet.json"),
    );
    let lean = path_in(&scratch, "lean.json");
    {
        let _lock = rate_test_lock();
        // Two "hosts" measured together, as --start-at makes them on real hosts.
        together(&[
            short_run(&paths[..2], &a, "2s", &["--start-at", "+2s"]),
            short_run(&paths[2..], &b, "2s", &["--start-at", "+2s"]),
        ]);
        run_hostmax_ok(&short_run(
            &paths[2..],
            &lean,
            "1s",
            &["--no-series-histograms"],
        ));
    }
    let lean = read_json(&lean);
    assert!(lean["time_series"][0].get("histograms").is_none(), "{lean}");
    assert!(lean["time_series"][0]["read_p99_ns"].as_u64().unwrap() > 0);
    assert!(lean["host"]["histograms"]["read"].is_string());
    let out = run_hostmax_ok(&[
        "merge".to_string(),
        a.clone(),
        b.clone(),
        "--json".to_string(),
        fleet.clone(),
    ]);
    let (ra, rb, rf) = (read_json(&a), read_json(&b), read_json(&fleet));
    let hostname = nix::unistd::gethostname()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(ra["hostname"], hostname.as_str());
    assert!(rf.get("hostname").is_none());
    assert_eq!(rf["schema_version"], 2);

    // Counts are exact sums; rates add (the hosts ran concurrently).
    for op in ["read", "write"] {
        assert_eq!(
            ios(&rf["host"], op),
            ios(&ra["host"], op) + ios(&rb["host"], op)
        );
    }
    assert!(ios(&rf["host"], "read") > 1000, "{}", rf["host"]);
    let iops = |r: &Value| r["host"]["iops"].as_f64().unwrap();
    assert!((iops(&rf) - (iops(&ra) + iops(&rb))).abs() < 1e-6 * iops(&rf));

    // Percentiles: a's and b's host histograms decoded and added by hand.
    let mut by_hand = histogram(&ra["host"], "read");
    by_hand.add(histogram(&rb["host"], "read")).unwrap();
    assert_eq!(by_hand.len(), ios(&rf["host"], "read"));
    let want = LatencySummary::from_histogram(&by_hand);
    let got: LatencySummary =
        serde_json::from_value(rf["host"]["read"]["latency_ns"].clone()).unwrap();
    // Percentiles are bin values: exact. The mean is a float sum, equal up to rounding.
    assert!(
        (got.mean - want.mean).abs() <= 1e-9 * want.mean.abs(),
        "mean {} vs {}",
        got.mean,
        want.mean
    );
    let mut got = got;
    got.mean = want.mean;
    assert_eq!(got, want);
    assert_eq!(bins(&histogram(&rf["host"], "read")), bins(&by_hand));

    // Each second likewise: its percentiles come from the hosts' histograms of that second.
    let series = |r: &Value| r["time_series"].as_array().unwrap().clone();
    assert_eq!(series(&rf).len(), 2);
    for (second, merged) in series(&rf).iter().enumerate() {
        let mut by_hand = histogram(&series(&ra)[second], "read");
        by_hand
            .add(histogram(&series(&rb)[second], "read"))
            .unwrap();
        assert_eq!(merged["read_iops"].as_f64(), Some(by_hand.len() as f64));
        let want = LatencySummary::from_histogram(&by_hand);
        assert_eq!(merged["read_p99_ns"].as_u64(), Some(want.p99), "{second}");
        assert_eq!(merged["read_p50_ns"].as_u64(), Some(want.p50), "{second}");
    }

    // Devices keep their figures and name their host.
    let devices = rf["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 3);
    for (d, source) in devices.iter().zip(
        ra["devices"]
            .as_array()
            .unwrap()
            .iter()
            .chain(rb["devices"].as_array().unwrap()),
    ) {
        assert_eq!(d["host"], hostname.as_str());
        assert_eq!(d["path"], source["path"]);
        assert_eq!(d["read"], source["read"]);
    }
    // Each second's device entries keep their names and gain their host, as `devices` does.
    for point in series(&rf) {
        let entries = point["devices"].as_array().unwrap();
        assert_eq!(entries.len(), devices.len(), "{point}");
        for (entry, d) in entries.iter().zip(devices) {
            assert_eq!((&entry["path"], &entry["host"]), (&d["path"], &d["host"]));
            assert!(entry["iops"].is_f64(), "{entry}");
        }
    }
    let hosts = rf["fleet"]["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    assert_eq!(hosts[1]["devices"], 1);
    assert_eq!(hosts[0]["ios"], ra["host"]["read"]["ios"]);

    // The table: devices as host:path, the fleet row last.
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains(&format!("{hostname}:{}", paths[2])),
        "{table}"
    );
    assert!(table.contains("fleet (2 hosts, 3 devices)"), "{table}");
}

#[test]
fn merge_refuses_other_workloads_and_files_that_are_not_reports() {
    require_root!();
    let scratch = ScratchDir::new("fleet-refuse");
    let host = volumes(1, 32 * MIB);
    let paths = volume_paths(&host);
    let (a, c) = (path_in(&scratch, "a.json"), path_in(&scratch, "c.json"));
    {
        let _lock = rate_test_lock();
        run_hostmax_ok(&short_run(&paths, &a, "1s", &[]));
        run_hostmax_ok(&short_run(&paths, &c, "1s", &["--bs", "8k"]));
    }
    let fleet = path_in(&scratch, "fleet.json");
    let merge = |files: &[&str]| -> Vec<String> {
        let mut args = vec!["merge".to_string()];
        args.extend(files.iter().map(|s| s.to_string()));
        args.extend(["--json".to_string(), fleet.clone()]);
        args
    };
    let err = hostmax_refused(&merge(&[&a, &c]));
    assert!(
        err.contains(&format!(
            "{c}: workload differs from {a} in --bs: 8192 vs 4096"
        )),
        "{err}"
    );

    let junk = path_in(&scratch, "junk.json");
    std::fs::write(&junk, "{\"hello\": \"world\"}").unwrap();
    let err = hostmax_refused(&merge(&[&a, &junk]));
    assert!(
        err.contains(&format!("{junk}: not a hostmax report")),
        "{err}"
    );

    let mut v3 = read_json(&a);
    v3["schema_version"] = 3.into();
    let newer = path_in(&scratch, "v3.json");
    std::fs::write(&newer, v3.to_string()).unwrap();
    let err = hostmax_refused(&merge(&[&a, &newer]));
    assert!(err.contains(&format!("{newer}: schema_version 3")), "{err}");

    // A report as hostmax wrote it before schema 2: integer rates, unnamed device counts.
    let mut v1 = read_json(&a);
    v1["schema_version"] = 1.into();
    for point in v1["time_series"].as_array_mut().unwrap() {
        let counts: Vec<Value> = point["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (d["iops"].as_f64().unwrap() as u64).into())
            .collect();
        point["devices"] = counts.into();
        for key in ["iops", "read_iops", "write_iops", "bytes_per_sec"] {
            point[key] = (point[key].as_f64().unwrap() as u64).into();
        }
    }
    let older = path_in(&scratch, "v1.json");
    std::fs::write(&older, v1.to_string()).unwrap();
    let err = hostmax_refused(&merge(&[&a, &older]));
    assert!(
        err.contains(&format!(
            "{older}: schema_version 1 (written by an older hostmax), this hostmax reads 2; "
        )),
        "{err}"
    );

    let err = hostmax_refused(&merge(&[&a, &path_in(&scratch, "absent.json")]));
    assert!(err.contains("cannot read it"), "{err}");
    assert!(!Path::new(&fleet).exists(), "a refused merge wrote {fleet}");
}

#[test]
fn merge_refuses_the_same_run_twice_and_runs_not_measured_together() {
    require_root!();
    let scratch = ScratchDir::new("fleet-twice");
    let host = volumes(2, 32 * MIB);
    let paths = volume_paths(&host);
    let (a, b) = (path_in(&scratch, "a.json"), path_in(&scratch, "b.json"));
    {
        let _lock = rate_test_lock();
        run_hostmax_ok(&short_run(&paths[..1], &a, "1s", &[]));
        run_hostmax_ok(&short_run(&paths[1..], &b, "1s", &["--seed", "7"]));
    }
    let report = read_json(&a);
    let id = report["run_id"].as_str().expect("a run id");
    assert_eq!(id.len(), 32, "{id}");
    assert_ne!(Some(id), read_json(&b)["run_id"].as_str());
    for field in ["started_at", "ended_at", "hostmax_version", "kernel"] {
        assert!(report[field].is_string(), "{field}: {report}");
    }
    assert!(report["command_line"][0].is_string(), "{report}");
    let fleet = path_in(&scratch, "fleet.json");
    let merge = |files: &[&str], extra: &[&str]| -> Vec<String> {
        let mut args = vec!["merge".to_string()];
        args.extend(files.iter().map(|s| s.to_string()));
        args.extend(["--json".to_string(), fleet.clone()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    // The same file twice, and a copy of it under another name.
    let copy = path_in(&scratch, "copy.json");
    std::fs::copy(&a, &copy).unwrap();
    for twice in [&a, &copy] {
        let err = hostmax_refused(&merge(&[&a, twice], &[]));
        assert!(
            err.contains(&format!("{twice} is the same run as {a} (run_id {id})")),
            "{err}"
        );
    }
    // One run after the other: not measured together, and it says by how much.
    let err = hostmax_refused(&merge(&[&a, &b], &[]));
    assert!(
        err.contains("the runs were not measured together: "),
        "{err}"
    );
    assert!(err.contains("--min-overlap"), "{err}");
    let err = hostmax_refused(&merge(&[&a, &b], &["--min-overlap", "101"]));
    assert!(err.contains("--min-overlap"), "{err}");
    assert!(!Path::new(&fleet).exists(), "a refused merge wrote {fleet}");
    // A report of an older hostmax has no window: refused unless the check is turned off.
    let mut old = read_json(&b);
    for field in ["run_id", "started_at", "ended_at"] {
        old.as_object_mut().unwrap().remove(field);
    }
    let old_path = path_in(&scratch, "old.json");
    std::fs::write(&old_path, old.to_string()).unwrap();
    let err = hostmax_refused(&merge(&[&a, &old_path], &[]));
    assert!(
        err.contains(&format!("{old_path}: no started_at/ended_at")),
        "{err}"
    );
    // Turned off on purpose, the merge goes ahead and lists the differing seeds.
    let out = run_hostmax_ok(&merge(&[&a, &b], &["--min-overlap", "0"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("different --seed values"), "{stderr}");
    let merged = read_json(&fleet);
    let hosts = merged["fleet"]["hosts"].as_array().unwrap();
    assert_eq!(hosts[1]["seed"], 7, "{merged}");
    assert_eq!(hosts[0]["run_id"], id, "{merged}");
    assert_ne!(merged["run_id"], id, "the merge has its own run id");
    assert_eq!(merged["started_at"], report["started_at"], "{merged}");
    // Each host keeps the commit its hostmax was built from; the merge (the same binary here)
    // records its own.
    assert_eq!(
        hosts[0]["hostmax_commit"], report["hostmax_commit"],
        "{merged}"
    );
    assert_eq!(
        merged["hostmax_commit"], report["hostmax_commit"],
        "{merged}"
    );
}

#[test]
fn hdr_log_has_one_interval_per_device_op_and_second_adding_up_to_the_report() {
    require_root!();
    let scratch = ScratchDir::new("fleet-hlog");
    let host = volumes(2, 32 * MIB);
    let paths = volume_paths(&host);
    let (json, log) = (path_in(&scratch, "r.json"), path_in(&scratch, "r.hlog"));
    {
        let _lock = rate_test_lock();
        let args = short_run(
            &paths,
            &json,
            "2s",
            &[
                "--rw",
                "randrw",
                "--size",
                "16m",
                "--allow-write",
                "--hdr-log",
                &log,
            ],
        );
        run_hostmax_ok(&args);
    }
    let report = read_json(&json);
    let (counts, _) = read_interval_log(&log);
    let seconds = report["time_series"].as_array().unwrap().len() as u64;
    assert!(seconds >= 2, "{}", report["time_series"]);

    let mut tags: Vec<String> = paths
        .iter()
        .flat_map(|p| {
            let name = Path::new(p)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            [format!("{name}-read"), format!("{name}-write")]
        })
        .collect();
    tags.extend(["host-read".to_string(), "host-write".to_string()]);
    // Exactly one interval per tag and second, and nothing else.
    assert_eq!(
        counts.len() as u64,
        tags.len() as u64 * seconds,
        "{counts:?}"
    );
    for tag in &tags {
        for s in 0..seconds {
            assert!(
                counts.contains_key(&(tag.clone(), s)),
                "no {tag} at {s}: {counts:?}"
            );
        }
    }
    let sum = |tag: &str| logged_ios(&counts, tag);
    for (i, p) in paths.iter().enumerate() {
        let name = Path::new(p)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let device = &report["devices"][i];
        assert_eq!(sum(&format!("{name}-read")), ios(device, "read"), "{name}");
        assert_eq!(
            sum(&format!("{name}-write")),
            ios(device, "write"),
            "{name}"
        );
    }
    assert_eq!(sum("host-read"), ios(&report["host"], "read"));
    assert_eq!(sum("host-write"), ios(&report["host"], "write"));
    assert!(ios(&report["host"], "write") > 0);
    // Written atomically: no temporary file left beside it.
    let names: Vec<String> = std::fs::read_dir(&scratch.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

/// A command of several runs keeps every run in its one `--hdr-log`: `hostmax sweep` over 1
/// then 2 volumes logs both steps, each tagged by its step (`step2-loop0-read`,
/// `step2-host-read`), the second step's seconds after the first's, and each step's logged
/// I/Os add up exactly to that step's report.
#[test]
fn sweep_hdr_log_holds_every_step_tagged_by_step() {
    require_root!();
    let scratch = ScratchDir::new("fleet-sweep-hlog");
    let host = volumes(2, 32 * MIB);
    let paths = volume_paths(&host);
    let (json, log) = (path_in(&scratch, "s.json"), path_in(&scratch, "s.hlog"));
    {
        let _lock = rate_test_lock();
        let mut args = vec!["sweep".to_string()];
        args.extend(short_run(
            &paths,
            &json,
            "2s",
            &["--steps", "1,2", "--hdr-log", &log],
        ));
        run_hostmax_ok(&args);
    }
    let root = read_json(&json);
    let runs = root["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{root}");
    let (counts, _) = read_interval_log(&log);
    let names: Vec<String> = paths
        .iter()
        .map(|p| {
            Path::new(p)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let seconds_of = |tag: &str| -> Vec<u64> {
        counts
            .keys()
            .filter(|(t, _)| t == tag)
            .map(|(_, s)| *s)
            .collect()
    };
    let mut expected_lines = 0;
    let mut last_second_before: Option<u64> = None;
    for (i, run) in runs.iter().enumerate() {
        let step = format!("step{}", i + 1);
        let volumes = i + 1;
        let seconds = run["time_series"].as_array().unwrap().len();
        assert!(seconds >= 2, "{step}: {}", run["time_series"]);
        // Every second of the step is in the log, after the previous step's.
        let host_seconds = seconds_of(&format!("{step}-host-read"));
        assert_eq!(host_seconds.len(), seconds, "{step}: {counts:?}");
        if let Some(before) = last_second_before {
            assert!(host_seconds[0] > before, "{step} overlaps: {counts:?}");
        }
        last_second_before = host_seconds.last().copied();
        // Each step's logged I/Os add up to that step's report, device by device and host.
        let sum = |tag: String| logged_ios(&counts, &tag);
        for (d, name) in names.iter().enumerate().take(volumes) {
            assert_eq!(
                seconds_of(&format!("{step}-{name}-read")).len(),
                seconds,
                "{step} {name}"
            );
            assert_eq!(
                sum(format!("{step}-{name}-read")),
                ios(&run["devices"][d], "read"),
                "{step} {name}"
            );
        }
        assert!(ios(&run["host"], "read") > 0, "{step}");
        assert_eq!(
            sum(format!("{step}-host-read")),
            ios(&run["host"], "read"),
            "{step}"
        );
        expected_lines += (volumes + 1) * seconds;
    }
    // Nothing else: no untagged or other step's lines (step 1 has no second volume).
    assert_eq!(counts.len(), expected_lines, "{counts:?}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.matches("#[StartTime:").count(), 1, "{text}");
    for step in ["step1", "step2"] {
        assert!(text.contains(&format!("\n#{step}: randread ")), "{text}");
    }
    assert!(
        text.contains(&format!("\n#tag step2-{}: {}\n", names[1], paths[1])),
        "{text}"
    );
    // Written atomically: no temporary file left beside them.
    assert_eq!(std::fs::read_dir(&scratch.0).unwrap().count(), 2);
}

#[test]
fn start_at_delays_the_start() {
    require_root!();
    let scratch = ScratchDir::new("fleet-start");
    let host = volumes(1, 32 * MIB);
    let paths = volume_paths(&host);
    let (json, log) = (path_in(&scratch, "r.json"), path_in(&scratch, "r.hlog"));
    let _lock = rate_test_lock();
    let launched = SystemTime::now();
    let clock = Instant::now();
    let out = run_hostmax_ok(&short_run(
        &paths,
        &json,
        "1s",
        &["--start-at", "+2s", "--hdr-log", &log],
    ));
    let elapsed = clock.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("starting at"), "{stderr}");
    // The log's StartTime is the measured window's start (no ramp here): about 2 s after launch.
    let (_, start) = read_interval_log(&log);
    let delay = start.as_secs_f64() - launched.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    assert!(
        (1.9..3.0).contains(&delay),
        "started {delay:.3} s after launch"
    );
    // 2 s of waiting and 1 s of running; loosely, this machine is shared.
    assert!(elapsed >= Duration::from_millis(2900), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    assert_eq!(read_json(&json)["measured_secs"], 1.0);
}

/// A regular file to run on without root.
fn scratch_file(scratch: &ScratchDir) -> String {
    let f = path_in(scratch, "vol");
    std::fs::File::create(&f)
        .unwrap()
        .set_len(16 * MIB)
        .unwrap();
    f
}

#[test]
fn a_past_or_malformed_start_at_is_refused() {
    let scratch = ScratchDir::new("fleet-past");
    let f = scratch_file(&scratch);
    let run = |at: &str| {
        hostmax_refused(&[
            "--devices".into(),
            f.clone(),
            "--runtime".into(),
            "1s".into(),
            "--start-at".into(),
            at.into(),
        ])
    };
    let err = run("2020-01-01T00:00:00Z");
    assert!(
        err.contains("--start-at 2020-01-01T00:00:00.000Z is") && err.contains("in the past"),
        "{err}"
    );
    let err = run("noon");
    assert!(
        err.contains("--start-at") && err.contains("RFC 3339"),
        "{err}"
    );
    let err = run("2026-02-30T00:00:00Z");
    assert!(err.contains("day 30 is out of range"), "{err}");
}

#[test]
fn sigint_while_waiting_to_start_exits_cleanly() {
    let scratch = ScratchDir::new("fleet-sigint");
    let f = scratch_file(&scratch);
    let json = path_in(&scratch, "r.json");
    let mut child = Command::new(hostmax_bin())
        .args([
            "--devices",
            &f,
            "--runtime",
            "1s",
            "--start-at",
            "+60s",
            "--json",
            &json,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("starting at"), "{line}");
    let clock = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(rest.contains("nothing was measured"), "{rest}");
    assert!(clock.elapsed() < Duration::from_secs(10));
    assert!(!Path::new(&json).exists());
}

/// A report as the libraries make it (no I/O: a result built by hand), as JSON: one device
/// that read 1000 times, measured 2026-11-25 10:00:00 to 10:00:01 on `hostname`.
fn library_report(hostname: &str, run_id: u64, scale: u64) -> Value {
    use hostmax_engine::{DeviceResult, OpKind, OpResult, PerOp, RunResult};
    let mut read = OpResult::default();
    for i in 0..1000u64 {
        read.latency.record(1000 + i * scale).unwrap();
    }
    read.ios = 1000;
    read.bytes = 1000 * 4096;
    let mut result = RunResult::default();
    result.devices = vec![DeviceResult::new(
        "/dev/loop7".into(),
        0,
        PerOp::default().with(OpKind::Read, read),
    )];
    result.measured = Duration::from_secs(1);
    result.run_id = run_id;
    let mut report = hostmax_aggregate::summarize(&result, Vec::new());
    assert!(
        report.provenance.run_id.is_some(),
        "the library gives a run id"
    );
    report.hostname = Some(hostname.into());
    report.provenance.started_at = Some("2026-11-25T10:00:00.000Z".into());
    report.provenance.ended_at = Some("2026-11-25T10:00:01.000Z".into());
    serde_json::to_value(&report).unwrap()
}

/// `hostmax merge FILES` with its address space capped at 512 MiB (`ulimit -v`): a merge
/// that tried to allocate what a hostile file claims would fail and abort. Expects exit 2
/// with one line on stderr and no panic; returns that line.
fn merge_refused_within_512_mib(files: &[&str]) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 524288 && exec \"$0\" merge \"$@\"")
        .arg(hostmax_bin())
        .args(files)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run sh");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "merge {files:?}: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "not one line: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty());
    stderr
}

#[test]
fn merge_refuses_hostile_reports_in_one_line_without_allocating_what_they_claim() {
    let scratch = ScratchDir::new("fleet-hostile");
    let write = |name: &str, v: &Value| {
        let path = path_in(&scratch, name);
        std::fs::write(&path, v.to_string()).unwrap();
        path
    };
    let a_report = library_report("alpha", 0x1111, 3);
    let a = write("a.json", &a_report);
    // Two sound reports merge (the baseline for every refusal below).
    let b_report = library_report("beta", 0x2222, 5);
    let b = write("b.json", &b_report);
    let out = run_hostmax(&["merge", &a, &b], None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A 48-character histogram whose header claims a 1 GiB (and a 4 GiB) payload.
    for (claimed, text) in [
        (
            1u64 << 30,
            "HISTFAAAABp42pNpmSzswAAHzFCaEUJxMNh/gLAAQ2kCwg==",
        ),
        (
            u64::from(u32::MAX),
            "HISTFAAAABx42pNpmSz8HwgYIIAZSjNCKA4G+w8QFgDD3wZ+",
        ),
    ] {
        for scope in ["host", "device"] {
            let mut hostile = b_report.clone();
            let target = match scope {
                "host" => &mut hostile["host"],
                _ => &mut hostile["devices"][0],
            };
            target["histograms"]["read"] = text.into();
            let path = write("hostile.json", &hostile);
            let err = merge_refused_within_512_mib(&[&a, &path]);
            assert!(
                err.contains(&format!("{path}: the histograms of ")),
                "{err}"
            );
            assert!(
                err.contains(&format!(
                    "claims a {claimed}-byte payload and carries 0 bytes"
                )),
                "{err}"
            );
        }
    }

    // Counts that pass 2^64 - 1 when added: 2^64 - 1 reads, and beta's 1000.
    let mut full = a_report.clone();
    full["host"]["read"]["ios"] = u64::MAX.into();
    let full = write("full.json", &full);
    let err = merge_refused_within_512_mib(&[&full, &b]);
    assert!(
        err.contains(&format!(
            "{b}: host.read.ios added to the other reports' passes 2^64 - 1"
        )),
        "{err}"
    );

    // A rate no count over its window allows.
    let mut absurd = b_report.clone();
    absurd["host"]["read"]["iops"] = 1e308.into();
    let absurd = write("absurd.json", &absurd);
    let err = merge_refused_within_512_mib(&[&a, &absurd]);
    assert!(
        err.contains(&format!(
            "{absurd}: host.read.iops is 1e308, more than its count 1000 over 1 s allows"
        )),
        "{err}"
    );

    // The same run without its run id (and renamed): refused by what it measured.
    let mut copy = a_report.clone();
    copy.as_object_mut().unwrap().remove("run_id");
    copy["hostname"] = "gamma".into();
    let copy = write("copy.json", &copy);
    let err = merge_refused_within_512_mib(&[&a, &copy]);
    assert!(
        err.contains(&format!("{copy} holds the same run as {a} (host gamma: the same window and the same counts on every device)")),
        "{err}"
    );
    // And with its run id: the library gave it one.
    let err = merge_refused_within_512_mib(&[&a, &a]);
    assert!(
        err.contains(&format!("{a} is the same run as {a} (run_id ")),
        "{err}"
    );
}

/// `merge --fio-json`: the fleet report in fio's JSON, a job per device named HOST:DEVICE and
/// the fleet as `All clients`, with the merged report's own figures.
#[test]
fn merge_writes_the_fleet_in_fio_s_json() {
    let scratch = ScratchDir::new("fleet-fio-json");
    let (a, b) = (path_in(&scratch, "a.json"), path_in(&scratch, "b.json"));
    std::fs::write(&a, library_report("alpha", 11, 1).to_string()).unwrap();
    std::fs::write(&b, library_report("beta", 12, 3).to_string()).unwrap();
    let (fleet, fio) = (
        path_in(&scratch, "fleet.json"),
        path_in(&scratch, "fio.json"),
    );
    run_hostmax_ok(&[
        "merge".into(),
        a,
        b,
        "--json".into(),
        fleet.clone(),
        "--fio-json".into(),
        fio.clone(),
    ]);
    let (fleet, fio) = (read_json(&fleet), read_json(&fio));
    let jobs = fio["jobs"].as_array().unwrap();
    let names: Vec<&str> = jobs
        .iter()
        .map(|j| j["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha:loop7", "beta:loop7", "All clients"]);
    let all = &jobs[2]["read"];
    assert_eq!(all["total_ios"], 2000);
    assert_eq!(all["iops"], fleet["host"]["read"]["iops"]);
    for p in ["50.000000", "99.000000"] {
        let key = if p.starts_with("50") { "p50" } else { "p99" };
        assert_eq!(
            all["clat_ns"]["percentile"][p], fleet["host"]["read"]["latency_ns"][key],
            "{p}"
        );
    }
    // Each host's device keeps its own figures (beta's latencies are 3x alpha's spread).
    assert_eq!(jobs[0]["read"]["total_ios"], 1000);
    assert!(
        jobs[1]["read"]["clat_ns"]["max"].as_u64() > jobs[0]["read"]["clat_ns"]["max"].as_u64(),
        "{fio}"
    );
    // A folder is not what one report writes; a path of the merged reports is refused.
    let dir = scratch.join("d");
    std::fs::create_dir(&dir).unwrap();
    let err = hostmax_refused(&[
        "merge".into(),
        path_in(&scratch, "a.json"),
        "--fio-json".into(),
        dir.display().to_string(),
    ]);
    assert!(
        err.contains("--fio-json") && err.contains("is a directory"),
        "{err}"
    );
    let err = hostmax_refused(&[
        "merge".into(),
        path_in(&scratch, "a.json"),
        "--min-overlap".into(),
        "0".into(),
        "--fio-json".into(),
        path_in(&scratch, "a.json"),
    ]);
    assert!(err.contains("is also an input"), "{err}");
}

/// `merge` prints text from the reports (host names, device paths) with every control
/// character escaped: a report cannot clear the screen, retitle the terminal or forge a line
/// of the table, and the JSON keeps the text as it was.
#[test]
fn merge_prints_control_characters_of_reports_escaped() {
    let scratch = ScratchDir::new("fleet-escape");
    let (a, b) = (path_in(&scratch, "a.json"), path_in(&scratch, "b.json"));
    let evil_host = "evil\x1b[2J\nPASS host";
    let mut first = library_report(evil_host, 21, 1);
    first["devices"][0]["path"] = "/dev/loop7\x1b]0;pwned\x07\r".into();
    std::fs::write(&a, first.to_string()).unwrap();
    std::fs::write(&b, library_report("beta", 22, 3).to_string()).unwrap();
    let fleet = path_in(&scratch, "fleet.json");
    let out = run_hostmax_ok(&["merge".into(), a, b, "--json".into(), fleet.clone()]);
    let printed =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        printed.contains(r"evil\x1b[2J\nPASS host:/dev/loop7\x1b]0;pwned\x07\r"),
        "{printed}"
    );
    for c in printed.chars().filter(|&c| c != '\n') {
        assert!(!c.is_control(), "{c:?} printed raw: {printed}");
    }
    assert!(
        !printed.lines().any(|l| l.starts_with("PASS host")),
        "{printed}"
    );
    assert_eq!(
        read_json(&fleet)["fleet"]["hosts"][0]["hostname"],
        evil_host
    );
}

/// `merge` reads only regular files, and at most 1 GiB of each: a FIFO nobody writes, a
/// device that never ends and a file too large are refused at once (exit 2, one line),
/// before anything is read from them.
#[test]
fn merge_refuses_fifos_devices_and_huge_files_at_once() {
    let scratch = ScratchDir::new("fleet-inputs");
    let a = path_in(&scratch, "a.json");
    std::fs::write(&a, library_report("alpha", 31, 1).to_string()).unwrap();
    let fifo = path_in(&scratch, "fifo.json");
    nix::unistd::mkfifo(
        Path::new(&fifo),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let huge = path_in(&scratch, "huge.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len((1 << 30) + 1)
        .unwrap();
    for (input, says) in [
        (fifo.as_str(), "is a FIFO, not a regular file"),
        ("/dev/zero", "is a character device, not a regular file"),
        (
            huge.as_str(),
            "is larger than the 1 GiB hostmax reads from one input file",
        ),
    ] {
        let clock = Instant::now();
        let mut child = Command::new(hostmax_bin())
            .args(["merge", &a, input])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if clock.elapsed() > Duration::from_secs(5) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("merge {input} still running after 5 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(clock.elapsed() < Duration::from_secs(1), "{input}: slow");
        assert_eq!(status.code(), Some(2), "{input}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(&format!("{input}: {says}")), "{stderr}");
    }
}
