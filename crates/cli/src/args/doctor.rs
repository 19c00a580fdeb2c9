//! `hostmax doctor`'s options ([`DoctorArgs`]).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

/// `hostmax doctor`'s options.
#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Block devices to check (paths or quoted glob patterns) [default: every disk with a
    /// blk-mq queue map].
    #[arg(long, value_name = "PATH|PATTERN", num_args = 1.., action = clap::ArgAction::Append)]
    pub devices: Vec<OsString>,

    /// The I/Os in flight per device the test will use, per job with --numjobs (checked
    /// against `nr_requests`, and its buffers against the memlock limit).
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub iodepth: u32,

    /// The jobs per device the test will use (a run's --numjobs): each keeps --iodepth in
    /// flight, so the checks judge iodepth x numjobs.
    #[arg(long, value_name = "N")]
    pub numjobs: Option<u32>,

    /// The block size the test will use (the size of each buffer it pins).
    #[arg(long, value_name = "SIZE", default_value = "4k", value_parser = crate::units::parse_size, allow_hyphen_values = true)]
    pub bs: u64,

    /// The access pattern the test will use (a mix of reads and writes pins a buffer of each
    /// per I/O in flight).
    #[arg(long, value_name = "PATTERN", default_value = "randread", value_parser = crate::args::run::pattern_arg, allow_hyphen_values = true)]
    pub rw: hostmax_engine::IoPattern,

    /// CPUs the test will use, e.g. 0-3,6: the load generator's ceiling is measured on these
    /// [default: every online CPU this process may use].
    #[arg(long, value_name = "LIST", value_parser = crate::args::run::cpu_list_arg, allow_hyphen_values = true)]
    pub cpus: Option<crate::args::run::CpuList>,

    /// The test will poll for completions (a run's --iopoll, as a one-core peak test does):
    /// a device without poll queues is then harmful, not only worth knowing.
    #[arg(long)]
    pub iopoll: bool,

    /// How long to measure the load generator's own ceiling: hostmax's worker loop issuing
    /// io_uring NOPs (no device) on every CPU at once; 0s skips it.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::units::parse_duration)]
    pub ceiling_runtime: std::time::Duration,

    /// Write the findings as JSON to a file (`-` for stdout, then nothing else goes there).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,

    /// Read sysfs and procfs under this directory instead of `/` (a stand-in tree, for tests).
    #[arg(long, value_name = "DIR", hide = true)]
    pub sysroot: Option<PathBuf>,
}
