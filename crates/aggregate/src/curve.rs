//! The load-latency curve: one run per queue depth, from light load to
//! saturation; for the host and each volume, the most IOPS at which a latency promise holds
//! (the SLO knee) and the point where more depth stops adding IOPS (saturation).
//!
//! Every latency is read from the run's histograms (reads and writes added bin by bin), never
//! averaged across volumes.

pub mod by_rate;

use serde::{Deserialize, Serialize};

use crate::histogram_codec::HistogramCodecError;
use hostmax_engine::new_latency_histogram;

use crate::{add_exact, Figures, HostReport, LatencySummary};

/// The latency statistic a promise names: a percentile, or the mean (which Little's law
/// ties to depth and IOPS: mean = depth / IOPS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LatencyStat {
    /// The mean.
    Mean,
    /// The median.
    P50,
    /// The 95th percentile (OCI's "sub-millisecond p95").
    P95,
    /// The 99th percentile (what databases live by).
    P99,
    /// The 99.9th percentile.
    #[serde(rename = "p99_9")]
    P999,
}

impl LatencyStat {
    /// The statistic's value in `latency`.
    pub fn of(self, latency: &CurveLatency) -> u64 {
        match self {
            LatencyStat::Mean => latency.mean,
            LatencyStat::P50 => latency.p50,
            LatencyStat::P95 => latency.p95,
            LatencyStat::P99 => latency.p99,
            LatencyStat::P999 => latency.p99_9,
        }
    }

    /// `p99`, `p99.9`, ... as people write it.
    pub fn label(self) -> &'static str {
        match self {
            LatencyStat::Mean => "mean",
            LatencyStat::P50 => "p50",
            LatencyStat::P95 => "p95",
            LatencyStat::P99 => "p99",
            LatencyStat::P999 => "p99.9",
        }
    }
}

/// "The `percentile` latency stays at or under `max_ns`."
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LatencyPromise {
    /// Which statistic is promised.
    pub percentile: LatencyStat,
    /// Its highest allowed value, in nanoseconds.
    pub max_ns: u64,
}

impl LatencyPromise {
    /// Whether `latency` keeps the promise.
    pub fn holds(&self, latency: &CurveLatency) -> bool {
        self.percentile.of(latency) <= self.max_ns
    }
}

/// The latencies a curve reports, of reads and writes together, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CurveLatency {
    /// Mean (rounded to the nanosecond).
    pub mean: u64,
    /// Median.
    pub p50: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p99_9: u64,
}

impl From<&LatencySummary> for CurveLatency {
    fn from(s: &LatencySummary) -> Self {
        CurveLatency {
            mean: s.mean.round() as u64,
            p50: s.p50,
            p95: s.p95,
            p99: s.p99,
            p99_9: s.p99_9,
        }
    }
}

/// The load, rate and latency of the host or one volume at one depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PointFigures {
    /// I/Os per second, reads and writes.
    pub iops: f64,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// LatencyStats of every I/O.
    pub latency_ns: CurveLatency,
}

impl PointFigures {
    /// The figures of a report's host or device: percentiles from every kind's histograms
    /// added together (exact); from the kind with the most I/Os when the report carries no
    /// histograms.
    pub fn from_figures(f: &Figures) -> Result<PointFigures, HistogramCodecError> {
        let latency = match &f.histograms {
            Some(encoded) => {
                let mut all = new_latency_histogram();
                for (_, h) in encoded.decode()?.iter() {
                    add_exact(&mut all, h);
                }
                CurveLatency::from(&LatencySummary::from_histogram(&all))
            }
            None => {
                let busiest = f.ops.values().max_by_key(|o| o.ios);
                CurveLatency::from(&busiest.map(|o| o.latency_ns).unwrap_or_default())
            }
        };
        Ok(PointFigures {
            iops: f.iops,
            bytes_per_sec: f.bytes_per_sec,
            latency_ns: latency,
        })
    }
}

