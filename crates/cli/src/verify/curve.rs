//! `hostmax curve`: the load-latency curve by queue-depth steps. One run per depth through
//! [`crate::app::measure`], the curve and its answers from `hostmax_aggregate::curve`, a
//! table, `--json` and an `--svg` chart (IOPS on x, latency on a log y, the promise as a line,
//! the knee marked).

use hostmax_aggregate::consistency::judge_consistency;
use hostmax_aggregate::curve::{CurveAnswer, CurvePoint, LatencyPromise, LatencyStat};
use hostmax_aggregate::{Curve, CurveReport, HostReport, SCHEMA_VERSION};

use crate::app;
use crate::args::verify::CurveArgs;
use crate::chart::{LegendCorner, LineChart, Series, SeriesStyle, TickFormat};
use crate::error::BadInput;
use crate::output::destination::print_beside_json;
use crate::plan::plan_run;
use crate::units::{format_latency_ns, format_mib_per_sec};

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

fn answer_line(name: &str, a: &CurveAnswer, promise: Option<&LatencyPromise>) -> String {
    let mut out = format!("{name}: ");
    match (promise, &a.knee) {
        (Some(p), Some(k)) => {
            out += &format!(
                "SLO knee {:.0} IOPS at depth {} ({} {}{}); ",
                k.iops,
                k.iodepth,
                p.percentile.label(),
                format_latency_ns(p.percentile.of(&k.latency_ns)),
                match a.broken_from {
                    None => ", held at every depth: the knee may lie deeper".to_string(),
                    Some(d) => format!(", broken from depth {d}"),
                }
            )
        }
        (Some(p), None) => {
            out += &format!(
                "no SLO knee: {} exceeded {} even at the lightest load; ",
                p.percentile.label(),
                format_latency_ns(p.max_ns)
            )
        }
        (None, _) => {}
    }
    out += &format!(
        "saturation at depth {} ({:.0} IOPS; peak {:.0})\n",
        a.saturation.iodepth, a.saturation.iops, a.peak_iops
    );
    out
}

/// The curve's table for people.
pub fn render_curve(curve: &Curve, reports: &[HostReport]) -> String {
    let mut out = String::new();
    if let Some(first) = reports.first() {
        let w = &first.workload;
        out += &format!(
            "curve: {} {}, {} volume{}",
            crate::units::format_size(w.block_size.into()),
            w.pattern,
            first.devices.len(),
            if first.devices.len() == 1 { "" } else { "s" }
        );
    }
    if let Some(p) = &curve.promise {
        out += &format!(
            ", promise {} <= {}",
            p.percentile.label(),
            format_latency_ns(p.max_ns)
        );
    }
    out += &format!(
        ", tolerance {}%\n",
        (curve.tolerance * 100.0 * 1e6).round() / 1e6
    );
    out += &format!(
        "{:>6}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {}\n",
        "depth", "IOPS", "MiB/s", "mean", "p50", "p95", "p99", "p99.9", "promise"
    );
    for p in &curve.points {
        let l = &p.host.latency_ns;
        let held = match &curve.promise {
            Some(pr) if pr.holds(l) => "held",
            Some(_) => "BROKEN",
            None => "-",
        };
        out += &format!(
            "{:>6}  {:>10.0}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {}\n",
            p.iodepth,
            p.host.iops,
            format_mib_per_sec(p.host.bytes_per_sec),
            format_latency_ns(l.mean),
            format_latency_ns(l.p50),
            format_latency_ns(l.p95),
            format_latency_ns(l.p99),
            format_latency_ns(l.p99_9),
            held
        );
    }
    out += &answer_line("host", &curve.host, curve.promise.as_ref());
    for v in &curve.volumes {
        out += &answer_line(&v.path, &v.answer, curve.promise.as_ref());
    }
    out
}

