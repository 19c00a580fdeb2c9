//! The command line: [`Cli`] (clap), and [`plan_run`], which checks everything the user gave
//! against the targets and the host before any I/O and yields a [`RunPlan`].
//!
//! Syntax errors (a size that is not a size) come from clap's value parsers, which use
//! [`crate::units`]; everything that needs the targets or the host (a block size that does
//! not fit a device, a CPU that is not online) is a [`BadInput`] from [`plan_run`]. Both exit
//! with [`crate::exit_code::BAD_INPUT`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use hostmax_engine::{
    IoPattern, TargetInfo, Workload, MAX_BLOCK_SIZE, MAX_IODEPTH, MIN_BLOCK_SIZE,
};

use crate::devices::{create_files, expand_device_args, resolve_targets_creating};
use crate::plan::{BadInput, JsonDest, RunPlan};
use crate::units::{
    format_size, human_size, parse_count, parse_duration, parse_percent, parse_seed, parse_size,
};
use hostmax_engine::placement::{format_cpu_list, parse_cpu_list, CpuListError};
use hostmax_engine::safety::{check_write_safety, SystemSources, WriteSafety};

/// Open files a run needs besides one per target (stdio, rings, eventfds, the report).
pub const RESERVED_FDS: u64 = 32;

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
    Demo(crate::app::DemoArgs),
    /// The CloudHarmony-grade suite: block size x read/write mix matrix, preconditioning,
    /// rounds until SNIA steady state, JSON/HTML reports; resumable.
    Suite(Box<crate::suite::SuiteArgs>),
    /// Merge the JSON reports of hosts that ran the same workload together into one exact
    /// fleet report (counts add, percentiles from the added histograms).
    Merge(crate::fleet::merge::MergeArgs),
    /// Run the phases a spec needs (4k for IOPS, 1m for MB/s, 4k at depth 1 for latency) and
    /// print one verdict: per volume and for the host, measured against promised.
    Verify(crate::verify::command::VerifyArgs),
    /// Run the same workload on 1, 2, 4, ... and all volumes; find the host's ceiling and knee.
    Sweep(crate::verify::sweep::SweepArgs),
    /// Read the host settings that hold a host-maximum test back (per device and for the
    /// host), most harmful first, each with why and the command that changes it. Read-only.
    Doctor(crate::doctor::DoctorArgs),
    /// The load-latency curve by queue depth: IOPS and exact p50/p95/p99/p99.9 per step, per
    /// volume and for the host; the most IOPS at which a latency promise holds (the SLO knee)
    /// and the saturation point.
    Curve(Box<crate::verify::curve::CurveArgs>),
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
    pub fleet: crate::fleet::FleetRunArgs,
    /// What the volumes and the host promise (a verdict after the run); the flattened struct
    /// opens its own help heading, so it comes last.
    #[command(flatten)]
    pub spec: crate::verify::SpecArgs,
}

/// What [`plan_run`] checks against: the host's CPUs, open-file limit and system state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLimits {
    /// Online CPUs (`/sys/devices/system/cpu/online`).
    pub online_cpus: Vec<usize>,
    /// CPUs in this process's affinity mask.
    pub allowed_cpus: Vec<usize>,
    /// Soft and hard `RLIMIT_NOFILE`.
    pub nofile: (u64, u64),
    /// Where the write-safety checks read mounts, swaps and block devices.
    pub sources: SystemSources,
}

impl HostLimits {
    /// Reads this host's limits.
    pub fn read() -> anyhow::Result<HostLimits> {
        use anyhow::Context;
        let online_text = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .context("reading /sys/devices/system/cpu/online")?;
        let online_cpus =
            parse_cpu_list(&online_text).context("parsing /sys/devices/system/cpu/online")?;
        let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
            .context("reading this process's CPU affinity")?;
        let allowed_cpus = (0..nix::sched::CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect();
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `lim` is a valid, writable rlimit for the call's duration.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
            return Err(std::io::Error::last_os_error()).context("reading RLIMIT_NOFILE");
        }
        Ok(HostLimits {
            online_cpus,
            allowed_cpus,
            nofile: (lim.rlim_cur, lim.rlim_max),
            sources: SystemSources::default(),
        })
    }
}

