//! The schedule of an offered rate: when each I/O was meant to start, fixed in advance and
//! independent of completions, so that a stall never moves it (no coordinated omission).
//!
//! Each share of a device with a rate keeps one [`Schedule`]; the worker issues an I/O only
//! once its intended start has come, takes the next intended start when it does, and
//! times the I/O's response from that intended start. I/Os that fall due while every slot
//! is busy simply wait (the backlog) and go out, in order, as slots free.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::data::splitmix64;

/// How the I/Os of an offered rate ([`crate::Workload::rate_iops`]) arrive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Arrival {
    /// Evenly spaced: I/O `n` is due `n / rate` seconds after the run's start.
    #[default]
    Even,
    /// A Poisson process: exponentially distributed gaps of mean `1 / rate`, drawn from the
    /// workload's seed (the same seed gives the same arrivals).
    Poisson,
}

impl Arrival {
    /// Both processes, in the order front ends list them.
    pub const ALL: [Arrival; 2] = [Arrival::Even, Arrival::Poisson];

    /// Its name, as [`Arrival::from_str`] reads it: `even` or `poisson`.
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Even => "even",
            Arrival::Poisson => "poisson",
        }
    }
}

impl fmt::Display for Arrival {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Arrival {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Arrival::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| format!("unknown arrival process '{s}': use even or poisson"))
    }
}

/// The most Poisson arrivals [`Schedule::due_by`] counts one by one (about a millisecond of
/// stepping); a larger backlog's rest is counted by its expected number.
const POISSON_STEPS_COUNTED: u64 = 1 << 16;

/// One share's intended starts, in nanoseconds after the run's start: the next I/O's
/// ([`Schedule::next_due_ns`]) and, by stepping ([`Schedule::advance`]), every later one.
/// Small and `Copy`, so the worker can keep a copy to step back to.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    rate: u64,
    arrival: Arrival,
    /// I/Os taken from it so far (the next one's number).
    taken: u64,
    next_due_ns: u64,
    /// Poisson: the exact (fractional) time of the next arrival and the gap generator.
    poisson_at_ns: f64,
    rng: u64,
}

impl Schedule {
    /// The schedule of `rate` I/Os per second (at least 1) arriving by `arrival`, its gaps
    /// drawn from `seed` for [`Arrival::Poisson`].
    pub fn new(rate: u64, arrival: Arrival, seed: u64) -> Schedule {
        let mut s = Schedule {
            rate: rate.max(1),
            arrival,
            taken: 0,
            next_due_ns: 0,
            poisson_at_ns: 0.0,
            rng: seed,
        };
        if arrival == Arrival::Poisson {
            s.poisson_at_ns = s.exponential_gap_ns();
            s.next_due_ns = s.poisson_at_ns as u64;
        }
        s
    }

    /// The intended start of the next I/O, in nanoseconds after the run's start.
    #[inline]
    pub fn next_due_ns(&self) -> u64 {
        self.next_due_ns
    }

    /// I/Os taken from the schedule so far.
    pub fn taken(&self) -> u64 {
        self.taken
    }

    /// Takes the next I/O: the one after it becomes the next.
    #[inline]
    pub fn advance(&mut self) {
        self.taken += 1;
        self.next_due_ns = match self.arrival {
            // ceil(n / rate) in ns: I/O n is due once n / rate seconds have passed.
            Arrival::Even => {
                (u128::from(self.taken) * 1_000_000_000).div_ceil(u128::from(self.rate)) as u64
            }
            Arrival::Poisson => {
                self.poisson_at_ns += self.exponential_gap_ns();
                self.poisson_at_ns as u64
            }
        };
    }

    /// How many I/Os not yet taken were due at or before `at_ns` (the backlog at that
    /// instant). Even spacing counts in closed form; Poisson steps a copy, at most 65,536
    /// arrivals, and counts the rest of a larger backlog by its expected number (the rate
    /// times the time left): the worker asks once a second, in its loop, and a backlog of
    /// billions (the largest rate offered to a slow device) would otherwise hold it for
    /// seconds each time.
    pub fn due_by(&self, at_ns: u64) -> u64 {
        if self.next_due_ns > at_ns {
            return 0;
        }
        match self.arrival {
            Arrival::Even => {
                // I/Os 0..=floor(at * rate / 1e9) are due by `at`.
                let due = (u128::from(at_ns) * u128::from(self.rate) / 1_000_000_000) as u64 + 1;
                due.saturating_sub(self.taken)
            }
            Arrival::Poisson => {
                let mut copy = *self;
                let mut n = 0;
                while copy.next_due_ns <= at_ns {
                    if n == POISSON_STEPS_COUNTED {
                        // This arrival, and those after it up to `at_ns` at the mean rate: a
                        // count of millions is then off by about its square root.
                        let rest_ns = u128::from(at_ns - copy.next_due_ns);
                        return n + 1 + (rest_ns * u128::from(self.rate) / 1_000_000_000) as u64;
                    }
                    copy.advance();
                    n += 1;
                }
                n
            }
        }
    }

