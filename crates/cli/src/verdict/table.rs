//! The verdict table: one row per judged figure (device or host), expected against measured,
//! the ratio and PASS/FAIL, then the volumes' sum, the bottleneck and the overall result.
//!
//! Throughput is in MB/s (10^6 bytes), as providers state their promises; the report table
//! above it shows MiB/s.

use std::fmt::Write as _;

use hostmax_aggregate::verdict::{
    figure_to_reach, keeps, BurstFinding, DeviceFault, Judgement, LatencyTime, Unit,
    VerdictFigures, PROMISE_KINDS,
};
use hostmax_aggregate::{
    report_bursts, Bottleneck, Burst, BurstRule, HostReport, Tolerance, Verdict,
};

use crate::units::format_latency_ns;

/// One row: target, spec, check, expected, measured, ratio, result.
type Row = [String; 7];

/// A rate row. `capped`: what `--rate-iops` allowed when below the promise; reaching it shows
/// CAPPED (the run could show no more), falling short of it FAIL.
#[allow(clippy::too_many_arguments)]
fn rate_row(
    target: &str,
    spec: &str,
    check: &str,
    expected: f64,
    measured: f64,
    capped: Option<f64>,
    t: Tolerance,
    unit_scale: f64,
) -> Row {
    let ok = t.reaches(measured, figure_to_reach(expected, capped));
    let word = match (capped, ok) {
        (Some(_), true) => "CAPPED",
        _ => verdict_word(ok),
    };
    let fmt = |v: f64| {
        if unit_scale == 1.0 {
            format!("{v:.0}")
        } else {
            format!("{:.1}", v / unit_scale)
        }
    };
    [
        target.to_string(),
        spec.to_string(),
        check.to_string(),
        fmt(expected),
        fmt(measured),
        ratio(measured, expected),
        word.to_string(),
    ]
}

/// How a rate of `unit` is shown: IOPS as they are, bytes a second in MB/s (10^6 bytes).
fn unit_scale(unit: Unit) -> f64 {
    match unit {
        Unit::BytesPerSec => 1e6,
        // IOPS and latencies as they are, and a unit newer than this match too.
        _ => 1.0,
    }
}

/// The rows of one device's (or the host's) figures that were both promised and measured,
/// in the table's order.
fn figure_rows(
    target: &str,
    spec: &str,
    figures: &VerdictFigures,
    t: Tolerance,
    time: LatencyTime,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for (row, e, m) in figures.judged() {
        rows.push(match row.kind.promise().unit {
            // A run with an offered rate is judged by response time: the row says so.
            Unit::Nanoseconds => [
                target.to_string(),
                spec.to_string(),
                match time {
                    LatencyTime::Response => format!("{} response <=", row.check),
                    _ => format!("{} <=", row.check),
                },
                format_latency_ns(e as u64),
                format_latency_ns(m as u64),
                ratio(m, e),
                verdict_word(keeps(row.figure, e, m, None, t)).into(),
            ],
            unit => rate_row(
                target,
                spec,
                row.check,
                e,
                m,
                figures.rate_cap[row.kind],
                t,
                unit_scale(unit),
            ),
        });
    }
    rows
}

fn ratio(measured: f64, expected: f64) -> String {
    if expected > 0.0 {
        format!("{:.3}", measured / expected)
    } else {
        "-".to_string()
    }
}

/// A row's result when its figure was measured but not judged.
const NOT_JUDGED: &str = "NOT JUDGED";

/// A row's result when its figure kept its promise on a device that failed anyway
/// ([`fault_row`]): no PASS beside a failed device.
const HELD: &str = "held";

/// `rows` as they stand, or each NOT JUDGED when their verdict judged nothing (a run cut
/// short): never a PASS where the verdict gave none.
fn not_judged_rows(mut rows: Vec<Row>, judgement: Judgement) -> Vec<Row> {
    if !judgement.judged() {
        for r in &mut rows {
            r[6] = NOT_JUDGED.to_string();
        }
    }
    rows
}

fn verdict_word(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "FAIL"
    }
}

/// Renders the verdict for people. The string ends with a newline.
pub fn render_verdict(v: &Verdict) -> String {
    render(v, None)
}

/// Renders the verdict of a run a signal cut short: the rows of what was measured, then
/// instead of PASS or FAIL what was cut short (`cut`) and what never ran (`not_measured`).
pub fn render_unconcluded(v: &Verdict, cut: &str, not_measured: &[String]) -> String {
    let mut line = format!("NOT CONCLUDED: interrupted during {cut}");
    if !not_measured.is_empty() {
        line += &format!("; not measured: {}", not_measured.join("; "));
    }
    line += "; no PASS or FAIL is given: run it again to judge\n";
    render(v, Some(line))
}