/// Checks the run's options against the targets and this host and makes the [`RunPlan`].
/// Nothing is written and no target is opened for writing; every error is a [`BadInput`].
pub fn plan_run(args: &RunArgs) -> anyhow::Result<RunPlan> {
    let limits = HostLimits::read()?;
    Ok(plan_run_with(args, &limits)?)
}

/// [`plan_run`] against given host limits (for tests).
///
/// Rules beyond the obvious bounds: `--rwmixread` only goes with `--rw randrw`; `--size`
/// must be a whole number of blocks (a multiple of `--bs`) and fit every device; without
/// `--size` the whole device is the working set (a tail shorter than one block is not used),
/// so `--bs` must not exceed any device.
pub fn plan_run_with(args: &RunArgs, limits: &HostLimits) -> Result<RunPlan, BadInput> {
    if args.force && !args.allow_write {
        return Err(BadInput(
            "--force needs --allow-write: add --allow-write to write devices that carry data, or drop --force"
                .into(),
        ));
    }
    let workload = check_workload(args)?;
    let cpus = match &args.cpus {
        Some(list) => Some(check_cpus(&list.0, limits)?),
        None => None,
    };
    let json = match &args.json {
        Some(path) => Some(check_json_dest(path)?),
        None => None,
    };
    let devices = device_args(args);
    if devices.is_empty() {
        return Err(BadInput(
            "no devices given: add --devices <PATH|PATTERN>... (e.g. --devices '/dev/sd[b-u]'), or run 'hostmax demo'"
                .into(),
        ));
    }
    let candidates = expand_device_args(&devices)?;
    let (mut targets, to_create) = resolve_targets_creating(&candidates, args.size)?;
    crate::devices::check_overlaps(&targets, args.allow_overlap, Path::new("/sys"))?;
    check_open_files(targets.len(), limits.nofile)?;
    for target in &targets {
        check_fits(&workload, target)?;
    }
    check_write_safety(
        &targets,
        workload.pattern,
        WriteSafety {
            allow_write: args.allow_write,
            force: args.force,
        },
        &limits.sources,
    )?;
    let fleet = crate::fleet::plan_fleet(&args.fleet, workload.runtime)?;
    // Every check passed: now a word on the names dropped as repeats (a refusal stays one line).
    for note in crate::devices::duplicate_notes(&candidates) {
        eprintln!("hostmax: {note}");
    }
    // Files hostmax makes itself hold nothing to lose: made last, once every check passed.
    if let (false, Some(size)) = (to_create.is_empty(), args.size) {
        for made in create_files(&to_create, size)? {
            if let Some(t) = targets.iter_mut().find(|t| t.path == made.path) {
                *t = made;
            }
        }
    }
    Ok(RunPlan {
        given_names: targets
            .iter()
            .map(|t| crate::devices::given_name(&devices, &t.path))
            .collect(),
        targets,
        workload,
        cpus,
        json,
        allow_write: args.allow_write,
        layout: if args.thread_per_device {
            hostmax_engine::ThreadLayout::PerDevice
        } else {
            hostmax_engine::ThreadLayout::PerCpu
        },
        on_error: args.on_error,
        fleet,
        polling: hostmax_engine::Polling {
            iopoll: args.iopoll,
            sqpoll: args.sqpoll,
        },
    })
}

