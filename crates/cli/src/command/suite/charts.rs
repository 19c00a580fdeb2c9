//! The suite's pictures, drawn with [`crate::chart`]: the test's figure against block size
//! (one line per mix, log scales; y is linear when the values span less than a decade),
//! throughput against block size, and the steady-state convergence plot (the tracked cell's
//! rounds, the window, its average, the ±20% band and the fitted slope line), a convergence plot
//! per block size (each mix round by round), and, when spec
//! options were given, each volume's IOPS and throughput beside what it promises.

use hostmax_aggregate::verdict::{Figure, FigureCheck};

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
    push(per_volume(report, Figure::Iops))?;
    push(per_volume(report, Figure::BytesPerSec))?;
    Ok(out)
}

/// A read/write mix for people: "100% read", "65% read, 35% write", "100% write".
pub fn mix_name(read_percent: u8) -> String {
    match read_percent {
        100 => "100% read".into(),
        0 => "100% write".into(),
        r => format!("{r}% read, {}% write", 100 - r),
    }
}

/// A cell for people: "4 KiB, 100% read".
pub fn cell_name(block_size: u32, read_percent: u8) -> String {
    format!(
        "{}, {}",
        crate::units::human_size(block_size.into()),
        mix_name(read_percent)
    )
}

/// The cell a key such as `4k_100_0` names, for people; the key itself when it is no cell.
fn cell_key_name(report: &SuiteReport, key: &str) -> String {
    report.cells.get(key).map_or_else(
        || key.to_string(),
        |c| cell_name(c.block_size, c.read_percent),
    )
}

/// The read share of a mix label such as "65/35".
fn mix_read_percent(mix: &str) -> Option<u8> {
    mix.split('/').next()?.trim().parse().ok()
}

/// A device's short name for an axis: its last path component (`loop3`, `nvme1n1`).
fn short_name(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

/// Whether values span a decade or more (then a log axis shows them all).
fn spans_decade(series: &[Series]) -> bool {
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    lo > 0.0 && hi >= 10.0 * lo
}

/// Each volume's figure in the cells that judge a promise of it (IOPS: 4k and smaller;
/// throughput: 256k and up), beside what it promises, and the host's total beside the
/// host's promise at the right; `None` without such a promise.
fn per_volume(report: &SuiteReport, figure: Figure) -> Option<LineChart> {
    let spec = report.spec.as_ref()?;
    let checks: Vec<(usize, &FigureCheck)> = spec
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
    let host_check = spec
        .host
        .as_ref()
        .and_then(|h| h.checks.iter().find(|c| c.figure == figure));
    let cells = checks
        .first()
        .map(|c| &c.1.runs)
        .or(host_check.map(|c| &c.runs))?;
    // Promises are in MB/s (10^6 bytes), so the chart is too.
    let scale = if figure == Figure::Iops { 1.0 } else { 1e6 };
    let value = |iops: f64, bytes_per_sec: f64| {
        if figure == Figure::Iops {
            iops
        } else {
            bytes_per_sec / scale
        }
    };
    let host_x = (report.devices.len() + 1) as f64;
    let mut series: Vec<Series> = cells
        .iter()
        .filter_map(|key| {
            let cell = report.cells.get(key)?;
            let mut points: Vec<(f64, f64)> = cell
                .devices
                .iter()
                .enumerate()
                .map(|(i, d)| ((i + 1) as f64, value(d.iops, d.bytes_per_sec)))
                .collect();
            if host_check.is_some() {
                points.push((host_x, value(cell.iops, cell.bytes_per_sec)));
            }
            Some(Series {
                name: format!(
                    "measured, {}",
                    cell_name(cell.block_size, cell.read_percent)
                ),
                points,
                style: SeriesStyle::Solid,
            })
        })
        .collect();
    if let Some((_, first)) = checks.first() {
        let same = checks.iter().all(|(_, c)| c.expected == first.expected);
        let unit = if figure == Figure::Iops {
            "IOPS"
        } else {
            "MB/s"
        };
        series.push(Series {
            // One figure for all is worth reading off the legend (a log axis may not label it).
            name: if same {
                format!("promised per volume: {:.0} {unit}", first.expected / scale)
            } else {
                "promised per volume".into()
            },
            points: checks
                .iter()
                .map(|(i, c)| ((i + 1) as f64, c.expected / scale))
                .collect(),
            style: SeriesStyle::Dashed,
        });
    }
    if let Some(host) = host_check {
        series.push(Series {
            name: "promised for the host".into(),
            points: vec![(host_x, host.expected / scale)],
            style: SeriesStyle::Points,
        });
    }
    let mut x_names: Vec<String> = report
        .devices
        .iter()
        .map(|d| short_name(&d.path.to_string_lossy()))
        .collect();
    if host_check.is_some() {
        x_names.push("host".into());
    }
    let y_log = spans_decade(&series);
    Some(LineChart {
        title: format!(
            "{} per volume against the promise",
            if figure == Figure::Iops {
                "IOPS"
            } else {
                "Throughput"
            }
        ),
        x_label: "volume".into(),
        y_label: if figure == Figure::Iops {
            "IOPS"
        } else {
            "MB/s"
        }
        .into(),
        x_log: false,
        y_log,
        x_ticks: TickFormat::Count,
        y_ticks: TickFormat::Decimal,
        series,
        bands: Vec::new(),
        // Measured lines keep to the top, promises (far lower on a log axis) to the bottom.
        legend: if y_log {
            LegendCorner::MiddleRight
        } else {
            LegendCorner::LowerRight
        },
        size: (820, 440),
        x_names,
        point_labels: Vec::new(),
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
                name: mix_read_percent(mix).map_or_else(|| mix.clone(), mix_name),
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
    let y_log = spans_decade(&series);
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
        // Where the lines are not (IOPS fall as blocks grow, throughput rises, and a slow mix
        // can sit anywhere).
        legend: LegendCorner::Auto,
        size: (820, 480),
        x_names: Vec::new(),
        point_labels: Vec::new(),
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
    let tracked = cell_key_name(report, &ss.tracked);
    let mut series = vec![Series {
        name: format!("{tracked}, each round"),
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
    // Fewer rounds than the window: nothing was fitted, so no window, band or slope to draw.
    if ss.fitted && !ss.window.is_empty() && first > 0 {
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
        title: format!("Steady state of {tracked}: {}", ss.status),
        x_label: "round".into(),
        y_label: metric.label().into(),
        x_log: false,
        y_log: false,
        x_ticks: TickFormat::Count,
        y_ticks: TickFormat::Decimal,
        series,
        bands,
        legend: LegendCorner::LowerRight,
        size: (820, 440),
        x_names: Vec::new(),
        point_labels: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_mixes_are_named_as_people_do() {
        assert_eq!(cell_name(4096, 100), "4 KiB, 100% read");
        assert_eq!(cell_name(1 << 20, 0), "1 MiB, 100% write");
        assert_eq!(mix_name(65), "65% read, 35% write");
        assert_eq!(mix_read_percent("95/5"), Some(95));
        assert_eq!(short_name("/dev/disk/by-id/nvme-X"), "nvme-X");
    }
}
