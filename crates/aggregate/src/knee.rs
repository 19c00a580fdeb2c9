//! The host's knee: from runs of the same workload on 1, 2, 4, ... volumes ([`SweepPoint`]s),
//! the measured ceiling and the smallest number of volumes that reaches it ([`Sweep`]), and
//! the ideal line to draw beside them ([`ideal_line`]).

use serde::{Deserialize, Serialize};

use crate::report::HostReport;
use crate::spec::Tolerance;

/// One step of a sweep: the host's totals with `volumes` volumes driven.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SweepPoint {
    /// Volumes driven (the first `volumes` of the list).
    pub volumes: usize,
    /// The host's IOPS.
    pub iops: f64,
    /// The host's bytes per second.
    pub bytes_per_sec: f64,
    /// A signal cut the step short: its figures are of part of a step, so neither the
    /// ceiling, the knee nor the ideal line reads it while any step ran to its end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl SweepPoint {
    /// The point of one step's report ([`SweepPoint::interrupted`] when the report is).
    pub fn from_report(report: &HostReport) -> SweepPoint {
        SweepPoint {
            volumes: report.devices.len(),
            iops: report.host.iops,
            bytes_per_sec: report.host.bytes_per_sec,
            interrupted: report.interrupted,
        }
    }

    /// The same, cut short by a signal or not ([`SweepPoint::interrupted`]).
    pub fn with_interrupted(mut self, interrupted: bool) -> SweepPoint {
        self.interrupted = interrupted;
        self
    }
}

/// The points that ran to their end, or all of them when none did (a sweep whose only
/// step was cut short, whose conclusions its command withholds).
fn complete_points(points: &[SweepPoint]) -> Vec<SweepPoint> {
    let complete: Vec<SweepPoint> = points.iter().filter(|p| !p.interrupted).copied().collect();
    if complete.is_empty() {
        points.to_vec()
    } else {
        complete
    }
}

/// A point of the ideal line: what `volumes` volumes would give if the host added nothing of
/// its own limit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IdealPoint {
    /// Volumes.
    pub volumes: usize,
    /// IOPS.
    pub iops: f64,
}

/// Where the ideal line comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum IdealSource {
    /// The sum of the driven volumes' promised IOPS.
    VolumeCaps,
    /// The first step's IOPS per volume, times the volumes.
    LinearFromFirst,
    /// What each volume may do under the steps' own IOPS cap (the workload's `rate_iops`):
    /// its promise or the cap, the lower, summed (the cap alone when no spec gives promises).
    RateCapped,
}

/// What a sweep found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Sweep {
    /// One point per step, by volumes.
    pub points: Vec<SweepPoint>,
    /// The highest host IOPS of any step.
    pub ceiling_iops: f64,
    /// The fewest volumes whose IOPS reach the ceiling within the tolerance.
    pub knee_volumes: usize,
    /// Whether the host was shown at its ceiling: steps after the knee gave nothing more, or
    /// the last step fell short of the ideal line by more than the tolerance. When false the
    /// IOPS still grew as the volumes promise, and the ceiling is only a lower bound.
    pub saturated: bool,
    /// The tolerance used, as a fraction.
    pub tolerance: f64,
    /// The ideal line, one point per step.
    pub ideal: Vec<IdealPoint>,
    /// Where the ideal line comes from.
    pub ideal_source: IdealSource,
    /// The per-volume IOPS cap (`rate_iops`) the steps ran with, when it held the ideal line
    /// down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_cap_iops: Option<f64>,
}

/// Finds the ceiling and the knee of `points` (any order; at least one), of the steps that
/// ran to their end where any did.
///
/// The ceiling is the highest IOPS measured; the knee the fewest volumes whose IOPS are at
/// least the ceiling less the tolerance. The knee is only as fine as the steps: the true knee
/// lies after the step before it, so with steps 1, 2, 4 a host that saturates at 3 volumes
/// shows its knee at 4.
pub fn find_knee(points: &[SweepPoint], tolerance: Tolerance) -> Option<(f64, usize, bool)> {
    let mut sorted = complete_points(points);
    sorted.sort_by_key(|p| p.volumes);
    let ceiling = sorted.iter().map(|p| p.iops).fold(f64::NAN, f64::max);
    if sorted.is_empty() || !ceiling.is_finite() {
        return None;
    }
    let knee = sorted.iter().find(|p| tolerance.reaches(p.iops, ceiling))?;
    let last = sorted.last()?.volumes;
    Some((ceiling, knee.volumes, knee.volumes < last))
}

