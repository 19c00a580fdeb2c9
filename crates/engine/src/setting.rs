//! The settings of a run, as the engine's refusals name them. The engine speaks of its own
//! fields (`iodepth`, `working_set`); a front end maps each [`Setting`] to its own option
//! ([`SettingError::naming`]), so a library user never reads a command-line flag it has not got.

use std::fmt;

/// A setting of a run that a refusal names as the thing to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Setting {
    /// [`crate::Workload::pattern`].
    Pattern,
    /// [`crate::Workload::block_size`].
    BlockSize,
    /// [`crate::Workload::iodepth`].
    Iodepth,
    /// [`crate::Workload::numjobs`].
    Numjobs,
    /// [`crate::Workload::rwmixread`].
    Rwmixread,
    /// [`crate::Workload::runtime`].
    Runtime,
    /// [`crate::Workload::ramp`].
    Ramp,
    /// [`crate::Workload::io_limit`].
    IoLimit,
    /// [`crate::Workload::rate_iops`].
    RateIops,
    /// [`crate::Workload::arrival`].
    Arrival,
    /// [`crate::Workload::working_set`].
    WorkingSet,
    /// [`crate::Workload::record_latency`].
    RecordLatency,
    /// [`crate::Workload::complete_batch`].
    CompleteBatch,
    /// [`crate::WriteData::compress_percent`].
    CompressPercent,
    /// [`crate::WriteData::dedupe_percent`].
    DedupePercent,
    /// [`crate::WriteData::verify`].
    Verify,
    /// [`crate::RunConfig::targets`].
    Targets,
    /// [`crate::RunConfig::cpus`].
    Cpus,
    /// [`crate::RunConfig::polling`].
    Polling,
}

impl Setting {
    /// Its name in [`crate::Workload`] or [`crate::RunConfig`].
    pub fn name(self) -> &'static str {
        match self {
            Setting::Pattern => "pattern",
            Setting::BlockSize => "block_size",
            Setting::Iodepth => "iodepth",
            Setting::Numjobs => "numjobs",
            Setting::Rwmixread => "rwmixread",
            Setting::Runtime => "runtime",
            Setting::Ramp => "ramp",
            Setting::IoLimit => "io_limit",
            Setting::RateIops => "rate_iops",
            Setting::Arrival => "arrival",
            Setting::WorkingSet => "working_set",
            Setting::RecordLatency => "record_latency",
            Setting::CompleteBatch => "complete_batch",
            Setting::CompressPercent => "write_data.compress_percent",
            Setting::DedupePercent => "write_data.dedupe_percent",
            Setting::Verify => "write_data.verify",
            Setting::Targets => "targets",
            Setting::Cpus => "cpus",
            Setting::Polling => "polling",
        }
    }
}

/// A run refused before any I/O: what is wrong and how to fix it, in words, and the settings
/// the fix changes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SettingError {
    /// The problem and its fix ("queue depth 0 is out of range: use 1 to 4096").
    pub message: String,
    /// The settings to change, most likely first.
    pub settings: Vec<Setting>,
}

impl SettingError {
    /// A refusal of `settings` saying `message`.
    pub fn new(message: impl Into<String>, settings: &[Setting]) -> SettingError {
        SettingError {
            message: message.into(),
            settings: settings.to_vec(),
        }
    }

    /// The message followed by the settings as `name` calls them, in parentheses (those it
    /// has no name for left out): a front end passes its own names for them (a tool with
    /// options, its option names), so the message tells its user what to change.
    pub fn naming(&self, name: impl Fn(Setting) -> Option<&'static str>) -> String {
        let names: Vec<&str> = self.settings.iter().filter_map(|&s| name(s)).collect();
        if names.is_empty() {
            self.message.clone()
        } else {
            format!("{} ({})", self.message, names.join(", "))
        }
    }
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.naming(|s| Some(s.name())))
    }
}

impl std::error::Error for SettingError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_settings_in_the_engines_terms_or_the_callers() {
        let e = SettingError::new(
            "buffers beyond memory: lower the queue depth or the block size",
            &[Setting::Iodepth, Setting::BlockSize],
        );
        assert_eq!(
            e.to_string(),
            "buffers beyond memory: lower the queue depth or the block size (iodepth, block_size)"
        );
        let flags = |s| match s {
            Setting::Iodepth => Some("--iodepth"),
            _ => None,
        };
        assert!(e.naming(flags).ends_with("block size (--iodepth)"));
        assert_eq!(SettingError::new("x", &[]).to_string(), "x");
    }
}
