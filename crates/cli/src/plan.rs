//! The checked plan of a run, and the error for bad input.

use std::fmt;
use std::path::PathBuf;

use hostmax_engine::safety::{ConsentWords, WriteRefused};
use hostmax_engine::{Setting, SettingError, TargetInfo, Workload};

/// Input the user can fix: exit code 2, shown as one line naming the thing and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// The engine's write-safety consents as this tool's flags say them.
pub const FLAG_WORDS: ConsentWords = ConsentWords {
    allow_write: "--allow-write",
    force: "--force",
    both: "--allow-write --force",
};

/// A write refusal is bad input, worded with the flags that grant consent.
impl From<WriteRefused> for BadInput {
    fn from(refused: WriteRefused) -> BadInput {
        BadInput(refused.message(&FLAG_WORDS))
    }
}

/// The option of `hostmax` that sets an engine [`Setting`] (`None` for one no option sets):
/// the libraries name their own settings, the command line names its flags.
pub fn option_for(setting: Setting) -> Option<&'static str> {
    Some(match setting {
        Setting::Pattern => "--rw",
        Setting::BlockSize => "--bs",
        Setting::Iodepth => "--iodepth",
        Setting::Rwmixread => "--rwmixread",
        Setting::Runtime => "--runtime",
        Setting::IoLimit => return None,
        Setting::RateIops => "--rate-iops",
        Setting::WorkingSet => "--size",
        Setting::RecordLatency => "--no-latency",
        Setting::CompressPercent => "--buffer-compress-percentage",
        Setting::DedupePercent => "--dedupe-percentage",
        Setting::Verify => "--verify",
        Setting::Targets => "--devices",
        Setting::Cpus => "--cpus",
        Setting::Polling => "--iopoll",
    })
}

impl From<&SettingError> for BadInput {
    /// The engine's refusal, naming the options to change.
    fn from(e: &SettingError) -> Self {
        BadInput(e.naming(option_for))
    }
}

/// Returns early with a [`BadInput`] made from a format string.
#[macro_export]
macro_rules! bad_input {
    ($($arg:tt)*) => {
        return Err($crate::plan::BadInput(format!($($arg)*)).into())
    };
}

/// Where the JSON report goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonDest {
    /// `--json -`: standard output, and nothing else goes there.
    Stdout,
    /// `--json PATH`: written to a temporary file beside it and renamed into place.
    File(PathBuf),
}

/// A run that passed every check: what `hostmax --devices ...` will do.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// Probed, de-duplicated targets, in the order given.
    pub targets: Vec<TargetInfo>,
    /// For each target, the name the user gave it when that is another name for its
    /// canonical path (a `/dev/disk/by-id/...` link): shown beside it in the report.
    pub given_names: Vec<Option<PathBuf>>,
    /// The validated workload.
    pub workload: Workload,
    /// CPUs the workers may use; `None` is every allowed CPU.
    pub cpus: Option<Vec<usize>>,
    /// Where the JSON report goes, if anywhere.
    pub json: Option<JsonDest>,
    /// `--allow-write` was given (and the write safety checks passed).
    pub allow_write: bool,
    /// Threads per CPU (default) or per device (`--thread-per-device`, for comparisons).
    pub layout: hostmax_engine::ThreadLayout,
    /// What to do when a device fails an I/O (`--on-error`).
    pub on_error: hostmax_engine::ErrorPolicy,
    /// `--start-at` and `--hdr-log`.
    pub fleet: crate::fleet::FleetPlan,
    /// `--iopoll` / `--sqpoll`.
    pub polling: hostmax_engine::Polling,
}
