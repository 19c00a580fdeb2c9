//! Running hostmax on many hosts at once and adding up their results. No daemon: each host
//! runs hostmax (launched by pdsh, Ansible, a Kubernetes Job...) and the reports are merged.
//!
//! - [`plan_fleet`]: the main run's `--start-at`, `--hdr-log` and `--no-series-histograms`
//!   ([`crate::args::fleet::FleetRunArgs`]) checked into a [`FleetPlan`].
//! - `start_at`: checking `--start-at` and waiting for it after the engine
//!   is prepared, so that runs on many hosts begin together.
//! - `hdr_log::HdrLogRecorder`: the `--hdr-log` file of per-second interval histograms in
//!   HdrHistogram's interval-log format.
//! - `merge`: `hostmax merge a.json b.json ...`, one exact fleet report
//!   ([`hostmax_aggregate::merge_reports`]).
//! - [`hostname`]: the name each report records.
//! - [`provenance`]: each report's run id, window, version, command line and kernel, and the
//!   check that merged runs were measured together.

pub(crate) mod hdr_log;
pub(crate) mod merge;
pub mod provenance;
pub(crate) mod start_at;

use std::path::PathBuf;
use std::time::SystemTime;

use crate::error::BadInput;

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

/// Checks `--start-at` (not in the past, by more than `start_at::PAST_GRACE`) and that the
/// `--hdr-log` file can be created (`-` is refused), for a run measuring `runtime`.
pub fn plan_fleet(
    args: &crate::plan::PlanRequest,
    runtime: std::time::Duration,
) -> Result<FleetPlan, BadInput> {
    if let Some(at) = args.start_at {
        start_at::check_not_past(at, SystemTime::now())?;
    }
    let hdr_log = args
        .hdr_log
        .as_deref()
        .map(|path| crate::output::destination::HDR_LOG.check_file(path))
        .transpose()?;
    Ok(FleetPlan {
        start_at: args.start_at,
        hdr_log,
        series_histograms: args.series_histograms && runtime <= SERIES_HISTOGRAMS_MAX_RUNTIME,
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
        use crate::plan::PlanRequest;
        let keep = |args: &PlanRequest, runtime: u64| {
            plan_fleet(args, Duration::from_secs(runtime))
                .unwrap()
                .series_histograms
        };
        let default = PlanRequest::default();
        assert!(keep(&default, 30));
        assert!(keep(&default, 3600));
        assert!(
            !keep(&default, 3601),
            "a longer run would hold ~40 MB more an hour"
        );
        let refused = PlanRequest {
            series_histograms: false,
            ..PlanRequest::default()
        };
        assert!(!keep(&refused, 30));
    }
}
