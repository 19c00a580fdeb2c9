//! Traces packed as their publishers and users pack them, by the real tools: a Tencent-style
//! hourly `.tgz` made by GNU tar, an Alibaba `io_traces.csv` by `zstd` (its frame checksum
//! on, and as several frames with `--long` off) and by `gzip` twice concatenated (as `pigz`
//! and log rotation leave them). Each reads as the same I/Os as the plain text. The tools come
//! from Debian's packages (installed if missing).

#[path = "../../../tests/support/volumes.rs"]
mod support;

use std::path::Path;
use std::process::Command;

use hostmax_trace::{Compression, TraceFormat, TraceIo, TraceReader};
use support::*;

fn read(path: &Path, format: TraceFormat) -> (Vec<TraceIo>, Compression, bool) {
    let reader = TraceReader::open(path, format).unwrap();
    let (compression, archive) = (reader.compression(), reader.is_archive());
    let ios = reader.map(|io| io.unwrap()).collect();
    (ios, compression, archive)
}

fn run(tool: &Path, args: &[&str], dir: &Path) {
    let out = Command::new(tool)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", tool.display()));
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        tool.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Rows of Alibaba's format, `from` on, 10 us apart.
fn alibaba_rows(from: u64, count: u64) -> String {
    (from..from + count)
        .map(|i| {
            format!(
                "{},R,{},4096,{}\n",
                i % 7,
                i * 4096,
                1_577_808_000_000_000 + i * 10
            )
        })
        .collect()
}

#[test]
fn tools_packed_traces_read_as_their_plain_text() {
    let tools = ["tar", "gzip", "zstd"].map(|tool| match require_tool(tool, tool) {
        Ok(path) => Some(path),
        Err(why) => {
            say_skipped(&why);
            None
        }
    });
    let [Some(tar), Some(gzip), Some(zstd)] = tools else {
        return;
    };
    let dir = ScratchDir::new("trace-packed");
    let dir_path = dir.0.clone();

    // Tencent: two hourly CSV files in one gzip-compressed tar, as SNIA publishes them.
    let hours = ["2018-10-01-00", "2018-10-01-01"];
    let mut tencent = String::new();
    for (h, name) in hours.iter().enumerate() {
        let rows: String = (0..500)
            .map(|i| {
                format!(
                    "{},{},8,{},{}\n",
                    1_538_323_200 + h * 3600 + i / 100,
                    i * 8,
                    i % 2,
                    i % 13
                )
            })
            .collect();
        std::fs::write(dir.join(name), &rows).unwrap();
        tencent.push_str(&rows);
    }
    std::fs::write(dir.join("tencent.csv"), &tencent).unwrap();
    run(
        &tar,
        &["czf", "2018-10-01.tgz", hours[0], hours[1]],
        &dir_path,
    );
    let (plain, _, _) = read(&dir.join("tencent.csv"), TraceFormat::Tencent);
    assert_eq!(plain.len(), 1000);
    let (packed, compression, archive) = read(&dir.join("2018-10-01.tgz"), TraceFormat::Tencent);
    assert_eq!((compression, archive), (Compression::Gzip, true));
    assert_eq!(packed, plain);

    // Alibaba: zstd with its checksum, and zstd of two files concatenated (two frames).
    let first = alibaba_rows(0, 3000);
    let second = alibaba_rows(3000, 3000);
    std::fs::write(dir.join("io_traces.csv"), format!("{first}{second}")).unwrap();
    std::fs::write(dir.join("first.csv"), &first).unwrap();
    std::fs::write(dir.join("second.csv"), &second).unwrap();
    let (plain, _, _) = read(&dir.join("io_traces.csv"), TraceFormat::Alibaba);
    assert_eq!(plain.len(), 6000);
    run(
        &zstd,
        &["-q", "-19", "--check", "io_traces.csv", "-o", "one.zst"],
        &dir_path,
    );
    run(&zstd, &["-q", "first.csv", "-o", "first.zst"], &dir_path);
    run(&zstd, &["-q", "second.csv", "-o", "second.zst"], &dir_path);
    let frames = [
        std::fs::read(dir.join("first.zst")).unwrap(),
        std::fs::read(dir.join("second.zst")).unwrap(),
    ]
    .concat();
    std::fs::write(dir.join("two.zst"), frames).unwrap();
    // gzip: two members, one after the other.
    run(&gzip, &["-k", "first.csv", "second.csv"], &dir_path);
    let members = [
        std::fs::read(dir.join("first.csv.gz")).unwrap(),
        std::fs::read(dir.join("second.csv.gz")).unwrap(),
    ]
    .concat();
    std::fs::write(dir.join("two.gz"), members).unwrap();
    for (name, compression) in [
        ("one.zst", Compression::Zstd),
        ("two.zst", Compression::Zstd),
        ("two.gz", Compression::Gzip),
    ] {
        let (packed, got, archive) = read(&dir.join(name), TraceFormat::Alibaba);
        assert_eq!((got, archive), (compression, false), "{name}");
        assert_eq!(packed, plain, "{name}");
    }

    // A damaged zstd frame is refused as unreadable, not read as fewer I/Os.
    let mut damaged = std::fs::read(dir.join("one.zst")).unwrap();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x55;
    std::fs::write(dir.join("damaged.zst"), damaged).unwrap();
    // (Found as soon as the reader looks at the first bytes, or later: where the damage is.)
    let refused = match TraceReader::open(dir.join("damaged.zst"), TraceFormat::Alibaba) {
        Err(refused) => refused,
        Ok(mut reader) => reader
            .find_map(Result::err)
            .expect("a damaged frame is refused"),
    };
    assert_eq!(
        refused.kind(),
        hostmax_trace::TraceErrorKind::Unreadable,
        "{refused}"
    );
}
