//! The verdict table: one row per judged figure (device or host), expected against measured,
//! the ratio and PASS/FAIL, then the volumes' sum, the bottleneck and the overall result.
//!
//! Throughput is in MB/s (10^6 bytes), as providers state their promises; the report table
//! above it shows MiB/s.

use std::fmt::Write as _;

use hostmax_aggregate::verdict::{figure_to_reach, keeps, Figure};
use hostmax_aggregate::{Bottleneck, Tolerance, Verdict};

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

fn ratio(measured: f64, expected: f64) -> String {
    if expected > 0.0 {
        format!("{:.3}", measured / expected)
    } else {
        "-".to_string()
    }
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
    let t = Tolerance::new(v.tolerance).unwrap_or_default();
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
        if let (Some(e), Some(m)) = (d.expected_iops, d.measured_iops) {
            rows.push(rate_row(
                &name,
                &spec,
                "IOPS",
                e,
                m,
                d.rate_cap_iops,
                t,
                1.0,
            ));
        }
        if let (Some(e), Some(m)) = (d.expected_bytes_per_sec, d.measured_bytes_per_sec) {
            rows.push(rate_row(
                &name,
                &spec,
                "MB/s",
                e,
                m,
                d.rate_cap_bytes_per_sec,
                t,
                1e6,
            ));
        }
        let p95 = [
            (Figure::ReadP95Ns, "read p95 <=", d.measured_read_p95_ns),
            (Figure::WriteP95Ns, "write p95 <=", d.measured_write_p95_ns),
        ];
        for (figure, check, measured) in p95 {
            if let (Some(e), Some(m)) = (d.expected_p95_ns, measured) {
                rows.push([
                    name.clone(),
                    spec.clone(),
                    check.into(),
                    format_latency_ns(e),
                    format_latency_ns(m),
                    ratio(m as f64, e as f64),
                    verdict_word(keeps(figure, e as f64, m as f64, None, t)).into(),
                ]);
            }
        }
    }
    let h = &v.host;
    if let (Some(e), Some(m)) = (h.expected_iops, h.measured_iops) {
        rows.push(rate_row("host", "", "IOPS", e, m, h.rate_cap_iops, t, 1.0));
    }
    if let (Some(e), Some(m)) = (h.expected_bytes_per_sec, h.measured_bytes_per_sec) {
        let cap = h.rate_cap_bytes_per_sec;
        rows.push(rate_row("host", "", "MB/s", e, m, cap, t, 1e6));
    }

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
    if let (Some(sum), Some(m)) = (h.volumes_iops, h.measured_iops) {
        out += &sum_line("IOPS", sum, m, h.bottleneck, h.rate_cap_iops, 1.0);
    } else if let (Some(sum), Some(m)) = (h.volumes_bytes_per_sec, h.measured_bytes_per_sec) {
        let cap = h.rate_cap_bytes_per_sec;
        out += &sum_line("MB/s", sum, m, h.bottleneck, cap, 1e6);
    }
    if rows.iter().any(|r| r[6] == "CAPPED") {
        out += "CAPPED: held by this run's own --rate-iops below the promise, so the promise is not judged; run without --rate-iops to judge it\n";
    }
    for n in &v.not_judged {
        let _ = writeln!(out, "not judged: {}", super::not_judged_line(n));
    }
    if let Some(c) = &v.consistency {
        out += &super::consistency::render(c);
    }
    let failures = v.failures();
    if v.pass {
        let _ = writeln!(
            out,
            "PASS: every judged figure is within {t} of its promise"
        );
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
    out
}

fn sum_line(
    unit: &str,
    sum: f64,
    measured: f64,
    bottleneck: Option<Bottleneck>,
    rate_cap: Option<f64>,
    scale: f64,
) -> String {
    let why = match (bottleneck, rate_cap) {
        (None, Some(_)) => {
            "held by --rate-iops, not by the host or the volumes".to_string()
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
    use hostmax_aggregate::verdict::{DeviceVerdict, HostVerdict, NotJudged, Promiser, RuleKind};

    fn device(path: &str, expected: f64, measured: f64, pass: bool) -> DeviceVerdict {
        let mut d = DeviceVerdict::default();
        d.path = path.into();
        d.pass = pass;
        d.spec = "oci-balanced".into();
        d.size_bytes = Some(50_000_000_000);
        d.expected_iops = Some(expected);
        d.measured_iops = Some(measured);
        d
    }

    #[test]
    fn rows_ratios_bottleneck_and_the_failure_named() {
        let v = {
            let mut x = Verdict::default();
            x.pass = false;
            x.tolerance = 0.05;
            x.host = {
                let mut x = HostVerdict::default();
                x.pass = false;
                x.expected_iops = Some(6000.0);
                x.measured_iops = Some(4001.0);
                x.expected_bytes_per_sec = None;
                x.measured_bytes_per_sec = None;
                x.volumes_iops = Some(6000.0);
                x.volumes_bytes_per_sec = None;
                x.bottleneck = Some(Bottleneck::Volumes);
                x.rate_cap_iops = None;
                x.rate_cap_bytes_per_sec = None;
                x
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
}
