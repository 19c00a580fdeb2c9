//! Is hostmax honest to the last I/O? Its counts against the kernel's own, its rates against
//! throttles whose rates are known, and its read/write mix against the one asked for.

mod support;

use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

/// Reads the write-safety signature probes may issue per device before a write run: hostmax's
/// own (a few aligned reads of the head and the tail, split by the block layer) and libblkid's
/// through `wipefs --no-act` (48 reads of a loop device measured, with room).
const SIGNATURE_PROBE_READS: u64 = 8 + 64;

fn ios(report: &Value, device: usize, op: &str) -> u64 {
    report["devices"][device][op]["ios"]
        .as_u64()
        .unwrap_or_else(|| panic!("devices[{device}].{op}.ios missing in {report}"))
}

#[test]
fn per_device_ios_match_the_kernels_completions() {
    require_root!();
    let _rate = rate_test_lock();
    let host = volumes(4, 64 * MIB);
    let names = volume_kernel_names(&host);
    let before: Vec<(u64, u64)> = names.iter().map(|n| kernel_completions(n)).collect();
    let mut args = vec!["--devices"];
    let paths = volume_paths(&host);
    args.extend(paths.iter().map(String::as_str));
    args.extend([
        "--rw",
        "randrw",
        "--rwmixread",
        "60",
        "--allow-write",
        "--iodepth",
        "16",
        "--runtime",
        "2s",
        "--ramp",
        "0s",
    ]);
    let report = run_json_stdout(&args, None);
    for (i, name) in names.iter().enumerate() {
        let after = kernel_completions(name);
        let kernel_reads = after.0 - before[i].0;
        let kernel_writes = after.1 - before[i].1;
        let (reads, writes) = (ios(&report, i, "read"), ios(&report, i, "write"));
        assert!(
            reads > 1000 && writes > 1000,
            "{name}: too few I/Os: {reads}/{writes}"
        );
        eprintln!("{name}: hostmax {reads}+{writes}, kernel {kernel_reads}+{kernel_writes}");
        // The kernel also counts the I/Os drained after the window closed: at most one queue
        // of them. Its reads also include the write-safety probe's few reads of the device's
        // head and tail (before any write), so reads get that much more room.
        let drained = (kernel_reads + kernel_writes).checked_sub(reads + writes);
        assert!(
            kernel_reads >= reads
                && kernel_writes >= writes
                && kernel_writes - writes <= 16
                && drained.is_some_and(|d| d <= 16 + SIGNATURE_PROBE_READS),
            "{name}: hostmax {reads} reads {writes} writes, kernel {kernel_reads} reads {kernel_writes} writes"
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
    let caps = [1000u64, 2000, 3000, 4000];
    let spec = SimHostSpec {
        volume_iops: caps.iter().map(|&c| Some(c)).collect(),
        ..SimHostSpec::new(caps.len(), 64 * MIB)
    };
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
