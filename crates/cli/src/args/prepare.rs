//! `hostmax prepare`'s options ([`PrepareArgs`]).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use crate::units::parse_size;

/// `hostmax prepare`'s options.
#[derive(Debug, Clone, Args)]
pub struct PrepareArgs {
    /// Block devices or files to read whole; paths, or quoted glob patterns such as
    /// '/dev/sd[b-u]'.
    #[arg(long, value_name = "PATH|PATTERN", num_args = 1.., required = true, action = clap::ArgAction::Append)]
    pub devices: Vec<OsString>,

    /// Bytes per read: large, so a volume's throughput cap is reached, not its IOPS cap.
    #[arg(long, value_name = "SIZE", default_value = "1m", value_parser = parse_size, allow_hyphen_values = true)]
    pub bs: u64,

    /// Reads in flight per device.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub iodepth: u32,

    /// Keep how far each device got in this file (written every second): a stopped prepare
    /// given the same file continues where it stopped.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
}
