//! What the loop driver itself says a loop device is bound to (`LOOP_GET_STATUS64`): the
//! backing file by device and inode, or the block device below it. The kernel's identity of
//! the backing, never its name: sysfs's `loop/backing_file` is a path the kernel trims (an
//! image whose name ends in a space loses it there) and marks `(deleted)`.

use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;

/// `struct loop_info64` from <linux/loop.h> (only the identity fields are read).
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

const _: () = assert!(std::mem::size_of::<LoopInfo64>() == 232);

nix::ioctl_read_bad!(
    /// `LOOP_GET_STATUS64`: the loop device's binding, into a `struct loop_info64`.
    loop_get_status64,
    0x4C05,
    LoopInfo64
);

/// A loop device's backing, as the loop driver knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoopBacking {
    /// A file, by `st_dev` and inode (also when it has been deleted or renamed).
    File {
        /// `st_dev` of the file's filesystem.
        dev: u64,
        /// The file's inode number.
        ino: u64,
    },
    /// A block device, by device number.
    Block((u32, u32)),
}

/// The backing of the loop device numbered `dev` (kernel name `name`), from the driver;
/// `None` when it is not a bound loop device or its node cannot be opened (no `/dev/NAME` or
/// `/dev/block/MAJ:MIN` that is that device).
pub fn loop_backing(name: &str, dev: (u32, u32)) -> Option<LoopBacking> {
    let candidates = [
        format!("/dev/{name}"),
        format!("/dev/block/{}:{}", dev.0, dev.1),
    ];
    let file = candidates.iter().find_map(|path| {
        // Read-only and non-blocking: the ioctl needs no I/O, and nothing is claimed.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .ok()?;
        let meta = file.metadata().ok()?;
        // A name is only a way in: the node opened must be the device asked about.
        let is_it = meta.file_type().is_block_device()
            && (libc::major(meta.rdev()), libc::minor(meta.rdev())) == dev;
        is_it.then_some(file)
    })?;
    // SAFETY: all-zero bytes are a valid `LoopInfo64` (integers and byte arrays only).
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    // SAFETY: `file` is an open block device for the whole call, and `info` is a local
    // `struct loop_info64` the kernel fills and keeps no pointer to.
    unsafe { loop_get_status64(file.as_raw_fd(), &mut info) }.ok()?;
    Some(if info.lo_rdevice != 0 {
        LoopBacking::Block(decode_dev(info.lo_rdevice))
    } else {
        let (major, minor) = decode_dev(info.lo_device);
        LoopBacking::File {
            dev: libc::makedev(major, minor),
            ino: info.lo_inode,
        }
    })
}

/// Every bound loop device of this host (`class/block/loop*` with a `loop/backing_file`) with
/// its backing: as the driver reports it ([`loop_backing`]), else by `stat` of the name sysfs
/// shows where the device node cannot be opened; a loop device whose backing cannot be told
/// either way is left out. Sorted by kernel name.
pub fn loop_backings(sysfs: &crate::Sysfs) -> Vec<(String, LoopBacking)> {
    let mut out: Vec<(String, LoopBacking)> =
        crate::sysfs::sorted_names(&sysfs.path("class/block"))
            .into_iter()
            .filter(|name| name.starts_with("loop"))
            .filter_map(|name| {
                let shown = sysfs.value(format!("class/block/{name}/loop/backing_file"))?;
                let backing = loop_backing_of(sysfs, &name).or_else(|| {
                    let meta = std::fs::metadata(&shown).ok()?;
                    Some(if meta.file_type().is_block_device() {
                        LoopBacking::Block((libc::major(meta.rdev()), libc::minor(meta.rdev())))
                    } else {
                        LoopBacking::File {
                            dev: meta.dev(),
                            ino: meta.ino(),
                        }
                    })
                })?;
                Some((name, backing))
            })
            .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// [`loop_backing`] of the block device `name` as `sysfs` numbers it; `None` for any device
/// that is not a bound loop device.
pub(crate) fn loop_backing_of(sysfs: &crate::Sysfs, name: &str) -> Option<LoopBacking> {
    let dev = sysfs.value(format!("class/block/{name}/dev"))?;
    let (major, minor) = dev.trim().split_once(':')?;
    loop_backing(name, (major.parse().ok()?, minor.parse().ok()?))
}

impl LoopBacking {
    /// `DEV:INODE` of a file, `block MAJ:MIN` of a device: how identities write it.
    pub fn describe(&self) -> String {
        match self {
            LoopBacking::File { dev, ino } => format!("{dev}:{ino}"),
            LoopBacking::Block((major, minor)) => format!("block {major}:{minor}"),
        }
    }
}

/// A device number as the kernel encodes it for user space in `loop_info64`
/// (`huge_encode_dev`: minor's low byte, then 12 bits of major, then the rest of minor).
fn decode_dev(encoded: u64) -> (u32, u32) {
    let major = ((encoded >> 8) & 0xfff) as u32;
    let minor = ((encoded & 0xff) | ((encoded >> 12) & 0xfff00)) as u32;
    (major, minor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers_decode_as_the_kernel_encodes_them() {
        // huge_encode_dev(MKDEV(7, 3)) and of an anonymous tmpfs device 0:1234.
        assert_eq!(decode_dev((7 << 8) | 3), (7, 3));
        let minor: u64 = 1234;
        assert_eq!(
            decode_dev((minor & 0xff) | ((minor & !0xff) << 12)),
            (0, 1234)
        );
        // Through makedev, the same number stat(2) gives.
        let (ma, mi) = decode_dev((259 << 8) | 0x12 | (0x300 << 12));
        assert_eq!((ma, mi), (259, 0x312));
    }
}
