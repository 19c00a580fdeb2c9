//! Criterion benches of hostmax's per-I/O and per-run hot paths.
//!
//! - `histogram/record`: one [`record_latency`] into the engine's latency histogram (from
//!   1 ns, 3 significant figures, growing to 1 h), as every completion does.
//! - `histogram/add` and `histogram/host_merge_32`: adding two such histograms, and
//!   [`HostHistograms::merge`] of a 32-device [`RunResult`] (what the host report costs).
//! - `offsets/*`: [`OffsetStream::next_offset`] random and sequential, and
//!   [`OffsetStream::next_op`] for a 70/30 mix, as every submission does.
//! - `report/summarize_32`: [`summarize`] of a 32-device result.
//! - `write_data/*`: making one 4 KiB pool block unique ([`BlockMaker::stamp_unique`]: a
//!   fresh word every 4 KiB), incompressible and 50% compressible, against a
//!   plain 4 KiB copy for scale; what every write pays by default.
//! - `engine/io_cycle_tmpfs_file`: whole submit-complete cycles through the engine (fill a
//!   slot, submit in a batch, reap, account the completion, record its latency) on a file in
//!   /dev/shm, per I/O: the completion-handling path end to end, kernel copy included. It is
//!   skipped, with a message, where /dev/shm is missing or refuses O_DIRECT.
//!
//! Measurement time is cut to ~2 s per bench so the whole file runs in about a minute;
//! `cargo bench --bench hot_paths -- --test` runs each once as a smoke test.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use hdrhistogram::Histogram;
use hostmax_aggregate::{summarize, HostHistograms};
use hostmax_engine::{
    measure, new_latency_histogram, record_latency, BlockMaker, DeviceResult, IoPattern,
    MeasureRequest, Observer, OffsetStream, OpKind, OpResult, PerOp, RunHandle, RunResult,
    Workload, WriteData,
};

/// Devices in the synthetic run: the top of the 20-32 volume range hostmax is built for.
const DEVICES: usize = 32;
/// Latencies recorded per device histogram: enough to fill the bins a real run fills.
const SAMPLES_PER_DEVICE: usize = 200_000;
/// Values recorded per `histogram/record` iteration.
const RECORD_BATCH: usize = 4096;

/// A deterministic latency sample in nanoseconds: mostly 20-200 µs with a tail to ~50 ms,
/// spread over many histogram buckets as a loaded device's latencies are.
fn latencies(seed: u64, n: usize) -> Vec<u64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            // splitmix64
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            let base = 20_000 + z % 180_000;
            // One I/O in 1024 lands in the tail, up to 250x the base.
            if z >> 54 == 0 {
                base * (1 + (z >> 8) % 250)
            } else {
                base
            }
        })
        .collect()
}

fn filled_histogram(seed: u64) -> Histogram<u64> {
    let mut h = new_latency_histogram();
    for v in latencies(seed, SAMPLES_PER_DEVICE) {
        record_latency(&mut h, v);
    }
    h
}

/// A 32-device 4k randrw result, 10 s measured, with full read and write histograms.
fn synthetic_result() -> RunResult {
    let devices = (0..DEVICES)
        .map(|i| {
            let of_4k = |latency: Histogram<u64>| {
                OpResult::new(latency.len(), latency.len() * 4096, latency)
            };
            let read = filled_histogram(i as u64 * 2 + 1);
            let write = filled_histogram(i as u64 * 2 + 2);
            DeviceResult::new(
                PathBuf::from(format!("/dev/loop{i}")),
                i % 2,
                PerOp::default()
                    .with(OpKind::Read, of_4k(read))
                    .with(OpKind::Write, of_4k(write)),
            )
        })
        .collect();
    let mut result = RunResult::default();
    result.devices = devices;
    result.measured = Duration::from_secs(10);
    result.workload = Workload::default().with_pattern(IoPattern::RandRw);
    result
}

fn histogram_benches(c: &mut Criterion) {
    let values = latencies(42, RECORD_BATCH);
    let mut group = c.benchmark_group("histogram");
    group.throughput(Throughput::Elements(RECORD_BATCH as u64));
    group.bench_function("record", |b| {
        let mut h = new_latency_histogram();
        b.iter(|| {
            for &v in &values {
                record_latency(&mut h, black_box(v));
            }
        })
    });

    group.throughput(Throughput::Elements(1));
    let a = filled_histogram(1);
    let other = filled_histogram(2);
    group.bench_function("add", |b| {
        b.iter_batched_ref(
            || a.clone(),
            |dest| dest.add(black_box(&other)).expect("same bounds"),
            BatchSize::LargeInput,
        )
    });

    let result = synthetic_result();
    group.bench_function("host_merge_32", |b| {
        b.iter(|| HostHistograms::merge(black_box(&result)))
    });
    group.finish();
}

