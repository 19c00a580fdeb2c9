//! [`OffsetWrap`]: a trace's offsets fitted into a target smaller than the traced device.

/// An I/O that no offset fits into the target, or a target no I/O fits into.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WrapError {
    /// An I/O longer than the whole target.
    #[error(
        "an I/O of {len} bytes is longer than the {size}-byte target; replay onto a larger target"
    )]
    Longer {
        /// The I/O's length.
        len: u64,
        /// The target's usable size.
        size: u64,
    },
    /// A target smaller than one block, or an alignment that is not a power of two.
    #[error("a target of {size} bytes at {align}-byte alignment holds no block; give a power-of-two alignment no larger than the target")]
    NoBlock {
        /// The target's size.
        size: u64,
        /// The alignment asked.
        align: u64,
    },
}

/// Fits I/Os into a target of a given size: an I/O past the end is wrapped into it (its
/// offset modulo the target's size, kept aligned, moved back so its end fits), and counted,
/// so a report can say how many were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetWrap {
    size: u64,
    align: u64,
    wrapped: u64,
}

impl OffsetWrap {
    /// For a target of `size` bytes whose I/O must start at multiples of `align` (its
    /// logical block size; a power of two). Only whole blocks are used.
    pub fn new(size: u64, align: u64) -> Result<OffsetWrap, WrapError> {
        if !align.is_power_of_two() || size < align {
            return Err(WrapError::NoBlock { size, align });
        }
        Ok(OffsetWrap {
            size: size - size % align,
            align,
            wrapped: 0,
        })
    }

    /// The usable size: the target's, in whole blocks.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Where an I/O of `len` bytes at `offset` goes on the target: `offset` itself when it
    /// fits, else wrapped (and counted). A flush (`len` 0) stays where it is.
    pub fn fit(&mut self, offset: u64, len: u64) -> Result<u64, WrapError> {
        if len > self.size {
            return Err(WrapError::Longer {
                len,
                size: self.size,
            });
        }
        if offset.checked_add(len).is_some_and(|end| end <= self.size) {
            return Ok(offset);
        }
        self.wrapped += 1;
        let mut at = offset % self.size;
        at -= at % self.align;
        if at.saturating_add(len) > self.size {
            at = self.size - len;
            at -= at % self.align;
        }
        Ok(at)
    }

    /// How many I/Os [`OffsetWrap::fit`] wrapped.
    pub fn wrapped(&self) -> u64 {
        self.wrapped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_within_the_target_are_kept() {
        let mut wrap = OffsetWrap::new(1 << 20, 4096).unwrap();
        assert_eq!(wrap.fit(0, 4096), Ok(0));
        assert_eq!(wrap.fit((1 << 20) - 4096, 4096), Ok((1 << 20) - 4096));
        assert_eq!(wrap.fit(123, 0), Ok(123));
        assert_eq!(wrap.wrapped(), 0);
    }

    #[test]
    fn offsets_past_the_end_wrap_aligned_and_are_counted() {
        let mut wrap = OffsetWrap::new(1 << 20, 4096).unwrap();
        assert_eq!(wrap.fit((1 << 20) + 8192, 4096), Ok(8192));
        // Wrapped, but its end would pass the target's: moved back to end at the end.
        assert_eq!(wrap.fit((2 << 20) - 4096, 8192), Ok((1 << 20) - 8192));
        // Unaligned trace offsets come out aligned to the target's blocks.
        assert_eq!(wrap.fit((1 << 20) + 5000, 512), Ok(4096));
        assert_eq!(
            wrap.fit(u64::MAX - 10, 4096),
            Ok(((u64::MAX - 10) % (1 << 20)) / 4096 * 4096)
        );
        assert_eq!(wrap.wrapped(), 4);
    }

    #[test]
    fn a_partial_block_at_the_end_is_not_used() {
        let mut wrap = OffsetWrap::new(10_000, 4096).unwrap();
        assert_eq!(wrap.size(), 8192);
        assert_eq!(wrap.fit(8192, 4096), Ok(0));
    }

    #[test]
    fn an_io_longer_than_the_target_and_a_target_with_no_block_are_refused() {
        let mut wrap = OffsetWrap::new(8192, 4096).unwrap();
        assert_eq!(
            wrap.fit(0, 12288),
            Err(WrapError::Longer {
                len: 12288,
                size: 8192
            })
        );
        assert!(OffsetWrap::new(100, 512).is_err());
        assert!(OffsetWrap::new(1 << 20, 3000).is_err());
    }
}
