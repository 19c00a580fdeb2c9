//! `hostmax curve`: the load-latency curve by queue-depth steps. One run per depth through
//! [`crate::measure::measure`], the curve and its answers from `hostmax_aggregate::curve`, a
//! table, `--json` and an `--svg` chart (IOPS on x, latency on a log y, the promise as a line,
//! the knee marked).

use hostmax_aggregate::consistency::judge_consistency;
use hostmax_aggregate::curve::{CurvePoint, LatencyPromise, LatencyStat};
use hostmax_aggregate::{Curve, CurveReport, HostReport, SCHEMA_VERSION};

use crate::args::verify::CurveArgs;
use crate::error::BadInput;
use crate::measure;
use crate::output::curve::{curve_chart, render_curve};
use crate::output::destination::print_beside_json;
use crate::output::svg::SvgChart;
use crate::plan::plan_run;

/// The depths a curve runs by default: light load to well past where most volumes saturate.
pub const DEFAULT_DEPTHS: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

impl CurveArgs {
    /// The latency promise given, if any.
    pub fn promise(&self) -> Option<LatencyPromise> {
        [
            (LatencyStat::Mean, self.mean_max),
            (LatencyStat::P50, self.p50_max),
            (LatencyStat::P95, self.p95_max),
            (LatencyStat::P99, self.p99_max),
            (LatencyStat::P999, self.p99_9_max),
        ]
        .into_iter()
        .find_map(|(percentile, max)| max.map(|max_ns| LatencyPromise { percentile, max_ns }))
    }
}

