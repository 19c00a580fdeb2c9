//! One measurement, start to end: write safety, prepare, the re-check while the targets are
//! held, start, every interval to the caller, the result.
//!
//! This is the one way a run is driven: every front end (a single run, the phases of a
//! verification, the steps of a sweep or a curve, a suite's cells) calls [`measure`], so a
//! write to a device in use is refused the same way everywhere. The caller watches the
//! run through an [`Observer`] (a closure taking each [`DeviceInterval`] is one) and turns
//! the [`RunResult`] into figures (`hostmax_aggregate::summarize`: the aggregator does no I/O,
//! so the measurement stays here and the summary there).

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hostmax_device::{
    check_write_safety, probe, recheck_while_held, Patience, SystemSources, TargetInfo,
    WriteRefused, WriteSafety,
};

use crate::{
    DeviceInterval, EngineError, IoPattern, PreparedRun, RunConfig, RunHandle, RunResult, Workload,
};

/// How often [`Observer::tick`] is called while a run goes on (and how long a run without
/// live intervals is polled for its end).
pub const TICK: Duration = Duration::from_millis(200);

/// How much of the write-safety checking [`measure`] does itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SafetyCheck {
    /// Every check ([`check_write_safety`]) before anything is opened, then the re-check
    /// while the targets are held ([`recheck_while_held`]): a measurement on its own.
    Full(WriteSafety),
    /// Only the re-check while held: the caller ran [`check_write_safety`] on these targets
    /// before its first run touched them. For a series of runs on the same targets (phases,
    /// steps, cells), whose own writes must not count against the next run (a file this
    /// series wrote holds data now, but not someone else's).
    CheckedBefore(WriteSafety),
}

impl SafetyCheck {
    /// The consent given.
    pub fn consent(&self) -> WriteSafety {
        match *self {
            SafetyCheck::Full(consent) | SafetyCheck::CheckedBefore(consent) => consent,
        }
    }
}

/// What [`measure`] runs, and how safely.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MeasureRequest {
    /// Targets, workload, CPUs and the rest of the run's shape.
    pub run: RunConfig,
    /// The write-safety checks and the consent they allow.
    pub safety: SafetyCheck,
    /// Where the system state the safety checks read comes from (the real `/proc` and `/sys`
    /// by default), and how they read devices ([`crate::UringReads`] by default: a device
    /// that does not answer within [`hostmax_device::READ_PATIENCE`] is refused, not waited
    /// on).
    pub sources: SystemSources,
    /// With [`SafetyCheck::CheckedBefore`]: the targets as the caller probed and checked them
    /// (in [`RunConfig::targets`]' order). Each descriptor the run writes through must be
    /// the same file or device (inode; device number and what stands behind it), else
    /// [`EngineError::TargetChanged`] before any I/O. Empty: the run's own probe stands in.
    /// [`SafetyCheck::Full`] checks what it probes itself.
    pub checked: Vec<TargetInfo>,
}

impl MeasureRequest {
    /// `workload` on `targets` with live one-second intervals, every other run choice at its
    /// default ([`RunConfig::new`]), and every write-safety check with no consent: a writing
    /// workload may then only touch regular files that hold no data (give consent with
    /// [`MeasureRequest::with_consent`]).
    pub fn new(targets: Vec<PathBuf>, workload: Workload) -> MeasureRequest {
        MeasureRequest {
            run: RunConfig {
                live: true,
                ..RunConfig::new(targets, workload)
            },
            safety: SafetyCheck::Full(WriteSafety::default()),
            sources: bounded_sources(),
            checked: Vec::new(),
        }
    }

    /// `run` as given (its [`RunConfig::live`] too), with every write-safety check and no
    /// consent, reading the real system through [`bounded_sources`]: [`MeasureRequest::new`]
    /// for a run whose other choices (CPUs, layout, polling) are set.
    pub fn for_run(run: RunConfig) -> MeasureRequest {
        MeasureRequest {
            run,
            safety: SafetyCheck::Full(WriteSafety::default()),
            sources: bounded_sources(),
            checked: Vec::new(),
        }
    }

