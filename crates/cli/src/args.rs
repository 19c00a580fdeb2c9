//! The command line: [`Cli`] (clap) and the main run's options [`RunArgs`], which become a
//! plain [`PlanRequest`] ([`RunArgs::request`]) for [`crate::plan::plan_run`] to check against
//! the targets and the host before any I/O. Each subcommand's options are in a module of
//! their own here ([`suite`], [`verify`] for verify, sweep and curve, [`fleet`] for merge,
//! [`doctor`], [`demo`]); none imports the command it configures, and each command imports
//! its options from here.
//!
//! Syntax errors (a size that is not a size) come from clap's value parsers, which use
//! [`crate::units`]; everything that needs the targets or the host (a block size that does
//! not fit a device, a CPU that is not online) is a [`crate::plan::BadInput`] from the planner. Both exit
//! with [`crate::exit_code::BAD_INPUT`].

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use hostmax_device::{parse_cpu_list, CpuListError};
use hostmax_engine::{IoPattern, MAX_IODEPTH};

use crate::plan::PlanRequest;
use crate::units::{parse_count, parse_duration, parse_percent, parse_seed, parse_size};

pub mod demo;
pub mod doctor;
pub mod fleet;
pub mod spec;
pub mod suite;
pub mod verify;

/// `hostmax`: find and verify the maximum storage performance of a host.
#[derive(Debug, Parser)]
#[command(
    name = "hostmax",
    version,
    about = "Find and verify the maximum storage performance of a host across many block volumes",
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  hostmax --devices '/dev/sd[b-u]'                 4k random reads on 20 volumes\n  hostmax --devices /dev/nvme*n1 --rw randrw --rwmixread 70 --allow-write --json report.json\n  hostmax demo                                     a simulated host of throttled loop volumes\n  hostmax demo --volumes 4 --runtime 3s            a smaller, shorter one\n\nExit codes: 0 ok, 1 failed verdict, 2 bad input or refused, 3 I/O errors, 4 other failure, 5 --verify found bad data"
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
}

/// A CPU list as given to `--cpus`, sorted and without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

/// Parses `--cpus`.
pub(crate) fn cpu_list_arg(s: &str) -> Result<CpuList, CpuListError> {
    parse_cpu_list(s).map(CpuList)
}

fn pattern_arg(s: &str) -> Result<IoPattern, hostmax_engine::UnknownPattern> {
    s.parse()
}

/// Options of the host-max test, with fio's names.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Block devices or regular files; paths, or quoted glob patterns such as '/dev/sd[b-u]'.
    /// Takes several values and may be repeated; the same device named twice counts once.
    #[arg(long, value_name = "PATH|PATTERN", num_args = 1.., action = clap::ArgAction::Append)]
    pub devices: Vec<OsString>,

    /// fio's way to name devices: one colon-separated list (/dev/sdb:/dev/sdc; '\:' is a colon
    /// inside a name), added to --devices.
    #[arg(long, value_name = "PATH[:PATH...]", action = clap::ArgAction::Append)]
    pub filename: Vec<String>,

    /// Access pattern: randread, randwrite, randrw, read or write.
    #[arg(long, value_name = "PATTERN", default_value = "randread", value_parser = pattern_arg, allow_hyphen_values = true)]
    pub rw: IoPattern,

    /// Read share in percent for randrw [default: 50].
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent, allow_hyphen_values = true)]
    pub rwmixread: Option<u8>,

    /// Bytes per I/O, 512 to 8m, a multiple of every device's logical block size.
    #[arg(long, value_name = "SIZE", default_value = "4k", value_parser = parse_size, allow_hyphen_values = true)]
    pub bs: u64,

    /// I/Os in flight per device.
    #[arg(long, value_name = "N", default_value_t = 32, allow_hyphen_values = true,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_IODEPTH)))]
    pub iodepth: u32,

    /// Working set per device, from its start, a multiple of --bs [default: the whole device].
    /// A --devices path that does not exist becomes a new file of this size.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub size: Option<u64>,

    /// Measured time (ms, s, m, h; a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub runtime: Duration,

    /// Time before the measured window whose I/O is done but not counted.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub ramp: Duration,

    /// CPUs the workers may use, e.g. 0-3,6 [default: every online CPU this process may use].
    #[arg(long, value_name = "LIST", value_parser = cpu_list_arg, allow_hyphen_values = true)]
    pub cpus: Option<CpuList>,

    /// Seed of the random offsets (decimal or 0x hex): the same seed gives the same offsets.
    #[arg(long, value_name = "N", value_parser = parse_seed, allow_hyphen_values = true)]
    pub seed: Option<u64>,

    /// Cap on I/Os per second, per device (50k is 50,000).
    #[arg(long, value_name = "N", value_parser = parse_count, allow_hyphen_values = true)]
    pub rate_iops: Option<u64>,

    /// Write the JSON report to PATH, or to stdout with '-' (then nothing else goes there).
    #[arg(long, value_name = "PATH|-", allow_hyphen_values = true)]
    pub json: Option<PathBuf>,

    /// Allow writing to block devices and files that hold data (destroys their data).
    /// Mounted, held or swap devices are refused anyway.
    #[arg(long)]
    pub allow_write: bool,

    /// Measure a partition beside its own disk (the same blocks twice); refused without it.
    #[arg(long)]
    pub allow_overlap: bool,

    /// With --allow-write: also write devices that carry a partition table, filesystem, RAID,
    /// LVM, LUKS, ZFS or swap signature, or have partitions (destroys them). Mounted, held,
    /// active-swap devices and the root device are refused anyway.
    #[arg(long)]
    pub force: bool,

    /// Do not time I/Os into latency histograms (to measure what recording costs).
    #[arg(long)]
    pub no_latency: bool,

    /// What to do when a device fails an I/O: continue (keep going), stop-device (take that
    /// device out, the others go on) or stop-all (end the run).
    #[arg(long, value_name = "POLICY", default_value = "stop-device", value_parser = parse_error_policy)]
    pub on_error: hostmax_engine::ErrorPolicy,

    /// One worker thread per device instead of one per CPU (fio's layout; for comparisons).
    #[arg(long)]
    pub thread_per_device: bool,

    /// Poll for completions instead of waiting for interrupts (only devices with poll queues,
    /// `/sys/block/DEV/queue/io_poll` = 1, such as NVMe with `nvme.poll_queues`).
    #[arg(long)]
    pub iopoll: bool,

    /// Let a kernel thread submit I/O (IORING_SETUP_SQPOLL): no system call per batch, at the
    /// cost of a busy kernel thread per worker.
    #[arg(long)]
    pub sqpoll: bool,

    /// Percent of each written block a compressor can remove (fio's
    /// buffer_compress_percentage: each 512-byte chunk ends in that share of zeros).
    /// Default 0: incompressible.
    #[arg(long, value_name = "PERCENT", default_value_t = 0, value_parser = parse_percent, allow_hyphen_values = true)]
    pub buffer_compress_percentage: u8,

    /// Percent of written blocks that repeat an earlier block of the same device (fio's
    /// dedupe_percentage). Default 0: every written block is unique.
    #[arg(long, value_name = "PERCENT", default_value_t = 0, value_parser = parse_percent, allow_hyphen_values = true)]
    pub dedupe_percentage: u8,

    /// Check the data (fio's verify): every written block carries its offset, device, write
    /// generation and run id and a checksum; reads of blocks written in this run are checked
    /// during it, and every written block is read back and checked once after it.
    #[arg(long)]
    pub verify: bool,

    /// Options for runs on many hosts.
    #[command(flatten)]
    pub fleet: fleet::FleetRunArgs,
    /// What the volumes and the host promise (a verdict after the run); the flattened struct
    /// opens its own help heading, so it comes last.
    #[command(flatten)]
    pub spec: spec::SpecArgs,
}