/// The verdict's rows, then `unconcluded` or the overall PASS/FAIL line.
fn render(v: &Verdict, unconcluded: Option<String>) -> String {
    let t = v.tolerance;
    let mut rows: Vec<Row> = Vec::new();
    for d in &v.devices {
        let spec = match d.size_bytes {
            Some(size) if !d.spec.is_empty() => {
                let gb = size as f64 / 1e9;
                if gb >= 10.0 {
                    format!("{} @ {gb:.0} GB", d.spec)
                } else {
                    format!("{} @ {gb:.2} GB", d.spec)
                }
            }
            _ => d.spec.clone(),
        };
        let name = crate::output::table::device_name(&d.path, d.given.as_deref());
        // What went wrong under load first: each fails the device whatever its figures, so
        // none of its rows says PASS (a figure that kept its promise says "held").
        let faults = d.faults();
        let mut device_rows: Vec<Row> =
            faults.iter().map(|&f| fault_row(&name, &spec, f)).collect();
        let mut figures = figure_rows(&name, &spec, &d.figures, t, v.latency_time);
        if !faults.is_empty() {
            for r in figures.iter_mut().filter(|r| r[6] == "PASS") {
                r[6] = HELD.to_string();
            }
        }
        device_rows.extend(figures);
        if d.not_judged_reason().is_some() {
            // Its workers were saturated: a shortfall is hostmax's, not the volume's.
            for r in device_rows.iter_mut().filter(|r| r[6] == "FAIL") {
                r[6] = NOT_JUDGED.to_string();
            }
        }
        rows.extend(not_judged_rows(device_rows, d.judgement));
    }
    let h = &v.host;
    let host_rows = figure_rows("host", "", &h.figures, t, v.latency_time);
    rows.extend(not_judged_rows(host_rows, h.judgement));

    let header: Row = [
        "target", "spec", "check", "expected", "measured", "ratio", "result",
    ]
    .map(String::from);
    let mut widths = header.clone().map(|h| h.chars().count());
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &Row| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i < 3 {
                let _ = write!(s, "{c:<w$}");
            } else {
                let _ = write!(s, "{c:>w$}");
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };

    let mut out = format!("verdict (tolerance {t})\n");
    if rows.iter().any(|r| r[2] == "MB/s") {
        // The report tables above count MiB/s (2^20), as sizes on the command line do.
        out += "MB/s here are 10^6 bytes per second, as promises are stated (the tables above show MiB/s, 2^20)\n";
    }
    out += &line(&header);
    for r in &rows {
        out += &line(r);
    }
    if rows.is_empty() {
        out += "  (nothing judged)\n";
    }
    // The first kind whose volumes' sum was measured: the one the bottleneck was read off.
    let volumes = h.figures.volumes.unwrap_or_default();
    let sum = PROMISE_KINDS.iter().find_map(|p| {
        let measured = h.figures.measured[p.kind.figures().next()?]?;
        Some((p, volumes[p.kind]?, measured))
    });
    if let Some((p, sum, m)) = sum {
        let cap = h.figures.rate_cap[p.kind];
        let standing = match (
            v.judgement.judged(),
            v.devices.iter().any(|d| !d.faults().is_empty()),
        ) {
            (false, _) => SumStanding::NotConcluded,
            (true, true) => SumStanding::VolumesFaulted,
            (true, false) => SumStanding::Judged,
        };
        out += &sum_line(
            p.name,
            sum,
            m,
            (h.bottleneck, cap),
            standing,
            unit_scale(p.unit),
        );
    }
    if rows.iter().any(|r| r[6] == "CAPPED") {
        out += "CAPPED: held by this run's own --rate-iops below the promise, so the promise is not judged; run without --rate-iops to judge it\n";
    }
    for b in &v.bursts {
        out += &burst_line(b, v.bursts.iter().any(|o| o.run != b.run));
    }
    for n in &v.not_judged {
        let _ = writeln!(out, "not judged: {}", super::not_judged_line(n));
    }
    for d in &v.devices {
        if let Some(reason) = d.not_judged_reason() {
            let _ = writeln!(
                out,
                "{}: {reason} (every worker driving it had a saturated CPU, so the run cannot tell what it could do: give it more CPUs with --cpus or --numjobs)",
                crate::output::table::device_name(&d.path, d.given.as_deref())
            );
        }
    }
    if let Some(c) = &v.consistency {
        out += &super::consistency::render(c);
    }
    let failures = v.failures();
    if let Some(line) = unconcluded {
        out += &line;
    } else if v.judgement.passed() {
        let _ = writeln!(
            out,
            "PASS: every judged figure is within {t} of its promise"
        );
    } else if !v.judgement.judged() {
        out += "NOT CONCLUDED: no promise could be judged (see above); no PASS or FAIL is given\n";
    } else {
        let _ = writeln!(
            out,
            "FAIL: {} ({} of {} checks)",
            failures.join(", "),
            failures.len(),
            rows.len()
                + v.consistency.as_ref().map_or(0, |c| {
                    c.devices
                        .iter()
                        .map(|d| &d.series)
                        .chain([&c.host])
                        .filter(|s| s.share_held.is_some())
                        .count()
                })
        );
    }
    // Every name in it came from input data: no control character reaches the terminal.
    crate::output::stdio::escape_lines(&out).into_owned()
}

