//! hostmax-simhost, the simulated host: throttled loop volumes on tmpfs (or null_blk volumes)
//! for `hostmax demo` and hostmax's tests, and the scaffolding those tests share. Published as
//! the `hostmax` tool's support crate (so `cargo install hostmax` builds from crates.io), not
//! as a library for others: its API follows the tool's needs, and it makes loop devices,
//! null_blk devices and cgroups on the machine it runs on.
//!
//! - [`SimulatedHost`] builds what a [`SimHostSpec`] asks for and removes all of it on drop:
//!   loop volumes over unlinked sparse files in `/dev/shm`, per-volume IOPS/bandwidth caps, and
//!   optionally a host ceiling (every volume is a slice of one parent loop device that is capped
//!   too). Without root it falls back to plain files ([`SimHostMode::PlainFiles`]), uncapped.
//!   [`SimulatedHost::build_null_blk`] makes the volumes null_blk devices instead
//!   ([`SimHostMode::NullBlk`]: blk-mq with a queue per CPU, like NVMe; no host caps), where
//!   [`null_blk_available`] says the kernel has null_blk.
//! - [`LoopDevice`]: one loop device made with ioctls, auto-detached when its descriptor closes,
//!   so even a SIGKILLed process leaves none behind.
//! - [`NullBlkDevice`]: one memory-backed null_blk device made through configfs, removed on
//!   drop (a killed process's are swept by the next [`SimulatedHost`]).
//! - [`ZramDevice`]: one zram device (bio-based, no queue map, compressing on the submitting
//!   CPU), removed on drop, where [`zram_available`] says the kernel has zram.
//! - [`IoThrottle`]: one cgroup (v1 `blkio` or v2 `io.max`) holding per-device caps; processes
//!   in it are capped. [`command_in_cgroup`] starts a child inside any cgroup directory.
//! - [`ScratchDir`]: a directory of this process's own, removed on drop (and by
//!   [`sweep_dead_owners`] once its process is gone): the backing files' home here, and every
//!   test's scratch space. [`FileLock`] is an exclusive `flock` held until dropped;
//!   [`find_program`] finds a program also in the sbin directories.
//! - [`SimHostError`]: what can go wrong building them.
//!
//! Every `unsafe` of the crate (the loop driver's ioctls, joining a cgroup between fork and
//! exec) is in one private module, `sys`.
//!
//! Like hostmax's libraries, its structs with public fields and its enums are
//! `#[non_exhaustive]`: build a struct with `new`/[`Default`] and the `with_*` setters, match
//! an enum with a `_` arm.

#![warn(missing_docs)]

// The README's example is compiled as a doc test too (not run: it needs root), so it cannot
// drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

/// Chaining setters for public fields of a `#[non_exhaustive]` struct: `with_FIELD(value)`
/// returns the value with that field set (users outside this crate cannot write a literal).
macro_rules! with_setters {
    ($ty:ident { $($setter:ident => $field:ident: $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("The same value with [`", stringify!($ty), "::", stringify!($field), "`] set to `", stringify!($field), "`.")]
                #[must_use]
                pub fn $setter(mut self, $field: $t) -> $ty {
                    self.$field = $field;
                    self
                }
            )*
        }
    };
}

mod error;
mod file_lock;
mod host;
mod loopdev;
mod nullblk;
mod programs;
mod scratch;
mod sys;
mod throttle;
mod zram;

pub use error::SimHostError;
pub use file_lock::FileLock;
pub use host::{ParentDevice, SimHostMode, SimHostSpec, SimVolume, SimulatedHost};
pub use loopdev::{read_direct_4k, AlignedBlock, LoopDevice, LoopOptions};
pub use nullblk::{
    null_blk_available, NullBlkDevice, NullBlkOptions, NullBlkRoots, NULLB_CONFIGFS_ROOT,
};
pub use programs::find_program;
pub use scratch::{sweep_dead_owners, ScratchDir, TEST_SCRATCH_PREFIX};
pub use throttle::{command_in_cgroup, CgroupFlavor, DeviceLimit, IoThrottle, CGROUP_ROOT_ENV};
pub use zram::{sweep_stale_zram, zram_available, ZramDevice, ZRAM_MARKER_PREFIX};

use std::path::{Path, PathBuf};

/// What a simulated disk is to the rest of the system: its node, its name under
/// `/sys/block`, its device number. [`LoopDevice`] and [`NullBlkDevice`] dereference to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceNode {
    path: PathBuf,
    kernel_name: String,
    major_minor: (u32, u32),
}

impl DeviceNode {
    /// `/dev/<name>`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The disk's name under `/sys/block` (`loop3`, `hostmax_nullb_12_0`).
    pub fn kernel_name(&self) -> &str {
        &self.kernel_name
    }

    /// The device number, as written in cgroup throttle rules ("MAJ:MIN").
    pub fn major_minor(&self) -> (u32, u32) {
        self.major_minor
    }
}
