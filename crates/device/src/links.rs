//! Symbolic links another user controls: the one rule for every path hostmax reads a target
//! through or writes an output through ([`follow_trusted_links`]).
//!
//! In a sticky, world-writable directory (`/tmp`, `/dev/shm`, `/var/tmp`) anyone may create a
//! link, and only its owner (or the directory's) may remove it: a link there that belongs to
//! another user leads wherever that user points it (`/tmp/x -> /dev/sdb`, to a root-owned
//! image, or re-pointed between a check and an open). The kernel refuses to follow such a link
//! when `fs.protected_symlinks` is 1; hostmax applies the same rule whatever that setting says
//! (it is 0 on some hosts and in many containers): such a link is refused ([`UntrustedLink`]),
//! never followed.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::sys::stat::{FileStat, SFlag};

/// How many links one path may pass through (the kernel's own limit, `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// A symbolic link this process does not follow: it lies in a sticky, world-writable
/// directory (`/tmp`) and belongs neither to this user nor to the directory's owner, so
/// another user could point it anywhere (the kernel's `fs.protected_symlinks` rule, applied
/// whatever that setting says).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is a symbolic link of another user (uid {owner}) in the sticky world-writable directory {}, which hostmax does not follow; give the path it should lead to, or have the link removed", link.display(), dir.display())]
#[non_exhaustive]
pub struct UntrustedLink {
    /// The link.
    pub link: PathBuf,
    /// Its owner.
    pub owner: u32,
    /// The directory it is in.
    pub dir: PathBuf,
}

impl From<UntrustedLink> for io::Error {
    fn from(e: UntrustedLink) -> io::Error {
        io::Error::new(io::ErrorKind::PermissionDenied, e)
    }
}

/// Whether a link owned by `link_uid` in a directory of status `dir` may be followed by this
/// process: the kernel's `protected_symlinks` rule (a link in a sticky, world-writable
/// directory is followed only when it belongs to the follower or to the directory's owner).
fn may_follow(link_uid: u32, dir: &FileStat) -> bool {
    let sticky = dir.st_mode & libc::S_ISVTX != 0;
    let world_writable = dir.st_mode & libc::S_IWOTH != 0;
    !(sticky && world_writable)
        || link_uid == nix::unistd::geteuid().as_raw()
        || link_uid == dir.st_uid
}

/// The path `path` leads to, absolute, every symbolic link followed as the kernel would (`..`
/// after a link goes up from where the link led), except one another user controls (in a
/// sticky, world-writable directory, owned by neither this user nor the directory's owner):
/// that is an error carrying an [`UntrustedLink`] ([`untrusted`] finds it).
/// Components that do not exist are kept as they are, for whatever opens the path to say why
/// it cannot. A path that exists comes back with no link in it, as `realpath` gives it.
pub fn follow_trusted_links(path: &Path) -> io::Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    let mut pending: VecDeque<OsString> = VecDeque::new();
    fn push_parts(pending: &mut VecDeque<OsString>, p: &Path, front: bool) {
        let parts: Vec<OsString> = p
            .components()
            .filter_map(|c| match c {
                Component::RootDir => Some(OsString::from("/")),
                Component::CurDir => None,
                Component::ParentDir => Some(OsString::from("..")),
                Component::Normal(n) => Some(n.to_os_string()),
                Component::Prefix(_) => None,
            })
            .collect();
        if front {
            for part in parts.into_iter().rev() {
                pending.push_front(part);
            }
        } else {
            pending.extend(parts);
        }
    }
    push_parts(&mut pending, &absolute, false);
    let mut resolved = PathBuf::from("/");
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        if part == "/" {
            resolved = PathBuf::from("/");
            continue;
        }
        if part == ".." {
            resolved.pop();
            continue;
        }
        let candidate = resolved.join(&part);
        let st = match nix::sys::stat::lstat(&candidate) {
            Ok(st) => st,
            Err(_) => {
                // Missing (or unreadable): the rest is taken as it is, and whatever opens
                // it later says why it cannot.
                resolved = candidate;
                for rest in pending.drain(..) {
                    resolved.push(rest);
                }
                break;
            }
        };
        if st.st_mode & SFlag::S_IFMT.bits() != SFlag::S_IFLNK.bits() {
            resolved = candidate;
            continue;
        }
        let dir = nix::sys::stat::stat(&resolved)?;
        if !may_follow(st.st_uid, &dir) {
            return Err(UntrustedLink {
                link: candidate,
                owner: st.st_uid,
                dir: resolved,
            }
            .into());
        }
        hops += 1;
        if hops > MAX_LINKS {
            return Err(Errno::ELOOP.into());
        }
        let target = std::fs::read_link(&candidate)?;
        push_parts(&mut pending, &target, true);
    }
    Ok(resolved)
}

/// The refusal of a link another user controls inside `e` (from [`follow_trusted_links`]), if
/// that is what it is.
pub fn untrusted(e: &io::Error) -> Option<UntrustedLink> {
    e.get_ref()?.downcast_ref::<UntrustedLink>().cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn links_are_followed_unless_another_user_controls_them() {
        let dir = std::env::temp_dir().join(format!("hostmax-links-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let dir = fs::canonicalize(&dir).unwrap();
        let real = dir.join("real.txt");
        fs::write(&real, "x").unwrap();
        let sticky = dir.join("tmp");
        fs::create_dir(&sticky).unwrap();
        fs::set_permissions(&sticky, fs::Permissions::from_mode(0o1777)).unwrap();
        let link = sticky.join("l");
        std::os::unix::fs::symlink("../real.txt", &link).unwrap();
        // Our own link, `..` after it taken from where it led.
        assert_eq!(follow_trusted_links(&link).unwrap(), real);
        assert_eq!(
            follow_trusted_links(&sticky.join("none/../x")).unwrap(),
            sticky.join("none/../x")
        );
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
            let err = follow_trusted_links(&link).unwrap_err();
            let refused = untrusted(&err).expect("refused as untrusted");
            assert_eq!((refused.link, refused.owner), (link.clone(), 65534));
            // Through it on the way to something else, too.
            let through = dir.join("through");
            std::os::unix::fs::symlink(&link, &through).unwrap();
            assert!(untrusted(&follow_trusted_links(&through).unwrap_err()).is_some());
            // Not sticky, or not world-writable: followed as the kernel would.
            fs::set_permissions(&sticky, fs::Permissions::from_mode(0o777)).unwrap();
            assert_eq!(follow_trusted_links(&link).unwrap(), real);
            fs::set_permissions(&sticky, fs::Permissions::from_mode(0o1755)).unwrap();
            assert_eq!(follow_trusted_links(&link).unwrap(), real);
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_that_exists_resolves_as_realpath_does() {
        for path in [
            "/proc/self",
            "/proc/self/exe",
            "/dev/null",
            "/",
            "/tmp/../proc",
        ] {
            assert_eq!(
                follow_trusted_links(Path::new(path)).unwrap(),
                fs::canonicalize(path).unwrap(),
                "{path}"
            );
        }
    }
}
