//! hostmax, the command-line tool, as a library: the pieces the `hostmax` binary is made of.
//! [`run`] runs a parsed command line. The commands (`app`, `suite`, `verify`, `doctor`) are
//! private; what is public is what another crate needs: the command line for the binary and
//! the fuzzers, the planner, and the parsers, probes, charts and simulated host the tests and
//! fuzzers drive directly.
//!
//! - [`plan`]: [`plan::plan_run`] checks a plain [`plan::PlanRequest`] against the targets
//!   and the host before any I/O into a [`plan::RunPlan`]; [`plan::BadInput`] is the error
//!   that maps to exit code 2.
//! - `app`: runs a plan: starts the engine, shows the live view, handles signals, and
//!   hands the result to the aggregator and the output.
//! - `output`: the live view, the final table, the `--json` report, and every output
//!   file's destination (checked once, written atomically).
//! - [`args`]: the command line ([`args::Cli`]; [`args::RunArgs::request`] makes the plan
//!   request); [`units`] parses sizes, durations, CPU lists; [`devices`] expands and
//!   de-duplicates `--devices`; write safety is `hostmax_device`'s (`hostmax_device::safety`),
//!   its refusals worded with this tool's flags ([`plan::FLAG_WORDS`]).
//! - [`fleet`]: runs on many hosts: `--start-at`, `--hdr-log` and `hostmax merge`.
//! - `verify`: spec options and verdicts of the main run, `hostmax verify` and `hostmax
//!   sweep`; [`chart`] draws SVG charts.
//! - [`simhost`]: the simulated host of throttled loop volumes on tmpfs that `hostmax demo`
//!   and the tests run against.
//! - `suite`: `hostmax suite`, the CloudHarmony-style block size x mix matrix with
//!   preconditioning, SNIA steady state, checkpoints and reports.

mod app;
pub mod args;
pub mod chart;
pub mod devices;
mod doctor;
pub mod exit_code;
pub mod fleet;
mod output;
pub mod plan;
mod rfc3339;
pub mod signals;
pub mod simhost;
mod suite;
pub mod units;
mod verify;

#[cfg(test)]
pub(crate) mod test_support;

/// Runs the command `cli` names (the host-max test when it names none) and returns its exit
/// code; an error maps to one with [`exit_code::for_error`]. The caller installs the signal
/// watch first ([`signals::watch`]).
pub fn run(cli: args::Cli) -> anyhow::Result<i32> {
    use args::Command;
    if !matches!(cli.command, Some(Command::Merge(_) | Command::Doctor(_))) {
        // Every command but merge and doctor (which reports io_uring's state itself) runs the
        // engine. Before any device is opened: a machine without io_uring gets its cause, not
        // a device's error.
        hostmax_engine::check_io_uring().map_err(|why| plan::BadInput(why.to_string()))?;
    }
    match cli.command {
        Some(Command::Demo(args)) => app::demo(&args),
        Some(Command::Suite(args)) => suite::run(&args),
        Some(Command::Merge(args)) => fleet::merge::run_merge(&args),
        Some(Command::Verify(args)) => verify::command::verify(&args),
        Some(Command::Sweep(args)) => verify::sweep::sweep(&args),
        Some(Command::Doctor(args)) => doctor::run(&args),
        Some(Command::Curve(args)) => verify::curve::curve(&args),
        None => {
            plan::plan_run(&cli.run.request()).and_then(|plan| verify::run(plan, &cli.run.spec))
        }
    }
}
