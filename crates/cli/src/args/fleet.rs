//! The options of runs on many hosts: the main run's [`FleetRunArgs`] and `hostmax merge`'s
//! [`MergeArgs`].

use std::path::PathBuf;
use std::time::SystemTime;

use crate::rfc3339::parse_rfc3339;
use crate::units::parse_duration;

const EXAMPLE: &str = "give an RFC 3339 time such as 2026-11-22T12:00:00Z, or +30s";

/// clap's value parser for `--start-at`: a relative `+DURATION` is resolved against now.
fn parse_start_at(input: &str) -> Result<SystemTime, String> {
    let text = input.trim();
    if let Some(relative) = text.strip_prefix('+') {
        let d = parse_duration(relative).map_err(|e| format!("{e}; {EXAMPLE}"))?;
        return SystemTime::now()
            .checked_add(d)
            .ok_or_else(|| format!("'{input}' is too far in the future"));
    }
    parse_rfc3339(text).map_err(|why| format!("'{input}': {why}; {EXAMPLE}"))
}

/// The main run's options for runs on many hosts.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FleetRunArgs {
    /// Start the run at this wall-clock time, so that runs on many hosts begin together: RFC
    /// 3339 (2026-11-22T12:00:00Z, 2026-11-22T13:00:00.5+01:00) or relative (+30s, +2m). The
    /// wait comes after every check and after the workers are ready; the ramp starts then.
    #[arg(long, value_name = "TIME", value_parser = parse_start_at, allow_hyphen_values = true)]
    pub start_at: Option<SystemTime>,

    /// Write per-second latency histograms of every device and op (tags such as loop3-read)
    /// and of the host (host-read, host-write) to PATH, in HdrHistogram's interval-log format.
    /// verify, sweep and curve log every run, its tags led by its name (step2-loop3-read).
    #[arg(long, value_name = "PATH")]
    pub hdr_log: Option<PathBuf>,

    /// Leave each second's latency histograms out of the JSON (about 11 KB per second of run
    /// at 3 significant figures; runs longer than an hour leave them out anyway); `hostmax
    /// merge` then shows the worst host's per-second percentiles. Whole-run histograms stay.
    #[arg(long)]
    pub no_series_histograms: bool,

    /// Live metrics while the command runs (`--metrics-listen`).
    #[command(flatten)]
    pub metrics: super::metrics::MetricsArgs,
}

/// `hostmax merge`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct MergeArgs {
    /// JSON reports written by `hostmax --json` (or by an earlier merge) on each host.
    #[arg(value_name = "REPORT.json", required = true, num_args = 1..)]
    pub reports: Vec<PathBuf>,

    /// Write the fleet report to PATH, or to stdout with '-' (then nothing else goes there).
    #[arg(long, value_name = "PATH|-", allow_hyphen_values = true)]
    pub json: Option<PathBuf>,

    /// Write the fleet report in fio's JSON (json+) layout to PATH: one job per device
    /// (named HOST:DEVICE) and the fleet as fio's `All clients`, for fio-plot and other tools
    /// that read fio's results.
    #[arg(long, value_name = "PATH")]
    pub fio_json: Option<PathBuf>,

    /// The share of the runs' span that all of them must have measured together (0 skips
    /// the check, e.g. for reports of older versions that have no window).
    #[arg(long, value_name = "PERCENT", default_value = "50%", value_parser = crate::units::parse_percent)]
    pub min_overlap: u8,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn bad_start_times_say_what_to_give() {
        let err = parse_start_at("noon").unwrap_err();
        assert!(err.contains("'noon'") && err.contains("+30s"), "{err}");
        let err = parse_start_at("+soon").unwrap_err();
        assert!(err.contains("+30s"), "{err}");
    }

    #[test]
    fn relative_times_are_from_now() {
        let before = SystemTime::now();
        let at = parse_start_at("+30s").unwrap();
        let after = SystemTime::now();
        assert!(at >= before + Duration::from_secs(30));
        assert!(at <= after + Duration::from_secs(30));
        let ms = parse_start_at("+1500ms").unwrap();
        assert!(ms >= before + Duration::from_millis(1500));
    }
}
