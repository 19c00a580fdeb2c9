//! A [`Snapshot`] as text a scraper reads: OpenMetrics 1.0.0, or Prometheus' text format
//! 0.0.4 for a scraper that asks for `text/plain` ([`Format::negotiate`]).
//!
//! The two differ in a few lines: OpenMetrics names a counter's family without `_total`,
//! states units (`# UNIT`), has `info` and `stateset` types and ends with `# EOF`; Prometheus'
//! text names the sample in `# TYPE` and has only counters, gauges and histograms (an info
//! and a stateset are gauges there, with the same samples).

use std::fmt::Write;

use hostmax_engine::OpKind;

use super::board::{KindTotals, Phase, Snapshot, LATENCY_BUCKETS_NS};

/// Which text format a scrape gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0 text (the default).
    OpenMetrics,
    /// Prometheus' text format 0.0.4.
    Prometheus,
}

impl Format {
    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// The format for a request's `Accept` header: Prometheus' text when `text/plain` is
    /// preferred to OpenMetrics (or OpenMetrics is refused), OpenMetrics otherwise
    /// (no header, `*/*`, or OpenMetrics asked for at least as much).
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::OpenMetrics;
        };
        let (mut open_metrics, mut plain): (Option<f64>, Option<f64>) = (None, None);
        for range in accept.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.strip_prefix("q="))
                .find_map(|q| q.parse::<f64>().ok())
                .unwrap_or(1.0);
            let slot = match media.as_str() {
                "application/openmetrics-text" => &mut open_metrics,
                "text/plain" => &mut plain,
                _ => continue,
            };
            *slot = Some(slot.map_or(q, |had: f64| had.max(q)));
        }
        match (open_metrics, plain) {
            (Some(om), Some(p)) if p > om => Format::Prometheus,
            (Some(om), Some(p)) if om <= 0.0 && p > 0.0 => Format::Prometheus,
            (None, Some(p)) if p > 0.0 => Format::Prometheus,
            _ => Format::OpenMetrics,
        }
    }
}

/// What kind of family, for `# TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
    Info,
    StateSet,
}

/// One metric family being written.
struct Family<'a> {
    out: &'a mut String,
    /// The family's name (OpenMetrics'); samples add suffixes.
    name: &'static str,
}

impl Family<'_> {
    /// One sample: the family's name plus `suffix`, its labels, its value.
    fn sample(&mut self, suffix: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        let _ = write!(self.out, "{}{suffix}", self.name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape_label(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }
}

/// Writes a family's metadata and returns it for its samples.
fn family<'a>(
    out: &'a mut String,
    format: Format,
    name: &'static str,
    kind: Kind,
    unit: Option<&str>,
    help: &str,
) -> Family<'a> {
    match format {
        Format::OpenMetrics => {
            let kind = match kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram => "histogram",
                Kind::Info => "info",
                Kind::StateSet => "stateset",
            };
            let _ = writeln!(out, "# TYPE {name} {kind}");
            if let Some(unit) = unit {
                let _ = writeln!(out, "# UNIT {name} {unit}");
            }
            let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
        }
        Format::Prometheus => {
            // Prometheus' text names the samples: a counter's carry `_total`, an info's
            // `_info`; histograms keep the family's name.
            let (sample, kind) = match kind {
                Kind::Counter => (format!("{name}_total"), "counter"),
                Kind::Info => (format!("{name}_info"), "gauge"),
                Kind::Gauge | Kind::StateSet => (name.to_string(), "gauge"),
                Kind::Histogram => (name.to_string(), "histogram"),
            };
            let _ = writeln!(out, "# HELP {sample} {}", escape_help(help));
            let _ = writeln!(out, "# TYPE {sample} {kind}");
        }
    }
    Family { out, name }
}

