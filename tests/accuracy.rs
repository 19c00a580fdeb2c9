//! Is hostmax honest to the last I/O? Its counts against the kernel's own, its rates against
//! throttles whose rates are known, and its read/write mix against the one asked for.

mod support;

use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

fn count(report: &Value, device: usize, what: &str, op: &str) -> u64 {
    report["devices"][device][what][op]
        .as_u64()
        .unwrap_or_else(|| panic!("devices[{device}].{what}.{op} missing in {report}"))
}

fn ios(report: &Value, device: usize, op: &str) -> u64 {
    count(report, device, op, "ios")
}

/// Every completion hostmax saw, ramp, window and drain, against the kernel's own count
/// (merges included): they must be equal, with no slack. A read run, so that no write-safety
/// probe reads the devices first.
#[test]
fn per_device_counts_equal_the_kernels_completions() {
    require_root!();
    let _rate = rate_test_lock();
    let host = volumes(4, 64 * MIB);
    let names = volume_kernel_names(&host);
    let paths = volume_paths(&host);
    let before = baseline_completions(&paths, &names);
    let mut args = vec!["--devices"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(["--iodepth", "16", "--runtime", "2s", "--ramp", "1s"]);
    let report = run_json_stdout(&args, None);
    for (i, name) in names.iter().enumerate() {
        let after = kernel_completions(name);
        let (kernel_reads, kernel_writes) = (after.0 - before[i].0, after.1 - before[i].1);
        let ramp = count(&report, i, "ramp", "reads");
        let measured = ios(&report, i, "read");
        let drained = count(&report, i, "drained", "reads");
        let errors = report["devices"][i]["errors"].as_u64().unwrap();
        eprintln!(
            "{name}: hostmax ramp {ramp} + measured {measured} + drained {drained} + errors {errors}, kernel {kernel_reads} reads"
        );
        assert!(ramp > 100 && measured > 1000, "{name}: too few I/Os");
        assert_eq!(kernel_reads, ramp + measured + drained + errors, "{name}");
        assert_eq!(kernel_writes, 0, "{name}");
        assert_eq!(
            report["devices"][i]["write"]["ios"].as_u64(),
            Some(0),
            "{name}"
        );
    }
}

#[test]
fn read_share_follows_rwmixread() {
    require_root!();
    let _rate = rate_test_lock();
    let host = volumes(2, 64 * MIB);
    let paths = volume_paths(&host);
    let mut args = vec!["--devices"];
    args.extend(paths.iter().map(String::as_str));
    args.extend([
        "--rw",
        "randrw",
        "--rwmixread",
        "70",
        "--allow-write",
        "--runtime",
        "2s",
        "--ramp",
        "0s",
    ]);
    let report = run_json_stdout(&args, None);
    let reads = report["host"]["read"]["ios"].as_u64().unwrap() as f64;
    let writes = report["host"]["write"]["ios"].as_u64().unwrap() as f64;
    let share = 100.0 * reads / (reads + writes);
    eprintln!("read share {share:.2}% of {} I/Os", reads + writes);
    assert!((68.0..=72.0).contains(&share), "read share {share:.2}%");
}

#[test]
fn throttled_volumes_are_each_measured_within_3_percent_of_their_cap() {
    require_root!();
    let _rate = rate_test_lock();
    let caps = [1000u64, 2000, 3000, 4000].map(scaled_cap);
    let spec = SimHostSpec::new(caps.len(), 64 * MIB)
        .with_volume_iops_caps(caps.iter().map(|&c| Some(c)).collect());
    let host = SimulatedHost::build_loop_devices(&spec).expect("simulated host");
    let paths = volume_paths(&host);
    let mut args = vec!["--devices"];
    args.extend(paths.iter().map(String::as_str));
    // blk-throttle hands out its budget in 100 ms slices: a long window keeps one slice
    // of slack well under 3%.
    args.extend(["--runtime", "6s", "--ramp", "1s"]);
    let report = run_json_stdout(&args, host.throttle());
    for (i, cap) in caps.iter().enumerate() {
        let iops = report["devices"][i]["iops"].as_f64().unwrap();
        let error = (iops - *cap as f64).abs() / *cap as f64;
        eprintln!("{}: cap {cap}, measured {iops:.1}", paths[i]);
        assert!(
            error <= 0.03,
            "{}: measured {iops:.0} IOPS against a cap of {cap}",
            paths[i]
        );
    }
}

/// A slow device's I/Os stay in flight about a second while a fast device on the same worker
/// turns tens of thousands of batches: each must keep the time of its own batch (the engine
/// keeps the last 4096 batches' times and writes an older one into the I/O's slot), where a
/// time taken from a later batch would make it microseconds.
#[test]
fn a_slow_devices_latencies_stay_its_own_beside_a_fast_device_on_the_same_worker() {
    require_root!();
    let _rate = rate_test_lock();
    // 4 in flight at 4 IOPS: each I/O waits about a second.
    let spec = SimHostSpec::new(2, 32 * MIB).with_volume_iops_caps(vec![Some(4), None]);
    let host = SimulatedHost::build_loop_devices(&spec).expect("simulated host");
    let paths = volume_paths(&host);
    let mut args = vec!["--devices"];
    args.extend(paths.iter().map(String::as_str));
    // One CPU: one worker drives both.
    args.extend([
        "--cpus",
        "0",
        "--iodepth",
        "4",
        "--runtime",
        "4s",
        "--ramp",
        "1s",
    ]);
    let report = run_json_stdout(&args, host.throttle());
    let latency = |device: usize, p: &str| {
        report["devices"][device]["read"]["latency_ns"][p]
            .as_f64()
            .unwrap_or_else(|| panic!("devices[{device}].read.latency_ns.{p} missing in {report}"))
    };
    let (slow_ios, fast_ios) = (ios(&report, 0, "read"), ios(&report, 1, "read"));
    eprintln!(
        "slow: {slow_ios} reads, p50 {:.0} ms, min {:.0} ms; fast: {fast_ios} reads",
        latency(0, "p50") / 1e6,
        latency(0, "min") / 1e6
    );
    assert!(slow_ios >= 4, "the slow device completed {slow_ios} reads");
    assert!(
        fast_ios > 100 * slow_ios,
        "fast {fast_ios}, slow {slow_ios}"
    );
    // About a second each in the window (the ramp takes the first ones, which the throttle
    // lets through sooner); another batch's time would make some of them milliseconds.
    assert!(
        latency(0, "min") >= 0.4e9,
        "the slow device's lowest latency is {} ns: an I/O took another batch's time",
        latency(0, "min")
    );
    assert!(latency(0, "max") <= 4e9, "{}", report["devices"][0]);
}

#[test]
fn a_host_cap_below_its_volumes_caps_is_measured_within_3_percent() {
    require_root!();
    let _rate = rate_test_lock();
    let (volume_cap, host_cap) = (scaled_cap(2000), scaled_cap(5000));
    let spec = SimHostSpec::new(4, 64 * MIB)
        .with_volume_iops(volume_cap)
        .with_host_iops(host_cap);
    let host = SimulatedHost::build_loop_devices(&spec).expect("simulated host");
    let paths = volume_paths(&host);
    let mut args = vec!["--devices"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(["--runtime", "6s", "--ramp", "1s"]);
    let report = run_json_stdout(&args, host.throttle());
    let iops = report["host"]["iops"].as_f64().unwrap();
    eprintln!("host: cap {host_cap}, measured {iops:.1}");
    assert!(
        (iops - host_cap as f64).abs() / host_cap as f64 <= 0.03,
        "host measured {iops:.0} IOPS against a cap of {host_cap}"
    );
    for (i, path) in paths.iter().enumerate() {
        let iops = report["devices"][i]["iops"].as_f64().unwrap();
        assert!(
            iops <= volume_cap as f64 * 1.03,
            "{path}: {iops:.0} IOPS over its cap of {volume_cap}"
        );
    }
}

#[test]
fn rate_iops_caps_each_device() {
    require_root!();
    let _rate = rate_test_lock();
    let host = volumes(2, 64 * MIB);
    let paths = volume_paths(&host);
    let mut args = vec!["--devices"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(["--rate-iops", "700", "--runtime", "3s", "--ramp", "1s"]);
    let report = run_json_stdout(&args, None);
    for i in 0..paths.len() {
        let iops = report["devices"][i]["iops"].as_f64().unwrap();
        eprintln!("{}: {iops:.1} IOPS with --rate-iops 700", paths[i]);
        assert!(
            (iops - 700.0).abs() <= 21.0,
            "{}: {iops:.0} IOPS with --rate-iops 700",
            paths[i]
        );
    }
}