/// `--devices` and the names of fio's colon-separated `--filename` lists, in that order.
pub fn device_args(args: &RunArgs) -> Vec<OsString> {
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

/// The workload from the options alone, with every check that needs no target.
fn check_workload(args: &RunArgs) -> Result<Workload, BadInput> {
    let defaults = Workload::default();
    if let Some(mix) = args.rwmixread {
        if args.rw != IoPattern::RandRw {
            return Err(BadInput(format!(
                "--rwmixread {mix} conflicts with --rw {}: a read share only applies to randrw; drop --rwmixread or use --rw randrw",
                args.rw
            )));
        }
    }
    let bs = args.bs;
    if bs == 0 {
        return Err(BadInput(format!(
            "--bs 0: a block size must be at least {}; use e.g. --bs 4k",
            format_size(MIN_BLOCK_SIZE.into())
        )));
    }
    if bs < MIN_BLOCK_SIZE.into() || bs > MAX_BLOCK_SIZE.into() {
        return Err(BadInput(format!(
            "--bs {} is out of range: use {} to {}",
            format_size(bs),
            format_size(MIN_BLOCK_SIZE.into()),
            format_size(MAX_BLOCK_SIZE.into())
        )));
    }
    if !bs.is_multiple_of(u64::from(MIN_BLOCK_SIZE)) {
        return Err(BadInput(format!(
            "--bs {bs} is not a multiple of {MIN_BLOCK_SIZE} bytes; use e.g. {} or {}",
            bs / 512 * 512,
            (bs / 512 + 1) * 512
        )));
    }
    if args.iodepth == 0 || args.iodepth > MAX_IODEPTH {
        return Err(BadInput(format!(
            "--iodepth {} is out of range: use 1 to {MAX_IODEPTH}",
            args.iodepth
        )));
    }
    if let Some(size) = args.size {
        if size == 0 {
            return Err(BadInput(
                "--size 0: the working set must hold at least one block; give e.g. --size 1g, or leave it out for the whole device"
                    .into(),
            ));
        }
        if size < bs {
            return Err(BadInput(format!(
                "--bs {} is larger than --size {}: the working set must hold at least one block",
                format_size(bs),
                format_size(size)
            )));
        }
        if size % bs != 0 {
            return Err(BadInput(format!(
                "--size {} is not a multiple of --bs {}: the working set is whole blocks; use {} or {}",
                format_size(size),
                format_size(bs),
                format_size(size / bs * bs),
                format_size(size / bs * bs + bs)
            )));
        }
    }
    if args.runtime.is_zero() {
        return Err(BadInput(
            "--runtime 0: the measured time must be positive; give e.g. --runtime 30s".into(),
        ));
    }
    if args.rate_iops == Some(0) {
        return Err(BadInput(
            "--rate-iops 0 would do no I/O; give a positive cap or leave it out".into(),
        ));
    }
    Ok(Workload {
        pattern: args.rw,
        rwmixread: args.rwmixread.unwrap_or(defaults.rwmixread),
        // Checked above to be at most MAX_BLOCK_SIZE, which is a u32.
        block_size: u32::try_from(bs).unwrap_or(MAX_BLOCK_SIZE),
        iodepth: args.iodepth,
        working_set: args.size,
        runtime: args.runtime,
        ramp: args.ramp,
        seed: args.seed.unwrap_or(defaults.seed),
        rate_iops: args.rate_iops,
        record_latency: !args.no_latency,
        io_limit: None,
        write_data: hostmax_engine::WriteData {
            compress_percent: args.buffer_compress_percentage,
            dedupe_percent: args.dedupe_percentage,
            verify: args.verify,
        },
    })
}

/// Checks that the workload fits one probed target.
fn check_fits(workload: &Workload, target: &TargetInfo) -> Result<(), BadInput> {
    let bs = u64::from(workload.block_size);
    let lbs = u64::from(target.logical_block_size.max(1));
    let path = target.path.display();
    if bs % lbs != 0 {
        let down = bs / lbs * lbs;
        let up = down + lbs;
        let suggestion = if down >= u64::from(MIN_BLOCK_SIZE) {
            format!("{} or {}", format_size(down), format_size(up))
        } else {
            format_size(up)
        };
        return Err(BadInput(format!(
            "--bs {} is not a multiple of the logical block size {lbs} of {path}; use e.g. {suggestion}",
            format_size(bs)
        )));
    }
    match workload.working_set {
        Some(size) if size > target.size => Err(BadInput(format!(
            "--size {} is larger than {path} ({}); use at most --size {}, or leave it out for the whole device",
            format_size(size),
            human_size(target.size),
            format_size(target.size / bs * bs)
        ))),
        Some(size) if size % lbs != 0 => Err(BadInput(format!(
            "--size {} is not a multiple of the logical block size {lbs} of {path}",
            format_size(size)
        ))),
        None if bs > target.size => Err(BadInput(format!(
            "--bs {} is larger than {path} ({}); use a smaller --bs",
            format_size(bs),
            human_size(target.size)
        ))),
        _ => Ok(()),
    }
}

/// Checks `--cpus` against the online CPUs and this process's affinity mask.
fn check_cpus(cpus: &[usize], limits: &HostLimits) -> Result<Vec<usize>, BadInput> {
    let offline: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !limits.online_cpus.contains(c))
        .collect();
    if !offline.is_empty() {
        return Err(BadInput(format!(
            "--cpus: CPU {} not online on this host (online: {}); pick from those",
            format_cpu_list(&offline),
            format_cpu_list(&limits.online_cpus)
        )));
    }
    let forbidden: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !limits.allowed_cpus.contains(c))
        .collect();
    if !forbidden.is_empty() {
        return Err(BadInput(format!(
            "--cpus: CPU {} online but outside this process's affinity mask (allowed: {}); pick from those or widen it (taskset, cgroup cpuset)",
            format_cpu_list(&forbidden),
            format_cpu_list(&limits.allowed_cpus)
        )));
    }
    Ok(cpus.to_vec())
}

