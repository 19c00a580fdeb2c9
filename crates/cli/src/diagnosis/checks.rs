//! The checks themselves: each reads a few files under a [`SysRoot`] (sysfs through its
//! [`Sysfs`], procfs beside it) and returns
//! [`Finding`]s. Nothing here writes anything; a missing file means the kernel or device
//! lacks the setting, which is a finding of its own only where that matters.

use std::path::{Path, PathBuf};

use hostmax_device::{format_cpu_list, parse_cpu_list, QueueMap, Sysfs};

use super::finding::{Finding, Severity};
use crate::units::human_size;

/// Where the kernel's settings are read: `/` on a real host, a stand-in tree in tests
/// (holding `sys/...` and `proc/...` laid out as the kernel does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysRoot {
    /// The directory holding `sys/` and `proc/`.
    dir: PathBuf,
    /// Its `sys/`.
    pub sysfs: Sysfs,
}

impl Default for SysRoot {
    fn default() -> Self {
        SysRoot::at("/")
    }
}

impl SysRoot {
    /// The tree under `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> SysRoot {
        let dir = dir.into();
        SysRoot {
            sysfs: Sysfs::at(dir.join("sys")),
            dir,
        }
    }

    /// `rel` (such as `interrupts`) under this root's `proc/`.
    pub fn proc_path(&self, rel: &str) -> PathBuf {
        self.dir.join("proc").join(rel)
    }

    /// A procfs file's text, trimmed; `None` when absent or unreadable.
    pub fn proc(&self, rel: &str) -> Option<String> {
        read_trimmed(&self.proc_path(rel))
    }

    /// Whether this is the running system's own root (so the kernel can be probed too).
    pub fn is_live(&self) -> bool {
        self.dir == Path::new("/")
    }
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// What a host-maximum run would do, as far as the settings care.
#[derive(Debug, Clone, PartialEq)]
pub struct RunShape {
    /// What the test will run (`--iodepth`, `--numjobs`, `--bs`, `--rw`): the I/Os it keeps
    /// in flight per device and the buffers it pins are the engine's own figures of it
    /// (`Workload::in_flight_per_target`, `Workload::buffer_bytes`).
    pub workload: hostmax_engine::Workload,
    /// The CPUs hostmax may use (its affinity, narrowed by `--cpus`).
    pub cpus: Vec<usize>,
    /// Whether the process runs as root (root has `CAP_IPC_LOCK`: no memlock limit applies).
    pub root: bool,
    /// Whether the test polls for completions (`--iopoll`, as a one-core peak test does):
    /// a device without poll queues then refuses every I/O.
    pub iopoll: bool,
}

/// Every disk in `sys/block` worth checking when no `--devices` are given: those with a
/// blk-mq map and a non-zero size (an unattached loop device has size 0).
pub fn all_disks(root: &SysRoot) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root.sysfs.path("block")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| {
            let size = root
                .sysfs
                .value(format!("block/{name}/size"))
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0);
            size > 0 && root.sysfs.block(name).join("mq").is_dir()
        })
        .collect();
    names.sort_by(|a, b| crate::devices::natural_cmp(a.as_ref(), b.as_ref()));
    names
}

/// The bracketed choice of a sysfs selector such as `none [mq-deadline] kyber`.
fn selected(text: &str) -> Option<&str> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(&text[start + 1..end])
}

