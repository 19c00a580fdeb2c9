//! hostmax, the command-line tool, as a library: the pieces the `hostmax` binary is made of.
//!
//! - [`plan`]: a checked [`plan::RunPlan`] (targets probed, workload validated) and the
//!   [`plan::BadInput`] error that maps to exit code 2.
//! - [`app`]: runs a plan: starts the engine, shows the live view, handles signals, and
//!   hands the result to the aggregator and the output.
//! - [`output`]: the live view, the final table and the `--json` report.
//! - [`args`]: the command line ([`args::Cli`]) and [`args::plan_run`], which checks it all
//!   before any I/O; [`units`] parses sizes, durations, CPU lists; [`devices`] expands and
//!   de-duplicates `--devices`; write safety is the engine's (`hostmax_engine::safety`),
//!   its refusals worded with this tool's flags ([`plan::FLAG_WORDS`]).
//! - [`fleet`]: runs on many hosts: `--start-at`, `--hdr-log` and `hostmax merge`.
//! - [`verify`]: spec options and verdicts of the main run, `hostmax verify` and `hostmax
//!   sweep`; [`chart`] draws SVG charts.
//! - [`simhost`]: the simulated host of throttled loop volumes on tmpfs that `hostmax demo`
//!   and the tests run against.
//! - [`suite`]: `hostmax suite`, the CloudHarmony-style block size x mix matrix with
//!   preconditioning, SNIA steady state, checkpoints and reports.

pub mod app;
pub mod args;
pub mod chart;
pub mod devices;
pub mod doctor;
pub mod exit_code;
pub mod fleet;
pub mod output;
pub mod plan;
pub mod signals;
pub mod simhost;
pub mod suite;
pub mod units;
pub mod verify;

#[cfg(test)]
pub(crate) mod test_support;
