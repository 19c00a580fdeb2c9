//! The suite's pictures, drawn with [`crate::chart`]: the test's figure against block size
//! (one line per mix, log scales; y is linear when the values span less than a decade),
//! throughput against block size, and the steady-state convergence plot (the tracked cell's
//! rounds, the window, its average, the ±20% band and the fitted slope line), a convergence plot
//! per block size (each mix round by round), and, when spec
//! options were given, each volume's IOPS and throughput beside what it promises.

use crate::chart::{Band, LegendCorner, LineChart, Series, SeriesStyle, TickFormat};

use super::matrix::TrackedMetric;
use super::report::SuiteReport;
use super::table::cell_figure;

/// One rendered chart: a title for the page and the SVG document.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteChart {
    /// What it shows.
    pub title: String,
    /// The SVG document.
    pub svg: String,
}

/// Every chart the report can draw (a chart without data to draw is left out).
pub fn charts(report: &SuiteReport) -> anyhow::Result<Vec<SuiteChart>> {
    let metric = report.steady_state.metric;
    let mut out = Vec::new();
    let mut push = |chart: Option<LineChart>| -> anyhow::Result<()> {
        if let Some(chart) = chart {
            out.push(SuiteChart {
                title: chart.title.clone(),
                svg: chart.to_svg()?,
            });
        }
        Ok(())
    };
    push(by_block_size(report, metric))?;
    if metric != TrackedMetric::BytesPerSec {
        push(by_block_size(report, TrackedMetric::BytesPerSec))?;
    }
    push(convergence(report))?;
    for chart in convergence_by_block_size(report) {
        push(Some(chart))?;
    }
    push(per_volume(report, "iops"))?;
    push(per_volume(report, "bytes_per_sec"))?;
    Ok(out)
}

/// Each volume's figure in the cells that judge a promise (`iops`: the 4k cells;
/// `bytes_per_sec`: 256k and up), beside what it promises; `None` without such a promise.
fn per_volume(report: &SuiteReport, figure: &str) -> Option<LineChart> {
    let spec = report.spec.as_ref()?;
    let checks: Vec<(usize, &super::spec::FigureCheck)> = spec
        .volumes
        .iter()
        .filter_map(|v| {
            let index = report.device_index(&v.path)?;
            v.checks
                .iter()
                .find(|c| c.figure == figure)
                .map(|c| (index, c))
        })
        .collect();
    let first = checks.first()?;
    let scale = if figure == "iops" {
        1.0
    } else {
        f64::from(1u32 << 20)
    };
    let mut series: Vec<Series> = first
        .1
        .cells
        .iter()
        .filter_map(|key| {
            let cell = report.cells.get(key)?;
            Some(Series {
                name: format!("measured, {}", key.replacen('_', " ", 1).replace('_', "/")),
                points: cell
                    .devices
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let v = if figure == "iops" {
                            d.iops
                        } else {
                            d.bytes_per_sec
                        };
                        ((i + 1) as f64, v / scale)
                    })
                    .collect(),
                style: SeriesStyle::Solid,
            })
        })
        .collect();
    series.push(Series {
        name: "promised".into(),
        points: checks
            .iter()
            .map(|(i, c)| ((i + 1) as f64, c.expected / scale))
            .collect(),
        style: SeriesStyle::Dashed,
    });
    Some(LineChart {
        title: format!(
            "{} per volume against the promise",
            if figure == "iops" {
                "IOPS"
            } else {
                "Throughput"
            }
        ),
        x_label: "volume (in --devices order)".into(),
        y_label: if figure == "iops" { "IOPS" } else { "MiB/s" }.into(),
        x_log: false,
        y_log: false,
        x_ticks: TickFormat::Decimal,
        y_ticks: TickFormat::Decimal,
        series,
        bands: Vec::new(),
        legend: LegendCorner::LowerRight,
        size: (820, 440),
    })
}

/// `metric` against block size, one line per mix; log x (block sizes double) and log y.
fn by_block_size(report: &SuiteReport, metric: TrackedMetric) -> Option<LineChart> {
    let mut series = Vec::new();
    for mix in &report.settings.mixes {
        let points: Vec<(f64, f64)> = report
            .cell_order
            .iter()
            .filter_map(|key| report.cells.get(key))
            .filter(|c| c.mix_label() == *mix && !c.rounds.is_empty())
            .map(|c| (f64::from(c.block_size), cell_figure(metric, c)))
            .filter(|&(_, y)| y > 0.0)
            .collect();
        if !points.is_empty() {
            series.push(Series {
                name: format!("{mix} read/write"),
                points,
                style: SeriesStyle::Solid,
            });
        }
    }
    if series.is_empty() {
        return None;
    }
    // A log y axis only pays when the values span a decade; over a narrower range it would
    // carry no labelled tick at all.
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let y_log = hi >= 10.0 * lo;
    let what = match metric {
        TrackedMetric::Iops => "IOPS",
        TrackedMetric::BytesPerSec => "Throughput",
        TrackedMetric::MeanLatencyNs => "Mean latency",
    };
    Some(LineChart {
        title: format!("{what} by block size ({} test)", report.test),
        x_label: "block size".into(),
        y_label: metric.label().into(),
        x_log: true,
        y_log,
        x_ticks: TickFormat::Bytes,
        y_ticks: TickFormat::Decimal,
        series,
        bands: Vec::new(),
        legend: match metric {
            // IOPS fall as blocks grow; throughput and latency rise.
            TrackedMetric::Iops => LegendCorner::LowerLeft,
            _ => LegendCorner::UpperLeft,
        },
        size: (820, 480),
    })
}

