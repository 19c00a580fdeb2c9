//! Criterion benches of reading traces, per line (criterion's "elements" are lines):
//!
//! - `read/{alibaba,tencent,iolog_v3}`: `TraceReader` over plain text in memory, each I/O
//!   taken (parse, time and order rules).
//! - `read/alibaba_gzip`, `read/alibaba_zstd`: the same rows compressed (decompression in).
//! - `check/alibaba`: `TraceReader::check`, the pass a replay makes before its first I/O
//!   (per-device stats of 1000 devices added).
//!
//! `cargo bench -p hostmax-trace --bench parse` (about a minute);
//! `-- --test` runs each once. The memory side is the `rss` bench.

use std::hint::black_box;
use std::io::Cursor;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hostmax_trace::{TraceFormat, TraceReader};

mod generated;
use generated::{gzip, trace_text, zstd};

/// Rows per iteration: enough that a reader's set-up is lost in them.
const LINES: u64 = 100_000;

fn read_all(bytes: &[u8], format: TraceFormat) -> u64 {
    let reader = TraceReader::new("bench", Cursor::new(bytes), format).unwrap();
    reader.map(|io| black_box(io.unwrap()).len).sum()
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("read");
    group.throughput(Throughput::Elements(LINES));
    for (name, format) in [
        ("alibaba", TraceFormat::Alibaba),
        ("tencent", TraceFormat::Tencent),
        ("iolog_v3", TraceFormat::FioIolog),
    ] {
        let text = trace_text(format, 0, LINES);
        group.bench_function(name, |b| b.iter(|| read_all(&text, format)));
    }
    let text = trace_text(TraceFormat::Alibaba, 0, LINES);
    let packed = gzip(&text);
    group.bench_function("alibaba_gzip", |b| {
        b.iter(|| read_all(&packed, TraceFormat::Alibaba))
    });
    let packed = zstd(&text);
    group.bench_function("alibaba_zstd", |b| {
        b.iter(|| read_all(&packed, TraceFormat::Alibaba))
    });
    group.finish();

    let mut group = c.benchmark_group("check");
    group.throughput(Throughput::Elements(LINES));
    group.bench_function("alibaba", |b| {
        b.iter(|| {
            let reader = TraceReader::new("bench", Cursor::new(&text), TraceFormat::Alibaba);
            black_box(reader.unwrap().check().unwrap().ios)
        })
    });
    group.finish();
}

criterion_group! {
    name = trace;
    config = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(20);
    targets = benches
}
criterion_main!(trace);
