//! What a trace is made of: timed I/Os ([`TraceIo`]) on devices ([`DeviceKey`]).

use std::fmt;
use std::sync::Arc;

/// The kind of one traced I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum TraceOp {
    /// Read `len` bytes at `offset`.
    Read,
    /// Write `len` bytes at `offset`.
    Write,
    /// Discard (trim) `len` bytes at `offset`.
    Trim,
    /// Make what was written durable (fio's `sync` and `datasync`); no range: its offset and
    /// length are 0.
    Flush,
}

impl TraceOp {
    /// Every kind, in the order of [`TraceOp::index`].
    pub const ALL: [TraceOp; 4] = [TraceOp::Read, TraceOp::Write, TraceOp::Trim, TraceOp::Flush];

    /// Its name: `read`, `write`, `trim` or `flush`.
    pub fn name(self) -> &'static str {
        match self {
            TraceOp::Read => "read",
            TraceOp::Write => "write",
            TraceOp::Trim => "trim",
            TraceOp::Flush => "flush",
        }
    }

    /// Its position in [`TraceOp::ALL`], for per-kind tables.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether it addresses a range of the device (all but [`TraceOp::Flush`]).
    pub fn has_range(self) -> bool {
        self != TraceOp::Flush
    }
}

impl fmt::Display for TraceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which device of a trace an I/O went to: a number (the public cloud traces' device and
/// volume ids) or a name (an fio iolog's file name). Cloning one never allocates: a name is
/// shared by every I/O that carries it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DeviceKey {
    /// A numeric device id (Alibaba's `device_id`, Tencent's `VolumeID`).
    Id(u64),
    /// A file or device name (fio's iolog).
    Name(Arc<str>),
}

impl DeviceKey {
    /// A key by name.
    pub fn name(name: &str) -> DeviceKey {
        DeviceKey::Name(Arc::from(name))
    }
}

impl fmt::Display for DeviceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceKey::Id(id) => write!(f, "{id}"),
            DeviceKey::Name(name) => f.write_str(name),
        }
    }
}

impl From<u64> for DeviceKey {
    fn from(id: u64) -> DeviceKey {
        DeviceKey::Id(id)
    }
}

impl From<&str> for DeviceKey {
    fn from(name: &str) -> DeviceKey {
        DeviceKey::name(name)
    }
}

/// One I/O of a trace, due `time_ns` after the trace's first I/O.
///
/// A trace source is any iterator of these: [`TraceReader`](crate::TraceReader) reads them
/// from a trace file, and a caller may make its own with [`TraceIo::new`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TraceIo {
    /// When it is due: nanoseconds after the trace's first I/O (which is due at 0). A reader
    /// yields them in order: never earlier than the I/O before.
    pub time_ns: u64,
    /// The trace's device it went to.
    pub device: DeviceKey,
    /// What it does.
    pub op: TraceOp,
    /// Where it starts, in bytes from the device's start (0 for a flush).
    pub offset: u64,
    /// How many bytes it covers (0 for a flush).
    pub len: u64,
}

impl TraceIo {
    /// An I/O of `len` bytes at `offset` of `device`, due at `time_ns`.
    pub fn new(time_ns: u64, device: DeviceKey, op: TraceOp, offset: u64, len: u64) -> TraceIo {
        TraceIo {
            time_ns,
            device,
            op,
            offset,
            len,
        }
    }

    /// The byte just past its range (`offset + len`, saturating).
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }
}