/// Runs `hostmax curve`; returns the exit code.
pub fn curve(args: &CurveArgs) -> anyhow::Result<i32> {
    // Declared before any I/O, written once at the end: the JSON, the chart and one
    // `--hdr-log` holding every depth.
    let mut outputs = args.run.outputs::<CurveReport>()?.declare(
        args.svg.as_deref(),
        SvgChart(|r: &CurveReport| curve_chart(&r.curve)),
    )?;
    let base = plan_run(&args.run.request_beside(&outputs))?;
    let json = outputs.json().cloned();
    let depths = args
        .depths
        .as_ref()
        .map_or_else(|| DEFAULT_DEPTHS.to_vec(), |d| d.0.clone());
    if depths.is_empty() {
        return Err(BadInput("--depths: give at least one depth, e.g. 1,4,16".into()).into());
    }
    let specs = args.run.spec.spec_set(&base.targets)?;
    let required = args.run.spec.consistency()?;
    let tolerance = specs
        .as_ref()
        .map(|s| s.tolerance)
        .or(args.run.spec.tolerance)
        .unwrap_or_default()
        .fraction();
    let promise = args.promise();

    let mut reports: Vec<HostReport> = Vec::new();
    let mut signal = 0;
    // The depth a signal called off before it began, if one did.
    let mut called_off = None;
    for (i, &depth) in depths.iter().enumerate() {
        let mut plan = base.clone();
        plan.workload.iodepth = depth;
        eprintln!(
            "hostmax curve: step {}/{}: depth {depth} per volume",
            i + 1,
            depths.len()
        );
        let label = format!("step{}", i + 1);
        let (report, sig) =
            measure::measure_step(&plan, &label, &mut outputs.recorders(), !reports.is_empty())?;
        let Some(report) = report else {
            (signal, called_off) = (sig, Some(depth));
            break;
        };
        reports.push(report);
        if sig != 0 {
            signal = sig;
            break;
        }
    }
    let points = reports
        .iter()
        .map(CurvePoint::from_report)
        .collect::<Result<Vec<_>, _>>()?;
    let Some(mut found) = Curve::new(points, promise, tolerance) else {
        anyhow::bail!("the curve measured nothing (stopped before its first step ended)");
    };
    let interrupted = signal != 0;
    let not_measured = depths[reports.len()..].to_vec();
    if interrupted {
        found.withhold_conclusions();
    }
    let mut table = render_curve(&found, &reports);
    if interrupted {
        table += &crate::output::interrupted_line(
            &format!("depth {}", called_off.unwrap_or(depths[reports.len() - 1])),
            (!not_measured.is_empty()).then(|| format!("depths not measured: {not_measured:?}")),
            "no knee and no saturation point are given",
        );
    }
    print_beside_json(&format!("\n{table}"), json.as_ref());
    // Consistency is judged where the host would be run: at its knee, else at saturation
    // (neither when interrupted).
    let at = found.host.knee.as_ref().or(found.host.saturation.as_ref());
    let consistency = match (&specs, required, at) {
        (Some(set), Some(req), Some(at)) => reports
            .iter()
            .find(|r| r.workload.iodepth == at.iodepth)
            .and_then(|r| judge_consistency(set, &[r], req)),
        _ => None,
    };
    if let (Some(c), Some(at)) = (&consistency, at) {
        let at = at.iodepth;
        print_beside_json(
            &format!("at depth {at}: {}", crate::verdict::consistency::render(c)),
            json.as_ref(),
        );
    }
    let code = crate::exit_code::Outcome {
        signal,
        bad_data: false,
        io_errors: reports.iter().any(|r| r.host.errors > 0),
        stalled: reports.iter().any(|r| r.stalled()),
        verdict_failed: consistency.as_ref().is_some_and(|c| !c.pass),
    }
    .code();
    let root = CurveReport {
        schema_version: SCHEMA_VERSION,
        curve: found,
        runs: reports,
        consistency,
        interrupted,
        depths_not_measured: not_measured,
    };
    outputs.write(&root)?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::verify::{depths_arg, parse_latency};
    use hostmax_aggregate::curve::{CurveLatency, PointFigures, VolumePoint};

    #[test]
    fn latencies_and_depths_parse_and_refuse() {
        assert_eq!(parse_latency("1ms"), Ok(1_000_000));
        assert_eq!(parse_latency("500us"), Ok(500_000));
        assert_eq!(parse_latency("0.8ms"), Ok(800_000));
        assert_eq!(parse_latency("2s"), Ok(2_000_000_000));
        for bad in ["", "1", "ms", "-1ms", "0ms", "1 hour", "1.2.3ms"] {
            assert!(
                parse_latency(bad).unwrap_err().contains("e.g. 1ms"),
                "{bad}"
            );
        }
        assert_eq!(depths_arg("8, 1,2,2").unwrap().0, vec![1, 2, 8]);
        for bad in ["0", "x", "1,,2", "70000"] {
            assert!(depths_arg(bad).unwrap_err().contains("e.g. 1,2,4"), "{bad}");
        }
    }

    #[test]
    fn table_and_chart_show_the_knee_and_the_promise() {
        let point = |d: u32| {
            let f = PointFigures {
                iops: 2000.0,
                bytes_per_sec: 2000.0 * 4096.0,
                latency_ns: CurveLatency {
                    mean: u64::from(d) * 500_000,
                    p50: u64::from(d) * 500_000,
                    p95: u64::from(d) * 500_000,
                    p99: u64::from(d) * 600_000,
                    p99_9: u64::from(d) * 700_000,
                },
            };
            CurvePoint {
                iodepth: d,
                host: f.clone(),
                volumes: vec![VolumePoint {
                    path: "/dev/loop9".into(),
                    figures: f,
                }],
            }
        };
        let promise = LatencyPromise {
            percentile: LatencyStat::P99,
            max_ns: 1_000_000,
        };
        let curve = Curve::new(vec![point(1), point(2), point(4)], Some(promise), 0.05).unwrap();
        let text = render_curve(&curve, &[]);
        assert!(text.contains("promise p99 <= 1"), "{text}");
        assert!(
            text.contains("host: SLO knee 2000 IOPS at depth 1"),
            "{text}"
        );
        assert!(text.contains("/dev/loop9: SLO knee"), "{text}");
        assert_eq!(text.matches("BROKEN").count(), 2, "{text}");
        let svg = curve_chart(&curve).to_svg().unwrap();
        assert!(
            svg.contains("SLO knee") && svg.contains("promise: p99"),
            "{svg}"
        );
    }
}
