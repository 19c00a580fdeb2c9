//! The main run's fleet options (`--start-at`, `--no-series-histograms`,
//! [`crate::args::fleet::FleetRunArgs`]) checked into a [`FleetPlan`]: what lets runs on many
//! hosts start together and be merged exactly afterwards. (`--hdr-log` is an output, declared
//! beside the plan by the command.)

use std::time::{Duration, SystemTime};

use super::start_at;
use crate::error::BadInput;

/// The checked fleet options of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetPlan {
    /// When the run starts (`None`: at once).
    pub start_at: Option<SystemTime>,
    /// Whether the JSON's time-series points keep their histograms.
    pub series_histograms: bool,
}

/// The longest run whose JSON keeps each second's histograms (about 40 MB of them an hour,
/// held in memory until the report is written); longer runs keep per-second percentiles only.
pub const SERIES_HISTOGRAMS_MAX_RUNTIME: Duration = Duration::from_secs(3600);

/// Checks `--start-at` (not in the past, by more than `start_at::PAST_GRACE`, nor more than
/// 365 days ahead), for a run measuring `runtime`.
pub fn plan_fleet(
    start_at: Option<SystemTime>,
    series_histograms: bool,
    runtime: Duration,
) -> Result<FleetPlan, BadInput> {
    if let Some(at) = start_at {
        let now = SystemTime::now();
        start_at::check_not_past(at, now)?;
        start_at::check_not_too_far(at, now)?;
    }
    Ok(FleetPlan {
        start_at,
        series_histograms: series_histograms && runtime <= SERIES_HISTOGRAMS_MAX_RUNTIME,
    })
}