/// The per-device checks for whole disk `disk`, in no particular order.
pub fn device_findings(root: &SysRoot, disk: &str, shape: &RunShape) -> Vec<Finding> {
    let q = |f: &str| root.sysfs.value(format!("block/{disk}/queue/{f}"));
    let sysfs = |f: &str| format!("/sys/block/{disk}/queue/{f}");
    let scope = disk.to_string();
    let mut out = Vec::new();
    let finding =
        |setting: &str, found: String, severity, why: &str, fix: Option<String>| Finding {
            scope: scope.clone(),
            setting: setting.to_string(),
            found,
            severity,
            why: why.to_string(),
            fix,
        };
    let nvme = disk.starts_with("nvme");
    let rotational = q("rotational").as_deref() == Some("1");

    if let Some(v) = q("rq_affinity") {
        let (sev, why) = match v.as_str() {
            "2" => (Severity::Ok, "completions run on the CPU that submitted the I/O"),
            "1" => (
                Severity::Info,
                "completions run on a CPU sharing a cache with the submitter; 2 forces the submitting CPU itself, as Alibaba's 1M-IOPS recipe does",
            ),
            _ => (
                Severity::Warning,
                "completions run wherever the interrupt lands, so a few CPUs can do every device's completion work and cap the host",
            ),
        };
        out.push(finding(
            "rq_affinity",
            v,
            sev,
            why,
            (sev != Severity::Ok).then(|| format!("echo 2 > {}", sysfs("rq_affinity"))),
        ));
    }
    if let Some(text) = q("scheduler") {
        let current = selected(&text).unwrap_or(&text).to_string();
        let offered_none = text
            .split_whitespace()
            .any(|w| w.trim_matches(['[', ']']) == "none");
        let (sev, why) = if current == "none" {
            (
                Severity::Ok,
                "no I/O scheduler: requests go straight to the device",
            )
        } else if rotational {
            (
                Severity::Info,
                "a rotational disk gains from a scheduler; a host-maximum test of it measures the scheduler too",
            )
        } else if nvme {
            (
                Severity::Harmful,
                "an I/O scheduler on NVMe adds a lock and CPU work to every I/O and caps IOPS per queue; NVMe wants none",
            )
        } else {
            (
                Severity::Warning,
                "an I/O scheduler adds a lock and CPU work to every I/O of a non-rotational device; cloud volumes and SSDs want none",
            )
        };
        out.push(finding(
            "scheduler",
            current,
            sev,
            why,
            (sev != Severity::Ok && offered_none)
                .then(|| format!("echo none > {}", sysfs("scheduler"))),
        ));
    }
    if let Some(v) = q("nr_requests") {
        let n: u64 = v.parse().unwrap_or(0);
        let depth = shape.workload.in_flight_per_target();
        let (sev, why) = if n > 0 && n < depth {
            (
                Severity::Harmful,
                format!(
                    "only {n} requests per hardware queue: of the {depth} I/Os hostmax keeps in flight per device, the rest wait for a tag"
                ),
            )
        } else {
            (
                Severity::Ok,
                format!("enough requests per hardware queue for {depth} I/Os in flight per device"),
            )
        };
        out.push(finding(
            "nr_requests",
            v,
            sev,
            &why,
            (sev != Severity::Ok).then(|| {
                format!(
                    "echo {} > {}",
                    depth.next_power_of_two().max(256),
                    sysfs("nr_requests")
                )
            }),
        ));
    }
    if let Some(v) = q("nomerges") {
        let (sev, why) = if v == "0" {
            (
                Severity::Info,
                "the block layer tries to merge every I/O with its neighbours: CPU spent for nothing on random I/O (sequential runs gain from it)",
            )
        } else {
            (
                Severity::Ok,
                "merging is limited or off: no merge attempts per random I/O",
            )
        };
        out.push(finding(
            "nomerges",
            v,
            sev,
            why,
            (sev != Severity::Ok).then(|| format!("echo 2 > {}", sysfs("nomerges"))),
        ));
    }
    if let Some(v) = q("add_random") {
        let (sev, why) = if v == "1" {
            (
                Severity::Warning,
                "every completion feeds the entropy pool: CPU work per I/O for nothing",
            )
        } else {
            (Severity::Ok, "completions do not feed the entropy pool")
        };
        out.push(finding(
            "add_random",
            v,
            sev,
            why,
            (sev != Severity::Ok).then(|| format!("echo 0 > {}", sysfs("add_random"))),
        ));
    }
    if let Some(v) = q("iostats") {
        let (sev, why) = if v == "1" {
            (
                Severity::Info,
                "the kernel times every I/O for /proc/diskstats; fio measured 122M IOPS falling to 112M with iostats on, so it matters at millions of IOPS per host",
            )
        } else {
            (
                Severity::Ok,
                "no per-I/O accounting (iostat and /sys/block/DEV/stat stop counting this device)",
            )
        };
        out.push(finding(
            "iostats",
            v,
            sev,
            why,
            (sev != Severity::Ok).then(|| format!("echo 0 > {}", sysfs("iostats"))),
        ));
    }
    out.extend(poll_findings(root, disk, shape));
    if let Some(v) = q("wbt_lat_usec") {
        let (sev, why) = if v == "0" {
            (
                Severity::Ok,
                "no writeback throttling of this device's writes",
            )
        } else {
            (
                Severity::Info,
                "writeback throttling holds writes back when read latency rises past this target (us): a write or mixed test measures the throttle too; one-core-peak.sh turns it off",
            )
        };
        out.push(finding(
            "wbt_lat_usec",
            v,
            sev,
            why,
            (sev != Severity::Ok).then(|| format!("echo 0 > {}", sysfs("wbt_lat_usec"))),
        ));
    }
    if let Some(v) = q("write_cache") {
        let why = if v == "write back" {
            "the device says it has a volatile write cache: writes may be acknowledged from it; a write test measures what the volume acknowledges, as applications see it"
        } else {
            "writes are acknowledged only once stored; this is the volume's own promise, not something to change for a test"
        };
        out.push(finding("write_cache", v, Severity::Info, why, None));
    }
    out.extend(irq_findings(root, disk));
    out.extend(numa_findings(root, disk, shape));
    out
}

