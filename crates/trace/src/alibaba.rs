//! Alibaba Cloud's block traces of 2020 (github alibaba/block-traces): `io_traces.csv`, rows
//! `device_id,opcode,offset,length,timestamp` with no header (opcode `R` or `W`, offset and
//! length in bytes, timestamp in microseconds), and `device_size.csv`, rows
//! `device_id,capacity` in bytes.

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::error::{quoted, LineFault, Place, TraceError};
use crate::fields::{parse_u64, split_commas, FieldCursor};
use crate::io::{DeviceKey, TraceOp};
use crate::record::{data_range, read_or_write, RawIo};

/// The columns of `io_traces.csv`, as its README names them: a first line that says this
/// (some copies carry it) is skipped.
pub(crate) const COLUMNS: &str = "device_id,opcode,offset,length,timestamp";

const ROW: &str = "an Alibaba io_traces.csv row is device_id,opcode,offset,length,timestamp";

pub(crate) fn parse(line: &[u8]) -> Result<Option<RawIo>, LineFault> {
    if let Some(io) = parse_fast(line) {
        return Ok(Some(io));
    }
    parse_slow(line)
}

/// A row as the published trace writes it, in one pass; `None` for anything else.
fn parse_fast(line: &[u8]) -> Option<RawIo> {
    let mut f = FieldCursor::new(line, b',');
    let device = f.number()?;
    let op = match f.byte()? {
        b'R' => TraceOp::Read,
        b'W' => TraceOp::Write,
        _ => return None,
    };
    let (offset, len, time_us) = (f.number()?, f.number()?, f.number()?);
    if !f.done() || len == 0 {
        return None;
    }
    Some(RawIo {
        time_ns: time_us.checked_mul(1000)?,
        device: DeviceKey::Id(device),
        op,
        offset,
        len: offset.checked_add(len).map(|_| len)?,
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
    let [device, opcode, offset, length, timestamp] = fields.field;
    let device = number(device, "device_id")?;
    let hint = if matches!(opcode, b"0" | b"1") {
        "; a 0 or 1 there is a Tencent CBS row (Timestamp,Offset,Size,IOType,VolumeID): read it as the tencent format"
    } else {
        ""
    };
    let op = read_or_write(opcode, "opcode", ["R", "W"], hint)?;
    let offset = number(offset, "offset")?;
    let len = number(length, "length")?;
    data_range(op, offset, len)?;
    let time_us = number(timestamp, "timestamp")?;
    let time_ns = time_us.checked_mul(1000).ok_or_else(|| {
        LineFault::malformed(
            format!("timestamp {time_us} us is past what 64-bit nanoseconds hold"),
            "give the timestamp in microseconds",
        )
    })?;
    Ok(Some(RawIo {
        time_ns,
        device: DeviceKey::Id(device),
        op,
        offset,
        len,
    }))
}

fn number(text: &[u8], column: &str) -> Result<u64, LineFault> {
    parse_u64(text).ok_or_else(|| {
        LineFault::malformed(
            format!("{column} {} is not a whole number", quoted(text)),
            ROW,
        )
    })
}

/// The capacity in bytes of each device of Alibaba's `device_size.csv` (rows
/// `device_id,capacity`, no header), to wrap a replay's offsets as the trace's own devices
/// would. `name` is what errors call the file.
pub fn read_alibaba_device_sizes(
    name: &str,
    input: impl BufRead,
) -> Result<BTreeMap<u64, u64>, TraceError> {
    let mut sizes = BTreeMap::new();
    let mut place = Place {
        source_name: name.to_string(),
        member: None,
        line: None,
    };
    for (i, line) in input.split(b'\n').enumerate() {
        place.line = Some(i as u64 + 1);
        let line = line.map_err(|e| TraceError::unreadable(&place, e))?;
        let fields = split_commas::<2>(&line);
        if fields.count == 1 && fields.field[0].is_empty() {
            continue;
        }
        const SIZE_ROW: &str = "an Alibaba device_size.csv row is device_id,capacity (bytes)";
        if i == 0
            && line
                .trim_ascii()
                .eq_ignore_ascii_case(b"device_id,capacity")
        {
            continue;
        }
        if fields.count != 2 {
            return Err(
                LineFault::malformed(format!("{} fields", fields.count), SIZE_ROW).at(&place),
            );
        }
        let (Some(device), Some(capacity)) =
            (parse_u64(fields.field[0]), parse_u64(fields.field[1]))
        else {
            return Err(LineFault::malformed(
                format!("{} is not two whole numbers", quoted(&line)),
                SIZE_ROW,
            )
            .at(&place));
        };
        if sizes.insert(device, capacity).is_some() {
            return Err(LineFault::malformed(
                format!("device {device} is listed twice"),
                "list each device's capacity once",
            )
            .at(&place));
        }
    }
    Ok(sizes)
}
