//! Planning a run: a [`PlanRequest`] (what to run, as plain values: from the command line's
//! [`crate::args::RunArgs`], or built by a command such as a suite cell or a verify phase)
//! checked by [`plan_run`] against the targets and the host, before any I/O, into a
//! [`RunPlan`]; and [`BadInput`], the error for input the user can fix (exit code 2).

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hostmax_device::{
    check_write_safety, format_cpu_list, parse_cpu_list, ConsentWords, SystemSources, WriteRefused,
    WriteSafety,
};
use hostmax_engine::{
    ErrorPolicy, IoPattern, Polling, Setting, SettingError, TargetInfo, ThreadLayout, Workload,
    WriteData, MAX_BLOCK_SIZE, MAX_IODEPTH, MIN_BLOCK_SIZE,
};

use crate::devices::{create_files, expand_device_args, resolve_targets_creating};
use crate::output::destination::Destination;
use crate::units::{format_size, human_size};

/// Open files a run needs besides one per target (stdio, rings, eventfds, the report).
pub const RESERVED_FDS: u64 = 32;

/// Input the user can fix: exit code 2, shown as one line naming the thing and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// The engine's write-safety consents as this tool's flags say them.
pub const FLAG_WORDS: ConsentWords = ConsentWords {
    allow_write: "--allow-write",
    force: "--force",
    both: "--allow-write --force",
};

/// A write refusal is bad input, worded with the flags that grant consent.
impl From<WriteRefused> for BadInput {
    fn from(refused: WriteRefused) -> BadInput {
        BadInput(refused.message(&FLAG_WORDS))
    }
}

/// The option of `hostmax` that sets an engine [`Setting`] (`None` for one no option sets):
/// the libraries name their own settings, the command line names its flags.
pub fn option_for(setting: Setting) -> Option<&'static str> {
    Some(match setting {
        Setting::Pattern => "--rw",
        Setting::BlockSize => "--bs",
        Setting::Iodepth => "--iodepth",
        Setting::Rwmixread => "--rwmixread",
        Setting::Runtime => "--runtime",
        Setting::IoLimit => return None,
        Setting::RateIops => "--rate-iops",
        Setting::WorkingSet => "--size",
        Setting::RecordLatency => "--no-latency",
        Setting::CompressPercent => "--buffer-compress-percentage",
        Setting::DedupePercent => "--dedupe-percentage",
        Setting::Verify => "--verify",
        Setting::Targets => "--devices",
        Setting::Cpus => "--cpus",
        Setting::Polling => "--iopoll",
    })
}

impl From<&SettingError> for BadInput {
    /// The engine's refusal, naming the options to change.
    fn from(e: &SettingError) -> Self {
        BadInput(e.naming(option_for))
    }
}

/// Returns early with a [`BadInput`] made from a format string.
#[macro_export]
macro_rules! bad_input {
    ($($arg:tt)*) => {
        return Err($crate::plan::BadInput(format!($($arg)*)).into())
    };
}

/// What to plan, as plain values; messages name the main run's options (`--bs`), which
/// give these values on the command line. [`PlanRequest::default`] is the main run's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanRequest {
    /// Paths and glob patterns of block devices or regular files (fio's `--filename` lists
    /// already split).
    pub devices: Vec<OsString>,
    /// `--rw`.
    pub pattern: IoPattern,
    /// `--rwmixread` (only with randrw; `None`: the default share).
    pub rwmixread: Option<u8>,
    /// `--bs`, bytes.
    pub block_size: u64,
    /// `--iodepth`.
    pub iodepth: u32,
    /// `--size`: working set per device (`None`: the whole device); a path that does not
    /// exist becomes a new file of this size.
    pub working_set: Option<u64>,
    /// `--runtime`.
    pub runtime: Duration,
    /// `--ramp`.
    pub ramp: Duration,
    /// `--cpus` (`None`: every allowed CPU).
    pub cpus: Option<Vec<usize>>,
    /// `--seed` (`None`: the fixed default).
    pub seed: Option<u64>,
    /// `--rate-iops`, per device.
    pub rate_iops: Option<u64>,
    /// `--json` (`-`: standard output).
    pub json: Option<PathBuf>,
    /// `--allow-write`.
    pub allow_write: bool,
    /// `--allow-overlap`.
    pub allow_overlap: bool,
    /// `--force`.
    pub force: bool,
    /// Time I/Os into histograms (`--no-latency` turns it off).
    pub record_latency: bool,
    /// `--on-error`.
    pub on_error: ErrorPolicy,
    /// `--thread-per-device` or the default one thread per CPU.
    pub layout: ThreadLayout,
    /// `--iopoll`, `--sqpoll`.
    pub polling: Polling,
    /// `--buffer-compress-percentage`, `--dedupe-percentage`, `--verify`.
    pub write_data: WriteData,
    /// `--start-at`.
    pub start_at: Option<SystemTime>,
    /// `--hdr-log`.
    pub hdr_log: Option<PathBuf>,
    /// Keep each second's histograms in the JSON (`--no-series-histograms` turns it off).
    pub series_histograms: bool,
}

