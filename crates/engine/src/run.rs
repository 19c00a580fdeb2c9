//! Starting a run, watching it, and collecting its result.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use hostmax_device::{Sysfs, TargetInfo};

use crate::op::OpKind;
use crate::placement::{self, Placement, ThreadLayout};
use crate::ring::Polling;
use crate::shared::Shared;
use crate::worker::WorkerTask;
use crate::workload::ErrorPolicy;
use crate::{
    target, DeviceInterval, DeviceResult, EngineError, RunResult, Setting, SettingError, Workload,
};

/// What to run where.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunConfig {
    /// Targets, each driven with its own queue. A device must not be named twice.
    pub targets: Vec<PathBuf>,
    /// The workload every target gets.
    pub workload: Workload,
    /// CPUs the workers may use; `None` is every CPU this process may run on.
    pub cpus: Option<Vec<usize>>,
    /// Whether to send one-second [`DeviceInterval`]s to [`RunHandle::recv_interval`].
    pub live: bool,
    /// Threads per CPU or per device.
    pub layout: ThreadLayout,
    /// What to do when a device fails an I/O.
    pub on_error: ErrorPolicy,
    /// Completion and submission polling; off by default.
    pub polling: Polling,
}

impl RunConfig {
    /// `workload` on `targets` with every other choice at its default: all allowed CPUs, no
    /// live intervals, one thread per CPU ([`ThreadLayout::PerCpu`]), a failing device stops
    /// alone ([`ErrorPolicy::StopDevice`]), no polling.
    pub fn new(targets: Vec<PathBuf>, workload: Workload) -> RunConfig {
        RunConfig {
            targets,
            workload,
            cpus: None,
            live: false,
            layout: ThreadLayout::default(),
            on_error: ErrorPolicy::default(),
            polling: Polling::default(),
        }
    }
}

with_setters!(RunConfig {
    with_targets => targets: Vec<PathBuf>,
    with_workload => workload: Workload,
    with_cpus => cpus: Option<Vec<usize>>,
    with_live => live: bool,
    with_layout => layout: ThreadLayout,
    with_on_error => on_error: ErrorPolicy,
    with_polling => polling: Polling,
});

/// The CPU and plan index of a spawned worker.
type WorkerPlanRef = (usize, usize);

type WorkerOutcome = Result<crate::worker::WorkerOutput, EngineError>;

/// A running run.
pub struct RunHandle {
    targets: Vec<TargetInfo>,
    placement: Placement,
    workload: Workload,
    shared: Arc<Shared>,
    start: Instant,
    /// The wall clock at `start`, for the result's measured window.
    started_wall: SystemTime,
    workers: Vec<(WorkerPlanRef, JoinHandle<WorkerOutcome>)>,
    intervals: Option<std::sync::Mutex<IntervalMerge>>,
    run_id: u64,
}

/// Joins the one-second intervals of a device's workers into one per device and second, so
/// every consumer sees a device's second once, as with one worker.
struct IntervalMerge {
    rx: Receiver<DeviceInterval>,
    /// Shares per target: how many intervals make a device's second.
    parts: Vec<u32>,
    /// Seconds some of a device's workers reported: (device, second) -> sum, reports.
    pending: std::collections::BTreeMap<(usize, i64), (DeviceInterval, u32)>,
}

impl IntervalMerge {
    fn new(rx: Receiver<DeviceInterval>, placement: &Placement) -> IntervalMerge {
        let devices = placement
            .workers
            .iter()
            .flat_map(|w| &w.devices)
            .max()
            .map_or(0, |&d| d + 1);
        IntervalMerge {
            rx,
            parts: (0..devices).map(|d| placement.parts_of(d)).collect(),
            pending: Default::default(),
        }
    }

    fn recv(&mut self, timeout: Duration) -> Option<DeviceInterval> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let interval = match self.rx.recv_timeout(left) {
                Ok(interval) => interval,
                // Every worker is gone: what is left are seconds some share never closed.
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return self.pending.pop_first().map(|(_, (interval, _))| interval);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => return None,
            };
            let parts = self.parts.get(interval.device).copied().unwrap_or(1);
            if parts <= 1 {
                return Some(interval);
            }
            let key = (interval.device, interval.second);
            let entry = match self.pending.entry(key) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert((interval, 1));
                    continue;
                }
                std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            };
            entry.0.absorb(&interval);
            entry.1 += 1;
            if entry.1 >= parts {
                return self.pending.remove(&key).map(|(interval, _)| interval);
            }
        }
    }
}

