//! [`IologWriter`]: I/Os written as fio's iolog version 3, which fio 3.31 and later replay
//! with `read_iolog=`.
//!
//! What fio 3.33's `read_iolog` expects, and so what is written: the line
//! `fio version 3 iolog`; each file's `TIME FILE add` and `TIME FILE open` before its first
//! I/O; `TIME FILE read|write|trim|sync OFFSET LENGTH` per I/O, TIME in microseconds from the
//! start; and `TIME FILE close` for every file at the end. fio reads a name with `%256s` and
//! a length with `%u`: names with spaces or of more than 256 bytes, and lengths of 4 GiB or
//! more, are refused rather than written as something fio would misread.

use std::io::{self, BufWriter, Write};

use crate::hash::FastMap;
use crate::io::{DeviceKey, TraceIo, TraceOp};
use crate::iolog::{HEADER_V3, MAX_FILE_NAME};

/// What an [`IologWriter`] cannot write.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IologWriteError {
    /// The destination refused the bytes.
    #[error("cannot write the iolog: {0}")]
    Io(#[from] io::Error),
    /// A file name fio would not read back as it is.
    #[error("file name {name:?} cannot be in an iolog: {why}")]
    BadFileName {
        /// The name.
        name: String,
        /// Why not.
        why: &'static str,
    },
    /// A length fio's 32-bit length field does not hold.
    #[error("an I/O of {len} bytes does not fit fio's 32-bit iolog length; split it")]
    TooLong {
        /// The length.
        len: u64,
    },
    /// An I/O of a file the writer was not given.
    #[error("iolog file {index} was never added")]
    NoSuchFile {
        /// The handle's index.
        index: usize,
    },
}

/// A file of an [`IologWriter`]'s log, from [`IologWriter::add_file`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IologFile(usize);

/// Writes I/Os as fio's iolog version 3 (what fio's `write_iolog=` writes), buffered.
///
/// Times are written in whole microseconds and never go back: an I/O given a time earlier
/// than the line before it is written at that line's time (fio would replay it with no wait
/// anyway). [`IologWriter::finish`] writes every file's `close` and flushes; a writer
/// dropped without it leaves a log fio still replays, with no `close` lines.
pub struct IologWriter<W: Write> {
    out: BufWriter<W>,
    names: Vec<Box<str>>,
    by_name: FastMap<Box<str>, IologFile>,
    last_us: u64,
    ios: u64,
}

impl<W: Write> IologWriter<W> {
    /// A log written to `out`, its version line first.
    pub fn new(out: W) -> Result<IologWriter<W>, IologWriteError> {
        let mut out = BufWriter::with_capacity(64 << 10, out);
        writeln!(out, "{HEADER_V3}")?;
        Ok(IologWriter {
            out,
            names: Vec::new(),
            by_name: FastMap::default(),
            last_us: 0,
            ios: 0,
        })
    }

    /// Adds and opens `name` (a path, as fio will open it on replay), or returns its handle
    /// if it was added before. Its `add` and `open` lines carry the time of the last line.
    pub fn add_file(&mut self, name: &str) -> Result<IologFile, IologWriteError> {
        if let Some(&file) = self.by_name.get(name) {
            return Ok(file);
        }
        let why = if name.is_empty() {
            Some("it is empty")
        } else if name.len() > MAX_FILE_NAME {
            Some("fio reads at most 256 bytes of a name")
        } else if name.chars().any(char::is_whitespace) {
            Some("fio reads a name up to its first space")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(IologWriteError::BadFileName {
                name: name.to_string(),
                why,
            });
        }
        let file = IologFile(self.names.len());
        writeln!(self.out, "{} {name} add", self.last_us)?;
        writeln!(self.out, "{} {name} open", self.last_us)?;
        self.names.push(name.into());
        self.by_name.insert(name.into(), file);
        Ok(file)
    }

