//! The live view on stderr while a run goes on.

use std::io::{self, IsTerminal};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use hostmax_aggregate::{OpSecond, SecondPoint};
use hostmax_engine::OpKind;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::units::{format_latency_ns, format_mib_per_sec};

/// The progress bar on screen now, if any. A line printed from elsewhere while it is drawn
/// (the signal watch's "stopping ...") would be erased by its next redraw: [`print_line`]
/// puts it above the bar instead.
static SHOWN_BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

fn shown_bar() -> MutexGuard<'static, Option<ProgressBar>> {
    SHOWN_BAR.lock().unwrap_or_else(|e| e.into_inner())
}

/// Prints `line` on stderr above the progress bar on screen (plainly when there is none), so
/// that it stays visible.
pub fn print_line(line: &str) {
    // Cloned out, so the bar's own lock is never taken while holding this one.
    let bar = shown_bar().clone();
    match bar {
        Some(bar) => bar.suspend(|| write_stderr(line)),
        None => write_stderr(line),
    }
}

/// Registers `bar` as the bar on screen (for [`print_line`]) until the guard drops.
pub fn show_bar(bar: &ProgressBar) -> ShownBar {
    *shown_bar() = Some(bar.clone());
    ShownBar
}

/// Keeps a bar registered as the one on screen; see [`show_bar`].
#[derive(Debug)]
pub struct ShownBar;

impl Drop for ShownBar {
    fn drop(&mut self) {
        *shown_bar() = None;
    }
}

/// How the live view draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveMode {
    /// A progress bar redrawn in place (stderr is a terminal).
    Bar,
    /// One plain line per second (stderr is a file or a pipe).
    Lines,
}

/// The live view of a run, fed one host [`SecondPoint`] per measured second.
///
/// It starts in the ramp state when the run has a ramp (warm-up I/O that is not counted) and
/// leaves it at the first point. Everything goes to stderr, so stdout stays free for
/// `--json -`. Dropping the view clears the bar.
#[derive(Debug)]
pub struct LiveView {
    total_secs: u64,
    bar: Option<ProgressBar>,
    ramping: bool,
    /// Columns the figures must fit in (the terminal's, or `COLUMNS`); `None`: no limit.
    width: Option<usize>,
    _shown: Option<ShownBar>,
}

impl LiveView {
    /// A view for a run of `total_secs` measured seconds after `ramp_secs` of ramp: a bar
    /// when stderr is a terminal, plain lines otherwise.
    pub fn new(total_secs: u64, ramp_secs: u64) -> LiveView {
        let mode = if io::stderr().is_terminal() {
            LiveMode::Bar
        } else {
            LiveMode::Lines
        };
        LiveView::with_mode(total_secs, ramp_secs, mode)
    }

    /// A view that draws in the given mode whatever stderr is.
    pub fn with_mode(total_secs: u64, ramp_secs: u64, mode: LiveMode) -> LiveView {
        let mut view = LiveView::build(total_secs, ramp_secs, mode, ProgressDrawTarget::stderr());
        view.width = crate::output::table::stderr_width();
        view._shown = view.bar.as_ref().map(show_bar);
        view
    }

    fn build(
        total_secs: u64,
        ramp_secs: u64,
        mode: LiveMode,
        target: ProgressDrawTarget,
    ) -> LiveView {
        let ramping = ramp_secs > 0;
        let bar = match mode {
            LiveMode::Lines => {
                if ramping {
                    write_stderr(&format!(
                        "[ramp] {ramp_secs} s of I/O before the measured {total_secs} s, not counted"
                    ));
                }
                None
            }
            LiveMode::Bar => {
                let bar = ProgressBar::with_draw_target(Some(total_secs), target);
                if ramping {
                    bar.set_style(
                        ProgressStyle::with_template("{spinner} ramp {elapsed} of {msg}")
                            .expect("constant template is valid"),
                    );
                    bar.set_message(format!("{ramp_secs} s, not counted"));
                    // Keeps the spinner and the elapsed time moving while no point arrives.
                    bar.enable_steady_tick(Duration::from_millis(200));
                } else {
                    bar.set_style(measuring_style());
                }
                Some(bar)
            }
        };
        LiveView {
            total_secs,
            bar,
            ramping,
            width: None,
            _shown: None,
        }
    }