impl Default for PlanRequest {
    fn default() -> Self {
        let workload = Workload::default();
        PlanRequest {
            devices: Vec::new(),
            pattern: workload.pattern,
            rwmixread: None,
            block_size: workload.block_size.into(),
            iodepth: workload.iodepth,
            working_set: None,
            runtime: workload.runtime,
            ramp: workload.ramp,
            cpus: None,
            seed: None,
            rate_iops: None,
            json: None,
            allow_write: false,
            allow_overlap: false,
            force: false,
            record_latency: true,
            on_error: ErrorPolicy::default(),
            layout: ThreadLayout::default(),
            polling: Polling::default(),
            write_data: WriteData::default(),
            start_at: None,
            hdr_log: None,
            series_histograms: true,
        }
    }
}

/// A run that passed every check: what `hostmax --devices ...` will do.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// Probed, de-duplicated targets, in the order given.
    pub targets: Vec<TargetInfo>,
    /// For each target, the name the user gave it when that is another name for its
    /// canonical path (a `/dev/disk/by-id/...` link): shown beside it in the report.
    pub given_names: Vec<Option<PathBuf>>,
    /// The validated workload.
    pub workload: Workload,
    /// CPUs the workers may use; `None` is every allowed CPU.
    pub cpus: Option<Vec<usize>>,
    /// Where the JSON report goes, if anywhere.
    pub json: Option<Destination>,
    /// `--allow-write` was given (and the write safety checks passed).
    pub allow_write: bool,
    /// Threads per CPU (default) or per device (`--thread-per-device`, for comparisons).
    pub layout: ThreadLayout,
    /// What to do when a device fails an I/O (`--on-error`).
    pub on_error: ErrorPolicy,
    /// `--start-at` and `--hdr-log`.
    pub fleet: crate::fleet::FleetPlan,
    /// `--iopoll` / `--sqpoll`.
    pub polling: Polling,
}

impl RunPlan {
    /// Refuses outputs that would overwrite each other or a target: the run's `--json` and
    /// `--hdr-log` and a command's `extra` ones (option, path), against every target
    /// (`output::destination::check_apart`).
    pub fn check_outputs_apart(&self, extra: &[(&str, &Path)]) -> Result<(), BadInput> {
        let mut outputs = extra.to_vec();
        if let Some(Destination::File(path)) = &self.json {
            outputs.push(("--json", path));
        }
        if let Some(path) = &self.fleet.hdr_log {
            outputs.push(("--hdr-log", path));
        }
        let inputs: Vec<(&str, &Path)> = self
            .targets
            .iter()
            .map(|t| ("--devices", t.path.as_path()))
            .collect();
        crate::output::destination::check_apart(&outputs, &inputs)
    }
}

/// What [`plan_run`] checks against: the host's CPUs, open-file limit and system state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLimits {
    /// Online CPUs (`/sys/devices/system/cpu/online`).
    pub online_cpus: Vec<usize>,
    /// CPUs in this process's affinity mask.
    pub allowed_cpus: Vec<usize>,
    /// Soft and hard `RLIMIT_NOFILE`.
    pub nofile: (u64, u64),
    /// Where the write-safety checks read mounts, swaps and block devices.
    pub sources: SystemSources,
}

