//! Starting a run, watching it, and collecting its result.

use std::path::PathBuf;
use std::time::Duration;

use crate::{DeviceInterval, EngineError, Placement, RunResult, TargetInfo, Workload};

/// What to run where.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Targets, each driven with its own queue. A block device named twice must be given once.
    pub targets: Vec<PathBuf>,
    /// The workload every target gets.
    pub workload: Workload,
    /// CPUs the workers may use; `None` is every CPU this process may run on.
    pub cpus: Option<Vec<usize>>,
    /// Whether to send one-second [`DeviceInterval`]s to [`RunHandle::recv_interval`].
    pub live: bool,
}

/// A running run.
pub struct RunHandle {
    _private: (),
}

/// A cheap, cloneable way to stop a run from another thread (a signal handler's task).
#[derive(Debug, Clone)]
pub struct StopHandle {
    _private: (),
}

/// Probes every target, checks the workload against each, places them on CPUs and starts the
/// workers. Returns once every worker has its ring ready and the clock has started.
pub fn start(config: RunConfig) -> Result<RunHandle, EngineError> {
    let _ = config;
    Err(EngineError::InvalidWorkload("not implemented yet".into()))
}

impl RunHandle {
    /// The probed targets, in the order given.
    pub fn targets(&self) -> &[TargetInfo] {
        &[]
    }
    /// Where each target runs.
    pub fn placement(&self) -> &Placement {
        unimplemented!()
    }
    /// Asks the workers to stop submitting; in-flight I/O drains.
    pub fn stop(&self) {}
    /// A handle that can stop the run from elsewhere.
    pub fn stopper(&self) -> StopHandle {
        StopHandle { _private: () }
    }
    /// The next one-second sample, waiting at most `timeout`; `None` on timeout or when the
    /// run has ended and every sample was read.
    pub fn recv_interval(&self, timeout: Duration) -> Option<DeviceInterval> {
        let _ = timeout;
        None
    }
    /// Waits for the end of the run.
    pub fn wait(self) -> Result<RunResult, EngineError> {
        Err(EngineError::InvalidWorkload("not implemented yet".into()))
    }
}

impl StopHandle {
    /// Asks the workers to stop submitting; in-flight I/O drains.
    pub fn stop(&self) {}
}
