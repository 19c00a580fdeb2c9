//! Memory stays flat whatever a trace's size (issue 42: "a 2 GB trace under 64 MiB RSS"):
//! `TraceReader::check` over 2 GB of Alibaba rows made as they are read, plain, gzip and
//! zstd, each with the process's peak RSS (`VmHWM`, reset before each through
//! `/proc/self/clear_refs`). Prints rows, speed and peak; exits 1 if a peak reaches 64 MiB.
//!
//! `cargo bench -p hostmax-trace --bench rss` (about half a minute).
//! The compressed streams repeat one compressed chunk (held in memory, so counted in the
//! RSS, where a file's bytes would not be) as gzip members or zstd frames, so their times
//! restart each chunk: the order tolerance is lifted for them.

use std::io::{BufReader, Cursor, Read};
use std::time::{Duration, Instant};

use hostmax_trace::{TraceFormat, TraceReader};

mod generated;
use generated::{gzip, trace_text, zstd};

const TOTAL_BYTES: u64 = 2_000_000_000;
const LIMIT_BYTES: u64 = 64 << 20;
/// Rows per generated or compressed chunk.
const CHUNK_LINES: u64 = 100_000;

/// Alibaba rows made chunk by chunk as they are read, until the chunk that passes
/// `TOTAL_BYTES`.
struct Rows {
    chunk: Cursor<Vec<u8>>,
    next_row: u64,
    given: u64,
}

impl Read for Rows {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.chunk.position() == self.chunk.get_ref().len() as u64 {
            // Whole rows only: stop at a chunk's end.
            if self.given >= TOTAL_BYTES {
                return Ok(0);
            }
            let text = trace_text(TraceFormat::Alibaba, self.next_row, CHUNK_LINES);
            self.next_row += CHUNK_LINES;
            self.chunk = Cursor::new(text);
        }
        let n = self.chunk.read(buf)?;
        self.given += n as u64;
        Ok(n)
    }
}

/// One compressed chunk, given again and again until it decompresses to `TOTAL_BYTES`.
struct Repeated {
    chunk: Vec<u8>,
    at: usize,
    left: u64,
}

impl Read for Repeated {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.chunk.len() {
            if self.left == 0 {
                return Ok(0);
            }
            self.left -= 1;
            self.at = 0;
        }
        let n = (self.chunk.len() - self.at).min(buf.len());
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    kib * 1024
}

fn reset_peak_rss() {
    // "5" resets the peak resident set size (Linux 4.0+).
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM");
}

/// Checks `reader` whole and says what it took; false if the peak reached the limit.
fn run(name: &str, reader: TraceReader<'_>) -> bool {
    let start = Instant::now();
    let stats = reader.check().expect("a generated trace is well formed");
    let took = start.elapsed();
    let peak = peak_rss_bytes();
    println!(
        "{name:>6}: {} rows in {:.1} s ({:.0} ns a row, {} devices), peak RSS {:.1} MiB",
        stats.ios,
        took.as_secs_f64(),
        took.as_nanos() as f64 / stats.ios as f64,
        stats.devices().len(),
        peak as f64 / (1 << 20) as f64
    );
    peak < LIMIT_BYTES
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs it too, once, quickly.
    if std::env::args().any(|a| a == "--test" || a == "--list") || !cfg!(target_os = "linux") {
        return;
    }
    let mut all_under = true;

    reset_peak_rss();
    let rows = Rows {
        chunk: Cursor::new(Vec::new()),
        next_row: 0,
        given: 0,
    };
    let reader = TraceReader::new("plain", BufReader::new(rows), TraceFormat::Alibaba).unwrap();
    all_under &= run("plain", reader);

    let text = trace_text(TraceFormat::Alibaba, 0, CHUNK_LINES);
    let repeats = TOTAL_BYTES / text.len() as u64;
    for (name, chunk) in [("gzip", gzip(&text)), ("zstd", zstd(&text))] {
        reset_peak_rss();
        let stream = Repeated {
            chunk,
            at: 0,
            left: repeats - 1,
        };
        let reader = TraceReader::new(name, BufReader::new(stream), TraceFormat::Alibaba)
            .unwrap()
            .with_order_tolerance(Duration::MAX);
        all_under &= run(name, reader);
    }
    drop(text);
    if !all_under {
        eprintln!("a peak RSS reached {} MiB", LIMIT_BYTES >> 20);
        std::process::exit(1);
    }
}
