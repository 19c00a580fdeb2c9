//! The simulated host: throttled loop volumes on tmpfs.
