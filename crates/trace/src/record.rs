//! One record as its line gives it, before the reader times it: what every format's parser
//! returns, and the range checks they all make.

use crate::error::{quoted, LineFault};
use crate::io::{DeviceKey, TraceOp};

/// One record as its line gives it: the time in the format's own clock (nanoseconds), before
/// the reader makes it relative to the first I/O and checks its order.
pub(crate) struct RawIo {
    pub time_ns: u64,
    pub device: DeviceKey,
    pub op: TraceOp,
    pub offset: u64,
    pub len: u64,
}

/// The range checks every format makes of a data I/O: a length, and an end within 2^64.
pub(crate) fn data_range(op: TraceOp, offset: u64, len: u64) -> Result<(), LineFault> {
    if len == 0 {
        return Err(LineFault::malformed(
            format!("a {op} of 0 bytes"),
            "give each I/O a length of at least one byte",
        ));
    }
    if offset.checked_add(len).is_none() {
        return Err(LineFault::malformed(
            format!("offset {offset} plus length {len} is past 2^64 bytes"),
            "give offsets within the device",
        ));
    }
    Ok(())
}

/// `field` as a read or a write by its format's two codes (`R`/`W`, `0`/`1`) in `column`;
/// `hint` is added to the fix (the line may be another format's).
pub(crate) fn read_or_write(
    field: &[u8],
    column: &str,
    [read, write]: [&str; 2],
    hint: &str,
) -> Result<TraceOp, LineFault> {
    if field == read.as_bytes() {
        return Ok(TraceOp::Read);
    }
    if field == write.as_bytes() {
        return Ok(TraceOp::Write);
    }
    Err(LineFault::malformed(
        format!("{column} {} is neither {read} nor {write}", quoted(field)),
        format!("{column} is {read} (read) or {write} (write){hint}"),
    ))
}