    /// One exponential gap of mean `1e9 / rate` ns, by inversion of a uniform draw.
    fn exponential_gap_ns(&mut self) -> f64 {
        // 53 random bits in [0, 1); 1 - u is in (0, 1], so its logarithm is finite.
        let u = (splitmix64(&mut self.rng) >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        -(1.0 - u).ln() * 1e9 / self.rate as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_spacing_is_n_over_rate_and_counts_its_backlog() {
        let mut s = Schedule::new(1000, Arrival::Even, 1);
        let due: Vec<u64> = (0..4)
            .map(|_| {
                let d = s.next_due_ns();
                s.advance();
                d
            })
            .collect();
        assert_eq!(due, [0, 1_000_000, 2_000_000, 3_000_000]);
        // Taken 4 (due at 0..3 ms): by 1 s, I/Os 4..=1000 are due.
        assert_eq!(s.due_by(1_000_000_000), 997);
        assert_eq!(s.due_by(3_999_999), 0);
        let thirds = Schedule::new(3, Arrival::Even, 1);
        let mut t = thirds;
        t.advance();
        assert_eq!(
            t.next_due_ns(),
            333_333_334,
            "rounded up: never before its time"
        );
    }

    #[test]
    fn poisson_is_seeded_and_keeps_its_mean_rate() {
        let draw = |seed| {
            let mut s = Schedule::new(10_000, Arrival::Poisson, seed);
            (0..1000)
                .map(|_| {
                    let d = s.next_due_ns();
                    s.advance();
                    d
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        let s = Schedule::new(10_000, Arrival::Poisson, 7);
        let in_ten_seconds = s.due_by(10_000_000_000);
        // 100,000 expected; a Poisson count's sd is 316, so 1% is over 3 sd.
        assert!(
            (99_000..101_000).contains(&in_ten_seconds),
            "{in_ten_seconds}"
        );
    }

    /// A backlog beyond what is stepped is counted by its expectation: the largest rate the
    /// engine paces over two seconds (2 * 10^9 arrivals, minutes of stepping) is counted
    /// within a tenth of a percent, and a backlog within the stepped count exactly.
    #[test]
    fn a_poisson_backlog_beyond_the_steps_counted_is_its_expected_number() {
        // The largest rate the engine paces (`MAX_RATE_IOPS`, by its value: workload.rs names
        // this module, so this one does not name it back).
        let s = Schedule::new(1_000_000_000, Arrival::Poisson, 7);
        let due = s.due_by(2_000_000_000);
        assert!(due.abs_diff(2_000_000_000) < 2_000_000, "{due}");
        let small = Schedule::new(10_000, Arrival::Poisson, 7);
        let mut stepped = small;
        let mut n = 0;
        while stepped.next_due_ns() <= 1_000_000_000 {
            stepped.advance();
            n += 1;
        }
        assert!(n < POISSON_STEPS_COUNTED);
        assert_eq!(small.due_by(1_000_000_000), n);
        // Just past the stepped count, the estimate and the exact count agree closely.
        let rate = 1_000_000;
        let mid = Schedule::new(rate, Arrival::Poisson, 11);
        let at = 200_000_000; // 200,000 arrivals expected.
        let mut exact = mid;
        let mut m = 0u64;
        while exact.next_due_ns() <= at {
            exact.advance();
            m += 1;
        }
        let counted = mid.due_by(at);
        assert!(m > POISSON_STEPS_COUNTED);
        assert!(counted.abs_diff(m) * 100 < m, "{counted} counted, {m} due");
    }

    /// Kolmogorov-Smirnov: the gaps' empirical CDF against the exponential one. At n =
    /// 20,000 the 1% critical value of D is 1.628 / sqrt(n) = 0.0115.
    #[test]
    fn poisson_gaps_pass_kolmogorov_smirnov_against_the_exponential() {
        let rate = 2_000u64;
        let n = 20_000;
        let mut s = Schedule::new(rate, Arrival::Poisson, 0x5eed_f405_ca1e);
        let mut previous = s.poisson_at_ns;
        let mut gaps: Vec<f64> = (0..n)
            .map(|_| {
                s.advance();
                let gap = s.poisson_at_ns - previous;
                previous = s.poisson_at_ns;
                gap
            })
            .collect();
        gaps.sort_by(f64::total_cmp);
        let mean_ns = 1e9 / rate as f64;
        let d = gaps
            .iter()
            .enumerate()
            .map(|(i, &g)| {
                let cdf = 1.0 - (-g / mean_ns).exp();
                let below = i as f64 / n as f64;
                let at = (i + 1) as f64 / n as f64;
                (cdf - below).abs().max((at - cdf).abs())
            })
            .fold(0.0, f64::max);
        let critical = 1.628 / (n as f64).sqrt();
        assert!(d < critical, "D = {d:.5}, critical {critical:.5}");
    }

    #[test]
    fn arrival_names_round_trip() {
        for a in Arrival::ALL {
            assert_eq!(a.name().parse::<Arrival>(), Ok(a));
        }
        assert_eq!(
            "bursty".parse::<Arrival>().unwrap_err(),
            "unknown arrival process 'bursty': use even or poisson"
        );
    }
}
