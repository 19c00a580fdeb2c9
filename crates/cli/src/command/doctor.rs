//! `hostmax doctor`: every finding of the diagnosis ([`crate::diagnosis`]) for `--devices`
//! (or every disk) and the host, as a table and `--json`.

use std::ffi::OsString;
use std::path::PathBuf;

use serde::Serialize;

use crate::args::doctor::DoctorArgs;
use crate::diagnosis::checks::{self, SysRoot};
use crate::diagnosis::{diagnose, shape, Finding, Severity};
use crate::engine::Engine;
use crate::error::BadInput;

/// `hostmax doctor`'s JSON root.
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    /// [`hostmax_aggregate::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The disks checked, in the order given.
    pub devices: Vec<String>,
    /// Every finding, most harmful first.
    pub findings: Vec<Finding>,
    /// How many findings are harmful or warnings.
    pub harmful: usize,
    /// How many findings are warnings.
    pub warnings: usize,
    /// What hostmax's worker loop issued per CPU with io_uring NOPs and no device; absent
    /// with `--ceiling-runtime 0s`, a stand-in tree, or no io_uring.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_generator_ceiling: Option<hostmax_engine::IssueCeiling>,
}

/// The whole disks named by `--devices` (or every disk with a queue map).
fn disks_of(root: &SysRoot, devices: &[OsString]) -> Result<Vec<String>, BadInput> {
    if devices.is_empty() {
        return Ok(checks::all_disks(root));
    }
    let targets = crate::devices::resolve_targets(&crate::devices::expand_device_args(devices)?)?;
    let mut disks = Vec::new();
    for t in &targets {
        let Some(name) = &t.kernel_name else {
            return Err(BadInput(format!(
                "{}: not a block device; doctor checks block devices' settings, give /dev/... paths",
                t.path.display()
            )));
        };
        let disk = root.sysfs.whole_disk(name);
        if !disks.contains(&disk) {
            disks.push(disk);
        }
    }
    Ok(disks)
}

/// The doctor's table for people.
pub fn render(findings: &[Finding], disks: &[String]) -> String {
    let mut out = format!(
        "hostmax doctor: {} device{} and the host, most harmful first\n",
        disks.len(),
        if disks.len() == 1 { "" } else { "s" }
    );
    let problems: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.severity != Severity::Ok)
        .collect();
    // Devices with the same finding share one entry (20 volumes, one line each).
    let mut groups: Vec<(&Finding, Vec<&str>)> = Vec::new();
    for f in &problems {
        match groups.iter_mut().find(|(g, _)| {
            g.severity == f.severity
                && g.setting == f.setting
                && g.found == f.found
                && g.why == f.why
        }) {
            Some((_, scopes)) => scopes.push(&f.scope),
            None => groups.push((f, vec![&f.scope])),
        }
    }
    for (f, scopes) in &groups {
        out += &format!(
            "{:<8} {:<10} {}: {}\n         why: {}\n",
            f.severity.label(),
            scopes.join(" "),
            f.setting,
            f.found,
            f.why
        );
        if let Some(fix) = &f.fix {
            out += &format!("         fix: {}\n", fix_for_all(fix, scopes));
        }
    }
    let fine: Vec<String> = findings
        .iter()
        .filter(|f| f.severity == Severity::Ok)
        .map(|f| format!("{} {}={}", f.scope, f.setting, f.found))
        .collect();
    if !fine.is_empty() {
        out += &format!("ok: {}\n", fine.join("; "));
    }
    let serious = problems
        .iter()
        .filter(|f| f.severity <= Severity::Warning)
        .count();
    out += &if serious == 0 {
        "nothing here holds a host-maximum test back\n".to_string()
    } else {
        format!(
            "{serious} setting{} may hold a host-maximum test back\n",
            if serious == 1 { "" } else { "s" }
        )
    };
    out
}

