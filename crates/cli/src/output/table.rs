//! The final table: one row per device and the host row last.

use std::borrow::Cow;
use std::fmt::Write as _;

use hostmax_aggregate::curve::by_rate::FOLLOWS_OFFERED;
use hostmax_aggregate::{DeviceReport, Figures, HostReport};
use hostmax_engine::{OpKind, TrimMethod};

use crate::output::stdio::{escape_lines, escape_text};
use crate::units::{format_latency_ns, format_mib_per_sec};

/// Renders `report` as a plain-text table for people: a heading line with the workload, one
/// row per device (path, CPU, IOPS, and read and write IOPS apart when the run did both, as
/// fio does, MiB/s, p50/p99/p99.9 latency of each kind of I/O the run did, errors), a rule,
/// the host row, and one line per device that had errors.
///
/// Column widths follow the widest cell. The string ends with a newline; the caller prints it.
#[cfg(test)]
fn render_table(report: &HostReport) -> String {
    render_table_fitting(report, None)
}

/// The width tables are fitted to: `COLUMNS` when set, else the terminal's when stdout is one;
/// `None` (no limit) when output goes to a file or a pipe.
pub fn terminal_width() -> Option<usize> {
    width_of(&console::Term::stdout())
}

/// [`terminal_width`] for what goes to stderr (the live view; the table with `--json -`).
pub fn stderr_width() -> Option<usize> {
    width_of(&console::Term::stderr())
}

/// `COLUMNS` when set, else the width of `term`, if it is a terminal.
fn width_of(term: &console::Term) -> Option<usize> {
    if let Some(columns) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
    {
        return Some(columns);
    }
    term.size_checked()
        .map(|(_rows, columns)| usize::from(columns))
}

/// Columns left out, in this order, while a table is wider than the terminal: every kind's
/// p99.9, then every kind's p50, then cpu. The tails and medians stay readable in 80 columns,
/// and `--json` keeps everything.
fn dropped_to_fit() -> Vec<String> {
    let per_kind = |p: &str| OpKind::ALL.map(|op| format!("{op} {p}"));
    let mut names = per_kind("p99.9").to_vec();
    names.extend(per_kind("p50"));
    names.push("cpu".to_string());
    names
}

/// The kinds of I/O a report's table shows: those its workload issues, and any that ran.
pub fn shown_ops(report: &HostReport) -> Vec<OpKind> {
    OpKind::ALL
        .into_iter()
        .filter(|&op| report.workload.pattern.issues(op) || report.host.ops[op].ios > 0)
        .collect()
}

/// [`render_table`] fitted to `width` columns (`None`: no limit): columns are left out in the
/// order p99.9, p50, cpu until the rows fit, and a line says which.
pub fn render_table_fitting(report: &HostReport, width: Option<usize>) -> String {
    render_table_noting(report, width, UnwrittenReads::Advise)
}

/// What the table says of devices whose every sampled read returned zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnwrittenReads {
    /// One line naming them, with how to write them first (a real volume read before it was
    /// written measures metadata, not media).
    Advise,
    /// Nothing: the caller knows its volumes are fresh and says so itself (`hostmax demo`).
    Expected,
}

