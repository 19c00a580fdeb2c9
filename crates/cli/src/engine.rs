//! The engine as the commands reach it: one seam ([`Engine`]) all of the tool's I/O goes
//! through, so the commands' logic (the suite's rounds, resume and purge, verify's phases,
//! sweep's and curve's steps, the doctor's probes, the write-safety checks of planning) runs
//! the same over the real engine ([`RealEngine`]) or, in unit tests, over a fake one that
//! needs no device and no root (`fake::FakeEngine`).
//!
//! A run is watched through [`RunObserver`], the engine's [`hostmax_engine::Observer`] without
//! the engine's handles (a prepared run, a run handle), which only the real engine can make:
//! the observer hears the targets before the start, the start (with a way to stop the run),
//! every one-second interval and the time since the start.

use std::io;
use std::ops::{ControlFlow, Range};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hostmax_device::SystemSources;
use hostmax_engine::{
    CeilingConfig, DeviceInterval, EngineError, IoUringUnavailable, IssueCeiling,
    KernelRingSupport, MeasureRequest, Observer, PassProgress, PreparedRun, ReadPass, RunHandle,
    RunResult, StopHandle, TargetInfo, Workload,
};

mod ata;
pub use ata::PASSWORD_ENV;
#[cfg(test)]
pub(crate) mod fake;

/// What the commands ask of the engine: every measurement, the suite's purge, `prepare`'s
/// read pass, the doctor's probes, and the reads the write-safety checks make of devices.
pub trait Engine {
    /// Whether this process can use io_uring at all, asked before any device is looked at,
    /// so that a host without it gets the cause ([`hostmax_engine::check_io_uring`]).
    fn check_io_uring(&self) -> Result<(), IoUringUnavailable>;

    /// Where the write-safety checks read the system's state, and how they read devices
    /// (the real engine: through io_uring, each read bounded, a signal ending every wait).
    /// Planning checks with it, and every [`MeasureRequest`] carries it.
    fn safety_sources(&self) -> SystemSources;

    /// One measurement ([`hostmax_engine::measure`]): the request's safety checks, the run,
    /// `observer` told as it goes; the result once every device is drained and released.
    fn measure(
        &self,
        request: MeasureRequest,
        observer: &mut dyn RunObserver,
    ) -> Result<RunResult, EngineError>;

    /// ATA secure erase of the whole disk `target` (hdparm), with `password` as the
    /// temporary user password; only ATA disks whose security is not frozen.
    fn secure_erase(&self, target: &TargetInfo, password: &str) -> anyhow::Result<()>;

    /// Discards `range` of `target` ([`hostmax_engine::discard`]).
    fn discard(&self, target: &TargetInfo, range: Range<u64>) -> Result<(), EngineError>;

    /// Zero-fills `range` of `target` ([`hostmax_engine::zero_out`]).
    fn zero_out(&self, target: &TargetInfo, range: Range<u64>) -> Result<(), EngineError>;

    /// Reads every block of the pass's targets once ([`hostmax_engine::read_pass`], `hostmax
    /// prepare`), `progress` told how far it is (and returning false to stop it).
    fn read_pass(
        &self,
        pass: &ReadPass,
        progress: &mut dyn FnMut(&PassProgress) -> bool,
    ) -> Result<PassProgress, EngineError>;

    /// The load generator's own ceiling: the worker loop issuing NOPs, no device
    /// ([`hostmax_engine::measure_issue_ceiling`], `hostmax doctor`).
    fn issue_ceiling(&self, config: &CeilingConfig) -> Result<IssueCeiling, EngineError>;

    /// What the kernel's io_uring offers ([`hostmax_engine::probe_kernel_ring`]); an error
    /// when no ring can be built.
    fn kernel_ring(&self) -> io::Result<KernelRingSupport>;

    /// Whether a run of `workload` over `targets` fits the memory this process may take
    /// ([`hostmax_engine::check_memory`]: the machine's available memory, or its memory
    /// cgroup's limit where lower), asked by a command of several runs before the first.
    fn check_memory(&self, workload: &Workload, targets: &[TargetInfo]) -> Result<(), EngineError>;
}

