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

    /// The I/Os in flight per device the test will use (checked against `nr_requests`).
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub iodepth: u32,

    /// Write the findings as JSON to a file (`-` for stdout, then nothing else goes there).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,

    /// Read sysfs and procfs under this directory instead of `/` (a stand-in tree, for tests).
    #[arg(long, value_name = "DIR", hide = true)]
    pub sysroot: Option<PathBuf>,
}