/// `fix` (written for the first of `scopes`) as one command for all of them.
fn fix_for_all(fix: &str, scopes: &[&str]) -> String {
    let first = format!("/sys/block/{}/", scopes[0]);
    if scopes.len() == 1 || !fix.contains(&first) {
        return fix.to_string();
    }
    format!(
        "for d in {}; do {}; done",
        scopes.join(" "),
        fix.replace(&first, "/sys/block/$d/")
    )
}

/// The doctor's line for the load generator's ceiling ([`hostmax_engine::measure_issue_ceiling`]).
fn ceiling_finding(
    measured: &Result<hostmax_engine::IssueCeiling, hostmax_engine::EngineError>,
) -> Finding {
    let found = match measured {
        Ok(c) => format!(
            "{:.0} I/Os/s per CPU (lowest of {}; {} ns of CPU per I/O), {:.0} on all at once: io_uring NOPs through hostmax's worker loop, depth {}, {:.1} s",
            c.lowest_per_cpu(),
            c.cpus.len(),
            c.cpu_ns_per_io.map_or("-".to_string(), |ns| format!("{ns:.0}")),
            c.total_per_sec(),
            c.iodepth,
            c.measured_secs
        ),
        Err(e) => format!("not measured: {e}"),
    };
    Finding {
        scope: "host".into(),
        setting: "load generator ceiling".into(),
        found,
        severity: Severity::Info,
        why: "the most I/Os a second hostmax can issue from these CPUs whatever the storage (real I/O costs more CPU than a NOP): a host or volume promising near this would measure the load generator, not the storage; a run's report gives its own CPU per I/O (load_generator.cpu_ns_per_io) to set beside the ns per I/O here: the nearer they are, the more of the run's CPU was the loop's own".into(),
        fix: None,
    }
}