/// A run that has just started.
pub struct StartedRun {
    /// When its clock started.
    pub at: Instant,
    /// Stops it from another thread (a signal); `None` where nothing could stop it (a fake
    /// run, over as soon as it started).
    pub stopper: Option<StopHandle>,
}

/// What a command hears while one of its runs goes on. Every method has a default that does
/// nothing.
pub trait RunObserver {
    /// The targets (by path, in the request's order) are open and passed every check; no I/O
    /// yet. The last moment to wait or to call the run off ([`ControlFlow::Break`]: the
    /// engine then returns [`EngineError::CalledOff`] without any I/O).
    fn before_start(&mut self, _targets: &[PathBuf]) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }

    /// The clock started.
    fn started(&mut self, _run: StartedRun) {}

    /// One device's one-second interval (requests with live intervals), as it arrives.
    fn interval(&mut self, _interval: DeviceInterval) {}

    /// About every [`hostmax_engine::TICK`] while the run goes on: the time since its start.
    fn tick(&mut self, _since_start: Duration) {}
}

/// The engine itself: [`hostmax_engine`]'s I/O on the devices.
pub struct RealEngine;

impl Engine for RealEngine {
    fn check_io_uring(&self) -> Result<(), IoUringUnavailable> {
        hostmax_engine::check_io_uring()
    }

    /// The real system's state, devices read through io_uring (`hostmax_engine::UringReads`):
    /// a read that gets no answer within [`hostmax_device::READ_PATIENCE`], or a `wipefs`
    /// within [`hostmax_device::PROGRAM_PATIENCE`], is given up on, and a signal ends every
    /// wait at once.
    fn safety_sources(&self) -> SystemSources {
        let mut sources = hostmax_engine::bounded_sources();
        sources.patience = sources
            .patience
            .called_off_by(|| crate::signals::watch().signal() != 0);
        sources
    }

    fn measure(
        &self,
        request: MeasureRequest,
        observer: &mut dyn RunObserver,
    ) -> Result<RunResult, EngineError> {
        hostmax_engine::measure(request, &mut Observed(observer))
    }

    fn secure_erase(&self, target: &TargetInfo, password: &str) -> anyhow::Result<()> {
        ata::secure_erase(target, password)
    }

    fn discard(&self, target: &TargetInfo, range: Range<u64>) -> Result<(), EngineError> {
        hostmax_engine::discard(target, range)
    }

    fn zero_out(&self, target: &TargetInfo, range: Range<u64>) -> Result<(), EngineError> {
        hostmax_engine::zero_out(target, range)
    }

    fn read_pass(
        &self,
        pass: &ReadPass,
        progress: &mut dyn FnMut(&PassProgress) -> bool,
    ) -> Result<PassProgress, EngineError> {
        hostmax_engine::read_pass(pass, progress)
    }

    fn issue_ceiling(&self, config: &CeilingConfig) -> Result<IssueCeiling, EngineError> {
        hostmax_engine::measure_issue_ceiling(config)
    }

    fn kernel_ring(&self) -> io::Result<KernelRingSupport> {
        hostmax_engine::probe_kernel_ring()
    }

    fn check_memory(&self, workload: &Workload, targets: &[TargetInfo]) -> Result<(), EngineError> {
        hostmax_engine::check_memory(workload, targets)
    }
}

/// A [`RunObserver`] as the engine's [`Observer`].
struct Observed<'a>(&'a mut dyn RunObserver);

impl Observer for Observed<'_> {
    fn before_start(&mut self, prepared: &PreparedRun) -> ControlFlow<()> {
        let targets: Vec<PathBuf> = prepared.targets().iter().map(|t| t.path.clone()).collect();
        self.0.before_start(&targets)
    }

    fn started(&mut self, run: &RunHandle) {
        self.0.started(StartedRun {
            at: run.started(),
            stopper: Some(run.stopper()),
        });
    }

    fn interval(&mut self, interval: DeviceInterval) {
        self.0.interval(interval);
    }

    fn tick(&mut self, run: &RunHandle) {
        self.0.tick(run.started().elapsed());
    }
}
