//! Planning a run: a [`PlanRequest`] (what to run, as plain values: from the command line's
//! [`crate::args::RunArgs`], or built by a command such as a suite cell or a verify phase)
//! checked by [`plan_run`] against the targets and the host, before any I/O, into a
//! [`RunPlan`]. Its refusals are [`BadInput`]s. The fleet options of a run are
//! [`fleet::FleetPlan`]; [`start_at`] waits for `--start-at`.

pub mod fleet;
pub mod identity;
pub mod start_at;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hostmax_device::{
    check_write_safety, format_cpu_list, parse_cpu_list, SystemSources, WriteSafety,
};
use hostmax_engine::{
    ErrorPolicy, IoPattern, Misfit, Polling, TargetInfo, ThreadLayout, Workload, WriteData,
    MAX_BLOCK_SIZE, MIN_BLOCK_SIZE,
};

use crate::devices::{create_files, expand_device_args, resolve_targets_creating};
use crate::error::BadInput;
use crate::units::{format_size, human_size};

/// Open files a run needs besides one per target (stdio, rings, eventfds, the report).
pub const RESERVED_FDS: u64 = 32;

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
    /// `--numjobs`: workers per device, each at `iodepth` (`None`: placed by queue, the
    /// device's `iodepth` split among its workers).
    pub numjobs: Option<u32>,
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
    /// `--arrival`: how the offered rate's I/Os arrive.
    pub arrival: hostmax_engine::Arrival,
    /// The files the command writes (its declared outputs, as option and absolute path):
    /// refused as targets, whose data the run would read or write.
    pub outputs: Vec<(&'static str, PathBuf)>,
    /// `--allow-write`.
    pub allow_write: bool,
    /// `--allow-overlap`.
    pub allow_overlap: bool,
    /// `--force`.
    pub force: bool,
    /// Time I/Os into histograms (`--no-latency` turns it off).
    pub record_latency: bool,
    /// `--complete-batch`.
    pub complete_batch: u32,
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
            numjobs: None,
            working_set: None,
            runtime: workload.runtime,
            ramp: workload.ramp,
            cpus: None,
            seed: None,
            rate_iops: None,
            arrival: hostmax_engine::Arrival::Even,
            outputs: Vec::new(),
            allow_write: false,
            allow_overlap: false,
            force: false,
            record_latency: true,
            complete_batch: workload.complete_batch,
            on_error: ErrorPolicy::default(),
            layout: ThreadLayout::default(),
            polling: Polling::default(),
            write_data: WriteData::default(),
            start_at: None,
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
    /// `--allow-write` was given (and the write safety checks passed).
    pub allow_write: bool,
    /// Threads per CPU (default) or per device (`--thread-per-device`, for comparisons).
    pub layout: ThreadLayout,
    /// What to do when a device fails an I/O (`--on-error`).
    pub on_error: ErrorPolicy,
    /// `--start-at` and the per-second histograms.
    pub fleet: fleet::FleetPlan,
    /// `--iopoll` / `--sqpoll`.
    pub polling: Polling,
    /// What each target's path led to when planned: every run checks it again first
    /// ([`identity::check_unchanged`]).
    pub identities: Vec<identity::PlannedIdentity>,
    /// The kernel's counts around the write-safety probe, for the first run's count
    /// (default: none, the run counts from its own start).
    pub kernel_window: crate::kernel_count::ProbeWindow,
}

impl RunPlan {
    /// Refuses outputs (option, path) that are one of the run's targets
    /// (`output::destination::check_apart`): writing one would replace what the run measures.
    pub fn check_outputs_apart(&self, outputs: &[(&str, &Path)]) -> Result<(), BadInput> {
        let inputs: Vec<(&str, &Path)> = self
            .targets
            .iter()
            .map(|t| ("--devices", t.path.as_path()))
            .collect();
        crate::output::destination::check_apart(outputs, &inputs)
    }
}

