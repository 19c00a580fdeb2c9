//! `--start-at`: a wall-clock start time, and the wait for it.
//!
//! Times are RFC 3339 (`2026-11-22T12:00:00Z`, fractions and `+hh:mm` offsets allowed,
//! `crate::rfc3339`) or relative to when the command line is parsed (`+30s`, `+2m`,
//! `+1500ms`); the option's parser is in [`crate::args::fleet`].

use std::time::{Duration, SystemTime};

use crate::error::BadInput;
use crate::rfc3339::format_rfc3339;

/// How far in the past a start time may be and still be taken (start at once): hosts whose
/// clocks differ a little, or a `+0s`.
pub const PAST_GRACE: Duration = Duration::from_secs(1);

/// Refuses a start time more than [`PAST_GRACE`] before `now`.
pub fn check_not_past(at: SystemTime, now: SystemTime) -> Result<(), BadInput> {
    match now.duration_since(at) {
        Ok(ago) if ago > PAST_GRACE => Err(BadInput(format!(
            "--start-at {} is {:.1} s in the past (now {}); give a later time, or +30s",
            format_rfc3339(at),
            ago.as_secs_f64(),
            format_rfc3339(now)
        ))),
        _ => Ok(()),
    }
}

/// Refuses a start time more than [`crate::units::MAX_DURATION`] (365 days) after `now`: a
/// wait no run uses, and one that would be written `--start-at 9999-12-31T00:00:00Z` by slip.
pub fn check_not_too_far(at: SystemTime, now: SystemTime) -> Result<(), BadInput> {
    let max = crate::units::MAX_DURATION;
    match at.duration_since(now) {
        Ok(ahead) if ahead > max => Err(BadInput(format!(
            "--start-at {} is {} days ahead (now {}); give a time at most 365 days ahead, or +30s",
            format_rfc3339(at),
            ahead.as_secs() / 86_400,
            format_rfc3339(now)
        ))),
        _ => Ok(()),
    }
}

/// How waiting for the start time ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartWait {
    /// The time came; the wait overran it by this much (prepare took longer, or timer slack).
    Reached {
        /// How late the wait returned.
        late: Duration,
    },
    /// A signal (its number) came first.
    Interrupted(i32),
}

/// Waits until `at` (wall clock) unless a watched signal (`crate::signals::WATCHED`) comes first; `armed` is called
/// once the signals are caught (so a message it prints is never followed by an unhandled
/// Ctrl-C).
///
/// The wall clock is re-read at least every half second, so a clock stepped by NTP during a
/// long wait still starts on time; the last few milliseconds are slept with `nanosleep`,
/// which is tighter than a condition variable's timeout.
pub fn wait_until(at: SystemTime, armed: impl FnOnce()) -> std::io::Result<StartWait> {
    const FINE: Duration = Duration::from_millis(5);
    // The process's one signal watch (installed by `main` already): a signal that came while
    // the run was being prepared ends the wait at once.
    let signals = crate::signals::watch();
    armed();
    loop {
        let remaining = at
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO);
        if remaining <= FINE {
            std::thread::sleep(remaining);
            let late = SystemTime::now()
                .duration_since(at)
                .unwrap_or(Duration::ZERO);
            return Ok(StartWait::Reached { late });
        }
        let step = (remaining - FINE).min(Duration::from_millis(500));
        if let Some(sig) = signals.wait_for_signal(step) {
            return Ok(StartWait::Interrupted(sig));
        }
    }
}

/// Waits for `at` (if given) while a prepared run holds its targets, before its first I/O.
///
/// `Some(signal)` when a watched signal came first: the caller releases the run without any
/// I/O and exits with 128 + the signal (nothing was measured, as this says on stderr). A start
/// more than 100 ms late (the preparation outlasted the start time) is said on stderr.
pub fn wait_for_start(at: Option<SystemTime>) -> anyhow::Result<Option<i32>> {
    let Some(at) = at else {
        return Ok(None);
    };
    let announce = || {
        if let Ok(ahead) = at.duration_since(SystemTime::now()) {
            crate::errln!(
                "hostmax: ready; starting at {} (in {:.1} s)",
                format_rfc3339(at),
                ahead.as_secs_f64()
            );
        }
    };
    match wait_until(at, announce)? {
        StartWait::Reached { late } => {
            if late > Duration::from_millis(100) {
                crate::errln!(
                    "hostmax: started {:.3} s after --start-at {} (preparing took longer)",
                    late.as_secs_f64(),
                    format_rfc3339(at)
                );
            }
            Ok(None)
        }
        StartWait::Interrupted(sig) => {
            crate::errln!(
                "hostmax: interrupted while waiting for --start-at; nothing was measured"
            );
            Ok(Some(sig))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rfc3339::parse_rfc3339;

    #[test]
    fn the_past_is_refused_beyond_a_second() {
        let now = parse_rfc3339("2026-11-22T12:00:00Z").unwrap();
        assert!(check_not_past(now - Duration::from_millis(900), now).is_ok());
        assert!(check_not_past(now + Duration::from_secs(60), now).is_ok());
        let err = check_not_past(now - Duration::from_secs(90), now)
            .unwrap_err()
            .0;
        assert!(
            err.starts_with("--start-at 2026-11-22T11:58:30.000Z is 90.0 s in the past"),
            "{err}"
        );
        assert!(!err.contains('\n'));
    }

    #[test]
    fn more_than_a_year_ahead_is_refused() {
        let now = parse_rfc3339("2026-11-22T12:00:00Z").unwrap();
        assert!(check_not_too_far(now + Duration::from_secs(3600), now).is_ok());
        let far = parse_rfc3339("9999-12-31T00:00:00Z").unwrap();
        let err = check_not_too_far(far, now).unwrap_err().0;
        assert!(err.contains("at most 365 days ahead"), "{err}");
    }

    #[test]
    fn waiting_for_a_time_already_reached_returns_at_once() {
        let mut armed = false;
        let got = wait_until(SystemTime::now(), || armed = true).unwrap();
        assert!(matches!(got, StartWait::Reached { .. }), "{got:?}");
        assert!(armed);
    }
}