/// [`render_table_fitting`], saying of never-written blocks what `unwritten` asks.
pub fn render_table_noting(
    report: &HostReport,
    width: Option<usize>,
    unwritten: UnwrittenReads,
) -> String {
    let w = &report.workload;
    let shown = shown_ops(report);
    let mixed = shown.len() > 1;

    let mut header: Vec<String> = ["device", "cpu", "IOPS"].map(String::from).to_vec();
    if mixed {
        header.extend(shown.iter().map(|op| format!("{op} IOPS")));
    }
    header.push("MiB/s".to_string());
    for op in &shown {
        for p in ["p50", "p99", "p99.9"] {
            header.push(format!("{op} {p}"));
        }
    }
    header.push("errors".to_string());

    let row = |name: String, cpu: String, f: &Figures| -> Vec<String> {
        let mut cells = vec![name, cpu, format!("{:.0}", f.iops)];
        if mixed {
            cells.extend(shown.iter().map(|&op| format!("{:.0}", f.ops[op].iops)));
        }
        cells.push(format_mib_per_sec(f.bytes_per_sec));
        for &op in &shown {
            let l = &f.ops[op].latency_ns;
            cells.extend([l.p50, l.p99, l.p99_9].map(format_latency_ns));
        }
        cells.push(f.errors.to_string());
        cells
    };
    let devices: Vec<Vec<String>> = report
        .devices
        .iter()
        .map(|d| row(device_label(d), device_cpus(d), &d.figures))
        .collect();
    let plural = if report.devices.len() == 1 { "" } else { "s" };
    let host_name = match &report.fleet {
        Some(fleet) => format!(
            "fleet ({} host{}, {} device{plural})",
            fleet.hosts.len(),
            if fleet.hosts.len() == 1 { "" } else { "s" },
            report.devices.len()
        ),
        None => format!("host ({} device{plural})", report.devices.len()),
    };
    let mut host = row(host_name, "-".to_string(), &report.host);
    let mut devices = devices;

    let widths_of = |header: &[String], devices: &[Vec<String>], host: &[String]| {
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for cells in devices.iter().map(Vec::as_slice).chain([host]) {
            for (w, c) in widths.iter_mut().zip(cells) {
                *w = (*w).max(c.chars().count());
            }
        }
        widths
    };
    let total = |widths: &[usize]| widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
    let mut widths = widths_of(&header, &devices, &host);
    let mut dropped = Vec::new();
    for name in dropped_to_fit() {
        if width.is_none_or(|limit| total(&widths) <= limit) {
            break;
        }
        if let Some(i) = header.iter().position(|h| *h == name) {
            header.remove(i);
            host.remove(i);
            for cells in &mut devices {
                cells.remove(i);
            }
            dropped.push(name);
            widths = widths_of(&header, &devices, &host);
        }
    }
    // Still too wide: long device names (by-id paths) keep their distinctive end.
    if let Some(limit) = width {
        let excess = total(&widths).saturating_sub(limit);
        if excess > 0 {
            let keep = widths[0].saturating_sub(excess).max(12);
            for cells in devices.iter_mut() {
                cells[0] = keep_tail(&cells[0], keep);
            }
            // The heading line already counts the devices.
            if host[0].chars().count() > keep {
                host[0] = if report.fleet.is_some() {
                    "fleet"
                } else {
                    "host"
                }
                .to_string();
            }
            widths = widths_of(&header, &devices, &host);
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            // `{:>w$}` pads by chars, so "µs" cells line up.
            if i == 0 {
                let _ = write!(s, "{cell:<width$}");
            } else {
                let _ = write!(s, "{cell:>width$}");
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };

    let mut out = String::new();
    let depth = match w.numjobs {
        Some(jobs) => format!(
            "{jobs} jobs x iodepth {} = {} in flight",
            w.iodepth,
            w.in_flight_per_device()
        ),
        None => format!("iodepth {}", w.iodepth),
    };
    let _ = write!(
        out,
        "{} {}, {depth}, {} device{plural}, {:.1} s measured",
        w.pattern,
        format_block_size(w.block_size),
        report.devices.len(),
        report.measured_secs,
    );
    if shown.len() > 1 && w.pattern.reads() {
        let _ = write!(out, ", {}% reads", w.rwmixread);
    }
    match (&report.interrupted_by, report.interrupted) {
        (Some(signal), _) => {
            let _ = write!(out, " (interrupted by {signal})");
        }
        (None, true) => out.push_str(" (interrupted)"),
        (None, false) => {}
    }
    out.push('\n');
    if w.complete_batch > 1 && w.record_latency {
        // Latencies then include the wait for the rest of their batch: said above them.
        let _ = writeln!(
            out,
            "completions reaped {} at a time: a latency includes the wait for its batch",
            w.complete_batch
        );
    }
    if let Some(generator) = &report.load_generator {
        out.push_str(&ring_features_line(generator));
    }
    out.push_str(&line(&header));
    for cells in &devices {
        out.push_str(&line(cells));
    }
    out.push_str(&"-".repeat(total(&widths)));
    out.push('\n');
    out.push_str(&line(&host));
    if !dropped.is_empty() {
        // "read p50" and "write p50" are one thing left out.
        let mut names: Vec<&str> = Vec::new();
        for name in &dropped {
            let short = name.split_once(' ').map_or(name.as_str(), |(_, p)| p);
            if !names.contains(&short) {
                names.push(short);
            }
        }
        let _ = writeln!(
            out,
            "(fitted to {} columns: {} left out; --json has them)",
            width.unwrap_or_default(),
            names.join(", ")
        );
    }

    out.push_str(&response_lines(report, &shown));

    for (names, note) in grouped(
        report
            .devices
            .iter()
            .filter_map(|d| Some((device_label(d), stopped_note(d, report)?))),
    ) {
        let _ = writeln!(out, "{} {note}", join_names(&names));
    }
    for d in &report.devices {
        let Some(n) = d.stalled_in_flight else {
            continue;
        };
        // Its read-back's reads were left in flight, and no stop left them: it stalled after
        // the run, while its written blocks were read back.
        let in_read_back = d
            .verify
            .as_ref()
            .is_some_and(|v| v.reads_left_in_flight > 0 && v.not_read_back.interrupted == 0);
        let limit = hostmax_engine::DRAIN_LIMIT.as_secs();
        let _ = if in_read_back {
            writeln!(
                out,
                "{} stopped answering: {n} I/Os still in flight after {limit} s without a completion while its written blocks were read back (--verify), left to the kernel; its figures are whole",
                device_label(d),
            )
        } else {
            writeln!(
                out,
                "{} stopped answering: {n} I/Os still in flight {limit} s after the end, left to the kernel; its figures are the I/Os that completed",
                device_label(d),
            )
        };
    }
    for d in &report.devices {
        if let Some(why) = d.kernel.as_ref().and_then(|k| k.differs.as_deref()) {
            let _ = writeln!(out, "kernel's count of {}: {why}", device_label(d));
        }
    }
    for d in report.devices.iter().filter(|d| d.error_detail.count > 0) {
        let kinds: Vec<String> = d
            .error_detail
            .by_errno
            .iter()
            .map(|(errno, n)| format!("{n} x {}", describe_errno(*errno)))
            .collect();
        let _ = write!(out, "errors on {}: {}", device_label(d), kinds.join(", "));
        if let Some(first) = d.error_detail.first.first() {
            let _ = write!(out, "; first: {} at offset {}", first.op, first.offset);
        }
        out.push('\n');
    }
    let synchronous: Vec<String> = report
        .devices
        .iter()
        .filter(|d| d.trim_method == Some(TrimMethod::Ioctl))
        .map(device_label)
        .collect();
    if !synchronous.is_empty() {
        let _ = writeln!(
            out,
            "trims of {} were synchronous BLKDISCARD ioctls, one at a time per worker (io_uring discards need Linux 6.12, or HOSTMAX_TRIM_METHOD=ioctl asked for these): their latency is the ioctl's, and the queue depth did not apply",
            join_names(&synchronous)
        );
    }
    out.push_str(&driver_lines(report));
    if let Some(generator) = &report.load_generator {
        out.push_str(&worker_lines(generator, w.complete_batch));
    }
    out.push_str(&verify_lines(report));
    if unwritten == UnwrittenReads::Advise {
        out.push_str(&zero_reads_line(report));
    }
    // Names came from input data (a merged report's hosts and paths): escaped again as a
    // whole, so no control character of any field reaches the terminal.
    let out = escape_lines(&out).into_owned();
    match width {
        Some(width) => wrap_lines(&out, width),
        None => out,
    }
}

/// With an offered rate: the response times (intended start to completion) of each device and
/// the host, beside the service times of the table above, and the largest backlog a second
/// ended with. Its own small table, so the main one keeps its columns and its fit.
fn response_lines(report: &HostReport, shown: &[OpKind]) -> String {
    let Some(rate) = report.workload.rate_iops else {
        return String::new();
    };
    if report.host.ops.values().all(|o| o.response_ns.is_none()) {
        return String::new();
    }
    let mut header = vec!["response".to_string()];
    for op in shown {
        for p in ["p50", "p90", "p99", "p99.9"] {
            header.push(format!("{op} {p}"));
        }
    }
    let row = |name: String, f: &Figures| -> Vec<String> {
        let mut cells = vec![name];
        for &op in shown {
            let r = f.ops[op].response_ns.unwrap_or_default();
            cells.extend([r.p50, r.p90, r.p99, r.p99_9].map(format_latency_ns));
        }
        cells
    };
    let mut rows: Vec<Vec<String>> = report
        .devices
        .iter()
        .map(|d| row(device_label(d), &d.figures))
        .collect();
    rows.push(row("host".to_string(), &report.host));
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for cells in &rows {
        for (w, c) in widths.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut l = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            let _ = match i {
                0 => write!(l, "{c:<w$}"),
                _ => write!(l, "  {c:>w$}"),
            };
        }
        l.push('\n');
        l
    };
    let backlog = report
        .time_series
        .iter()
        .map(|p| p.backlog)
        .max()
        .unwrap_or(0);
    let mut out = format!(
        "response times at {rate} IOPS offered per device ({} arrivals), from each I/O's intended start to its completion (the table above is service time, from submission); largest backlog at a second's end: {backlog} I/Os\n",
        report.workload.arrival.unwrap_or_default()
    );
    out.push_str(&line(&header));
    for cells in &rows {
        out.push_str(&line(cells));
    }
    out.push_str(&behind_offered_lines(report, rate));
    out
}

/// With an offered rate: a line for each device that did not keep up with it (achieved below
/// [`FOLLOWS_OFFERED`] of it), saying what it achieved and how many I/Os were done after the
/// end (drained: in no second and in no rate).
fn behind_offered_lines(report: &HostReport, rate: u64) -> String {
    let mut out = String::new();
    for d in &report.devices {
        if d.stopped_at_secs.is_some() || d.figures.iops >= FOLLOWS_OFFERED * rate as f64 {
            continue;
        }
        let _ = writeln!(
            out,
            "{} did not keep up: {:.0} IOPS achieved of the {rate} offered; {} I/Os done after the end (drained, counted in no second)",
            device_label(d),
            d.figures.iops,
            d.figures.drained.total()
        );
    }
    out
}

/// How tables name a device: its path, or the name the user gave it with the kernel's name
/// after it (`/dev/disk/by-id/nvme-X (nvme0n1)`), both [`escape_text`] escaped.
pub(crate) fn device_name(path: &str, given: Option<&str>) -> String {
    let short = escape_text(path.strip_prefix("/dev/").unwrap_or(path)).into_owned();
    match given {
        Some(given) => format!("{} ({short})", escape_text(given)),
        None => escape_text(path).into_owned(),
    }
}

/// [`device_name`], with `host:` before it in merged reports.
fn device_label(d: &DeviceReport) -> String {
    let name = device_name(&d.path, d.given.as_deref());
    match &d.host {
        Some(host) => format!("{}:{name}", escape_text(host)),
        None => name,
    }
}

/// When a device taken out of the run stopped, and what its rates are over, said after its
/// name; `None` for a device that ran to the end.
fn stopped_note(d: &DeviceReport, report: &HostReport) -> Option<String> {
    let at = d.stopped_at_secs?;
    let window_secs = report.measured_secs;
    // The run ended early, right after this device stopped (--on-error stop-all: the whole
    // run stops moments after the failure): the window is the device's own time.
    let ended_with_it =
        window_secs < report.workload.runtime_secs && window_secs - at < STOPPED_WITH_RUN_SECS;
    Some(if at <= 0.0 {
        "stopped during the ramp, after a failed I/O: no measured I/O".to_string()
    } else if at >= window_secs || ended_with_it {
        format!("stopped at {at:.1} s, after a failed I/O, and the run with it")
    } else {
        format!(
            "stopped at {at:.1} s, after a failed I/O: its rates are over those {at:.1} s, not the {window_secs:.1} s window"
        )
    })
}

/// One line naming every device whose sampled reads all returned zeros (empty when none
/// did): 20 fresh volumes are one note, not 20.
fn zero_reads_line(report: &HostReport) -> String {
    let zero: Vec<&DeviceReport> = report
        .devices
        .iter()
        .filter(|d| d.figures.reads_all_zero())
        .collect();
    if zero.is_empty() {
        return String::new();
    }
    let names: Vec<String> = zero.iter().map(|d| device_label(d)).collect();
    let paths: Vec<Cow<'_, str>> = zero
        .iter()
        .map(|d| escape_text(d.given.as_deref().unwrap_or(&d.path)))
        .collect();
    let its = if zero.len() == 1 { "its" } else { "their" };
    format!(
        "every sampled read of {} returned zeros: {its} blocks were probably never written, and a thin or cloud volume serves those from metadata without touching its media. Write the range first (e.g. hostmax --devices {} --rw write --bs 1m --allow-write, run long enough to pass over the whole --size once), then measure reads\n",
        join_names(&names),
        paths.join(" ")
    )
}

/// `notes` (a device's name and what is said of it) with the devices of the same note
/// together, in the order each note first appears: identical notes become one line.
fn grouped(notes: impl IntoIterator<Item = (String, String)>) -> Vec<(Vec<String>, String)> {
    let mut groups: Vec<(Vec<String>, String)> = Vec::new();
    for (name, note) in notes {
        match groups.iter_mut().find(|(_, n)| *n == note) {
            Some((names, _)) => names.push(name),
            None => groups.push((vec![name], note)),
        }
    }
    groups
}

/// Device names as a sentence lists them: "a", "a and b", "a, b and c".
pub(crate) fn join_names(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// How soon after a device's stop the run must have ended to count as ending with it.
const STOPPED_WITH_RUN_SECS: f64 = 0.05;

/// `text` with every line longer than `width` broken at spaces and continued on lines
/// indented by two (a word longer than a line is cut): table rows already fit, this is for
/// the sentences around them.
pub(crate) fn wrap_lines(text: &str, width: usize) -> String {
    const INDENT: usize = 2;
    let width = width.max(INDENT + 8);
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut current = String::new();
        let mut len = 0;
        for (i, word) in line.split(' ').enumerate() {
            let mut word: Vec<char> = word.chars().collect();
            if i > 0 {
                if len > INDENT && len + 1 + word.len() > width {
                    out.push_str(current.trim_end());
                    out.push('\n');
                    current = " ".repeat(INDENT);
                    len = INDENT;
                } else {
                    current.push(' ');
                    len += 1;
                }
            }
            while len + word.len() > width {
                let rest = word.split_off(width - len);
                current.extend(&word);
                out.push_str(&current);
                out.push('\n');
                current = " ".repeat(INDENT);
                len = INDENT;
                word = rest;
            }
            len += word.len();
            current.extend(&word);
        }
        out.push_str(current.trim_end());
        out.push('\n');
    }
    out
}

/// `--verify`'s outcome: what was checked, and every bad block kept as an example.
fn verify_lines(report: &HostReport) -> String {
    let Some(total) = &report.verify else {
        return String::new();
    };
    let mut s = format!(
        "verify: {} reads checked during the run, {} written blocks read back after it, {} bad ({} corrupted, {} misdirected, {} lost writes)",
        total.checked_during_run,
        total.checked_after_run,
        total.mismatches,
        total.corruption,
        total.misdirected,
        total.lost_write
    );
    if total.unknown > 0 {
        let _ = write!(
            s,
            "; {} blocks not checkable (a failed or overlapping write)",
            total.unknown
        );
    }
    if total.not_read_back.total() > 0 {
        let _ = write!(
            s,
            "; {} written blocks NOT read back: the read-back is incomplete",
            total.not_read_back.total()
        );
    }
    s.push('\n');
    for d in &report.devices {
        let Some(log) = &d.verify else { continue };
        if let Some(line) = not_read_back_line(&d.path, log) {
            s.push_str(&line);
        }
        for m in &log.first {
            let kind = match m.kind {
                hostmax_engine::MismatchKind::Corruption => "corrupted (bad checksum)",
                hostmax_engine::MismatchKind::Misdirected => "misdirected (holds another block)",
                hostmax_engine::MismatchKind::LostWrite => "lost write (holds older data)",
                _ => "failed verification",
            };
            let found = if m.found_this_run {
                format!("offset {} generation tag {}", m.found_offset, m.found_tag)
            } else if m.found_tag != 0 {
                format!("offset {} from another run", m.found_offset)
            } else {
                "no valid header".to_string()
            };
            let _ =
                writeln!(
                s,
                "BAD DATA on {} at offset {}: {kind}; expected generation tag {}, found {found}{}",
                escape_text(&d.path),
                m.offset,
                m.expected_tag,
                if m.during_run { " (during the run)" } else { "" }
            );
        }
        if log.mismatches > log.first.len() as u64 {
            let _ = writeln!(
                s,
                "... and {} more bad blocks on {}",
                log.mismatches - log.first.len() as u64,
                escape_text(&d.path)
            );
        }
    }
    s
}

/// "/dev/loop3: 1024 written blocks not read back after the run (...)", for a device whose
/// read-back left blocks unchecked; `None` when every written block was read back.
fn not_read_back_line(path: &str, log: &hostmax_engine::VerifyLog) -> Option<String> {
    let missed = &log.not_read_back;
    if missed.total() == 0 {
        return None;
    }
    let mut why = Vec::new();
    if missed.stalled > 0 {
        why.push(format!(
            "{} as the device stopped answering",
            missed.stalled
        ));
    }
    if missed.interrupted > 0 {
        why.push(format!(
            "{} as a signal ended the read-back",
            missed.interrupted
        ));
    }
    let mut line = format!(
        "{}: {} written blocks not read back after the run ({}): their data is unchecked",
        escape_text(path),
        missed.total(),
        why.join(", ")
    );
    if log.reads_left_in_flight > 0 {
        let _ = write!(
            line,
            "; {} reads of the read-back left in flight to the kernel",
            log.reads_left_in_flight
        );
    }
    line.push('\n');
    Some(line)
}

/// `io_uring: fixed buffers, registered files, ...`, and what some worker fell back from.
fn ring_features_line(generator: &hostmax_aggregate::LoadGenerator) -> String {
    let (got, fell_back) = generator.ring_features();
    let mut s = format!(
        "io_uring: {}",
        if got.is_empty() {
            "no optional features".to_string()
        } else {
            got.join(", ")
        }
    );
    if !fell_back.is_empty() {
        let _ = write!(
            s,
            "; FELL BACK without {} (fixed buffers need RLIMIT_MEMLOCK room, registered files and defer taskrun a newer kernel)",
            fell_back.join(", ")
        );
    }
    s.push('\n');
    s
}

/// The CPUs that drove a device, as the table's cpu cell: "3", or "0,1" for several workers
/// ("0,1,0" when --numjobs put two of them on one CPU).
fn device_cpus(d: &hostmax_aggregate::DeviceReport) -> String {
    if d.drivers.is_empty() {
        return d.cpu.to_string();
    }
    let cpus: Vec<String> = d.drivers.iter().map(|x| x.cpu.to_string()).collect();
    cpus.join(",")
}

/// How each device driven by more than one worker was driven: per worker its CPU, its I/Os
/// in flight and its share of the device's I/Os; where a NUMA node chose the CPUs, that;
/// where every worker of a device was saturated, that the load generator limited it.
fn driver_lines(report: &HostReport) -> String {
    let mut s = String::new();
    for d in &report.devices {
        if d.drivers.len() > 1 {
            let parts: Vec<String> = d
                .drivers
                .iter()
                .map(|x| format!("CPU {} depth {} {:.0}%", x.cpu, x.iodepth, 100.0 * x.share))
                .collect();
            let _ = write!(
                s,
                "{} driven by {} workers: {}",
                device_label(d),
                d.drivers.len(),
                parts.join(", ")
            );
            if let Some(node) = d.numa_node {
                let _ = write!(s, " (CPUs of its NUMA node {node})");
            }
            s.push('\n');
        } else if let Some(node) = d.numa_node {
            let _ = writeln!(
                s,
                "{} driven from CPU {} of its NUMA node {node}",
                device_label(d),
                device_cpus(d)
            );
        }
        if d.load_generator_saturated {
            let _ = writeln!(
                s,
                "every worker driving {} had a saturated CPU: its figures may be hostmax's limit rather than the device's (give it more CPUs with --cpus, or --numjobs{})",
                device_label(d),
                batch_hint(report.workload.complete_batch)
            );
        }
    }
    let cpus: std::collections::BTreeSet<usize> = report
        .devices
        .iter()
        .flat_map(|d| d.drivers.iter().map(|x| x.cpu))
        .collect();
    let jobs = report
        .devices
        .iter()
        .map(|d| d.drivers.len())
        .sum::<usize>();
    if report.workload.numjobs.is_some() && jobs > cpus.len() {
        let _ = writeln!(
            s,
            "--numjobs {} asked for {jobs} workers on {} CPUs: some CPUs drive more than one",
            report.workload.numjobs.unwrap_or(1),
            cpus.len()
        );
    }
    s
}

/// A small table of the workers, one row each (about 70 columns, so it fits 80): the CPU it
/// ran on, its devices, how busy the thread and its CPU were, its CPU time and that time per
/// I/O; "saturated" marks a worker whose CPU had no time to spare. Then the load generator's
/// line: its CPU time per I/O in all.
/// What else frees a saturated worker's CPU: waking it once a batch of completions, where
/// it still wakes for every one.
fn batch_hint(complete_batch: u32) -> &'static str {
    if complete_batch == 1 {
        ", or let each worker wake once per batch of completions (--complete-batch 8)"
    } else {
        ""
    }
}