/// Whether `disk` has poll queues (`queue/io_poll`, and for NVMe the driver's
/// `poll_queues` parameter, which is where they come from): polled completions (`--iopoll`)
/// need them, and the one-core peak (t/io_uring's one-core-peak.sh) is a polled test.
fn poll_findings(root: &SysRoot, disk: &str, shape: &RunShape) -> Vec<Finding> {
    let Some(io_poll) = root.sysfs.value(format!("block/{disk}/queue/io_poll")) else {
        return Vec::new();
    };
    let nvme_poll_queues = disk
        .starts_with("nvme")
        .then(|| root.sysfs.value("module/nvme/parameters/poll_queues"))
        .flatten();
    let mut found = format!("io_poll {io_poll}");
    if let Some(n) = &nvme_poll_queues {
        found += &format!(", nvme.poll_queues {n}");
    }
    let (severity, why) = match (io_poll == "1", shape.iopoll) {
        (true, _) => (
            Severity::Ok,
            "the device has poll queues: --iopoll can poll for completions, as a one-core peak test does",
        ),
        (false, true) => (
            Severity::Harmful,
            "the device has no poll queues: with --iopoll every I/O fails (EOPNOTSUPP) and hostmax refuses the device",
        ),
        (false, false) => (
            Severity::Info,
            "no poll queues: completions come by interrupt only; a one-core peak test polls (--iopoll, t/io_uring -p1) and needs them",
        ),
    };
    let fix = (severity != Severity::Ok && nvme_poll_queues.is_some()).then(|| {
        "nvme.poll_queues=N on the kernel command line (or reload the driver: modprobe -r nvme; modprobe nvme poll_queues=N); then queue/io_poll reads 1".to_string()
    });
    vec![Finding {
        scope: disk.to_string(),
        setting: "poll queues".into(),
        found,
        severity,
        why: why.into(),
        fix,
    }]
}

/// The hardware queues of `disk` and the CPUs each serves (`mq/N/cpu_list`).
fn queue_map(root: &SysRoot, disk: &str) -> Vec<(usize, Vec<usize>)> {
    QueueMap::read(&root.sysfs, disk)
        .map(|map| map.queues)
        .unwrap_or_default()
}

/// The interrupt name prefix of `disk`'s queues in `/proc/interrupts` and how to turn the
/// rest of the name into a blk-mq queue index: NVMe names `nvme0q3` (queue 0 is the admin
/// queue, so hardware queue 2), virtio-blk names `virtio2-req.3` (hardware queue 3).
fn irq_queue(disk: &str, action: &str, virtio_name: Option<&str>) -> Option<usize> {
    if let Some(rest) = disk.strip_prefix("nvme") {
        let controller: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let q: usize = action
            .strip_prefix(&format!("nvme{controller}q"))?
            .parse()
            .ok()?;
        return q.checked_sub(1);
    }
    action
        .strip_prefix(&format!("{}-req.", virtio_name?))?
        .parse()
        .ok()
}

