//! The suite's options for parity with CloudHarmony's: active range, jobs per device, a sleep
//! between cells, a preconditioning time limit; on throttled loop volumes.

mod support;

use std::time::Instant;

use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

#[test]
fn active_range_numjobs_sleep_and_precondition_limit_shape_the_suite() {
    require_root!();
    let _rate = rate_test_lock();
    // 200 writes/s of 128k: 2 passes over 16 MiB would take about 1.3 s, the limit is 0.5 s.
    let spec = SimHostSpec::new(2, 64 * MIB).with_volume_iops_caps(vec![Some(200); 2]);
    let host = SimulatedHost::build_loop_devices(&spec).expect("simulated host");
    let dir = ScratchDir::new("suite-options");
    let json_path = dir.path("suite.json");
    let mut args = vec!["suite".to_string(), "iops".into(), "--devices".into()];
    args.extend(volume_paths(&host));
    args.extend(
        [
            "--block-sizes",
            "4k",
            "--mixes",
            "0/100",
            "--cell-time",
            "1s",
            "--max-rounds",
            "5",
            "--allow-write",
            "--no-purge",
            "--active-range",
            "25%",
            "--numjobs",
            "2",
            "--iodepth",
            "4",
            "--sleep-between",
            "1s",
            "--precondition-time",
            "500ms",
            "--json",
            &json_path,
        ]
        .map(String::from),
    );
    let started = Instant::now();
    let out = run_hostmax(&args, host.throttle());
    let elapsed = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let settings = &json["settings"];
    // 25% of 64 MiB; 2 jobs of depth 4 each (fio's numjobs: two workers per device).
    assert_eq!(settings["range_bytes"], 16 * MIB, "{settings:#}");
    assert_eq!(settings["iodepth"], 4, "{settings:#}");
    assert_eq!(settings["numjobs"], 2, "{settings:#}");
    assert_eq!(settings["sleep_between_secs"], 1.0);
    assert!(
        json["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("active range 25%")),
        "{:#}",
        json["notes"]
    );
    let method = json["preparation"]["precondition"]["record"]["method"][0]
        .as_str()
        .unwrap();
    assert!(
        method.contains("stopped by --precondition-time"),
        "{method}"
    );
    // 5 rounds of one 1 s cell, each followed by 1 s idle.
    assert!(elapsed >= 9.0, "{elapsed:.1} s");

    // Out of range and conflicting values are refused before any I/O.
    for (extra, needle) in [
        (vec!["--active-range", "0%"], "e.g. 50%"),
        (
            vec!["--active-range", "50%", "--size", "8m"],
            "cannot be used with",
        ),
        (
            vec!["--numjobs", "64", "--iodepth", "4096"],
            "64 workers x queue depth 4096 = 262144 I/Os in flight",
        ),
    ] {
        let mut a = vec!["suite".to_string(), "iops".into(), "--devices".into()];
        a.extend(volume_paths(&host));
        a.extend(extra.iter().map(|s| s.to_string()));
        let out = run_hostmax(&a, None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(needle), "{extra:?}: {stderr}");
    }
}

#[test]
fn purge_escalates_and_the_suite_stops_when_no_purge_worked() {
    require_root!();
    let host = loop_volumes(1, 16 * MIB);
    let device = volume_paths(&host).remove(0);
    let dir = ScratchDir::new("suite-purge");
    let json_path = dir.path("suite.json");
    let password = dir.path("password");
    std::fs::write(&password, "hostmax\n").unwrap();
    let args = |json: &str| -> Vec<String> {
        [
            "suite",
            "iops",
            "--devices",
            &device,
            "--block-sizes",
            "4k",
            "--mixes",
            "0/100",
            "--cell-time",
            "200ms",
            "--max-rounds",
            "5",
            "--allow-write",
            "--no-precondition",
            "--secure-erase-password-file",
            &password,
            "--json",
            json,
        ]
        .map(String::from)
        .to_vec()
    };
    // A loop device is no ATA disk: the purge falls through to discard, and says so.
    let out = run_hostmax(&args(&json_path), None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let method = json["preparation"]["purge"]["record"]["method"][0]
        .as_str()
        .unwrap();
    assert!(
        method.ends_with("discard (after ATA secure erase: not an ATA disk)"),
        "{method}"
    );

    // Read-only: discard and zero fill both fail, and the suite stops before any cell.
    let status = std::process::Command::new("blockdev")
        .args(["--setro", &device])
        .status()
        .unwrap();
    assert!(status.success());
    let out = run_hostmax(&args(&dir.path("ro.json")), None);
    let _ = std::process::Command::new("blockdev")
        .args(["--setrw", &device])
        .status();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("failed every way")
            && stderr.contains("discard:")
            && stderr.contains("zero fill:"),
        "{stderr}"
    );
    assert!(
        !dir.join("ro.json").exists(),
        "no report of a suite that never ran"
    );
}

#[test]
fn the_suite_page_includes_a_curve() {
    let dir = ScratchDir::new("suite-curve");
    let file = dir.file("vol", 8 * MIB).display().to_string();
    let curve_json = dir.path("curve.json");
    let out = run_hostmax(
        &[
            "curve",
            "--devices",
            &file,
            "--depths",
            "1,4",
            "--p99-max",
            "10ms",
            "--runtime",
            "1s",
            "--ramp",
            "0s",
            "--json",
            &curve_json,
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = dir.path("suite.html");
    let suite = |curve: &str| {
        run_hostmax(
            &[
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
                "--allow-write",
                "--html",
                &html,
                "--state-dir",
                &dir.path(&format!("state-{}", curve.rsplit('/').next().unwrap())),
                "--curve",
                curve,
            ],
            None,
        )
    };
    let out = suite(&curve_json);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<h2>Load-latency curve</h2>"),
        "no curve section"
    );
    assert!(page.contains("id=\"chart-curve\"") && page.contains("promise: p99"));
    assert!(
        !page.contains("<?xml"),
        "an XML declaration inside the page"
    );
    // Something that is not a curve report is refused before any I/O.
    let other = dir.path("other.json");
    std::fs::write(&other, "{\"schema_version\": 1}").unwrap();
    let out = suite(&other);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("not a 'hostmax curve --json' report"),
        "{stderr}"
    );
}
