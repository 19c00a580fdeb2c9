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
