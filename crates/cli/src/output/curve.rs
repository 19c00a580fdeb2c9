//! The load-latency curve's table and chart: shown by `hostmax curve` and put in the suite's
//! HTML page beside a curve (`hostmax suite --curve`).

use hostmax_aggregate::curve::by_rate::{RateCurve, RateStep, FOLLOWS_OFFERED};
use hostmax_aggregate::curve::{CurveAnswer, LatencyPromise, LatencyStat};
use hostmax_aggregate::{Curve, HostReport};

use crate::chart::{LegendCorner, LineChart, PointLabels, Series, SeriesStyle, TickFormat};
use crate::units::{format_latency_ns, format_mib_per_sec};

/// What the curve says of the host or a volume; `whole_steps`: whether any step ran to its
/// end (the answers read only those).
fn answer_line(
    name: &str,
    a: &CurveAnswer,
    promise: Option<&LatencyPromise>,
    whole_steps: bool,
) -> String {
    let mut out = format!("{name}: ");
    // An interrupted curve has its conclusions withheld (`Curve::withhold_conclusions`).
    let Some(saturation) = &a.saturation else {
        if !whole_steps {
            return out
                + "no knee, no saturation point: interrupted before any depth ran to its end\n";
        }
        return out
            + &format!(
                "no knee, no saturation point: interrupted (peak {:.0} IOPS over the depths that ran to their end)\n",
                a.peak_iops
            );
    };
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
        saturation.iodepth, saturation.iops, a.peak_iops
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
            // Part of a step: the promise neither held nor broke there.
            _ if p.interrupted => "interrupted",
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
    let whole_steps = curve.points.iter().any(|p| !p.interrupted);
    out += &answer_line("host", &curve.host, curve.promise.as_ref(), whole_steps);
    for v in &curve.volumes {
        out += &answer_line(&v.path, &v.answer, curve.promise.as_ref(), whole_steps);
    }
    out
}

/// Each host point's queue depth ("QD8"), beside it on both host lines (series 0 and 1: the
/// promised percentile and p50); the volumes' points are at the same depths, in order.
/// `curve --rates`: each offered rate with the host's achieved rate and response times (the
/// promise judged on them), then the SLO knee and the saturation point by offered rate.
pub fn render_rate_curve(curve: &RateCurve, reports: &[HostReport]) -> String {
    let mut out = String::new();
    if let Some(first) = reports.first() {
        let w = &first.workload;
        out += &format!(
            "curve by offered rate: {} {}, depth {}, {} volume{}",
            crate::units::format_size(w.block_size.into()),
            w.pattern,
            w.iodepth,
            first.devices.len(),
            if first.devices.len() == 1 { "" } else { "s" }
        );
    }
    if let Some(c) = curve.ceiling_iops {
        out += &format!(", ceiling {c:.0} IOPS per volume uncapped");
    }
    if let Some(p) = &curve.promise {
        out += &format!(
            ", promise response {} <= {}",
            p.percentile.label(),
            format_latency_ns(p.max_ns)
        );
    }
    out += "\n";
    out += &format!(
        "{:>12}  {:>12}  {:>12}  {:>9}  {:>9}  {:>9}  {:>10}  {:>10}  {}\n",
        "offered/vol",
        "offered",
        "achieved",
        "resp p50",
        "resp p99",
        "resp p99.9",
        "serv p99",
        "kept up",
        "promise"
    );
    for s in &curve.steps {
        let held = match &curve.promise {
            _ if s.interrupted => "interrupted",
            Some(p) if p.holds(&s.response_ns) => "held",
            Some(_) => "BROKEN",
            None => "",
        };
        out += &format!(
            "{:>12}  {:>12.0}  {:>12.0}  {:>9}  {:>9}  {:>9}  {:>10}  {:>10}  {held}\n",
            s.offered_iops,
            s.offered_host_iops,
            s.achieved_iops,
            format_latency_ns(s.response_ns.p50),
            format_latency_ns(s.response_ns.p99),
            format_latency_ns(s.response_ns.p99_9),
            format_latency_ns(s.service_ns.p99),
            match (s.interrupted, s.follows_offered()) {
                (true, _) => "-",
                (false, true) => "yes",
                (false, false) => "no",
            },
        );
    }
    if curve.promise.is_some() {
        out += &match curve.knee_offered_iops {
            Some(k) => format!("host: SLO knee at {k} IOPS offered per volume\n"),
            None => {
                "host: SLO knee: none (the promise broke at every offered rate, or no conclusion)\n"
                    .to_string()
            }
        };
    }
    out += &match curve.saturation_offered_iops {
        Some(s) => format!(
            "host: saturated at {s} IOPS offered per volume (achieved below {:.0}% of offered)\n",
            FOLLOWS_OFFERED * 100.0
        ),
        None => "host: kept up with every offered rate\n".to_string(),
    };
    out
}

fn depth_labels(curve: &Curve) -> Vec<PointLabels> {
    let labels: Vec<String> = curve
        .points
        .iter()
        .map(|p| format!("QD{}", p.iodepth))
        .collect();
    [0, 1]
        .map(|series| PointLabels {
            series,
            labels: labels.clone(),
        })
        .to_vec()
}

