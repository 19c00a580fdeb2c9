//! The error for input the user can fix, [`BadInput`] (exit code 2, see
//! [`crate::exit_code`]), and how the engine's refusals are worded with this tool's options:
//! [`FLAG_WORDS`] for write consent, [`option_for`] for a workload setting; [`error_line`]
//! says any error on one line.

use std::fmt;

use hostmax_device::{ConsentWords, WriteRefused};
use hostmax_engine::{Setting, SettingError};

/// Input the user can fix: exit code 2, shown as one line naming the thing and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// An error and its causes on one line, `outer: cause: ...`, each text said once: many errors
/// (`open /dev/loop-control: No such file or directory`, an output's error) already include
/// their source's text, which anyhow's `{:#}` would print again.
pub fn error_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line += ": ";
        }
        line += &text;
    }
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A device stopped answering in a command that cannot go on without it (a suite cell):
/// exit code 6 ([`crate::exit_code::STALLED`]), one line naming the device and its I/Os in
/// flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stalled(pub String);

impl fmt::Display for Stalled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Stalled {}

/// A run called off by a signal (its number) before its first I/O, said on stderr
/// already: the command writes what its earlier runs measured, if any, and exits with 128 + N
/// ([`crate::exit_code::interrupted`]) printing nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CalledOff(pub i32);

impl fmt::Display for CalledOff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "interrupted by {} before the run began",
            crate::signals::signal_name(self.0)
        )
    }
}

impl std::error::Error for CalledOff {}

/// The engine's write-safety consents as this tool's flags say them.
pub const FLAG_WORDS: ConsentWords =
    ConsentWords::new("--allow-write", "--force", "--allow-write --force");

/// What is said when a signal calls a write run off before its first write.
pub const CALLED_OFF_BEFORE_WRITING: &str =
    "hostmax: interrupted before the first write; nothing was written";

/// What a refused write is to the user: the run called off when a signal came during the
/// checks ([`CalledOff`]), a device fault when a device did not answer the checks' reads
/// ([`Stalled`], exit 6, naming each device not checked), else bad input worded with the
/// flags that grant consent.
pub fn refused_write(refused: WriteRefused) -> anyhow::Error {
    let signal = crate::signals::watch().signal();
    if signal != 0 {
        crate::errln!("{CALLED_OFF_BEFORE_WRITING}");
        return CalledOff(signal).into();
    }
    if !refused.not_answering().is_empty() {
        return Stalled(refused.message(&FLAG_WORDS)).into();
    }
    BadInput::from(refused).into()
}

/// A write refusal is bad input, worded with the flags that grant consent.
impl From<WriteRefused> for BadInput {
    fn from(refused: WriteRefused) -> BadInput {
        BadInput(refused.message(&FLAG_WORDS))
    }
}

/// No target given (the engine's [`hostmax_engine::EngineError::NoTargets`]), worded with the
/// option that gives them.
pub fn no_devices() -> BadInput {
    BadInput(
        "no devices given: add --devices <PATH|PATTERN>... (e.g. --devices '/dev/sd[b-u]'), or run 'hostmax demo'"
            .into(),
    )
}

/// The option of `hostmax` that sets an engine [`Setting`] (`None` for one no option sets):
/// the libraries name their own settings, the command line names its flags.
pub fn option_for(setting: Setting) -> Option<&'static str> {
    Some(match setting {
        Setting::Pattern => "--rw",
        Setting::BlockSize => "--bs",
        Setting::Iodepth => "--iodepth",
        Setting::Numjobs => "--numjobs",
        Setting::Rwmixread => "--rwmixread",
        Setting::Runtime => "--runtime",
        Setting::Ramp => "--ramp",
        Setting::IoLimit => return None,
        Setting::RateIops => "--rate-iops",
        Setting::Arrival => "--arrival",
        Setting::WorkingSet => "--size",
        Setting::RecordLatency => "--no-latency",
        Setting::CompleteBatch => "--complete-batch",
        Setting::CompressPercent => "--buffer-compress-percentage",
        Setting::DedupePercent => "--dedupe-percentage",
        Setting::Verify => "--verify",
        Setting::Targets => "--devices",
        Setting::Cpus => "--cpus",
        Setting::Polling => "--iopoll",
        _ => return None,
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
        return Err($crate::error::BadInput(format!($($arg)*)).into())
    };
}
