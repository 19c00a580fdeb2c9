//! Placing targets on CPUs.

/// One worker: its CPU and the targets (indices) it drives.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WorkerPlan {
    /// CPU the worker thread is pinned to.
    pub cpu: usize,
    /// Indices into the run's target list.
    pub devices: Vec<usize>,
}

/// Where every target of a run is driven from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Placement {
    /// One entry per worker thread.
    pub workers: Vec<WorkerPlan>,
}