/// The ideal line over `steps`: the sum of the first n volumes' promised IOPS when every
/// volume has one (`caps`, in sweep order), else the first point's IOPS per volume times n
/// (the first that ran to its end, where any did).
pub fn ideal_line(
    points: &[SweepPoint],
    caps: Option<&[f64]>,
) -> Option<(Vec<IdealPoint>, IdealSource)> {
    let mut steps: Vec<usize> = points.iter().map(|p| p.volumes).collect();
    steps.sort_unstable();
    if let Some(caps) = caps {
        if steps.iter().all(|&n| n <= caps.len()) {
            let line = steps
                .iter()
                .map(|&n| IdealPoint {
                    volumes: n,
                    iops: caps[..n].iter().sum(),
                })
                .collect();
            return Some((line, IdealSource::VolumeCaps));
        }
    }
    let first = complete_points(points)
        .into_iter()
        .min_by_key(|p| p.volumes)?;
    if first.volumes == 0 {
        return None;
    }
    let per_volume = first.iops / first.volumes as f64;
    let line = steps
        .iter()
        .map(|&n| IdealPoint {
            volumes: n,
            iops: per_volume * n as f64,
        })
        .collect();
    Some((line, IdealSource::LinearFromFirst))
}

impl Sweep {
    /// Names no knee, for a sweep a signal cut short: the steps not run might have given
    /// more, so the highest figure is only a lower bound of the ceiling (`saturated` false).
    pub fn withhold_conclusions(&mut self) {
        self.saturated = false;
    }

    /// The sweep of `points` (at least one, none with zero volumes); `caps` are the volumes'
    /// promised IOPS in sweep order, if a spec gives them.
    pub fn new(
        points: Vec<SweepPoint>,
        caps: Option<&[f64]>,
        tolerance: Tolerance,
    ) -> Option<Sweep> {
        Sweep::with_rate_cap(points, caps, None, tolerance)
    }

    /// [`Sweep::new`] for steps run with an IOPS cap per volume (`rate_cap`, the workload's
    /// `rate_iops`): no volume can give more than the cap, so the ideal line is each volume's
    /// promise or the cap, the lower, and IOPS that follow it are held by the cap, not
    /// saturated.
    pub fn with_rate_cap(
        points: Vec<SweepPoint>,
        caps: Option<&[f64]>,
        rate_cap: Option<f64>,
        tolerance: Tolerance,
    ) -> Option<Sweep> {
        let most = points.iter().map(|p| p.volumes).max().unwrap_or(0);
        let held: Option<Vec<f64>> = rate_cap.map(|cap| match caps {
            Some(promised) => promised.iter().map(|&p| p.min(cap)).collect(),
            None => vec![cap; most],
        });
        // The cap matters only where it is below what the line would be without it.
        let binding = match (rate_cap, caps) {
            (Some(cap), Some(promised)) => promised.iter().any(|&p| cap < p),
            (Some(_), None) => true,
            (None, _) => false,
        };
        let (ceiling_iops, knee_volumes, flat_after_knee) = find_knee(&points, tolerance)?;
        let (ideal, ideal_source) = match held.as_deref() {
            Some(held) if binding => {
                let (line, _) = ideal_line(&points, Some(held))?;
                (line, IdealSource::RateCapped)
            }
            _ => ideal_line(&points, caps)?,
        };
        let mut points = points;
        points.sort_by_key(|p| p.volumes);
        // Saturated: more volumes than the knee gave nothing more, or the last step is short
        // of the ideal line (the host, not the volumes, set its figure).
        // The last step that ran to its end, against the ideal at its volumes.
        let last = *complete_points(&points).last()?;
        let last_ideal = ideal.iter().find(|i| i.volumes == last.volumes)?.iops;
        let saturated = flat_after_knee || !tolerance.reaches(last.iops, last_ideal);
        Some(Sweep {
            points,
            ceiling_iops,
            knee_volumes,
            saturated,
            tolerance: tolerance.fraction(),
            ideal,
            ideal_source,
            rate_cap_iops: rate_cap.filter(|_| binding),
        })
    }
}

