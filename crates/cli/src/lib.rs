//! hostmax, the command-line tool, as a library: the pieces the `hostmax` binary is made of.
//! [`run`] runs a parsed command line. What is public is what another crate needs: the command
//! line for the binary and the fuzzers, the planner, and the parsers, probes, charts the tests and fuzzers drive directly.
//!
//! The rooms, top down (a module uses only those below it, never a command's):
//! - `command`: one module per subcommand (the main run, `demo`, `verify`, `sweep`, `curve`,
//!   `suite`, `doctor`, `merge`, `prepare`), each from its parsed options to its exit code.
//! - `engine`: the one seam every command's I/O goes through (the real engine, made in
//!   [`run`]'s dispatch, or a fake in unit tests). `measure`: one run through it, watched by
//!   the one observer (identity re-check, live view or a command's progress, `--start-at`,
//!   the outputs that record runs, signals, live metrics), a plan measured into a stamped
//!   report, and printing a report.
//! - `verdict`: spec options into a spec set, the run shape each promise needs, the verdict
//!   table. `diagnosis`: the host settings that hold a test back (`hostmax doctor`, and the
//!   main run's one-line warning).
//! - [`plan`]: [`plan::plan_run`] checks a plain [`plan::PlanRequest`] against the targets
//!   and the host before any I/O into a [`plan::RunPlan`], its fleet options
//!   ([`plan::fleet`], [`plan::start_at`]) included.
//! - `output`: the live view, the final table, the curve's table and chart, and every output
//!   file: each command declares its outputs beside its plan (`output::export::Outputs`),
//!   checked once before any I/O and written once through one trait, `output::export::Export`
//!   (the `--json` report, the `--hdr-log` holding every run, `--svg` charts, the suite's
//!   page), atomically; [`chart`] draws SVG charts; [`provenance`] stamps each report with its run
//!   id, window, version and host, and checks that merged runs were measured together.
//! - [`args`]: the command line ([`args::Cli`]; [`args::RunArgs::request`] makes the plan
//!   request); [`units`] parses sizes, durations, CPU lists; [`devices`] expands and
//!   de-duplicates `--devices`; write safety is `hostmax_device`'s (`hostmax_device::safety`).
//! - [`error`]: [`error::BadInput`], input the user can fix, and the engine's refusals worded
//!   with this tool's flags ([`error::FLAG_WORDS`]); [`exit_code`] maps outcomes to codes.
//! - [`kernel_count`]: the kernel's own count of each device's I/Os over a run, beside
//!   hostmax's, and why they differ.
//! - [`signals`]: SIGINT, SIGTERM, SIGHUP and SIGQUIT handling. `hostmax demo` runs against the
//!   simulated host of throttled loop volumes on tmpfs, the `hostmax_simhost` crate (the
//!   tests' too).

// Flags and printing: the unsafe the tool needs is in the engine and device crates.
#![forbid(unsafe_code)]
// Text for people goes through `stdio` (`print_stdout`, `errln!`): it cannot panic on a
// closed pipe and escapes control characters; `print!` and `eprint!` do neither.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod args;
pub mod chart;
mod command;
pub mod devices;
mod diagnosis;
// The seam every command's I/O goes through (the real engine, or a fake in unit tests).
mod engine;
// Input files read with bounds.
pub mod error;
pub mod exit_code;
mod input;
pub mod kernel_count;
mod measure;
mod output;
pub mod plan;
pub mod provenance;
// RFC 3339 times live with the reports that carry them (`crate::rfc3339::...` still reads).
use hostmax_aggregate::rfc3339;
pub mod signals;
pub use output::stdio;
pub mod units;
mod verdict;

#[cfg(test)]
pub(crate) mod test_support;

/// Runs the command `cli` names (the host-max test when it names none) and returns its exit
/// code; an error maps to one with [`exit_code::for_error`]. The caller installs the signal
/// watch first ([`signals::watch`]). A measuring command's `--metrics-listen` is bound here,
/// before the command's first check, and served until it ends.
pub fn run(cli: args::Cli) -> anyhow::Result<i32> {
    // The one real engine; every command that runs I/O takes it (unit tests give a fake).
    run_on(&engine::RealEngine, cli)
}