impl HostLimits {
    /// Reads this host's limits.
    pub fn read() -> anyhow::Result<HostLimits> {
        use anyhow::Context;
        let sources = SystemSources::default();
        let online = "devices/system/cpu/online";
        let online_path = sources.sysfs.path(online);
        let online_text = sources
            .sysfs
            .read(online)
            .with_context(|| format!("reading {}", online_path.display()))?;
        let online_cpus = parse_cpu_list(&online_text)
            .with_context(|| format!("parsing {}", online_path.display()))?;
        let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
            .context("reading this process's CPU affinity")?;
        let allowed_cpus = (0..nix::sched::CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect();
        let nofile = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .context("reading RLIMIT_NOFILE")?;
        Ok(HostLimits {
            online_cpus,
            allowed_cpus,
            nofile,
            sources,
        })
    }
}

/// Checks a request against the targets and this host and makes the [`RunPlan`]. Nothing is
/// written and no target is opened for writing; every error is a [`BadInput`].
pub fn plan_run(request: &PlanRequest) -> anyhow::Result<RunPlan> {
    let limits = HostLimits::read()?;
    Ok(plan_run_with(request, &limits)?)
}

/// [`plan_run`] against given host limits (for tests).
///
/// Rules beyond the obvious bounds: `--rwmixread` only goes with `--rw randrw`; `--size`
/// must be a whole number of blocks (a multiple of `--bs`) and fit every device; without
/// `--size` the whole device is the working set (a tail shorter than one block is not used),
/// so `--bs` must not exceed any device.
pub fn plan_run_with(request: &PlanRequest, limits: &HostLimits) -> Result<RunPlan, BadInput> {
    if request.force && !request.allow_write {
        return Err(BadInput(
            "--force needs --allow-write: add --allow-write to write devices that carry data, or drop --force"
                .into(),
        ));
    }
    let workload = check_workload(request)?;
    let cpus = match &request.cpus {
        Some(list) => Some(check_cpus(list, limits)?),
        None => None,
    };
    let json = request
        .json
        .as_deref()
        .map(|path| crate::output::destination::JSON.check(path))
        .transpose()?;
    let devices = &request.devices;
    if devices.is_empty() {
        return Err(BadInput(
            "no devices given: add --devices <PATH|PATTERN>... (e.g. --devices '/dev/sd[b-u]'), or run 'hostmax demo'"
                .into(),
        ));
    }
    let candidates = expand_device_args(devices)?;
    let (targets, to_create) = resolve_targets_creating(&candidates, request.working_set)?;
    crate::devices::check_overlaps(&targets, request.allow_overlap, &limits.sources.sysfs)?;
    check_open_files(targets.len(), limits.nofile)?;
    for target in &targets {
        check_fits(&workload, target)?;
    }
    if workload.pattern.writes() {
        check_write_safety(
            &targets,
            WriteSafety {
                allow_write: request.allow_write,
                force: request.force,
            },
            &limits.sources,
        )?;
    }
    let fleet = crate::fleet::plan_fleet(request, workload.runtime)?;
    let mut plan = RunPlan {
        given_names: targets
            .iter()
            .map(|t| crate::devices::given_name(devices, &t.path))
            .collect(),
        targets,
        workload,
        cpus,
        json,
        allow_write: request.allow_write,
        layout: request.layout,
        on_error: request.on_error,
        fleet,
        polling: request.polling,
    };
    plan.check_outputs_apart(&[])?;
    // Every check passed: now a word on the names dropped as repeats (a refusal stays one line).
    for note in crate::devices::duplicate_notes(&candidates) {
        eprintln!("hostmax: {note}");
    }
    // Files hostmax makes itself hold nothing to lose: made last, once every check passed.
    if let (false, Some(size)) = (to_create.is_empty(), request.working_set) {
        for made in create_files(&to_create, size)? {
            if let Some(t) = plan.targets.iter_mut().find(|t| t.path == made.path) {
                *t = made;
            }
        }
    }
    Ok(plan)
}

/// The workload from the request alone, with every check that needs no target.
fn check_workload(request: &PlanRequest) -> Result<Workload, BadInput> {
    let defaults = Workload::default();
    if let Some(mix) = request.rwmixread {
        if request.pattern != IoPattern::RandRw {
            return Err(BadInput(format!(
                "--rwmixread {mix} conflicts with --rw {}: a read share only applies to randrw; drop --rwmixread or use --rw randrw",
                request.pattern
            )));
        }
    }
    let bs = request.block_size;
    if bs == 0 {
        return Err(BadInput(format!(
            "--bs 0: a block size must be at least {}; use e.g. --bs 4k",
            format_size(MIN_BLOCK_SIZE.into())
        )));
    }
    if bs < MIN_BLOCK_SIZE.into() || bs > MAX_BLOCK_SIZE.into() {
        return Err(BadInput(format!(
            "--bs {} is out of range: use {} to {}",
            format_size(bs),
            format_size(MIN_BLOCK_SIZE.into()),
            format_size(MAX_BLOCK_SIZE.into())
        )));
    }
    if !bs.is_multiple_of(u64::from(MIN_BLOCK_SIZE)) {
        return Err(BadInput(format!(
            "--bs {bs} is not a multiple of {MIN_BLOCK_SIZE} bytes; use e.g. {} or {}",
            bs / 512 * 512,
            (bs / 512 + 1) * 512
        )));
    }
    if request.iodepth == 0 || request.iodepth > MAX_IODEPTH {
        return Err(BadInput(format!(
            "--iodepth {} is out of range: use 1 to {MAX_IODEPTH}",
            request.iodepth
        )));
    }
    if let Some(size) = request.working_set {
        if size == 0 {
            return Err(BadInput(
                "--size 0: the working set must hold at least one block; give e.g. --size 1g, or leave it out for the whole device"
                    .into(),
            ));
        }
        if size < bs {
            return Err(BadInput(format!(
                "--bs {} is larger than --size {}: the working set must hold at least one block",
                format_size(bs),
                format_size(size)
            )));
        }
        if size % bs != 0 {
            return Err(BadInput(format!(
                "--size {} is not a multiple of --bs {}: the working set is whole blocks; use {} or {}",
                format_size(size),
                format_size(bs),
                format_size(size / bs * bs),
                format_size(size / bs * bs + bs)
            )));
        }
    }
    if request.runtime.is_zero() {
        return Err(BadInput(
            "--runtime 0: the measured time must be positive; give e.g. --runtime 30s".into(),
        ));
    }
    if request.rate_iops == Some(0) {
        return Err(BadInput(
            "--rate-iops 0 would do no I/O; give a positive cap or leave it out".into(),
        ));
    }
    Ok(Workload {
        pattern: request.pattern,
        rwmixread: request.rwmixread.unwrap_or(defaults.rwmixread),
        // Checked above to be at most MAX_BLOCK_SIZE, which is a u32.
        block_size: u32::try_from(bs).unwrap_or(MAX_BLOCK_SIZE),
        iodepth: request.iodepth,
        working_set: request.working_set,
        runtime: request.runtime,
        ramp: request.ramp,
        seed: request.seed.unwrap_or(defaults.seed),
        rate_iops: request.rate_iops,
        record_latency: request.record_latency,
        io_limit: None,
        write_data: request.write_data,
    })
}

/// Checks that the workload fits one probed target.
fn check_fits(workload: &Workload, target: &TargetInfo) -> Result<(), BadInput> {
    let bs = u64::from(workload.block_size);
    let lbs = u64::from(target.logical_block_size.max(1));
    let path = target.path.display();
    if bs % lbs != 0 {
        let down = bs / lbs * lbs;
        let up = down + lbs;
        let suggestion = if down >= u64::from(MIN_BLOCK_SIZE) {
            format!("{} or {}", format_size(down), format_size(up))
        } else {
            format_size(up)
        };
        return Err(BadInput(format!(
            "--bs {} is not a multiple of the logical block size {lbs} of {path}; use e.g. {suggestion}",
            format_size(bs)
        )));
    }
    match workload.working_set {
        Some(size) if size > target.size => Err(BadInput(format!(
            "--size {} is larger than {path} ({}); use at most --size {}, or leave it out for the whole device",
            format_size(size),
            human_size(target.size),
            format_size(target.size / bs * bs)
        ))),
        Some(size) if size % lbs != 0 => Err(BadInput(format!(
            "--size {} is not a multiple of the logical block size {lbs} of {path}",
            format_size(size)
        ))),
        None if bs > target.size => Err(BadInput(format!(
            "--bs {} is larger than {path} ({}); use a smaller --bs",
            format_size(bs),
            human_size(target.size)
        ))),
        _ => Ok(()),
    }
}

/// Checks `--cpus` against the online CPUs and this process's affinity mask.
fn check_cpus(cpus: &[usize], limits: &HostLimits) -> Result<Vec<usize>, BadInput> {
    let offline: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !limits.online_cpus.contains(c))
        .collect();
    if !offline.is_empty() {
        return Err(BadInput(format!(
            "--cpus: CPU {} not online on this host (online: {}); pick from those",
            format_cpu_list(&offline),
            format_cpu_list(&limits.online_cpus)
        )));
    }
    let forbidden: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !limits.allowed_cpus.contains(c))
        .collect();
    if !forbidden.is_empty() {
        return Err(BadInput(format!(
            "--cpus: CPU {} online but outside this process's affinity mask (allowed: {}); pick from those or widen it (taskset, cgroup cpuset)",
            format_cpu_list(&forbidden),
            format_cpu_list(&limits.allowed_cpus)
        )));
    }
    Ok(cpus.to_vec())
}