/// One volume at one depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct VolumePoint {
    /// The device's path.
    pub path: String,
    /// Its figures.
    #[serde(flatten)]
    pub figures: PointFigures,
}

/// One step of the curve: every volume at the same queue depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CurvePoint {
    /// I/Os in flight per volume.
    pub iodepth: u32,
    /// The host's figures.
    pub host: PointFigures,
    /// Each volume's.
    pub volumes: Vec<VolumePoint>,
    /// A signal cut its run short: its figures are of part of the step, so no answer reads
    /// them (no knee, saturation or peak from it, and the promise neither held nor broke).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl CurvePoint {
    /// The point a run at one depth gives ([`CurvePoint::interrupted`] when the report is).
    pub fn from_report(report: &HostReport) -> Result<CurvePoint, HistogramCodecError> {
        Ok(CurvePoint {
            iodepth: report.workload.iodepth,
            interrupted: report.interrupted,
            host: PointFigures::from_figures(&report.host)?,
            volumes: report
                .devices
                .iter()
                .map(|d| {
                    Ok(VolumePoint {
                        path: d.path.clone(),
                        figures: PointFigures::from_figures(&d.figures)?,
                    })
                })
                .collect::<Result<_, HistogramCodecError>>()?,
        })
    }
}

/// A point of the curve named by its depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AtDepth {
    /// I/Os in flight per volume.
    pub iodepth: u32,
    /// The IOPS there.
    pub iops: f64,
    /// The percentiles there.
    pub latency_ns: CurveLatency,
}

/// What the curve says about the host or one volume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CurveAnswer {
    /// The SLO knee: the most IOPS at which the promise held (of points within the tolerance
    /// of that most, the deepest). `None` without a promise, or when it held nowhere.
    pub knee: Option<AtDepth>,
    /// The first point within the tolerance of the most IOPS measured: deeper only adds
    /// latency. `None` when the curve was interrupted ([`Curve::withhold_conclusions`]): the
    /// depths not measured might have given more.
    #[serde(default)]
    pub saturation: Option<AtDepth>,
    /// The most IOPS measured at any depth.
    pub peak_iops: f64,
    /// With a promise: whether it held at every depth (the knee is then only a lower bound:
    /// more depth may still keep it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_everywhere: Option<bool>,
    /// With a promise: the shallowest depth at which it broke (where the curve crosses it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broken_from: Option<u32>,
}

impl CurveAnswer {
    /// The answer for one series of (depth, figures), in depth order, of steps that ran to
    /// their end. `None` when empty.
    pub fn new(
        points: &[(u32, &PointFigures)],
        promise: Option<&LatencyPromise>,
        tolerance: f64,
    ) -> Option<CurveAnswer> {
        let at = |&(iodepth, f): &(u32, &PointFigures)| AtDepth {
            iodepth,
            iops: f.iops,
            latency_ns: f.latency_ns,
        };
        let peak = points.iter().map(|(_, f)| f.iops).fold(0.0, f64::max);
        let saturation = Some(
            points
                .iter()
                .find(|(_, f)| f.iops >= peak * (1.0 - tolerance))
                .map(at)?,
        );
        let broken_from = promise.and_then(|p| {
            points
                .iter()
                .find(|(_, f)| !p.holds(&f.latency_ns))
                .map(|(d, _)| *d)
        });
        let (knee, held_everywhere) = match promise {
            None => (None, None),
            Some(p) => {
                let held: Vec<&(u32, &PointFigures)> = points
                    .iter()
                    .filter(|(_, f)| p.holds(&f.latency_ns))
                    .collect();
                let best = held.iter().map(|(_, f)| f.iops).fold(0.0, f64::max);
                let knee = held
                    .iter()
                    .filter(|(_, f)| f.iops >= best * (1.0 - tolerance))
                    .max_by_key(|(d, _)| *d)
                    .map(|p| at(p));
                (knee, Some(held.len() == points.len()))
            }
        };
        Some(CurveAnswer {
            knee,
            saturation,
            peak_iops: peak,
            held_everywhere,
            broken_from,
        })
    }
}

