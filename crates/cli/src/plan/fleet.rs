//! The main run's fleet options (`--start-at`, `--hdr-log`, `--no-series-histograms`,
//! [`crate::args::fleet::FleetRunArgs`]) checked into a [`FleetPlan`]: what lets runs on many
//! hosts start together and be merged exactly afterwards.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::start_at;
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
pub const SERIES_HISTOGRAMS_MAX_RUNTIME: Duration = Duration::from_secs(3600);

/// Checks `--start-at` (not in the past, by more than `start_at::PAST_GRACE`, nor more than
/// 365 days ahead) and that the
/// `--hdr-log` file can be created (`-` is refused), for a run measuring `runtime`.
pub fn plan_fleet(
    start_at: Option<SystemTime>,
    hdr_log: Option<&Path>,
    series_histograms: bool,
    runtime: Duration,
) -> Result<FleetPlan, BadInput> {
    if let Some(at) = start_at {
        let now = SystemTime::now();
        start_at::check_not_past(at, now)?;
        start_at::check_not_too_far(at, now)?;
    }
    let hdr_log = hdr_log
        .map(|path| crate::output::destination::HDR_LOG.check_file(path))
        .transpose()?;
    Ok(FleetPlan {
        start_at,
        hdr_log,
        series_histograms: series_histograms && runtime <= SERIES_HISTOGRAMS_MAX_RUNTIME,
    })
}
