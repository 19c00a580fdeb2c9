//! Whether this process may use io_uring at all, asked before any target is opened, so that a
//! machine where it is switched off gets one line naming the cause and the fix.

use std::io;

/// Where the kernel says whether io_uring is switched off (Linux 6.6+).
const DISABLED_SYSCTL: &str = "/proc/sys/kernel/io_uring_disabled";

/// Why io_uring cannot be used by this process; each message names the cause and the fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IoUringUnavailable {
    /// `kernel.io_uring_disabled = 2`: nobody may make a ring.
    #[error(
        "io_uring is switched off on this machine (kernel.io_uring_disabled = 2); \
         enable it with 'sysctl kernel.io_uring_disabled=0' as root"
    )]
    DisabledBySysctl,
    /// `kernel.io_uring_disabled = 1` and this process is neither privileged nor in the group.
    #[error(
        "io_uring is limited to root and the kernel.io_uring_group group here \
         (kernel.io_uring_disabled = 1); run hostmax as root, add this user to that group, \
         or 'sysctl kernel.io_uring_disabled=0'"
    )]
    RestrictedBySysctl,
    /// EPERM with the sysctl allowing it: a seccomp filter (containers' default profiles).
    #[error(
        "io_uring_setup is blocked (EPERM) by a seccomp filter, as containers' default \
         profiles do; allow io_uring_setup, io_uring_enter and io_uring_register \
         (e.g. docker run --security-opt seccomp=unconfined)"
    )]
    BlockedBySeccomp,
    /// ENOSYS: a kernel without io_uring (before 5.1 or built without it), or a filter hiding it.
    #[error(
        "this kernel has no io_uring (io_uring_setup: ENOSYS); run hostmax on Linux 5.1 or \
         later built with CONFIG_IO_URING (or, in a container, allow the io_uring syscalls)"
    )]
    NotInKernel,
    /// Any other failure to make a small ring.
    #[error("io_uring_setup failed: {0}")]
    Other(io::Error),
}

/// `Ok` if this process can make an io_uring (a two-entry ring, closed at once), else why not.
pub fn check_io_uring() -> Result<(), IoUringUnavailable> {
    match io_uring::IoUring::new(2) {
        Ok(_ring) => Ok(()),
        Err(err) => {
            let sysctl = std::fs::read_to_string(DISABLED_SYSCTL)
                .ok()
                .and_then(|v| v.trim().parse().ok());
            Err(classify(err, sysctl))
        }
    }
}

/// What `io_uring_setup`'s error means, given `kernel.io_uring_disabled` (`None` where the
/// kernel has no such sysctl).
fn classify(err: io::Error, io_uring_disabled: Option<u32>) -> IoUringUnavailable {
    match (err.raw_os_error(), io_uring_disabled) {
        (Some(libc::EPERM), Some(2)) => IoUringUnavailable::DisabledBySysctl,
        (Some(libc::EPERM), Some(1)) => IoUringUnavailable::RestrictedBySysctl,
        (Some(libc::EPERM), _) => IoUringUnavailable::BlockedBySeccomp,
        (Some(libc::ENOSYS), _) => IoUringUnavailable::NotInKernel,
        _ => IoUringUnavailable::Other(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errno(code: i32) -> io::Error {
        io::Error::from_raw_os_error(code)
    }

    #[test]
    fn each_cause_is_told_apart_and_names_its_fix() {
        let said = |code, sysctl| classify(errno(code), sysctl).to_string();
        assert!(said(libc::EPERM, Some(2)).contains("'sysctl kernel.io_uring_disabled=0'"));
        assert!(said(libc::EPERM, Some(1)).contains("io_uring_group"));
        assert!(said(libc::EPERM, Some(0)).contains("seccomp"));
        assert!(said(libc::EPERM, None).contains("seccomp"));
        assert!(said(libc::ENOSYS, None).contains("Linux 5.1"));
        assert!(said(libc::ENOMEM, Some(0)).contains("Cannot allocate memory"));
    }

    #[test]
    fn this_machine_can_make_a_ring() {
        // The tests of the engine run rings anyway; this checks the probe itself says Ok.
        check_io_uring().unwrap();
    }
}
