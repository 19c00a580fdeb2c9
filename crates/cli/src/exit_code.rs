//! The exit codes of `hostmax`, every command's, in one table (the book's "Exit codes", in
//! docs/src/output.md, is the same table). When several apply, the first in this order wins:
//! [`BAD_INPUT`] (found before any I/O), a signal ([`interrupted`]), [`VERIFY_FAILED`] (bad data
//! outranks everything measured), [`STALLED`] (a device that stopped answering), [`IO_ERRORS`]
//! (figures with I/O errors are judged neither good nor bad), [`VERDICT_FAILED`],
//! [`NOT_CONCLUDED`], [`OK`].

use crate::error::{BadInput, CalledOff, Stalled};

/// The run finished without I/O errors (and every judged promise held).
pub const OK: i32 = 0;
/// A verdict failed: some volume or the host fell short of its promise.
pub const VERDICT_FAILED: i32 = 1;
/// Bad input or a refused target: [`BadInput`] anywhere in the error chain, and clap's usage
/// errors.
pub const BAD_INPUT: i32 = 2;
/// The run finished but I/O errors happened.
pub const IO_ERRORS: i32 = 3;
/// Any other failure (a runtime or internal error).
pub const FAILURE: i32 = 4;
/// `--verify` found a block that was not what was written.
pub const VERIFY_FAILED: i32 = 5;
/// A device stopped answering: it still had I/O in flight `hostmax_engine::DRAIN_LIMIT`
/// (10 s) after the run's end, or completed none of its `--verify` read-back's reads for as
/// long, and the run ended without it. The report names it and its I/Os in flight
/// (`stalled_in_flight`); the other devices' figures are whole. Also a read of a device that
/// got no answer in time before any write (the safety checks) or in `prepare`'s read pass.
pub const STALLED: i32 = 6;
/// A judged run finished but no promise could be judged (NOT CONCLUDED): every promised
/// figure needed another run shape, or every shortfall was on saturated workers. Not a pass,
/// and not a failure of the volumes either. (A run a signal cut short is NOT CONCLUDED too,
/// with the signal's code.)
pub const NOT_CONCLUDED: i32 = 7;

/// The exit code of a run a signal stopped (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP,
/// 131 for SIGQUIT), as shells do.
pub fn interrupted(signal: i32) -> i32 {
    128 + signal
}

/// What a command that ran found, as its exit code needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The signal that stopped it, 0 if none.
    pub signal: i32,
    /// `--verify` found a bad block.
    pub bad_data: bool,
    /// Some I/O failed.
    pub io_errors: bool,
    /// A device stopped answering (I/O still in flight when the run gave up on it).
    pub stalled: bool,
    /// A judged promise did not hold.
    pub verdict_failed: bool,
    /// A verdict was asked for and nothing could be judged.
    pub not_concluded: bool,
}

impl Outcome {
    /// The exit code, by the precedence in the module docs.
    pub fn code(self) -> i32 {
        if self.signal != 0 {
            interrupted(self.signal)
        } else if self.bad_data {
            VERIFY_FAILED
        } else if self.stalled {
            STALLED
        } else if self.io_errors {
            IO_ERRORS
        } else if self.verdict_failed {
            VERDICT_FAILED
        } else if self.not_concluded {
            NOT_CONCLUDED
        } else {
            OK
        }
    }
}

/// The exit code for an error: [`BAD_INPUT`] if a [`BadInput`] is anywhere in its chain,
/// [`STALLED`] for a [`Stalled`] device, else [`FAILURE`].
pub fn for_error(err: &anyhow::Error) -> i32 {
    if let Some(called_off) = err.chain().find_map(|e| e.downcast_ref::<CalledOff>()) {
        interrupted(called_off.0)
    } else if err.chain().any(|e| e.is::<BadInput>()) {
        BAD_INPUT
    } else if err.chain().any(|e| e.is::<Stalled>()) {
        STALLED
    } else {
        FAILURE
    }
}

/// The process's exit status for `code` ([`FAILURE`] for a code beyond 255).
pub fn status(code: i32) -> std::process::ExitCode {
    let failure = FAILURE as u8;
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(failure))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_anywhere_in_the_chain_exits_2() {
        let bad: anyhow::Error = BadInput("x".into()).into();
        assert_eq!(for_error(&bad), BAD_INPUT);
        assert_eq!(for_error(&bad.context("while planning")), BAD_INPUT);
        assert_eq!(for_error(&anyhow::anyhow!("disk on fire")), FAILURE);
        let stalled: anyhow::Error = Stalled("/dev/sdb stopped answering".into()).into();
        assert_eq!(for_error(&stalled.context("cell 4k")), STALLED);
        assert_eq!(interrupted(2), 130);
        assert_eq!(interrupted(15), 143);
    }

    #[test]
    fn the_first_that_applies_wins() {
        let all = Outcome {
            signal: 2,
            bad_data: true,
            io_errors: true,
            stalled: true,
            verdict_failed: true,
            not_concluded: true,
        };
        assert_eq!(all.code(), 130);
        let all = Outcome { signal: 0, ..all };
        assert_eq!(all.code(), VERIFY_FAILED);
        let all = Outcome {
            bad_data: false,
            ..all
        };
        assert_eq!(all.code(), STALLED);
        let all = Outcome {
            stalled: false,
            ..all
        };
        assert_eq!(all.code(), IO_ERRORS);
        let all = Outcome {
            io_errors: false,
            ..all
        };
        assert_eq!(all.code(), VERDICT_FAILED);
        let all = Outcome {
            verdict_failed: false,
            ..all
        };
        assert_eq!(all.code(), NOT_CONCLUDED);
        assert_eq!(Outcome::default().code(), OK);
    }
}