fn worker_lines(generator: &hostmax_aggregate::LoadGenerator, complete_batch: u32) -> String {
    let ns = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |ns| format!("{ns:.0} ns"));
    let header = [
        "worker CPU",
        "devices",
        "thread busy",
        "user s",
        "system s",
        "CPU busy",
        "CPU per I/O",
    ];
    let rows: Vec<[String; 7]> = generator
        .workers
        .iter()
        .map(|w| {
            [
                w.cpu.to_string(),
                w.devices.len().to_string(),
                format!("{:.0}%", 100.0 * w.busy_share),
                format!("{:.2}", w.user_secs),
                format!("{:.2}", w.system_secs),
                w.cpu_busy_share
                    .map_or_else(|| "-".to_string(), |c| format!("{:.0}%", 100.0 * c)),
                ns(w.cpu_ns_per_io),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut s = String::new();
    let mut line = |cells: &[&str], note: &str| {
        let cells: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, &w)| format!("{c:>w$}"))
            .collect();
        let _ = writeln!(s, "{}{note}", cells.join("  "));
    };
    if !rows.is_empty() {
        line(&header, "");
    }
    for (row, w) in rows.iter().zip(&generator.workers) {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        line(&cells, if w.saturated { "  saturated" } else { "" });
    }
    if let Some(all) = generator.cpu_ns_per_io {
        let _ = writeln!(
            s,
            "load generator: {} of CPU per I/O (its workers' user + system time over every I/O they completed)",
            ns(Some(all))
        );
    }
    if generator.saturated {
        let _ = writeln!(
            s,
            "the load generator's CPUs were saturated: these figures may be hostmax's limit rather than the storage's; give it more CPUs (--cpus) or fewer volumes per host{}",
            batch_hint(complete_batch)
        );
    }
    s
}