impl CurveAnswer {
    /// The answer of no step that ran to its end: nothing concluded, a peak of 0.
    fn empty() -> CurveAnswer {
        CurveAnswer {
            knee: None,
            saturation: None,
            peak_iops: 0.0,
            held_everywhere: None,
            broken_from: None,
        }
    }
}

/// One volume's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct VolumeAnswer {
    /// The device's path.
    pub path: String,
    /// Its knee and saturation.
    #[serde(flatten)]
    pub answer: CurveAnswer,
}

/// The whole curve with its answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Curve {
    /// The latency promise the knee is found against, if any.
    pub promise: Option<LatencyPromise>,
    /// How close to the most IOPS counts as reaching it (measurement noise), as a fraction.
    pub tolerance: f64,
    /// The points, by depth.
    pub points: Vec<CurvePoint>,
    /// The host's answer.
    pub host: CurveAnswer,
    /// Each volume's answer.
    pub volumes: Vec<VolumeAnswer>,
}

impl Curve {
    /// Drops what only the whole curve can say, for a curve a signal cut short: the SLO knee,
    /// the saturation point and whether the promise held everywhere, for the host and every
    /// volume. The points and where a promise broke are measured facts and stay.
    pub fn withhold_conclusions(&mut self) {
        let answers =
            std::iter::once(&mut self.host).chain(self.volumes.iter_mut().map(|v| &mut v.answer));
        for answer in answers {
            answer.knee = None;
            answer.saturation = None;
            answer.held_everywhere = None;
        }
    }

    /// The curve of `points` (sorted here by depth). `None` when there are none. The answers
    /// read only the points that ran to their end; with none, each answer is empty (no knee,
    /// no saturation, a peak of 0).
    pub fn new(
        mut points: Vec<CurvePoint>,
        promise: Option<LatencyPromise>,
        tolerance: f64,
    ) -> Option<Curve> {
        points.sort_by_key(|p| p.iodepth);
        let complete = || points.iter().filter(|p| !p.interrupted);
        let host_series: Vec<(u32, &PointFigures)> =
            complete().map(|p| (p.iodepth, &p.host)).collect();
        let host = match CurveAnswer::new(&host_series, promise.as_ref(), tolerance) {
            Some(answer) => answer,
            None if !points.is_empty() => CurveAnswer::empty(),
            None => return None,
        };
        let paths: Vec<String> = points
            .first()?
            .volumes
            .iter()
            .map(|v| v.path.clone())
            .collect();
        let volumes = paths
            .into_iter()
            .map(|path| {
                let series: Vec<(u32, &PointFigures)> = complete()
                    .filter_map(|p| {
                        p.volumes
                            .iter()
                            .find(|v| v.path == path)
                            .map(|v| (p.iodepth, &v.figures))
                    })
                    .collect();
                let answer = CurveAnswer::new(&series, promise.as_ref(), tolerance)
                    .unwrap_or_else(CurveAnswer::empty);
                VolumeAnswer { path, answer }
            })
            .collect();
        Some(Curve {
            promise,
            tolerance,
            points,
            host,
            volumes,
        })
    }
}

/// A curve's JSON root: the curve and every depth's full report.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CurveReport {
    /// [`crate::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The curve and its answers.
    pub curve: Curve,
    /// One report per depth, in the order run.
    pub runs: Vec<HostReport>,
    /// When asked for, with an IOPS or throughput promise: how often each volume and the
    /// host kept it, second by second, in the run at the host's knee (else at saturation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<crate::consistency::ConsistencyVerdict>,
    /// A signal stopped the curve: the depth it was running was cut short, the curve gives no
    /// knee and no saturation point ([`Curve::withhold_conclusions`]).
    #[serde(default)]
    pub interrupted: bool,
    /// The depths that never ran (interrupted curves only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depths_not_measured: Vec<u32>,
    /// The curve by offered rate, when one was measured (its runs follow the ceiling's in
    /// `runs`; `curve` then holds the ceiling's depth alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_rate: Option<by_rate::RateCurve>,
}

