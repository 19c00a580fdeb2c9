//! When the merged runs were measured: each report's window ([`measured_windows`]), how much
//! they have in common ([`overlap`]), and the refusal of runs that were not measured together
//! (two hosts' runs an hour apart, or two runs of one host one after the other, add up to
//! nothing any fleet did at once).

use std::time::SystemTime;

use super::MergeError;
use crate::report::HostReport;
use crate::rfc3339::{format_rfc3339, parse_rfc3339};

/// The share of the runs' span that all of them must have measured together unless the
/// caller says otherwise ([`super::merge_reports_with`]): 50%.
pub const DEFAULT_MIN_OVERLAP: f64 = 0.5;

/// One run's measured window, read back from a report (a merged report has one per host).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MeasuredWindow {
    /// The report's label (its file name), and the host inside a merged report.
    pub label: String,
    /// Start of the measured window.
    pub start: SystemTime,
    /// End of the measured window.
    pub end: SystemTime,
}

/// Every measured window `report` (labelled `label`) holds: a [`MergeError::NoWindow`] for a
/// report without one (an older hostmax), [`MergeError::BadWindow`] for times that do not
/// parse or run backwards.
pub fn measured_windows(
    label: &str,
    report: &HostReport,
) -> Result<Vec<MeasuredWindow>, MergeError> {
    let parse = |who: String, start: &Option<String>, end: &Option<String>| {
        let (Some(start), Some(end)) = (start, end) else {
            return Err(MergeError::NoWindow { label: who });
        };
        let read = |field: &str, text: &str| {
            parse_rfc3339(text).map_err(|why| MergeError::BadWindow {
                label: who.clone(),
                why: format!("{field} is not an RFC 3339 time ({why})"),
            })
        };
        let (start, end) = (read("started_at", start)?, read("ended_at", end)?);
        if end < start {
            return Err(MergeError::BadWindow {
                label: who,
                why: "ended_at is before started_at".into(),
            });
        }
        Ok(MeasuredWindow {
            label: who,
            start,
            end,
        })
    };
    match &report.fleet {
        Some(fleet) => fleet
            .hosts
            .iter()
            .map(|h| {
                parse(
                    format!("{label} (host {})", h.hostname),
                    &h.provenance.started_at,
                    &h.provenance.ended_at,
                )
            })
            .collect(),
        None => Ok(vec![parse(
            label.to_string(),
            &report.provenance.started_at,
            &report.provenance.ended_at,
        )?]),
    }
}

/// How much the windows have in common: the time all of them ran, as a share of the time
/// from the first start to the last end (1 for identical windows, 0 or less when some run
/// ended before another started). Also gives the window that ended first and the one that
/// started last, which bound it.
pub fn overlap(windows: &[MeasuredWindow]) -> Option<(f64, &MeasuredWindow, &MeasuredWindow)> {
    let first_end = windows.iter().min_by_key(|w| w.end)?;
    let last_start = windows.iter().max_by_key(|w| w.start)?;
    let earliest = windows.iter().map(|w| w.start).min()?;
    let latest = windows.iter().map(|w| w.end).max()?;
    let span = latest.duration_since(earliest).unwrap_or_default();
    let common = secs_between(last_start.start, first_end.end);
    let share = if span.is_zero() {
        1.0
    } else {
        common / span.as_secs_f64()
    };
    Some((share, first_end, last_start))
}

/// `to - from` in seconds, negative when `to` is earlier.
fn secs_between(from: SystemTime, to: SystemTime) -> f64 {
    match to.duration_since(from) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// Refuses windows whose common time is below `min_share` (0 to 1) of their span, saying by
/// how much they overlap and which two runs bound it.
pub(super) fn check_overlap(windows: &[MeasuredWindow], min_share: f64) -> Result<(), MergeError> {
    let Some((share, first_end, last_start)) = overlap(windows) else {
        return Ok(());
    };
    if share >= min_share {
        return Ok(());
    }
    if share <= 0.0 {
        let gap = secs_between(first_end.end, last_start.start);
        return Err(MergeError::NotMeasuredTogether(format!(
            "the runs were not measured together: {} ended at {}, {gap:.1} s before {} started at {}",
            first_end.label,
            format_rfc3339(first_end.end),
            last_start.label,
            format_rfc3339(last_start.start),
        )));
    }
    Err(MergeError::NotMeasuredTogether(format!(
        "the runs' measured windows overlap only {:.1}% ({} started at {}, {} ended at {}), under the minimum overlap of {:.0}%",
        share * 100.0,
        last_start.label,
        format_rfc3339(last_start.start),
        first_end.label,
        format_rfc3339(first_end.end),
        min_share * 100.0
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> SystemTime {
        parse_rfc3339(text).unwrap()
    }

    fn window(label: &str, start: &str, end: &str) -> MeasuredWindow {
        MeasuredWindow {
            label: label.into(),
            start: at(start),
            end: at(end),
        }
    }

    #[test]
    fn windows_that_ran_together_pass_and_others_say_by_how_much() {
        let a = window("a.json", "2026-11-23T12:00:00Z", "2026-11-23T12:00:30Z");
        let b = window(
            "b.json",
            "2026-11-23T12:00:00.020Z",
            "2026-11-23T12:00:30.020Z",
        );
        assert!(check_overlap(&[a.clone(), b], 0.9).is_ok());
        let half = window("c.json", "2026-11-23T12:00:15Z", "2026-11-23T12:00:45Z");
        let err = check_overlap(&[a.clone(), half.clone()], 0.9)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "the runs' measured windows overlap only 33.3% (c.json started at 2026-11-23T12:00:15.000Z, \
             a.json ended at 2026-11-23T12:00:30.000Z), under the minimum overlap of 90%; run the hosts \
             together (one start time), or merge with a lower minimum overlap (merge_reports_with)"
        );
        assert!(check_overlap(&[a.clone(), half], 0.3).is_ok());
        let later = window("d.json", "2026-11-23T13:00:00Z", "2026-11-23T13:00:30Z");
        let err = check_overlap(&[a, later], 0.9).unwrap_err().to_string();
        assert!(
            err.starts_with("the runs were not measured together: a.json ended at 2026-11-23T12:00:30.000Z, 3570.0 s before d.json started"),
            "{err}"
        );
    }
}
