//! What `hostmax replay` reads of a trace: any bytes, as every format, through the gzip, zstd
//! and tar detection. Never panics, never allocates what a header claims (tar's extended
//! headers are capped), and what it yields keeps the reader's promises: times never go back,
//! a read, write or trim has a length and an end within 2^64, a flush has neither. An iolog's
//! I/Os written by `IologWriter` read back as the same I/Os.
#![no_main]

use hostmax_trace::{IologWriter, TraceFormat, TraceIo, TraceReader};
use libfuzzer_sys::fuzz_target;

/// More I/Os than any input of the fuzzer's sizes holds, but a bound on a zstd bomb's.
const MOST_IOS: usize = 100_000;

fuzz_target!(|data: &[u8]| {
    for format in TraceFormat::ALL {
        let Ok(reader) = TraceReader::new("fuzz", data, format) else {
            continue;
        };
        let mut ios: Vec<TraceIo> = Vec::new();
        for io in reader.take(MOST_IOS) {
            let Ok(io) = io else {
                // A refusal renders as one line.
                let err = io.unwrap_err();
                assert!(!err.to_string().contains('\n'), "{err}");
                break;
            };
            assert!(io.time_ns >= ios.last().map_or(0, |last| last.time_ns));
            if io.op.has_range() {
                assert!(io.len > 0 && io.offset.checked_add(io.len).is_some());
            } else {
                assert_eq!((io.offset, io.len), (0, 0));
            }
            ios.push(io);
        }
        if format == TraceFormat::FioIolog && !ios.is_empty() {
            let mut log = IologWriter::new(Vec::new()).unwrap();
            for io in &ios {
                log.write_trace_io(io).expect("an iolog's own names and lengths are writable");
            }
            let text = log.finish().unwrap();
            let again: Vec<TraceIo> = TraceReader::new("again", &text[..], format)
                .unwrap()
                .map(|io| io.expect("a written log reads back"))
                .collect();
            assert_eq!(again, ios);
        }
    }
});