impl LatencyPromise {
    /// A promise that `percentile` stays at or under `max_ns` nanoseconds.
    pub const fn new(percentile: LatencyStat, max_ns: u64) -> LatencyPromise {
        LatencyPromise { percentile, max_ns }
    }
}

with_setters!(CurveLatency {
    with_mean => mean: u64,
    with_p50 => p50: u64,
    with_p95 => p95: u64,
    with_p99 => p99: u64,
    with_p99_9 => p99_9: u64,
});

impl PointFigures {
    /// `iops` and `bytes_per_sec` with latencies `latency_ns` (for tools and tests that build
    /// curves; a report's are [`PointFigures::from_figures`]).
    pub fn new(iops: f64, bytes_per_sec: f64, latency_ns: CurveLatency) -> PointFigures {
        PointFigures {
            iops,
            bytes_per_sec,
            latency_ns,
        }
    }
}

impl VolumePoint {
    /// The volume at `path` did `figures`.
    pub fn new(path: impl Into<String>, figures: PointFigures) -> VolumePoint {
        VolumePoint {
            path: path.into(),
            figures,
        }
    }
}

impl CurvePoint {
    /// The run at `iodepth`: the host did `host`, each volume its entry of `volumes` (for
    /// tools and tests that build curves; a report's is [`CurvePoint::from_report`]).
    pub fn new(iodepth: u32, host: PointFigures, volumes: Vec<VolumePoint>) -> CurvePoint {
        CurvePoint {
            iodepth,
            host,
            volumes,
            interrupted: false,
        }
    }

    /// The same, cut short by a signal or not ([`CurvePoint::interrupted`]).
    pub fn with_interrupted(mut self, interrupted: bool) -> CurvePoint {
        self.interrupted = interrupted;
        self
    }
}

impl CurveReport {
    /// The report of `curve`, found from `runs` (one per depth, in order), of this crate's
    /// [`SCHEMA_VERSION`](crate::SCHEMA_VERSION), with no consistency verdict, not
    /// interrupted, every depth measured and no rate curve (set those on the value or with
    /// the setters).
    pub fn new(curve: Curve, runs: Vec<HostReport>) -> CurveReport {
        CurveReport {
            schema_version: crate::SCHEMA_VERSION,
            curve,
            runs,
            consistency: None,
            interrupted: false,
            depths_not_measured: Vec::new(),
            by_rate: None,
        }
    }
}

with_setters!(CurveReport {
    with_consistency => consistency: Option<crate::consistency::ConsistencyVerdict>,
    with_interrupted => interrupted: bool,
    with_depths_not_measured => depths_not_measured: Vec<u32>,
    with_by_rate => by_rate: Option<by_rate::RateCurve>,
});

#[cfg(test)]
mod tests {
    use super::*;

    /// A capped volume by Little's law: `cap` IOPS at every depth, latency depth / cap.
    fn capped(depth: u32, cap: f64) -> PointFigures {
        let ns = (f64::from(depth) / cap * 1e9) as u64;
        PointFigures {
            iops: cap,
            bytes_per_sec: cap * 4096.0,
            latency_ns: CurveLatency {
                mean: ns,
                p50: ns,
                p95: ns + ns / 10,
                p99: ns + ns / 5,
                p99_9: 2 * ns,
            },
        }
    }

    fn point(depth: u32, volumes: &[f64]) -> CurvePoint {
        let vols: Vec<VolumePoint> = volumes
            .iter()
            .enumerate()
            .map(|(i, &cap)| VolumePoint {
                path: format!("/dev/v{i}"),
                figures: capped(depth, cap),
            })
            .collect();
        // The host answers as its slowest volume: the percentiles of the sum lie in between.
        let total: f64 = volumes.iter().sum();
        let slowest = volumes.iter().copied().fold(f64::INFINITY, f64::min);
        CurvePoint {
            iodepth: depth,
            host: PointFigures {
                iops: total,
                ..capped(depth, slowest)
            },
            volumes: vols,
            interrupted: false,
        }
    }