/// Runs `hostmax doctor`; returns the exit code (0: the doctor only reports).
pub fn run(engine: &dyn Engine, args: &DoctorArgs) -> anyhow::Result<i32> {
    let dir = args.sysroot.clone().unwrap_or_else(|| PathBuf::from("/"));
    if !dir.is_dir() {
        return Err(BadInput(format!(
            "--sysroot {}: not a directory; give a tree holding sys/ and proc/",
            dir.display()
        ))
        .into());
    }
    let root = SysRoot::at(dir);
    // The workload the test will use, against the engine's ranges: its depth, jobs and
    // buffers are then the engine's own figures of it.
    let workload = hostmax_engine::Workload::default()
        .with_pattern(args.rw)
        .with_iodepth(args.iodepth)
        .with_numjobs(args.numjobs)
        .with_block_size(u32::try_from(args.bs).unwrap_or(u32::MAX));
    workload.check().map_err(|e| BadInput::from(&e))?;
    let outputs = crate::output::export::Outputs::<DoctorReport>::new()
        .declare(args.json.as_deref(), crate::output::json::JsonReport)?;
    let disks = disks_of(&root, &args.devices)?;
    let cpus = args.cpus.as_ref().map(|c| c.0.clone());
    let mut findings = diagnose(
        engine,
        &root,
        &disks,
        &shape(&workload, cpus.as_deref(), args.iopoll),
    );
    let mut ceiling = None;
    if root.is_live() && !args.ceiling_runtime.is_zero() {
        let measured = engine.issue_ceiling(
            &hostmax_engine::CeilingConfig::default()
                .with_cpus(cpus)
                .with_iodepth(args.iodepth)
                .with_runtime(args.ceiling_runtime),
        );
        if let Err(hostmax_engine::EngineError::InvalidCpus(e)) = &measured {
            return Err(BadInput::from(e).into());
        }
        findings.push(ceiling_finding(&measured));
        findings.sort_by_key(|f| f.severity);
        ceiling = measured.ok();
    }
    crate::output::destination::print_beside_json(&render(&findings, &disks), outputs.json());
    let report = DoctorReport {
        schema_version: hostmax_aggregate::SCHEMA_VERSION,
        harmful: findings
            .iter()
            .filter(|f| f.severity == Severity::Harmful)
            .count(),
        warnings: findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count(),
        devices: disks,
        findings,
        load_generator_ceiling: ceiling,
    };
    outputs.write(&report)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis::checks::RunShape;
    use crate::diagnosis::ring_findings;
    use crate::engine::fake::{FakeCall, FakeEngine};
    use crate::test_support::ScratchDir;

    /// Writes `text` at `rel` under `root`, making the directories.
    fn put(root: &std::path::Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("{text}\n")).unwrap();
    }

    /// A stand-in host whose every setting is wrong for a host-maximum test: an NVMe
    /// namespace with two queues on node 1, its queue 0 interrupt on a CPU of queue 1.
    fn bad_host(root: &std::path::Path) {
        let q = "sys/block/nvme0n1/queue";
        for (file, text) in [
            ("scheduler", "[mq-deadline] kyber none"),
            ("rq_affinity", "0"),
            ("nr_requests", "16"),
            ("nomerges", "0"),
            ("add_random", "1"),
            ("iostats", "1"),
            ("write_cache", "write through"),
            ("rotational", "0"),
            ("io_poll", "0"),
            ("wbt_lat_usec", "2000"),
        ] {
            put(root, &format!("{q}/{file}"), text);
        }
        put(root, "sys/module/nvme/parameters/poll_queues", "0");
        put(root, "sys/block/nvme0n1/size", "2097152");
        put(root, "sys/block/nvme0n1/mq/0/cpu_list", "0, 1");
        put(root, "sys/block/nvme0n1/mq/1/cpu_list", "2, 3");
        put(root, "sys/block/nvme0n1/device/device/numa_node", "1");
        put(root, "sys/devices/system/node/node1/cpulist", "2-3");
        put(
            root,
            "proc/interrupts",
            "           CPU0       CPU1\n 40:  1 2  PCI-MSIX  0-edge  nvme0q0\n 41:  5 6  PCI-MSIX  1-edge  nvme0q1\n 42:  5 6  PCI-MSIX  2-edge  nvme0q2",
        );
        put(root, "proc/irq/41/effective_affinity_list", "3");
        put(root, "proc/irq/42/effective_affinity_list", "2");
        put(root, "proc/sys/kernel/io_uring_disabled", "2");
        put(
            root,
            "sys/kernel/mm/transparent_hugepage/enabled",
            "always madvise [never]",
        );
        put(
            root,
            "proc/self/limits",
            "Limit                     Soft Limit           Hard Limit           Units\nMax locked memory         65536                65536                bytes",
        );
        put(root, "proc/4242/comm", "irqbalance");
        for cpu in 0..2 {
            let base = format!("sys/devices/system/cpu/cpu{cpu}");
            put(
                root,
                &format!("{base}/cpufreq/scaling_governor"),
                "powersave",
            );
            put(root, &format!("{base}/cpuidle/state0/name"), "POLL");
            put(root, &format!("{base}/cpuidle/state0/latency"), "0");
            put(root, &format!("{base}/cpuidle/state1/name"), "C6");
            put(root, &format!("{base}/cpuidle/state1/latency"), "133");
            put(root, &format!("{base}/cpuidle/state1/disable"), "0");
        }
    }

    fn shape_on(cpus: &[usize]) -> RunShape {
        RunShape {
            workload: hostmax_engine::Workload::default().with_iodepth(32),
            cpus: cpus.to_vec(),
            root: false,
            iopoll: false,
        }
    }

    fn find<'a>(findings: &'a [Finding], setting: &str) -> &'a Finding {
        findings
            .iter()
            .find(|f| f.setting == setting)
            .unwrap_or_else(|| panic!("no {setting} in {findings:#?}"))
    }

    #[test]
    fn a_stand_in_host_with_every_setting_wrong_is_diagnosed_most_harmful_first() {
        let dir = ScratchDir::new("doctor-bad");
        bad_host(&dir.0);
        let root = SysRoot::at(&dir.0);
        assert_eq!(checks::all_disks(&root), vec!["nvme0n1".to_string()]);
        let findings = diagnose(
            &FakeEngine::new(),
            &root,
            &["nvme0n1".into()],
            &shape_on(&[0, 1]),
        );
        assert!(
            findings.windows(2).all(|w| w[0].severity <= w[1].severity),
            "{findings:#?}"
        );
        let expect = [
            ("scheduler", "mq-deadline", Severity::Harmful),
            ("nr_requests", "16", Severity::Harmful),
            ("numa node", "device on node 1", Severity::Harmful),
            ("kernel.io_uring_disabled", "2", Severity::Harmful),
            ("memlock limit", "64 KiB", Severity::Harmful),
            ("rq_affinity", "0", Severity::Warning),
            ("add_random", "1", Severity::Warning),
            (
                "irq affinity vs queue map",
                "queue 0 (CPUs 0-1) interrupts CPU 3 (IRQ 41)",
                Severity::Warning,
            ),
            ("transparent_hugepage", "never", Severity::Warning),
            ("irqbalance", "running", Severity::Warning),
            ("cpu governor", "powersave on 2 CPUs", Severity::Warning),
            ("cpu idle states", "C6 (133 us)", Severity::Warning),
            ("nomerges", "0", Severity::Info),
            ("iostats", "1", Severity::Info),
            (
                "poll queues",
                "io_poll 0, nvme.poll_queues 0",
                Severity::Info,
            ),
            ("wbt_lat_usec", "2000", Severity::Info),
            ("write_cache", "write through", Severity::Info),
        ];
        for (setting, found, severity) in expect {
            let f = find(&findings, setting);
            assert!(f.found.starts_with(found), "{f:#?}");
            assert_eq!(f.severity, severity, "{f:#?}");
            assert!(!f.why.is_empty());
            if severity <= Severity::Warning {
                assert!(f.fix.is_some(), "{f:#?}");
            }
        }
        // Queue 1's interrupt is on its own CPUs: only queue 0 is named.
        assert!(!find(&findings, "irq affinity vs queue map")
            .found
            .contains("queue 1"));
        assert_eq!(
            find(&findings, "scheduler").fix.as_deref(),
            Some("echo none > /sys/block/nvme0n1/queue/scheduler")
        );
        assert_eq!(
            find(&findings, "nr_requests").fix.as_deref(),
            Some("echo 256 > /sys/block/nvme0n1/queue/nr_requests")
        );
        // No kernel probe against a stand-in tree.
        assert!(findings.iter().all(|f| f.setting != "io_uring features"));
        let text = render(&findings, &["nvme0n1".into()]);
        assert!(text.starts_with("hostmax doctor: 1 device"), "{text}");
        assert!(text.contains("12 settings may hold"), "{text}");
    }

    #[test]
    fn a_device_without_poll_queues_is_harmful_to_a_polled_run_only() {
        let dir = ScratchDir::new("doctor-poll");
        bad_host(&dir.0);
        put(&dir.0, "sys/block/loop3/queue/io_poll", "0");
        let root = SysRoot::at(&dir.0);
        let polled = RunShape {
            iopoll: true,
            ..shape_on(&[0, 1])
        };
        let findings = checks::device_findings(&root, "nvme0n1", &polled);
        let f = find(&findings, "poll queues");
        assert_eq!(f.severity, Severity::Harmful, "{f:#?}");
        assert!(
            f.fix
                .as_deref()
                .is_some_and(|fix| fix.starts_with("nvme.poll_queues=N on the kernel command line")),
            "{f:#?}"
        );
        // A loop device has no poll queues and nothing gives it some: no fix to offer.
        let looped = checks::device_findings(&root, "loop3", &polled);
        let f = find(&looped, "poll queues");
        assert_eq!(
            (f.found.as_str(), f.severity),
            ("io_poll 0", Severity::Harmful)
        );
        assert_eq!(f.fix, None);
        put(&dir.0, "sys/block/nvme0n1/queue/io_poll", "1");
        let f = checks::device_findings(&root, "nvme0n1", &polled)
            .into_iter()
            .find(|f| f.setting == "poll queues")
            .unwrap();
        assert_eq!(f.severity, Severity::Ok, "{f:#?}");
    }

    #[test]
    fn requests_and_pinned_buffers_are_judged_on_the_whole_workload_numjobs_included() {
        let dir = ScratchDir::new("doctor-numjobs");
        bad_host(&dir.0);
        put(&dir.0, "sys/block/nvme0n1/queue/nr_requests", "64");
        put(
            &dir.0,
            "proc/self/limits",
            "Limit                     Soft Limit           Hard Limit           Units\nMax locked memory         1048576              1048576              bytes",
        );
        let root = SysRoot::at(&dir.0);
        let judged = |workload: hostmax_engine::Workload| {
            let shape = RunShape {
                workload,
                ..shape_on(&[0, 1])
            };
            let mut findings = checks::device_findings(&root, "nvme0n1", &shape);
            findings.extend(checks::host_findings(&root, &shape, 1));
            let severity = |setting| find(&findings, setting).severity;
            (severity("nr_requests"), severity("memlock limit"))
        };
        let alone = hostmax_engine::Workload::default().with_iodepth(32);
        // 32 in flight, 128 KiB pinned: both fit.
        assert_eq!(judged(alone.clone()), (Severity::Ok, Severity::Ok));
        // 4 jobs of 32: 128 in flight on 64 requests; 512 KiB pinned still fits 1 MiB.
        let jobs = alone.clone().with_numjobs(Some(4));
        assert_eq!(judged(jobs.clone()), (Severity::Harmful, Severity::Ok));
        // Mixed 8 KiB: a read and a write buffer per I/O, 2 MiB pinned, as the engine counts.
        let mixed = jobs
            .with_pattern(hostmax_engine::IoPattern::RandRw)
            .with_block_size(8192);
        assert_eq!(mixed.buffer_bytes(1), 2 << 20);
        assert_eq!(judged(mixed), (Severity::Harmful, Severity::Harmful));
    }

    #[test]
    fn a_good_host_has_nothing_to_say() {
        let dir = ScratchDir::new("doctor-good");
        let q = "sys/block/nvme0n1/queue";
        for (file, text) in [
            ("scheduler", "[none] mq-deadline"),
            ("rq_affinity", "2"),
            ("nr_requests", "1023"),
            ("nomerges", "2"),
            ("add_random", "0"),
            ("iostats", "0"),
            ("io_poll", "1"),
            ("wbt_lat_usec", "0"),
        ] {
            put(&dir.0, &format!("{q}/{file}"), text);
        }
        put(&dir.0, "sys/block/nvme0n1/mq/0/cpu_list", "0, 1");
        put(&dir.0, "sys/block/nvme0n1/device/device/numa_node", "0");
        put(&dir.0, "sys/devices/system/node/node0/cpulist", "0-1");
        put(&dir.0, "proc/sys/kernel/io_uring_disabled", "0");
        put(
            &dir.0,
            "sys/kernel/mm/transparent_hugepage/enabled",
            "always [madvise] never",
        );
        put(
            &dir.0,
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "performance",
        );
        let root = SysRoot::at(&dir.0);
        let findings = diagnose(
            &FakeEngine::new(),
            &root,
            &["nvme0n1".into()],
            &shape_on(&[0, 1]),
        );
        assert!(
            findings.iter().all(|f| f.severity == Severity::Ok),
            "{findings:#?}"
        );
        assert!(render(&findings, &[]).contains("nothing here holds"));
    }

    #[test]
    fn the_kernel_probe_is_judged() {
        // The fake engine's kernel has every feature.
        let all = FakeEngine::new().kernel_ring().unwrap();
        assert_eq!(ring_findings(Ok(all))[0].severity, Severity::Ok);
        let mut old = all;
        old.defer_taskrun = false;
        let f = &ring_findings(Ok(old))[0];
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.found.starts_with("missing defer_taskrun"), "{f:#?}");
        let none = &ring_findings(Err(std::io::Error::from_raw_os_error(libc::EPERM)))[0];
        assert_eq!(none.severity, Severity::Harmful);
    }

    /// `hostmax doctor --json PATH ARGS` over `engine`, on this host's own sysfs: the report.
    fn doctor_over(engine: &FakeEngine, dir: &ScratchDir, args: &[&str]) -> serde_json::Value {
        let json = dir.0.join("doctor.json").display().to_string();
        let argv = [&["doctor", "--json", &json][..], args].concat();
        let Some(crate::args::Command::Doctor(args)) = crate::args::parsed(&argv).command else {
            panic!("not the doctor: {argv:?}");
        };
        assert_eq!(run(engine, &args).unwrap(), 0);
        crate::test_support::read_json(std::path::Path::new(&json))
    }

    #[test]
    fn the_doctor_reports_the_engines_ceiling_and_ring() {
        let dir = ScratchDir::new("doctor-fake");
        let engine = FakeEngine::new();
        let report = doctor_over(&engine, &dir, &["--cpus", "0", "--ceiling-runtime", "2s"]);
        // The ceiling the engine measured, with the doctor's depth, CPUs and time.
        let calls = engine.calls();
        assert!(
            matches!(&calls[..], [FakeCall::IssueCeiling(c)] if c.cpus == Some(vec![0])
                && c.runtime == std::time::Duration::from_secs(2)),
            "{calls:?}"
        );
        let ceiling = &report["load_generator_ceiling"];
        assert_eq!(ceiling["cpus"][0]["ios_per_sec"], 1e6, "{ceiling}");
        assert_eq!(ceiling["cpu_ns_per_io"], 1000.0, "{ceiling}");
        let finding = |setting: &str| {
            report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["setting"] == setting)
                .unwrap_or_else(|| panic!("no {setting}: {report}"))
                .clone()
        };
        assert!(finding("load generator ceiling")["found"]
            .as_str()
            .unwrap()
            .starts_with("1000000 I/Os/s per CPU"));
        // The kernel the fake engine says it has: every feature.
        let ring = finding("io_uring features");
        assert_eq!(ring["severity"], "ok", "{ring}");
        // With --ceiling-runtime 0s the engine is not asked.
        let engine = FakeEngine::new();
        let report = doctor_over(&engine, &dir, &["--ceiling-runtime", "0s"]);
        assert!(engine.calls().is_empty());
        assert!(report.get("load_generator_ceiling").is_none());
    }

    #[test]
    fn a_host_without_io_uring_is_harmful_and_has_no_ceiling() {
        let dir = ScratchDir::new("doctor-no-ring");
        let engine = FakeEngine::new().without_io_uring();
        let report = doctor_over(&engine, &dir, &["--ceiling-runtime", "1s"]);
        assert!(report.get("load_generator_ceiling").is_none(), "{report}");
        let findings = report["findings"].as_array().unwrap();
        let ring = findings
            .iter()
            .find(|f| f["setting"] == "io_uring features")
            .unwrap();
        assert_eq!(ring["severity"], "harmful", "{ring}");
        assert!(ring["found"]
            .as_str()
            .unwrap()
            .starts_with("no ring could be built"));
        let ceiling = findings
            .iter()
            .find(|f| f["setting"] == "load generator ceiling")
            .unwrap();
        assert!(ceiling["found"]
            .as_str()
            .unwrap()
            .starts_with("not measured: io_uring setup failed"));
    }

    #[test]
    fn one_fix_for_many_devices() {
        assert_eq!(
            fix_for_all(
                "echo 2 > /sys/block/loop1/queue/nomerges",
                &["loop1", "loop2"]
            ),
            "for d in loop1 loop2; do echo 2 > /sys/block/$d/queue/nomerges; done"
        );
        assert_eq!(
            fix_for_all("systemctl stop x", &["host"]),
            "systemctl stop x"
        );
    }
}