impl RunArgs {
    /// The plain planning request these options make.
    pub fn request(&self) -> PlanRequest {
        PlanRequest {
            devices: device_args(self),
            pattern: self.rw,
            rwmixread: self.rwmixread,
            block_size: self.bs,
            iodepth: self.iodepth,
            working_set: self.size,
            runtime: self.runtime,
            ramp: self.ramp,
            cpus: self.cpus.as_ref().map(|list| list.0.clone()),
            seed: self.seed,
            rate_iops: self.rate_iops,
            json: self.json.clone(),
            allow_write: self.allow_write,
            allow_overlap: self.allow_overlap,
            force: self.force,
            record_latency: !self.no_latency,
            on_error: self.on_error,
            layout: if self.thread_per_device {
                hostmax_engine::ThreadLayout::PerDevice
            } else {
                hostmax_engine::ThreadLayout::PerCpu
            },
            polling: hostmax_engine::Polling {
                iopoll: self.iopoll,
                sqpoll: self.sqpoll,
            },
            write_data: hostmax_engine::WriteData {
                compress_percent: self.buffer_compress_percentage,
                dedupe_percent: self.dedupe_percentage,
                verify: self.verify,
            },
            start_at: self.fleet.start_at,
            hdr_log: self.fleet.hdr_log.clone(),
            series_histograms: !self.fleet.no_series_histograms,
        }
    }
}

/// `--devices` and the names of fio's colon-separated `--filename` lists, in that order.
fn device_args(args: &RunArgs) -> Vec<OsString> {
    let mut out = args.devices.clone();
    for list in &args.filename {
        out.extend(split_fio_filename(list).into_iter().map(OsString::from));
    }
    out
}

/// Splits fio's `--filename` list at colons; `\:` is a colon inside a name (fio's escape, for
/// names such as `/dev/disk/by-path/pci-0000\:00\:1f.2-ata-1`).
pub fn split_fio_filename(list: &str) -> Vec<String> {
    let mut names = vec![String::new()];
    let mut chars = list.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                chars.next();
                names.last_mut().expect("never empty").push(':');
            }
            ':' => names.push(String::new()),
            c => names.last_mut().expect("never empty").push(c),
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

fn parse_error_policy(s: &str) -> Result<hostmax_engine::ErrorPolicy, String> {
    s.parse()
}

#[cfg(test)]
mod tests {
    use super::*;

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
            (vec!["--iodepth", "0"], "1..=4096"),
            (vec!["--iodepth", "4097"], "1..=4096"),
            (vec!["--bogus"], "--bogus"),
        ] {
            let err = parse(&argv).expect_err(&format!("{argv:?}"));
            assert_ne!(err.exit_code(), 0);
            assert!(err.to_string().contains(expected), "{argv:?}: {err}");
        }
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
}