    /// Writes one I/O of `file` at `time_ns` after the start. A flush is written as `sync`
    /// (offset and length 0).
    pub fn write_io(
        &mut self,
        time_ns: u64,
        file: IologFile,
        op: TraceOp,
        offset: u64,
        len: u64,
    ) -> Result<(), IologWriteError> {
        let name = self
            .names
            .get(file.0)
            .ok_or(IologWriteError::NoSuchFile { index: file.0 })?;
        let (action, offset, len) = match op {
            TraceOp::Read => ("read", offset, len),
            TraceOp::Write => ("write", offset, len),
            TraceOp::Trim => ("trim", offset, len),
            TraceOp::Flush => ("sync", 0, 0),
        };
        if len > u64::from(u32::MAX) {
            return Err(IologWriteError::TooLong { len });
        }
        self.last_us = self.last_us.max(time_ns / 1000);
        writeln!(self.out, "{} {name} {action} {offset} {len}", self.last_us)?;
        self.ios += 1;
        Ok(())
    }

    /// Writes `io`, its device's name (or id) as the file name, adding the file on its first
    /// I/O.
    pub fn write_trace_io(&mut self, io: &TraceIo) -> Result<(), IologWriteError> {
        let file = match &io.device {
            DeviceKey::Name(name) => self.add_file(name)?,
            key => self.add_file(&key.to_string())?,
        };
        self.write_io(io.time_ns, file, io.op, io.offset, io.len)
    }

    /// I/Os written so far.
    pub fn ios(&self) -> u64 {
        self.ios
    }

    /// Closes every file (in the order added), flushes and returns the destination.
    pub fn finish(mut self) -> Result<W, IologWriteError> {
        for name in &self.names {
            writeln!(self.out, "{} {name} close", self.last_us)?;
        }
        self.out
            .into_inner()
            .map_err(|e| IologWriteError::Io(e.into_error()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_what_fio_writes() {
        let mut log = IologWriter::new(Vec::new()).unwrap();
        let file = log.add_file("/dev/sdb").unwrap();
        log.write_io(5_000, file, TraceOp::Read, 4096, 4096)
            .unwrap();
        log.write_io(7_999, file, TraceOp::Write, 0, 512).unwrap();
        // Earlier than the line before: written at its time.
        log.write_io(1_000, file, TraceOp::Trim, 8192, 8192)
            .unwrap();
        log.write_io(9_000, file, TraceOp::Flush, 77, 77).unwrap();
        assert_eq!(log.ios(), 4);
        let text = String::from_utf8(log.finish().unwrap()).unwrap();
        assert_eq!(
            text,
            "fio version 3 iolog\n\
             0 /dev/sdb add\n\
             0 /dev/sdb open\n\
             5 /dev/sdb read 4096 4096\n\
             7 /dev/sdb write 0 512\n\
             7 /dev/sdb trim 8192 8192\n\
             9 /dev/sdb sync 0 0\n\
             9 /dev/sdb close\n"
        );
    }

    #[test]
    fn trace_ios_add_their_device_once() {
        let mut log = IologWriter::new(Vec::new()).unwrap();
        for t in [0, 1_000_000] {
            log.write_trace_io(&TraceIo::new(t, DeviceKey::Id(3), TraceOp::Read, 0, 4096))
                .unwrap();
        }
        let text = String::from_utf8(log.finish().unwrap()).unwrap();
        assert_eq!(text.lines().filter(|l| l.ends_with(" 3 add")).count(), 1);
        assert_eq!(text.lines().count(), 6, "{text}");
    }

    #[test]
    fn what_fio_would_misread_is_refused() {
        let mut log = IologWriter::new(Vec::new()).unwrap();
        for bad in ["", "a b", &"x".repeat(257)] {
            assert!(matches!(
                log.add_file(bad),
                Err(IologWriteError::BadFileName { .. })
            ));
        }
        let file = log.add_file(&"x".repeat(256)).unwrap();
        assert!(matches!(
            log.write_io(0, file, TraceOp::Read, 0, 1 << 32),
            Err(IologWriteError::TooLong { .. })
        ));
        assert!(matches!(
            log.write_io(0, IologFile(5), TraceOp::Read, 0, 512),
            Err(IologWriteError::NoSuchFile { index: 5 })
        ));
    }
}
