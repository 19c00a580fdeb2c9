//! Every `unsafe` of this crate, each behind a safe function: the loop driver's ioctls (from
//! `<linux/loop.h>`, which libc does not carry) and joining a cgroup between fork and exec.
//!
//! The ioctls are nix's macros where the argument is a pointer or nothing. The two that take
//! an `unsigned long` by value are called directly: nix's `ioctl_write_int_bad!` passes a C
//! `int`, whose upper half a variadic call leaves unspecified, and the kernel reads all 64 bits.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

// From <linux/loop.h>.
const LOOP_SET_FD: libc::c_ulong = 0x4C00;
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_SET_STATUS64: libc::c_ulong = 0x4C04;
const LOOP_CHANGE_FD: libc::c_ulong = 0x4C06;
const LOOP_SET_DIRECT_IO: libc::c_ulong = 0x4C08;
const LOOP_SET_BLOCK_SIZE: libc::c_ulong = 0x4C09;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;

/// `struct loop_info64` from <linux/loop.h>.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct LoopInfo64 {
    pub(crate) lo_device: u64,
    pub(crate) lo_inode: u64,
    pub(crate) lo_rdevice: u64,
    pub(crate) lo_offset: u64,
    pub(crate) lo_sizelimit: u64,
    pub(crate) lo_number: u32,
    pub(crate) lo_encrypt_type: u32,
    pub(crate) lo_encrypt_key_size: u32,
    pub(crate) lo_flags: u32,
    pub(crate) lo_file_name: [u8; 64],
    pub(crate) lo_crypt_name: [u8; 64],
    pub(crate) lo_encrypt_key: [u8; 32],
    pub(crate) lo_init: [u64; 2],
}

/// `struct loop_config` from <linux/loop.h> (the argument of `LOOP_CONFIGURE`, Linux 5.8+).
#[repr(C)]
pub(crate) struct LoopConfig {
    pub(crate) fd: u32,
    pub(crate) block_size: u32,
    pub(crate) info: LoopInfo64,
    pub(crate) reserved: [u64; 8],
}

const _: () = assert!(std::mem::size_of::<LoopInfo64>() == 232);
const _: () = assert!(std::mem::size_of::<LoopConfig>() == 304);

nix::ioctl_none_bad!(
    /// `LOOP_CTL_GET_FREE` on `/dev/loop-control`: the number of a free loop device.
    ioctl_loop_ctl_get_free,
    LOOP_CTL_GET_FREE
);
nix::ioctl_write_int_bad!(
    /// `LOOP_SET_FD`: binds the backing file (an fd, by value) to the loop device.
    ioctl_loop_set_fd,
    LOOP_SET_FD
);
nix::ioctl_none_bad!(
    /// `LOOP_CLR_FD`: unbinds the loop device.
    ioctl_loop_clr_fd,
    LOOP_CLR_FD
);
nix::ioctl_write_ptr_bad!(
    /// `LOOP_SET_STATUS64`: offset, size limit and flags, from a `struct loop_info64`.
    ioctl_loop_set_status64,
    LOOP_SET_STATUS64,
    LoopInfo64
);
nix::ioctl_write_ptr_bad!(
    /// `LOOP_CONFIGURE`: binds and sets up the device in one call, from a `struct loop_config`.
    ioctl_loop_configure,
    LOOP_CONFIGURE,
    LoopConfig
);

/// `LOOP_CTL_GET_FREE` on the loop driver's control node: the number of a free device.
pub(crate) fn loop_ctl_get_free(control: &File) -> io::Result<u32> {
    // SAFETY: LOOP_CTL_GET_FREE takes no argument; `control` keeps its fd open for the call.
    let number = unsafe { ioctl_loop_ctl_get_free(control.as_raw_fd()) }?;
    Ok(number as u32)
}