/// What [`plan_run`] checks against: the host's CPUs, open-file limit and system state.
#[derive(Debug, Clone)]
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
    /// Reads this host's limits; the write-safety checks will read the system through
    /// `sources` (the engine's).
    pub fn read(sources: SystemSources) -> anyhow::Result<HostLimits> {
        use anyhow::Context;
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

/// Checks a request against the targets and this host and makes the [`RunPlan`], the
/// write-safety checks reading the system through `sources` (the engine's). Nothing is
/// written and no target is opened for writing; every error is a [`BadInput`].
pub fn plan_run(request: &PlanRequest, sources: SystemSources) -> anyhow::Result<RunPlan> {
    let limits = HostLimits::read(sources)?;
    plan_run_with(request, &limits)
}

/// [`plan_run`] against given host limits (for tests).
///
/// Rules beyond the obvious bounds: `--rwmixread` only goes with `--rw randrw`; `--size`
/// must be a whole number of blocks (a multiple of `--bs`) and fit every device; without
/// `--size` the whole device is the working set (a tail shorter than one block is not used),
/// so `--bs` must not exceed any device.
pub fn plan_run_with(request: &PlanRequest, limits: &HostLimits) -> anyhow::Result<RunPlan> {
    if request.force && !request.allow_write {
        return Err(BadInput(
            "--force needs --allow-write: add --allow-write to write devices that carry data, or drop --force"
                .into(),
        ).into());
    }
    let workload = check_workload(request)?;
    let cpus = match &request.cpus {
        Some(list) => Some(check_cpus(list, limits)?),
        None => None,
    };
    let devices = &request.devices;
    if devices.is_empty() {
        return Err(crate::error::no_devices().into());
    }
    let candidates = expand_device_args(devices)?;
    let (targets, to_create) = resolve_targets_creating(&candidates, request.working_set)?;
    crate::devices::check_overlaps(&targets, request.allow_overlap, &limits.sources.sysfs)?;
    check_open_files(targets.len(), limits.nofile)?;
    for target in &targets {
        check_fits(&workload, target)?;
    }
    // The kernel's count of the first run starts before the safety probe reads the devices.
    let mut kernel_window = crate::kernel_count::ProbeWindow::default();
    if workload.pattern.writes() {
        let before = crate::kernel_count::Snapshot::take(&targets, &limits.sources.sysfs);
        check_write_safety(
            &targets,
            WriteSafety::new(request.allow_write, request.force),
            &limits.sources,
        )
        .map_err(crate::error::refused_write)?;
        let after = crate::kernel_count::Snapshot::take(&targets, &limits.sources.sysfs);
        kernel_window = crate::kernel_count::ProbeWindow::new(before, after);
    }
    let fleet = fleet::plan_fleet(
        request.start_at,
        request.series_histograms,
        workload.runtime,
    )?;
    let mut plan = RunPlan {
        given_names: targets
            .iter()
            .map(|t| crate::devices::given_name(devices, &t.path))
            .collect(),
        targets,
        workload,
        cpus,
        allow_write: request.allow_write,
        layout: request.layout,
        on_error: request.on_error,
        fleet,
        polling: request.polling,
        identities: Vec::new(),
        kernel_window,
    };
    let outputs: Vec<(&str, &Path)> = request
        .outputs
        .iter()
        .map(|(option, path)| (*option, path.as_path()))
        .collect();
    plan.check_outputs_apart(&outputs)?;
    // Every check passed: now a word on the names dropped as repeats (a refusal stays one line).
    for note in crate::devices::duplicate_notes(&candidates) {
        crate::errln!("hostmax: {note}");
    }
    // Files hostmax makes itself hold nothing to lose: made last, once every check passed.
    if let (false, Some(size)) = (to_create.is_empty(), request.working_set) {
        for made in create_files(&to_create, size)? {
            if let Some(t) = plan.targets.iter_mut().find(|t| t.path == made.path) {
                *t = made;
            }
        }
    }
    // Last, so files made just now are recorded as made.
    plan.identities = identity::PlannedIdentity::record(&plan.targets);
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
    let Ok(block_size) = u32::try_from(bs) else {
        // Beyond what the engine's number holds; the engine's range check says the rest.
        return Err(BadInput(format!(
            "--bs {} is out of range: use at most {}",
            format_size(bs),
            format_size(MAX_BLOCK_SIZE.into())
        )));
    };
    let workload = Workload::default()
        .with_pattern(request.pattern)
        .with_rwmixread(request.rwmixread.unwrap_or(defaults.rwmixread))
        .with_block_size(block_size)
        .with_iodepth(request.iodepth)
        .with_numjobs(request.numjobs)
        .with_working_set(request.working_set)
        .with_runtime(request.runtime)
        .with_ramp(request.ramp)
        .with_seed(request.seed.unwrap_or(defaults.seed))
        .with_rate_iops(request.rate_iops)
        .with_arrival(request.arrival)
        .with_record_latency(request.record_latency)
        .with_complete_batch(request.complete_batch)
        .with_io_limit(None)
        .with_write_data(request.write_data);
    // The engine's ranges (block size, depth, jobs and the I/Os they keep in flight, times,
    // rate, data options), named with this command's options.
    workload.check().map_err(|e| BadInput::from(&e))?;
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
    Ok(workload)
}

/// Checks that the workload fits one probed target: the engine's check
/// ([`hostmax_engine::check_fits`]), worded with this command's options.
fn check_fits(workload: &Workload, target: &TargetInfo) -> Result<(), BadInput> {
    let Err(misfit) = hostmax_engine::check_fits(workload, target) else {
        return Ok(());
    };
    let path = target.path.display();
    Err(BadInput(match misfit {
        Misfit::BlockSize {
            block_size,
            logical_block_size,
        } => {
            let (bs, lbs) = (u64::from(block_size), u64::from(logical_block_size));
            let down = bs / lbs * lbs;
            let up = down + lbs;
            let suggestion = if down >= u64::from(MIN_BLOCK_SIZE) {
                format!("{} or {}", format_size(down), format_size(up))
            } else {
                format_size(up)
            };
            format!(
                "--bs {} is not a multiple of the logical block size {lbs} of {path}; use e.g. {suggestion}",
                format_size(bs)
            )
        }
        Misfit::WorkingSetTooLarge {
            working_set,
            target_size,
        } => format!(
            "--size {} is larger than {path} ({}); use at most --size {}, or leave it out for the whole device",
            format_size(working_set),
            human_size(target_size),
            format_size(target_size / u64::from(workload.block_size) * u64::from(workload.block_size))
        ),
        // `--size` below `--bs` is refused before any target is looked at.
        Misfit::WorkingSetBelowBlock { given: true, .. } => misfit.to_string(),
        Misfit::WorkingSetBelowBlock {
            working_set,
            given: false,
            block_size,
        } => format!(
            "--bs {} is larger than {path} ({}); use a smaller --bs",
            format_size(block_size.into()),
            human_size(working_set)
        ),
        // A misfit newer than this match: the engine's own wording.
        _ => misfit.to_string(),
    }))
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
mod tests;
