//! What [`crate::merge_reports`] checks of every figure before adding it: counts that add
//! without passing 2^64 - 1, rates that are finite and no higher than their counts over
//! their window allow. A report failing these was not written by a run (edited, or forged).

use hostmax_engine::{IoCounts, OpKind, MAX_BLOCK_SIZE};

use super::MergeError;
use crate::report::{Figures, HostReport};

/// Slack for a rate read back against its count: the report's floats are exact to the last
/// bits, its sums of rates to a few more.
const RATE_SLACK: f64 = 1e-9;

/// A figure for a message: huge ones in exponent form (`1e308`, not 309 digits).
fn shown(value: f64) -> String {
    if value.abs() >= 1e15 {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

/// A running sum of counts that names the report and field whose addition would pass
/// 2^64 - 1.
pub(super) fn add_count(
    sum: &mut u64,
    add: u64,
    label: &str,
    field: impl FnOnce() -> String,
) -> Result<(), MergeError> {
    *sum = sum
        .checked_add(add)
        .ok_or_else(|| MergeError::CountOverflow {
            label: label.to_string(),
            field: field(),
        })?;
    Ok(())
}

/// A running sum of rates that names the report and field whose addition is no longer a
/// finite number.
pub(super) fn add_rate(
    sum: &mut f64,
    add: f64,
    label: &str,
    field: impl FnOnce() -> String,
) -> Result<(), MergeError> {
    let total = *sum + add;
    if !total.is_finite() {
        return Err(MergeError::BadFigure {
            label: label.to_string(),
            field: field(),
            why: format!(
                "{}, which added to the others' {} is no number",
                shown(add),
                shown(*sum)
            ),
        });
    }
    *sum = total;
    Ok(())
}

/// Each kind's count of `counts` added up, checked.
fn total(counts: &IoCounts, label: &str, field: &str) -> Result<u64, MergeError> {
    let mut sum = 0;
    for op in OpKind::ALL {
        add_count(&mut sum, counts[op], label, || {
            format!("{field}.{}s", op.name())
        })?;
    }
    Ok(sum)
}

/// Refuses a figure that is not a finite, non-negative number.
fn finite(value: f64, label: &str, field: impl FnOnce() -> String) -> Result<(), MergeError> {
    if value.is_finite() && value >= 0.0 {
        return Ok(());
    }
    Err(MergeError::BadFigure {
        label: label.to_string(),
        field: field(),
        why: format!("{}, not a finite non-negative number", shown(value)),
    })
}

/// Refuses a rate above `count` over `secs` seconds (a window of zero rates nothing).
fn rate_within(
    rate: f64,
    count: f64,
    secs: f64,
    label: &str,
    field: impl Fn() -> String,
) -> Result<(), MergeError> {
    finite(rate, label, &field)?;
    let most = if secs > 0.0 { count / secs } else { 0.0 };
    if rate <= most * (1.0 + RATE_SLACK) + RATE_SLACK {
        return Ok(());
    }
    Err(MergeError::BadFigure {
        label: label.to_string(),
        field: field(),
        why: format!(
            "{}, more than its count {} over {} s allows",
            shown(rate),
            shown(count),
            shown(secs)
        ),
    })
}

/// Checks one device's or the host's figures: rates finite and within their counts over
/// `secs`, every kind's counts adding up without overflow. Returns every I/O the kernel
/// completed for it ([`Figures::all_ios`], checked).
fn check_figures(f: &Figures, secs: f64, label: &str, scope: &str) -> Result<u64, MergeError> {
    let mut ios = 0;
    let mut bytes = 0;
    for (op, o) in f.ops.iter() {
        let field = |name: &str| format!("{scope}.{}.{name}", op.name());
        rate_within(o.iops, o.ios as f64, secs, label, || field("iops"))?;
        rate_within(o.bytes_per_sec, o.bytes as f64, secs, label, || {
            field("bytes_per_sec")
        })?;
        finite(o.latency_ns.mean, label, || field("latency_ns.mean"))?;
        add_count(&mut ios, o.ios, label, || field("ios"))?;
        add_count(&mut bytes, o.bytes, label, || field("bytes"))?;
    }
    rate_within(f.iops, ios as f64, secs, label, || format!("{scope}.iops"))?;
    rate_within(f.bytes_per_sec, bytes as f64, secs, label, || {
        format!("{scope}.bytes_per_sec")
    })?;
    let mut all = ios;
    let field = || format!("{scope} I/Os (ramp, measured, drained and failed together)");
    add_count(
        &mut all,
        total(&f.ramp, label, &format!("{scope}.ramp"))?,
        label,
        field,
    )?;
    add_count(
        &mut all,
        total(&f.drained, label, &format!("{scope}.drained"))?,
        label,
        field,
    )?;
    add_count(&mut all, f.errors, label, field)?;
    Ok(all)
}

/// Checks every figure of one report before it is merged: its window, the host's and each
/// device's figures (rates within their counts over the window), each second's figures
/// (finite, and no more I/Os in a second than the run did), and for a merged report each
/// host's line. Returns every I/O of the host ([`Figures::all_ios`], which then cannot
/// overflow).
pub(super) fn check_report(label: &str, r: &HostReport) -> Result<u64, MergeError> {
    finite(r.measured_secs, label, || "measured_secs".into())?;
    // Rates are over each host's own window: a merged report's sum of them is bounded by
    // its shortest (non-empty) window.
    let secs = match &r.fleet {
        Some(fleet) => {
            let mut shortest = f64::INFINITY;
            for (i, h) in fleet.hosts.iter().enumerate() {
                let field = |name: &str| format!("fleet.hosts[{i}].{name}");
                finite(h.measured_secs, label, || field("measured_secs"))?;
                rate_within(h.iops, h.ios as f64, h.measured_secs, label, || {
                    field("iops")
                })?;
                finite(h.bytes_per_sec, label, || field("bytes_per_sec"))?;
                if h.measured_secs > 0.0 {
                    shortest = shortest.min(h.measured_secs);
                }
            }
            if shortest.is_finite() {
                shortest
            } else {
                0.0
            }
        }
        None => r.measured_secs,
    };
    let all_ios = check_figures(&r.host, secs, label, "host")?;
    for d in &r.devices {
        let active = match d.stopped_at_secs {
            Some(t) => {
                // Negative when it stopped during the ramp; never NaN or infinite.
                if !t.is_finite() {
                    return Err(MergeError::BadFigure {
                        label: label.to_string(),
                        field: format!("devices[{}].stopped_at_secs", d.path),
                        why: format!("{}, not a finite number", shown(t)),
                    });
                }
                t.clamp(0.0, secs)
            }
            None => secs,
        };
        check_figures(&d.figures, active, label, &format!("devices[{}]", d.path))?;
    }
    // A second's figures are counts of that second: none can exceed the whole run's.
    let all = all_ios as f64;
    let all_bytes = all * f64::from(MAX_BLOCK_SIZE);
    for p in &r.time_series {
        let field = |name: &str| format!("time_series[second {}].{name}", p.second);
        rate_within(p.iops, all, 1.0, label, || field("iops"))?;
        rate_within(p.bytes_per_sec, all_bytes, 1.0, label, || {
            field("bytes_per_sec")
        })?;
        for (op, o) in p.ops.0.iter() {
            rate_within(o.iops, all, 1.0, label, || {
                field(&format!("{}.iops", op.name()))
            })?;
        }
        for d in &p.devices {
            let field = |name: &str| field(&format!("devices[{}].{name}", d.path));
            rate_within(d.iops, all, 1.0, label, || field("iops"))?;
            rate_within(d.bytes_per_sec, all_bytes, 1.0, label, || {
                field("bytes_per_sec")
            })?;
            for (op, &iops) in d.ops.0.iter() {
                rate_within(iops, all, 1.0, label, || field(op.name()))?;
            }
        }
    }
    Ok(all_ios)
}