/// A drop after a sustained start, and that the rates were judged after it. `name_run` when
/// the verdict covers runs of which another dropped too.
fn burst_line(b: &BurstFinding, name_run: bool) -> String {
    let run = if name_run {
        format!(" in {}", b.run)
    } else {
        String::new()
    };
    format!(
        "{}; its rates are judged on the {} s baseline from second {} on\n",
        burst_words(b.device.as_deref(), &run, &b.burst),
        b.burst.baseline_secs,
        b.burst.drop_at_secs
    )
}

/// "burst: /dev/sdb held 3000 IOPS for the first 12 s, then dropped to 1000 IOPS (burst
/// credits spent?)".
fn burst_words(device: Option<&str>, run: &str, burst: &Burst) -> String {
    format!(
        "burst: {}{run} held {:.0} IOPS for the first {} s, then dropped to {:.0} IOPS (burst credits spent?)",
        device.unwrap_or("host"),
        burst.burst_iops,
        burst.drop_at_secs,
        burst.baseline_iops,
    )
}

/// The bursts of a run judged against no promise: where the host's or a device's IOPS
/// dropped, and that the figures after the drop are what it keeps up (a verdict judges those).
pub fn unjudged_burst_lines(report: &HostReport) -> String {
    let found = report_bursts(&BurstRule::default(), report);
    let host = found.host.iter().map(|b| (None, b));
    let devices = found.devices.iter().map(|(p, b)| (Some(p.as_str()), b));
    host.chain(devices)
        .map(|(device, b)| {
            format!(
                "{}: {:.0} IOPS from second {} on is its baseline, what a verdict judges\n",
                burst_words(device, "", b),
                b.baseline_iops,
                b.drop_at_secs
            )
        })
        .collect()
}

/// A fault row: the device's `fault` as a failed check ([`hostmax_aggregate::verdict::DeviceFault`]).
fn fault_row(target: &str, spec: &str, fault: DeviceFault) -> Row {
    let measured = match fault {
        DeviceFault::TakenOut { at_secs } => format!("at {at_secs:.1} s"),
        DeviceFault::StoppedAnswering { in_flight } => format!("{in_flight} I/Os stuck"),
        DeviceFault::FailedIos { count } => format!("{count} failed"),
        _ => "yes".to_string(),
    };
    [
        target.to_string(),
        spec.to_string(),
        fault.check().to_string(),
        "-".to_string(),
        measured,
        "-".to_string(),
        "FAIL".to_string(),
    ]
}

/// What the verdict as a whole lets the volumes' sum line say.
#[derive(Clone, Copy, PartialEq)]
enum SumStanding {
    /// Judged, no volume failed under load: the sum line may say the host delivers.
    Judged,
    /// Judged, and some volume failed under load (stopped answering, failed I/O): its total
    /// may reach the sum, but the volumes did not all deliver.
    VolumesFaulted,
    /// Nothing concluded (a run cut short, nothing judgeable): no claim either way.
    NotConcluded,
}