/// [`run`] over `engine`.
fn run_on(engine: &dyn engine::Engine, cli: args::Cli) -> anyhow::Result<i32> {
    use args::Command;
    if !matches!(cli.command, Some(Command::Merge(_) | Command::Doctor(_))) {
        // Every command but merge and doctor (which reports io_uring's state itself) reads
        // or writes through the engine's rings (prepare's reads too). Before any device is
        // opened: a machine without io_uring gets its cause, not a device's error.
        engine
            .check_io_uring()
            .map_err(|why| error::BadInput(why.to_string()))?;
    }
    // Bound before any I/O: a port in use is bad input.
    let metrics = output::metrics::serve(metrics_listen(&cli), command_name(&cli))?;
    let ran = match cli.command {
        Some(Command::Demo(args)) => command::demo::demo(engine, &args),
        Some(Command::Suite(args)) => command::suite::run(engine, &args),
        Some(Command::Merge(args)) => command::merge::run_merge(&args),
        Some(Command::Verify(args)) => command::verify::verify(engine, &args),
        Some(Command::Sweep(args)) => command::sweep::sweep(engine, &args),
        Some(Command::Doctor(args)) => command::doctor::run(engine, &args),
        Some(Command::Curve(args)) => command::curve::curve(engine, &args),
        Some(Command::Prepare(args)) => command::prepare::run(engine, &args),
        None => command::run::run(engine, &cli.run),
    };
    if ran.is_err() {
        // Refused before any I/O: the files made for `--size` hold nothing; take them away.
        devices::remove_unused_files();
    } else if let Some(metrics) = metrics {
        // The figures are final: a scraper gets one more look (an error stops at once).
        metrics.finish();
    }
    ran
}

/// Where a measuring command serves its live metrics (`--metrics-listen`), if it does.
fn metrics_listen(cli: &args::Cli) -> Option<std::net::SocketAddr> {
    use args::Command;
    match &cli.command {
        Some(Command::Demo(args)) => args.metrics.metrics_listen,
        Some(Command::Suite(args)) => args.metrics.metrics_listen,
        Some(Command::Verify(args)) => args.run.fleet.metrics.metrics_listen,
        Some(Command::Sweep(args)) => args.run.fleet.metrics.metrics_listen,
        Some(Command::Curve(args)) => args.run.fleet.metrics.metrics_listen,
        // prepare reads to initialise volumes: it measures nothing a scraper would want.
        Some(Command::Merge(_) | Command::Doctor(_) | Command::Prepare(_)) => None,
        None => cli.run.fleet.metrics.metrics_listen,
    }
}

/// The command's name, as the metrics label it.
fn command_name(cli: &args::Cli) -> &'static str {
    use args::Command;
    match &cli.command {
        Some(Command::Demo(_)) => "demo",
        Some(Command::Suite(_)) => "suite",
        Some(Command::Merge(_)) => "merge",
        Some(Command::Verify(_)) => "verify",
        Some(Command::Sweep(_)) => "sweep",
        Some(Command::Doctor(_)) => "doctor",
        Some(Command::Curve(_)) => "curve",
        Some(Command::Prepare(_)) => "prepare",
        None => "run",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fake::FakeEngine;

    #[test]
    fn a_host_without_io_uring_is_told_so_before_any_device_is_read() {
        let dir = test_support::ScratchDir::new("no-io-uring");
        let device = test_support::target_files(&dir, 1, 1 << 20).remove(0);
        let state = dir.0.join("prepare.state").display().to_string();
        for argv in [
            vec!["prepare", "--devices", &device, "--state", &state],
            vec!["--devices", &device, "--runtime", "1s"],
        ] {
            let engine = FakeEngine::new().without_io_uring();
            let err = run_on(&engine, args::parsed(&argv)).unwrap_err();
            let bad = err.downcast_ref::<error::BadInput>().expect("bad input");
            assert!(
                bad.0.contains("this kernel has no io_uring"),
                "{argv:?}: {bad}"
            );
            assert!(engine.calls().is_empty(), "{argv:?}: {:?}", engine.calls());
        }
    }
}