/// A cheap, cloneable way to stop a run from another thread (a signal handler's task).
#[derive(Clone)]
pub struct StopHandle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for StopHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StopHandle")
    }
}

/// Refuses a device or file named twice, by any path: two workers on one target would
/// write each other's blocks and the run's results could not say which is whose. Block
/// devices compare by device number, files by device and inode (a hard link or a bind
/// mount is another path to the same file). `given` are the paths as named, for the message.
pub fn refuse_duplicate_targets(
    given: &[PathBuf],
    targets: &[TargetInfo],
) -> Result<(), EngineError> {
    use std::os::unix::fs::MetadataExt;
    let mut seen: Vec<((u64, u64), usize)> = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let key = match t.rdev {
            // Device numbers and (dev, inode) pairs cannot collide: a block device's key
            // has u64::MAX where a file's has its filesystem's device.
            Some((major, minor)) => (u64::MAX, libc::makedev(major, minor)),
            None => {
                let meta = std::fs::metadata(&t.path).map_err(|source| EngineError::Open {
                    path: given.get(i).unwrap_or(&t.path).clone(),
                    source,
                })?;
                (meta.dev(), meta.ino())
            }
        };
        if let Some(&(_, first)) = seen.iter().find(|(k, _)| *k == key) {
            let name = |j: usize| given.get(j).unwrap_or(&targets[j].path).clone();
            return Err(EngineError::DuplicateTarget {
                path: name(i),
                first: name(first),
                what: if t.rdev.is_some() { "device" } else { "file" },
            });
        }
        seen.push((key, i));
    }
    Ok(())
}

/// Checks a workload against the engine's limits ([`Workload::check`]) and every target.
pub fn validate(workload: &Workload, targets: &[TargetInfo]) -> Result<(), EngineError> {
    workload.check().map_err(EngineError::InvalidWorkload)?;
    if targets.is_empty() {
        return Err(EngineError::NoTargets);
    }
    for t in targets {
        if let Err(misfit) = check_fits(workload, t) {
            return Err(EngineError::InvalidWorkload(SettingError::new(
                format!("{}: {misfit}", t.path.display()),
                misfit.settings(),
            )));
        }
    }
    Ok(())
}

/// Why a workload does not fit one target ([`check_fits`]): a front end words it with its own
/// options; its `Display` is the engine's wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Misfit {
    /// The block size is not a multiple of the target's logical block size.
    BlockSize {
        /// The workload's block size.
        block_size: u32,
        /// The target's logical block size.
        logical_block_size: u32,
    },
    /// The working set is larger than the target.
    WorkingSetTooLarge {
        /// The workload's working set, bytes.
        working_set: u64,
        /// The target's size, bytes.
        target_size: u64,
    },
    /// The working set (the whole target when the workload gives none) holds no whole block.
    WorkingSetBelowBlock {
        /// The working set, bytes.
        working_set: u64,
        /// Whether the workload gave it (else it is the target's size).
        given: bool,
        /// The workload's block size.
        block_size: u32,
    },
}

impl Misfit {
    /// The settings to change.
    pub fn settings(self) -> &'static [Setting] {
        match self {
            Misfit::BlockSize { .. } => &[Setting::BlockSize],
            Misfit::WorkingSetTooLarge { .. } => &[Setting::WorkingSet],
            Misfit::WorkingSetBelowBlock { .. } => &[Setting::WorkingSet, Setting::BlockSize],
        }
    }
}

impl std::error::Error for Misfit {}

impl std::fmt::Display for Misfit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Misfit::BlockSize {
                block_size,
                logical_block_size: lbs,
            } => write!(
                f,
                "block size {block_size} is not a multiple of its logical block size {lbs}: use a multiple of {lbs}"
            ),
            Misfit::WorkingSetTooLarge {
                working_set,
                target_size,
            } => write!(
                f,
                "working set of {working_set} bytes is larger than the target ({target_size} bytes): give a smaller working set"
            ),
            Misfit::WorkingSetBelowBlock {
                working_set,
                block_size,
                ..
            } => write!(
                f,
                "working set of {working_set} bytes is smaller than one block of {block_size} bytes: give a larger working set or a smaller block size"
            ),
        }
    }
}

