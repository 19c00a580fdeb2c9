//! Loop devices made with the kernel's ioctls (no `losetup` needed).
//!
//! A [`LoopDevice`] is configured with `LO_FLAGS_AUTOCLEAR` and keeps its own file
//! descriptor (read-only, so this process is no writer of the device) open for as long as it
//! lives: the kernel detaches the device when the last
//! descriptor closes, so dropping it (or the process dying, even by SIGKILL) leaves nothing
//! behind.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sys::{self, LoopConfig, LoopInfo64};
use crate::{DeviceNode, SimHostError};

// Flags of `struct loop_info64`, from <linux/loop.h>.
const LO_FLAGS_READ_ONLY: u32 = 1;
const LO_FLAGS_AUTOCLEAR: u32 = 4;
const LO_FLAGS_PARTSCAN: u32 = 8;
const LO_FLAGS_DIRECT_IO: u32 = 16;

/// How to attach a backing file to a loop device.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoopOptions {
    /// Where the device starts in the backing file, in bytes (a multiple of 512).
    pub offset: u64,
    /// How many bytes of the backing file the device shows; 0 is "to the end".
    pub size_limit: u64,
    /// Ask for `LO_FLAGS_DIRECT_IO`; attaching fails if the kernel does not enable it.
    pub direct_io: bool,
    /// Make the device read-only.
    pub read_only: bool,
    /// Logical block size of the device; 0 lets the kernel choose.
    pub block_size: u32,
}

impl Default for LoopOptions {
    fn default() -> Self {
        LoopOptions {
            offset: 0,
            size_limit: 0,
            direct_io: true,
            read_only: false,
            block_size: 0,
        }
    }
}

with_setters!(LoopOptions {
    with_offset => offset: u64,
    with_size_limit => size_limit: u64,
    with_direct_io => direct_io: bool,
    with_read_only => read_only: bool,
    with_block_size => block_size: u32,
});

/// An attached loop device, detached by the kernel when this value (and any other opener) is gone.
#[derive(Debug)]
pub struct LoopDevice {
    /// Held open on purpose, read-only: with `LO_FLAGS_AUTOCLEAR` this descriptor is what keeps
    /// the device bound.
    device: File,
    node: DeviceNode,
}

impl std::ops::Deref for LoopDevice {
    type Target = DeviceNode;

    fn deref(&self) -> &DeviceNode {
        &self.node
    }
}

/// The loop driver's control node; distribution kernels make it only once `loop` is loaded.
const LOOP_CONTROL: &str = "/dev/loop-control";

/// Opens [`LOOP_CONTROL`], loading the `loop` module first where the node is missing and we
/// may (root); else the error names the module and the command that loads it.
fn open_loop_control() -> Result<File, SimHostError> {
    let path = Path::new(LOOP_CONTROL);
    let open = || OpenOptions::new().read(true).write(true).open(path);
    match open() {
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            let missing = |why: String| SimHostError::ModuleMissing {
                module: "loop",
                node: path.to_path_buf(),
                why,
            };
            crate::programs::load_module("loop", &[]).map_err(missing)?;
            // devtmpfs makes the node as the module registers it, maybe a moment after.
            for _ in 0..200 {
                match open() {
                    Err(err) if err.kind() == io::ErrorKind::NotFound => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    opened => return opened.map_err(SimHostError::io("open", path)),
                }
            }
            Err(missing(
                "modprobe loop ran but the node did not appear within 2 s; is /dev a devtmpfs?"
                    .into(),
            ))
        }
        opened => opened.map_err(SimHostError::io("open", path)),
    }
}

/// How many times to ask for a free device when other processes keep taking it first.
const ATTACH_ATTEMPTS: u32 = 200;

impl LoopDevice {
    /// Attaches `backing` (a regular file or a block device) to a free loop device.
    ///
    /// The backing file may be closed (and unlinked) afterwards: the device keeps its own reference.
    pub fn attach(backing: &File, options: &LoopOptions) -> Result<LoopDevice, SimHostError> {
        Self::attach_with(backing, options, configure)
    }