/// The snapshot as text in `format`.
pub fn render(snap: &Snapshot, format: Format) -> String {
    let mut out = String::new();
    let o = &mut out;
    let f = format;
    let by_kind: Vec<(&str, OpKind, &KindTotals)> = snap
        .devices
        .iter()
        .flat_map(|(device, totals)| {
            OpKind::ALL
                .into_iter()
                .map(move |op| (device.as_str(), op, &totals.ops[op]))
        })
        .collect();

    let mut ios = family(
        o,
        f,
        "hostmax_ios",
        Kind::Counter,
        None,
        "Successful I/Os completed in measured windows (the reports' counts), by device and kind.",
    );
    for &(device, op, t) in &by_kind {
        ios.sample("_total", &[("device", device), ("kind", op.name())], t.ios);
    }
    let mut bytes = family(
        o,
        f,
        "hostmax_bytes",
        Kind::Counter,
        Some("bytes"),
        "Bytes those I/Os moved, by device and kind (trims move none).",
    );
    for &(device, op, t) in &by_kind {
        bytes.sample(
            "_total",
            &[("device", device), ("kind", op.name())],
            t.bytes,
        );
    }
    let mut errors = family(
        o,
        f,
        "hostmax_errors",
        Kind::Counter,
        None,
        "Failed I/Os (an error or a short transfer), by device.",
    );
    for (device, t) in &snap.devices {
        errors.sample("_total", &[("device", device)], t.errors);
    }
    let mut latency = family(
        o,
        f,
        "hostmax_latency_seconds",
        Kind::Histogram,
        Some("seconds"),
        "Latency of those I/Os that were timed (all but preconditioning writes), submission to completion, by device and kind (fixed buckets).",
    );
    for &(device, op, t) in &by_kind {
        let labels = [("device", device), ("kind", op.name())];
        let mut cumulative = 0;
        for (bound_ns, count) in LATENCY_BUCKETS_NS.iter().zip(&t.buckets) {
            cumulative += count;
            let le = seconds(*bound_ns as f64);
            latency.sample("_bucket", &[labels[0], labels[1], ("le", &le)], cumulative);
        }
        cumulative += t.buckets[LATENCY_BUCKETS_NS.len()];
        latency.sample(
            "_bucket",
            &[labels[0], labels[1], ("le", "+Inf")],
            cumulative,
        );
        // The timed I/Os: all of them but the suite's preconditioning writes, timed by none.
        latency.sample("_count", &labels, cumulative);
        latency.sample("_sum", &labels, seconds(t.latency_sum_ns as f64));
    }
    // At an offered rate only: response time and the backlog, which service time hides.
    if by_kind.iter().any(|(_, _, t)| t.has_response()) {
        let mut response = family(
            o,
            f,
            "hostmax_response_seconds",
            Kind::Histogram,
            Some("seconds"),
            "Response time of those I/Os at an offered rate (--rate-iops), from each I/O's intended start on the rate's schedule to its completion, by device and kind (the latency buckets).",
        );
        for &(device, op, t) in &by_kind {
            let labels = [("device", device), ("kind", op.name())];
            let mut cumulative = 0;
            for (bound_ns, count) in LATENCY_BUCKETS_NS.iter().zip(&t.response_buckets) {
                cumulative += count;
                let le = seconds(*bound_ns as f64);
                response.sample("_bucket", &[labels[0], labels[1], ("le", &le)], cumulative);
            }
            cumulative += t.response_buckets[LATENCY_BUCKETS_NS.len()];
            response.sample(
                "_bucket",
                &[labels[0], labels[1], ("le", "+Inf")],
                cumulative,
            );
            response.sample("_count", &labels, cumulative);
            response.sample("_sum", &labels, seconds(t.response_sum_ns as f64));
        }
        let mut backlog = family(
            o,
            f,
            "hostmax_backlog",
            Kind::Gauge,
            None,
            "I/Os due at the offered rate but not yet issued (waiting for a slot), at the end of the latest measured second, by device.",
        );
        for (device, t) in &snap.devices {
            backlog.sample("", &[("device", device)], t.backlog);
        }
    }
    let mut cpu = family(
        o,
        f,
        "hostmax_worker_cpu_seconds",
        Kind::Counter,
        Some("seconds"),
        "CPU time of the I/O worker threads, by the CPU they are pinned to and mode.",
    );
    for (n, t) in &snap.workers {
        let n = n.to_string();
        for (mode, ns) in [("user", t.user_ns), ("system", t.system_ns)] {
            cpu.sample("_total", &[("cpu", &n), ("mode", mode)], seconds(ns as f64));
        }
    }
    family(
        o,
        f,
        "hostmax_run",
        Kind::Info,
        None,
        "The command and its current (or last) run's name among its runs: step, phase, depth, round and cell.",
    )
    .sample(
        "_info",
        &[
            ("command", snap.command),
            ("step", &snap.step),
            ("version", env!("CARGO_PKG_VERSION")),
        ],
        1,
    );
    let mut phase = family(
        o,
        f,
        "hostmax_phase",
        Kind::StateSet,
        None,
        "Where the command is: waiting (no run going on), ramp, measured, drain, done.",
    );
    for p in Phase::ALL {
        phase.sample(
            "",
            &[("hostmax_phase", p.name())],
            u8::from(p == snap.phase),
        );
    }
    family(
        o,
        f,
        "hostmax_run_planned_seconds",
        Kind::Gauge,
        Some("seconds"),
        "The current (or last) run's measured window as planned.",
    )
    .sample("", &[], snap.planned_secs);
    family(
        o,
        f,
        "hostmax_run_measured_seconds",
        Kind::Gauge,
        Some("seconds"),
        "Seconds of that window measured so far.",
    )
    .sample("", &[], snap.measured_secs);
    let ratio = if snap.planned_secs == 0 {
        0.0
    } else {
        (snap.measured_secs as f64 / snap.planned_secs as f64).min(1.0)
    };
    family(
        o,
        f,
        "hostmax_run_progress_ratio",
        Kind::Gauge,
        Some("ratio"),
        "Share of that window measured so far, 0 to 1.",
    )
    .sample("", &[], ratio);
    family(
        o,
        f,
        "hostmax_runs_completed",
        Kind::Counter,
        None,
        "Runs of the command finished (its steps, phases, depths or cells).",
    )
    .sample("_total", &[], snap.runs_completed);
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// Nanoseconds as seconds, in the shortest form that reads back the same.
fn seconds(ns: f64) -> String {
    format!("{}", ns / 1e9)
}

/// A label value with `\`, `"` and newlines escaped (both formats).
fn escape_label(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('"', r#"\""#)
        .replace('\n', r"\n")
}

/// HELP text with `\` and newlines escaped (both formats).
fn escape_help(text: &str) -> String {
    text.replace('\\', r"\\").replace('\n', r"\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::metrics::board::{DeviceTotals, KindTotals};
    use crate::output::metrics::worker_cpu::CpuTimes;

    fn snapshot() -> Snapshot {
        let mut totals = DeviceTotals {
            errors: 2,
            ..DeviceTotals::default()
        };
        let mut read = KindTotals {
            ios: 5,
            bytes: 5 * 4096,
            latency_sum_ns: 1_500_000,
            ..KindTotals::default()
        };
        read.buckets[1] = 4;
        read.buckets[LATENCY_BUCKETS_NS.len()] = 1;
        totals.ops[OpKind::Read] = read;
        Snapshot {
            command: "sweep",
            step: "step2".into(),
            phase: Phase::Measured,
            planned_secs: 10,
            measured_secs: 4,
            runs_completed: 1,
            devices: vec![("/dev/loop\"3".into(), totals)],
            workers: vec![(
                2,
                CpuTimes {
                    user_ns: 250_000_000,
                    system_ns: 1_000_000_000,
                },
            )],
        }
    }

    #[test]
    fn response_times_and_the_backlog_are_exposed_only_at_an_offered_rate() {
        let text = render(&snapshot(), Format::OpenMetrics);
        assert!(!text.contains("hostmax_response_seconds"), "{text}");
        assert!(!text.contains("hostmax_backlog"), "{text}");
        let mut paced = snapshot();
        let totals = &mut paced.devices[0].1;
        totals.backlog = 786;
        let read = &mut totals.ops[OpKind::Read];
        read.response_buckets[1] = 1;
        read.response_buckets[16] = 4; // 0.5 s .. 1 s: waited out a stall
        read.response_sum_ns = 3_000_000_000;
        let text = render(&paced, Format::OpenMetrics);
        for line in [
            "# TYPE hostmax_response_seconds histogram",
            "# UNIT hostmax_response_seconds seconds",
            "hostmax_response_seconds_bucket{device=\"/dev/loop\\\"3\",kind=\"read\",le=\"0.5\"} 1",
            "hostmax_response_seconds_bucket{device=\"/dev/loop\\\"3\",kind=\"read\",le=\"1\"} 5",
            "hostmax_response_seconds_count{device=\"/dev/loop\\\"3\",kind=\"read\"} 5",
            "hostmax_response_seconds_sum{device=\"/dev/loop\\\"3\",kind=\"read\"} 3",
            "# TYPE hostmax_backlog gauge",
            "hostmax_backlog{device=\"/dev/loop\\\"3\"} 786",
        ] {
            assert!(
                text.contains(&format!("{line}\n")),
                "missing {line:?} in:\n{text}"
            );
        }
    }

    #[test]
    fn open_metrics_names_families_states_units_and_ends_with_eof() {
        let text = render(&snapshot(), Format::OpenMetrics);
        for line in [
            "# TYPE hostmax_ios counter",
            "hostmax_ios_total{device=\"/dev/loop\\\"3\",kind=\"read\"} 5",
            "hostmax_ios_total{device=\"/dev/loop\\\"3\",kind=\"write\"} 0",
            "# UNIT hostmax_bytes bytes",
            "hostmax_bytes_total{device=\"/dev/loop\\\"3\",kind=\"read\"} 20480",
            "hostmax_errors_total{device=\"/dev/loop\\\"3\"} 2",
            "# TYPE hostmax_latency_seconds histogram",
            "# UNIT hostmax_latency_seconds seconds",
            "hostmax_latency_seconds_bucket{device=\"/dev/loop\\\"3\",kind=\"read\",le=\"0.000005\"} 0",
            "hostmax_latency_seconds_bucket{device=\"/dev/loop\\\"3\",kind=\"read\",le=\"0.00001\"} 4",
            "hostmax_latency_seconds_bucket{device=\"/dev/loop\\\"3\",kind=\"read\",le=\"60\"} 4",
            "hostmax_latency_seconds_bucket{device=\"/dev/loop\\\"3\",kind=\"read\",le=\"+Inf\"} 5",
            "hostmax_latency_seconds_count{device=\"/dev/loop\\\"3\",kind=\"read\"} 5",
            "hostmax_latency_seconds_sum{device=\"/dev/loop\\\"3\",kind=\"read\"} 0.0015",
            "hostmax_worker_cpu_seconds_total{cpu=\"2\",mode=\"user\"} 0.25",
            "hostmax_worker_cpu_seconds_total{cpu=\"2\",mode=\"system\"} 1",
            "# TYPE hostmax_run info",
            "# TYPE hostmax_phase stateset",
            "hostmax_phase{hostmax_phase=\"measured\"} 1",
            "hostmax_phase{hostmax_phase=\"ramp\"} 0",
            "hostmax_run_progress_ratio 0.4",
            "hostmax_runs_completed_total 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing from\n{text}");
        }
        assert!(text.contains("hostmax_run_info{command=\"sweep\",step=\"step2\",version=\""));
        assert!(text.ends_with("\n# EOF\n"), "{text}");
        assert_eq!(text.matches("# EOF").count(), 1);
    }

    #[test]
    fn untimed_ios_count_but_stay_out_of_the_histogram() {
        let mut snap = snapshot();
        snap.devices[0].1.ops[OpKind::Write] = KindTotals {
            ios: 7,
            bytes: 7 * 131072,
            ..KindTotals::default()
        };
        let text = render(&snap, Format::OpenMetrics);
        for line in [
            "hostmax_ios_total{device=\"/dev/loop\\\"3\",kind=\"write\"} 7",
            "hostmax_latency_seconds_bucket{device=\"/dev/loop\\\"3\",kind=\"write\",le=\"+Inf\"} 0",
            "hostmax_latency_seconds_count{device=\"/dev/loop\\\"3\",kind=\"write\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing from\n{text}");
        }
    }

    #[test]
    fn prometheus_text_names_samples_in_type_and_has_no_units_or_eof() {
        let text = render(&snapshot(), Format::Prometheus);
        for line in [
            "# TYPE hostmax_ios_total counter",
            "# TYPE hostmax_bytes_total counter",
            "# TYPE hostmax_latency_seconds histogram",
            "# TYPE hostmax_run_info gauge",
            "# TYPE hostmax_phase gauge",
            "hostmax_phase{hostmax_phase=\"measured\"} 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from\n{text}"
            );
        }
        assert!(
            !text.contains("# UNIT") && !text.contains("# EOF"),
            "{text}"
        );
    }

    #[test]
    fn accept_headers_choose_the_format() {
        use Format::*;
        for (accept, want) in [
            (None, OpenMetrics),
            (Some("*/*"), OpenMetrics),
            (
                Some("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
                OpenMetrics,
            ),
            (Some("text/plain;version=0.0.4;q=1,*/*;q=0.1"), Prometheus),
            (Some("text/plain"), Prometheus),
            (Some("application/openmetrics-text;q=0, text/plain"), Prometheus),
            (Some("application/openmetrics-text; q=0.5, text/plain; q=0.9"), Prometheus),
            (Some("text/plain;q=0.5, application/openmetrics-text"), OpenMetrics),
        ] {
            assert_eq!(Format::negotiate(accept), want, "{accept:?}");
        }
    }
}
