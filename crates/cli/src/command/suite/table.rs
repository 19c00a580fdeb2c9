//! The suite's text table: one row per mix, one column per block size, as CloudHarmony lays
//! out its bs x mix table, followed by the steady-state verdict.

use hostmax_aggregate::verdict::{Figure, Unit};

use super::matrix::TrackedMetric;
use super::report::{CellReport, SuiteReport};

/// The figure a test's table shows for a cell, in the unit of [`TrackedMetric::label`].
pub fn cell_figure(metric: TrackedMetric, cell: &CellReport) -> f64 {
    match metric {
        TrackedMetric::Iops => cell.iops,
        TrackedMetric::BytesPerSec => metric.display_value(cell.bytes_per_sec),
        TrackedMetric::MeanLatencyNs => metric.display_value(cell.mean_latency_ns),
    }
}

/// A promised or measured figure in its unit: IOPS, MB/s (10^6 bytes, as promises are stated
/// and as `hostmax verify` judges them), or a latency.
pub fn figure_text(figure: Figure, value: f64) -> String {
    match figure.rule().promise().unit {
        Unit::Iops => format!("{value:.0} IOPS"),
        Unit::BytesPerSec => format!("{:.1} MB/s", value / 1e6),
        Unit::Nanoseconds => crate::units::format_latency_ns(value as u64),
        // A unit newer than this table: the number as it is.
        _ => format!("{value}"),
    }
}

/// A figure's name for people (`bytes_per_sec` is the JSON's key, not a word).
pub fn figure_name(figure: Figure) -> &'static str {
    figure.row().title
}

/// Renders the table and the verdict.
pub fn render(report: &SuiteReport) -> String {
    let metric = report.steady_state.metric;
    let sizes = &report.settings.block_sizes;
    let mut out = format!(
        "hostmax suite {}: {} (read/write mix x block size), averaged over rounds {}-{}\n",
        report.test,
        metric.label(),
        report.steady_state.window_rounds[0],
        report.steady_state.window_rounds[1]
    );
    out += &format!("{:>8}", "mix");
    for s in sizes {
        out += &format!(" {s:>10}");
    }
    out.push('\n');
    for mix in &report.settings.mixes {
        out += &format!("{mix:>8}");
        for s in sizes {
            let key = format!("{s}_{}", mix.replace('/', "_"));
            match report.cells.get(&key) {
                Some(c) if !c.rounds.is_empty() => {
                    out += &format!(" {:>10.1}", cell_figure(metric, c));
                }
                _ => out += &format!(" {:>10}", "-"),
            }
        }
        out.push('\n');
    }
    let ss = &report.steady_state;
    out += &format!(
        "{} on {} ({}): {} complete round(s) of at most {}",
        ss.status,
        ss.tracked,
        metric.label(),
        ss.rounds_run,
        ss.max_rounds
    );
    if ss.fitted {
        out += &format!(
            "; window rounds {}-{}, mean {:.1}, range {}, slope {}",
            ss.window_rounds[0],
            ss.window_rounds[1],
            metric.display_value(ss.mean),
            if ss.range_ok {
                "within 20%"
            } else {
                "over 20%"
            },
            if ss.slope_ok {
                "within 10%"
            } else {
                "over 10%"
            }
        );
    }
    out.push('\n');
    if let Some(spec) = &report.spec {
        out += &format!(
            "against the promise (worst cell, tolerance {:.0}%):\n",
            spec.tolerance * 100.0
        );
        for v in spec.volumes.iter().chain(&spec.host) {
            // The name the user gave beside the kernel's, as the run's table shows it.
            let given = report
                .devices
                .iter()
                .find(|d| d.path.to_string_lossy() == v.path)
                .and_then(|d| d.given.as_ref())
                .map(|g| g.to_string_lossy().into_owned());
            let name = crate::output::table::device_name(&v.path, given.as_deref());
            for c in &v.checks {
                out += &format!(
                    "  {:<16} {:<14} expected {:>12}  measured {:>12}  {}\n",
                    name,
                    figure_name(c.figure),
                    figure_text(c.figure, c.expected),
                    c.measured.map_or("-".into(), |m| figure_text(c.figure, m)),
                    match c.pass {
                        Some(true) => "PASS",
                        Some(false) => "FAIL",
                        None => "not judged",
                    }
                );
            }
        }
    }
    if let Some(c) = report.spec.as_ref().and_then(|s| s.consistency.as_ref()) {
        out += &crate::verdict::consistency::render(c);
    }
    if report.interrupted {
        let by = report
            .interrupted_by
            .as_ref()
            .map_or(String::new(), |signal| format!(" by {signal}"));
        out += &format!("interrupted{by}: the figures cover the rounds finished so far\n");
    }
    out
}
