//! [`TraceError`]: what is wrong with a trace, where, and what to do about it.

use std::fmt;
use std::io;

/// What kind of fault a [`TraceError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceErrorKind {
    /// The bytes could not be read: the file, or its gzip, zstd or tar wrapping, is broken.
    Unreadable,
    /// The first line is not the format's header (fio's `fio version N iolog`).
    Header,
    /// A line is not a record of the format.
    Malformed,
    /// A record is earlier than one before it by more than the reader tolerates.
    OutOfOrder,
}

/// A trace the reader refuses: the trace's name (and tar member), the line, what is wrong
/// and how to fix it. Its `Display` is one line: `NAME, line N: WHAT; FIX`. (Boxed, so a
/// reader's `Result` stays as small as its I/O.)
#[derive(Debug)]
pub struct TraceError(Box<Details>);

#[derive(Debug)]
struct Details {
    source_name: String,
    member: Option<String>,
    line: Option<u64>,
    kind: TraceErrorKind,
    what: String,
    fix: String,
    io: Option<io::Error>,
}

impl TraceError {
    /// The trace as its reader was named ([`TraceReader::new`](crate::TraceReader::new)'s
    /// name, the path given to [`TraceReader::open`](crate::TraceReader::open)).
    pub fn source_name(&self) -> &str {
        &self.0.source_name
    }

    /// The member of a tar archive the line is in, if the trace is one.
    pub fn member(&self) -> Option<&str> {
        self.0.member.as_deref()
    }

    /// The line (from 1, within its member), if the fault is on one.
    pub fn line(&self) -> Option<u64> {
        self.0.line
    }

    /// What kind of fault.
    pub fn kind(&self) -> TraceErrorKind {
        self.0.kind
    }

    /// What is wrong.
    pub fn what(&self) -> &str {
        &self.0.what
    }

    /// What to do about it.
    pub fn fix(&self) -> &str {
        &self.0.fix
    }

    pub(crate) fn new(
        place: &Place,
        kind: TraceErrorKind,
        what: String,
        fix: String,
    ) -> TraceError {
        TraceError(Box::new(Details {
            source_name: place.source_name.clone(),
            member: place.member.clone(),
            line: place.line,
            kind,
            what,
            fix,
            io: None,
        }))
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.io.as_ref().map(|e| e as _)
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.0;
        f.write_str(&d.source_name)?;
        if let Some(member) = &d.member {
            write!(f, " (member {member})")?;
        }
        if let Some(line) = d.line {
            write!(f, ", line {line}")?;
        }
        write!(f, ": {}", d.what)?;
        if let Some(io) = &d.io {
            write!(f, " ({io})")?;
        }
        if !d.fix.is_empty() {
            write!(f, "; {}", d.fix)?;
        }
        Ok(())
    }
}

/// Where in a trace a fault is: filled in by the reader, which knows the name and the line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Place {
    pub source_name: String,
    pub member: Option<String>,
    pub line: Option<u64>,
}

/// A fault found on a line, before the reader says where: the parsers return these.
#[derive(Debug)]
pub(crate) struct LineFault {
    pub kind: TraceErrorKind,
    pub what: String,
    pub fix: String,
}

impl LineFault {
    pub fn malformed(what: impl Into<String>, fix: impl Into<String>) -> LineFault {
        LineFault {
            kind: TraceErrorKind::Malformed,
            what: what.into(),
            fix: fix.into(),
        }
    }

    pub fn header(what: impl Into<String>, fix: impl Into<String>) -> LineFault {
        LineFault {
            kind: TraceErrorKind::Header,
            what: what.into(),
            fix: fix.into(),
        }
    }

    pub fn at(self, place: &Place) -> TraceError {
        TraceError::new(place, self.kind, self.what, self.fix)
    }
}

impl TraceError {
    /// A read error at `place` (the line is where reading stopped: the next one).
    pub(crate) fn unreadable(place: &Place, err_io: io::Error) -> TraceError {
        TraceError::cannot(place, "cannot be read", err_io)
    }

    /// `what` went wrong with the trace's bytes at `place`.
    pub(crate) fn cannot(place: &Place, what: &str, err_io: io::Error) -> TraceError {
        let mut err = TraceError::new(
            place,
            TraceErrorKind::Unreadable,
            what.to_string(),
            "check the file is whole (a partial download, a truncated .gz or .zst)".into(),
        );
        err.0.io = Some(err_io);
        err
    }
}

/// A line's text for a message: at most 80 characters, invalid UTF-8 replaced.
pub(crate) fn quoted(bytes: &[u8]) -> String {
    const SHOWN: usize = 80;
    let text = String::from_utf8_lossy(bytes);
    let mut shown: String = text.chars().take(SHOWN).collect();
    if text.chars().count() > SHOWN {
        shown.push_str("...");
    }
    format!("{shown:?}")
}
