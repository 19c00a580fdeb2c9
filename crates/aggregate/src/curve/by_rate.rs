//! The curve by offered rate: one run per offered rate, each judged by
//! its response times (intended start to completion, so a device that falls behind its
//! schedule shows it), with the SLO knee by offered rate and the saturation point where the
//! achieved rate stops following the offered one.

use hostmax_engine::new_latency_histogram;
use serde::{Deserialize, Serialize};

use super::{CurveLatency, LatencyPromise};
use crate::histogram_codec::{EncodedHistograms, HistogramCodecError};
use crate::latency::{add_exact, LatencySummary};
use crate::report::HostReport;

/// The share of the offered rate a step must achieve to be following it: below it, the
/// volumes are saturated (the backlog grows faster than it is worked off).
pub const FOLLOWS_OFFERED: f64 = 0.95;

/// One offered rate and what the host did at it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RateStep {
    /// IOPS offered to each volume.
    pub offered_iops: u64,
    /// IOPS offered to the host (each volume's times the volumes).
    pub offered_host_iops: f64,
    /// IOPS the host achieved.
    pub achieved_iops: f64,
    /// Response times (intended start to completion) of every I/O, reads and writes together.
    pub response_ns: CurveLatency,
    /// Service times (submission to completion), for comparison.
    pub service_ns: CurveLatency,
    /// A signal cut its run short: its figures are of part of the step, so neither the knee
    /// nor the saturation point reads it, and the promise neither held nor broke there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl RateStep {
    /// The step a run at an offered rate gives; `None` for a run without one.
    pub fn from_report(report: &HostReport) -> Result<Option<RateStep>, HistogramCodecError> {
        let Some(offered) = report.workload.rate_iops else {
            return Ok(None);
        };
        let all_kinds = |encoded: Option<&EncodedHistograms>| {
            let mut all = new_latency_histogram();
            if let Some(encoded) = encoded {
                for (_, h) in encoded.decode()?.iter() {
                    add_exact(&mut all, h);
                }
            }
            Ok::<_, HistogramCodecError>(CurveLatency::from(&LatencySummary::from_histogram(&all)))
        };
        Ok(Some(RateStep {
            offered_iops: offered,
            offered_host_iops: offered as f64 * report.devices.len() as f64,
            achieved_iops: report.host.iops,
            response_ns: all_kinds(report.host.response_histograms.as_ref())?,
            service_ns: all_kinds(report.host.histograms.as_ref())?,
            interrupted: report.interrupted,
        }))
    }

    /// Whether the achieved rate follows the offered one ([`FOLLOWS_OFFERED`]).
    pub fn follows_offered(&self) -> bool {
        self.achieved_iops >= FOLLOWS_OFFERED * self.offered_host_iops
    }
}

/// The curve by offered rate and its answers, for the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RateCurve {
    /// Each volume's ceiling measured uncapped before the steps (the host's IOPS over the
    /// volumes), which fractions such as `0.8x` were taken of.
    pub ceiling_iops: Option<f64>,
    /// The latency promise, judged on response time.
    pub promise: Option<LatencyPromise>,
    /// The steps, by offered rate.
    pub steps: Vec<RateStep>,
    /// The SLO knee: the most IOPS offered per volume at which the promise held, below the
    /// lowest offered rate that broke it. `None` without a promise, or when the lowest step
    /// broke it.
    pub knee_offered_iops: Option<u64>,
    /// The saturation point: the lowest IOPS offered per volume at which the host achieved
    /// less than [`FOLLOWS_OFFERED`] of the offered rate. `None` when every step kept up.
    pub saturation_offered_iops: Option<u64>,
}

impl RateCurve {
    /// The curve of `steps` (sorted here by offered rate) against `promise`; the knee and the
    /// saturation point read only the steps that ran to their end.
    pub fn new(
        mut steps: Vec<RateStep>,
        promise: Option<LatencyPromise>,
        ceiling_iops: Option<f64>,
    ) -> RateCurve {
        steps.sort_by_key(|s| s.offered_iops);
        let complete = || steps.iter().filter(|s| !s.interrupted);
        let knee_offered_iops = promise.and_then(|p| {
            complete()
                .take_while(|s| p.holds(&s.response_ns))
                .last()
                .map(|s| s.offered_iops)
        });
        let saturation_offered_iops = complete()
            .find(|s| !s.follows_offered())
            .map(|s| s.offered_iops);
        RateCurve {
            ceiling_iops,
            promise,
            steps,
            knee_offered_iops,
            saturation_offered_iops,
        }
    }

    /// Drops the knee and the saturation point, for a curve a signal cut short.
    pub fn withhold_conclusions(&mut self) {
        self.knee_offered_iops = None;
        self.saturation_offered_iops = None;
    }
}

impl RateStep {
    /// The step offered `offered_iops` per volume (`offered_host_iops` over the host) and
    /// achieved `achieved_iops` over the host, with the response times from each I/O's
    /// intended start (`response_ns`) and the service times (`service_ns`): for tools and
    /// tests that build curves; a report's is [`RateStep::from_report`].
    pub fn new(
        offered_iops: u64,
        offered_host_iops: f64,
        achieved_iops: f64,
        response_ns: CurveLatency,
        service_ns: CurveLatency,
    ) -> RateStep {
        RateStep {
            offered_iops,
            offered_host_iops,
            achieved_iops,
            response_ns,
            service_ns,
            interrupted: false,
        }
    }

    /// The same, cut short by a signal or not ([`RateStep::interrupted`]).
    pub fn with_interrupted(mut self, interrupted: bool) -> RateStep {
        self.interrupted = interrupted;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curve::LatencyStat;

    fn step(offered: u64, achieved: f64, p99_ms: u64) -> RateStep {
        let latency = CurveLatency {
            p99: p99_ms * 1_000_000,
            ..CurveLatency::default()
        };
        RateStep {
            offered_iops: offered,
            offered_host_iops: offered as f64,
            achieved_iops: achieved,
            response_ns: latency,
            service_ns: CurveLatency::default(),
            interrupted: false,
        }
    }

    #[test]
    fn the_knee_is_the_most_offered_before_the_promise_broke_and_saturation_where_achieved_lags() {
        let promise = LatencyPromise {
            percentile: LatencyStat::P99,
            max_ns: 2_000_000,
        };
        let steps = vec![
            step(8000, 7990.0, 1),
            step(2000, 2000.0, 1),
            step(10_000, 9000.0, 40),
            step(9000, 8800.0, 3),
            step(12_000, 9100.0, 1), // noise after the break does not move the knee
        ];
        let curve = RateCurve::new(steps, Some(promise), Some(9200.0));
        assert_eq!(
            curve
                .steps
                .iter()
                .map(|s| s.offered_iops)
                .collect::<Vec<_>>(),
            [2000, 8000, 9000, 10_000, 12_000]
        );
        assert_eq!(curve.knee_offered_iops, Some(8000));
        assert_eq!(curve.saturation_offered_iops, Some(10_000));
        let none = RateCurve::new(vec![step(1000, 1000.0, 5)], Some(promise), None);
        assert_eq!(none.knee_offered_iops, None, "the lowest step broke it");
        assert_eq!(none.saturation_offered_iops, None, "it kept up");
    }
}
