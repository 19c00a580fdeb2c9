//! Steady state as SNIA PTS and the CloudHarmony suite define it, on one tracked figure per
//! round (the 4k random-write IOPS, say).
//!
//! After every round `r >= 5`, the window is the tracked figure of rounds `r-4 ..= r`
//! (five values `y_1..y_5` at rounds `x_1..x_5`). With `mean = Σy/5` and the least-squares
//! line `y = slope·x + intercept` through the five points
//! (`slope = Σ(x-x̄)(y-ȳ) / Σ(x-x̄)²`, `intercept = ȳ - slope·x̄`), the window is steady when
//! both hold:
//!
//! - range: `max(y) - min(y) <= 0.20 · mean` (the data excursion);
//! - slope: `|slope| · (5 - 1) <= 0.10 · mean` (how far the fitted line moves across the
//!   window's four round-to-round steps).
//!
//! Steady state is reached at the first round whose window passes. A window whose mean is not
//! positive (nothing was measured) never passes: both limits are relative to the mean.
//! [`SteadyStateRule`] holds the constants, [`WindowFit`] one window's fit and verdict, and
//! [`SteadyState`] the outcome of a whole series ([`SteadyStateRule::evaluate`]).

use serde::{Deserialize, Serialize};

/// The constants of the steady-state test; the default is SNIA PTS's (5 rounds, 20% range,
/// 10% slope excursion).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SteadyStateRule {
    /// Rounds in the window (SNIA: 5). Also the first round that can be steady.
    pub window: usize,
    /// Largest allowed `max - min` as a fraction of the window's mean (SNIA: 0.20).
    pub max_range: f64,
    /// Largest allowed `|slope| · (window - 1)` as a fraction of the mean (SNIA: 0.10).
    pub max_slope_excursion: f64,
}

impl Default for SteadyStateRule {
    /// SNIA PTS / CloudHarmony: 5 rounds, 20% range, 10% slope excursion.
    fn default() -> Self {
        SteadyStateRule {
            window: 5,
            max_range: 0.20,
            max_slope_excursion: 0.10,
        }
    }
}

/// One window of rounds: its values, the least-squares line through them and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WindowFit {
    /// Round number (1-based) of the window's first value.
    pub first_round: u32,
    /// Round number of its last value.
    pub last_round: u32,
    /// The tracked figure of each round in the window, oldest first.
    pub values: Vec<f64>,
    /// Their mean.
    pub mean: f64,
    /// Their smallest value.
    pub min: f64,
    /// Their largest value.
    pub max: f64,
    /// Slope of the least-squares line, per round (x is the round number).
    pub slope: f64,
    /// Its intercept: the line is `slope · round + intercept`.
    pub intercept: f64,
    /// `max - min <= max_range · mean`.
    pub range_ok: bool,
    /// `|slope| · (window - 1) <= max_slope_excursion · mean`.
    pub slope_ok: bool,
}

impl WindowFit {
    /// Whether the window passes both criteria.
    pub fn steady(&self) -> bool {
        self.range_ok && self.slope_ok
    }

    /// The fitted line's value at `round`.
    pub fn line_at(&self, round: f64) -> f64 {
        self.slope * round + self.intercept
    }
}

/// What a series of rounds says about steady state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SteadyState {
    /// Whether some window passed.
    pub reached: bool,
    /// The round at which it was reached (the last round of the first passing window).
    pub round: Option<u32>,
    /// The passing window, or the last window examined when none passed; `None` when there
    /// were fewer rounds than the window holds.
    pub window: Option<WindowFit>,
    /// Rounds examined (the series' length, capped at the maximum).
    pub rounds_examined: u32,
}

