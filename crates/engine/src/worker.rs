//! Pinned worker threads.

/// The offsets one target's I/O visits.
pub struct OffsetStream;