/// The steps of a sweep over `total` volumes: `1, 2, 4, ...` below `total`, then `total`.
pub fn default_steps(total: usize) -> Vec<usize> {
    let mut steps = Vec::new();
    let mut n = 1;
    while n < total {
        steps.push(n);
        n *= 2;
    }
    if total > 0 {
        steps.push(total);
    }
    steps
}

/// A sweep's JSON root (one run per number of volumes): what it found and each step's
/// report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SweepReport {
    /// [`crate::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The host that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Run id and the window from the first step's start to the last one's end, and the rest
    /// of [`crate::Provenance`] (each step's report carries its own as well).
    #[serde(flatten)]
    pub provenance: crate::Provenance,
    /// The ceiling, the knee and the points.
    pub sweep: Sweep,
    /// One report per step, by volumes.
    pub runs: Vec<HostReport>,
    /// A signal stopped the sweep: the step it was running was cut short, and the sweep
    /// names no knee (`sweep.saturated` is false, the ceiling only a lower bound).
    #[serde(default)]
    pub interrupted: bool,
    /// The steps (by volumes) that never ran (interrupted sweeps only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps_not_measured: Vec<usize>,
}

impl SweepPoint {
    /// `volumes` driven together did `iops` and `bytes_per_sec` (for tools and tests; a
    /// report's is [`SweepPoint::from_report`]).
    pub fn new(volumes: usize, iops: f64, bytes_per_sec: f64) -> SweepPoint {
        SweepPoint {
            volumes,
            iops,
            bytes_per_sec,
            interrupted: false,
        }
    }
}

impl SweepReport {
    /// The report of `sweep`, found from `runs` (one per step, in order), of this crate's
    /// [`SCHEMA_VERSION`](crate::SCHEMA_VERSION), with no hostname or provenance, not
    /// interrupted and every step measured (set those on the value or with the setters).
    pub fn new(sweep: Sweep, runs: Vec<HostReport>) -> SweepReport {
        SweepReport {
            schema_version: crate::SCHEMA_VERSION,
            hostname: None,
            provenance: crate::Provenance::default(),
            sweep,
            runs,
            interrupted: false,
            steps_not_measured: Vec::new(),
        }
    }
}

with_setters!(SweepReport {
    with_hostname => hostname: Option<String>,
    with_provenance => provenance: crate::Provenance,
    with_interrupted => interrupted: bool,
    with_steps_not_measured => steps_not_measured: Vec<usize>,
});

#[cfg(test)]
mod tests {
    use super::*;

    fn p(volumes: usize, iops: f64) -> SweepPoint {
        SweepPoint::new(volumes, iops, iops * 4096.0)
    }

    #[test]
    fn a_step_cut_short_is_neither_the_ceiling_nor_the_ideal_lines_base() {
        // The step of 4 was cut short by a signal: its brief window read high (a burst).
        let points = [
            p(1, 2000.0),
            p(2, 4000.0),
            p(4, 9000.0).with_interrupted(true),
        ];
        assert_eq!(find_knee(&points, T), Some((4000.0, 2, false)));
        let first_cut = [p(1, 3000.0).with_interrupted(true), p(2, 4000.0)];
        let (line, _) = ideal_line(&first_cut, None).unwrap();
        assert_eq!(
            line.iter().map(|i| i.iops).collect::<Vec<_>>(),
            [2000.0, 4000.0]
        );
        // Only a cut step: it is all there is (its command withholds the conclusions).
        let only_cut = [p(1, 3000.0).with_interrupted(true)];
        assert_eq!(find_knee(&only_cut, T), Some((3000.0, 1, false)));
    }

    const T: Tolerance = Tolerance::DEFAULT;

    #[test]
    fn four_volumes_of_2000_behind_5000() {
        // True knee: 3 volumes (6000 promised, 5000 delivered).
        let fine = [p(1, 1998.0), p(2, 3995.0), p(3, 4990.0), p(4, 5004.0)];
        assert_eq!(find_knee(&fine, T), Some((5004.0, 3, true)));
        // With steps 1, 2, 4 the knee shows at 4, the first step at or after the true one,
        // and nothing after it shows the ceiling is the host's.
        let coarse = [p(4, 5004.0), p(1, 1998.0), p(2, 3995.0)];
        assert_eq!(find_knee(&coarse, T), Some((5004.0, 4, false)));
    }