/// A latency promise as a dashed line across a chart whose x values are `xs` (the x axis is
/// linear, from 0), in milliseconds as the charts' y axes are.
fn promise_line(p: &LatencyPromise, xs: impl Iterator<Item = f64>) -> Series {
    let right = xs.fold(0.0, f64::max).max(1.0);
    let ms = (p.max_ns.max(1) as f64) / 1e6;
    Series {
        name: format!(
            "promise: {} <= {}",
            p.percentile.label(),
            format_latency_ns(p.max_ns)
        ),
        points: vec![(0.0, ms), (right, ms)],
        style: SeriesStyle::Dashed,
    }
}

/// The `--svg` chart of `curve --rates`: response time (intended start to completion, the
/// promise's percentile and p50) and service time against the IOPS offered to the host, each
/// response point labelled with the share of the offered rate the host achieved; the SLO knee
/// and the promise where there is one.
pub fn rate_curve_chart(curve: &RateCurve) -> LineChart {
    let pct = curve.promise.map_or(LatencyStat::P99, |p| p.percentile);
    let ms = |ns: u64| (ns.max(1) as f64) / 1e6;
    let line = |name: String, of: &dyn Fn(&RateStep) -> u64, style| Series {
        name,
        points: curve
            .steps
            .iter()
            .map(|s| (s.offered_host_iops, ms(of(s))))
            .collect(),
        style,
    };
    let mut series = vec![
        line(
            format!("response {}", pct.label()),
            &|s| pct.of(&s.response_ns),
            SeriesStyle::Solid,
        ),
        line(
            "response p50".into(),
            &|s| s.response_ns.p50,
            SeriesStyle::Dashed,
        ),
        line(
            format!("service {}", pct.label()),
            &|s| pct.of(&s.service_ns),
            SeriesStyle::Dashed,
        ),
    ];
    if let Some(knee) = curve
        .knee_offered_iops
        .and_then(|k| curve.steps.iter().find(|s| s.offered_iops == k))
    {
        series.push(Series {
            name: format!("SLO knee: {} IOPS offered per volume", knee.offered_iops),
            points: vec![(knee.offered_host_iops, ms(pct.of(&knee.response_ns)))],
            style: SeriesStyle::Points,
        });
    }
    if let Some(p) = &curve.promise {
        let right = curve.steps.iter().map(|s| s.offered_host_iops);
        series.push(promise_line(p, right));
    }
    let achieved = curve
        .steps
        .iter()
        .map(|s| {
            let share = s.achieved_iops / s.offered_host_iops.max(1.0);
            format!("{:.0}%", share * 100.0)
        })
        .collect();
    LineChart {
        title:
            "Response time against the offered rate, each point labelled with the share achieved"
                .into(),
        x_label: "IOPS offered (host)".into(),
        y_label: "latency (ms)".into(),
        y_log: true,
        x_ticks: TickFormat::Decimal,
        series,
        legend: LegendCorner::Outside,
        point_labels: vec![PointLabels {
            series: 0,
            labels: achieved,
        }],
        size: (920, 500),
        ..LineChart::default()
    }
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
        series.push(promise_line(p, curve.points.iter().map(|p| p.host.iops)));
    }
    LineChart {
        title: "Latency against IOPS, each point at its queue depth (QD)".into(),
        x_label: "IOPS".into(),
        y_label: "latency (ms)".into(),
        y_log: true,
        x_ticks: TickFormat::Decimal,
        series,
        // Off the plot: the volumes' lines run along its bottom and the host's up its right.
        legend: LegendCorner::Outside,
        point_labels: depth_labels(curve),
        // Fits the suite's page (960 px wide) unscaled, legend included.
        size: (920, 500),
        ..LineChart::default()
    }
}

#[cfg(test)]
mod rate_chart_tests {
    use super::*;
    use hostmax_aggregate::curve::CurveLatency;

    #[test]
    fn the_rate_chart_labels_each_step_with_the_share_achieved() {
        let step = |offered: u64, achieved: f64, p99: u64| {
            let response = CurveLatency::default()
                .with_mean(p99 / 2)
                .with_p50(p99 / 4)
                .with_p95(p99 / 2)
                .with_p99(p99)
                .with_p99_9(p99 * 2);
            let service = CurveLatency::default()
                .with_mean(1000)
                .with_p50(1000)
                .with_p95(2000)
                .with_p99(3000)
                .with_p99_9(4000);
            RateStep::new(offered, offered as f64, achieved, response, service)
        };
        let curve = RateCurve::new(
            vec![
                step(600, 600.0, 200_000),
                step(1000, 999.0, 300_000),
                step(3000, 1900.0, 900_000_000),
            ],
            None,
            Some(2000.0),
        );
        let svg = rate_curve_chart(&curve).to_svg().unwrap();
        // plotters writes a text's content on a line of its own.
        for label in ["\n100%\n", "\n63%\n"] {
            assert!(svg.contains(label), "{label:?}: {svg}");
        }
    }
}
