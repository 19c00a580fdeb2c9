//! hostmax on cloud-style disks: the virtio-blk and NVMe disks with several hardware queues, the
//! LUN reached by two paths and the qemu-capped volume that the kernel matrix's second VM
//! attaches (tests/kernels/run.sh). Everywhere else each test skips, saying why.

mod support;

use support::*;

/// A read run on the 4-queue virtio-blk disk, found by its serial, counts exactly what the
/// kernel completed (merges included): the disks VM's devices are real, not simulated.
#[test]
fn a_multi_queue_disk_found_by_serial_is_counted_exactly() {
    require_root!();
    let names = require_vm_disks!("hostmax-mq");
    let name = &names[0];
    let path = format!("/dev/{name}");
    let before = baseline_completions(std::slice::from_ref(&path), std::slice::from_ref(name));
    let args = ["--devices", &path, "--runtime", "2s", "--ramp", "0s"];
    let report = run_json_stdout(&args, None);
    let after = kernel_completions(name);
    let device = &report["devices"][0];
    let hostmax: u64 = ["ramp", "drained"]
        .iter()
        .map(|phase| device[phase]["reads"].as_u64().unwrap())
        .sum::<u64>()
        + device["read"]["ios"].as_u64().unwrap()
        + device["errors"].as_u64().unwrap();
    eprintln!(
        "{name}: hostmax {hostmax} reads, kernel {}",
        after.0 - before[0].0
    );
    assert!(hostmax > 100, "{name}: too few reads: {report}");
    assert_eq!(after.0 - before[0].0, hostmax, "{name}");
    assert_eq!(after.1 - before[0].1, 0, "{name}");
}

/// The interrupt lines of `disk`'s I/O queues and how many interrupts each has taken on all
/// CPUs, from /proc/interrupts: a virtio-blk disk's `virtioN-req.Q` (N from the disk's
/// `device`, `virtioN`), an NVMe namespace's controller's `nvmeCqQ` (its admin queue `q0`
/// left out).
fn queue_interrupts(disk: &str) -> Vec<(String, u64)> {
    let device = std::fs::canonicalize(format!("/sys/block/{disk}/device"))
        .unwrap_or_else(|e| panic!("{disk}: no device link: {e}"));
    let owner = device.file_name().unwrap().to_string_lossy().into_owned();
    let prefix = if owner.starts_with("virtio") {
        format!("{owner}-req.")
    } else {
        format!("{owner}q")
    };
    let text = std::fs::read_to_string("/proc/interrupts").unwrap();
    let mut lines = text.lines();
    let cpus = lines.next().unwrap().split_whitespace().count();
    let mut queues: Vec<(String, u64)> = lines
        .filter_map(|line| {
            let name = line.split_whitespace().last()?;
            let queue = name.strip_prefix(&prefix)?;
            if queue == "0" && !owner.starts_with("virtio") {
                return None;
            }
            let count = line
                .split_whitespace()
                .skip(1)
                .take(cpus)
                .filter_map(|c| c.parse::<u64>().ok())
                .sum();
            Some((name.to_string(), count))
        })
        .collect();
    queues.sort();
    assert!(
        !queues.is_empty(),
        "{disk}: no {prefix}* line in /proc/interrupts"
    );
    queues
}

/// One run with no placement flags on each multi-queue disk: every I/O queue's interrupt line
/// takes a fair share of the completions (each at least half of an even share), and the
/// counts are the kernel's.
#[test]
fn one_run_with_no_flags_uses_every_queue_of_a_disk() {
    require_root!();
    let mut disks = require_vm_disks!("hostmax-mq");
    disks.extend(disks_with_serial("hostmax-nvme"));
    for name in &disks {
        let path = format!("/dev/{name}");
        let before = baseline_completions(std::slice::from_ref(&path), std::slice::from_ref(name));
        let irqs_before = queue_interrupts(name);
        let report = run_json_stdout(
            &["--devices", &path, "--runtime", "3s", "--ramp", "0s"],
            None,
        );
        let irqs_after = queue_interrupts(name);
        let after = kernel_completions(name);
        let device = &report["devices"][0];
        let counted = device["ramp"]["reads"].as_u64().unwrap()
            + device["read"]["ios"].as_u64().unwrap()
            + device["drained"]["reads"].as_u64().unwrap()
            + device["errors"].as_u64().unwrap();
        assert_eq!(after.0 - before[0].0, counted, "{name}: {device:#}");
        let taken: Vec<(String, u64)> = irqs_after
            .iter()
            .zip(&irqs_before)
            .map(|((q, a), (_, b))| (q.clone(), a - b))
            .collect();
        eprintln!(
            "{name}: interrupts per queue {taken:?}, drivers {}",
            device["drivers"]
        );
        let total: u64 = taken.iter().map(|(_, n)| n).sum();
        let fair = total / taken.len() as u64;
        assert!(total > 100, "{name}: {taken:?}");
        for (queue, n) in &taken {
            assert!(
                *n * 2 >= fair,
                "{name}: {queue} took {n} of {total}: {taken:?}"
            );
        }
    }
}

/// `--numjobs` puts each job on its own CPU of the disk's queue map.
#[test]
fn numjobs_places_jobs_on_distinct_queue_cpus() {
    require_root!();
    let names = require_vm_disks!("hostmax-mq");
    let name = &names[0];
    let path = format!("/dev/{name}");
    let mut queue_cpus: Vec<u64> = Vec::new();
    for entry in std::fs::read_dir(format!("/sys/block/{name}/mq")).unwrap() {
        let list = std::fs::read_to_string(entry.unwrap().path().join("cpu_list")).unwrap();
        queue_cpus.extend(
            list.trim()
                .split(',')
                .filter_map(|c| c.trim().parse::<u64>().ok()),
        );
    }
    let report = run_json_stdout(
        &[
            "--devices",
            &path,
            "--numjobs",
            "4",
            "--iodepth",
            "8",
            "--runtime",
            "1s",
            "--ramp",
            "0s",
        ],
        None,
    );
    let drivers = report["devices"][0]["drivers"].as_array().unwrap().clone();
    let mut cpus: Vec<u64> = drivers.iter().map(|d| d["cpu"].as_u64().unwrap()).collect();
    assert_eq!(cpus.len(), 4, "{drivers:?}");
    assert!(
        cpus.iter().all(|c| queue_cpus.contains(c)),
        "{drivers:?} vs {queue_cpus:?}"
    );
    cpus.sort_unstable();
    cpus.dedup();
    assert_eq!(cpus.len(), 4, "distinct CPUs: {drivers:?}");
    assert!(drivers.iter().all(|d| d["iodepth"] == 8), "{drivers:?}");
}

/// A volume capped like a cloud volume (qemu's throttling.iops-total: reads and writes
/// together) is measured within 3% of its cap with randrw 50/50.
#[test]
fn a_capped_volume_is_measured_within_three_percent_of_its_cap() {
    require_root!();
    let names = require_vm_disks!("hostmax-capped");
    let path = format!("/dev/{}", names[0]);
    let report = run_json_stdout(
        &[
            "--devices",
            &path,
            "--rw",
            "randrw",
            "--rwmixread",
            "50",
            "--runtime",
            "5s",
            "--ramp",
            "2s",
            "--allow-write",
            "--force",
        ],
        None,
    );
    let iops = number(&report["devices"][0]["iops"]);
    let cap = VM_CAPPED_DISK_IOPS as f64;
    eprintln!("capped volume: {iops:.0} IOPS of {cap}");
    assert!(
        (iops - cap).abs() <= 0.03 * cap,
        "{iops:.0} IOPS against a cap of {cap}"
    );
}
