//! The kernel's own count of each device's I/Os over a run, beside hostmax's: snapshots of
//! `/sys/block/DEV/stat` ([`Snapshot`], through `hostmax_device::Sysfs`), the window around
//! the write-safety probe a plan's first run starts from ([`ProbeWindow`]), and the one line
//! that says why the counts differ when they do ([`explain`]).
//!
//! The counts are taken here, not in the engine (which does I/O only): before the plan's
//! safety probe (its signature reads are the kernel's too) and after the engine's drain.

use std::sync::{Arc, Mutex};

use hostmax_aggregate::{DeviceReport, HostReport, KernelCount, KernelCounts};
use hostmax_device::{Sysfs, TargetInfo};
use hostmax_engine::OpKind;

use crate::output::table::format_block_size;

/// Each target's kernel count at one moment; `None` for a regular file (its I/O is counted
/// on the device under its filesystem, beside everything else there) or a device sysfs does
/// not show.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot(Vec<Option<KernelCounts>>);

impl Snapshot {
    /// The targets' counts now.
    pub fn take(targets: &[TargetInfo], sysfs: &Sysfs) -> Snapshot {
        Snapshot(
            targets
                .iter()
                .map(|t| sysfs.io_counts(t.kernel_name.as_deref()?))
                .collect(),
        )
    }

    /// The targets' counts once they stop moving: two readings 20 ms apart agree (at most
    /// one second). The block layer posts a completion to its submitter before it counts it,
    /// so a reading right after a run's drain can lag by an I/O or two.
    pub fn settled(targets: &[TargetInfo], sysfs: &Sysfs) -> Snapshot {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        let mut last = Snapshot::take(targets, sysfs);
        loop {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let now = Snapshot::take(targets, sysfs);
            if now == last || std::time::Instant::now() >= deadline {
                return now;
            }
            last = now;
        }
    }

    /// What was counted from `before` to this snapshot, per target.
    pub fn since(&self, before: &Snapshot) -> Snapshot {
        Snapshot(
            self.0
                .iter()
                .zip(&before.0)
                .map(|(now, then)| Some(now.as_ref()?.since(then.as_ref()?)))
                .collect(),
        )
    }

    fn get(&self, i: usize) -> Option<KernelCounts> {
        self.0.get(i).copied().flatten()
    }
}

/// The counts just before a plan's write-safety probe and just after it, kept by the plan for
/// its first run (which then counts from before the probe and names the probe's reads);
/// later runs of the same plan count from their own start. Shared by clones of the plan.
#[derive(Debug, Clone, Default)]
pub struct ProbeWindow(Arc<Mutex<Option<(Snapshot, Snapshot)>>>);

impl ProbeWindow {
    /// A window from `before` to `after` the probe.
    pub fn new(before: Snapshot, after: Snapshot) -> ProbeWindow {
        ProbeWindow(Arc::new(Mutex::new(Some((before, after)))))
    }

