//! Tencent's cloud block storage traces of 2018 (SNIA IOTTA, "Tencent CBS"): hourly `.tgz`
//! archives of rows `Timestamp,Offset,Size,IOType,VolumeID` (Unix seconds; offset and size
//! in 512-byte sectors; IOType 0 read, 1 write).

use crate::error::{quoted, LineFault};
use crate::fields::{parse_seconds_ns, parse_u64, split_commas, FieldCursor};
use crate::io::{DeviceKey, TraceOp};
use crate::record::{data_range, read_or_write, RawIo};

/// The columns as the trace's README names them: a first line that says this is skipped.
pub(crate) const COLUMNS: &str = "Timestamp,Offset,Size,IOType,VolumeID";

/// The trace's sector.
const SECTOR: u64 = 512;

const ROW: &str = "a Tencent CBS row is Timestamp,Offset,Size,IOType,VolumeID (seconds, sectors, sectors, 0 or 1, id)";

pub(crate) fn parse(line: &[u8]) -> Result<Option<RawIo>, LineFault> {
    if let Some(io) = parse_fast(line) {
        return Ok(Some(io));
    }
    parse_slow(line)
}

/// A row as the published trace writes it (whole seconds), in one pass; `None` for anything
/// else.
fn parse_fast(line: &[u8]) -> Option<RawIo> {
    let mut f = FieldCursor::new(line, b',');
    let seconds = f.number()?;
    let (offset, size) = (f.number()?, f.number()?);
    let op = match f.byte()? {
        b'0' => TraceOp::Read,
        b'1' => TraceOp::Write,
        _ => return None,
    };
    let volume = f.number()?;
    if !f.done() || size == 0 {
        return None;
    }
    let (offset, len) = (offset.checked_mul(SECTOR)?, size.checked_mul(SECTOR)?);
    offset.checked_add(len)?;
    Some(RawIo {
        time_ns: seconds.checked_mul(1_000_000_000)?,
        device: DeviceKey::Id(volume),
        op,
        offset,
        len,
    })
}

/// Any row, each fault named.
fn parse_slow(line: &[u8]) -> Result<Option<RawIo>, LineFault> {
    let fields = split_commas::<5>(line);
    if fields.count == 1 && fields.field[0].is_empty() {
        return Ok(None);
    }
    if fields.count != 5 {
        return Err(LineFault::malformed(
            format!("{} fields", fields.count),
            ROW,
        ));
    }
    let [timestamp, offset, size, kind, volume] = fields.field;
    let time_ns = parse_seconds_ns(timestamp).ok_or_else(|| {
        LineFault::malformed(
            format!("timestamp {} is not Unix seconds", quoted(timestamp)),
            ROW,
        )
    })?;
    let hint = if matches!(offset, b"R" | b"W") {
        "; an R or W in the second column is an Alibaba row (device_id,opcode,offset,length,timestamp): read it as the alibaba format"
    } else {
        ""
    };
    let op = read_or_write(kind, "IOType", ["0", "1"], hint)?;
    let offset = sectors(offset, "Offset")?;
    let len = sectors(size, "Size")?;
    data_range(op, offset, len)?;
    let volume = parse_u64(volume).ok_or_else(|| {
        LineFault::malformed(
            format!("VolumeID {} is not a whole number", quoted(volume)),
            ROW,
        )
    })?;
    Ok(Some(RawIo {
        time_ns,
        device: DeviceKey::Id(volume),
        op,
        offset,
        len,
    }))
}

/// A count of sectors, in bytes.
fn sectors(text: &[u8], column: &str) -> Result<u64, LineFault> {
    let count = parse_u64(text).ok_or_else(|| {
        LineFault::malformed(
            format!("{column} {} is not a whole number of sectors", quoted(text)),
            ROW,
        )
    })?;
    count.checked_mul(SECTOR).ok_or_else(|| {
        LineFault::malformed(format!("{column} {count} sectors is past 2^64 bytes"), ROW)
    })
}
