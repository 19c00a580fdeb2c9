//! Judging runs against specs: a [`SpecSet`] (each device's [`DeviceExpectation`], the
//! [`HostSpec`](crate::HostSpec), the [`Tolerance`](crate::Tolerance)) and one or more
//! [`HostReport`](crate::HostReport)s give a [`Verdict`]: per device and for the host,
//! measured against expected, pass or fail, and, when the host falls short of what its volumes
//! promise together, the [`Bottleneck`].
//!
//! The rules, the one place both a verification of several runs (through [`judge`]) and a
//! suite of cells (each through [`check_promise`]) judge a promise by, are one table,
//! [`PROMISE_KINDS`]:
//! - IOPS on runs of 4 KiB blocks or smaller: the published IOPS are "at 4K" (OCI; AWS counts
//!   an SSD volume's IOPS on small I/O too), and a larger block can meet the throughput cap
//!   first (a 50 GB OCI volume: 3,000 x 8 KiB = 24.6 MB/s, above its 24 MB/s); a 512-byte run
//!   moves less data per I/O, so it must show the IOPS as well;
//! - throughput on runs of 256 KiB blocks and larger ("256k or larger block sizes should be
//!   used" to show throughput limits);
//! - IOPS and throughput only on runs with more than one I/O in flight: at depth 1 a volume
//!   delivers 1/latency I/Os a second whatever its cap, which shows its latency, not its rate;
//! - p95 latency on runs of 4 KiB blocks or smaller at queue depth 1: at depth N a volume
//!   capped at C IOPS answers in about N/C seconds (Little's law), so a sub-millisecond promise
//!   means one I/O at a time. Reads and writes are judged apart, each from its own histogram,
//!   and each must keep the promise: a few slow writes in a mostly-read mix would hide in a
//!   p95 of both together.
//!
//! A promise must hold on every run that can show it: the worst of those runs' figures (the
//! lowest rate, the highest p95) is the one compared.
//!
//! The files, lowest first: `promise.rs` (the tables: kinds of promise and their figures,
//! what a run shows of each, and [`PerKind`]/[`PerFigure`], which a verdict keeps them in), `bottleneck.rs` (the bottleneck rule),
//! `outcome.rs` (what a verdict says), `spec_set.rs` (what runs are judged against),
//! `checks.rs` (each figure against the runs), `judge.rs` ([`judge`] and [`VerifyReport`]).

mod bottleneck;
mod checks;
mod judge;
mod outcome;
mod promise;
mod spec_set;

pub use bottleneck::{bottleneck, coefficient_of_variation, Bottleneck, VolumeShare, FLAT_CV};
pub use checks::{check_figure, check_promise, JudgedRun};
pub use judge::{judge, VerifyReport};
pub use outcome::{
    figure_to_reach, keeps, BurstFinding, DeviceFault, DeviceVerdict, FigureCheck, HostVerdict,
    Judgement, LatencyTime, NotJudged, Promiser, Verdict, VerdictFigures,
};
pub use promise::{
    BlockSizes, DepthClass, Figure, FigureRow, MeasuredFigures, OpFigures, PerFigure, PerKind,
    PromiseKind, RateCap, RuleKind, RunNeeds, RunShape, Unit, FIGURES, IOPS_BLOCK_MAX,
    PROMISE_KINDS, THROUGHPUT_BLOCK_MIN,
};
pub use spec_set::{DeviceExpectation, SpecSet};