/// Checks that the run may open one file per target plus [`RESERVED_FDS`].
fn check_open_files(targets: usize, (soft, hard): (u64, u64)) -> Result<(), BadInput> {
    let needed = targets as u64 + RESERVED_FDS;
    if needed <= soft {
        return Ok(());
    }
    let fix = if needed <= hard {
        format!("raise it with 'ulimit -n {needed}'")
    } else {
        format!("the hard limit is {hard}: raise it (limits.conf, systemd LimitNOFILE) or give fewer devices")
    };
    Err(BadInput(format!(
        "{targets} devices need about {needed} open files but the open-file limit (ulimit -n) is {soft}; {fix}"
    )))
}

/// Where `--json` goes: `-` is stdout; a file path must pass
/// [`crate::output::json::check_json_dest`].
fn check_json_dest(path: &Path) -> Result<JsonDest, BadInput> {
    if path.as_os_str() == "-" {
        return Ok(JsonDest::Stdout);
    }
    let dest = JsonDest::File(path.to_path_buf());
    crate::output::json::check_json_dest(&dest)?;
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ScratchDir;

    fn limits() -> HostLimits {
        HostLimits {
            online_cpus: vec![0, 1, 2, 3],
            allowed_cpus: vec![0, 1, 2],
            nofile: (1024, 4096),
            sources: SystemSources::default(),
        }
    }

    fn parse(argv: &[&str]) -> Result<RunArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("hostmax").chain(argv.iter().copied())).map(|c| c.run)
    }

    fn plan(argv: &[&str]) -> Result<RunPlan, BadInput> {
        plan_run_with(&parse(argv).expect("parses"), &limits())
    }

    fn plan_err(argv: &[&str]) -> String {
        let err = plan(argv).expect_err("should be refused").0;
        assert!(!err.contains('\n'), "{err}");
        err
    }

    #[test]
    fn defaults_match_the_issue() {
        let dir = ScratchDir::new("defaults");
        let f = dir.file("a", 1 << 20).display().to_string();
        let plan = plan(&["--devices", &f]).unwrap();
        let w = &plan.workload;
        assert_eq!(w.pattern, IoPattern::RandRead);
        assert_eq!(w.block_size, 4096);
        assert_eq!(w.iodepth, 32);
        assert_eq!(w.working_set, None);
        assert_eq!(w.runtime, Duration::from_secs(30));
        assert_eq!(w.ramp, Duration::from_secs(5));
        assert_eq!(w.rwmixread, 50);
        assert!(w.record_latency);
        assert_eq!(plan.cpus, None);
        assert_eq!(plan.json, None);
        assert_eq!(plan.targets.len(), 1);
    }

    #[test]
    fn every_option_reaches_the_plan() {
        let dir = ScratchDir::new("options");
        let a = dir.file("a", 8 << 20).display().to_string();
        let b = dir.file("b", 8 << 20).display().to_string();
        let json = dir.0.join("r.json");
        let got = plan(&[
            "--devices",
            &a,
            "--devices",
            &b,
            &a,
            "--rw",
            "randrw",
            "--rwmixread",
            "70%",
            "--bs",
            "64KiB",
            "--iodepth",
            "8",
            "--size",
            "4m",
            "--runtime",
            "1500ms",
            "--ramp",
            "0",
            "--cpus",
            "1-2,0",
            "--seed",
            "0x10",
            "--rate-iops",
            "5k",
            "--json",
            json.to_str().unwrap(),
            "--allow-write",
            "--no-latency",
        ])
        .unwrap();
        let w = &got.workload;
        assert_eq!(got.targets.len(), 2);
        assert_eq!((w.pattern, w.rwmixread), (IoPattern::RandRw, 70));
        assert_eq!((w.block_size, w.iodepth), (64 << 10, 8));
        assert_eq!(w.working_set, Some(4 << 20));
        assert_eq!(
            (w.runtime, w.ramp),
            (Duration::from_millis(1500), Duration::ZERO)
        );
        assert_eq!((w.seed, w.rate_iops), (16, Some(5000)));
        assert!(!w.record_latency && got.allow_write);
        assert_eq!(got.cpus, Some(vec![0, 1, 2]));
        assert_eq!(got.json, Some(JsonDest::File(json)));
        let stdout = plan(&["--devices", &a, "--json", "-"]).unwrap();
        assert_eq!(stdout.json, Some(JsonDest::Stdout));
    }

    #[test]
    fn workload_rules_name_the_option_and_the_fix() {
        let dir = ScratchDir::new("rules");
        let f = dir.file("f", 1 << 20).display().to_string();
        let cases: &[(&[&str], &str)] = &[
            (&["--bs", "0"], "--bs 0"),
            (&["--bs", "256"], "out of range"),
            (&["--bs", "16m"], "out of range"),
            (&["--bs", "3000"], "2560 or 3072"),
            (&["--bs", "2m"], "larger than"),
            (&["--rwmixread", "30"], "conflicts with --rw randread"),
            (
                &["--rw", "write", "--rwmixread", "30"],
                "conflicts with --rw write",
            ),
            (&["--runtime", "0"], "--runtime 0"),
            (&["--size", "0"], "--size 0"),
            (&["--size", "2m"], "larger than"),
            (&["--size", "6k"], "use 4k or 8k"),
            (&["--size", "2k"], "larger than --size 2k"),
            (&["--cpus", "9"], "CPU 9 not online"),
            (&["--cpus", "2-3"], "CPU 3 online but outside"),
            (
                &["--json", "/nonexistent-dir/x.json"],
                "/nonexistent-dir does not exist",
            ),
            (&["--json", "/dev/shm"], "is a directory"),
            (&["--json", "/dev/null"], "not a regular file"),
        ];
        for (extra, expected) in cases {
            let mut argv = vec!["--devices", f.as_str()];
            argv.extend_from_slice(extra);
            let err = plan_err(&argv);
            assert!(err.contains(expected), "{argv:?}: {err}");
        }
        assert!(plan_err(&[]).contains("no devices"));
        // Callers that build RunArgs themselves get the same bounds.
        let mut args = parse(&["--devices", &f]).unwrap();
        args.iodepth = 0;
        let err = plan_run_with(&args, &limits()).unwrap_err().0;
        assert!(
            err.contains("--iodepth 0 is out of range: use 1 to 4096"),
            "{err}"
        );
        let sized = plan(&["--devices", &f, "--size", "512k", "--bs", "512k"]).unwrap();
        assert_eq!(sized.workload.working_set, Some(512 << 10));
    }

    #[test]
    fn too_many_devices_for_the_open_file_limit() {
        let dir = ScratchDir::new("nofile");
        let files: Vec<String> = (0..4)
            .map(|i| dir.file(&format!("f{i}"), 1 << 20).display().to_string())
            .collect();
        let mut argv = vec!["--devices"];
        argv.extend(files.iter().map(String::as_str));
        let args = parse(&argv).unwrap();
        let tight = HostLimits {
            nofile: (RESERVED_FDS + 3, RESERVED_FDS + 100),
            ..limits()
        };
        let err = plan_run_with(&args, &tight).unwrap_err().0;
        assert!(
            err.contains("4 devices") && err.contains("ulimit -n 36"),
            "{err}"
        );
        let hard = HostLimits {
            nofile: (RESERVED_FDS, RESERVED_FDS),
            ..limits()
        };
        let err = plan_run_with(&args, &hard).unwrap_err().0;
        assert!(err.contains("hard limit"), "{err}");
        let roomy = HostLimits {
            nofile: (RESERVED_FDS + 4, RESERVED_FDS + 4),
            ..limits()
        };
        assert_eq!(plan_run_with(&args, &roomy).unwrap().targets.len(), 4);
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
        let dir = ScratchDir::new("filename");
        let a = dir.file("a", 1 << 20).display().to_string();
        let b = dir.file("b", 1 << 20).display().to_string();
        let list = format!("--filename={a}:{b}");
        let got = plan(&[list.as_str()]).unwrap();
        assert_eq!(got.targets.len(), 2);
    }
}
