//! fio's iolog, versions 2 and 3, read as fio 3.33 reads it (iolog.c, `read_iolog`).
//!
//! The first line is `fio version 2 iolog` or `fio version 3 iolog`. Then, in version 3,
//! `TIME FILE ACTION` (add, open, close) and `TIME FILE ACTION OFFSET LENGTH` (read, write,
//! trim, sync, datasync), TIME in microseconds from the run's start; in version 2 the same
//! without TIME, and `FILE wait MS 0` holds what follows until MS milliseconds after the
//! start (fio's code sleeps until then; its HOWTO says microseconds after the last wait, which
//! fio does not do). A file is used only after its `add` line, as fio requires. fio skips a
//! line it cannot read with a message; this reader refuses it, so a replay is never a part of
//! the trace.

use std::sync::Arc;

use crate::error::{quoted, LineFault};
use crate::fields::{parse_u64, split_whitespace, FieldCursor};
use crate::hash::FastMap;
use crate::io::{DeviceKey, TraceOp};
use crate::record::{data_range, RawIo};

/// The version lines fio writes and reads.
pub(crate) const HEADER_V2: &str = "fio version 2 iolog";
pub(crate) const HEADER_V3: &str = "fio version 3 iolog";

/// fio reads a file name with `%256s`: a longer one is cut.
pub(crate) const MAX_FILE_NAME: usize = 256;

/// What an iolog line does besides I/O.
enum FileAction {
    Add,
    Open,
    Close,
}

/// An iolog's state as it is read: its version, the files it added, and (version 2) the time
/// its last `wait` holds I/O until.
#[derive(Default)]
pub(crate) struct IologState {
    version: Option<u8>,
    files: FastMap<Box<[u8]>, Arc<str>>,
    wait_until_ns: u64,
}

impl IologState {
    pub fn has_header(&self) -> bool {
        self.version.is_some()
    }

    pub fn parse(&mut self, line: &[u8]) -> Result<Option<RawIo>, LineFault> {
        let Some(version) = self.version else {
            return self.parse_header(line).map(|()| None);
        };
        if version == 3 {
            if let Some(io) = self.parse_fast_v3(line) {
                return Ok(Some(io));
            }
        }
        if line.trim_ascii().starts_with(b"fio version ") {
            return Err(LineFault::malformed(
                "a second version line: two logs one after the other",
                "fio appends to a write_iolog file that exists: remove it before recording, or cut the log at this line",
            ));
        }
        let fields = split_whitespace::<6>(line);
        if fields.count == 0 {
            return Ok(None);
        }
        let (time_ns, rest) = if version == 3 {
            let time_us = parse_u64(fields.field[0]).ok_or_else(|| {
                let hint = if fields.count == 2 || fields.count == 4 {
                    "; a line without a time is version 2's: make the first line `fio version 2 iolog`"
                } else {
                    ""
                };
                LineFault::malformed(
                    format!("time {} is not a whole number of microseconds", quoted(fields.field[0])),
                    format!("a version 3 iolog line starts with its time in microseconds{hint}"),
                )
            })?;
            let ns = time_us.checked_mul(1000).ok_or_else(|| {
                LineFault::malformed(
                    format!("time {time_us} us is past what 64-bit nanoseconds hold"),
                    "give times in microseconds from the run's start",
                )
            })?;
            (Some(ns), &fields.field[1..])
        } else {
            (None, &fields.field[..])
        };
        let given = fields.count - usize::from(version == 3);
        match given {
            2 => {
                self.file_action(rest[0], rest[1])?;
                Ok(None)
            }
            4 => self.io(rest, time_ns, version),
            _ => Err(wrong_field_count(version, fields.count, fields.field[0])),
        }
    }

    /// A version 3 I/O line as fio writes it (`TIME FILE read|write OFFSET LENGTH`, single
    /// spaces), in one pass; `None` for anything else, which the slow way reads.
    fn parse_fast_v3(&self, line: &[u8]) -> Option<RawIo> {
        let mut f = FieldCursor::new(line, b' ');
        let time_us = f.number()?;
        let file = f.word()?;
        let op = match f.word()? {
            b"read" => TraceOp::Read,
            b"write" => TraceOp::Write,
            b"trim" => TraceOp::Trim,
            _ => return None,
        };
        let (offset, len) = (f.number()?, f.number()?);
        if !f.done() || len == 0 || len > u64::from(u32::MAX) {
            return None;
        }
        offset.checked_add(len)?;
        Some(RawIo {
            time_ns: time_us.checked_mul(1000)?,
            device: DeviceKey::Name(self.known_file(file)?),
            op,
            offset,
            len,
        })
    }

    fn parse_header(&mut self, line: &[u8]) -> Result<(), LineFault> {
        let text = line.trim_ascii();
        if text == HEADER_V2.as_bytes() {
            self.version = Some(2);
            return Ok(());
        }
        if text == HEADER_V3.as_bytes() {
            self.version = Some(3);
            return Ok(());
        }
        let fix = if text.contains(&b',') {
            "an fio iolog starts with its version line; a comma-separated trace is read as the alibaba or tencent format"
        } else {
            "an fio iolog starts with `fio version 2 iolog` or `fio version 3 iolog` (fio's older version 1 is not read, by fio either)"
        };
        Err(LineFault::header(
            format!("{} is not an iolog's version line", quoted(line)),
            fix,
        ))
    }