/// Latency (ms, log scale) against IOPS: the host's promised percentile (p99 without a
/// promise) and p50, each volume's, the promise as a line and the knee as a point.
pub fn curve_chart(curve: &Curve) -> LineChart {
    let pct = curve.promise.map_or(LatencyStat::P99, |p| p.percentile);
    let ms = |ns: u64| (ns.max(1) as f64) / 1e6;
    let mut series = vec![
        Series {
            name: format!("host {}", pct.label()),
            points: curve
                .points
                .iter()
                .map(|p| (p.host.iops, ms(pct.of(&p.host.latency_ns))))
                .collect(),
            style: SeriesStyle::Solid,
        },
        Series {
            name: "host p50".into(),
            points: curve
                .points
                .iter()
                .map(|p| (p.host.iops, ms(p.host.latency_ns.p50)))
                .collect(),
            style: SeriesStyle::Dashed,
        },
    ];
    // Per-volume lines only while the chart stays readable.
    if curve.volumes.len() <= 8 {
        for v in &curve.volumes {
            let points: Vec<(f64, f64)> = curve
                .points
                .iter()
                .filter_map(|p| p.volumes.iter().find(|x| x.path == v.path))
                .map(|x| (x.figures.iops, ms(pct.of(&x.figures.latency_ns))))
                .collect();
            series.push(Series {
                name: format!("{} {}", v.path, pct.label()),
                points,
                style: SeriesStyle::Dashed,
            });
        }
    }
    if let Some(k) = &curve.host.knee {
        series.push(Series {
            name: format!("SLO knee: {:.0} IOPS at depth {}", k.iops, k.iodepth),
            points: vec![(k.iops, ms(pct.of(&k.latency_ns)))],
            style: SeriesStyle::Points,
        });
    }
    // The promise as a line across the whole IOPS range (the x axis is linear, from 0).
    if let Some(p) = &curve.promise {
        let right = curve
            .points
            .iter()
            .map(|p| p.host.iops)
            .fold(0.0, f64::max)
            .max(1.0);
        series.push(Series {
            name: format!(
                "promise: {} <= {}",
                p.percentile.label(),
                format_latency_ns(p.max_ns)
            ),
            points: vec![(0.0, ms(p.max_ns)), (right, ms(p.max_ns))],
            style: SeriesStyle::Dashed,
        });
    }
    LineChart {
        title: "Latency against IOPS, by queue depth".into(),
        x_label: "IOPS".into(),
        y_label: "latency (ms)".into(),
        y_log: true,
        x_ticks: TickFormat::Decimal,
        series,
        legend: LegendCorner::UpperLeft,
        ..LineChart::default()
    }
}

/// Runs `hostmax curve`; returns the exit code.
pub fn curve(args: &CurveArgs) -> anyhow::Result<i32> {
    let base = plan_run(&args.run.request())?;
    let svg = super::sweep::check_svg(&base, args.svg.as_deref())?;
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
    for (i, &depth) in depths.iter().enumerate() {
        let mut plan = base.clone();
        plan.workload.iodepth = depth;
        plan.json = None;
        eprintln!(
            "hostmax curve: step {}/{}: depth {depth} per volume",
            i + 1,
            depths.len()
        );
        let (report, sig) = app::measure(&plan)?;
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
    let Some(found) = Curve::new(points, promise, tolerance) else {
        anyhow::bail!("the curve measured nothing (stopped before its first step ended)");
    };
    print_beside_json(
        &format!("\n{}", render_curve(&found, &reports)),
        base.json.as_ref(),
    );
    // Consistency is judged where the host would be run: at its knee, else at saturation.
    let at = found
        .host
        .knee
        .as_ref()
        .map_or(found.host.saturation.iodepth, |k| k.iodepth);
    let consistency = match (&specs, required) {
        (Some(set), Some(req)) => reports
            .iter()
            .find(|r| r.workload.iodepth == at)
            .and_then(|r| judge_consistency(set, &[r], req)),
        _ => None,
    };
    if let Some(c) = &consistency {
        print_beside_json(
            &format!("at depth {at}: {}", super::consistency::render(c)),
            base.json.as_ref(),
        );
    }
    if let Some(dest) = &svg {
        let chart = curve_chart(&found).to_svg()?;
        crate::output::destination::write_output(
            &crate::output::destination::SVG,
            dest,
            chart.as_bytes(),
        )?;
    }
    let code = crate::exit_code::Outcome {
        signal,
        bad_data: false,
        io_errors: reports.iter().any(|r| r.host.errors > 0),
        verdict_failed: consistency.as_ref().is_some_and(|c| !c.pass),
    }
    .code();
    if let Some(dest) = &base.json {
        let root = CurveReport {
            schema_version: SCHEMA_VERSION,
            curve: found,
            runs: reports,
            consistency,
        };
        crate::output::json::write_json(&root, dest)?;
    }
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