    #[test]
    fn a_dip_after_the_knee_keeps_the_first_reaching_step() {
        let pts = [
            p(1, 1000.0),
            p(2, 1900.0),
            p(4, 2000.0),
            p(8, 1960.0),
            p(16, 1800.0),
        ];
        let (ceiling, knee, saturated) = find_knee(&pts, T).unwrap();
        assert_eq!((ceiling, knee, saturated), (2000.0, 2, true));
        assert_eq!(find_knee(&[], T), None);
    }

    #[test]
    fn ideal_line_from_caps_or_from_the_first_point() {
        let pts = [p(1, 1998.0), p(2, 3995.0), p(4, 5004.0)];
        let (line, src) = ideal_line(&pts, Some(&[2000.0, 2000.0, 1000.0, 3000.0])).unwrap();
        assert_eq!(src, IdealSource::VolumeCaps);
        assert_eq!(
            line.iter().map(|i| i.iops).collect::<Vec<_>>(),
            vec![2000.0, 4000.0, 8000.0]
        );
        let (line, src) = ideal_line(&pts, None).unwrap();
        assert_eq!(src, IdealSource::LinearFromFirst);
        assert_eq!(line[2].iops, 4.0 * 1998.0);
        // Too few caps for the steps: falls back to the first point.
        assert_eq!(
            ideal_line(&pts, Some(&[2000.0])).unwrap().1,
            IdealSource::LinearFromFirst
        );
    }

    #[test]
    fn steps_held_by_rate_iops_follow_the_capped_line_and_are_not_saturated() {
        // Volumes promising 2,500 IOPS run with --rate-iops 2000: each gives 2,000.
        let pts = vec![p(1, 2000.0), p(2, 3998.0), p(4, 7995.0)];
        let s = Sweep::with_rate_cap(pts.clone(), Some(&[2500.0; 4]), Some(2000.0), T).unwrap();
        assert_eq!(s.ideal_source, IdealSource::RateCapped);
        assert_eq!(s.ideal.last().unwrap().iops, 8000.0);
        assert!(!s.saturated);
        assert_eq!(s.rate_cap_iops, Some(2000.0));
        // Without a spec the cap alone makes the line.
        let s = Sweep::with_rate_cap(pts.clone(), None, Some(2000.0), T).unwrap();
        assert_eq!(s.ideal.last().unwrap().iops, 8000.0);
        // A host limit below the caps' sum still shows.
        let short = vec![p(1, 2000.0), p(2, 3998.0), p(4, 5001.0)];
        let s = Sweep::with_rate_cap(short, None, Some(2000.0), T).unwrap();
        assert!(s.saturated);
        // A cap above every promise holds nothing back.
        let s = Sweep::with_rate_cap(pts, Some(&[1000.0; 4]), Some(2000.0), T).unwrap();
        assert_eq!(
            (s.ideal_source, s.rate_cap_iops),
            (IdealSource::VolumeCaps, None)
        );
    }

    #[test]
    fn default_steps_are_powers_of_two_then_all() {
        assert_eq!(default_steps(1), vec![1]);
        assert_eq!(default_steps(4), vec![1, 2, 4]);
        assert_eq!(default_steps(20), vec![1, 2, 4, 8, 16, 20]);
        assert_eq!(default_steps(0), Vec::<usize>::new());
    }

    #[test]
    fn sweep_json_shape() {
        let s = Sweep::new(vec![p(2, 3995.0), p(1, 1998.0)], None, T).unwrap();
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["points"][0]["volumes"], 1);
        assert_eq!(json["points"][1]["iops"], 3995.0);
        assert!(json["points"][0]["bytes_per_sec"].is_number());
        assert_eq!(json["ceiling_iops"], 3995.0);
        assert_eq!(json["knee_volumes"], 2);
        // Linear growth all the way: the knee is the last step and nothing says the host
        // is saturated.
        assert!(!s.saturated);
        let coarse = Sweep::new(vec![p(1, 1998.0), p(2, 3995.0), p(4, 5004.0)], None, T).unwrap();
        assert_eq!(coarse.knee_volumes, 4);
        assert!(coarse.saturated, "5004 is far below the ideal 7992");
    }
}
