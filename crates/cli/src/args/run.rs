//! The main run's options, with fio's names ([`RunArgs`]), and the plain planning request
//! they make ([`RunArgs::request`]); also the `--cpus` list the suite's options share.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use hostmax_device::{parse_cpu_list, CpuListError};
use hostmax_engine::IoPattern;

use crate::error::BadInput;
use crate::output::export::Outputs;
use crate::output::fio_json::{FioJson, FioRuns};
use crate::output::hdr_log::HdrLog;
use crate::output::json::JsonReport;
use crate::plan::PlanRequest;
use crate::units::{parse_count, parse_duration, parse_percent, parse_seed, parse_size};

/// A CPU list as given to `--cpus`, sorted and without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

/// Parses `--cpus`.
pub(crate) fn cpu_list_arg(s: &str) -> Result<CpuList, CpuListError> {
    parse_cpu_list(s).map(CpuList)
}

pub(crate) fn pattern_arg(s: &str) -> Result<IoPattern, hostmax_engine::UnknownPattern> {
    s.parse()
}

/// `--rw`'s help, naming every pattern the engine has (`IoPattern::ALL`), so a new pattern
/// needs no edit here.
fn pattern_help() -> String {
    let names: Vec<&str> = IoPattern::ALL.iter().map(|p| p.name()).collect();
    let (last, rest) = names.split_last().expect("the engine has patterns");
    format!(
        "Access pattern, fio's names: {} or {last} (patterns that write or trim change data: they need --allow-write)",
        rest.join(", ")
    )
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

    /// Access pattern; its help (`pattern_help`) names every pattern the engine has.
    #[arg(long, value_name = "PATTERN", default_value = "randread", value_parser = pattern_arg, allow_hyphen_values = true, help = pattern_help())]
    pub rw: IoPattern,

    /// Read share in percent for randrw [default: 50].
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent, allow_hyphen_values = true)]
    pub rwmixread: Option<u8>,

    /// Bytes per I/O, 512 to 8m, a multiple of every device's logical block size.
    #[arg(long, value_name = "SIZE", default_value = "4k", value_parser = parse_size, allow_hyphen_values = true)]
    pub bs: u64,

    /// I/Os in flight: per device, split among the CPUs that drive it; with --numjobs, per
    /// job (fio's meaning: a device then keeps numjobs x iodepth in flight).
    /// 1 to 4096 (the engine's `Workload::check`, as every number of the workload).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 32,
        allow_hyphen_values = true
    )]
    pub iodepth: u32,

    /// Jobs per device, fio's numjobs: N workers each keeping --iodepth in flight over its
    /// own part of the device, each pinned to a different CPU of the device's queue map where
    /// it has enough (fio's cpus_allowed_policy=split; more jobs than CPUs is allowed and
    /// said). A device gets fewer than N where it has fewer blocks, or --rate-iops fewer I/Os
    /// a second, than N (each job needs one of each). Without it a device gets one worker per queue CPU it may use while CPUs are
    /// free, and --iodepth is the device's total.
    #[arg(long, value_name = "N")]
    pub numjobs: Option<u32>,

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

    /// Offered rate in I/Os per second, per device (50k is 50,000): each I/O has an intended
    /// start on a fixed schedule, and response times run from it (see --arrival).
    #[arg(long, value_name = "N", value_parser = parse_count, allow_hyphen_values = true)]
    pub rate_iops: Option<u64>,

    /// How the --rate-iops I/Os arrive: evenly spaced, or a Poisson process (exponential
    /// gaps drawn from --seed) [default: even].
    #[arg(long, value_name = "even|poisson", requires = "rate_iops")]
    pub arrival: Option<hostmax_engine::Arrival>,

    /// Write the JSON report to PATH, or to stdout with '-' (then nothing else goes there).
    #[arg(long, value_name = "PATH|-", allow_hyphen_values = true)]
    pub json: Option<PathBuf>,

    /// Write the run in fio's JSON (json+) layout to PATH, for fio-plot and other tools that
    /// read fio's results; a command of several runs (sweep, curve, verify) fills the folder
    /// PATH in fio-plot's layout (NAME/BS/RW-IODEPTH-NUMJOBS.json).
    #[arg(long, value_name = "PATH")]
    pub fio_json: Option<PathBuf>,

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

    /// Wait for N completions before reaping, when that many are in flight (fio's
    /// iodepth_batch_complete_min, t/io_uring's -c): fewer wake-ups, so less CPU per I/O where
    /// completions come from io_uring's worker threads (zram, loop), but every completion of a
    /// batch is stamped when the batch is reaped: its latency includes the wait for the rest.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub complete_batch: u32,

    /// What to do when a device fails an I/O: continue (keep going), stop-device (take that
    /// device out, the others go on) or stop-all (end the run).
    #[arg(long, value_name = "POLICY", default_value = "stop-device", value_parser = parse_error_policy)]
    pub on_error: hostmax_engine::ErrorPolicy,

    /// One worker thread per device (per device share, when a device is driven from several
    /// CPUs) instead of one per CPU (fio's layout; for comparisons).
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
    pub fleet: super::fleet::FleetRunArgs,
    /// What the volumes and the host promise (a verdict after the run); the flattened struct
    /// opens its own help heading, so it comes last.
    #[command(flatten)]
    pub spec: super::spec::SpecArgs,
}

impl RunArgs {
    /// The outputs every measuring command declares from these options, whatever its JSON
    /// root `R`: `--json`, then `--hdr-log` (every run of the command in it), then
    /// `--fio-json`. Checked now, before any I/O; a command adds its own (`--svg`).
    pub(crate) fn outputs<R: serde::Serialize + FioRuns + ?Sized>(
        &self,
    ) -> Result<Outputs<R>, BadInput> {
        Outputs::new()
            .declare(self.json.as_deref(), JsonReport)?
            .declare(self.fleet.hdr_log.as_deref(), HdrLog::default())?
            .declare(self.fio_json.as_deref(), FioJson)
    }

    /// The plain planning request these options make, keeping its targets apart from the
    /// files `outputs` write.
    pub(crate) fn request_beside<R: ?Sized>(&self, outputs: &Outputs<R>) -> PlanRequest {
        PlanRequest {
            outputs: outputs.files(),
            ..self.request()
        }
    }

    /// The plain planning request these options make (no output files to keep apart).
    pub fn request(&self) -> PlanRequest {
        PlanRequest {
            devices: device_args(self),
            pattern: self.rw,
            rwmixread: self.rwmixread,
            block_size: self.bs,
            iodepth: self.iodepth,
            numjobs: self.numjobs,
            working_set: self.size,
            runtime: self.runtime,
            ramp: self.ramp,
            cpus: self.cpus.as_ref().map(|list| list.0.clone()),
            seed: self.seed,
            rate_iops: self.rate_iops,
            arrival: self.arrival.unwrap_or_default(),
            outputs: Vec::new(),
            allow_write: self.allow_write,
            allow_overlap: self.allow_overlap,
            force: self.force,
            record_latency: !self.no_latency,
            complete_batch: self.complete_batch,
            on_error: self.on_error,
            layout: if self.thread_per_device {
                hostmax_engine::ThreadLayout::PerDevice
            } else {
                hostmax_engine::ThreadLayout::PerCpu
            },
            polling: hostmax_engine::Polling::default()
                .with_iopoll(self.iopoll)
                .with_sqpoll(self.sqpoll),
            write_data: hostmax_engine::WriteData::default()
                .with_compress_percent(self.buffer_compress_percentage)
                .with_dedupe_percent(self.dedupe_percentage)
                .with_verify(self.verify),
            start_at: self.fleet.start_at,
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