/// `LOOP_CONFIGURE` on `device` with `config` (Linux 5.8+; EINVAL before).
pub(crate) fn loop_configure(device: &File, config: &LoopConfig) -> io::Result<()> {
    // SAFETY: `config` is borrowed for the whole call and has the layout of `struct
    // loop_config`; the kernel only reads it. `device` and the backing fd inside `config` are
    // open: the caller holds both files.
    unsafe { ioctl_loop_configure(device.as_raw_fd(), config) }?;
    Ok(())
}

/// `LOOP_SET_FD`: binds `backing` to `device`.
pub(crate) fn loop_set_fd(device: &File, backing: &File) -> io::Result<()> {
    // SAFETY: LOOP_SET_FD takes the backing fd by value; both files stay open for the call
    // (the kernel takes its own reference to the backing file).
    unsafe { ioctl_loop_set_fd(device.as_raw_fd(), backing.as_raw_fd()) }?;
    Ok(())
}

/// `LOOP_SET_STATUS64` on `device` with `status`.
pub(crate) fn loop_set_status64(device: &File, status: &LoopInfo64) -> io::Result<()> {
    // SAFETY: `status` is borrowed for the whole call and has the layout of `struct
    // loop_info64`; the kernel only reads it. `device` is open for the call.
    unsafe { ioctl_loop_set_status64(device.as_raw_fd(), status) }?;
    Ok(())
}

/// `LOOP_SET_BLOCK_SIZE`: the device's logical block size.
pub(crate) fn loop_set_block_size(device: &File, block_size: u32) -> io::Result<()> {
    ioctl_by_value(device, LOOP_SET_BLOCK_SIZE, libc::c_ulong::from(block_size))
}

/// `LOOP_SET_DIRECT_IO`: direct I/O to the backing file on or off.
pub(crate) fn loop_set_direct_io(device: &File, on: bool) -> io::Result<()> {
    ioctl_by_value(device, LOOP_SET_DIRECT_IO, libc::c_ulong::from(on))
}

/// `LOOP_CHANGE_FD`: points the bound `device` at `backing` instead (the kernel allows it
/// on a read-only device only, and for a file of the same size).
pub(crate) fn loop_change_fd(device: &File, backing: &File) -> io::Result<()> {
    // The backing file's descriptor, by value; both files stay open for the call (the kernel
    // takes its own reference to the new backing file).
    let fd = libc::c_ulong::try_from(backing.as_raw_fd())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    ioctl_by_value(device, LOOP_CHANGE_FD, fd)
}

/// `LOOP_CLR_FD`: unbinds `device` (undoes [`loop_set_fd`]).
pub(crate) fn loop_clr_fd(device: &File) -> io::Result<()> {
    // SAFETY: LOOP_CLR_FD takes no argument; `device` keeps its fd open for the call.
    unsafe { ioctl_loop_clr_fd(device.as_raw_fd()) }?;
    Ok(())
}

/// An ioctl of the loop driver that takes an `unsigned long` by value.
fn ioctl_by_value(device: &File, request: libc::c_ulong, value: libc::c_ulong) -> io::Result<()> {
    // SAFETY: `request` is one of the loop ioctls that read their argument as an integer (no
    // pointer is passed); `device` keeps its fd open for the call.
    let ret = unsafe { libc::ioctl(device.as_raw_fd(), request, value) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Makes `cmd`'s child write "0" (itself) to `procs` (a cgroup's `cgroup.procs`) between fork
/// and exec, so it runs inside that cgroup from its first instruction on; the spawn fails with
/// the error if it cannot.
pub(crate) fn join_cgroup_before_exec(cmd: &mut Command, procs: CString) -> &mut Command {
    // SAFETY: the closure runs in the forked child before exec and only calls open, write
    // and close (async-signal-safe) on `procs`, a CString the closure owns (allocated before
    // the fork); it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let written = libc::write(fd, b"0".as_ptr().cast(), 1);
            let err = io::Error::last_os_error();
            libc::close(fd);
            if written == 1 {
                Ok(())
            } else {
                Err(err)
            }
        })
    }
}