fn offset_benches(c: &mut Criterion) {
    const BATCH: u64 = 4096;
    let working_set = 256u64 << 20;
    let workload = |pattern, rwmixread| {
        Workload::default()
            .with_pattern(pattern)
            .with_rwmixread(rwmixread)
    };
    let mut group = c.benchmark_group("offsets");
    group.throughput(Throughput::Elements(BATCH));

    let mut random = OffsetStream::new(&workload(IoPattern::RandRead, 50), working_set, 7, 3);
    group.bench_function("next_offset_random", |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                black_box(random.next_offset());
            }
        })
    });

    let mut sequential = OffsetStream::new(&workload(IoPattern::Read, 50), working_set, 7, 3);
    group.bench_function("next_offset_sequential", |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                black_box(sequential.next_offset());
            }
        })
    });

    let mut mixed = OffsetStream::new(&workload(IoPattern::RandRw, 70), working_set, 7, 3);
    group.bench_function("next_op_70", |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                black_box(mixed.next_op());
            }
        })
    });
    group.finish();
}

fn write_data_benches(c: &mut Criterion) {
    const BS: usize = 4096;
    let mut group = c.benchmark_group("write_data");
    group.throughput(Throughput::Bytes(BS as u64));
    for (name, compress_percent) in [("stamp_4k", 0u8), ("stamp_4k_compress_50", 50)] {
        let mut maker = BlockMaker::new(
            WriteData::default()
                .with_compress_percent(compress_percent)
                .with_dedupe_percent(0)
                .with_verify(false),
            1,
            0,
        );
        let mut buf = vec![0u8; BS];
        maker.fill_pool(&mut buf);
        group.bench_function(name, |b| {
            b.iter(|| {
                let key = maker.next_key().unwrap_or_default();
                maker.stamp_unique(black_box(&mut buf), key);
            })
        });
    }
    let src = vec![7u8; BS];
    let mut dst = vec![0u8; BS];
    group.bench_function("copy_4k", |b| {
        b.iter(|| dst.copy_from_slice(black_box(&src)))
    });
    group.finish();
}

fn report_benches(c: &mut Criterion) {
    let result = synthetic_result();
    let mut group = c.benchmark_group("report");
    // ~12 ms an iteration: fewer samples keep it within the 2 s measurement.
    group.sample_size(10);
    group.bench_function("summarize_32", |b| {
        b.iter(|| summarize(black_box(&result), Vec::new()))
    });
    group.finish();
}

/// Holds `measure` in [`Observer::started`] until the run ends, looking every 50 µs:
/// `measure` itself looks every 50 ms in a run without live intervals, which would be most of
/// an iteration.
struct WaitForTheEnd;

impl Observer for WaitForTheEnd {
    fn started(&mut self, run: &RunHandle) {
        while !run.is_finished() {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// I/Os per `engine/io_cycle_tmpfs_file` iteration: enough that thread and ring setup
/// (a few hundred microseconds) stay a small part of it.
const ENGINE_IOS: u64 = 50_000;

fn engine_benches(c: &mut Criterion) {
    let dir = PathBuf::from("/dev/shm").join(format!("hostmax-bench-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        eprintln!(
            "engine/io_cycle_tmpfs_file skipped: cannot create {}",
            dir.display()
        );
        return;
    }
    let file = dir.join("volume.img");
    let made = std::fs::File::create(&file).and_then(|f| f.set_len(64 << 20));
    let workload = Workload::default()
        .with_pattern(IoPattern::RandRead)
        .with_iodepth(32)
        .with_runtime(Duration::from_secs(600))
        .with_ramp(Duration::ZERO)
        .with_io_limit(Some(ENGINE_IOS * 4096));
    let run = || {
        // A read run: `measure` makes no write-safety check, so the bench times the engine.
        let mut request = MeasureRequest::new(vec![file.clone()], workload.clone());
        request.run.live = false;
        measure(request, &mut WaitForTheEnd)
    };
    match made
        .map_err(|e| e.to_string())
        .and_then(|()| run().map_err(|e| e.to_string()))
    {
        Ok(_) => {
            let mut group = c.benchmark_group("engine");
            group.throughput(Throughput::Elements(ENGINE_IOS));
            group.sample_size(10);
            group.bench_function("io_cycle_tmpfs_file", |b| {
                b.iter(|| {
                    let result = run().expect("the engine runs on the scratch file");
                    assert_eq!(result.devices[0].ops[OpKind::Read].ios, ENGINE_IOS);
                })
            });
            group.finish();
        }
        Err(e) => eprintln!("engine/io_cycle_tmpfs_file skipped: {e}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn quick() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group! {
    name = hot_paths;
    config = quick();
    targets = histogram_benches, offset_benches, write_data_benches, report_benches, engine_benches
}
criterion_main!(hot_paths);
