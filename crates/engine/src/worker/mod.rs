//! Pinned worker threads: each drives its targets through one ring until the run ends.
//!
//! The hot loop per iteration: fill every target's queue up to its depth (respecting its
//! rate), take one clock reading, submit and wait for at least one completion in one
//! `io_uring_enter`, take one clock reading, and account every completion reaped. Two clock
//! readings per batch, not per I/O, keep the clock off the profile; every I/O of a batch is
//! stamped with the batch's submit time and reap time, which is also when user space could
//! first have seen it complete.
//!
//! By concern: `task.rs` (the thread: pinning, the ring and each share's state made, the
//! results handed back), `offsets.rs` (`OffsetStream`), `device.rs` (a share's state, its
//! slots and its batches), `run_loop.rs` (the loop's steps), `count.rs` (each completion
//! into its window), `seconds.rs` (the one-second intervals), `verify.rs` (the checks of a
//! verifying run and its read-back).

mod count;
mod device;
mod offsets;
mod run_loop;
mod seconds;
mod task;
mod verify;

#[cfg(feature = "test-hooks")]
pub use offsets::OffsetStream;
pub(crate) use task::{WorkerOutput, WorkerTask};