    /// The window, once: the first run takes it.
    pub fn take(&self) -> Option<(Snapshot, Snapshot)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// Where a run's kernel count starts: a snapshot, and the counts of the safety probe when
/// the run starts from before it.
#[derive(Debug, Clone)]
pub struct RunStart {
    before: Snapshot,
    probe: Option<Snapshot>,
}

impl RunStart {
    /// The start of a run of a plan whose probe window is `window`: before the probe for the
    /// plan's first run, now for the others.
    pub fn of(window: &ProbeWindow, targets: &[TargetInfo], sysfs: &Sysfs) -> RunStart {
        match window.take() {
            Some((before, after)) => RunStart {
                probe: Some(after.since(&before)),
                before,
            },
            None => RunStart {
                before: Snapshot::take(targets, sysfs),
                probe: None,
            },
        }
    }
}

/// Sets each device's `kernel` in `report` (its devices are `targets`, in order): the counts
/// from `start` to now, and why they differ from hostmax's.
pub fn attach(report: &mut HostReport, targets: &[TargetInfo], start: &RunStart, sysfs: &Sysfs) {
    if targets.iter().all(|t| t.kernel_name.is_none()) {
        return;
    }
    let counted = Snapshot::settled(targets, sysfs).since(&start.before);
    let block_size = u64::from(report.workload.block_size);
    for (i, (device, target)) in report.devices.iter_mut().zip(targets).enumerate() {
        let Some(counts) = counted.get(i) else {
            continue;
        };
        let split = target
            .kernel_name
            .as_deref()
            .and_then(|name| sysfs.max_io_bytes(name));
        let probe = start.probe.as_ref().and_then(|p| p.get(i));
        let differs = explain(device, counts, block_size, split, probe);
        device.kernel = Some(KernelCount::new(counts, differs));
    }
}

/// Why the kernel counted `kernel` where hostmax counted `device`'s own I/Os (ramp, window,
/// drain): I/Os of `block_size` over the device's largest piece `max_io` (its
/// `max_sectors_kb`) count once per piece; the safety probe read `probe`; failed I/Os count
/// for the kernel too; what is left is other processes' I/O. `None` when the counts are the
/// same. One line, kinds apart: `reads: kernel 6422, hostmax 3211: +3211 split (2 MiB I/Os over
/// max_sectors_kb 1280: 2 pieces each), +40 safety probe`.
pub fn explain(
    device: &DeviceReport,
    kernel: KernelCounts,
    block_size: u64,
    max_io: Option<u64>,
    probe: Option<KernelCounts>,
) -> Option<String> {
    let pieces = match max_io {
        Some(max) if max > 0 => block_size.div_ceil(max),
        _ => 1,
    };
    let probe = probe.unwrap_or_default();
    let kinds = [
        ("reads", OpKind::Read, kernel.reads, probe.reads),
        ("writes", OpKind::Write, kernel.writes, probe.writes),
        ("discards", OpKind::Trim, kernel.discards, probe.discards),
    ];
    let failed = device.figures.errors;
    let mut lines = Vec::new();
    for (name, op, counted, probed) in kinds {
        let own = device.whole_run_ios(op);
        if counted == own {
            continue;
        }
        let mut parts = Vec::new();
        let mut left = i128::from(counted) - i128::from(own);
        // Discards are split by other limits (max_discard_sectors), and hostmax's trims are
        // one block each: only reads and writes are split by max_sectors_kb.
        if pieces > 1 && op != OpKind::Trim && own > 0 {
            let split = i128::from(own) * i128::from(pieces - 1);
            left -= split;
            parts.push(format!(
                "+{split} split ({} I/Os over max_sectors_kb {}: {pieces} pieces each)",
                format_block_size(block_size as u32),
                max_io.unwrap_or_default() / 1024
            ));
        }
        if probed > 0 {
            left -= i128::from(probed);
            parts.push(format!("+{probed} safety probe"));
        }
        if failed > 0 && left > 0 {
            let of_them = left.min(i128::from(failed));
            left -= of_them;
            parts.push(format!("+{of_them} failed I/Os"));
        }
        if left != 0 {
            parts.push(format!("{left:+} other I/O on the device"));
        }
        lines.push(format!(
            "{name}: kernel {counted}, hostmax {own}: {}",
            parts.join(", ")
        ));
    }
    (!lines.is_empty()).then(|| lines.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostmax_engine::{DeviceResult, OpResult, PerOp, RunResult};

    fn device_with(reads: u64, writes: u64) -> DeviceReport {
        let mut ops: PerOp<OpResult> = PerOp::default();
        ops[OpKind::Read].ios = reads;
        ops[OpKind::Write].ios = writes;
        let mut result = RunResult::default();
        result.devices = vec![DeviceResult::new("/dev/loop9".into(), 0, ops)];
        hostmax_aggregate::summarize(&result, Vec::new())
            .devices
            .remove(0)
    }

    #[test]
    fn equal_counts_need_no_words() {
        let d = device_with(3211, 0);
        let k = KernelCounts::default().with_reads(3211);
        assert_eq!(explain(&d, k, 4096, Some(1280 << 10), None), None);
    }

    #[test]
    fn split_ios_the_probe_and_others_are_told_apart() {
        let d = device_with(3211, 0);
        let k = KernelCounts::default().with_reads(6422 + 40 + 3);
        let probe = KernelCounts::default().with_reads(40);
        let line = explain(&d, k, 2 << 20, Some(1280 << 10), Some(probe)).unwrap();
        assert_eq!(
            line,
            "reads: kernel 6465, hostmax 3211: +3211 split (2 MiB I/Os over max_sectors_kb 1280: 2 pieces each), +40 safety probe, +3 other I/O on the device"
        );
    }

    #[test]
    fn a_write_run_names_the_probes_reads() {
        let d = device_with(0, 500);
        let k = KernelCounts::default()
            .with_reads(36)
            .with_writes(500)
            .with_discards(0);
        let probe = KernelCounts::default().with_reads(36);
        assert_eq!(
            explain(&d, k, 4096, Some(1280 << 10), Some(probe)).as_deref(),
            Some("reads: kernel 36, hostmax 0: +36 safety probe")
        );
    }
}
