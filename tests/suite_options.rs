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
    let spec = SimHostSpec {
        volume_iops: vec![Some(200); 2],
        ..SimHostSpec::new(2, 64 * MIB)
    };
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
    // 25% of 64 MiB; 2 jobs x depth 4.
    assert_eq!(settings["range_bytes"], 16 * MIB, "{settings:#}");
    assert_eq!(settings["iodepth"], 8, "{settings:#}");
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
            "--numjobs 64 x --iodepth 4096",
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