/// Convergence per block size (CloudHarmony draws one per block size): each mix's figure
/// round by round, the steady window as a band of rounds marked by points. Only when more
/// than one round ran.
fn convergence_by_block_size(report: &SuiteReport) -> Vec<LineChart> {
    let metric = report.steady_state.metric;
    let rounds_of = |c: &super::report::CellReport| -> Vec<f64> {
        match metric {
            TrackedMetric::Iops => c.rounds.clone(),
            TrackedMetric::BytesPerSec => c.bytes_per_sec_rounds.clone(),
            TrackedMetric::MeanLatencyNs => c.mean_latency_ns_rounds.clone(),
        }
    };
    let mut sizes: Vec<u32> = report.cells.values().map(|c| c.block_size).collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    sizes.dedup();
    sizes
        .into_iter()
        .filter_map(|bs| {
            let series: Vec<Series> = report
                .cell_order
                .iter()
                .filter_map(|key| report.cells.get(key))
                .filter(|c| c.block_size == bs)
                .filter_map(|c| {
                    let rounds = rounds_of(c);
                    (rounds.len() > 1).then(|| Series {
                        name: format!("{} read/write", c.mix_label()),
                        points: rounds
                            .iter()
                            .enumerate()
                            .map(|(i, &y)| ((i + 1) as f64, metric.display_value(y)))
                            .collect(),
                        style: SeriesStyle::Solid,
                    })
                })
                .collect();
            (!series.is_empty()).then(|| LineChart {
                title: format!(
                    "Convergence at {}: {} per round",
                    super::matrix::size_label(bs),
                    metric.label()
                ),
                x_label: "round".into(),
                y_label: metric.label().into(),
                x_ticks: TickFormat::Count,
                series,
                legend: LegendCorner::LowerRight,
                size: (820, 400),
                ..LineChart::default()
            })
        })
        .collect()
}

/// The tracked cell round by round, the window, its average, the ±20% band and the slope line.
fn convergence(report: &SuiteReport) -> Option<LineChart> {
    let ss = &report.steady_state;
    let metric = ss.metric;
    if ss.series.is_empty() {
        return None;
    }
    let v = |x: f64| metric.display_value(x);
    let mut series = vec![Series {
        name: format!("{} each round", ss.tracked),
        points: ss
            .series
            .iter()
            .enumerate()
            .map(|(i, &y)| ((i + 1) as f64, v(y)))
            .collect(),
        style: SeriesStyle::Solid,
    }];
    let mut bands = Vec::new();
    let [first, last] = ss.window_rounds;
    if !ss.window.is_empty() && first > 0 {
        let (a, b) = (f64::from(first), f64::from(last));
        series.push(Series {
            name: format!("window, rounds {first}-{last}"),
            points: ss
                .window
                .iter()
                .enumerate()
                .map(|(i, &y)| (a + i as f64, v(y)))
                .collect(),
            style: SeriesStyle::Points,
        });
        series.push(Series {
            name: "window average".into(),
            points: vec![(a, v(ss.mean)), (b, v(ss.mean))],
            style: SeriesStyle::Dashed,
        });
        if ss.window.len() >= 2 {
            series.push(Series {
                name: "least-squares slope".into(),
                points: vec![
                    (a, v(ss.slope * a + ss.intercept)),
                    (b, v(ss.slope * b + ss.intercept)),
                ],
                style: SeriesStyle::Dashed,
            });
        }
        if ss.mean > 0.0 {
            bands.push(Band {
                name: "average ±20%".into(),
                lower: v(0.8 * ss.mean),
                upper: v(1.2 * ss.mean),
            });
        }
    }
    Some(LineChart {
        title: format!("Steady state of {}: {}", ss.tracked, ss.status),
        x_label: "round".into(),
        y_label: metric.label().into(),
        x_log: false,
        y_log: false,
        x_ticks: TickFormat::Decimal,
        y_ticks: TickFormat::Decimal,
        series,
        bands,
        legend: LegendCorner::LowerRight,
        size: (820, 440),
    })
}