/// Whether each hardware queue's interrupt fires on a CPU of that queue's map: with
/// `rq_affinity` the completion is then sent to the submitter by an extra IPI per I/O.
fn irq_findings(root: &SysRoot, disk: &str) -> Vec<Finding> {
    let map = queue_map(root, disk);
    if map.is_empty() {
        return Vec::new();
    }
    let virtio_name = std::fs::canonicalize(root.sysfs.block(disk).join("device"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| n.starts_with("virtio"));
    let Some(interrupts) = root.proc("interrupts") else {
        return Vec::new();
    };
    let mut matched = 0;
    let mut off_map = Vec::new();
    for line in interrupts.lines().skip(1) {
        let Some((irq, rest)) = line.split_once(':') else {
            continue;
        };
        let Ok(irq) = irq.trim().parse::<u32>() else {
            continue;
        };
        let Some(action) = rest.split_whitespace().last() else {
            continue;
        };
        let Some(hwq) = irq_queue(disk, action, virtio_name.as_deref()) else {
            continue;
        };
        let Some((_, queue_cpus)) = map.iter().find(|(i, _)| *i == hwq) else {
            continue;
        };
        let affinity = root
            .proc(&format!("irq/{irq}/effective_affinity_list"))
            .or_else(|| root.proc(&format!("irq/{irq}/smp_affinity_list")))
            .and_then(|t| parse_cpu_list(&t).ok());
        let Some(affinity) = affinity else { continue };
        matched += 1;
        if !affinity.iter().all(|c| queue_cpus.contains(c)) {
            off_map.push(format!(
                "queue {hwq} (CPUs {}) interrupts CPU {} (IRQ {irq})",
                format_cpu_list(queue_cpus),
                format_cpu_list(&affinity)
            ));
        }
    }
    if matched == 0 {
        return Vec::new();
    }
    let (severity, found, why, fix) = if off_map.is_empty() {
        (
            Severity::Ok,
            format!("{matched} queue interrupts on their queues' CPUs"),
            "each completion interrupts a CPU of the queue that submitted it".to_string(),
            None,
        )
    } else {
        (
            Severity::Warning,
            off_map.join("; "),
            "the interrupt lands outside the queue's CPUs, so every completion costs a cross-CPU hop (and cache misses) before it reaches the submitter; usually irqbalance or a manual smp_affinity moved it".to_string(),
            Some("systemctl stop irqbalance; then re-attach the device or write the queue's CPUs to /proc/irq/IRQ/smp_affinity_list".into()),
        )
    };
    vec![Finding {
        scope: disk.to_string(),
        setting: "irq affinity vs queue map".into(),
        found,
        severity,
        why,
        fix,
    }]
}

/// The NUMA node of `disk`'s controller (`device/numa_node`, or its parent's for NVMe
/// namespaces), when the kernel knows it.
fn device_node(root: &SysRoot, disk: &str) -> Option<i64> {
    ["device/numa_node", "device/device/numa_node"]
        .iter()
        .filter_map(|rel| root.sysfs.value(format!("block/{disk}/{rel}")))
        .filter_map(|t| t.parse::<i64>().ok())
        .find(|&n| n >= 0)
}

/// Whether the CPUs hostmax would drive `disk` from sit on the device's NUMA node.
fn numa_findings(root: &SysRoot, disk: &str, shape: &RunShape) -> Vec<Finding> {
    let Some(node) = device_node(root, disk) else {
        return Vec::new();
    };
    let Some(node_cpus) = root
        .sysfs
        .value(format!("devices/system/node/node{node}/cpulist"))
        .and_then(|t| parse_cpu_list(&t).ok())
    else {
        return Vec::new();
    };
    let queue_cpus: Vec<usize> = queue_map(root, disk)
        .into_iter()
        .flat_map(|(_, c)| c)
        .collect();
    let used: Vec<usize> = shape
        .cpus
        .iter()
        .copied()
        .filter(|c| queue_cpus.is_empty() || queue_cpus.contains(c))
        .collect();
    let local: Vec<usize> = used
        .iter()
        .copied()
        .filter(|c| node_cpus.contains(c))
        .collect();
    let (severity, why) = if local.is_empty() {
        (
            Severity::Harmful,
            "none of the CPUs hostmax may use is on the device's node: every I/O crosses the interconnect",
        )
    } else if local.len() < used.len() {
        (
            Severity::Info,
            "some of the CPUs hostmax may use for this device are on another node; hostmax gives each device to one CPU of its queue map, which may be a remote one",
        )
    } else {
        (
            Severity::Ok,
            "the device is driven from CPUs of its own node",
        )
    };
    vec![Finding {
        scope: disk.to_string(),
        setting: "numa node".into(),
        found: format!(
            "device on node {node} (CPUs {}); hostmax may use CPUs {}",
            format_cpu_list(&node_cpus),
            format_cpu_list(&used)
        ),
        severity,
        why: why.into(),
        fix: (severity != Severity::Ok).then(|| {
            format!(
                "hostmax --cpus {} ... (or numactl --cpunodebind={node} hostmax ...)",
                format_cpu_list(&node_cpus)
            )
        }),
    }]
}

/// The host-wide checks.
pub fn host_findings(root: &SysRoot, shape: &RunShape, device_count: usize) -> Vec<Finding> {
    let mut out = Vec::new();
    let host = |setting: &str, found: String, severity, why: &str, fix: Option<&str>| Finding {
        scope: "host".into(),
        setting: setting.into(),
        found,
        severity,
        why: why.into(),
        fix: fix.map(str::to_string),
    };

    match root.proc("sys/kernel/io_uring_disabled").as_deref() {
        Some("2") => out.push(host(
            "kernel.io_uring_disabled",
            "2".into(),
            Severity::Harmful,
            "io_uring is off for every process: hostmax cannot run",
            Some("sysctl -w kernel.io_uring_disabled=0"),
        )),
        Some("1") if !shape.root => out.push(host(
            "kernel.io_uring_disabled",
            "1".into(),
            Severity::Harmful,
            "io_uring is only for root and the group in kernel.io_uring_group: this user cannot run hostmax",
            Some("sysctl -w kernel.io_uring_disabled=0 (or run as root, or join kernel.io_uring_group)"),
        )),
        Some(v) => out.push(host(
            "kernel.io_uring_disabled",
            v.into(),
            Severity::Ok,
            "io_uring is allowed for this process",
            None,
        )),
        None => {}
    }

    if let Some(text) = root.sysfs.value("kernel/mm/transparent_hugepage/enabled") {
        let current = selected(&text).unwrap_or(&text).to_string();
        let (sev, why) = if current == "never" {
            (
                Severity::Warning,
                "hostmax's buffer arenas of 2 MiB and more ask for huge pages (MADV_HUGEPAGE); without them a large buffer is many segments and the kernel splits requests (measured here: 1.28x less bandwidth at 1m blocks)",
            )
        } else {
            (Severity::Ok, "large I/O buffers can sit on huge pages")
        };
        out.push(host(
            "transparent_hugepage",
            current,
            sev,
            why,
            (sev != Severity::Ok)
                .then_some("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"),
        ));
    }

    if let Some(limit) = memlock_limit(root) {
        let needed = shape.workload.buffer_bytes(device_count);
        let shown = limit.map_or("unlimited".to_string(), human_size);
        let (sev, why) = match limit {
            Some(l) if !shape.root && l < needed => (
                Severity::Harmful,
                format!(
                    "registered I/O buffers are pinned and charged to this limit; {device_count} devices x {} I/Os in flight x {} (twice for mixed reads and writes) need {}",
                    shape.workload.in_flight_per_target(),
                    human_size(shape.workload.block_size.into()),
                    human_size(needed)
                ),
            ),
            _ if shape.root => (
                Severity::Ok,
                "root has CAP_IPC_LOCK: pinned buffers are not charged to the limit".to_string(),
            ),
            _ => (
                Severity::Ok,
                format!("room for the {} of buffers hostmax pins", human_size(needed)),
            ),
        };
        out.push(host(
            "memlock limit",
            shown,
            sev,
            &why,
            (sev != Severity::Ok).then_some(
                "ulimit -l unlimited (or LimitMEMLOCK=infinity in the unit, memlock in /etc/security/limits.conf)",
            ),
        ));
    }

    let irqbalance = process_running(root, "irqbalance");
    out.push(host(
        "irqbalance",
        if irqbalance { "running" } else { "not running" }.into(),
        if irqbalance {
            Severity::Warning
        } else {
            Severity::Ok
        },
        if irqbalance {
            "it moves interrupts it may manage during the run, so completions can land away from the CPUs that submitted"
        } else {
            "nothing moves interrupts during the run"
        },
        irqbalance.then_some("systemctl stop irqbalance (for the test; or IRQBALANCE_BANNED_CPULIST)"),
    ));

    out.extend(cpu_findings(root, shape));
    out
}

/// `Max locked memory` of `proc/self/limits`: `Some(None)` when unlimited.
fn memlock_limit(root: &SysRoot) -> Option<Option<u64>> {
    let limits = root.proc("self/limits")?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max locked memory"))?;
    let soft = line
        .trim_start_matches("Max locked memory")
        .split_whitespace()
        .next()?;
    if soft == "unlimited" {
        return Some(None);
    }
    soft.parse().ok().map(Some)
}

/// Whether a process whose `comm` is `name` runs (read from `proc/PID/comm`).
fn process_running(root: &SysRoot, name: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(root.proc_path("")) else {
        return false;
    };
    entries.filter_map(|e| e.ok()).any(|e| {
        e.file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
            && read_trimmed(&e.path().join("comm")).as_deref() == Some(name)
    })
}

/// Idle-state exit latency above which waking costs show in a depth-1 latency test, in us.
const DEEP_IDLE_US: u64 = 10;

/// The frequency governor and idle states of the CPUs hostmax may use.
fn cpu_findings(root: &SysRoot, shape: &RunShape) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut governors: Vec<(String, usize)> = Vec::new();
    let mut slow: Vec<usize> = Vec::new();
    let mut deep: Vec<(String, u64)> = Vec::new();
    for &cpu in &shape.cpus {
        let base = format!("devices/system/cpu/cpu{cpu}");
        if let Some(g) = root.sysfs.value(format!("{base}/cpufreq/scaling_governor")) {
            if g != "performance" {
                slow.push(cpu);
            }
            match governors.iter_mut().find(|(name, _)| *name == g) {
                Some((_, n)) => *n += 1,
                None => governors.push((g, 1)),
            }
        }
        for state in 0.. {
            let dir = format!("{base}/cpuidle/state{state}");
            let Some(name) = root.sysfs.value(format!("{dir}/name")) else {
                break;
            };
            let latency: u64 = root
                .sysfs
                .value(format!("{dir}/latency"))
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            let enabled = root.sysfs.value(format!("{dir}/disable")).as_deref() != Some("1");
            if enabled && latency > DEEP_IDLE_US && !deep.iter().any(|(n, _)| *n == name) {
                deep.push((name, latency));
            }
        }
    }
    if !governors.is_empty() {
        let found = governors
            .iter()
            .map(|(g, n)| format!("{g} on {n} CPU{}", if *n == 1 { "" } else { "s" }))
            .collect::<Vec<_>>()
            .join(", ");
        let sev = if slow.is_empty() {
            Severity::Ok
        } else {
            Severity::Warning
        };
        out.push(Finding {
            scope: "host".into(),
            setting: "cpu governor".into(),
            found,
            severity: sev,
            why: if slow.is_empty() {
                "CPUs run at full speed".into()
            } else {
                format!(
                    "CPUs {} may run slower than they can: the CPU time per I/O grows and latency at low load too",
                    format_cpu_list(&slow)
                )
            },
            fix: (sev != Severity::Ok)
                .then(|| "cpupower frequency-set -g performance".to_string()),
        });
    }
    let sev = if deep.is_empty() {
        Severity::Ok
    } else {
        Severity::Warning
    };
    out.push(Finding {
        scope: "host".into(),
        setting: "cpu idle states".into(),
        found: if deep.is_empty() {
            format!("none deeper than {DEEP_IDLE_US} us enabled")
        } else {
            deep.iter()
                .map(|(n, l)| format!("{n} ({l} us)"))
                .collect::<Vec<_>>()
                .join(", ")
        },
        severity: sev,
        why: if deep.is_empty() {
            "an idle CPU wakes fast enough not to show in latency".into()
        } else {
            "a CPU waiting for a completion may sleep in these states and take this long to wake: it adds to every latency at low depth (the p95 promise is judged at depth 1)".into()
        },
        fix: (sev != Severity::Ok).then(|| format!("cpupower idle-set -D {DEEP_IDLE_US}")),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selected_reads_the_bracketed_choice() {
        assert_eq!(selected("none [mq-deadline] kyber"), Some("mq-deadline"));
        assert_eq!(selected("[none] mq-deadline"), Some("none"));
        assert_eq!(selected("always madvise [never]"), Some("never"));
        assert_eq!(selected("none"), None);
    }

    #[test]
    fn irq_names_map_to_hardware_queues() {
        assert_eq!(irq_queue("nvme0n1", "nvme0q3", None), Some(2));
        assert_eq!(irq_queue("nvme0n1", "nvme0q0", None), None);
        assert_eq!(irq_queue("nvme1n1", "nvme10q1", None), None);
        assert_eq!(irq_queue("vda", "virtio2-req.3", Some("virtio2")), Some(3));
        assert_eq!(irq_queue("vda", "virtio2-config", Some("virtio2")), None);
        assert_eq!(irq_queue("loop0", "virtio2-req.3", None), None);
    }
}
