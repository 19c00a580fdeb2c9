//! `--html`: one self-contained page (inline CSS and SVG, no script, no external request)
//! with the suite's verdict, tables and charts, and the `--curve` report when given: the
//! [`SuitePage`] output.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::charts::charts;
use super::matrix::TrackedMetric;
use super::report::{SuiteReport, SuiteResult};
use super::table::cell_figure;
use crate::error::BadInput;
use crate::output::destination::{write_output, Destination, OutputFile, HTML};
use crate::output::export::Export;
use crate::units::human_size;

/// `--html`: the suite's page, with the load-latency curve of `curve` (a `hostmax curve
/// --json` report) when given.
#[derive(Debug, Clone, Default)]
pub struct SuitePage {
    /// `--curve`.
    pub curve: Option<PathBuf>,
}

impl Export<SuiteResult> for SuitePage {
    fn file(&self) -> &'static OutputFile {
        &HTML
    }

    fn write(self: Box<Self>, dest: &Destination, result: &SuiteResult) -> anyhow::Result<()> {
        let mut page = render(&result.report)?;
        if let Some(curve) = &self.curve {
            page = with_curve(page, &load_curve(curve)?)?;
        }
        Ok(write_output(&HTML, dest, page.as_bytes())?)
    }
}

/// Reads a `hostmax curve --json` report for `--curve`.
pub(crate) fn load_curve(path: &Path) -> Result<hostmax_aggregate::CurveReport, BadInput> {
    let text = crate::input::read_text(path).map_err(|e| BadInput(format!("--curve {e}")))?;
    serde_json::from_str(&text).map_err(|e| {
        BadInput(format!(
            "--curve {}: not a 'hostmax curve --json' report ({e}); give the JSON hostmax curve wrote",
            path.display()
        ))
    })
}

