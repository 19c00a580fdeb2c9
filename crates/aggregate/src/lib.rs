//! hostmax-aggregate turns what the engine measured into host figures. It does no I/O: no
//! files, no clocks, no threads — every function is a pure computation on its arguments, so
//! the same inputs always give the same report.
//!
//! - [`summarize`] (and [`summarize_with_histograms`]) build a [`HostReport`], the JSON root of
//!   a run, from a [`hostmax_engine::RunResult`]: one [`DeviceReport`] per device and the
//!   host's [`Figures`], whose read and write latency histograms are the exact sum of the
//!   devices' histograms ([`HostHistograms`]): bins are added, percentiles are never averaged.
//! - [`OpSummary`] and [`LatencySummary`] are the counts, rates and percentiles of one kind
//!   of I/O, read off an HDR histogram.
//! - [`TimeSeries`] collects the one-second [`hostmax_engine::DeviceInterval`]s of every device,
//!   in any order, and yields a host [`SecondPoint`] the moment every device has reported
//!   that second.
//! - [`SteadyStateRule`] decides SNIA PTS steady state on a series of rounds ([`SteadyState`],
//!   with the least-squares [`WindowFit`] of the window) for the benchmark suite.

#![warn(missing_docs)]

mod latency;
mod report;
mod series;
mod steady_state;

pub use latency::{add_exact, LatencySummary};
pub use report::{
    summarize, summarize_with_histograms, DeviceReport, Figures, HostHistograms, HostReport,
    OpSummary, WorkloadSummary, SCHEMA_VERSION,
};
pub use series::{SecondPoint, TimeSeries};
pub use steady_state::{SteadyState, SteadyStateRule, WindowFit};