    #[test]
    fn the_knee_is_where_depth_over_cap_crosses_the_promise() {
        let points: Vec<CurvePoint> = [8, 1, 2, 4, 16]
            .iter()
            .map(|&d| point(d, &[2000.0, 4000.0]))
            .collect();
        let promise = LatencyPromise {
            percentile: LatencyStat::P50,
            max_ns: 2_500_000,
        };
        let curve = Curve::new(points, Some(promise), 0.05).unwrap();
        assert_eq!(
            curve.points.iter().map(|p| p.iodepth).collect::<Vec<_>>(),
            [1, 2, 4, 8, 16]
        );
        // 2000 IOPS: 4/2000 = 2 ms holds, 8/2000 = 4 ms does not.
        let v0 = &curve.volumes[0].answer;
        assert_eq!(v0.knee.as_ref().unwrap().iodepth, 4);
        assert_eq!(v0.knee.as_ref().unwrap().iops, 2000.0);
        assert_eq!(v0.held_everywhere, Some(false));
        assert_eq!(v0.broken_from, Some(8));
        // 4000 IOPS: 8/4000 = 2 ms holds, 16/4000 = 4 ms does not.
        assert_eq!(curve.volumes[1].answer.knee.as_ref().unwrap().iodepth, 8);
        // Capped from depth 1: saturated there.
        assert_eq!(v0.saturation.as_ref().unwrap().iodepth, 1);
        assert_eq!(curve.host.peak_iops, 6000.0);
        assert_eq!(curve.host.knee.as_ref().unwrap().iodepth, 4);

        // A p99 promise no point keeps: no knee.
        let strict = LatencyPromise {
            percentile: LatencyStat::P99,
            max_ns: 100_000,
        };
        let curve = Curve::new(vec![point(1, &[2000.0])], Some(strict), 0.05).unwrap();
        assert!(curve.host.knee.is_none());
        assert_eq!(curve.host.held_everywhere, Some(false));
        assert!(Curve::new(Vec::new(), None, 0.05).is_none());
    }

    #[test]
    fn a_rising_curve_saturates_where_iops_stop_growing() {
        // IOPS grow with depth until 8, then flatten (latency keeps growing).
        let iops = [
            (1, 10_000.0),
            (2, 19_000.0),
            (4, 36_000.0),
            (8, 50_000.0),
            (16, 51_000.0),
            (32, 50_500.0),
        ];
        let figures: Vec<PointFigures> = iops
            .iter()
            .map(|&(d, i)| PointFigures {
                iops: i,
                bytes_per_sec: i * 4096.0,
                latency_ns: CurveLatency {
                    mean: (f64::from(d) / i * 1e9) as u64,
                    p50: (f64::from(d) / i * 1e9) as u64,
                    p95: (f64::from(d) / i * 1.5e9) as u64,
                    p99: (f64::from(d) / i * 2e9) as u64,
                    p99_9: (f64::from(d) / i * 4e9) as u64,
                },
            })
            .collect();
        let series: Vec<(u32, &PointFigures)> =
            iops.iter().map(|&(d, _)| d).zip(&figures).collect();
        let promise = LatencyPromise {
            percentile: LatencyStat::P99,
            max_ns: 1_000_000,
        };
        let a = CurveAnswer::new(&series, Some(&promise), 0.05).unwrap();
        assert_eq!(a.saturation.as_ref().unwrap().iodepth, 8);
        assert_eq!(a.peak_iops, 51_000.0);
        // p99 = 2 x depth / IOPS: depth 16 gives 0.63 ms, 32 gives 1.27 ms.
        let knee = a.knee.unwrap();
        assert_eq!((knee.iodepth, knee.iops), (16, 51_000.0));
        let none = CurveAnswer::new(&series, None, 0.05).unwrap();
        assert!(none.knee.is_none() && none.held_everywhere.is_none());
    }
}
