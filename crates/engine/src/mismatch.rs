//! What a verify check found wrong with one block: its own file, since both the block maker
//! (`data.rs`) and the run's results (`result.rs`) name it.

use serde::{Deserialize, Serialize};

/// What a verify check ([`crate::WriteData::verify`]) found wrong with a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MismatchKind {
    /// The checksum does not match the contents: the data was damaged.
    Corruption,
    /// A sound block that belongs elsewhere (another offset or device): a write landed at
    /// the wrong place.
    Misdirected,
    /// A sound block of this place, but an older write (an earlier generation, another run,
    /// or zeros): the last write was lost.
    LostWrite,
}

/// One block that failed verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct VerifyMismatch {
    /// Byte offset on the device.
    pub offset: u64,
    /// What was wrong.
    pub kind: MismatchKind,
    /// Whether it was found by a read during the run (else by the read-back after it).
    pub during_run: bool,
    /// The generation tag (1..=253) the block should carry.
    pub expected_tag: u8,
    /// The offset the block's header names.
    pub found_offset: u64,
    /// The generation tag of the write the block's header names.
    pub found_tag: u8,
    /// Whether the header names this run (else another run's data, or none).
    pub found_this_run: bool,
}