    /// [`LoopDevice::attach`] with the given way of binding the device (so tests can run the
    /// older kernels' way on this one).
    fn attach_with(
        backing: &File,
        options: &LoopOptions,
        configure: fn(&File, &File, &LoopOptions) -> io::Result<()>,
    ) -> Result<LoopDevice, SimHostError> {
        let control_path = Path::new(LOOP_CONTROL);
        let control = open_loop_control()?;
        let mut last_race = String::from("none");
        for attempt in 0..ATTACH_ATTEMPTS {
            let number = match sys::loop_ctl_get_free(&control) {
                Ok(number) => number,
                Err(err) if is_race(&err) => {
                    last_race = format!("LOOP_CTL_GET_FREE: {err}");
                    backoff(attempt);
                    continue;
                }
                Err(err) => {
                    return Err(SimHostError::Io {
                        what: "LOOP_CTL_GET_FREE on",
                        path: control_path.to_path_buf(),
                        source: err,
                    })
                }
            };
            let path = PathBuf::from(format!("/dev/loop{number}"));
            let device = match OpenOptions::new()
                .read(true)
                .write(!options.read_only)
                .open(&path)
            {
                Ok(f) => f,
                // The node of a just-added device may not be there yet.
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    last_race = format!("open {}: {err}", path.display());
                    backoff(attempt);
                    continue;
                }
                Err(err) => return Err(SimHostError::io("open", &path)(err)),
            };
            match configure(&device, backing, options) {
                Ok(()) => {}
                // Another process configured this device between GET_FREE and our ioctl.
                Err(err) if is_race(&err) => {
                    last_race = format!("configure {}: {err}", path.display());
                    backoff(attempt);
                    continue;
                }
                Err(err) => {
                    return Err(SimHostError::Io {
                        what: "configure loop device",
                        path,
                        source: err,
                    })
                }
            }
            // Held read-only from here on (reopened through the descriptor that bound it, so
            // it is this device whatever its node is now): a descriptor open for writing would
            // make this process a writer of the device, and hostmax refuses to write a device
            // another process writes.
            let held = OpenOptions::new()
                .read(true)
                .open(format!("/proc/self/fd/{}", device.as_raw_fd()))
                .map_err(SimHostError::io("reopen", &path))?;
            drop(device);
            let rdev = held
                .metadata()
                .map_err(SimHostError::io("stat", &path))?
                .rdev();
            let loop_device = LoopDevice {
                device: held,
                node: DeviceNode {
                    path,
                    kernel_name: format!("loop{number}"),
                    major_minor: (libc::major(rdev), libc::minor(rdev)),
                },
            };
            if options.direct_io {
                loop_device.check_direct_io()?;
            }
            return Ok(loop_device);
        }
        Err(SimHostError::NoFreeLoop {
            attempts: ATTACH_ATTEMPTS,
            last: last_race,
        })
    }

    /// The descriptor that keeps the device bound (read-only: ioctls only).
    pub fn file(&self) -> &File {
        &self.device
    }

    /// Points the device, bound as it is (same number, same node), at `backing` instead
    /// (`LOOP_CHANGE_FD`): what a re-pointed volume looks like to a tool that kept only its
    /// path. The kernel allows it only on a read-only device
    /// ([`LoopOptions::with_read_only`]) and for a backing file of the same size.
    pub fn change_backing(&self, backing: &File) -> Result<(), SimHostError> {
        sys::loop_change_fd(&self.device, backing).map_err(|source| SimHostError::Io {
            what: "LOOP_CHANGE_FD on",
            path: self.node.path.clone(),
            source,
        })
    }

    /// Size of the device in bytes, from `/sys/block/loopN/size`.
    pub fn size_bytes(&self) -> Result<u64, SimHostError> {
        let sectors: u64 = self
            .read_sys("size")?
            .parse()
            .map_err(|_| SimHostError::Io {
                what: "parse",
                path: self.sys_path("size"),
                source: io::Error::from(io::ErrorKind::InvalidData),
            })?;
        Ok(sectors * 512)
    }

    /// Whether the kernel reports direct I/O on (`/sys/block/loopN/loop/dio` reads 1).
    pub fn direct_io_enabled(&self) -> bool {
        self.read_sys("loop/dio").is_ok_and(|v| v == "1")
    }

    /// What `/sys/block/loopN/loop/backing_file` says (with " (deleted)" for unlinked files).
    pub fn backing_file(&self) -> Result<String, SimHostError> {
        self.read_sys("loop/backing_file")
    }

    fn sys_path(&self, leaf: &str) -> PathBuf {
        Path::new("/sys/block")
            .join(&self.node.kernel_name)
            .join(leaf)
    }

    fn read_sys(&self, leaf: &str) -> Result<String, SimHostError> {
        let path = self.sys_path(leaf);
        std::fs::read_to_string(&path)
            .map(|s| s.trim_end().to_owned())
            .map_err(SimHostError::io("read", &path))
    }

    /// Fails unless the kernel enabled direct I/O and an O_DIRECT read of the first 4 KiB works.
    fn check_direct_io(&self) -> Result<(), SimHostError> {
        let dio = self.read_sys("loop/dio")?;
        if dio != "1" {
            return Err(SimHostError::DirectIoOff {
                device: self.node.path.display().to_string(),
                dio,
            });
        }
        read_direct_4k(&self.node.path, 0)
            .map_err(SimHostError::io("O_DIRECT read of", &self.node.path))
    }
}

