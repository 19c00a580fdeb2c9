//! What the `hostmax` binary shows and writes: everything here may do I/O, unlike the
//! aggregator whose [`hostmax_aggregate::HostReport`] it renders.
//!
//! - [`progress::LiveView`]: the live view on stderr during a run, fed one
//!   [`hostmax_aggregate::SecondPoint`] per second (a progress bar on a terminal, one plain
//!   line per second otherwise).
//! - [`table::render_table`]: the final per-device and host table, as a `String`.
//! - [`destination`]: every output file of every command (`--json`, `--hdr-log`, `--svg`,
//!   `--html`, the suite's state directory), proved writable once before any I/O, resolved
//!   then and written whole through the directory found then ([`atomic`]), or kept elsewhere
//!   when it cannot be written after the run ([`kept`]); `-` is stdout for JSON and refused
//!   elsewhere.
//! - [`export`]: a command's outputs, declared beside its plan ([`export::Outputs`]), checked
//!   once before any I/O and written once through one trait, [`export::Export`], implemented
//!   once per format:
//!   - [`json::JsonReport`]: the `--json` report, written atomically to a file or to stdout;
//!   - [`hdr_log::HdrLog`]: the `--hdr-log` file of per-second interval histograms in
//!     HdrHistogram's interval-log format, every run of the command in it, tagged by run;
//!   - [`svg::SvgChart`]: an `--svg` chart of the result;
//!   - [`fio_json::FioJson`]: `--fio-json`, the runs in fio's JSON layout (a file, or a
//!     folder in fio-plot's layout for a command of several runs);
//!   - the suite's `--html` page (`crate::command::suite::html`).
//! - [`curve`]: the load-latency curve's table and chart (`hostmax curve`, the suite's page).
//! - [`metrics`]: `--metrics-listen`, the live figures served to Prometheus while a command
//!   runs, fed by the same seconds as the live view.
//!
//! - [`stdio`]: text for people on stdout and stderr, the one way it is written: never a
//!   panic on a closed pipe or a hung-up terminal, no control character of input data let
//!   through ([`stdio::escape_text`]).
//!
//! How latencies and throughputs are spelled (µs/ms/s, MiB/s) is [`crate::units`].

pub mod atomic;
pub mod curve;
pub mod destination;
pub mod export;
pub mod fio_json;
pub mod hdr_log;
pub mod json;
pub mod kept;
pub mod metrics;
pub mod progress;
pub mod stdio;
pub mod svg;
pub mod table;

/// The line a command of several runs ends its table with when a signal (`signal`, its name:
/// `SIGINT`) cut it short: the signal, the run it was in, the runs it never started (if any),
/// and what it therefore does not conclude.
pub fn interrupted_line(
    signal: &str,
    during: &str,
    not_measured: Option<String>,
    withheld: &str,
) -> String {
    let rest = not_measured.map_or(String::new(), |n| format!("; {n}"));
    format!("interrupted by {signal} during {during}{rest}: {withheld}\n")
}

#[cfg(test)]
pub(crate) mod tests_support {
    use std::path::PathBuf;
    use std::time::Duration;

    use hostmax_aggregate::{summarize, HostReport, TimeSeries};
    use hostmax_engine::{
        DeviceInterval, DeviceResult, ErrorLog, IoErrorSample, IoPattern, OpKind, OpResult, PerOp,
        RunResult, Workload,
    };

    fn op(n: u64, latency_ns: u64, bs: u64) -> OpResult {
        let mut o = OpResult::default();
        for i in 0..n {
            // Spread over 1x..2x so percentiles differ.
            o.latency.record(latency_ns + latency_ns * i / n).unwrap();
        }
        o.ios = n;
        o.bytes = n * bs;
        o
    }

    /// Two devices over 2 s of randrw: /dev/loop0 3000 reads + 1000 writes, /dev/loop11 1000
    /// reads and 2 EIO errors.
    pub(crate) fn sample_report() -> HostReport {
        let mut errors = ErrorLog::default();
        for offset in [8192, 16384] {
            errors.record(IoErrorSample::new(OpKind::Write, offset, 4096, 5, 0));
        }
        let mut result = RunResult::default();
        result.devices = vec![
            DeviceResult::new(
                PathBuf::from("/dev/loop0"),
                0,
                PerOp::default()
                    .with(OpKind::Read, op(3000, 200_000, 4096))
                    .with(OpKind::Write, op(1000, 1_500_000, 4096)),
            ),
            {
                let mut d = DeviceResult::new(
                    PathBuf::from("/dev/loop11"),
                    1,
                    PerOp::default().with(OpKind::Read, op(1000, 90_000, 4096)),
                );
                d.errors = errors;
                d
            },
        ];
        result.measured = Duration::from_secs(2);
        result.workload = Workload::default()
            .with_pattern(IoPattern::RandRw)
            .with_rwmixread(70);
        let mut series = TimeSeries::new(2);
        for device in 0..2 {
            for second in 0..2 {
                series.push(DeviceInterval::new(
                    device,
                    second,
                    PerOp::default().with(OpKind::Read, op(1, 100_000 * (device as u64 + 1), 4096)),
                    0,
                ));
            }
        }
        summarize(&result, series.into_points())
    }
}