impl SteadyStateRule {
    /// Fits one window. `values` are the tracked figures of consecutive rounds starting at
    /// round `first_round` (1-based); any length of at least 2 is accepted.
    pub fn fit(&self, values: &[f64], first_round: u32) -> WindowFit {
        let n = values.len();
        let nf = n as f64;
        let xs: Vec<f64> = (0..n).map(|i| f64::from(first_round) + i as f64).collect();
        let mean = values.iter().sum::<f64>() / nf;
        let x_mean = xs.iter().sum::<f64>() / nf;
        let sxy: f64 = xs
            .iter()
            .zip(values)
            .map(|(x, y)| (x - x_mean) * (y - mean))
            .sum();
        let sxx: f64 = xs.iter().map(|x| (x - x_mean).powi(2)).sum();
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        let intercept = mean - slope * x_mean;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let positive = mean > 0.0 && mean.is_finite();
        WindowFit {
            first_round,
            last_round: first_round + n.saturating_sub(1) as u32,
            values: values.to_vec(),
            mean,
            min,
            max,
            slope,
            intercept,
            range_ok: positive && max - min <= self.max_range * mean,
            slope_ok: positive && slope.abs() * (nf - 1.0) <= self.max_slope_excursion * mean,
        }
    }

    /// The window ending at round `round` (1-based) of `series`, if there are enough rounds.
    pub fn window_at(&self, series: &[f64], round: u32) -> Option<WindowFit> {
        let end = round as usize;
        if end < self.window || end > series.len() {
            return None;
        }
        let start = end - self.window;
        Some(self.fit(&series[start..end], start as u32 + 1))
    }