/// Reads 4 KiB at `offset` from `path` opened with O_DIRECT (through an aligned buffer).
pub fn read_direct_4k(path: &Path, offset: u64) -> io::Result<()> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)?;
    let mut buffer = AlignedBlock::new();
    let n = file.read_at(buffer.as_mut_slice(), offset)?;
    if n != AlignedBlock::LEN {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("short O_DIRECT read: {n} of {} bytes", AlignedBlock::LEN),
        ));
    }
    Ok(())
}

/// One 4 KiB block aligned to 4 KiB, as O_DIRECT needs.
pub struct AlignedBlock(Box<Aligned4k>);

#[repr(C, align(4096))]
struct Aligned4k([u8; 4096]);

impl AlignedBlock {
    /// The block's length in bytes.
    pub const LEN: usize = 4096;

    /// A zeroed block.
    pub fn new() -> Self {
        AlignedBlock(Box::new(Aligned4k([0; 4096])))
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.0 .0
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.0 .0
    }
}

impl Default for AlignedBlock {
    fn default() -> Self {
        Self::new()
    }
}

fn is_race(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EBUSY) | Some(libc::EAGAIN))
}

fn backoff(attempt: u32) {
    std::thread::sleep(Duration::from_micros(200 * u64::from(attempt.min(25) + 1)));
}

/// The flags every hostmax loop device gets, and the `struct loop_info64` that carries them.
fn loop_info(options: &LoopOptions) -> LoopInfo64 {
    // PARTSCAN: the kernel then drops every partition (also ones a test adds with addpart) when
    // the device detaches, so the next user of this loop number does not inherit them.
    let mut flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN;
    if options.direct_io {
        flags |= LO_FLAGS_DIRECT_IO;
    }
    if options.read_only {
        flags |= LO_FLAGS_READ_ONLY;
    }
    LoopInfo64 {
        lo_device: 0,
        lo_inode: 0,
        lo_rdevice: 0,
        lo_offset: options.offset,
        lo_sizelimit: options.size_limit,
        lo_number: 0,
        lo_encrypt_type: 0,
        lo_encrypt_key_size: 0,
        lo_flags: flags,
        lo_file_name: [0; 64],
        lo_crypt_name: [0; 64],
        lo_encrypt_key: [0; 32],
        lo_init: [0; 2],
    }
}

/// LOOP_CONFIGURE, or on kernels without it (EINVAL) [`configure_legacy`].
fn configure(device: &File, backing: &File, options: &LoopOptions) -> io::Result<()> {
    let config = LoopConfig {
        fd: backing.as_raw_fd() as u32,
        block_size: options.block_size,
        info: loop_info(options),
        reserved: [0; 8],
    };
    match sys::loop_configure(device, &config) {
        Err(err) if err.raw_os_error() == Some(libc::EINVAL) => {
            configure_legacy(device, backing, options)
        }
        other => other,
    }
}

