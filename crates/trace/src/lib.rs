//! hostmax-trace reads block I/O traces as streams of timed I/Os, checks them, plans their
//! replay onto other devices, and writes fio's iolog.
//!
//! - [`TraceReader`] reads a trace from any `BufRead` (or a file, [`TraceReader::open`]) as
//!   an iterator of `Result<`[`TraceIo`]`, `[`TraceError`]`>`: each I/O's time (nanoseconds
//!   after the trace's first I/O), its device ([`DeviceKey`]: an id or a file name), kind
//!   ([`TraceOp`]), offset and length in bytes. [`TraceFormat`]s: fio's iolog versions 2 and
//!   3, Alibaba Cloud's 2020 `io_traces.csv`, Tencent's 2018 CBS traces. gzip and Zstandard
//!   ([`Compression`]) and tar archives are read as their first bytes say. Memory stays flat
//!   whatever the trace's length.
//! - A line that is not a record of its format is a [`TraceError`]: the trace, the line, what
//!   is wrong and the fix, in one line. [`TraceReader::check`] reads the whole trace before
//!   any I/O and returns its [`TraceStats`] ([`DeviceStats`] per device).
//! - [`DeviceMap`] maps trace devices onto targets: explicit pairs, or the busiest devices
//!   spread evenly ([`DeviceMap::spread`]); [`FleetShare`] is a fleet host's share of them;
//!   [`OffsetWrap`] fits offsets past a target's end into it and counts them.
//! - [`IologWriter`] writes I/Os as fio's iolog version 3, which fio replays.
//! - [`read_alibaba_device_sizes`] reads Alibaba's `device_size.csv`.
//!
//! # API stability
//!
//! Structs and enums that may grow are `#[non_exhaustive]`: make a [`TraceIo`] with
//! [`TraceIo::new`], and give a `match` on an enum a `_` arm.

#![warn(missing_docs)]

// The README's example is compiled and run as a doc test too, so it cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

mod alibaba;
mod error;
mod fields;
mod format;
mod hash;
mod input;
mod io;
mod iolog;
mod map;
mod reader;
mod record;
mod stats;
mod tencent;
mod wrap;
mod writer;

pub use alibaba::read_alibaba_device_sizes;
pub use error::{TraceError, TraceErrorKind};
pub use format::{TraceFormat, UnknownFormat};
pub use input::Compression;
pub use io::{DeviceKey, TraceIo, TraceOp};
pub use map::{DeviceMap, FleetShare, MapError};
pub use reader::{TraceReader, DEFAULT_ORDER_TOLERANCE, MAX_LINE_BYTES};
pub use stats::{DeviceStats, TraceStats};
pub use wrap::{OffsetWrap, WrapError};
pub use writer::{IologFile, IologWriteError, IologWriter};

#[cfg(test)]
mod tests;
