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
//!   added histograms; a hostile file (a histogram claiming more than it carries, counts
//!   passing 2^64 - 1, rates no count allows, a run given twice) is a [`MergeError`].
//! - [`Provenance`]: where a report came from (run id, measured window in [`rfc3339`] text,
//!   version); [`summarize`] fills in what the [`hostmax_engine::RunResult`] knows.
//! - [`TimeSeries`] collects the one-second [`hostmax_engine::DeviceInterval`]s of every device,
//!   in any order, and yields a host [`SecondPoint`] the moment every device has reported
//!   that second (each kind's figures in [`OpSeconds`], a device's in [`OpRates`]).
//! - [`BurstRule`] finds a burst in a per-second series: IOPS held at one level, then dropped
//!   to a lower one for good (a cloud volume's credits spent); [`report_bursts`] looks at a
//!   report's host and devices, and a [`Verdict`] judges the rates of the [`Burst`]'s
//!   baseline ([`baseline_rates`]) and lists where it found one.
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
//! - [`fio_json`]: a report in fio's JSON (json+) layout, for the tools that read fio's
//!   results (fio-plot and others): one job per device, the host as fio's `All clients`.
//!
//! # Example
//!
//! Measure a scratch file with the engine, then summarize: the host's p99 comes from the
//! devices' histograms added bin by bin, and each second's point from its intervals.
//!
//! ```
//! use std::time::Duration;
//!
//! use hostmax_aggregate::{summarize, TimeSeries};
//! use hostmax_engine::{measure, DeviceInterval, IoPattern, MeasureRequest, OpKind, Workload};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # struct Scratch(Vec<std::path::PathBuf>);
//! # impl Drop for Scratch {
//! #     fn drop(&mut self) {
//! #         self.0.iter().for_each(|f| drop(std::fs::remove_file(f)));
//! #     }
//! # }
//! let dir = std::env::temp_dir();
//! let files: Vec<_> = (0..2)
//!     .map(|i| dir.join(format!("hostmax-aggregate-doc-{}-{i}.img", std::process::id())))
//!     .collect();
//! # let _scratch = Scratch(files.clone());
//! for file in &files {
//!     std::fs::File::create(file)?.set_len(16 << 20)?;
//! }
//! let workload = Workload::default()
//!     .with_pattern(IoPattern::RandRead)
//!     .with_iodepth(4)
//!     .with_runtime(Duration::from_millis(300))
//!     .with_ramp(Duration::ZERO);
//! // A host point once every device has reported that second.
//! let mut series = TimeSeries::new(files.len());
//! let result = measure(
//!     MeasureRequest::new(files.clone(), workload),
//!     &mut |interval: DeviceInterval| {
//!         series.push(interval);
//!     },
//! )?;
//! // The result carries the workload it ran: the report records it.
//! let report = summarize(&result, series.finish());
//!
//! assert_eq!(report.devices.len(), 2);
//! let reads = &report.host.ops[OpKind::Read];
//! assert!(reads.ios > 0);
//! println!("host: {:.0} IOPS, p99 {} ns", report.host.iops, reads.latency_ns.p99);
//! # Ok(())
//! # }
//! ```
//!
//! A longer client, with per-device figures and every second's host point, is
//! `examples/library.rs` (`cargo run --example library`).
//!
//! # Growing without breaking you
//!
//! Every public struct with public fields is `#[non_exhaustive]`: outside this crate you build
//! one with its `new` or [`Default`] and the chaining `with_*` setters
//! (`VolumeSpec::default().with_p95_ms(Some(2.0))`, [`SpecSet::new`],
//! [`verdict::DeviceExpectation::new`] (or `flat`, without a size), [`Provenance::default`] then
//! [`Provenance::with_run_id`]), never a struct literal; its fields stay public, to read and to
//! assign on a value you hold. Reports a tool writes itself ([`curve::CurveReport`],
//! [`knee::SweepReport`], [`verdict::VerifyReport`]) and the figures tests feed the judges
//! have constructors too. Every public enum that may gain variants ([`MergeError`],
//! [`Bottleneck`], [`verdict::Judgement`], [`verdict::Unit`], ...) is `#[non_exhaustive]`:
//! give a `match` on it a `_` arm. So a new field or variant is not a breaking change.

#![warn(missing_docs)]
// Pure computation: nothing here needs unsafe, and nothing may bring it in.
#![forbid(unsafe_code)]

// The README's example is compiled and run as a doc test too, so it cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

/// The HDR histogram crate of every histogram in this API ([`add_exact`],
/// [`decode_histogram`], [`HostHistograms`] hold `hdrhistogram::Histogram<u64>`s): use it
/// through this re-export so your histograms are the same type as the reports'.
pub use hdrhistogram;
/// The engine whose [`RunResult`](hostmax_engine::RunResult)s this crate summarizes; its
/// types ([`PerOp`](hostmax_engine::PerOp), [`OpKind`](hostmax_engine::OpKind),
/// [`Workload`](hostmax_engine::Workload)) appear throughout this API.
pub use hostmax_engine;

/// Chaining setters for public fields of a `#[non_exhaustive]` struct: `with_FIELD(value)`
/// returns the value with that field set, so users outside this crate, who cannot write a
/// struct literal, still build one in a single expression (see the crate overview's "Growing
/// without breaking you").
macro_rules! with_setters {
    ($ty:ident { $($setter:ident => $field:ident: $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("The same value with [`", stringify!($ty), "::", stringify!($field), "`] set to `", stringify!($field), "`.")]
                #[must_use]
                pub fn $setter(mut self, $field: $t) -> $ty {
                    self.$field = $field;
                    self
                }
            )*
        }
    };
}

mod baseline;
mod burst;
pub mod consistency;
pub mod curve;
pub mod fio_json;
mod fleet;
mod histogram_codec;
pub mod knee;
mod latency;
mod report;
pub mod rfc3339;
mod series;
pub mod spec;
mod steady_state;
pub mod verdict;

pub use baseline::{baseline_rates, report_bursts, BaselineRates, ReportBursts};
pub use burst::{Burst, BurstRule};
pub use curve::{Curve, CurveReport};
pub use fleet::{
    measured_windows, merge_reports, merge_reports_with, overlap, MeasuredWindow, MergeError,
    WorkloadDifference, DEFAULT_MIN_OVERLAP,
};
pub use histogram_codec::{
    decode_histogram, decode_latency_histogram, encode_histogram, EncodedHistograms,
    HistogramCodecError,
};
pub use knee::{Sweep, SweepPoint, SweepReport};
pub use latency::{add_exact, LatencySummary};
pub use report::{
    summarize, summarize_with_histograms, DeviceIdentity, DeviceReport, DriverReport, Figures,
    FleetHost, FleetSummary, HostHistograms, HostReport, KernelCount, KernelCounts, LoadGenerator,
    OpSummary, Provenance, WorkerReport, WorkloadSummary, SCHEMA_VERSION,
};
pub use series::{
    DeviceSecond, OpRates, OpSecond, OpSeconds, SecondHistograms, SecondPoint, TimeSeries,
};
pub use spec::{HostSpec, Tolerance, VolumeSpec, PROFILES};
pub use steady_state::{SteadyState, SteadyStateRule, WindowFit};
pub use verdict::{judge, Bottleneck, SpecSet, Verdict, VerifyReport};