    /// The same request with only the re-check while held ([`SafetyCheck::CheckedBefore`]),
    /// allowing what `consent` allows: the caller checked `checked` (the targets as it
    /// probed them, in [`RunConfig::targets`]' order) before.
    pub fn with_checked_before(
        self,
        consent: WriteSafety,
        checked: Vec<TargetInfo>,
    ) -> MeasureRequest {
        MeasureRequest {
            safety: SafetyCheck::CheckedBefore(consent),
            checked,
            ..self
        }
    }

    /// The same request with the write-safety checks `safety` (and the consent it carries).
    pub fn with_safety(self, safety: SafetyCheck) -> MeasureRequest {
        MeasureRequest { safety, ..self }
    }

    /// The same request, reading the system's state (and devices) from `sources`.
    pub fn with_sources(self, sources: SystemSources) -> MeasureRequest {
        MeasureRequest { sources, ..self }
    }

    /// The same request with every check, allowing what `consent` allows.
    pub fn with_consent(self, consent: WriteSafety) -> MeasureRequest {
        MeasureRequest {
            safety: SafetyCheck::Full(consent),
            ..self
        }
    }
}

/// The real system's state, its devices read through io_uring ([`crate::UringReads`]) with
/// the default [`Patience`]: what [`MeasureRequest::new`] checks with.
pub fn bounded_sources() -> SystemSources {
    SystemSources::default().reading_through(Arc::new(crate::UringReads), Patience::default())
}

/// What a caller of [`measure`] hears while the run goes on. Every method has a default that
/// does nothing; a closure taking a [`DeviceInterval`] is an observer of intervals.
pub trait Observer {
    /// The targets are open (written ones held `O_EXCL`) and passed every check; no I/O yet
    /// (a write run's checks are made once more after this returns). The last moment to wait
    /// (for a start time) or to call the run off
    /// ([`ControlFlow::Break`]: [`measure`] then ends without any I/O and returns
    /// [`EngineError::CalledOff`]).
    fn before_start(&mut self, _prepared: &PreparedRun) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }

    /// The clock started: the run can now be stopped ([`RunHandle::stopper`]).
    fn started(&mut self, _run: &RunHandle) {}

    /// One device's one-second interval (runs with [`RunConfig::live`]), as it arrives.
    fn interval(&mut self, _interval: DeviceInterval) {}

    /// About every [`TICK`] while the run goes on (progress without live intervals).
    fn tick(&mut self, _run: &RunHandle) {}
}

impl<F: FnMut(DeviceInterval)> Observer for F {
    fn interval(&mut self, interval: DeviceInterval) {
        self(interval)
    }
}