/// Checks that the run may open one file per target plus [`RESERVED_FDS`].
fn check_open_files(targets: usize, (soft, hard): (u64, u64)) -> Result<(), BadInput> {
    let needed = targets as u64 + RESERVED_FDS;
    if needed <= soft {
        return Ok(());
    }
    let fix = if needed <= hard {
        format!("raise it with 'ulimit -n {needed}'")
    } else {
        format!("the hard limit is {hard}: raise it (limits.conf, systemd LimitNOFILE) or give fewer devices")
    };
    Err(BadInput(format!(
        "{targets} devices need about {needed} open files but the open-file limit (ulimit -n) is {soft}; {fix}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ScratchDir;

    fn limits() -> HostLimits {
        HostLimits {
            online_cpus: vec![0, 1, 2, 3],
            allowed_cpus: vec![0, 1, 2],
            nofile: (1024, 4096),
            sources: SystemSources::default(),
        }
    }

    fn parse(argv: &[&str]) -> Result<PlanRequest, clap::Error> {
        use clap::Parser;
        crate::args::Cli::try_parse_from(std::iter::once("hostmax").chain(argv.iter().copied()))
            .map(|c| c.run.request())
    }

    fn plan(argv: &[&str]) -> Result<RunPlan, BadInput> {
        plan_run_with(&parse(argv).expect("parses"), &limits())
    }

    fn plan_err(argv: &[&str]) -> String {
        let err = plan(argv).expect_err("should be refused").0;
        assert!(!err.contains('\n'), "{err}");
        err
    }

    #[test]
    fn defaults_match_the_issue() {
        let dir = ScratchDir::new("defaults");
        let f = dir.file("a", 1 << 20).display().to_string();
        let plan = plan(&["--devices", &f]).unwrap();
        let w = &plan.workload;
        assert_eq!(w.pattern, IoPattern::RandRead);
        assert_eq!(w.block_size, 4096);
        assert_eq!(w.iodepth, 32);
        assert_eq!(w.working_set, None);
        assert_eq!(w.runtime, Duration::from_secs(30));
        assert_eq!(w.ramp, Duration::from_secs(5));
        assert_eq!(w.rwmixread, 50);
        assert!(w.record_latency);
        assert_eq!(plan.cpus, None);
        assert_eq!(plan.json, None);
        assert_eq!(plan.targets.len(), 1);
    }

    #[test]
    fn every_option_reaches_the_plan() {
        let dir = ScratchDir::new("options");
        let a = dir.file("a", 8 << 20).display().to_string();
        let b = dir.file("b", 8 << 20).display().to_string();
        let json = dir.0.join("r.json");
        let got = plan(&[
            "--devices",
            &a,
            "--devices",
            &b,
            &a,
            "--rw",
            "randrw",
            "--rwmixread",
            "70%",
            "--bs",
            "64KiB",
            "--iodepth",
            "8",
            "--size",
            "4m",
            "--runtime",
            "1500ms",
            "--ramp",
            "0",
            "--cpus",
            "1-2,0",
            "--seed",
            "0x10",
            "--rate-iops",
            "5k",
            "--json",
            json.to_str().unwrap(),
            "--allow-write",
            "--no-latency",
        ])
        .unwrap();
        let w = &got.workload;
        assert_eq!(got.targets.len(), 2);
        assert_eq!((w.pattern, w.rwmixread), (IoPattern::RandRw, 70));
        assert_eq!((w.block_size, w.iodepth), (64 << 10, 8));
        assert_eq!(w.working_set, Some(4 << 20));
        assert_eq!(
            (w.runtime, w.ramp),
            (Duration::from_millis(1500), Duration::ZERO)
        );
        assert_eq!((w.seed, w.rate_iops), (16, Some(5000)));
        assert!(!w.record_latency && got.allow_write);
        assert_eq!(got.cpus, Some(vec![0, 1, 2]));
        assert_eq!(got.json, Some(Destination::File(json)));
        let stdout = plan(&["--devices", &a, "--json", "-"]).unwrap();
        assert_eq!(stdout.json, Some(Destination::Stdout));
    }

    #[test]
    fn workload_rules_name_the_option_and_the_fix() {
        let dir = ScratchDir::new("rules");
        let f = dir.file("f", 1 << 20).display().to_string();
        let cases: &[(&[&str], &str)] = &[
            (&["--bs", "0"], "--bs 0"),
            (&["--bs", "256"], "out of range"),
            (&["--bs", "16m"], "out of range"),
            (&["--bs", "3000"], "2560 or 3072"),
            (&["--bs", "2m"], "larger than"),
            (&["--rwmixread", "30"], "conflicts with --rw randread"),
            (
                &["--rw", "write", "--rwmixread", "30"],
                "conflicts with --rw write",
            ),
            (&["--runtime", "0"], "--runtime 0"),
            (&["--size", "0"], "--size 0"),
            (&["--size", "2m"], "larger than"),
            (&["--size", "6k"], "use 4k or 8k"),
            (&["--size", "2k"], "larger than --size 2k"),
            (&["--cpus", "9"], "CPU 9 not online"),
            (&["--cpus", "2-3"], "CPU 3 online but outside"),
            (
                &["--json", "/nonexistent-dir/x.json"],
                "/nonexistent-dir does not exist",
            ),
            (&["--json", "/dev/shm"], "is a directory"),
            (&["--json", "/dev/null"], "not a regular file"),
        ];
        for (extra, expected) in cases {
            let mut argv = vec!["--devices", f.as_str()];
            argv.extend_from_slice(extra);
            let err = plan_err(&argv);
            assert!(err.contains(expected), "{argv:?}: {err}");
        }
        assert!(plan_err(&[]).contains("no devices"));
        // Callers that build RunArgs themselves get the same bounds.
        let mut args = parse(&["--devices", &f]).unwrap();
        args.iodepth = 0;
        let err = plan_run_with(&args, &limits()).unwrap_err().0;
        assert!(
            err.contains("--iodepth 0 is out of range: use 1 to 4096"),
            "{err}"
        );
        let sized = plan(&["--devices", &f, "--size", "512k", "--bs", "512k"]).unwrap();
        assert_eq!(sized.workload.working_set, Some(512 << 10));
    }

    #[test]
    fn too_many_devices_for_the_open_file_limit() {
        let dir = ScratchDir::new("nofile");
        let files: Vec<String> = (0..4)
            .map(|i| dir.file(&format!("f{i}"), 1 << 20).display().to_string())
            .collect();
        let mut argv = vec!["--devices"];
        argv.extend(files.iter().map(String::as_str));
        let args = parse(&argv).unwrap();
        let tight = HostLimits {
            nofile: (RESERVED_FDS + 3, RESERVED_FDS + 100),
            ..limits()
        };
        let err = plan_run_with(&args, &tight).unwrap_err().0;
        assert!(
            err.contains("4 devices") && err.contains("ulimit -n 36"),
            "{err}"
        );
        let hard = HostLimits {
            nofile: (RESERVED_FDS, RESERVED_FDS),
            ..limits()
        };
        let err = plan_run_with(&args, &hard).unwrap_err().0;
        assert!(err.contains("hard limit"), "{err}");
        let roomy = HostLimits {
            nofile: (RESERVED_FDS + 4, RESERVED_FDS + 4),
            ..limits()
        };
        assert_eq!(plan_run_with(&args, &roomy).unwrap().targets.len(), 4);
    }
}
