//! Consistency: how often a promise held, second by second. Cloud SLAs promise a figure "99%
//! of the time"; a run's average can meet the figure while some seconds fall far short.
//!
//! [`Consistency`] is the share of one-second intervals that must be at or above
//! (1 - tolerance) x the promise; [`judge_runs`] (for a verdict's runs, [`judge_consistency`];
//! or any labelled runs, such as the rounds of a test matrix) judges each volume and the host over every second of the
//! runs that judge IOPS (or, when nothing promises IOPS, throughput) by the verdict's rules,
//! lists the worst seconds, and gives each volume's per-second coefficient of variation.
//!
//! `outcome.rs` holds what a verdict says (a report carries it), `judge.rs` the judging.

mod judge;
mod outcome;

pub use crate::spec::Consistency;
pub use judge::{judge_consistency, judge_runs};
pub use outcome::{
    ConsistencyVerdict, DeviceConsistency, SecondFigure, SeriesConsistency, WORST_SECONDS,
};