    /// Shows one measured second.
    pub fn update(&mut self, point: &SecondPoint) {
        match &self.bar {
            None => write_stderr(&live_line_fitting(point, self.total_secs, self.width)),
            Some(bar) => {
                if self.ramping {
                    bar.disable_steady_tick();
                    bar.set_style(measuring_style());
                    bar.reset_elapsed();
                }
                bar.set_position(seconds_done(point).min(self.total_secs));
                // Beside "[bar] pos/len s  ", with at least a short bar left.
                let beside = format!("{:>3}/{} s", self.total_secs, self.total_secs).len()
                    + "[]   ".len()
                    + MIN_BAR;
                let room = self.width.map(|w| w.saturating_sub(beside));
                bar.set_message(live_figures(point, room));
            }
        }
        self.ramping = false;
    }

    /// Removes the bar (plain lines stay); the same as dropping the view.
    pub fn finish(self) {}
}

impl Drop for LiveView {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Columns the bar keeps at least; the figures give up detail before it gets shorter.
const MIN_BAR: usize = 10;

/// The bar takes what the terminal's width leaves beside the figures (`wide_bar`), so an
/// 80-column terminal gets a short bar and no wrapped line.
fn measuring_style() -> ProgressStyle {
    ProgressStyle::with_template("[{wide_bar}] {pos:>3}/{len} s  {msg}")
        .expect("constant template is valid")
        .progress_chars("=> ")
}

/// A line on stderr that cannot panic: a closed stderr must not end a run.
fn write_stderr(line: &str) {
    super::stdio::print_stderr(&format!("{line}\n"));
}

/// Seconds measured once `point` is in (its index is 0-based).
fn seconds_done(point: &SecondPoint) -> u64 {
    u64::try_from(point.second).map_or(0, |s| s + 1)
}

/// The plain line for one second, in `width` columns (`None`: no limit; the figures give up
/// detail to fit): `[  3/30 s] 412345 IOPS  1610.7 MiB/s  p99 310 µs  errors 0`.
pub fn live_line_fitting(point: &SecondPoint, total_secs: u64, width: Option<usize>) -> String {
    let digits = total_secs.to_string().len().max(3);
    let progress = format!("[{:>digits$}/{total_secs} s]", seconds_done(point));
    let room = width.map(|w| w.saturating_sub(progress.chars().count() + 1));
    format!("{progress} {}", live_figures(point, room))
}

/// The figures of one second in `room` columns (`None`: no limit): IOPS, MiB/s, p99 (read
/// and write separately when both ran) and errors; what does not fit is left out, MiB/s
/// first, then the latency.
fn live_figures(point: &SecondPoint, room: Option<usize>) -> String {
    let active: Vec<(OpKind, &OpSecond)> =
        point.ops.0.iter().filter(|(_, o)| o.iops > 0.0).collect();
    let p99 = match active.as_slice() {
        [] => "p99 -".to_string(),
        [(_, o)] => format!("p99 {}", format_latency_ns(o.p99_ns)),
        // Each kind by its initial: "p99 r 310 µs w 1.25 ms".
        many => many.iter().fold("p99".to_string(), |line, (op, o)| {
            format!("{line} {} {}", &op.name()[..1], format_latency_ns(o.p99_ns))
        }),
    };
    let iops = format!("{:.0} IOPS", point.iops);
    let errors = format!("errors {}", point.errors);
    let mib = format!("{} MiB/s", format_mib_per_sec(point.bytes_per_sec));
    let choices: [&[&str]; 3] = [
        &[&iops, &mib, &p99, &errors],
        &[&iops, &p99, &errors],
        &[&iops, &errors],
    ];
    let mut line = String::new();
    for parts in choices {
        line = parts.join("  ");
        if room.is_none_or(|room| line.chars().count() <= room) {
            break;
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostmax_aggregate::OpSeconds;
    use hostmax_engine::PerOp;

    fn point(second: i64, reads: u64, writes: u64) -> SecondPoint {
        let ops = PerOp::default()
            .with(OpKind::Read, OpSecond::new(reads as f64, 150_000, 310_000))
            .with(
                OpKind::Write,
                OpSecond::new(writes as f64, 900_000, 1_250_000),
            );
        SecondPoint::new(second)
            .with_iops((reads + writes) as f64)
            .with_ops(OpSeconds(ops))
            .with_bytes_per_sec(((reads + writes) * 4096) as f64)
    }

    #[test]
    fn plain_line_shows_progress_and_figures() {
        assert_eq!(
            live_line_fitting(&point(2, 412_345, 0), 30, None),
            "[  3/30 s] 412345 IOPS  1610.7 MiB/s  p99 310 µs  errors 0"
        );
        assert_eq!(
            live_line_fitting(&point(0, 0, 1000), 1200, None),
            "[   1/1200 s] 1000 IOPS  3.9 MiB/s  p99 1.25 ms  errors 0"
        );
        let mut mixed = point(9, 700, 300);
        mixed.errors = 4;
        assert_eq!(
            live_line_fitting(&mixed, 10, None),
            "[ 10/10 s] 1000 IOPS  3.9 MiB/s  p99 r 310 µs w 1.25 ms  errors 4"
        );
        assert!(live_line_fitting(&point(0, 0, 0), 5, None).contains("p99 -"));
    }

    #[test]
    fn the_plain_line_gives_up_detail_to_fit_its_width() {
        let mut big = point(3599, 9_000_000, 4_000_000);
        big.ops.0[OpKind::Read].p99_ns = 123_456_789;
        big.ops.0[OpKind::Write].p99_ns = 987_654_321;
        big.errors = 12_345_678;
        let full = live_line_fitting(&big, 3600, None);
        assert!(full.chars().count() > 80, "{full}");
        let fitted = live_line_fitting(&big, 3600, Some(80));
        assert!(fitted.chars().count() <= 80, "{fitted}");
        assert_eq!(
            fitted,
            "[3600/3600 s] 13000000 IOPS  p99 r 123 ms w 988 ms  errors 12345678"
        );
        // Narrower than the least it can say: IOPS and errors still.
        assert_eq!(
            live_line_fitting(&big, 3600, Some(40)),
            "[3600/3600 s] 13000000 IOPS  errors 12345678"
        );
        // Room enough: the whole line.
        assert_eq!(live_line_fitting(&big, 3600, Some(200)), full);
    }

    #[test]
    fn bar_leaves_ramp_at_the_first_point_and_tracks_seconds() {
        let mut view = LiveView::build(30, 5, LiveMode::Bar, ProgressDrawTarget::hidden());
        assert!(view.ramping);
        let bar = view.bar.clone().unwrap();
        assert_eq!(bar.message(), "5 s, not counted");
        view.update(&point(0, 100, 0));
        assert!(!view.ramping);
        assert_eq!(bar.position(), 1);
        assert!(bar.message().starts_with("100 IOPS"), "{}", bar.message());
        view.update(&point(40, 100, 0));
        assert_eq!(
            bar.position(),
            30,
            "position is capped at the planned seconds"
        );
        view.finish();
        assert!(bar.is_finished());
    }

    #[test]
    fn lines_mode_has_no_bar() {
        let mut view = LiveView::build(3, 0, LiveMode::Lines, ProgressDrawTarget::hidden());
        assert!(view.bar.is_none());
        assert!(view.bar.is_none());
        view.update(&point(0, 1, 0));
        assert!(!view.ramping);
    }
}