/// What LOOP_CONFIGURE does, in the steps of kernels before 5.8: LOOP_SET_FD, then
/// LOOP_SET_STATUS64 (offset, size limit, autoclear and partscan: the flags it can set), then
/// LOOP_SET_BLOCK_SIZE and LOOP_SET_DIRECT_IO. Read-only comes from opening the device
/// read-only. Any failure after LOOP_SET_FD unbinds the device again.
fn configure_legacy(device: &File, backing: &File, options: &LoopOptions) -> io::Result<()> {
    sys::loop_set_fd(device, backing)?;
    let mut status = loop_info(options);
    status.lo_flags &= LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN;
    let set = sys::loop_set_status64(device, &status)
        .and_then(|()| {
            if options.block_size == 0 {
                return Ok(());
            }
            sys::loop_set_block_size(device, options.block_size)
        })
        .and_then(|()| {
            if !options.direct_io {
                return Ok(());
            }
            sys::loop_set_direct_io(device, true)
        });
    if set.is_err() {
        // Undoes our LOOP_SET_FD; the first error is the one worth reporting.
        let _ = sys::loop_clr_fd(device);
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unlinked 8 MiB file on /dev/shm whose second MiB starts with `marker`.
    fn backing_with_marker(marker: &[u8]) -> File {
        let path = format!("/dev/shm/hostmax-unit-loop-{}", std::process::id());
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        file.set_len(8 << 20).unwrap();
        file.write_all_at(marker, 1 << 20).unwrap();
        file
    }

    /// What the kernel says of a bound device, for comparing the two ways of binding it.
    fn bound_state(dev: &LoopDevice) -> Vec<(&'static str, String)> {
        [
            "loop/offset",
            "loop/sizelimit",
            "loop/autoclear",
            "loop/partscan",
            "loop/dio",
            "ro",
            "size",
            "queue/logical_block_size",
        ]
        .into_iter()
        .map(|leaf| (leaf, dev.read_sys(leaf).unwrap()))
        .collect()
    }

    #[test]
    fn the_older_kernels_setup_binds_a_device_as_loop_configure_does() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: loop devices need root");
            return;
        }
        let options = LoopOptions {
            offset: 1 << 20,
            size_limit: 4 << 20,
            direct_io: true,
            read_only: false,
            block_size: 4096,
        };
        let marker = b"hostmax legacy loop setup";
        let backing = backing_with_marker(marker);
        let modern = LoopDevice::attach_with(&backing, &options, configure).unwrap();
        let legacy = LoopDevice::attach_with(&backing, &options, configure_legacy).unwrap();
        let state = bound_state(&legacy);
        assert_eq!(state, bound_state(&modern));
        let get = |leaf: &str| state.iter().find(|(l, _)| *l == leaf).unwrap().1.clone();
        assert_eq!(get("loop/offset"), (1u64 << 20).to_string());
        assert_eq!(
            get("size"),
            (4u64 << 20 >> 9).to_string(),
            "512-byte sectors"
        );
        assert_eq!(get("loop/dio"), "1");
        assert_eq!(get("loop/autoclear"), "1");
        assert_eq!(get("loop/partscan"), "1");
        assert_eq!(get("queue/logical_block_size"), "4096");
        // The device starts at the offset: its first bytes are the backing file's second MiB.
        let mut block = AlignedBlock::new();
        let device = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(legacy.path())
            .unwrap();
        device.read_exact_at(block.as_mut_slice(), 0).unwrap();
        assert_eq!(&block.as_slice()[..marker.len()], marker);

        let read_only = LoopOptions {
            read_only: true,
            ..options
        };
        let legacy_ro = LoopDevice::attach_with(&backing, &read_only, configure_legacy).unwrap();
        assert_eq!(legacy_ro.read_sys("ro").unwrap(), "1");
    }
}
