//! The benches' traces, made in memory: `lines` rows of each format over 1000 devices (4 files
//! for an iolog), times rising 10 us a row.

use std::io::Write;

use hostmax_trace::TraceFormat;

/// The text of a trace of `lines` rows in `format`, starting at row `from`.
pub fn trace_text(format: TraceFormat, from: u64, lines: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines as usize * 48);
    if format == TraceFormat::FioIolog && from == 0 {
        out.extend_from_slice(b"fio version 3 iolog\n");
        for f in 0..4 {
            writeln!(out, "0 /dev/vol{f} add").unwrap();
        }
    }
    for i in from..from + lines {
        let offset = (i.wrapping_mul(7919) % 262_144) * 4096;
        let write = i.is_multiple_of(3);
        match format {
            TraceFormat::FioIolog => writeln!(
                out,
                "{} /dev/vol{} {} {offset} 4096",
                i * 10,
                i % 4,
                if write { "write" } else { "read" }
            ),
            TraceFormat::Tencent => writeln!(
                out,
                "{},{},8,{},{}",
                1_538_323_199 + i / 100_000,
                offset / 512,
                u8::from(write),
                i % 1000
            ),
            _ => writeln!(
                out,
                "{},{},{offset},4096,{}",
                i % 1000,
                if write { 'W' } else { 'R' },
                1_577_808_000_000_000 + i * 10
            ),
        }
        .unwrap();
    }
    out
}

/// `text` gzip-compressed.
pub fn gzip(text: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text).unwrap();
    e.finish().unwrap()
}

/// `text` zstd-compressed.
pub fn zstd(text: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(text, ruzstd::encoding::CompressionLevel::Fastest)
}
