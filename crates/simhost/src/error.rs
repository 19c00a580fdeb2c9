//! [`SimHostError`]: what can go wrong building a simulated host or one of its parts.

use std::io;
use std::path::{Path, PathBuf};

/// Why a simulated host (or one of its parts) could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimHostError {
    /// A system call on a file failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done ("open", "write rule to", ...).
        what: &'static str,
        /// The file it was done to.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// Every attempt to grab a free loop device lost a race (or kept getting EBUSY).
    #[error("no free loop device after {attempts} attempts (last: {last})")]
    NoFreeLoop {
        /// How many devices were tried.
        attempts: u32,
        /// The last error seen.
        last: String,
    },
    /// The kernel did not enable direct I/O on a loop device.
    #[error(
        "{device}: direct I/O did not get enabled (loop/dio reads {dio:?}); \
         the backing filesystem must support O_DIRECT"
    )]
    DirectIoOff {
        /// `/dev/loopN`.
        device: String,
        /// What `/sys/block/loopN/loop/dio` said.
        dio: String,
    },
    /// Neither tmpfs (before Linux 6.6) nor null_blk can back loop volumes with direct I/O.
    #[error(
        "loop volumes need a backing that takes O_DIRECT: tmpfs does only from Linux 6.6 on, \
         and null_blk, used before that, is unavailable: {0}"
    )]
    NoDirectIoBacking(String),
    /// Caps were asked for but no cgroup hierarchy can throttle block I/O.
    #[error(
        "no cgroup v1 blkio or cgroup v2 io controller is mounted; \
         run without IOPS/bandwidth caps or mount one"
    )]
    NoIoController,
    /// `HOSTMAX_CGROUP_ROOT` names a directory that cannot throttle block I/O.
    #[error(
        "HOSTMAX_CGROUP_ROOT={path}: {why}; point it at a cgroup v2 directory with the io \
         controller (or a cgroup v1 blkio one), or unset it"
    )]
    BadCgroupRoot {
        /// The directory it named.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// Caps were asked for, but no cgroup to enforce them could be made.
    #[error("block I/O caps are unavailable: {0}")]
    ThrottleUnavailable(String),
    /// The operation does not exist on this cgroup flavour.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// The spec is inconsistent; the message names the field and the fix.
    #[error("simulated host: {0}")]
    BadSpec(String),
    /// Plain-file mode found no directory whose filesystem takes O_DIRECT.
    #[error("no directory for plain volume files supports O_DIRECT (tried: {0})")]
    NoDirectIoDir(String),
    /// null_blk volumes were asked for where the kernel cannot make them.
    #[error("null_blk volumes: {0}")]
    NullBlkUnavailable(String),
    /// A null_blk device was powered on but no disk of its name showed up.
    #[error("powered on {} but no disk appeared (looked for {tried})", config_dir.display())]
    NullBlkNoDisk {
        /// The device's configfs directory.
        config_dir: PathBuf,
        /// The `/sys/block` entries looked for.
        tried: String,
    },
    /// A kernel module's device node is missing and the module could not be loaded.
    #[error(
        "no {}: the {module} kernel module is not loaded ({why}); load it with \
         'modprobe {module}' as root",
        node.display()
    )]
    ModuleMissing {
        /// The module (`loop`).
        module: &'static str,
        /// The node it makes (`/dev/loop-control`).
        node: PathBuf,
        /// Why loading it did not work.
        why: String,
    },
    /// A disk exists but its device node did not appear.
    #[error(
        "{} did not appear as a block device within {waited_ms} ms \
         (devtmpfs makes it; is /dev a devtmpfs?)",
        path.display()
    )]
    NoDeviceNode {
        /// `/dev/<disk>`.
        path: PathBuf,
        /// How long it was waited for.
        waited_ms: u64,
    },
}

impl SimHostError {
    /// A `map_err` adapter: `SimHostError::Io` for `what` on `path`.
    pub(crate) fn io(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> SimHostError {
        let path = path.to_path_buf();
        move |source| SimHostError::Io { what, path, source }
    }
}