/// Checks that `workload` fits `target`: whole logical blocks, a working set within the
/// target that holds at least one block. Every run checks it on every target before any I/O.
pub fn check_fits(workload: &Workload, target: &TargetInfo) -> Result<(), Misfit> {
    let w = workload;
    if !w.block_size.is_multiple_of(target.logical_block_size) {
        return Err(Misfit::BlockSize {
            block_size: w.block_size,
            logical_block_size: target.logical_block_size,
        });
    }
    let working_set = w.working_set.unwrap_or(target.size);
    if working_set > target.size {
        return Err(Misfit::WorkingSetTooLarge {
            working_set,
            target_size: target.size,
        });
    }
    if working_set < u64::from(w.block_size) {
        return Err(Misfit::WorkingSetBelowBlock {
            working_set,
            given: w.working_set.is_some(),
            block_size: w.block_size,
        });
    }
    Ok(())
}

/// Refuses a run whose memory would not fit in the room the process has now
/// (`MemoryRoom::now`: the machine's available memory or, where lower, its memory cgroup's
/// limit, so that the kernel's OOM killer never ends a run with no word): the I/O buffers
/// ([`Workload::buffer_bytes`]) and, with data verification, one byte per block of every
/// target's working set. Checked before anything is allocated, by `prepare` and by a front
/// end that plans several runs (the deepest step of a curve before its first).
pub fn check_memory(workload: &Workload, targets: &[TargetInfo]) -> Result<(), EngineError> {
    check_memory_in(workload, targets, crate::memory::MemoryRoom::now())
}

/// [`check_memory`] against `room` (`None`: unknown, nothing refused).
fn check_memory_in(
    workload: &Workload,
    targets: &[TargetInfo],
    room: Option<crate::memory::MemoryRoom>,
) -> Result<(), EngineError> {
    let Some(room) = room else {
        return Ok(());
    };
    let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
    let buffers = workload.buffer_bytes(targets.len());
    if buffers > room.bytes {
        return Err(EngineError::InvalidWorkload(SettingError::new(
            format!(
                "I/O buffers would need {:.1} GiB ({} targets x {} I/Os in flight x {} bytes, twice for mixed reads and writes) but {}: lower the queue depth or the block size",
                gib(buffers),
                targets.len(),
                workload.in_flight_per_target(),
                workload.block_size,
                room.describe()
            ),
            &[Setting::Iodepth, Setting::BlockSize],
        )));
    }
    let state = verify_state_bytes(workload, targets);
    if state > 0 && state + buffers > room.bytes {
        return Err(EngineError::InvalidWorkload(SettingError::new(
            format!(
                "data verification keeps one byte per block: {:.1} GiB for {} targets at block size {}, with the I/O buffers {:.1} GiB, but {}: use a larger block size or a smaller working set",
                gib(state),
                targets.len(),
                workload.block_size,
                gib(state + buffers),
                room.describe()
            ),
            &[Setting::BlockSize, Setting::WorkingSet],
        )));
    }
    Ok(())
}

/// Bytes of verify state a run keeps ([`crate::WriteData::verify`]): one per block of every
/// target's working set.
pub(crate) fn verify_state_bytes(workload: &Workload, targets: &[TargetInfo]) -> u64 {
    if !workload.write_data.verify {
        return 0;
    }
    targets
        .iter()
        .map(|t| workload.working_set.unwrap_or(t.size) / u64::from(workload.block_size))
        .sum()
}

/// Refuses completion polling ([`crate::Polling::iopoll`]) unless every target is a block
/// device with poll queues
/// (sysfs's `block/DEV/queue/io_poll` = 1): elsewhere every polled I/O fails with EOPNOTSUPP, and a
/// run of nothing but errors is no measurement.
pub(crate) fn check_poll_queues(targets: &[TargetInfo]) -> Result<(), EngineError> {
    let unpollable = lacking(targets, "io_poll", true, |v| v == "1");
    if unpollable.is_empty() {
        return Ok(());
    }
    Err(EngineError::InvalidWorkload(SettingError::new(
        format!(
            "polling for completions needs devices with poll queues (queue/io_poll = 1), and {} {} none (loop devices, regular files and most virtual disks never do; NVMe needs the nvme poll_queues parameter): turn polling off",
            unpollable.join(", "),
            if unpollable.len() == 1 { "has" } else { "have" }
        ),
        &[Setting::Polling],
    )))
}

