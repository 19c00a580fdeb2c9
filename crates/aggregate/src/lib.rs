//! hostmax-aggregate turns what the engine measured into host figures. It does no I/O: no
//! files, no clocks, no threads — every function is a pure computation on its arguments, so
//! the same inputs always give the same report.
//!
//! - [`summarize`] (and [`summarize_with_histograms`]) build a [`HostReport`], the JSON root of
//!   a run, from a [`hostmax_engine::RunResult`]: one [`DeviceReport`] per device and the
//!   host's [`Figures`], whose latency histogram of each kind of I/O (read, write, trim: a
//!   [`hostmax_engine::PerOp`] indexed by [`hostmax_engine::OpKind`]) is the exact sum of the
//!   devices' ([`HostHistograms`]): bins are added, percentiles are never averaged.
//! - [`OpSummary`] and [`LatencySummary`] are the counts, rates and percentiles of one kind
//!   of I/O, read off an HDR histogram.
//! - [`encode_histogram`] / [`decode_histogram`] ([`EncodedHistograms`]): histograms as the
//!   base64 V2 + DEFLATE text HdrHistogram's own tools read; every report carries its
//!   devices' and host's in full.
//! - [`merge_reports`] adds the reports of hosts that ran the same workload at the same time
//!   into one fleet report ([`FleetSummary`]): counts and rates add, percentiles come from the
//!   added histograms.
//! - [`TimeSeries`] collects the one-second [`hostmax_engine::DeviceInterval`]s of every device,
//!   in any order, and yields a host [`SecondPoint`] the moment every device has reported
//!   that second (each kind's figures in [`OpSeconds`], a device's in [`OpRates`]).
//! - [`SteadyStateRule`] decides SNIA PTS steady state on a series of rounds ([`SteadyState`],
//!   with the least-squares [`WindowFit`] of the window) for the benchmark suite.
//! - [`spec`]: what volumes and hosts promise ([`VolumeSpec`], built-in [`PROFILES`],
//!   [`HostSpec`], [`Tolerance`], the spec file); [`verdict`] judges reports against them
//!   ([`judge`] gives a [`Verdict`] with the [`Bottleneck`]), by the one table of promise
//!   kinds and the runs that can show them ([`verdict::PROMISE_KINDS`]) the suite's cells are
//!   judged by too ([`verdict::check_promise`]); [`knee`] finds the host's
//!   ceiling and knee from a sweep over volume counts ([`Sweep`]); [`curve`] finds the
//!   load-latency curve's SLO knee and saturation point ([`Curve`]); [`consistency`] judges
//!   how many seconds of a run kept the promise.

#![warn(missing_docs)]

pub mod consistency;
pub mod curve;
mod fleet;
mod histogram_codec;
pub mod knee;
mod latency;
mod report;
mod series;
pub mod spec;
mod steady_state;
pub mod verdict;

pub use curve::{Curve, CurveReport};
pub use fleet::{merge_reports, MergeError, WorkloadDifference};
pub use histogram_codec::{
    decode_histogram, decode_latency_histogram, encode_histogram, EncodedHistograms,
    HistogramCodecError,
};
pub use knee::{Sweep, SweepPoint, SweepReport};
pub use latency::{add_exact, LatencySummary};
pub use report::{
    summarize, summarize_with_histograms, DeviceIdentity, DeviceReport, Figures, FleetHost,
    FleetSummary, HostHistograms, HostReport, LoadGenerator, OpSummary, Provenance, WorkerReport,
    WorkloadSummary, SCHEMA_VERSION,
};
pub use series::{
    DeviceSecond, OpRates, OpSecond, OpSeconds, SecondHistograms, SecondPoint, TimeSeries,
};
pub use spec::{HostSpec, Tolerance, VolumeSpec, PROFILES};
pub use steady_state::{SteadyState, SteadyStateRule, WindowFit};
pub use verdict::{judge, Bottleneck, SpecSet, Verdict, VerifyReport};