/// Measures: checks write safety (as [`MeasureRequest::safety`] says), prepares the run
/// (probes, validates and places the targets, opens them, readies every worker's ring), checks
/// again while the written targets are held `O_EXCL` (a mount or swapon that slipped in
/// meanwhile is refused), asks the observer ([`Observer::before_start`], which may wait), checks
/// once more right before the first write, starts it, hands every interval to
/// `observer`, and returns the result once every ring is drained and every claim released.
///
/// # Errors
///
/// A refused write is [`EngineError::WriteRefused`], before any I/O. With
/// [`SafetyCheck::Full`] a written target is refused when it is mounted, held (device-mapper,
/// md, another exclusive opener), active swap or under the root filesystem, whatever the
/// consent; when it carries on-disk signatures or partitions, unless [`WriteSafety::force`];
/// and when it is a block device or a file that holds data, unless
/// [`WriteSafety::allow_write`]. The re-check while held refuses a mount or swap that appeared
/// in between. A device claimed by someone else after the checks (with
/// [`SafetyCheck::CheckedBefore`], after the caller's) fails its exclusive open instead:
/// [`EngineError::Open`] with `EBUSY`, once [`hostmax_device::EXCLUSIVE_OPEN_PATIENCE`] has passed.
/// A workload that does not fit a target is [`EngineError::InvalidWorkload`]; an
/// [`Observer`] calling the run off is [`EngineError::CalledOff`].
///
/// # Example
///
/// Writes to a scratch file: a file that holds no data may be written without consent; once
/// it holds data, writing it again needs [`WriteSafety::allow_write`] and is refused, before
/// any I/O, without it.
///
/// ```
/// use std::time::Duration;
///
/// use hostmax_engine::WriteSafety;
/// use hostmax_engine::{
///     measure, DeviceInterval, EngineError, IoPattern, MeasureRequest, OpKind, Workload,
/// };
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Scratch(std::path::PathBuf);
/// # impl Drop for Scratch {
/// #     fn drop(&mut self) {
/// #         let _ = std::fs::remove_file(&self.0);
/// #     }
/// # }
/// let file = std::env::temp_dir().join(format!("hostmax-measure-doc-{}.img", std::process::id()));
/// std::fs::File::create(&file)?.set_len(16 << 20)?;
/// # let _scratch = Scratch(file.clone());
/// let writes = Workload::default()
///     .with_pattern(IoPattern::RandWrite)
///     .with_iodepth(4)
///     .with_runtime(Duration::from_millis(200))
///     .with_ramp(Duration::ZERO);
/// let request = || MeasureRequest::new(vec![file.clone()], writes.clone());
/// let mut ignore = |_: DeviceInterval| {};
///
/// // An empty (all holes) file: nothing to lose, no consent needed.
/// let first = measure(request(), &mut ignore)?;
/// assert!(first.devices[0].ops[OpKind::Write].ios > 0);
///
/// // Now it holds data: refused without consent, measured with it.
/// let refused = measure(request(), &mut ignore);
/// assert!(matches!(refused, Err(EngineError::WriteRefused(_))));
/// let consent = WriteSafety::default().with_allow_write(true);
/// let again = measure(request().with_consent(consent), &mut ignore)?;
/// assert!(again.devices[0].ops[OpKind::Write].ios > 0);
/// # Ok(())
/// # }
/// ```
pub fn measure<O: Observer + ?Sized>(
    request: MeasureRequest,
    observer: &mut O,
) -> Result<RunResult, EngineError> {
    let MeasureRequest {
        run,
        safety,
        sources,
        mut checked,
    } = request;
    let pattern = run.workload.pattern;
    let live = run.live;
    if let (SafetyCheck::Full(consent), true) = (safety, pattern.writes()) {
        let targets = run
            .targets
            .iter()
            .map(|p| probe(p))
            .collect::<Result<Vec<_>, _>>()?;
        crate::run::refuse_duplicate_targets(&run.targets, &targets)?;
        check_before_any_io(&targets, pattern, consent, &sources)?;
        checked = targets;
    }
    let prepared = crate::run::prepare(run, &checked)?;
    let recheck = |prepared: &PreparedRun| {
        let allow_write = safety.consent().allow_write;
        recheck_if_writing(prepared.targets(), pattern, allow_write, &sources)
    };
    recheck(&prepared)?;
    if observer.before_start(&prepared).is_break() {
        // Dropping the prepared run releases its workers without any I/O.
        return Err(EngineError::CalledOff);
    }
    // Again at the last moment before the first write: the observer may have waited (for a
    // start time) while someone mounted another name of the same media.
    recheck(&prepared)?;
    let handle = prepared.start();
    observer.started(&handle);
    let mut last_tick = Instant::now();
    while !handle.is_finished() {
        if live {
            if let Some(interval) = handle.recv_interval(TICK) {
                observer.interval(interval);
            }
        } else {
            std::thread::sleep(TICK / 4);
        }
        if last_tick.elapsed() >= TICK {
            observer.tick(&handle);
            last_tick = Instant::now();
        }
    }
    while let Some(interval) = handle.recv_interval(Duration::ZERO) {
        observer.interval(interval);
    }
    handle.wait()
}