/// The paths of the targets whose block device's `queue/{attribute}` does not satisfy `has`
/// (or cannot be read); a regular file lacks it when `files_lack`.
fn lacking(
    targets: &[TargetInfo],
    attribute: &str,
    files_lack: bool,
    has: impl Fn(&str) -> bool,
) -> Vec<String> {
    let sysfs = Sysfs::default();
    targets
        .iter()
        .filter(|t| {
            let Some(disk) = t.whole_disk(&sysfs) else {
                return files_lack;
            };
            sysfs
                .value(format!("block/{disk}/queue/{attribute}"))
                .is_none_or(|v| !has(&v))
        })
        .map(|t| t.path.display().to_string())
        .collect()
}

/// Refuses a workload that trims a block device without discard support
/// (sysfs's `block/DEV/queue/discard_max_bytes` = 0): every trim would fail with EOPNOTSUPP.
/// Regular files are trimmed by punching holes, which the I/O itself tells about.
pub(crate) fn check_trim_support(targets: &[TargetInfo]) -> Result<(), EngineError> {
    let cannot = lacking(targets, "discard_max_bytes", false, |v| v != "0");
    if cannot.is_empty() {
        return Ok(());
    }
    Err(EngineError::InvalidWorkload(SettingError::new(
        format!(
            "trimming needs devices that discard (queue/discard_max_bytes > 0), and {} {} not: leave {} out or use a write pattern",
            cannot.join(", "),
            if cannot.len() == 1 { "does" } else { "do" },
            if cannot.len() == 1 { "it" } else { "them" },
        ),
        &[Setting::Pattern],
    )))
}

/// A run whose targets are open (written ones with `O_EXCL`, so nobody can mount or claim
/// them any more) and whose workers have their rings ready, but which has not issued any I/O.
/// The moment for a last safety check; dropping it ends the workers without any I/O.
pub struct PreparedRun {
    /// Always `Some` until `start` takes it.
    handle: Option<RunHandle>,
}

impl PreparedRun {
    /// The probed targets, in the order given.
    pub fn targets(&self) -> &[TargetInfo] {
        &self.handle().targets
    }

    /// Where each target will run.
    pub fn placement(&self) -> &Placement {
        &self.handle().placement
    }

    fn handle(&self) -> &RunHandle {
        self.handle.as_ref().expect("present until start")
    }

    /// Starts the clock: the workers begin I/O now.
    pub fn start(mut self) -> RunHandle {
        let mut handle = self.handle.take().expect("present until start");
        let start = Instant::now();
        handle.start = start;
        handle.started_wall = SystemTime::now();
        handle.shared.begin(start);
        handle
    }
}

impl Drop for PreparedRun {
    fn drop(&mut self) {
        // Not started: release the workers without any I/O and wait for them to exit.
        if let Some(handle) = self.handle.take() {
            handle.shared.gate.open(None);
            for (_, h) in handle.workers {
                let _ = h.join();
            }
        }
    }
}

/// Probes every target, checks the workload against each, places them on CPUs, opens the
/// targets and starts the workers: everything before the first I/O ([`PreparedRun::start`]
/// starts the clock). Returns once every worker has its ring ready; no I/O has been issued.
/// Crate-private: every run goes through [`crate::measure`] and its write-safety checks.
/// `checked` (empty, or one per target in order) is what the safety checks judged: each
/// target must still be that one, and each descriptor is checked against it when opened.
pub(crate) fn prepare(
    config: RunConfig,
    checked: &[TargetInfo],
) -> Result<PreparedRun, EngineError> {
    let targets: Vec<TargetInfo> = config
        .targets
        .iter()
        .map(|p| hostmax_device::probe(p))
        .collect::<Result<_, _>>()?;
    if checked.len() == targets.len() {
        for (then, now) in checked.iter().zip(&targets) {
            if let Some(changed) = hostmax_device::TargetChanged::between(then, now) {
                return Err(changed.into());
            }
        }
    }
    refuse_duplicate_targets(&config.targets, &targets)?;
    validate(&config.workload, &targets)?;
    let allowed = usable_cpus(config.cpus.as_deref())?;
    check_memory(&config.workload, &targets)?;
    if config.polling.iopoll {
        if config.workload.pattern.issues(OpKind::Trim) {
            return Err(EngineError::InvalidWorkload(SettingError::new(
                "polled rings complete reads and writes only, and this workload trims: turn polling off".to_string(),
                &[Setting::Polling, Setting::Pattern],
            )));
        }
        check_poll_queues(&targets)?;
    }
    if config.workload.pattern.issues(OpKind::Trim) {
        check_trim_support(&targets)?;
    }
    let placement = placement::plan(&targets, &config.workload, &allowed, config.layout)?;
    let write = config.workload.pattern.writes();
    // Open everything before starting any thread, so a refusal leaves nothing running; a
    // target's other shares get duplicates of its one descriptor (one O_EXCL claim).
    let files: Vec<std::fs::File> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let judged = if checked.len() == targets.len() {
                &checked[i]
            } else {
                t
            };
            target::open(judged, write)
        })
        .collect::<Result<_, _>>()?;
    launch(config, targets, files, placement, false)
}

