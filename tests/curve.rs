//! `hostmax curve` on the simulated host: volumes capped by a throttle answer at depth d in
//! d / cap (Little's law), so each point's latency and the SLO knee are known in advance.

mod support;

use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

#[test]
fn the_knee_is_where_depth_over_cap_crosses_the_promise() {
    require_root!();
    let _rate = rate_test_lock();
    let caps = [2000u64, 4000];
    let host = capped_loop_volumes(&caps, 64 * MIB);
    let dir = ScratchDir::new("curve");
    let svg = dir.join("curve.svg");
    let mut args = vec!["curve".to_string(), "--devices".into()];
    args.extend(volume_paths(&host));
    args.extend(
        [
            "--depths",
            "1,2,4,8,16",
            "--mean-max",
            "2800us",
            "--runtime",
            "3s",
            "--ramp",
            "1s",
            "--svg",
        ]
        .map(String::from),
    );
    args.push(svg.display().to_string());
    // Consistency at the knee: the 2,000-IOPS volume never reaches a 3,000 promise.
    args.extend(
        [
            "--expect-volume-iops",
            "3000",
            "--consistency",
            "90%",
            "--json",
            "-",
        ]
        .map(String::from),
    );
    let out = run_hostmax(&args, host.throttle());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let json: Value = serde_json::from_slice(&out.stdout).expect("only the report on stdout");
    let c = &json["consistency"];
    assert_eq!(c["pass"], false, "{c:#}");
    assert_eq!(c["devices"][0]["seconds_held"], 0, "{c:#}");
    assert_eq!(c["devices"][1]["pass"], true, "{c:#}");
    assert!(stderr.contains("consistency (each second"), "{stderr}");
    let curve = &json["curve"];
    let points = curve["points"].as_array().unwrap();
    assert_eq!(points.len(), 5);
    for p in points {
        let depth = number(&p["iodepth"]);
        for (v, cap) in p["volumes"].as_array().unwrap().iter().zip(caps) {
            let cap = cap as f64;
            let iops = number(&v["iops"]);
            assert!(iops <= cap * 1.1, "{v}");
            // Little's law: mean latency = depth / IOPS (the cap, give or take the throttle's
            // bursts and this shared machine's stalls).
            let expected_ns = depth / iops * 1e9;
            let mean = number(&v["latency_ns"]["mean"]);
            assert!(
                (mean - expected_ns).abs() < 0.1 * expected_ns,
                "depth {depth}, cap {cap}: mean {mean} ns, expected {expected_ns}"
            );
        }
    }
    let vols = curve["volumes"].as_array().unwrap();
    for (v, (cap, held_to, broken_at)) in vols.iter().zip([(2000.0, 4, 8), (4000.0, 8, 16)]) {
        // 2000 IOPS: 4 / 2000 = 2 ms keeps 2.8 ms, 8 / 2000 = 4 ms does not; 4000 IOPS: 8
        // and 16. The knee is a point where the promise held, at the cap (within noise).
        assert_eq!(v["broken_from"], broken_at, "{v:#}");
        let knee = &v["knee"];
        assert!(
            number(&knee["iodepth"]) <= number(&serde_json::json!(held_to)),
            "{v:#}"
        );
        assert!(number(&knee["latency_ns"]["mean"]) <= 2_800_000.0, "{v:#}");
        // (blk-throttle on this shared machine: within 15% of the cap.)
        assert!((number(&knee["iops"]) - cap).abs() < 0.15 * cap, "{v:#}");
    }
    // blk-throttle releases I/Os in bursts: at depth 1 a volume already runs near its cap.
    assert!(
        number(&vols[0]["saturation"]["iodepth"]) <= 2.0,
        "{curve:#}"
    );
    assert_eq!(curve["host"]["held_everywhere"], false);
    let svg = std::fs::read_to_string(&svg).expect("the SVG");
    assert!(svg.contains("SLO knee") && svg.contains("promise: mean"));
}

