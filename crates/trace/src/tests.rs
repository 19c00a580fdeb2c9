//! The reader's tests, format by format: what each reads, each malformed line it refuses
//! (by name, line and fix), compressed and archived inputs, and the time rules.

use std::io::{Cursor, Write};
use std::time::Duration;

use crate::input::tests::tar_of;
use crate::*;

fn reader(text: &[u8], format: TraceFormat) -> TraceReader<'_> {
    TraceReader::new("t.trace", Cursor::new(text), format).unwrap()
}

fn read_all(text: &[u8], format: TraceFormat) -> Vec<TraceIo> {
    reader(text, format).map(|io| io.unwrap()).collect()
}

/// The error reading `text` gives, after any I/Os before it.
fn refusal(text: &[u8], format: TraceFormat) -> TraceError {
    let mut r = reader(text, format);
    let err = r
        .by_ref()
        .find_map(Result::err)
        .unwrap_or_else(|| panic!("{:?} was read whole", String::from_utf8_lossy(text)));
    assert!(r.next().is_none(), "the reader ends after its error");
    err
}

fn io(t: u64, device: impl Into<DeviceKey>, op: TraceOp, offset: u64, len: u64) -> TraceIo {
    TraceIo::new(t, device.into(), op, offset, len)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zstd(data: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
}

const IOLOG_V3: &str = "fio version 3 iolog\n\
    46 data.img add\n\
    239 data.img open\n\
    246 data.img read 61440 4096\n\
    391 data.img write 774144 8192\n\
    395 data.img trim 0 1048576\n\
    397 data.img sync 0 0\n\
    400 data.img datasync 0 0\n\
    631 data.img close\n";

#[test]
fn an_iolog_v3_is_read_as_fio_wrote_it() {
    let ios = read_all(IOLOG_V3.as_bytes(), TraceFormat::FioIolog);
    assert_eq!(
        ios,
        [
            io(0, "data.img", TraceOp::Read, 61440, 4096),
            io(145_000, "data.img", TraceOp::Write, 774144, 8192),
            io(149_000, "data.img", TraceOp::Trim, 0, 1 << 20),
            io(151_000, "data.img", TraceOp::Flush, 0, 0),
            io(154_000, "data.img", TraceOp::Flush, 0, 0),
        ]
    );
    // One name, shared by every I/O of the file.
    let (DeviceKey::Name(a), DeviceKey::Name(b)) = (&ios[0].device, &ios[4].device) else {
        panic!("iolog devices are names");
    };
    assert!(std::sync::Arc::ptr_eq(a, b));
}

#[test]
fn an_iolog_v2_is_read_with_its_waits() {
    let log = "fio version 2 iolog\n\
        /dev/sdb add\n\
        /dev/sdc add\n\
        /dev/sdb open\n\
        /dev/sdb read 0 4096\n\
        /dev/sdb wait 20 0\n\
        /dev/sdc write 4096 4096\n\
        /dev/sdb wait 5 0\n\
        /dev/sdb read 8192 512\n\
        /dev/sdb wait 50 0\n\
        \n\
        /dev/sdb sync 0 0\n";
    // A wait holds what follows until that many milliseconds after the start (as fio's code
    // does), so a shorter one after it changes nothing.
    assert_eq!(
        read_all(log.as_bytes(), TraceFormat::FioIolog),
        [
            io(0, "/dev/sdb", TraceOp::Read, 0, 4096),
            io(20_000_000, "/dev/sdc", TraceOp::Write, 4096, 4096),
            io(20_000_000, "/dev/sdb", TraceOp::Read, 8192, 512),
            io(50_000_000, "/dev/sdb", TraceOp::Flush, 0, 0),
        ]
    );
}

#[test]
fn malformed_iolog_lines_are_refused_by_line_with_the_fix() {
    let v3 = |body: &str| format!("fio version 3 iolog\n0 f add\n{body}\n");
    let cases: Vec<(String, u64, &str)> = vec![
        ("fio version 1 iolog\n".into(), 1, "version line"),
        ("rw, offset\n".into(), 1, "alibaba or tencent"),
        ("".into(), 0, "empty"),
        (v3("5 f read 0"), 3, "4 fields"),
        (v3("5 f read x 512"), 3, "offset \"x\""),
        (v3("5 f read 0 -1"), 3, "length \"-1\""),
        (v3("5 f read 0 0"), 3, "0 bytes"),
        (v3("5 f read 0 4294967296"), 3, "32-bit"),
        (v3("5 f read 18446744073709551615 2"), 3, "past 2^64"),
        (v3("5 f frobnicate 0 512"), 3, "not one of fio's"),
        (v3("5 g read 0 512"), 3, "before its `add`"),
        (v3("5 g open"), 3, "before its `add`"),
        (v3("5 f wait 10 0"), 3, "version 3"),
        (v3("f read 0 512"), 3, "version 2"),
        (v3("5 f add 0 512"), 3, "no offset or length"),
        (v3("5 f read"), 3, "no offset and length"),
        (v3("18446744073709551615 f read 0 512"), 3, "64-bit"),
        (v3(&format!("5 {} add", "n".repeat(300))), 3, "256"),
        (
            "fio version 2 iolog\nf add\n5 f read 0 512\n".into(),
            3,
            "fio version 3 iolog",
        ),
        (v3("fio version 3 iolog"), 3, "fio appends"),
    ];
    for (text, line, says) in cases {
        let err = refusal(text.as_bytes(), TraceFormat::FioIolog);
        let message = err.to_string();
        assert_eq!(
            err.line(),
            (line > 0).then_some(line),
            "{text:?}: {message}"
        );
        assert!(
            message.contains(says),
            "{text:?}: {message:?} should say {says:?}"
        );
        assert!(message.starts_with("t.trace"), "{message}");
        assert!(!message.contains('\n'), "one line: {message:?}");
    }
}

#[test]
fn alibaba_rows_are_read_in_bytes_and_microseconds() {
    let csv = b"device_id,opcode,offset,length,timestamp\n\
        0,R,126703644672,4096,1577808000000626\n\
        12,W,0,512,1577808000000700\r\n\
        0,W,4096,65536,1577808001000626";
    assert_eq!(
        read_all(csv, TraceFormat::Alibaba),
        [
            io(0, 0, TraceOp::Read, 126703644672, 4096),
            io(74_000, 12, TraceOp::Write, 0, 512),
            io(1_000_000_000, 0, TraceOp::Write, 4096, 65536),
        ]
    );
}

#[test]
fn malformed_alibaba_rows_are_refused() {
    let good = "1,R,0,4096,100\n";
    let cases = [
        ("1,R,0,4096", "4 fields"),
        ("1,R,0,4096,100,7", "6 fields"),
        ("1,X,0,4096,100", "neither R nor W"),
        ("1538323199,0,584,1,1576", "tencent"),
        ("x,R,0,4096,100", "device_id \"x\""),
        ("1,R,-5,4096,100", "offset \"-5\""),
        ("1,R,0,0,100", "0 bytes"),
        ("1,R,0,4096,1.5", "timestamp \"1.5\""),
        ("1,R,0,4096,18446744073709551615", "64-bit"),
        ("device_id,opcode,offset,length,timestamp", "device_id"),
    ];
    for (row, says) in cases {
        let text = format!("{good}{row}\n");
        let err = refusal(text.as_bytes(), TraceFormat::Alibaba);
        assert_eq!(err.line(), Some(2), "{row}");
        assert_eq!(err.kind(), TraceErrorKind::Malformed);
        assert!(err.to_string().contains(says), "{row}: {err}");
    }
}

#[test]
fn alibaba_device_sizes_are_read() {
    let sizes = read_alibaba_device_sizes(
        "device_size.csv",
        Cursor::new("0,536870912000\n7,42949672960\n"),
    )
    .unwrap();
    assert_eq!(sizes.get(&7), Some(&42949672960));
    let err = read_alibaba_device_sizes("device_size.csv", Cursor::new("0,5\n0,6\n")).unwrap_err();
    assert_eq!(err.line(), Some(2));
    assert!(read_alibaba_device_sizes("d", Cursor::new("0,R\n")).is_err());
}

#[test]
fn tencent_rows_are_read_in_sectors_and_seconds() {
    let csv = b"1538323199,105352008,584,1,1576\n\
        1538323199,8,8,0,1576\n\
        1538323201.5,0,1,0,3\n";
    assert_eq!(
        read_all(csv, TraceFormat::Tencent),
        [
            io(0, 1576, TraceOp::Write, 105352008 * 512, 584 * 512),
            io(0, 1576, TraceOp::Read, 4096, 4096),
            io(2_500_000_000, 3, TraceOp::Read, 0, 512),
        ]
    );
}

#[test]
fn malformed_tencent_rows_are_refused() {
    let cases = [
        ("1538323199,8,8,2,1", "neither 0 nor 1"),
        ("1,R,0,4096,100", "alibaba"),
        ("abc,8,8,0,1", "Unix seconds"),
        ("1538323199,8,0,0,1", "0 bytes"),
        ("1538323199,36028797018963968,8,0,1", "past 2^64"),
        ("1538323199,8,8,0,v", "VolumeID"),
        ("1538323199,8,8,0", "4 fields"),
    ];
    for (row, says) in cases {
        let err = refusal(format!("{row}\n").as_bytes(), TraceFormat::Tencent);
        assert_eq!(err.line(), Some(1), "{row}");
        assert!(err.to_string().contains(says), "{row}: {err}");
    }
}

#[test]
fn compressed_traces_are_read_as_their_bytes_say() {
    let csv = b"1,R,0,4096,100\n2,W,4096,4096,200\n";
    let plain = read_all(csv, TraceFormat::Alibaba);
    for (packed, compression) in [
        (gzip(csv), Compression::Gzip),
        (zstd(csv), Compression::Zstd),
    ] {
        let r = reader(&packed, TraceFormat::Alibaba);
        assert_eq!(r.compression(), compression);
        assert!(!r.is_archive());
        assert_eq!(r.map(Result::unwrap).collect::<Vec<_>>(), plain);
    }
}

#[test]
fn a_broken_compressed_trace_is_unreadable_past_its_last_whole_line() {
    let csv: String = (0..5000)
        .map(|i| format!("1,R,{},4096,{i}\n", i * 4096))
        .collect();
    let mut packed = gzip(csv.as_bytes());
    packed.truncate(packed.len() / 2);
    let err = refusal(&packed, TraceFormat::Alibaba);
    assert_eq!(err.kind(), TraceErrorKind::Unreadable);
    assert!(err.line().is_some_and(|l| l > 1), "{err}");
    assert!(err.to_string().contains("truncated"), "{err}");
}

#[test]
fn a_tencent_tgz_is_read_member_by_member() {
    let hour1 = b"1538323199,8,8,0,1\n1538323200,16,8,1,1\n";
    let hour2 = b"1538326800,0,8,0,2\n";
    let archive = gzip(&tar_of(&[
        ("2018-10-01-00", hour1),
        ("2018-10-01-01", hour2),
    ]));
    let r = reader(&archive, TraceFormat::Tencent);
    assert!(r.is_archive());
    assert_eq!(r.compression(), Compression::Gzip);
    let ios: Vec<_> = r.map(Result::unwrap).collect();
    assert_eq!(ios.len(), 3);
    assert_eq!(ios[2].time_ns, 3601 * 1_000_000_000);
    // Lines are numbered within their member, and errors name it.
    let bad = gzip(&tar_of(&[
        ("2018-10-01-00", hour1),
        ("2018-10-01-01", b"1538326800,0,8,0,2\nx\n"),
    ]));
    let err = refusal(&bad, TraceFormat::Tencent);
    assert_eq!((err.member(), err.line()), (Some("2018-10-01-01"), Some(2)));
    assert!(
        err.to_string()
            .starts_with("t.trace (member 2018-10-01-01), line 2: "),
        "{err}"
    );
}

#[test]
fn alibabas_tarball_is_read_without_its_device_sizes() {
    let archive = tar_of(&[
        ("alibaba/device_size.csv", b"0,536870912000\n"),
        ("alibaba/io_traces.csv", b"0,R,0,4096,100\n"),
    ]);
    assert_eq!(
        read_all(&archive, TraceFormat::Alibaba),
        [io(0, 0, TraceOp::Read, 0, 4096)]
    );
}

#[test]
fn records_a_little_out_of_order_are_due_with_the_latest_before_them() {
    let csv = b"1,R,0,4096,1000000\n\
        1,R,0,4096,3000000\n\
        2,R,0,4096,2500000\n\
        2,R,0,4096,2100000\n\
        1,R,0,4096,4000000\n";
    let mut r = reader(csv, TraceFormat::Alibaba);
    let times: Vec<u64> = r.by_ref().map(|io| io.unwrap().time_ns).collect();
    // The first I/O is due at 0; the two late ones with the one before them (2 s).
    assert_eq!(
        times,
        [
            0,
            2_000_000_000,
            2_000_000_000,
            2_000_000_000,
            3_000_000_000
        ]
    );
    assert_eq!((r.late(), r.max_step_back_ns()), (2, 900_000_000));
}

#[test]
fn records_far_out_of_order_are_refused() {
    let csv = b"1,R,0,4096,5000000\n1,R,0,4096,3000000\n";
    let err = refusal(csv, TraceFormat::Alibaba);
    assert_eq!(
        (err.kind(), err.line()),
        (TraceErrorKind::OutOfOrder, Some(2))
    );
    assert!(
        err.to_string()
            .contains("2 s earlier than the one on line 1"),
        "{err}"
    );
    assert!(err.to_string().contains("sort the trace by time"), "{err}");
    // A wider tolerance takes it.
    let r = reader(csv, TraceFormat::Alibaba).with_order_tolerance(Duration::from_secs(3));
    assert_eq!(r.map(|io| io.unwrap().time_ns).collect::<Vec<_>>(), [0, 0]);
}

#[test]
fn a_line_with_no_end_is_refused_before_it_fills_memory() {
    let mut text = b"1,R,0,4096,1\n".to_vec();
    text.extend(std::iter::repeat_n(b'9', 1 << 20));
    let err = refusal(&text, TraceFormat::Alibaba);
    assert_eq!(err.line(), Some(2));
    assert!(err.to_string().contains("longer than 4096 bytes"), "{err}");
}

#[test]
fn check_counts_the_whole_trace_by_device() {
    let stats = reader(IOLOG_V3.as_bytes(), TraceFormat::FioIolog)
        .check()
        .unwrap();
    assert_eq!((stats.ios, stats.lines, stats.last_ns), (5, 9, 154_000));
    let file = stats.device(&DeviceKey::name("data.img")).unwrap();
    assert_eq!(file.count(TraceOp::Flush), 2);
    assert_eq!(file.max_end, 1 << 20);
    // A malformed line anywhere refuses the whole trace.
    let bad = format!("{IOLOG_V3}700 data.img read 0\n");
    let err = reader(bad.as_bytes(), TraceFormat::FioIolog)
        .check()
        .unwrap_err();
    assert_eq!(err.line(), Some(10));
}

#[test]
fn formats_and_device_keys_are_named_as_the_options_give_them() {
    for format in TraceFormat::ALL {
        assert_eq!(format.name().parse::<TraceFormat>(), Ok(format));
    }
    assert!("csv"
        .parse::<TraceFormat>()
        .unwrap_err()
        .to_string()
        .contains("fio-iolog, alibaba, tencent"));
    assert_eq!(TraceFormat::Alibaba.device_key("12"), Ok(DeviceKey::Id(12)));
    assert_eq!(
        TraceFormat::FioIolog.device_key("12"),
        Ok(DeviceKey::name("12"))
    );
    assert!(TraceFormat::Tencent.device_key("vol1").is_err());
    assert!(TraceFormat::Tencent.device_key("+1").is_err());
    assert!(TraceFormat::FioIolog.device_key("a b").is_err());
}

#[test]
fn a_written_iolog_reads_back_as_the_ios_written() {
    let ios = [
        io(0, "/dev/sdb", TraceOp::Read, 0, 4096),
        io(1_500_000, "/dev/sdc", TraceOp::Write, 8192, 16384),
        io(2_000_000, "/dev/sdb", TraceOp::Trim, 1 << 30, 1 << 20),
        io(2_000_000, "/dev/sdb", TraceOp::Flush, 0, 0),
    ];
    let mut log = IologWriter::new(Vec::new()).unwrap();
    ios.iter().for_each(|io| log.write_trace_io(io).unwrap());
    let text = log.finish().unwrap();
    assert_eq!(read_all(&text, TraceFormat::FioIolog), ios);
}

#[test]
fn readers_and_their_errors_move_between_threads() {
    fn send<T: Send>() {}
    fn send_and_sync<T: Send + Sync + 'static>() {}
    send::<TraceReader<'static>>();
    send_and_sync::<TraceError>();
    send_and_sync::<TraceIo>();
}

#[test]
fn lines_across_the_inputs_buffer_ends_read_the_same() {
    let csv = b"1,R,0,4096,100\n22,W,4096,8192,200\r\n333,R,8192,512,300";
    for (text, format) in [
        (csv.as_slice(), TraceFormat::Alibaba),
        (IOLOG_V3.as_bytes(), TraceFormat::FioIolog),
    ] {
        let whole = read_all(text, format);
        for capacity in [1, 5, 16, 4096] {
            let small = std::io::BufReader::with_capacity(capacity, text);
            let ios: Vec<_> = TraceReader::new("t", small, format)
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert_eq!(ios, whole, "a {capacity}-byte buffer");
        }
    }
    // A line too long is too long however it arrives.
    let long = format!("1,R,0,4096,{}\n", "1".repeat(MAX_LINE_BYTES));
    let small = std::io::BufReader::with_capacity(64, long.as_bytes());
    let err = TraceReader::new("t", small, TraceFormat::Alibaba)
        .unwrap()
        .find_map(Result::err)
        .unwrap();
    assert!(err.to_string().contains("longer than"), "{err}");
}
