//! Running hostmax on many hosts at once and adding up their results. No daemon: each host
//! runs hostmax (launched by pdsh, Ansible, a Kubernetes Job...) and the reports are merged.
//!
//! - [`FleetRunArgs`]: the main run's `--start-at`, `--hdr-log` and `--no-series-histograms`,
//!   checked into a [`FleetPlan`] by [`plan_fleet`].
//! - [`start_at`]: parsing `--start-at` (RFC 3339 or `+30s`) and waiting for it after the engine
//!   is prepared, so that runs on many hosts begin together.
//! - [`hdr_log::HdrLogRecorder`]: the `--hdr-log` file of per-second interval histograms in
//!   HdrHistogram's interval-log format.
//! - [`merge`]: `hostmax merge a.json b.json ...`, one exact fleet report
//!   ([`hostmax_aggregate::merge_reports`]).
//! - [`hostname`]: the name each report records.
//! - [`provenance`]: each report's run id, window, version, command line and kernel, and the
//!   check that merged runs were measured together.

pub mod hdr_log;
pub mod merge;
pub mod provenance;
pub mod start_at;

use std::path::PathBuf;
use std::time::SystemTime;

use crate::plan::BadInput;

/// The main run's options for runs on many hosts.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FleetRunArgs {
    /// Start the run at this wall-clock time, so that runs on many hosts begin together: RFC
    /// 3339 (2026-11-22T12:00:00Z, 2026-11-22T13:00:00.5+01:00) or relative (+30s, +2m). The
    /// wait comes after every check and after the workers are ready; the ramp starts then.
    #[arg(long, value_name = "TIME", value_parser = start_at::parse_start_at, allow_hyphen_values = true)]
    pub start_at: Option<SystemTime>,

    /// Write per-second latency histograms of every device and op (tags such as loop3-read)
    /// and of the host (host-read, host-write) to PATH, in HdrHistogram's interval-log format.
    #[arg(long, value_name = "PATH")]
    pub hdr_log: Option<PathBuf>,

    /// Leave each second's latency histograms out of the JSON (about 11 KB per second of run
    /// at 3 significant figures; runs longer than an hour leave them out anyway); `hostmax
    /// merge` then shows the worst host's per-second percentiles. Whole-run histograms stay.
    #[arg(long)]
    pub no_series_histograms: bool,
}

/// The checked fleet options of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetPlan {
    /// When the run starts (`None`: at once).
    pub start_at: Option<SystemTime>,
    /// Where the interval log goes.
    pub hdr_log: Option<PathBuf>,
    /// Whether the JSON's time-series points keep their histograms.
    pub series_histograms: bool,
}

/// The longest run whose JSON keeps each second's histograms (about 40 MB of them an hour,
/// held in memory until the report is written); longer runs keep per-second percentiles only.
pub const SERIES_HISTOGRAMS_MAX_RUNTIME: std::time::Duration = std::time::Duration::from_secs(3600);

/// Checks `--start-at` (not in the past, by more than [`start_at::PAST_GRACE`]) and that the
/// `--hdr-log` file can be created, for a run measuring `runtime`.
pub fn plan_fleet(
    args: &FleetRunArgs,
    runtime: std::time::Duration,
) -> Result<FleetPlan, BadInput> {
    if let Some(at) = args.start_at {
        start_at::check_not_past(at, SystemTime::now())?;
    }
    if let Some(path) = &args.hdr_log {
        hdr_log::check_hdr_log_dest(path)?;
    }
    Ok(FleetPlan {
        start_at: args.start_at,
        hdr_log: args.hdr_log.clone(),
        series_histograms: !args.no_series_histograms && runtime <= SERIES_HISTOGRAMS_MAX_RUNTIME,
    })
}

/// This host's name (`gethostname`), lossy if it is not UTF-8; `None` if it cannot be read.
pub fn hostname() -> Option<String> {
    nix::unistd::gethostname()
        .ok()
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn per_second_histograms_are_kept_for_runs_of_up_to_an_hour_unless_refused() {
        let keep = |args: &FleetRunArgs, runtime: u64| {
            plan_fleet(args, Duration::from_secs(runtime))
                .unwrap()
                .series_histograms
        };
        let default = FleetRunArgs::default();
        assert!(keep(&default, 30));
        assert!(keep(&default, 3600));
        assert!(
            !keep(&default, 3601),
            "a longer run would hold ~40 MB more an hour"
        );
        let refused = FleetRunArgs {
            no_series_histograms: true,
            ..FleetRunArgs::default()
        };
        assert!(!keep(&refused, 30));
    }
}
