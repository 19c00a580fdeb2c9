//! fio as the oracle of the iolog format (issue 42, item 7): an iolog fio wrote reads as the
//! I/Os fio issued, and the same I/Os written back by `IologWriter` replay in fio to the same
//! I/Os; an `IologWriter` log of I/Os made here replays in fio, I/O for I/O, on its timestamps.
//! What fio issued is read off its own per-I/O latency log (`write_lat_log` with
//! `log_offset=1`: direction, size and offset of every read and write) and its JSON counts,
//! not off the iolog under test. Debian's fio (3.33) is installed if missing.

// The harness's part that needs no hostmax binary (this package has none).
#[path = "../../../tests/support/volumes.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use hostmax_trace::{
    DeviceKey, DeviceMap, IologWriter, TraceFormat, TraceIo, TraceOp, TraceReader, TraceStats,
};
use support::*;

const FILE_BYTES: u64 = 4 << 20;

/// (op, offset, length) of each read and write, how many times each.
type IoCounts = BTreeMap<(TraceOp, u64, u64), u64>;

fn counted(ios: impl IntoIterator<Item = (TraceOp, u64, u64)>) -> IoCounts {
    let mut counts = IoCounts::new();
    for io in ios {
        *counts.entry(io).or_default() += 1;
    }
    counts
}

/// What one fio run issued: its latency log's reads and writes, and its JSON's counts by
/// direction (read, write, sync).
struct FioRun {
    issued: IoCounts,
    total_ios: [u64; 3],
    runtime_ms: u64,
}

fn fio() -> Option<PathBuf> {
    match require_tool("fio", "fio") {
        Ok(fio) => Some(fio),
        Err(why) => {
            say_skipped(&why);
            None
        }
    }
}