/// SIGINT at the first of three depths: no knee and no saturation point (for the host and
/// every volume), the depths never run named, exit 130.
#[test]
fn an_interrupted_curve_gives_no_saturation_point() {
    // Full-speed I/O: never beside a test that measures rates.
    let _rate = rate_test_lock();
    let dir = ScratchDir::new("curve-interrupted");
    let file = dir.file("vol", 64 * MIB).display().to_string();
    let json = dir.join("curve.json");
    let args: Vec<String> = [
        "curve",
        "--devices",
        &file,
        "--depths",
        "1,2,4",
        "--p99-max",
        "1s",
        "--runtime",
        "30s",
        "--ramp",
        "0s",
        "--json",
        &json.display().to_string(),
    ]
    .map(String::from)
    .to_vec();
    let out = interrupt_after(&args, "step 1/3", std::time::Duration::from_millis(1500));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["interrupted"], true, "{report}");
    assert_eq!(report["depths_not_measured"], serde_json::json!([2, 4]));
    let curve = &report["curve"];
    for answer in std::iter::once(&curve["host"]).chain(curve["volumes"].as_array().unwrap()) {
        assert!(answer["saturation"].is_null(), "{answer}");
        assert!(answer["knee"].is_null(), "{answer}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains("saturation at depth") && stdout.contains("no saturation point"),
        "{stdout}"
    );
}

/// `curve --rates`: a volume capped at 2,000 IOPS keeps up with 0.3 and half of its measured
/// ceiling, with response times that keep a 50 ms p99, and falls behind 1.5 times it, where
/// the backlog makes the response p99 break the promise: the knee is 0.5x, the saturation
/// point 1.5x. (Between 0.5x and 1.0x the kernel's blk-throttle itself holds a paced load
/// back at times, so no step sits there.)
#[test]
fn by_offered_rate_the_knee_and_saturation_follow_the_ceiling() {
    require_root!();
    let _rate = rate_test_lock();
    let cap = 2000u64;
    let host = capped_loop_volumes(&[cap], 64 * MIB);
    let mut args = vec!["curve".to_string(), "--devices".into()];
    args.extend(volume_paths(&host));
    args.extend(
        [
            "--iodepth",
            "16",
            "--rates",
            "0.3x,0.5x,1.5x",
            "--p99-max",
            "50ms",
            "--runtime",
            "2s",
            "--ramp",
            "0s",
            "--json",
            "-",
        ]
        .map(String::from),
    );
    let dir = ScratchDir::new("curve-rates");
    let svg = dir.join("rates.svg");
    args.extend(["--svg".to_string(), svg.display().to_string()]);
    let out = run_hostmax(&args, host.throttle());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    eprintln!("{stderr}");
    let json: Value = serde_json::from_slice(&out.stdout).expect("only the report on stdout");
    // The chart is of the rates: response against offered, each step labelled with its share.
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(
        chart.contains("Response time against the offered rate")
            && chart.contains("IOPS offered (host)")
            && chart.contains("response p99")
            && chart.contains("service p99")
            && chart.contains("SLO knee"),
        "{chart}"
    );
    let by_rate = &json["by_rate"];
    let ceiling = by_rate["ceiling_iops"].as_f64().unwrap();
    assert!(
        (ceiling - cap as f64).abs() < cap as f64 * 0.1,
        "ceiling {ceiling}"
    );
    let steps = by_rate["steps"].as_array().unwrap();
    let offered: Vec<u64> = steps
        .iter()
        .map(|s| s["offered_iops"].as_u64().unwrap())
        .collect();
    let expect = |f: f64| (f * ceiling).round() as u64;
    assert_eq!(offered, [expect(0.3), expect(0.5), expect(1.5)]);
    for s in &steps[..2] {
        let (o, a) = (
            s["offered_host_iops"].as_f64().unwrap(),
            s["achieved_iops"].as_f64().unwrap(),
        );
        assert!(a >= 0.95 * o, "{s}");
    }
    assert!(steps[2]["achieved_iops"].as_f64().unwrap() < 0.95 * expect(1.5) as f64);
    assert!(steps[2]["response_ns"]["p99"].as_u64().unwrap() > 50_000_000);
    assert_eq!(by_rate["knee_offered_iops"], expect(0.5));
    assert_eq!(by_rate["saturation_offered_iops"], expect(1.5));
    assert_eq!(
        json["runs"].as_array().unwrap().len(),
        4,
        "the ceiling and three rates"
    );
    assert!(stderr.contains("curve by offered rate"), "{stderr}");
    for s in steps {
        let share = s["achieved_iops"].as_f64().unwrap() / s["offered_host_iops"].as_f64().unwrap();
        // plotters writes a text's content on a line of its own.
        let label = format!("\n{:.0}%\n", share * 100.0);
        assert!(chart.contains(&label), "{label:?} not on the chart");
    }
}
