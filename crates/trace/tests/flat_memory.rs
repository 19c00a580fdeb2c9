//! A trace streams: reading one allocates nothing per line once it is under way, whatever
//! its length, plain, gzip or zstd, CSV or iolog (issue 42: "memory stays flat whatever its
//! size"). Counted with a global allocator that tallies every allocation; the run over a
//! 2 GB stream, with its peak RSS, is `cargo bench -p hostmax-trace --bench rss`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufReader, Cursor, Read, Write};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use hostmax_trace::{TraceFormat, TraceReader, TraceStats};

/// Every allocation the process makes, and the bytes live now and at most.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call is passed to the system allocator unchanged; the counters are atomics
// and never touch the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        let live = LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed) + layout.size() as i64;
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        let grown = new_size as i64 - layout.size() as i64;
        let live = LIVE.fetch_add(grown, Ordering::Relaxed) + grown;
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator with `layout`, as GlobalAlloc::realloc requires.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// A trace of `total` lines made as it is read, allocating nothing: Alibaba rows over 1000
/// devices, or an fio v3 iolog over 4 files.
struct Generated {
    format: TraceFormat,
    next: u64,
    total: u64,
    line: [u8; 96],
    at: usize,
    len: usize,
}

impl Generated {
    fn new(format: TraceFormat, total: u64) -> Generated {
        Generated {
            format,
            next: 0,
            total,
            line: [0; 96],
            at: 0,
            len: 0,
        }
    }

    fn make_line(&mut self) {
        let i = self.next;
        let mut out = &mut self.line[..];
        let room = out.len();
        match self.format {
            TraceFormat::FioIolog => match i {
                0 => writeln!(out, "fio version 3 iolog"),
                1..=4 => writeln!(out, "0 /dev/vol{} add", i - 1),
                _ => writeln!(
                    out,
                    "{} /dev/vol{} {} {} 4096",
                    i,
                    i % 4,
                    if i.is_multiple_of(3) { "write" } else { "read" },
                    (i * 7919 % 262_144) * 4096
                ),
            },
            _ => writeln!(
                out,
                "{},{},{},4096,{}",
                i % 1000,
                if i.is_multiple_of(3) { 'W' } else { 'R' },
                (i * 7919 % 262_144) * 4096,
                1_577_808_000_000_000 + i * 10
            ),
        }
        .expect("a line fits");
        self.len = room - out.len();
        self.at = 0;
        self.next += 1;
    }
}

impl Read for Generated {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut given = 0;
        while given < buf.len() {
            if self.at == self.len {
                if self.next == self.total {
                    break;
                }
                self.make_line();
            }
            let n = (self.len - self.at).min(buf.len() - given);
            buf[given..given + n].copy_from_slice(&self.line[self.at..self.at + n]);
            self.at += n;
            given += n;
        }
        Ok(given)
    }
}

/// The allocations made and the most bytes live beyond those at the start, over reading
/// every I/O of `reader` but the first `warm_up` (a new device's first I/O adds it to the
/// stats, a reader's first read sets up its decompressor).
fn allocations_after_warm_up(reader: TraceReader<'_>, warm_up: usize) -> (u64, i64, u64) {
    let mut stats = TraceStats::new();
    let mut reader = reader;
    for io in reader.by_ref().take(warm_up) {
        stats.record(&io.unwrap());
    }
    let allocations = ALLOCATIONS.load(Ordering::Relaxed);
    let live = LIVE.load(Ordering::Relaxed);
    PEAK.store(live, Ordering::Relaxed);
    for io in reader {
        stats.record(&io.unwrap());
    }
    (
        ALLOCATIONS.load(Ordering::Relaxed) - allocations,
        PEAK.load(Ordering::Relaxed) - live,
        stats.ios,
    )
}

fn compressed(format: TraceFormat, lines: u64, gzip: bool) -> Vec<u8> {
    let mut text = Vec::new();
    Generated::new(format, lines)
        .read_to_end(&mut text)
        .unwrap();
    if gzip {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&text).unwrap();
        e.finish().unwrap()
    } else {
        ruzstd::encoding::compress_to_vec(&text[..], ruzstd::encoding::CompressionLevel::Fastest)
    }
}

/// One test, so no other test's allocations are counted with it.
#[test]
fn reading_a_trace_allocates_nothing_per_line() {
    const WARM_UP: usize = 2_000;
    // Plain text, 200,000 rows and 20,000: the same (no) allocations either way.
    for lines in [20_000, 200_000] {
        let input = BufReader::new(Generated::new(TraceFormat::Alibaba, lines));
        let reader = TraceReader::new("generated", input, TraceFormat::Alibaba).unwrap();
        let (allocations, grown, ios) = allocations_after_warm_up(reader, WARM_UP);
        assert_eq!(ios, lines);
        assert_eq!((allocations, grown), (0, 0), "{lines} plain Alibaba rows");
    }
    // An iolog: its file names are made once, on their `add` lines.
    let input = BufReader::new(Generated::new(TraceFormat::FioIolog, 100_005));
    let reader = TraceReader::new("generated", input, TraceFormat::FioIolog).unwrap();
    let (allocations, grown, ios) = allocations_after_warm_up(reader, WARM_UP);
    assert_eq!(ios, 100_000);
    assert_eq!((allocations, grown), (0, 0), "an iolog");
    // Compressed: the decompressor's buffers are made at its start and (zstd) grow to the
    // frame's window at most, then stay.
    for gzip in [true, false] {
        let packed = compressed(TraceFormat::Alibaba, 50_000, gzip);
        let reader =
            TraceReader::new("generated", Cursor::new(&packed), TraceFormat::Alibaba).unwrap();
        let (allocations, grown, ios) = allocations_after_warm_up(reader, WARM_UP);
        assert_eq!(ios, 50_000);
        let what = if gzip { "gzip" } else { "zstd" };
        assert!(allocations <= 16, "{what}: {allocations} allocations");
        assert!(grown <= 8 << 20, "{what}: {grown} bytes more at most");
    }
}
