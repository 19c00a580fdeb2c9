//! The command line: [`Cli`] (clap) and the main run's options [`RunArgs`] ([`run`]), which become a
//! plain [`PlanRequest`](crate::plan::PlanRequest) ([`RunArgs::request`]) for [`crate::plan::plan_run`] to check against
//! the targets and the host before any I/O. Each subcommand's options are in a module of
//! their own here ([`suite`], [`verify`] for verify, sweep and curve, [`fleet`] for merge,
//! [`doctor`], [`demo`], [`prepare`]); none imports the command it configures, and each command imports
//! its options from here.
//!
//! Syntax errors (a size that is not a size) come from clap's value parsers, which use
//! [`crate::units`]; everything that needs the targets or the host (a block size that does
//! not fit a device, a CPU that is not online) is a [`crate::error::BadInput`] from the planner. Both exit
//! with [`crate::exit_code::BAD_INPUT`].

use clap::{Parser, Subcommand};

pub mod demo;
pub mod doctor;
pub mod fleet;
pub mod metrics;
pub mod prepare;
pub mod run;
pub mod spec;
pub mod suite;
pub mod verify;

pub use run::{split_fio_filename, CpuList, RunArgs};

/// `hostmax`: find and verify the maximum storage performance of a host.
#[derive(Debug, Parser)]
#[command(
    name = "hostmax",
    version = crate::provenance::VERSION,
    about = "Find and verify the maximum storage performance of a host across many block volumes",
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  hostmax --devices '/dev/sd[b-u]'                 4k random reads on 20 volumes\n  hostmax --devices /dev/nvme*n1 --rw randrw --rwmixread 70 --allow-write --json report.json\n  hostmax demo                                     a simulated host of throttled loop volumes\n  hostmax demo --volumes 4 --runtime 3s            a smaller, shorter one\n\nExit codes: 0 ok, 1 failed verdict, 2 bad input or refused, 3 I/O errors, 4 other failure, 5 --verify found bad data, 6 a device stopped answering, 7 verdict not concluded (nothing judged), 128+N interrupted by signal N (130 SIGINT, 143 SIGTERM, 129 SIGHUP, 131 SIGQUIT)"
)]
pub struct Cli {
    /// A subcommand; without one, runs the host-max test on `--devices`.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The host-max test's options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Build a simulated host of throttled loop volumes on tmpfs (files without root), run
    /// the host-max test on it, and remove everything it made.
    Demo(demo::DemoArgs),
    /// The CloudHarmony-grade suite: block size x read/write mix matrix, preconditioning,
    /// rounds until SNIA steady state, JSON/HTML reports; resumable.
    Suite(Box<suite::SuiteArgs>),
    /// Merge the JSON reports of hosts that ran the same workload together into one exact
    /// fleet report (counts add, percentiles from the added histograms).
    Merge(fleet::MergeArgs),
    /// Run the phases a spec needs (4k for IOPS, 1m for MB/s, 4k at depth 1 for latency) and
    /// print one verdict: per volume and for the host, measured against promised.
    Verify(verify::VerifyArgs),
    /// Run the same workload on 1, 2, 4, ... and all volumes; find the host's ceiling and knee.
    Sweep(verify::SweepArgs),
    /// Read the host settings that hold a host-maximum test back (per device and for the
    /// host), most harmful first, each with why and the command that changes it. Read-only.
    Doctor(doctor::DoctorArgs),
    /// The load-latency curve by queue depth: IOPS and exact p50/p95/p99/p99.9 per step, per
    /// volume and for the host; the most IOPS at which a latency promise holds (the SLO knee)
    /// and the saturation point.
    Curve(Box<verify::CurveArgs>),
    /// Read every block of each device once, start to end (volumes restored from snapshots
    /// are slow until each block has been read); never writes. Resumable with --state.
    #[command(
        after_help = "Examples:\n  hostmax prepare --devices '/dev/sd[b-u]'                        read 20 volumes whole\n  hostmax prepare --devices '/dev/sd[b-u]' --state prepare.json   a stopped one continues"
    )]
    Prepare(prepare::PrepareArgs),
}

/// The command line `argv` (after `hostmax`), parsed; panics on a parse error: for the
/// commands' unit tests.
#[cfg(test)]
pub(crate) fn parsed(argv: &[&str]) -> Cli {
    let argv = std::iter::once("hostmax").chain(argv.iter().copied());
    <Cli as clap::Parser>::try_parse_from(argv).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlanRequest;

    fn parse(argv: &[&str]) -> Result<RunArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("hostmax").chain(argv.iter().copied())).map(|c| c.run)
    }

    #[test]
    fn the_command_lines_defaults_are_the_plain_requests() {
        assert_eq!(parse(&[]).unwrap().request(), PlanRequest::default());
    }

    #[test]
    fn syntax_errors_come_from_clap_with_the_option_named() {
        for (argv, expected) in [
            (vec!["--bs", "abc"], "--bs"),
            (vec!["--runtime", "-5s"], "negative"),
            (vec!["--rwmixread", "101"], "above 100"),
            (vec!["--rw", "bogus"], "unknown I/O pattern 'bogus'"),
            (vec!["--cpus", "1-"], "--cpus"),
            (vec!["--seed", "xyz"], "--seed"),
            (vec!["--rate-iops", "0"], "zero"),
            (vec!["--iodepth", "-1"], "--iodepth"),
            (vec!["--bogus"], "--bogus"),
        ] {
            let err = parse(&argv).expect_err(&format!("{argv:?}"));
            assert_ne!(err.exit_code(), 0);
            assert!(err.to_string().contains(expected), "{argv:?}: {err}");
        }
        // A depth out of range is the engine's to refuse (Workload::check, when planning),
        // not the parser's.
        assert_eq!(parse(&["--iodepth", "4097"]).unwrap().iodepth, 4097);
        assert!(matches!(
            Cli::try_parse_from(["hostmax", "demo"]).unwrap().command,
            Some(Command::Demo(_))
        ));
    }

    #[test]
    fn fio_filename_lists_add_to_devices() {
        assert_eq!(
            split_fio_filename("/dev/sdb:/dev/sdc::/dev/sdd"),
            ["/dev/sdb", "/dev/sdc", "/dev/sdd"]
        );
        assert_eq!(
            split_fio_filename("/dev/disk/by-path/pci-0000\\:00\\:1f.2-ata-1"),
            ["/dev/disk/by-path/pci-0000:00:1f.2-ata-1"]
        );
        let got = parse(&["--devices", "/dev/x", "--filename=/dev/a:/dev/b"])
            .unwrap()
            .request();
        assert_eq!(got.devices, ["/dev/x", "/dev/a", "/dev/b"]);
    }

    #[test]
    fn rw_help_names_every_pattern() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let help = cli
            .get_arguments()
            .find(|a| a.get_id() == "rw")
            .and_then(|a| a.get_help())
            .expect("--rw has help")
            .to_string();
        let words: Vec<&str> = help.split(|c: char| !c.is_alphanumeric()).collect();
        for pattern in hostmax_engine::IoPattern::ALL {
            assert!(words.contains(&pattern.name()), "{pattern:?}: {help}");
        }
    }
}