/// The CPUs a run may use: `asked`, each checked to be one this process may run on, else
/// every such CPU.
pub(crate) fn usable_cpus(asked: Option<&[usize]>) -> Result<Vec<usize>, EngineError> {
    let online = placement::allowed_cpus()?;
    let Some(cpus) = asked else {
        return Ok(online);
    };
    if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
        return Err(EngineError::InvalidCpus(SettingError::new(
            format!(
                "CPU {bad} is not one this process may run on (allowed: {online:?}): pick from those"
            ),
            &[Setting::Cpus],
        )));
    }
    Ok(cpus.to_vec())
}

/// Starts one worker per CPU of `placement` over the open `files` (one per target) and
/// returns once every ring is ready, before any I/O. With `nops` the rings issue
/// `IORING_OP_NOP`s instead ([`crate::measure_issue_ceiling`]).
pub(crate) fn launch(
    config: RunConfig,
    targets: Vec<TargetInfo>,
    files: Vec<std::fs::File>,
    placement: Placement,
    nops: bool,
) -> Result<PreparedRun, EngineError> {
    let taken_out: Arc<[std::sync::atomic::AtomicBool]> = targets
        .iter()
        .map(|_| std::sync::atomic::AtomicBool::new(false))
        .collect();

    let shared = Arc::new(Shared::new());
    let (tx, rx) = if config.live {
        let (tx, rx) = channel();
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let run_id = crate::data::random_run_id();
    let mut workers = Vec::new();
    for (plan_index, plan) in placement.workers.iter().enumerate() {
        let devices = plan
            .shares
            .iter()
            .map(|&share| {
                let i = share.device;
                let file = files[i].try_clone().map_err(|source| EngineError::Open {
                    path: targets[i].path.clone(),
                    source,
                })?;
                Ok((share, targets[i].clone(), file))
            })
            .collect::<Result<_, EngineError>>()?;
        let task = WorkerTask {
            cpu: plan.cpu,
            devices,
            taken_out: taken_out.clone(),
            workload: config.workload.clone(),
            on_error: config.on_error,
            polling: config.polling,
            shared: shared.clone(),
            intervals: tx.clone(),
            run_id,
            nops,
        };
        let handle = std::thread::Builder::new()
            .name(format!("hostmax-cpu{}", plan.cpu))
            .spawn(move || task.run())
            .map_err(|e| EngineError::Worker {
                cpu: plan.cpu,
                message: format!("cannot start thread: {e}"),
            })?;
        workers.push(((plan.cpu, plan_index), handle));
    }
    drop(tx);
    drop(files);
    let failures = shared.gate.wait_ready(workers.len());
    if let Some(first) = failures.into_iter().next() {
        shared.gate.open(None);
        for (_, h) in workers {
            let _ = h.join();
        }
        return Err(EngineError::Worker {
            cpu: 0,
            message: first,
        });
    }
    Ok(PreparedRun {
        handle: Some(RunHandle {
            targets,
            workload: config.workload,
            shared,
            start: Instant::now(),
            started_wall: SystemTime::now(),
            workers,
            intervals: rx.map(|rx| std::sync::Mutex::new(IntervalMerge::new(rx, &placement))),
            placement,
            run_id,
        }),
    })
}

impl RunHandle {
    /// The probed targets, in the order given.
    pub fn targets(&self) -> &[TargetInfo] {
        &self.targets
    }

    /// Where each target runs.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The instant the workers started.
    pub fn started(&self) -> Instant {
        self.start
    }

    /// Asks the workers to stop submitting; in-flight I/O drains, and the measured window
    /// ends now. A `--verify` read-back in progress (or still to come) ends too, its unread
    /// blocks counted ([`crate::NotReadBack::interrupted`]).
    pub fn stop(&self) {
        self.shared.stop();
    }

    /// A handle that can stop the run from elsewhere.
    pub fn stopper(&self) -> StopHandle {
        StopHandle {
            shared: self.shared.clone(),
        }
    }

    /// Whether every worker has finished.
    pub fn is_finished(&self) -> bool {
        self.workers.iter().all(|(_, h)| h.is_finished())
    }

    /// The next one-second sample, waiting at most `timeout`; `None` on timeout, when the run
    /// was started without `live`, or when the run has ended and every sample was read.
    pub fn recv_interval(&self, timeout: Duration) -> Option<DeviceInterval> {
        self.intervals
            .as_ref()?
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .recv(timeout)
    }

    /// Waits for the end of the run.
    ///
    /// When a run that wrote returns, its `O_EXCL` claims on block devices are gone (it waits up
    /// to [`hostmax_device::EXCLUSIVE_OPEN_PATIENCE`] for the kernel to let go of them), so the caller
    /// can discard, mount or start the next run at once; except a device that stopped
    /// answering ([`crate::DeviceResult::stalled_in_flight`]), held until its I/O completes.
    /// A stalled device holds the run at most [`crate::DRAIN_LIMIT`] past its end.
    pub fn wait(self) -> Result<RunResult, EngineError> {
        let mut devices: Vec<Option<DeviceResult>> = vec![None; self.targets.len()];
        let mut first_err = None;
        let mut summaries = Vec::new();
        let joined: Vec<_> = self
            .workers
            .into_iter()
            .map(|(plan, h)| (plan, h.join()))
            .collect();
        if self.workload.pattern.writes() {
            // A device that stopped answering holds its claim until its I/O completes.
            let stalled: Vec<&PathBuf> = joined
                .iter()
                .filter_map(|(_, j)| j.as_ref().ok()?.as_ref().ok())
                .flat_map(|(_, _, results)| results)
                .filter(|(_, r)| r.stalled_in_flight.is_some())
                .map(|(_, r)| &r.path)
                .collect();
            for t in self.targets.iter().filter(|t| !stalled.contains(&&t.path)) {
                target::await_release(t);
            }
        }
        for ((cpu, plan_index), joined) in joined {
            match joined {
                Ok(Ok((ring, cpu_use, results))) => {
                    let plan = &self.placement.workers[plan_index];
                    summaries.push(crate::WorkerSummary {
                        cpu,
                        devices: plan.devices.clone(),
                        shares: plan.shares.clone(),
                        ring,
                        cpu_use,
                    });
                    // A device's shares add up: counts summed, histograms bin by bin.
                    for (i, r) in results {
                        match &mut devices[i] {
                            Some(merged) => merged.absorb(r),
                            slot => *slot = Some(r),
                        }
                    }
                }
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert(EngineError::Worker {
                        cpu,
                        message: "worker thread panicked".into(),
                    });
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        let planned = self.workload.runtime;
        let measured = match self.shared.stop_instant() {
            Some(stop) => stop
                .saturating_duration_since(self.start + self.workload.ramp)
                .min(planned),
            None => planned,
        };
        let stopped_early = measured < planned;
        // A run that ran out of its I/O limit measured only until its last worker finished.
        let measured = match self.workload.io_limit {
            Some(_) => {
                let finished =
                    Duration::from_nanos(self.shared.finished_after_ns.load(Ordering::Relaxed));
                finished.saturating_sub(self.workload.ramp).min(measured)
            }
            None => measured,
        };
        Ok(RunResult {
            devices: devices
                .into_iter()
                .map(|d| d.expect("every target has a result"))
                .collect(),
            measured,
            stopped_early,
            workers: summaries,
            run_id: self.run_id,
            measured_from: Some(self.started_wall + self.workload.ramp),
            workload: self.workload.clone(),
            numa_nodes: self.placement.numa_nodes.clone(),
            oversubscribed: self.placement.oversubscribed,
        })
    }
}

impl StopHandle {
    /// Asks the workers to stop submitting; in-flight I/O drains. As [`RunHandle::stop`], it
    /// ends a `--verify` read-back too.
    pub fn stop(&self) {
        self.shared.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MAX_IODEPTH, MAX_RATE_IOPS, MAX_RUN_TIME};

    #[test]
    fn a_file_named_twice_by_any_path_is_refused() {
        let dir = std::env::temp_dir().join(format!("hostmax-dup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b, link, other) = (
            dir.join("a.img"),
            dir.join("b.img"),
            dir.join("link.img"),
            dir.join("other.img"),
        );
        std::fs::write(&a, vec![0u8; 8192]).unwrap();
        std::fs::write(&other, vec![0u8; 8192]).unwrap();
        let _ = std::fs::remove_file(&b);
        let _ = std::fs::remove_file(&link);
        std::fs::hard_link(&a, &b).unwrap();
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let probe = |paths: &[&PathBuf]| -> Vec<TargetInfo> {
            paths
                .iter()
                .map(|p| hostmax_device::probe(p).unwrap())
                .collect()
        };
        for twice in [&b, &link, &a] {
            let given = vec![a.clone(), other.clone(), twice.clone()];
            let err = refuse_duplicate_targets(&given, &probe(&[&a, &other, twice])).unwrap_err();
            assert!(
                matches!(&err, EngineError::DuplicateTarget { path, first, what: "file" } if path == twice && *first == a),
                "{err}"
            );
            assert_eq!(
                err.to_string(),
                format!(
                    "{}: the same file as {} (named earlier): name each target once",
                    twice.display(),
                    a.display()
                )
            );
        }
        let given = vec![a.clone(), other.clone()];
        assert!(refuse_duplicate_targets(&given, &probe(&[&a, &other])).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_devices_seconds_from_its_workers_arrive_as_one() {
        use crate::placement::{DeviceShare, WorkerPlan};
        // Device 0 has two shares (CPUs 0 and 1), device 1 one.
        let placement = Placement {
            workers: vec![
                WorkerPlan::for_tests(
                    0,
                    vec![DeviceShare::new(0, 0, 2), DeviceShare::new(1, 0, 1)],
                ),
                WorkerPlan::for_tests(1, vec![DeviceShare::new(0, 1, 2)]),
            ],
            numa_nodes: vec![None, None],
            oversubscribed: false,
        };
        let (tx, rx) = channel();
        let mut merge = IntervalMerge::new(rx, &placement);
        let second = |device, s, reads: u64| {
            let mut ops: crate::PerOp<crate::OpResult> = Default::default();
            ops[OpKind::Read].ios = reads;
            crate::result::record_latency(&mut ops[OpKind::Read].latency, 1000 * reads);
            DeviceInterval::new(device, s, ops, 1)
        };
        tx.send(second(0, 0, 3)).unwrap();
        tx.send(second(1, 0, 5)).unwrap();
        let got = merge.recv(Duration::from_millis(10)).unwrap();
        assert_eq!(
            (got.device, got.ops[OpKind::Read].ios),
            (1, 5),
            "one share: at once"
        );
        assert!(
            merge.recv(Duration::from_millis(10)).is_none(),
            "waits for the other share"
        );
        tx.send(second(0, 0, 4)).unwrap();
        let got = merge.recv(Duration::from_millis(10)).unwrap();
        assert_eq!((got.device, got.second), (0, 0));
        assert_eq!(got.ops[OpKind::Read].ios, 7);
        assert_eq!(got.ops[OpKind::Read].latency.len(), 2, "histograms added");
        assert_eq!(got.errors, 2);
        // A second only one share closed comes out when the workers are gone.
        tx.send(second(0, 1, 1)).unwrap();
        drop(tx);
        let got = merge.recv(Duration::from_millis(10)).unwrap();
        assert_eq!((got.second, got.ops[OpKind::Read].ios), (1, 1));
        assert!(merge.recv(Duration::from_millis(10)).is_none());
    }

    #[test]
    fn memory_is_checked_against_the_room_and_names_what_bounds_it() {
        use crate::memory::{MemoryBound, MemoryRoom};
        let huge = Workload {
            block_size: 8 << 20,
            iodepth: MAX_IODEPTH,
            ..Workload::default()
        };
        assert_eq!(huge.buffer_bytes(32), 32 * 4096 * (8 << 20));
        let targets: Vec<TargetInfo> = (0..32)
            .map(|i| {
                TargetInfo::new(
                    format!("/dev/t{i}"),
                    crate::TargetKind::RegularFile,
                    1 << 30,
                    512,
                )
            })
            .collect();
        let machine = MemoryRoom {
            bytes: 64 << 30,
            bound: MemoryBound::Machine,
        };
        let err = check_memory_in(&huge, &targets, Some(machine.clone()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("only 64.0 GiB of memory is available")
                && err.contains("lower the queue depth or the block size (iodepth, block_size)"),
            "{err}"
        );
        assert!(check_memory_in(&Workload::default(), &targets, Some(machine)).is_ok());
        // A cgroup's limit below the machine's memory: named with its file.
        let cgroup = MemoryRoom {
            bytes: 1 << 30,
            bound: MemoryBound::Cgroup("/sys/fs/cgroup/job/memory.max".into()),
        };
        let deep = Workload::default()
            .with_iodepth(1024)
            .with_block_size(1 << 20);
        let err = check_memory_in(&deep, &targets[..2], Some(cgroup))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("I/O buffers would need 2.0 GiB")
                && err.contains("allows only 1.0 GiB (/sys/fs/cgroup/job/memory.max)"),
            "{err}"
        );
        assert!(
            check_memory_in(&huge, &targets, None).is_ok(),
            "unknown: not refused"
        );
    }

    #[test]
    fn verify_is_refused_where_it_cannot_work() {
        let target = TargetInfo::new(
            "/dev/x",
            hostmax_device::TargetKind::BlockDevice,
            1 << 30,
            512,
        );
        let with = |pattern, dedupe_percent| Workload {
            pattern,
            write_data: crate::WriteData {
                verify: true,
                dedupe_percent,
                ..Default::default()
            },
            ..Workload::default()
        };
        let err = validate(
            &with(crate::IoPattern::RandRead, 0),
            std::slice::from_ref(&target),
        );
        assert!(err.unwrap_err().to_string().contains("writes nothing"));
        let err = validate(
            &with(crate::IoPattern::RandRw, 50),
            std::slice::from_ref(&target),
        );
        match err {
            Err(EngineError::InvalidWorkload(e)) => {
                assert_eq!(e.settings, [Setting::DedupePercent, Setting::Verify])
            }
            other => panic!("{other:?}"),
        }
        assert!(validate(
            &with(crate::IoPattern::RandRw, 0),
            std::slice::from_ref(&target)
        )
        .is_ok());
        // One byte per 4 KiB block: 262,144 bytes for 1 GiB.
        assert_eq!(
            verify_state_bytes(&with(crate::IoPattern::RandRw, 0), &[target]),
            1 << 18
        );
    }

    #[test]
    fn a_workload_that_does_not_fit_a_target_says_why() {
        let target = TargetInfo::new("/dev/x", crate::TargetKind::BlockDevice, 1 << 20, 4096);
        let w = |block_size, working_set| Workload {
            block_size,
            working_set,
            ..Workload::default()
        };
        assert_eq!(check_fits(&w(4096, None), &target), Ok(()));
        let misfit = check_fits(&w(512, None), &target).unwrap_err();
        assert_eq!(
            misfit,
            Misfit::BlockSize {
                block_size: 512,
                logical_block_size: 4096
            }
        );
        assert_eq!(misfit.settings(), [Setting::BlockSize]);
        assert!(matches!(
            check_fits(&w(4096, Some(2 << 20)), &target),
            Err(Misfit::WorkingSetTooLarge { .. })
        ));
        assert!(matches!(
            check_fits(&w(2 << 20, None), &target),
            Err(Misfit::WorkingSetBelowBlock { given: false, .. })
        ));
        // validate words the same misfit with the target's path.
        let err = validate(&w(512, None), std::slice::from_ref(&target)).unwrap_err();
        assert_eq!(err.to_string(), format!("/dev/x: {misfit} (block_size)"));
    }

    #[test]
    fn times_and_rates_beyond_what_a_run_can_use_are_refused() {
        let target = TargetInfo::new("/dev/x", crate::TargetKind::BlockDevice, 1 << 30, 512);
        let refused = |w: Workload| {
            validate(&w, std::slice::from_ref(&target))
                .unwrap_err()
                .to_string()
        };
        let forever = Duration::from_secs(u64::MAX);
        let err = refused(Workload {
            runtime: forever,
            ..Workload::default()
        });
        assert!(
            err.contains("at most 31536000 s") && err.ends_with("(runtime)"),
            "{err}"
        );
        let err = refused(Workload {
            ramp: MAX_RUN_TIME + Duration::from_secs(1),
            ..Workload::default()
        });
        assert!(
            err.starts_with("ramp of") && err.ends_with("(ramp)"),
            "{err}"
        );
        let err = refused(Workload {
            rate_iops: Some(u64::MAX),
            ..Workload::default()
        });
        assert!(
            err.contains("at most 1000000000") && err.ends_with("(rate_iops)"),
            "{err}"
        );
        let longest = Workload {
            runtime: MAX_RUN_TIME,
            ramp: MAX_RUN_TIME,
            rate_iops: Some(MAX_RATE_IOPS),
            ..Workload::default()
        };
        assert!(validate(&longest, std::slice::from_ref(&target)).is_ok());
    }
}