/// [`check_write_safety`] for a workload of `pattern`: one that only reads passes without
/// reading anything.
fn check_before_any_io(
    targets: &[TargetInfo],
    pattern: IoPattern,
    consent: WriteSafety,
    sources: &SystemSources,
) -> Result<(), WriteRefused> {
    if !pattern.writes() {
        return Ok(());
    }
    check_write_safety(targets, consent, sources)
}

/// [`recheck_while_held`] for a workload of `pattern`: one that only reads passes without
/// reading anything.
fn recheck_if_writing(
    targets: &[TargetInfo],
    pattern: IoPattern,
    allow_write: bool,
    sources: &SystemSources,
) -> Result<(), WriteRefused> {
    if !pattern.writes() {
        return Ok(());
    }
    recheck_while_held(targets, allow_write, sources)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostmax_device::TargetKind;

    #[test]
    fn read_only_workloads_are_never_refused() {
        let targets = [TargetInfo::new(
            "/dev/nonexistent-loop",
            TargetKind::BlockDevice,
            1 << 30,
            512,
        )
        .with_device((7, 250), "nonexistent-loop")];
        let mut sources = SystemSources::default();
        sources.mountinfo = PathBuf::from("/nonexistent/mountinfo");
        let no_flags = WriteSafety::default();
        let allow = WriteSafety::NONE.with_allow_write(true);
        assert!(check_before_any_io(&targets, IoPattern::RandRead, no_flags, &sources).is_ok());
        assert!(recheck_if_writing(&targets, IoPattern::RandRead, false, &sources).is_ok());
        // Writes fail closed when the mount table cannot be read.
        let err = check_before_any_io(&targets, IoPattern::RandWrite, allow, &sources).unwrap_err();
        assert!(err.to_string().contains("cannot be checked"), "{err}");
    }

    #[test]
    fn a_file_renamed_onto_a_checked_target_is_refused_before_any_io() {
        let dir = std::env::temp_dir().join(format!("hostmax-checked-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("t.img");
        let other = dir.join("other.img");
        std::fs::File::create(&target)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        std::fs::write(&other, vec![7u8; 1 << 20]).unwrap();
        let checked = probe(&target).unwrap();
        std::fs::rename(&other, &target).unwrap();
        let workload = Workload {
            pattern: IoPattern::RandWrite,
            iodepth: 1,
            runtime: Duration::from_millis(100),
            ramp: Duration::ZERO,
            ..Workload::default()
        };
        let consent = WriteSafety::new(true, true);
        let request = MeasureRequest::new(vec![target.clone()], workload)
            .with_checked_before(consent, vec![checked]);
        let outcome = measure(request, &mut |_: DeviceInterval| {});
        let written = std::fs::read(&target).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        match outcome {
            Err(EngineError::TargetChanged(changed)) => {
                let text = changed.to_string();
                assert_eq!(text.matches("(device:inode)").count(), 2, "{text}");
            }
            other => panic!("not refused: {other:?}"),
        }
        assert!(
            written.iter().all(|b| *b == 7),
            "the file renamed onto it was written"
        );
    }

    #[test]
    fn no_targets_is_its_own_error_and_a_refused_workload_is_its_source() {
        let none = measure(
            MeasureRequest::new(Vec::new(), Workload::default()),
            &mut |_: DeviceInterval| {},
        );
        assert!(matches!(none, Err(EngineError::NoTargets)), "{none:?}");
        let file = std::env::temp_dir().join(format!("hostmax-no-depth-{}", std::process::id()));
        std::fs::File::create(&file)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        let shallow = Workload::default().with_iodepth(0);
        let refused = measure(
            MeasureRequest::new(vec![file.clone()], shallow),
            &mut |_: DeviceInterval| {},
        );
        std::fs::remove_file(&file).unwrap();
        let refused = refused.unwrap_err();
        let source = std::error::Error::source(&refused)
            .and_then(|s| s.downcast_ref::<crate::SettingError>())
            .unwrap_or_else(|| panic!("no SettingError behind {refused:?}"));
        assert_eq!(source.settings, [crate::Setting::Iodepth]);
        assert_eq!(refused.to_string(), source.to_string());
    }
}