/// `text` cut to its last `keep` characters, the cut marked with `…`.
fn keep_tail(text: &str, keep: usize) -> String {
    let count = text.chars().count();
    if count <= keep {
        return text.to_string();
    }
    let tail: String = text.chars().skip(count - keep + 1).collect();
    format!("…{tail}")
}

/// `4096` -> `4 KiB`, `1048576` -> `1 MiB`, `1536` -> `1536 B`.
pub(crate) fn format_block_size(bytes: u32) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// The system's text for an errno; 0 is how the engine logs a short transfer.
fn describe_errno(errno: i32) -> String {
    if errno == 0 {
        "short transfer".to_string()
    } else {
        std::io::Error::from_raw_os_error(errno).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::tests_support::sample_report;

    #[test]
    fn a_run_at_an_offered_rate_shows_response_times_beside_the_table() {
        let mut report = sample_report();
        assert!(!render_table(&report).contains("response"));
        report.workload.rate_iops = Some(1000);
        report.workload.arrival = Some(hostmax_engine::Arrival::Poisson);
        let mut waited = hostmax_aggregate::LatencySummary::default();
        (waited.p50, waited.p90, waited.p99, waited.p99_9) =
            (150_000, 212_000_000, 930_000_000, 990_000_000);
        for f in report
            .devices
            .iter_mut()
            .map(|d| &mut d.figures)
            .chain([&mut report.host])
        {
            for (_, o) in f.ops.iter_mut() {
                o.response_ns = Some(waited);
            }
        }
        report.time_series[1].backlog = 786;
        report.devices[1].figures.drained[OpKind::Read] = 1234;
        let text = render_table(&report);
        let at = text.find("response times at 1000 IOPS offered per device (poisson arrivals)");
        let block = &text[at.unwrap_or_else(|| panic!("{text}"))..];
        assert!(
            block.contains("largest backlog at a second's end: 786 I/Os"),
            "{block}"
        );
        let lines: Vec<&str> = block.lines().collect();
        for col in [
            "read p50",
            "read p90",
            "read p99",
            "read p99.9",
            "write p99",
        ] {
            assert!(lines[1].contains(col), "{}", lines[1]);
        }
        assert!(lines[2].starts_with("/dev/loop0 "), "{}", lines[2]);
        assert!(
            lines[4].starts_with("host ") && lines[4].contains("212"),
            "{}",
            lines[4]
        );
        // /dev/loop11 did 500 IOPS of the 1000 offered; /dev/loop0 2000.
        assert_eq!(
            lines[5],
            "/dev/loop11 did not keep up: 500 IOPS achieved of the 1000 offered; 1234 I/Os done after the end (drained, counted in no second)"
        );
        assert!(!block.contains("/dev/loop0 did not keep up"), "{block}");
    }

    #[test]
    fn completions_reaped_in_batches_are_said_above_the_latencies() {
        let mut report = sample_report();
        assert!(!render_table(&report).contains("reaped"));
        report.workload.complete_batch = 8;
        let text = render_table(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            "completions reaped 8 at a time: a latency includes the wait for its batch"
        );
        report.workload.record_latency = false;
        assert!(!render_table(&report).contains("reaped"));
    }

    #[test]
    fn rows_for_each_device_and_host_last() {
        let report = sample_report();
        let text = render_table(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("randrw 4 KiB, iodepth 32, 2 devices, 2.0 s measured"));
        assert!(lines[0].contains("70% reads"), "{}", lines[0]);
        let header = lines[1];
        for col in [
            "device",
            "IOPS",
            "MiB/s",
            "read p50",
            "read p99.9",
            "write p99",
            "errors",
        ] {
            assert!(header.contains(col), "header lacks {col}: {header}");
        }
        assert!(lines[2].starts_with("/dev/loop0 "), "{}", lines[2]);
        assert!(lines[3].starts_with("/dev/loop11 "), "{}", lines[3]);
        assert!(lines[4].chars().all(|c| c == '-'));
        assert!(lines[5].starts_with("host (2 devices)"), "{}", lines[5]);
        // Device 0: 3000 reads + 1000 writes in 2 s; device 1: 1000 reads.
        let cells0: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(cells0[1], "0");
        assert_eq!(cells0[2], "2000");
        // Reads and writes apart for a mixed run, as fio shows them.
        assert!(header.contains("read IOPS") && header.contains("write IOPS"));
        assert_eq!((cells0[3], cells0[4]), ("1500", "500"));
        assert_eq!(cells0[5], format!("{:.1}", 2000.0 * 4096.0 / 1048576.0));
        let host: Vec<&str> = lines[5].split_whitespace().collect();
        assert_eq!(host[4], "2500");
        assert_eq!(host.last(), Some(&"2"));
        // Latencies carry units.
        assert!(
            lines[2].contains(" µs") || lines[2].contains(" ms"),
            "{}",
            lines[2]
        );
        // Error detail for the device that had errors only.
        assert_eq!(lines.len(), 7, "{text}");
        assert!(
            lines[6].starts_with("errors on /dev/loop11: 2 x "),
            "{}",
            lines[6]
        );
        assert!(
            lines[6].contains("first: write at offset 8192"),
            "{}",
            lines[6]
        );
    }

    #[test]
    fn workers_ring_features_and_zero_reads_are_said() {
        let mut report = sample_report();
        let worker = |cpu, fixed_buffers, saturated| {
            let mut x = hostmax_aggregate::WorkerReport::default();
            x.cpu = cpu;
            x.devices = vec![cpu];
            x.ring = {
                let mut ring = hostmax_engine::RingFeatures::default();
                ring.fixed_buffers = fixed_buffers;
                ring.fixed_files = true;
                ring.defer_taskrun = true;
                ring.no_sqarray = true;
                ring
            };
            x.user_secs = 0.5;
            x.system_secs = 1.25;
            x.busy_share = 0.875;
            x.cpu_busy_share = Some(if saturated { 0.97 } else { 0.5 });
            x.saturated = saturated;
            x.ios = 1_000_000;
            x.cpu_ns_per_io = Some(1750.0);
            x
        };
        report.load_generator = Some({
            let mut x = hostmax_aggregate::LoadGenerator::default();
            x.saturated = true;
            x.workers = vec![worker(0, true, false), worker(1, false, true)];
            x.cpu_ns_per_io = Some(1750.0);
            x
        });
        report.devices[1].figures.read_samples.sampled = 10;
        report.devices[1].figures.read_samples.zero = 10;
        let text = render_table(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            "io_uring: registered files, single issuer + defer taskrun, no SQ array; FELL BACK without fixed buffers (fixed buffers need RLIMIT_MEMLOCK room, registered files and defer taskrun a newer kernel)"
        );
        assert!(lines[2].starts_with("device"), "{}", lines[2]);
        assert!(
            text.contains(
                "worker CPU  devices  thread busy  user s  system s  CPU busy  CPU per I/O\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "         1        1          88%    0.50      1.25       97%      1750 ns  saturated\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("load generator: 1750 ns of CPU per I/O (its workers'"),
            "{text}"
        );
        assert!(text.contains("CPUs were saturated"), "{text}");
        assert!(
            text.contains("every sampled read of /dev/loop11 returned zeros"),
            "{text}"
        );
        assert!(!text.contains("read of /dev/loop0 returned"), "{text}");
    }

    #[test]
    fn columns_line_up() {
        let text = render_table(&sample_report());
        let lines: Vec<&str> = text.lines().skip(1).take(5).collect();
        // Every right-aligned "errors" cell ends where the header does.
        let end = lines[0].chars().count();
        for l in [lines[1], lines[2], lines[4]] {
            assert_eq!(l.chars().count(), end, "misaligned: {l:?}");
        }
    }

    #[test]
    fn a_mixed_run_fits_80_columns_and_says_what_it_left_out() {
        let mut report = sample_report();
        for d in &mut report.devices {
            d.path = format!("/dev/disk/by-id/nvme-Example{}", d.path);
        }
        let full = render_table(&report);
        assert!(full.lines().any(|l| l.chars().count() > 80), "{full}");
        let fitted = render_table_fitting(&report, Some(80));
        assert_fits(&fitted, 80);
        let header = fitted.lines().nth(1).unwrap();
        for kept in ["read IOPS", "write IOPS", "read p99", "write p99", "errors"] {
            assert!(header.contains(kept), "{header}");
        }
        assert!(!header.contains("p99.9"), "{header}");
        assert!(
            fitted.contains("(fitted to 80 columns: p99.9, p50, cpu left out; --json has them)"),
            "{fitted}"
        );
        assert_eq!(render_table_fitting(&report, Some(500)), full);
    }

    /// Fails naming the first line of `text` wider than `width` columns.
    fn assert_fits(text: &str, width: usize) {
        for line in text.lines() {
            let n = line.chars().count();
            assert!(n <= width, "{n} wide: {line:?}\nin:\n{text}");
        }
    }

    #[test]
    fn every_line_fits_80_columns_long_sentences_and_workers_too() {
        let mut report = sample_report();
        let worker = |cpu: usize| {
            let mut x = hostmax_aggregate::WorkerReport::default();
            x.cpu = cpu;
            x.devices = (0..16).collect();
            x.ring = Default::default();
            x.user_secs = 12345.67;
            x.system_secs = 23456.78;
            x.busy_share = 1.0;
            x.cpu_busy_share = Some(1.0);
            x.saturated = true;
            x.ios = 3;
            x.cpu_ns_per_io = Some(11_934_150_000_000.0);
            x
        };
        report.load_generator = Some({
            let mut x = hostmax_aggregate::LoadGenerator::default();
            x.saturated = true;
            x.workers = vec![worker(0), worker(127)];
            x.cpu_ns_per_io = Some(11_934_150_000_000.0);
            x
        });
        report.devices[1].figures.read_samples.sampled = 4;
        report.devices[1].figures.read_samples.zero = 4;
        report.devices[1].given =
            Some("/dev/disk/by-id/nvme-Vendor_Model_With_A_Long_Serial_0123456789".into());
        report.devices[1].stopped_at_secs = Some(1.5);
        report.verify = Some(Default::default());
        let full = render_table(&report);
        assert!(full.lines().any(|l| l.chars().count() > 80), "{full}");
        let fitted = render_table_fitting(&report, Some(80));
        assert_fits(&fitted, 80);
        assert!(fitted.contains("  saturated\n"), "{fitted}");
        // Wrapping only breaks lines: joined again, the sentences are whole.
        let stopped = "(loop11) stopped at 1.5 s, after a failed I/O: its rates are over those";
        assert!(full.contains(stopped), "{full}");
        assert!(fitted.replace("\n  ", " ").contains(stopped), "{fitted}");
        for narrow in [40, 60, 100] {
            assert_fits(&render_table_fitting(&report, Some(narrow)), narrow);
        }
    }

    #[test]
    fn wrapping_breaks_at_spaces_and_indents_the_rest() {
        assert_eq!(
            wrap_lines("one two three four five six seven\nshort\n", 14),
            "one two three\n  four five\n  six seven\nshort\n"
        );
        // A word longer than a line is cut, and nothing is lost.
        assert_eq!(
            wrap_lines("x /dev/disk/by-id/abcdefgh y\n", 12),
            "x /dev/disk/\n  by-id/abcd\n  efgh y\n"
        );
        assert_eq!(wrap_lines("a  b\n", 80), "a  b\n");
    }

    #[test]
    fn the_given_name_is_shown_beside_the_kernel_name() {
        let mut report = sample_report();
        report.devices[0].given = Some("/dev/disk/by-id/nvme-Example-1".into());
        let text = render_table(&report);
        let row = text.lines().find(|l| l.contains("by-id")).unwrap();
        assert!(
            row.starts_with("/dev/disk/by-id/nvme-Example-1 (loop0) "),
            "{text}"
        );
        // Fitted to 80 columns, the distinctive end stays, and the kernel name.
        let fitted = render_table_fitting(&report, Some(80));
        assert!(fitted.contains("…mple-1 (loop0)  "), "{fitted}");
        assert_fits(&fitted, 80);
        // A file (no /dev/ prefix) keeps its whole canonical path.
        report.devices[0].path = "/srv/images/a.img".into();
        report.devices[0].given = Some("/tmp/link.img".into());
        assert!(render_table(&report).contains("/tmp/link.img (/srv/images/a.img)"));
    }

    #[test]
    fn a_stopped_device_says_when_and_over_what_its_rates_are() {
        let mut report = sample_report();
        report.devices[1].failed = true;
        report.devices[1].stopped_at_secs = Some(1.3);
        let text = render_table(&report);
        assert!(
            text.contains("/dev/loop11 stopped at 1.3 s, after a failed I/O: its rates are over those 1.3 s, not the 2.0 s window\n"),
            "{text}"
        );
        assert!(!text.contains("/dev/loop0 stopped"), "{text}");
        report.devices[1].stopped_at_secs = Some(-0.5);
        assert!(render_table(&report)
            .contains("/dev/loop11 stopped during the ramp, after a failed I/O: no measured I/O"));
        // --on-error stop-all: the run ended moments after the device stopped.
        report.workload.runtime_secs = 30.0;
        report.devices[1].stopped_at_secs = Some(1.99);
        assert!(render_table(&report)
            .contains("/dev/loop11 stopped at 2.0 s, after a failed I/O, and the run with it"));
    }

    #[test]
    fn the_same_note_about_many_devices_is_one_line_naming_them() {
        let mut report = sample_report();
        let mut third = report.devices[1].clone();
        third.path = "/dev/loop12".into();
        report.devices.push(third);
        for d in &mut report.devices {
            d.figures.read_samples.sampled = 8;
            d.figures.read_samples.zero = 8;
            d.stopped_at_secs = Some(-0.5);
        }
        let text = render_table(&report);
        assert_eq!(text.matches("returned zeros").count(), 1, "{text}");
        assert!(
            text.contains("every sampled read of /dev/loop0, /dev/loop11 and /dev/loop12 returned zeros: their blocks"),
            "{text}"
        );
        assert!(
            text.contains("--devices /dev/loop0 /dev/loop11 /dev/loop12 --rw write"),
            "{text}"
        );
        assert_eq!(text.matches("stopped during the ramp").count(), 1, "{text}");
        assert!(
            text.contains("/dev/loop0, /dev/loop11 and /dev/loop12 stopped during the ramp"),
            "{text}"
        );
        // Different notes stay apart, each naming its own devices.
        report.devices[2].stopped_at_secs = Some(1.3);
        let text = render_table(&report);
        assert!(text.contains("/dev/loop0 and /dev/loop11 stopped during the ramp"));
        assert!(text.contains("/dev/loop12 stopped at 1.3 s"), "{text}");
        // The demo says it of its fresh volumes itself.
        let quiet = render_table_noting(&report, None, UnwrittenReads::Expected);
        assert!(!quiet.contains("returned zeros"), "{quiet}");
    }

    #[test]
    fn a_stalled_device_and_a_differing_kernel_count_each_get_a_line() {
        let mut report = sample_report();
        assert!(!render_table(&report).contains("stopped answering"));
        assert!(!render_table(&report).contains("kernel's count"));
        report.devices[1].stalled_in_flight = Some(32);
        let counts = hostmax_aggregate::KernelCounts::default().with_reads(50);
        report.devices[0].kernel = Some(hostmax_aggregate::KernelCount::new(
            counts,
            Some("reads: kernel 50, hostmax 0: +50 safety probe".into()),
        ));
        report.devices[1].kernel = Some(hostmax_aggregate::KernelCount::new(counts, None));
        let text = render_table(&report);
        assert!(
            text.contains(
                "/dev/loop11 stopped answering: 32 I/Os still in flight 10 s after the end"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "kernel's count of /dev/loop0: reads: kernel 50, hostmax 0: +50 safety probe\n"
            ),
            "{text}"
        );
        assert!(!text.contains("kernel's count of /dev/loop11"), "{text}");
    }

    #[test]
    fn a_read_back_cut_short_is_said_in_the_total_and_per_device() {
        let mut report = sample_report();
        let mut whole = hostmax_engine::VerifyLog::default();
        whole.checked_after_run = 256;
        let mut stalled = hostmax_engine::VerifyLog::default();
        stalled.checked_after_run = 6;
        stalled.not_read_back.stalled = 250;
        stalled.reads_left_in_flight = 8;
        let mut interrupted = hostmax_engine::VerifyLog::default();
        interrupted.not_read_back.interrupted = 100;
        report.devices[0].verify = Some(whole.clone());
        report.devices[1].verify = Some(whole.clone());
        let mut both = whole.clone();
        both.add(&whole);
        report.verify = Some(both);
        let text = render_table(&report);
        assert!(!text.contains("not read back"), "{text}");
        assert!(!text.contains("NOT read back"), "{text}");
        report.devices[1].verify = Some(stalled.clone());
        report.devices[1].stalled_in_flight = Some(8);
        report.devices[0].verify = Some(interrupted.clone());
        let mut total = stalled.clone();
        total.add(&interrupted);
        report.verify = Some(total);
        let text = render_table(&report);
        assert!(
            text.contains("6 written blocks read back after it, 0 bad")
                && text.contains("; 350 written blocks NOT read back: the read-back is incomplete"),
            "{text}"
        );
        assert!(
            text.contains("/dev/loop11: 250 written blocks not read back after the run (250 as the device stopped answering): their data is unchecked; 8 reads of the read-back left in flight to the kernel\n"),
            "{text}"
        );
        assert!(
            text.contains("/dev/loop0: 100 written blocks not read back after the run (100 as a signal ended the read-back): their data is unchecked\n"),
            "{text}"
        );
        assert!(
            text.contains("/dev/loop11 stopped answering: 8 I/Os still in flight after 10 s without a completion while its written blocks were read back"),
            "{text}"
        );
    }

    #[test]
    fn read_only_run_has_no_write_columns() {
        let mut report = sample_report();
        report.workload.pattern = hostmax_engine::IoPattern::RandRead;
        report.host.ops[OpKind::Write] = Default::default();
        let text = render_table(&report);
        assert!(!text.contains("write p50"));
        assert!(text.contains("read p50"));
    }

    #[test]
    fn a_trim_run_shows_trim_figures_and_says_when_trims_were_synchronous() {
        let mut report = sample_report();
        report.workload.pattern = hostmax_engine::IoPattern::RandTrim;
        for f in std::iter::once(&mut report.host)
            .chain(report.devices.iter_mut().map(|d| &mut d.figures))
        {
            f.ops[OpKind::Trim] = f.ops[OpKind::Read].clone();
            f.ops[OpKind::Read] = Default::default();
            f.ops[OpKind::Write] = Default::default();
        }
        let text = render_table(&report);
        let header = text.lines().find(|l| l.starts_with("device")).unwrap();
        assert!(
            header.contains("trim p50") && header.contains("trim p99.9"),
            "{header}"
        );
        assert!(
            !header.contains("read") && !header.contains("write"),
            "{header}"
        );
        assert!(!text.contains("synchronous"), "{text}");
        report.devices[1].trim_method = Some(TrimMethod::Ioctl);
        let text = render_table(&report);
        assert!(
            text.contains("trims of /dev/loop11 were synchronous BLKDISCARD ioctls"),
            "{text}"
        );
    }

    #[test]
    fn block_sizes_are_spelled_in_binary_units() {
        assert_eq!(format_block_size(4096), "4 KiB");
        assert_eq!(format_block_size(1 << 20), "1 MiB");
        assert_eq!(format_block_size(512), "512 B");
        assert_eq!(format_block_size(1536), "1536 B");
    }

    #[test]
    fn control_characters_of_input_data_are_escaped() {
        assert_eq!(escape_text("/dev/sdb"), "/dev/sdb");
        let mut report = sample_report();
        report.devices[0].host = Some("h\x1b[2J\nFAIL".into());
        let text = render_table_fitting(&report, None);
        assert!(text.contains(r"h\x1b[2J\nFAIL:"), "{text}");
        assert!(!text.contains('\x1b'), "{text}");
    }
}
