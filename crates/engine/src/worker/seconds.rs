//! The one-second intervals: which second an instant falls in, when the next one starts,
//! and each closed second folded into the totals and sent to the control side.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::run_loop::WorkerLoop;
use crate::DeviceInterval;

impl WorkerLoop {
    /// The one-second interval `t` falls in, counted from the ramp's end (negative within the
    /// ramp).
    pub(super) fn second_of(&self, t: Instant) -> i64 {
        if t >= self.ramp_end {
            (t - self.ramp_end).as_secs() as i64
        } else {
            -((self.ramp_end - t).as_nanos().div_ceil(1_000_000_000) as i64)
        }
    }

    /// The next instant the loop must wake for: the next second boundary or the end.
    pub(super) fn next_boundary(&self, now: Instant) -> Instant {
        let next_second = if now >= self.ramp_end {
            self.ramp_end + Duration::from_secs((self.current_second + 1) as u64)
        } else {
            self.ramp_end
                .checked_sub(Duration::from_secs((-self.current_second - 1) as u64))
                .unwrap_or(self.ramp_end)
        };
        next_second.min(self.end)
    }

    /// Closes every second that ended before `now`.
    pub(super) fn roll_seconds(&mut self, now: Instant) {
        // Never open a second that starts at or after the end: the last one closes at exit.
        let second = self.second_of(now.min(self.end - Duration::from_nanos(1)));
        while self.current_second < second {
            self.flush_second(self.current_second);
            self.current_second += 1;
        }
    }

    /// Folds one second's counts and histograms into the totals (measured seconds only) and
    /// sends them to the control side when it asked for a live view.
    pub(super) fn flush_second(&mut self, second: i64) {
        // The backlog is counted at the second's end (or the run's, for the last one).
        let second_end = if second >= 0 {
            self.ramp_end + Duration::from_secs(second as u64 + 1)
        } else {
            self.ramp_end
                .checked_sub(Duration::from_secs((-second - 1) as u64))
                .unwrap_or(self.start)
        };
        let backlog_at_ns = (second_end.min(self.end))
            .saturating_duration_since(self.start)
            .as_nanos() as u64;
        // Due strictly before the second's end: one due at the very instant is not late yet.
        let backlog_at_ns = backlog_at_ns.min(self.end_ns()).saturating_sub(1);
        for dev in &mut self.devices {
            let errors = std::mem::take(&mut dev.interval_errors);
            let backlog = match (second_end >= self.end, dev.backlog_at_end) {
                (true, Some(at_end)) => at_end,
                _ => dev.schedule.map_or(0, |s| s.due_by(backlog_at_ns)),
            };
            for (op, counts) in dev.interval.iter_mut() {
                // Every success moved one block ([`count_completion`] counts only the I/Os),
                // so the bytes are worked out once a second.
                counts.bytes = counts.ios * u64::from(dev.block_size);
                if second < 0 {
                    dev.ramp[op] += counts.ios;
                } else {
                    dev.ops[op].add(counts);
                }
            }
            match &self.intervals {
                Some(tx) => {
                    let _ = tx.send(DeviceInterval {
                        device: dev.index,
                        second,
                        ops: std::mem::take(&mut dev.interval),
                        errors,
                        backlog,
                    });
                }
                None => {
                    for (_, counts) in dev.interval.iter_mut() {
                        counts.ios = 0;
                        counts.bytes = 0;
                        counts.latency.reset();
                        counts.response.reset();
                    }
                }
            }
        }
        let _ = self
            .shared
            .seconds_done
            .fetch_max(second, Ordering::Relaxed);
    }
}