/// The page with the curve's table and chart added before its end.
fn with_curve(page: String, curve: &hostmax_aggregate::CurveReport) -> anyhow::Result<String> {
    let svg = crate::output::curve::curve_chart(&curve.curve).to_svg()?;
    let svg = inline_svg(&svg);
    let table = esc(&crate::output::curve::render_curve(
        &curve.curve,
        &curve.runs,
    ));
    let section = format!(
        "<h2>Load-latency curve</h2>\n<pre>{table}</pre>\n<figure class=\"chart\" id=\"chart-curve\">{svg}<figcaption>Latency against IOPS, by queue depth</figcaption></figure>\n"
    );
    Ok(match page.rfind("</body>") {
        Some(at) => format!("{}{section}{}", &page[..at], &page[at..]),
        None => page + &section,
    })
}

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:960px;color:#222;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}
.verdict{font-size:1.1em;padding:.5em .8em;border-radius:4px;display:inline-block}
.ok{background:#e3f4e3;border:1px solid #7bb87b}.no{background:#fbe9e9;border:1px solid #d08080}
.note{color:#555}figure{margin:1.5em 0}figure svg{max-width:100%;height:auto;display:block}
figcaption{color:#555;font-size:.9em}
";

/// An SVG document as an element inside HTML: without the XML declaration plotters writes
/// (not allowed inside HTML).
pub(crate) fn inline_svg(svg: &str) -> &str {
    svg.trim_start()
        .strip_prefix("<?xml")
        .and_then(|rest| rest.split_once("?>").map(|(_, svg)| svg))
        .unwrap_or(svg)
        .trim()
}

/// Escapes text for HTML.
pub(crate) fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Renders the page.
pub fn render(report: &SuiteReport) -> anyhow::Result<String> {
    let ss = &report.steady_state;
    let metric = ss.metric;
    let mut h = String::new();
    let title = format!("hostmax suite {}", report.test);
    write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    )?;
    let pv = &report.provenance;
    let or_unknown = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    writeln!(
        h,
        "<p class=\"note\">Run {} on {} (kernel {}), hostmax {} (commit {}), measured {} to {}; command: <code>{}</code></p>",
        esc(&or_unknown(&pv.run_id)),
        esc(&or_unknown(&report.hostname)),
        esc(&or_unknown(&pv.kernel)),
        esc(&or_unknown(&pv.hostmax_version)),
        esc(&or_unknown(&pv.hostmax_commit)),
        esc(&or_unknown(&pv.started_at)),
        esc(&or_unknown(&pv.ended_at)),
        esc(&pv.command_line.as_deref().unwrap_or_default().join(" "))
    )?;
    let class = if ss.reached { "ok" } else { "no" };
    writeln!(
        h,
        "<p class=\"verdict {class}\">{} on {} ({}), {} complete round(s) of at most {}</p>",
        esc(&ss.status),
        esc(&ss.tracked),
        esc(metric.label()),
        ss.rounds_run,
        ss.max_rounds
    )?;
    if report.interrupted {
        h += "<p class=\"note\">Interrupted: the figures cover the rounds finished so far; continue with <code>hostmax suite --resume</code>.</p>\n";
    }
    for note in &report.notes {
        writeln!(h, "<p class=\"note\">{}</p>", esc(note))?;
    }

    let st = &report.settings;
    h += "<h2>Setup</h2>\n<table>\n";
    let rows = [
        (
            "devices",
            report
                .devices
                .iter()
                .map(|d| format!("{} ({})", d.path.display(), human_size(d.size)))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("tested range per device", human_size(st.range_bytes)),
        ("block sizes", st.block_sizes.join(", ")),
        ("read/write mixes", st.mixes.join(", ")),
        (
            "access",
            if st.random {
                "random".into()
            } else {
                "sequential".to_string()
            },
        ),
        ("queue depth per device", st.iodepth.to_string()),
        (
            "devices run",
            if st.one_device_at_a_time {
                "one at a time".into()
            } else {
                "all at once".to_string()
            },
        ),
        (
            "time per cell",
            format!("{} s measured after {} s ramp", st.cell_secs, st.ramp_secs),
        ),
        ("purge", prep_text(&report.preparation.purge)),
        (
            "preconditioning",
            prep_text(&report.preparation.precondition),
        ),
    ];
    for (k, v) in rows {
        writeln!(
            h,
            "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
            esc(k),
            esc(&v)
        )?;
    }
    h += "</table>\n";

    writeln!(
        h,
        "<h2>{} by read/write mix and block size</h2>\n<p class=\"note\">Averaged over rounds {}-{}.</p>",
        esc(metric.label()),
        ss.window_rounds[0],
        ss.window_rounds[1]
    )?;
    h += &matrix_table(report, metric);
    if metric != TrackedMetric::BytesPerSec {
        h += "<h3>MiB/s</h3>\n";
        h += &matrix_table(report, TrackedMetric::BytesPerSec);
    }

    h += &latency_table(report);

    h += "<h2>Charts</h2>\n";
    for (i, chart) in charts(report)?.iter().enumerate() {
        writeln!(
            h,
            "<figure class=\"chart\" id=\"chart-{i}\">{}<figcaption>{}</figcaption></figure>",
            inline_svg(&chart.svg),
            esc(&chart.title)
        )?;
    }

    h += "<h2>Steady state</h2>\n";
    writeln!(
        h,
        "<p>SNIA PTS rule, from round 5 on: over the last 5 rounds of {}, max &minus; min &le; 20% of their mean, \
         and |least-squares slope| &times; 4 &le; 10% of the mean.</p>",
        esc(&ss.tracked)
    )?;
    h += "<table><tr><th>round</th>";
    for r in 1..=ss.series.len() {
        write!(h, "<th>{r}</th>")?;
    }
    write!(h, "</tr><tr><th class=\"l\">{}</th>", esc(metric.label()))?;
    for &v in &ss.series {
        write!(h, "<td>{:.1}</td>", metric.display_value(v))?;
    }
    h += "</tr></table>\n";
    if ss.fitted {
        writeln!(
            h,
            "<p>Window rounds {}-{}: mean {:.1}, range {:.1} ({}), slope {:.2} per round ({}).</p>",
            ss.window_rounds[0],
            ss.window_rounds[1],
            metric.display_value(ss.mean),
            metric.display_value(
                ss.window.iter().copied().fold(f64::MIN, f64::max)
                    - ss.window.iter().copied().fold(f64::MAX, f64::min)
            ),
            if ss.range_ok {
                "within 20%"
            } else {
                "over 20%"
            },
            metric.display_value(ss.slope),
            if ss.slope_ok {
                "within 10% over the window"
            } else {
                "over 10% over the window"
            }
        )?;
    }

    h += &device_table(report)?;
    h += &spec_table(report)?;
    h += "</body></html>\n";
    Ok(h)
}

fn prep_text(p: &super::report::PrepOutcome) -> String {
    match (&p.record, p.planned) {
        (Some(r), _) => format!("{} ({:.1} s)", r.method.join("; "), r.secs),
        (None, true) => "planned, not done (interrupted)".into(),
        (None, false) => "skipped".into(),
    }
}

fn matrix_table(report: &SuiteReport, metric: TrackedMetric) -> String {
    let mut h = String::from("<table><tr><th class=\"l\">mix \\ block size</th>");
    for s in &report.settings.block_sizes {
        h += &format!("<th>{}</th>", esc(s));
    }
    h += "</tr>\n";
    for mix in &report.settings.mixes {
        h += &format!("<tr><th class=\"l\">{}</th>", esc(mix));
        for s in &report.settings.block_sizes {
            let key = format!("{s}_{}", mix.replace('/', "_"));
            match report.cells.get(&key) {
                Some(c) if !c.rounds.is_empty() => {
                    h += &format!("<td>{:.1}</td>", cell_figure(metric, c));
                }
                _ => h += "<td>&ndash;</td>",
            }
        }
        h += "</tr>\n";
    }
    h + "</table>\n"
}

/// Each cell's latency percentiles, reads and writes on rows of their own (as fio reports them),
/// from the cell's exactly merged histograms.
fn latency_table(report: &SuiteReport) -> String {
    use crate::units::format_latency_ns;
    let mut h = String::from(
        "<h2>Latency by read/write mix and block size</h2>\n<p class=\"note\">p50 / p99 / p99.9 \
         of every device together, over the window's rounds.</p>\n<table class=\"latency\"><tr>\
         <th class=\"l\">mix</th><th class=\"l\">I/O</th>",
    );
    for s in &report.settings.block_sizes {
        h += &format!("<th>{}</th>", esc(s));
    }
    h += "</tr>\n";
    for mix in &report.settings.mixes {
        let read_percent: u8 = mix
            .split('/')
            .next()
            .and_then(|r| r.trim().parse().ok())
            .unwrap_or(100);
        let ops = [("read", read_percent > 0), ("write", read_percent < 100)];
        for (op, _) in ops.iter().filter(|(_, present)| *present) {
            h += &format!(
                "<tr><th class=\"l\">{}</th><th class=\"l\">{op}</th>",
                esc(mix)
            );
            for s in &report.settings.block_sizes {
                let key = format!("{s}_{}", mix.replace('/', "_"));
                let latency = report
                    .cells
                    .get(&key)
                    .filter(|c| !c.rounds.is_empty())
                    .map(|c| {
                        if *op == "read" {
                            &c.read_latency_ns
                        } else {
                            &c.write_latency_ns
                        }
                    });
                match latency {
                    Some(l) if l.p50 > 0 => {
                        h += &format!(
                            "<td>{} / {} / {}</td>",
                            esc(&format_latency_ns(l.p50)),
                            esc(&format_latency_ns(l.p99)),
                            esc(&format_latency_ns(l.p99_9))
                        );
                    }
                    _ => h += "<td>&ndash;</td>",
                }
            }
            h += "</tr>\n";
        }
    }
    h + "</table>\n"
}

fn device_table(report: &SuiteReport) -> anyhow::Result<String> {
    let ss = &report.steady_state;
    let Some(cell) = report.cells.get(&ss.tracked) else {
        return Ok(String::new());
    };
    let mut h = format!(
        "<h2>Per device, {}</h2>\n<table><tr><th class=\"l\">device</th><th>IOPS</th><th>read IOPS</th>\
         <th>write IOPS</th><th>MiB/s</th><th>read p99</th><th>write p99</th><th>errors</th></tr>\n",
        esc(&ss.tracked)
    );
    for d in &cell.devices {
        writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&d.path),
            d.iops,
            d.read_iops,
            d.write_iops,
            d.bytes_per_sec / f64::from(1u32 << 20),
            esc(&crate::units::format_latency_ns(d.read_latency_ns.p99)),
            esc(&crate::units::format_latency_ns(d.write_latency_ns.p99)),
            d.errors
        )?;
    }
    h += "</table>\n";
    Ok(h)
}

fn spec_table(report: &SuiteReport) -> anyhow::Result<String> {
    let Some(spec) = &report.spec else {
        return Ok(String::new());
    };
    let mut h = format!(
        "<h2>Against the promise</h2>\n<p class=\"note\">Worst figure across the cells that judge each \
         promise; tolerance {:.0}%.</p>\n<table><tr><th class=\"l\">volume</th><th class=\"l\">promise</th>\
         <th class=\"l\">figure</th><th>expected</th><th>measured</th><th class=\"l\">verdict</th></tr>\n",
        spec.tolerance * 100.0
    );
    for v in spec.volumes.iter().chain(&spec.host) {
        for c in &v.checks {
            let verdict = match c.pass {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "not judged (no cell shows it)",
            };
            writeln!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"l\">{verdict}</td></tr>",
                esc(&v.path),
                esc(&v.label),
                esc(super::table::figure_name(c.figure)),
                super::table::figure_text(c.figure, c.expected),
                c.measured.map_or("-".into(), |m| super::table::figure_text(c.figure, m))
            )?;
        }
    }
    h += "</table>\n";
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">&</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;"
        );
    }
}