    /// Examines `series` (the tracked figure of rounds 1, 2, ...) round by round from round
    /// `window` on, up to `max_rounds`, and stops at the first steady window.
    pub fn evaluate(&self, series: &[f64], max_rounds: u32) -> SteadyState {
        let examined = series.len().min(max_rounds as usize) as u32;
        let mut last = None;
        for round in self.window as u32..=examined {
            let fit = self
                .window_at(series, round)
                .expect("round is within the series");
            if fit.steady() {
                return SteadyState {
                    reached: true,
                    round: Some(round),
                    window: Some(fit),
                    rounds_examined: examined,
                };
            }
            last = Some(fit);
        }
        SteadyState {
            reached: false,
            round: None,
            window: last,
            rounds_examined: examined,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> SteadyStateRule {
        SteadyStateRule::default()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn fit_of_a_known_line() {
        // y = 10x + 100 at rounds 3..=7: exact line, mean at x = 5 is 150.
        let values: Vec<f64> = (3..=7).map(|x| 10.0 * f64::from(x) + 100.0).collect();
        let fit = rule().fit(&values, 3);
        assert_eq!((fit.first_round, fit.last_round), (3, 7));
        assert!(close(fit.slope, 10.0), "{}", fit.slope);
        assert!(close(fit.intercept, 100.0), "{}", fit.intercept);
        assert!(close(fit.mean, 150.0));
        assert!(close(fit.line_at(5.0), 150.0));
        // range 40 <= 30? no. slope excursion 40 <= 15? no.
        assert!(!fit.range_ok && !fit.slope_ok && !fit.steady());
    }

    #[test]
    fn flat_series_is_steady_at_round_5_exactly() {
        let series = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0, 1000.0];
        let s = rule().evaluate(&series, 25);
        assert!(s.reached);
        assert_eq!(s.round, Some(5));
        let w = s.window.unwrap();
        assert_eq!(w.values, series[..5].to_vec());
        assert_eq!((w.first_round, w.last_round), (1, 5));
        assert!(close(w.mean, 1000.0));
        assert_eq!((w.min, w.max), (990.0, 1010.0));
        // Hand-computed: x - 3 = -2..2, y - 1000 = 0, 10, -10, 5, -5: Σ = 0 - 10 + 0 + 5 - 10
        // = -15 over Σ(x-3)² = 10.
        assert!(close(w.slope, -1.5), "{}", w.slope);
        assert!(close(w.intercept, 1000.0 + 1.5 * 3.0));
        assert_eq!(s.rounds_examined, 7);
    }

    #[test]
    fn ramping_series_becomes_steady_once_the_ramp_leaves_the_window() {
        // Fresh-out-of-box decay: 3000, 2400, 1900, then flat around 1500.
        let series = [
            3000.0, 2400.0, 1900.0, 1510.0, 1500.0, 1490.0, 1505.0, 1495.0,
        ];
        let s = rule().evaluate(&series, 25);
        assert!(s.reached);
        // Window 3..7 still holds 1900 (range 410 > 0.2 x 1581); window 4..8 is flat.
        assert_eq!(s.round, Some(8));
        let w = s.window.unwrap();
        assert_eq!(w.first_round, 4);
        assert_eq!(w.values, series[3..8].to_vec());
        assert!(!rule().window_at(&series, 7).unwrap().steady());
    }

    #[test]
    fn steady_drift_fails_on_the_slope_alone() {
        // +4% of the mean per round: range 16% <= 20% passes, slope 4 x 4% = 16% > 10% fails.
        let series: Vec<f64> = (0..10)
            .map(|i| 1000.0 * (1.0 + 0.04 * f64::from(i)))
            .collect();
        let w = rule().window_at(&series, 5).unwrap();
        assert!(w.range_ok, "range {} mean {}", w.max - w.min, w.mean);
        assert!(!w.slope_ok);
        let s = rule().evaluate(&series, 10);
        assert!(!s.reached && s.round.is_none());
        assert_eq!(s.window.unwrap().last_round, 10);
    }

    #[test]
    fn noisy_series_fails_on_the_range_alone() {
        // Symmetric noise: no trend at all, but max - min is 30% of the mean.
        let series = [1150.0, 850.0, 1000.0, 850.0, 1150.0, 850.0];
        let w = rule().window_at(&series, 5).unwrap();
        assert!(!w.range_ok);
        assert!(w.slope_ok, "slope {}", w.slope);
        // Window 2..6 has the same spread.
        assert!(!rule().evaluate(&series, 25).reached);
    }

    #[test]
    fn limits_are_inclusive() {
        // max - min exactly 20% of the mean: values 900, 1100 and three at 1000 (mean 1000),
        // placed so that the slope is zero.
        let series = [1000.0, 900.0, 1000.0, 1100.0, 1000.0];
        let w = rule().fit(&series, 1);
        assert!(close(w.max - w.min, 0.2 * w.mean));
        assert!(w.range_ok);
        // Slope excursion exactly 10%: slope 25 per round on a mean of 1000.
        let line: Vec<f64> = (1..=5).map(|x| 925.0 + 25.0 * f64::from(x)).collect();
        let w = rule().fit(&line, 1);
        assert!(close(w.mean, 1000.0) && close(w.slope, 25.0));
        assert!(w.slope_ok && w.range_ok);
        let steeper: Vec<f64> = (1..=5).map(|x| 924.0 + 25.1 * f64::from(x)).collect();
        assert!(!rule().fit(&steeper, 1).slope_ok);
    }

    #[test]
    fn short_series_has_no_window() {
        for len in 0..5 {
            let series = vec![1000.0; len];
            let s = rule().evaluate(&series, 25);
            assert!(
                !s.reached && s.round.is_none() && s.window.is_none(),
                "{len}"
            );
            assert_eq!(s.rounds_examined, len as u32);
            assert!(rule().window_at(&series, len as u32).is_none());
        }
    }

    #[test]
    fn max_rounds_caps_what_is_examined() {
        // Steady only from round 8 on, but only 6 rounds are allowed.
        let series = [
            3000.0, 2400.0, 1900.0, 1510.0, 1500.0, 1490.0, 1505.0, 1495.0,
        ];
        let s = rule().evaluate(&series, 6);
        assert!(!s.reached);
        assert_eq!(s.rounds_examined, 6);
        let w = s.window.unwrap();
        assert_eq!((w.first_round, w.last_round), (2, 6));
    }

    #[test]
    fn nothing_measured_is_never_steady() {
        let s = rule().evaluate(&[0.0; 6], 25);
        assert!(!s.reached);
        assert!(!s.window.unwrap().range_ok);
    }
}
