//! The host settings that hold a host-maximum test back, per device and for the host, most
//! harmful first ([`diagnose`]), each with what was found, why it matters and the command that
//! changes it. Read-only: it reads sysfs and procfs (under [`checks::SysRoot`], which tests
//! point at a stand-in tree) and has the engine build one small io_uring to see what the
//! kernel offers ([`Engine::kernel_ring`]).
//!
//! `hostmax doctor` shows every finding; a main run prints [`warning_line`] when something
//! would warn.

pub mod checks;
pub mod finding;

use checks::{RunShape, SysRoot};
pub use finding::{Finding, Severity};

use crate::engine::Engine;
use crate::plan::RunPlan;

/// The run shape of `workload` on hostmax's CPUs (narrowed to `cpus`).
pub fn shape(
    workload: &hostmax_engine::Workload,
    cpus: Option<&[usize]>,
    iopoll: bool,
) -> RunShape {
    let allowed = hostmax_engine::placement::allowed_cpus().unwrap_or_default();
    let cpus = match cpus {
        Some(list) => allowed
            .iter()
            .copied()
            .filter(|c| list.contains(c))
            .collect(),
        None => allowed,
    };
    RunShape {
        workload: workload.clone(),
        cpus,
        root: nix::unistd::geteuid().is_root(),
        iopoll,
    }
}

/// Every finding for `disks` and the host, most harmful first (stable within a severity:
/// devices in order, then the host); on a live root, what `engine` says of the kernel's
/// io_uring too.
pub fn diagnose(
    engine: &dyn Engine,
    root: &SysRoot,
    disks: &[String],
    shape: &RunShape,
) -> Vec<Finding> {
    let mut findings: Vec<Finding> = disks
        .iter()
        .flat_map(|d| checks::device_findings(root, d, shape))
        .collect();
    findings.extend(checks::host_findings(root, shape, disks.len().max(1)));
    if root.is_live() {
        findings.extend(ring_findings(engine.kernel_ring()));
    }
    findings.sort_by_key(|f| f.severity);
    findings
}

/// What the kernel's io_uring offers, from [`Engine::kernel_ring`].
pub fn ring_findings(probed: std::io::Result<hostmax_engine::KernelRingSupport>) -> Vec<Finding> {
    let finding = |found: String, severity, why: &str, fix: Option<&str>| Finding {
        scope: "host".into(),
        setting: "io_uring features".into(),
        found,
        severity,
        why: why.into(),
        fix: fix.map(str::to_string),
    };
    let support = match probed {
        Ok(s) => s,
        Err(e) => {
            return vec![finding(
                format!("no ring could be built: {e}"),
                Severity::Harmful,
                "hostmax drives every device through io_uring",
                Some("sysctl -w kernel.io_uring_disabled=0, or a kernel with CONFIG_IO_URING=y"),
            )]
        }
    };
    let mut have = Vec::new();
    let mut missing = Vec::new();
    for (name, on) in [
        ("defer_taskrun", support.defer_taskrun),
        ("coop_taskrun", support.coop_taskrun),
        ("registered_ring", support.registered_ring),
        ("fixed_buffers", support.fixed_buffers),
        ("nodrop", support.nodrop),
        ("ext_arg", support.ext_arg),
        ("no_sqarray", support.no_sqarray),
    ] {
        if on {
            have.push(name)
        } else {
            missing.push(name)
        }
    }
    let found = if missing.is_empty() {
        format!("all of {}", have.join(", "))
    } else {
        format!("missing {}; has {}", missing.join(", "), have.join(", "))
    };
    if support.defer_taskrun && support.fixed_buffers {
        vec![finding(
            found,
            Severity::Ok,
            "every ring feature hostmax uses for the least CPU per I/O",
            None,
        )]
    } else {
        vec![finding(
            found,
            Severity::Warning,
            "an older kernel: hostmax falls back to slower ring setups, so more CPU per I/O (DEFER_TASKRUN needs Linux 6.1)",
            Some("boot a kernel of 6.1 or later"),
        )]
    }
}

/// The one line a main run prints (on stderr) when the doctor would warn about its devices
/// or the host; `None` when nothing is harmful or a warning.
pub fn warning_line(engine: &dyn Engine, plan: &RunPlan) -> Option<String> {
    let root = SysRoot::default();
    let mut disks: Vec<String> = Vec::new();
    for name in plan.targets.iter().filter_map(|t| t.kernel_name.as_ref()) {
        let disk = root.sysfs.whole_disk(name);
        if !disks.contains(&disk) {
            disks.push(disk);
        }
    }
    let shape = shape(&plan.workload, plan.cpus.as_deref(), plan.polling.iopoll);
    let serious: Vec<Finding> = diagnose(engine, &root, &disks, &shape)
        .into_iter()
        .filter(|f| f.severity <= Severity::Warning)
        .collect();
    let worst = serious.first()?;
    Some(format!(
        "hostmax: doctor: {} setting{} may hold this test back (worst: {} {} {}); see 'hostmax doctor{}'",
        serious.len(),
        if serious.len() == 1 { "" } else { "s" },
        worst.scope,
        worst.setting,
        worst.found,
        if disks.is_empty() {
            String::new()
        } else {
            format!(
                " --devices {}",
                disks
                    .iter()
                    .map(|d| format!("/dev/{d}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
    ))
}
