//! The `hostmax` command end to end on real block devices (null_blk or loop): the JSON report's
//! shape, `--json -`, device de-duplication through symlinks, quoted glob patterns,
//! regular-file targets, and the commit `--version` and every report name.

mod support;

use std::os::unix::fs::symlink;
use std::process::Command;

use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

/// A one-second report on `devices`, from stdout.
fn short_run(devices: &[String]) -> Value {
    let mut args = vec!["--devices".to_string()];
    args.extend(devices.iter().cloned());
    args.extend(["--runtime", "1s", "--ramp", "0s"].map(String::from));
    run_json_stdout(&args, None)
}

/// `git ARGS` in the hostmax crate's directory (where the build script asks), without
/// touching the index: its stdout, or `None` if it failed or git is missing.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The commit this checkout is at, as reports record it (the sha, `-dirty` appended when
/// `git status` names a changed tracked file), or `HOSTMAX_BUILD_COMMIT` when the build was
/// given one; `None` when neither tells. The binary was built just before the tests ran, so
/// it was built from this (unless someone edits or commits in between).
fn checkout_commit() -> Option<String> {
    if let Some(given) = std::env::var("HOSTMAX_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
    {
        return Some(given.trim().to_ascii_lowercase());
    }
    let sha = git(&["rev-parse", "--verify", "HEAD"])?.trim().to_string();
    let status = git(&["status", "--porcelain", "--untracked-files=no"]);
    let dirty = status.is_none_or(|s| !s.is_empty());
    Some(if dirty { format!("{sha}-dirty") } else { sha })
}

#[test]
fn the_version_names_the_commit_and_whether_the_tree_was_dirty() {
    let version = env!("CARGO_PKG_VERSION");
    let want = match checkout_commit() {
        Some(commit) => {
            let sha = commit.strip_suffix("-dirty").unwrap_or(&commit);
            let dirty = if commit.ends_with("-dirty") {
                ", dirty"
            } else {
                ""
            };
            format!(
                "hostmax {version} (commit {}{dirty})\n",
                &sha[..sha.len().min(12)]
            )
        }
        None => format!("hostmax {version} (commit unknown)\n"),
    };
    for flag in ["--version", "-V"] {
        let out = run_hostmax_ok(&[flag]);
        assert_eq!(String::from_utf8_lossy(&out.stdout), want, "hostmax {flag}");
    }
}

#[test]
fn json_to_stdout_has_the_documented_shape_and_nothing_else() {
    require_root!();
    let host = volumes(2, 32 * MIB);
    let paths: Vec<String> = host
        .device_paths()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let report = short_run(&paths);
    assert_eq!(report["schema_version"], 2);
    for scope in [
        &report["host"],
        &report["devices"][0],
        &report["devices"][1],
    ] {
        for key in ["iops", "bytes_per_sec", "errors"] {
            assert!(scope[key].is_number(), "{key} missing in {scope}");
        }
        for op in ["read", "write"] {
            for key in ["ios", "iops", "bytes"] {
                assert!(scope[op][key].is_number(), "{op}.{key} missing in {scope}");
            }
            for p in ["p50", "p90", "p99", "p99_9", "max", "mean"] {
                assert!(
                    scope[op]["latency_ns"][p].is_number(),
                    "{op}.latency_ns.{p} missing in {scope}"
                );
            }
        }
    }
    let devices = report["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    assert_eq!(devices[0]["path"], paths[0].as_str());
    // The host is the sum of its devices, and a 1 s randread does reads only.
    let sum: u64 = devices
        .iter()
        .map(|d| d["read"]["ios"].as_u64().unwrap())
        .sum();
    assert_eq!(report["host"]["read"]["ios"].as_u64().unwrap(), sum);
    assert!(sum > 0);
    assert_eq!(report["host"]["write"]["ios"], 0);
    let p50 = report["host"]["read"]["latency_ns"]["p50"]
        .as_u64()
        .unwrap();
    let p99 = report["host"]["read"]["latency_ns"]["p99"]
        .as_u64()
        .unwrap();
    assert!(p50 > 0 && p50 <= p99, "p50 {p50} p99 {p99}");

    // hostmax's own CPU per I/O: each worker's user + system time over its I/Os, and in all
    // every worker's time over every I/O of the run (ramp, window, drain, failed).
    let generator = &report["load_generator"];
    let workers = generator["workers"].as_array().unwrap();
    let (mut cpu_ns, mut ios) = (0.0, 0);
    for w in workers {
        let n = w["ios"].as_u64().unwrap_or_else(|| panic!("{w}"));
        let ns = (w["user_secs"].as_f64().unwrap() + w["system_secs"].as_f64().unwrap()) * 1e9;
        match w["cpu_ns_per_io"].as_f64() {
            Some(per_io) => {
                assert!(n > 0 && per_io > 0.0, "{w}");
                assert!((per_io - ns / n as f64).abs() <= 1e-6 * per_io, "{w}");
            }
            None => assert_eq!(n, 0, "{w}"),
        }
        cpu_ns += ns;
        ios += n;
    }
    let count = |v: &Value| {
        v.as_object()
            .map_or(0, |o| o.values().filter_map(Value::as_u64).sum::<u64>())
    };
    let host = &report["host"];
    let run_ios = ["read", "write", "trim"]
        .iter()
        .map(|op| host[op]["ios"].as_u64().unwrap_or(0))
        .sum::<u64>()
        + count(&host["ramp"])
        + count(&host["drained"])
        + host["errors"].as_u64().unwrap();
    assert_eq!(ios, run_ios, "{generator}");
    let all = generator["cpu_ns_per_io"]
        .as_f64()
        .unwrap_or_else(|| panic!("{generator}"));
    assert!(all > 0.0, "{generator}");
    assert!(
        (all - cpu_ns / ios as f64).abs() <= 1e-6 * all,
        "{generator}"
    );
}

#[test]
fn a_device_named_twice_or_through_a_symlink_is_measured_once() {
    require_root!();
    let host = volumes(1, 32 * MIB);
    let dev = host.device_paths()[0].display().to_string();
    let dir = ScratchDir::new("dedupe");
    let link = dir.0.join("by-id-volume");
    symlink(&dev, &link).unwrap();
    let report = short_run(&[dev.clone(), dev.clone(), link.display().to_string()]);
    let devices = report["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 1, "{devices:?}");
    assert_eq!(devices[0]["path"], dev.as_str());
    // Each dropped name is listed, with the one it repeats.
    let link = link.display().to_string();
    let out = run_hostmax(
        &[
            "--devices",
            &dev,
            &dev,
            &link,
            "--runtime",
            "1s",
            "--ramp",
            "0s",
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{dev} given twice: measured once")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{link} is the same device as {dev}")),
        "{stderr}"
    );
}

#[test]
fn a_quoted_glob_pattern_expands_to_every_match() {
    require_root!();
    let host = volumes(3, 32 * MIB);
    let dir = ScratchDir::new("glob");
    for (i, dev) in host.device_paths().iter().enumerate() {
        symlink(dev, dir.0.join(format!("vol-{i}"))).unwrap();
    }
    let pattern = format!("{}/vol-*", dir.0.display());
    let report = short_run(&[pattern]);
    let mut got: Vec<String> = report["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap().to_string())
        .collect();
    let mut want = volume_paths(&host);
    got.sort();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn regular_files_are_targets_too() {
    // No root needed: this is what unprivileged users and the demo without root run on.
    let dir = ScratchDir::new("files");
    let file = dir.0.join("volume.img");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(16 * MIB)
        .unwrap();
    let report = short_run(&[file.display().to_string()]);
    assert!(report["host"]["read"]["ios"].as_u64().unwrap() > 0);
    assert_eq!(report["host"]["errors"], 0);
    // Where it came from: the version and the commit it was built from.
    assert_eq!(report["hostmax_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        report.get("hostmax_commit").and_then(Value::as_str),
        checkout_commit().as_deref(),
        "{report}"
    );
}

#[test]
fn a_device_named_through_a_symlink_keeps_that_name_beside_the_kernel_name() {
    require_root!();
    let host = volumes(1, 32 * MIB);
    let dev = host.device_paths()[0].display().to_string();
    let node = dev.strip_prefix("/dev/").unwrap().to_string();
    let dir = ScratchDir::new("given-name");
    let link = dir
        .0
        .join("nvme-Vendor_Model_SERIAL42")
        .display()
        .to_string();
    symlink(&dev, &link).unwrap();
    let args = ["--devices", &link, "--runtime", "1s", "--ramp", "0s"];
    let report = short_run(std::slice::from_ref(&link));
    let device = &report["devices"][0];
    // `path` keeps its meaning (the canonical path it was opened by); `given` is the user's.
    assert_eq!(device["path"], dev.as_str(), "{device}");
    assert_eq!(device["given"], link.as_str(), "{device}");
    let out = run_hostmax(&args, None);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains(&format!("{link} ({node}) ")), "{table}");
    // Named by its kernel name, there is no other name to show.
    let report = short_run(std::slice::from_ref(&dev));
    assert!(report["devices"][0].get("given").is_none(), "{report}");
}

#[test]
fn each_second_names_its_devices_and_carries_float_rates() {
    require_root!();
    let _rate = rate_test_lock();
    // Different rates, and given slow first then fast: a name on the wrong figures shows.
    let caps = [scaled_cap(500), scaled_cap(2000)];
    let host = capped_loop_volumes(&caps, 32 * MIB);
    let paths = volume_paths(&host);
    let mut args = vec!["--devices".to_string()];
    args.extend(paths.iter().cloned());
    args.extend(["--runtime", "3s", "--ramp", "1s"].map(String::from));
    let report = run_json_stdout(&args, host.throttle());
    let seconds = report["time_series"].as_array().unwrap();
    assert!(seconds.len() >= 3, "{}", report["time_series"]);
    for point in seconds.iter().filter(|p| p["partial"] == false) {
        for key in ["iops", "read_iops", "write_iops", "bytes_per_sec"] {
            assert!(point[key].is_f64(), "{key} is not a float: {point}");
        }
        let entries = point["devices"].as_array().unwrap();
        assert_eq!(entries.len(), 2, "{point}");
        for (entry, (path, cap)) in entries.iter().zip(paths.iter().zip(caps)) {
            assert_eq!(entry["path"], path.as_str(), "{point}");
            assert!(entry["iops"].is_f64() && entry["bytes_per_sec"].is_f64());
            let iops = number(&entry["iops"]);
            // The throttle holds each at its cap (a stall of this shared machine may cost some).
            assert!(
                iops <= cap as f64 * 1.25,
                "{path} at {iops} over its cap {cap}"
            );
            assert_eq!(number(&entry["read_iops"]), iops);
            assert_eq!(number(&entry["bytes_per_sec"]), iops * 4096.0);
        }
        let sum: f64 = entries.iter().map(|e| number(&e["iops"])).sum();
        assert_eq!(sum, number(&point["iops"]), "{point}");
    }
    // Over the run, the fast one did more than twice what the slow one did, second by second.
    let total = |j: usize| -> f64 {
        seconds
            .iter()
            .map(|p| number(&p["devices"][j]["iops"]))
            .sum()
    };
    assert!(total(1) > 2.0 * total(0), "{}", report["time_series"]);
}

/// The `kernel` object of a report's device, as (reads, writes, discards).
fn kernel_of(device: &Value) -> (u64, u64, u64) {
    let k = &device["kernel"];
    let n = |key: &str| {
        k[key]
            .as_u64()
            .unwrap_or_else(|| panic!("kernel.{key} missing in {device}"))
    };
    (n("reads"), n("writes"), n("discards"))
}

/// hostmax's own count of kind `op` (`read`, `write`) over the whole run: ramp, window, drain.
fn own_ios(device: &Value, op: &str) -> u64 {
    let plural = format!("{op}s");
    device["ramp"][&plural].as_u64().unwrap()
        + device[op]["ios"].as_u64().unwrap()
        + device["drained"][&plural].as_u64().unwrap()
}

#[test]
fn the_kernels_count_stands_beside_hostmaxs_and_says_why_it_differs() {
    require_root!();
    let host = loop_volumes(1, 64 * MIB);
    let paths = volume_paths(&host);
    let names = volume_kernel_names(&host);
    let dev = &paths[0];
    // A fresh device is read by the kernel's partition scan and udev's probe first.
    let _ = baseline_completions(&paths, &names);
    let run = |extra: &[&str]| {
        let before = kernel_completions(&names[0]);
        let mut args: Vec<&str> = vec!["--devices", dev, "--runtime", "1s", "--ramp", "0s"];
        args.extend(extra);
        args.extend(["--json", "-"]);
        let out = run_hostmax(&args, None);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let after = kernel_completions(&names[0]);
        let device = report["devices"][0].clone();
        // The report's count is the kernel's, as the test reads it on its own.
        let (reads, writes, _) = kernel_of(&device);
        assert_eq!(
            (reads, writes),
            (after.0 - before.0, after.1 - before.1),
            "{args:?}: {device}"
        );
        (device, String::from_utf8_lossy(&out.stderr).into_owned())
    };

    // 4 KiB reads: nothing split, nothing else reading: the same count, no words.
    let (device, table) = run(&[]);
    let (reads, writes, discards) = kernel_of(&device);
    assert_eq!(reads, own_ios(&device, "read"), "{device}");
    assert!(reads > 0);
    assert_eq!((writes, discards), (0, 0));
    assert!(device["kernel"].get("differs").is_none(), "{device}");
    assert!(!table.contains("kernel's count"), "{table}");

    // 2 MiB reads on a loop device (max_sectors_kb 1280): each counts twice in the kernel.
    let max_kib: u64 =
        std::fs::read_to_string(format!("/sys/block/{}/queue/max_sectors_kb", names[0]))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
    let pieces = 2048_u64.div_ceil(max_kib);
    let (device, table) = run(&["--bs", "2m"]);
    let (reads, _, _) = kernel_of(&device);
    let own = own_ios(&device, "read");
    assert!(own > 0);
    if pieces > 1 {
        assert_eq!(reads, own * pieces, "{device}");
        let why = device["kernel"]["differs"].as_str().unwrap();
        assert!(
            why.contains(&format!("+{} split", own * (pieces - 1))),
            "{why}"
        );
        assert!(
            table.contains(&format!(
                "kernel's count of {dev}: reads: kernel {reads}, hostmax {own}"
            )),
            "{table}"
        );
    }

    // A write run: the safety probe's reads are the kernel's, named; the writes are equal.
    let (device, table) = run(&["--rw", "randwrite", "--allow-write"]);
    let (reads, writes, _) = kernel_of(&device);
    assert_eq!(writes, own_ios(&device, "write"), "{device}");
    assert!(reads > 0, "the safety probe reads the device: {device}");
    let why = device["kernel"]["differs"].as_str().unwrap();
    assert_eq!(
        why,
        format!("reads: kernel {reads}, hostmax 0: +{reads} safety probe"),
        "{device}"
    );
    assert!(table.contains("safety probe"), "{table}");
}

#[test]
fn a_file_target_has_no_kernel_count() {
    let dir = ScratchDir::new("kernel-count-file");
    let file = dir.0.join("target.img");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(16 * MIB)
        .unwrap();
    let file = file.display().to_string();
    let report = short_run(&[file]);
    assert!(report["devices"][0].get("kernel").is_none(), "{report}");
}