/// Runs fio with `args` in `dir`, each I/O logged to `dir/NAME_lat.1.log`, and reads what it
/// issued.
fn run_fio(fio: &Path, dir: &Path, name: &str, args: &[String]) -> FioRun {
    let lat_prefix = dir.join(name);
    let out = Command::new(fio)
        .current_dir(dir)
        .arg(format!("--name={name}"))
        .args(args)
        .arg(format!("--write_lat_log={}", lat_prefix.display()))
        .args(["--log_offset=1", "--output-format=json"])
        .output()
        .expect("run fio");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "fio {args:?} failed: {stderr}");
    assert!(
        !stderr.contains("iolog"),
        "fio complained of the iolog: {stderr}"
    );
    let json = String::from_utf8_lossy(&out.stdout);
    let total = |dir: &str| -> u64 {
        // `"read" : { ... "total_ios" : N,` within the one job.
        let at = json
            .find(&format!("\"{dir}\" : {{"))
            .unwrap_or_else(|| panic!("no {dir} in fio's JSON: {json}"));
        let rest = &json[at..];
        let field = rest.find("\"total_ios\" : ").expect("total_ios") + 14;
        rest[field..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let runtime_ms = {
        let at = json.find("\"job_runtime\" : ").expect("job_runtime") + 16;
        json[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let log = std::fs::read_to_string(format!("{}_lat.1.log", lat_prefix.display()))
        .expect("fio's latency log");
    let issued = counted(log.lines().map(|line| {
        // time, latency, direction, size, offset, priority
        let f: Vec<u64> = line
            .split(", ")
            .map(|v| v.trim().parse().unwrap())
            .collect();
        let op = match f[2] {
            0 => TraceOp::Read,
            1 => TraceOp::Write,
            2 => TraceOp::Trim,
            other => panic!("direction {other} in {line}"),
        };
        (op, f[4], f[3])
    }));
    FioRun {
        issued,
        total_ios: [total("read"), total("write"), total("sync")],
        runtime_ms,
    }
}

fn ranged(ios: &[TraceIo]) -> IoCounts {
    counted(
        ios.iter()
            .filter(|io| io.op.has_range())
            .map(|io| (io.op, io.offset, io.len)),
    )
}

/// A sparse file of [`FILE_BYTES`] in `dir`, its path.
fn sparse_file(dir: &ScratchDir, name: &str) -> PathBuf {
    let (_, path) = dir
        .new_file(name, FILE_BYTES)
        .unwrap_or_else(|e| panic!("make {name}: {e}"));
    path
}

/// fio's own `write_iolog` over two files, with syncs, reads as the I/Os fio issued; those
/// I/Os written back by `IologWriter` onto two other files replay in fio to the same I/Os.
#[test]
fn an_iolog_fio_wrote_reads_and_replays_as_the_ios_fio_issued() {
    let Some(fio) = fio() else { return };
    let dir = ScratchDir::new("trace-fio-log");
    for name in ["a.img", "b.img"] {
        sparse_file(&dir, name);
    }
    let log = dir.join("recorded.iolog");
    let recorded = run_fio(
        &fio,
        &dir.0,
        "record",
        &[
            "--filename=a.img:b.img".into(),
            "--file_service_type=roundrobin".into(),
            "--rw=randrw".into(),
            "--rwmixread=60".into(),
            "--bssplit=4k/50:16k/30:64k/20".into(),
            "--ioengine=psync".into(),
            format!("--size={}", 2 * FILE_BYTES),
            "--number_ios=300".into(),
            "--fsync=16".into(),
            format!("--write_iolog={}", log.display()),
        ],
    );

    assert_eq!(
        recorded.issued.values().sum::<u64>(),
        300,
        "fio's reads and writes"
    );
    let reader = TraceReader::open(&log, TraceFormat::FioIolog).unwrap();
    let ios: Vec<TraceIo> = reader.map(Result::unwrap).collect();
    assert_eq!(ranged(&ios), recorded.issued, "the reader's I/Os are fio's");
    let stats = TraceStats::of(&ios);
    assert_eq!(
        [
            stats.count(TraceOp::Read),
            stats.count(TraceOp::Write),
            stats.count(TraceOp::Flush)
        ],
        recorded.total_ios
    );
    assert!(recorded.total_ios[2] > 0, "the run synced");
    assert_eq!(stats.devices().len(), 2);
    assert!(ios.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    assert!(stats.last_ns <= (recorded.runtime_ms + 1) * 1_000_000);

    // The same I/Os onto two other files, through a device map, written as a log fio
    // replays.
    let mut map = DeviceMap::new();
    for (from, to) in [("a.img", "c.img"), ("b.img", "d.img")] {
        let target = sparse_file(&dir, to);
        map.insert(DeviceKey::name(from), target.display().to_string())
            .unwrap();
    }
    let replay_log = dir.join("written.iolog");
    let mut writer = IologWriter::new(std::fs::File::create(&replay_log).unwrap()).unwrap();
    for io in &ios {
        let file = writer.add_file(map.target(&io.device).unwrap()).unwrap();
        writer
            .write_io(io.time_ns, file, io.op, io.offset, io.len)
            .unwrap();
    }
    writer.finish().unwrap();
    let replayed = run_fio(
        &fio,
        &dir.0,
        "replay",
        &[
            format!("--read_iolog={}", replay_log.display()),
            "--ioengine=psync".into(),
        ],
    );
    assert_eq!(
        replayed.issued, recorded.issued,
        "fio replays the I/Os it recorded"
    );
    assert_eq!(replayed.total_ios, recorded.total_ios);
}

/// A log `IologWriter` made of I/Os made here replays in fio: every read and write at its
/// offset and size, every sync, over at least the span of its timestamps; and fio's
/// `replay_redirect` sends it all to another file.
#[test]
fn fio_replays_an_iolog_the_writer_made_on_its_timestamps() {
    let Some(fio) = fio() else { return };
    let dir = ScratchDir::new("trace-fio-replay");
    let target = sparse_file(&dir, "target.img");
    let name = target.display().to_string();
    // 400 I/Os, one every 500 us (a 200 ms span): reads and writes of 4-64 KiB, a sync in 25.
    let mut ios = Vec::new();
    let mut draw = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..400u64 {
        draw ^= draw << 13;
        draw ^= draw >> 7;
        draw ^= draw << 17;
        let len = 4096 << (draw % 5);
        let offset = (draw >> 8) % (FILE_BYTES / len) * len;
        let op = match i % 25 {
            24 => TraceOp::Flush,
            n if n % 3 == 0 => TraceOp::Write,
            _ => TraceOp::Read,
        };
        let (offset, len) = if op == TraceOp::Flush {
            (0, 0)
        } else {
            (offset, len)
        };
        ios.push(TraceIo::new(
            i * 500_000,
            DeviceKey::name(&name),
            op,
            offset,
            len,
        ));
    }
    let log = dir.join("made.iolog");
    let mut writer = IologWriter::new(std::fs::File::create(&log).unwrap()).unwrap();
    ios.iter().for_each(|io| writer.write_trace_io(io).unwrap());
    assert_eq!(writer.ios(), 400);
    writer.finish().unwrap();
    let stats = TraceStats::of(&ios);
    let expected = [
        stats.count(TraceOp::Read),
        stats.count(TraceOp::Write),
        stats.count(TraceOp::Flush),
    ];

    let replayed = run_fio(
        &fio,
        &dir.0,
        "replay",
        &[
            format!("--read_iolog={}", log.display()),
            "--ioengine=psync".into(),
        ],
    );
    assert_eq!(replayed.issued, ranged(&ios));
    assert_eq!(replayed.total_ios, expected);
    // fio waits out each line's time: the replay lasts the log's span (199.5 ms), give or
    // take its millisecond clock.
    assert!(
        replayed.runtime_ms >= 190,
        "fio ran {} ms",
        replayed.runtime_ms
    );

    let other = sparse_file(&dir, "other.img");
    let redirected = run_fio(
        &fio,
        &dir.0,
        "redirect",
        &[
            format!("--read_iolog={}", log.display()),
            format!("--replay_redirect={}", other.display()),
            "--replay_no_stall=1".into(),
            "--ioengine=psync".into(),
        ],
    );
    assert_eq!(redirected.issued, ranged(&ios));
    assert_eq!(redirected.total_ios, expected);
}
