//! `--consistency`: the share of seconds each volume and the host kept its promise, on the
//! simulated host (throttled loop volumes whose caps are known).

mod support;

use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

#[test]
fn a_volume_below_its_promise_every_second_fails_consistency_with_its_worst_seconds() {
    require_root!();
    let _rate = rate_test_lock();
    let caps = [2000u64, 1000];
    let host = capped_loop_volumes(&caps, 64 * MIB);
    let devices = volume_paths(&host);
    let mut args = vec!["--devices".to_string()];
    args.extend(devices.iter().cloned());
    args.extend(
        [
            "--expect-volume-iops",
            "2000",
            "--tolerance",
            "10%",
            "--consistency",
            "80%",
            "--runtime",
            "5s",
            "--ramp",
            "1s",
            "--json",
            "-",
        ]
        .map(String::from),
    );
    let out = run_hostmax(&args, host.throttle());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let json: Value = serde_json::from_slice(&out.stdout).expect("only the report on stdout");
    let c = &json["verdict"]["consistency"];
    assert_eq!(c["figure"], "iops", "{c:#}");
    assert_eq!(c["pass"], false);
    let good = &c["devices"][0];
    let short = &c["devices"][1];
    assert_eq!(good["path"], devices[0].as_str());
    // Capped at its promise: most seconds at the 1800 floor (a stall of this shared machine
    // can cost one), and fairly flat.
    assert_eq!(number(&good["floor"]), 1800.0);
    assert!(number(&good["seconds"]) >= 4.0, "{good:#}");
    assert!(number(&good["seconds_held"]) >= 2.0, "{good:#}");
    assert!(number(&good["cv"]) < 0.5, "{good:#}");
    // Capped at half its promise: no second reaches the floor.
    assert_eq!(short["seconds_held"], 0, "{short:#}");
    assert_eq!(short["share_held"], 0.0);
    assert_eq!(short["pass"], false);
    let worst = short["worst_seconds"].as_array().unwrap();
    assert!(!worst.is_empty() && worst.len() <= 5);
    assert!(number(&worst[0]["value"]) < 1100.0, "{short:#}");
    assert!(worst
        .windows(2)
        .all(|w| number(&w[0]["value"]) <= number(&w[1]["value"])));
    // The host promises nothing: its CV is still given.
    assert!(c["host"]["share_held"].is_null() && number(&c["host"]["cv"]) >= 0.0);
    // The verdict names it; the table shows the section.
    assert_eq!(json["verdict"]["pass"], false);
    assert!(
        stderr.contains("consistency (each second")
            && stderr.contains(&format!("{} consistency", devices[1])),
        "{stderr}"
    );

    // --consistency without a promise is refused before any I/O.
    let out = run_hostmax(
        &[
            "--devices",
            &devices[0],
            "--consistency",
            "99%",
            "--runtime",
            "1s",
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--consistency needs a promise"), "{stderr}");
}

#[test]
fn the_suite_judges_consistency_over_every_second_of_its_4k_cells() {
    require_root!();
    let _rate = rate_test_lock();
    let caps = [2000u64, 1000];
    let host = capped_loop_volumes(&caps, 64 * MIB);
    let dir = ScratchDir::new("suite-consistency");
    let devices = volume_paths(&host);
    let mut args = vec!["suite".to_string(), "iops".into(), "--devices".into()];
    args.extend(devices.iter().cloned());
    args.extend(
        [
            "--block-sizes",
            "4k",
            "--mixes",
            "100/0",
            "--cell-time",
            "2s",
            "--max-rounds",
            "5",
            "--expect-volume-iops",
            "2000",
            "--tolerance",
            "10%",
            "--consistency",
            "75%",
            "--json",
        ]
        .map(String::from),
    );
    args.push(dir.path("suite.json"));
    let out = run_hostmax(&args, host.throttle());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("suite.json")).unwrap()).unwrap();
    let c = &json["spec"]["consistency"];
    assert_eq!(c["figure"], "iops", "{c:#}");
    assert_eq!(c["pass"], false, "{c:#}");
    let (good, short) = (&c["devices"][0], &c["devices"][1]);
    // 5 rounds of one 2-second cell: about 10 seconds judged (a second may straddle the end).
    assert!((8.0..=10.0).contains(&number(&good["seconds"])), "{good:#}");
    assert!(number(&good["seconds_held"]) >= 4.0, "{good:#}");
    assert_eq!(short["seconds_held"], 0, "{short:#}");
    // Each worst second names the cell and round it came from.
    let run = short["worst_seconds"][0]["run"].as_str().unwrap();
    assert!(run.starts_with("4k_100_0 round "), "{run}");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("consistency (each second"), "{table}");
}