    fn file_action(&mut self, file: &[u8], action: &[u8]) -> Result<(), LineFault> {
        let action = match action {
            b"add" => FileAction::Add,
            b"open" => FileAction::Open,
            b"close" => FileAction::Close,
            b"read" | b"write" | b"trim" | b"sync" | b"datasync" | b"wait" => {
                return Err(LineFault::malformed(
                    format!(
                        "a {} with no offset and length",
                        String::from_utf8_lossy(action)
                    ),
                    "give an I/O line its OFFSET and LENGTH in bytes",
                ))
            }
            other => return Err(unknown_action(other)),
        };
        check_file_name(file)?;
        match action {
            FileAction::Add => {
                if !self.files.contains_key(file) {
                    let name = Arc::from(String::from_utf8_lossy(file).as_ref());
                    self.files.insert(file.into(), name);
                }
            }
            FileAction::Open | FileAction::Close => {
                self.file(file)?;
            }
        }
        Ok(())
    }

    /// The name of `file` if it was added.
    fn known_file(&self, file: &[u8]) -> Option<Arc<str>> {
        self.files.get(file).cloned()
    }

    /// The name of `file`, added before.
    fn file(&self, file: &[u8]) -> Result<Arc<str>, LineFault> {
        self.known_file(file).ok_or_else(|| {
            LineFault::malformed(
                format!("file {} is used before its `add` line", quoted(file)),
                "add each file (`FILE add`, with the time first in version 3) before its other lines, as fio requires",
            )
        })
    }

    fn io(
        &mut self,
        fields: &[&[u8]],
        time_ns: Option<u64>,
        version: u8,
    ) -> Result<Option<RawIo>, LineFault> {
        let [file, action, offset, length] = [fields[0], fields[1], fields[2], fields[3]];
        let op = match action {
            b"read" => TraceOp::Read,
            b"write" => TraceOp::Write,
            b"trim" => TraceOp::Trim,
            b"sync" | b"datasync" => TraceOp::Flush,
            b"wait" if version == 2 => {
                let ms = number(offset, "wait", "milliseconds")?;
                let ns = ms.checked_mul(1_000_000).ok_or_else(|| {
                    LineFault::malformed(
                        format!("wait {ms} ms is too long"),
                        "give a wait in milliseconds",
                    )
                })?;
                self.wait_until_ns = self.wait_until_ns.max(ns);
                return Ok(None);
            }
            b"wait" => return Err(LineFault::malformed(
                "a `wait` line in a version 3 iolog",
                "version 3 times every line instead (fio does not allow `wait` there): remove it",
            )),
            b"add" | b"open" | b"close" => {
                return Err(LineFault::malformed(
                    format!(
                        "`{}` with an offset and length",
                        String::from_utf8_lossy(action)
                    ),
                    "a file's add, open and close lines have no offset or length",
                ))
            }
            other => return Err(unknown_action(other)),
        };
        let offset = number(offset, "offset", "bytes")?;
        let length = number(length, "length", "bytes")?;
        if length > u64::from(u32::MAX) {
            return Err(LineFault::malformed(
                format!("length {length} is more than fio's 32-bit length field holds"),
                format!("split the I/O into ones of at most {} bytes", u32::MAX),
            ));
        }
        let (offset, length) = if op.has_range() {
            data_range(op, offset, length)?;
            (offset, length)
        } else {
            (0, 0)
        };
        let name = self.file(file)?;
        Ok(Some(RawIo {
            time_ns: time_ns.unwrap_or(self.wait_until_ns),
            device: DeviceKey::Name(name),
            op,
            offset,
            len: length,
        }))
    }
}

fn number(text: &[u8], what: &str, unit: &str) -> Result<u64, LineFault> {
    parse_u64(text).ok_or_else(|| {
        LineFault::malformed(
            format!("{what} {} is not a whole number of {unit}", quoted(text)),
            format!("give the {what} in {unit}, digits alone"),
        )
    })
}

fn check_file_name(file: &[u8]) -> Result<(), LineFault> {
    if file.len() > MAX_FILE_NAME {
        return Err(LineFault::malformed(
            format!("a file name of {} bytes", file.len()),
            format!("fio reads at most {MAX_FILE_NAME} bytes of a name: give a shorter one"),
        ));
    }
    Ok(())
}

fn unknown_action(action: &[u8]) -> LineFault {
    LineFault::malformed(
        format!("action {} is not one of fio's", quoted(action)),
        "an iolog's actions are add, open, close, read, write, trim, sync and datasync (and wait in version 2)",
    )
}

fn wrong_field_count(version: u8, count: usize, first: &[u8]) -> LineFault {
    let forms = if version == 3 {
        "a version 3 line is `TIME FILE ACTION` or `TIME FILE ACTION OFFSET LENGTH`"
    } else {
        "a version 2 line is `FILE ACTION` or `FILE ACTION OFFSET LENGTH`"
    };
    let hint = if version == 2 && (count == 3 || count == 5) && parse_u64(first).is_some() {
        "; this one starts with a time: make the first line `fio version 3 iolog`"
    } else {
        ""
    };
    LineFault::malformed(format!("{count} fields"), format!("{forms}{hint}"))
}