fn sum_line(
    unit: &str,
    sum: f64,
    measured: f64,
    (bottleneck, rate_cap): (Option<Bottleneck>, Option<f64>),
    standing: SumStanding,
    scale: f64,
) -> String {
    let why = match (bottleneck, rate_cap) {
        _ if standing == SumStanding::NotConcluded => {
            "not concluded (see below): no claim is made of the host".to_string()
        }
        (None, Some(_)) => {
            "held by --rate-iops, not by the host or the volumes".to_string()
        }
        (None, None) if standing == SumStanding::VolumesFaulted => {
            "the total reaches it, but not every volume kept working (see the rows above)".to_string()
        }
        (None, None) => "the host delivers what its volumes promise".to_string(),
        (Some(Bottleneck::Host), _) => {
            "bottleneck: host (the short volumes are uniformly below their promises while the total is flat)".to_string()
        }
        (Some(Bottleneck::Volumes), _) => {
            "bottleneck: volumes (the short volumes each stopped at a limit of their own)".to_string()
        }
        (Some(Bottleneck::LoadGenerator), _) => {
            "bottleneck: load generator (CPU): hostmax's workers' CPUs were saturated, so this run cannot tell what the host could do; give it more CPUs (--cpus) or fewer volumes".to_string()
        }
        (Some(other), _) => format!("bottleneck: {}", other.name()),
    };
    let fmt = |v: f64| {
        if scale == 1.0 {
            format!("{v:.0}")
        } else {
            format!("{:.1}", v / scale)
        }
    };
    format!(
        "host total {} {unit} of the {} {unit} the volumes promise together ({}): {why}\n",
        fmt(measured),
        fmt(sum),
        ratio(measured, sum)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostmax_aggregate::verdict::{
        DeviceVerdict, Figure, HostVerdict, NotJudged, Promiser, RuleKind,
    };

    fn device(path: &str, expected: f64, measured: f64, pass: bool) -> DeviceVerdict {
        let mut d = DeviceVerdict::default();
        d.path = path.into();
        d.judgement = Judgement::of(pass);
        d.spec = "oci-balanced".into();
        d.size_bytes = Some(50_000_000_000);
        d.figures.expected[RuleKind::Iops] = Some(expected);
        d.figures.measured[Figure::Iops] = Some(measured);
        d
    }

    #[test]
    fn latency_rows_say_when_response_time_was_judged() {
        let mut d = device("/dev/loop9", 1000.0, 1000.0, true);
        d.figures.expected[RuleKind::Latency] = Some(1_000_000.0);
        d.figures.measured[Figure::ReadP95Ns] = Some(400_000.0);
        let mut v = Verdict::default();
        v.judgement = Judgement::Pass;
        v.tolerance = Tolerance::DEFAULT;
        v.devices = vec![d];
        let service = render_verdict(&v);
        assert!(service.contains("read p95 <="), "{service}");
        v.latency_time = LatencyTime::Response;
        let response = render_verdict(&v);
        assert!(response.contains("read p95 response <="), "{response}");
    }

    #[test]
    fn rows_ratios_bottleneck_and_the_failure_named() {
        let v = {
            let mut x = Verdict::default();
            x.judgement = Judgement::Fail;
            x.tolerance = Tolerance::DEFAULT;
            x.host = {
                let mut h = HostVerdict::default();
                h.judgement = Judgement::Fail;
                h.bottleneck = Some(Bottleneck::Volumes);
                h.figures.expected[RuleKind::Iops] = Some(6000.0);
                h.figures.measured[Figure::Iops] = Some(4001.0);
                h.figures.volumes.as_mut().unwrap()[RuleKind::Iops] = Some(6000.0);
                h
            };
            x.devices = vec![
                device("/dev/loop0", 3000.0, 2999.0, true),
                device("/dev/loop1", 3000.0, 1002.0, false),
                {
                    let mut d = device("/dev/loop2", 3000.0, 3001.0, true);
                    d.given = Some("/dev/disk/by-id/virtio-vol2".into());
                    d
                },
            ];
            x.not_judged = vec![NotJudged::new(Promiser::Volume, RuleKind::Throughput)];
            x.consistency = None;
            x
        };
        let text = render_verdict(&v);
        assert!(text.starts_with("verdict (tolerance 5%)\n"), "{text}");
        let row1 = text.lines().find(|l| l.starts_with("/dev/loop1")).unwrap();
        assert!(
            row1.contains("oci-balanced @ 50 GB")
                && row1.contains("0.334")
                && row1.ends_with("FAIL"),
            "{row1}"
        );
        let row0 = text.lines().find(|l| l.starts_with("/dev/loop0")).unwrap();
        assert!(row0.ends_with("PASS") && row0.contains("1.000"), "{row0}");
        let row2 = text
            .lines()
            .find(|l| l.starts_with("/dev/disk/by-id/virtio-vol2 (loop2)"))
            .unwrap_or_else(|| panic!("the given name beside the kernel's: {text}"));
        assert!(row2.ends_with("PASS"), "{row2}");
        let host = text.lines().find(|l| l.starts_with("host ")).unwrap();
        assert!(host.ends_with("FAIL"), "{host}");
        assert!(text.contains("4001 IOPS of the 6000 IOPS the volumes promise together (0.667): bottleneck: volumes"), "{text}");
        assert!(
            text.contains("not judged: volume MB/s: needs a run of 256 KiB blocks or larger at a queue depth above 1 (--bs 1m)"),
            "{text}"
        );
        assert!(
            text.trim_end()
                .ends_with("FAIL: /dev/loop1 IOPS, host IOPS (2 of 4 checks)"),
            "{text}"
        );
    }

    #[test]
    fn a_volume_on_saturated_workers_shows_not_judged_and_the_load_generator() {
        let mut v = Verdict::default();
        v.tolerance = Tolerance::DEFAULT;
        v.devices = vec![{
            let mut d = device("/dev/zram1", 200_000.0, 100_000.0, true);
            d.judgement = Judgement::NotJudged;
            d.bottleneck = Some(Bottleneck::LoadGenerator);
            d
        }];
        let text = render_verdict(&v);
        let row = text.lines().find(|l| l.starts_with("/dev/zram1")).unwrap();
        assert!(row.ends_with("NOT JUDGED"), "{text}");
        assert!(
            text.contains("/dev/zram1: not judged: load generator saturated"),
            "{text}"
        );
        // Its only promise not judged: the run concludes nothing, and says so.
        assert!(!text.contains("PASS:"), "{text}");
        assert!(
            text.trim_end().ends_with(
                "NOT CONCLUDED: no promise could be judged (see above); no PASS or FAIL is given"
            ),
            "{text}"
        );
    }

    /// A verdict whose host total (3100 IOPS) reaches what its one volume promises (3000).
    fn reaching_the_sum(device_verdict: DeviceVerdict) -> Verdict {
        let mut v = Verdict::default();
        v.tolerance = Tolerance::DEFAULT;
        v.judgement = device_verdict.judgement;
        v.host.figures.measured[Figure::Iops] = Some(3100.0);
        v.host.figures.volumes.as_mut().unwrap()[RuleKind::Iops] = Some(3000.0);
        v.devices = vec![device_verdict];
        v
    }

    #[test]
    fn a_volume_that_stopped_answering_has_a_failed_row_whatever_its_figures() {
        let mut d = device("/dev/loop0", 3000.0, 3100.0, false);
        d.stalled_in_flight = Some(32);
        let text = render_verdict(&reaching_the_sum(d));
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("/dev/loop0"))
            .collect();
        assert_eq!(rows.len(), 2, "{text}");
        assert!(rows[1].ends_with("held"), "{text}");
        assert!(
            rows[0].contains("stopped answering")
                && rows[0].contains("32 I/Os stuck")
                && rows[0].ends_with("FAIL"),
            "{text}"
        );
        assert!(
            text.contains("the total reaches it, but not every volume kept working"),
            "{text}"
        );
        assert!(!text.contains("delivers"), "{text}");
        assert!(
            text.trim_end()
                .ends_with("FAIL: /dev/loop0 stopped answering (1 of 2 checks)"),
            "{text}"
        );
    }

    #[test]
    fn a_verdict_not_concluded_never_says_the_host_delivers() {
        let mut d = device("/dev/loop0", 3000.0, 3100.0, true);
        d.judgement = Judgement::Pass;
        let concluded = render_verdict(&reaching_the_sum(d.clone()));
        assert!(
            concluded.contains("the host delivers what its volumes promise"),
            "{concluded}"
        );
        let mut v = reaching_the_sum(d);
        v.withhold();
        for text in [render_unconcluded(&v, "the run", &[]), render_verdict(&v)] {
            assert!(!text.contains("delivers"), "{text}");
            assert!(
                text.contains("(1.033): not concluded (see below): no claim is made of the host"),
                "{text}"
            );
        }
    }

    #[test]
    fn a_verdict_cut_short_shows_no_pass_on_any_row() {
        let mut v = Verdict::default();
        v.tolerance = Tolerance::DEFAULT;
        v.devices = vec![device("/dev/loop0", 3000.0, 3100.0, true)];
        v.withhold();
        let text = render_unconcluded(&v, "the run", &[]);
        let row = text.lines().find(|l| l.starts_with("/dev/loop0")).unwrap();
        assert!(row.ends_with("NOT JUDGED"), "{text}");
        assert!(!text.contains("PASS:"), "{text}");
        assert!(
            text.contains("NOT CONCLUDED: interrupted during the run"),
            "{text}"
        );
    }
}
