//! The live view on stderr while a run goes on.

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

use hostmax_aggregate::SecondPoint;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::units::{format_latency_ns, format_mib_per_sec};

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
    mode: LiveMode,
    bar: Option<ProgressBar>,
    ramping: bool,
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
        LiveView::build(total_secs, ramp_secs, mode, ProgressDrawTarget::stderr())
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
            mode,
            bar,
            ramping,
        }
    }

    /// How this view draws.
    pub fn mode(&self) -> LiveMode {
        self.mode
    }

    /// Shows one measured second.
    pub fn update(&mut self, point: &SecondPoint) {
        match &self.bar {
            None => write_stderr(&live_line(point, self.total_secs)),
            Some(bar) => {
                if self.ramping {
                    bar.disable_steady_tick();
                    bar.set_style(measuring_style());
                    bar.reset_elapsed();
                }
                bar.set_position(seconds_done(point).min(self.total_secs));
                bar.set_message(live_figures(point));
            }
        }
        self.ramping = false;
    }

    /// Prints a line of its own (a warning, "stopping...") without breaking the bar.
    pub fn note(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| write_stderr(line)),
            None => write_stderr(line),
        }
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

/// The bar takes what the terminal's width leaves beside the figures (`wide_bar`), so an
/// 80-column terminal gets a short bar and no wrapped line.
fn measuring_style() -> ProgressStyle {
    ProgressStyle::with_template("[{wide_bar}] {pos:>3}/{len} s  {msg}")
        .expect("constant template is valid")
        .progress_chars("=> ")
}

/// A write to stderr that cannot panic: a closed stderr must not end a run.
fn write_stderr(line: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// Seconds measured once `point` is in (its index is 0-based).
fn seconds_done(point: &SecondPoint) -> u64 {
    u64::try_from(point.second).map_or(0, |s| s + 1)
}

/// The plain line for one second:
/// `[  3/30 s] 412345 IOPS  1610.7 MiB/s  p99 310 µs  errors 0`.
pub fn live_line(point: &SecondPoint, total_secs: u64) -> String {
    let width = total_secs.to_string().len().max(3);
    format!(
        "[{:>width$}/{total_secs} s] {}",
        seconds_done(point),
        live_figures(point)
    )
}

/// The figures of one second: IOPS, MiB/s, p99 (read and write separately when both ran)
/// and errors.
fn live_figures(point: &SecondPoint) -> String {
    let p99 = match (point.read_iops > 0, point.write_iops > 0) {
        (true, true) => format!(
            "p99 r {} w {}",
            format_latency_ns(point.read_p99_ns),
            format_latency_ns(point.write_p99_ns)
        ),
        (true, false) => format!("p99 {}", format_latency_ns(point.read_p99_ns)),
        (false, true) => format!("p99 {}", format_latency_ns(point.write_p99_ns)),
        (false, false) => "p99 -".to_string(),
    };
    format!(
        "{} IOPS  {} MiB/s  {p99}  errors {}",
        point.iops,
        format_mib_per_sec(point.bytes_per_sec as f64),
        point.errors
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(second: i64, reads: u64, writes: u64) -> SecondPoint {
        SecondPoint {
            second,
            iops: reads + writes,
            read_iops: reads,
            write_iops: writes,
            bytes_per_sec: (reads + writes) * 4096,
            errors: 0,
            read_p50_ns: 150_000,
            read_p99_ns: 310_000,
            write_p50_ns: 900_000,
            write_p99_ns: 1_250_000,
            devices: vec![reads + writes],
            partial: false,
            histograms: None,
        }
    }

    #[test]
    fn plain_line_shows_progress_and_figures() {
        assert_eq!(
            live_line(&point(2, 412_345, 0), 30),
            "[  3/30 s] 412345 IOPS  1610.7 MiB/s  p99 310 µs  errors 0"
        );
        assert_eq!(
            live_line(&point(0, 0, 1000), 1200),
            "[   1/1200 s] 1000 IOPS  3.9 MiB/s  p99 1.25 ms  errors 0"
        );
        let mut mixed = point(9, 700, 300);
        mixed.errors = 4;
        assert_eq!(
            live_line(&mixed, 10),
            "[ 10/10 s] 1000 IOPS  3.9 MiB/s  p99 r 310 µs w 1.25 ms  errors 4"
        );
        assert!(live_line(&point(0, 0, 0), 5).contains("p99 -"));
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
        assert_eq!(view.mode(), LiveMode::Lines);
        assert!(view.bar.is_none());
        view.update(&point(0, 1, 0));
        assert!(!view.ramping);
    }
}
