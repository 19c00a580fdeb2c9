//! Who else writes: the block devices and regular files that processes other than this one
//! hold open for writing (`/proc/PID/fd`, each descriptor's access mode in
//! `/proc/PID/fdinfo/N`) or map shared and writable (`/proc/PID/maps`, each mapping's file
//! confirmed through `/proc/PID/map_files`), read once per check ([`Writers::scan`]).
//!
//! Files are known by device and inode, never by name: a writer through a hard link, another
//! path, a bind mount or a deleted name is the same writer. A process that exits during the
//! scan, or that this user may not look into (another user's, when not root), is passed over:
//! root sees every process of its PID namespace. Descriptors open only for reading are not
//! writers (see [`Writers::files`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::media::{Extent, MediaUser, Medium};
use crate::sysfs::sorted_names;
use crate::target::statx;

/// What processes other than this one write, from one pass over `/proc`.
#[derive(Debug, Default)]
pub(crate) struct Writers {
    /// Block devices open for writing: device number to each writer, `pid N (COMM), which has
    /// PATH open for writing`.
    devices: BTreeMap<u64, Vec<String>>,
    /// The writers of the files [`Writers::scan`] was asked about, in pid order, each a
    /// [`MediaUser`] (`pid N (COMM), which has PATH open for writing`, or maps it shared and
    /// writable) reaching the bytes it may write: all of the file through a descriptor, a
    /// mapping's own range through a shared writable mapping. Only writers:
    /// a reader cannot make this process's writes wrong, and what it reads is what the user's
    /// consent (`allow_write`, `force` for what the file carries) already gave up; refusing
    /// readers would make a check's answer depend on whether a passing reader (a backup,
    /// `md5sum`, an indexer) happened to be there at that moment. Devices are judged the same
    /// way (udev's and blkid's reads do not count).
    files: Vec<MediaUser>,
}

impl Writers {
    /// Reads every process under `proc_root` (`/proc`) but this one: the block devices each
    /// has open for writing, and the writers of each of `files` (`(st_dev, st_ino)`; the
    /// mappings are read only when there are files to look for).
    pub(crate) fn scan(proc_root: &Path, files: &BTreeSet<(u64, u64)>) -> Writers {
        let me = std::process::id().to_string();
        let mut out = Writers::default();
        for pid in sorted_names(proc_root)
            .into_iter()
            .filter(|n| *n != me && n.bytes().all(|b| b.is_ascii_digit()))
        {
            let process = proc_root.join(&pid);
            let who = || {
                let comm = std::fs::read_to_string(process.join("comm"))
                    .map(|c| c.trim().to_string())
                    .unwrap_or_default();
                format!("pid {pid} ({comm})")
            };
            let fd_dir = process.join("fd");
            for fd in sorted_names(&fd_dir) {
                let link = fd_dir.join(&fd);
                // Sockets, pipes and anonymous inodes (`socket:[N]`) name no path; only what
                // is open for writing is looked at further.
                let Ok(path) = std::fs::read_link(&link) else {
                    continue;
                };
                if !path.has_root() || !open_for_writing(&process.join("fdinfo").join(&fd)) {
                    continue;
                }
                let Some(node) = Node::of(&link) else {
                    continue;
                };
                let shown = path.display().to_string();
                let what = || format!("{}, which has {shown} open for writing", who());
                match node.kind {
                    NodeKind::BlockDevice(rdev) => {
                        let entry = out.devices.entry(rdev).or_default();
                        let what = what();
                        if !entry.contains(&what) {
                            entry.push(what);
                        }
                    }
                    NodeKind::File if files.contains(&node.file) => {
                        out.add(what(), node.file, (0, u64::MAX), &shown);
                    }
                    _ => {}
                }
            }
            if files.is_empty() {
                continue;
            }
            let Ok(maps) = std::fs::read_to_string(process.join("maps")) else {
                continue;
            };
            let inodes: BTreeSet<u64> = files.iter().map(|&(_, ino)| ino).collect();
            for mapping in maps
                .lines()
                .filter_map(SharedWritableMapping::parse)
                .filter(|m| inodes.contains(&m.file.1))
            {
                // The mapping's own file where the kernel lets this process see it (root:
                // map_files), else the device and inode maps shows.
                let file = Node::of(&process.join("map_files").join(mapping.addresses))
                    .map_or(mapping.file, |node| node.file);
                if !files.contains(&file) {
                    continue;
                }
                let what = format!("{}, which maps {} shared and writable", who(), mapping.path);
                out.add(what, file, mapping.range, mapping.path);
            }
        }
        out
    }

    /// The block devices open for writing, by number, each with its writers (`pid N (COMM),
    /// which has PATH open for writing`).
    pub(crate) fn devices(&self) -> impl Iterator<Item = (u64, &[String])> {
        self.devices
            .iter()
            .map(|(rdev, who)| (*rdev, who.as_slice()))
    }

    /// The writers of the files asked about ([`Writers::files`]).
    pub(crate) fn files(&self) -> &[MediaUser] {
        &self.files
    }

    /// Adds the writer `what` of bytes `range` of `file` (called `label` there), once: a
    /// process with several descriptors of one file, or several mappings of one range, is one
    /// writer of it.
    fn add(&mut self, what: String, (dev, ino): (u64, u64), range: (u64, u64), label: &str) {
        let extent = Extent {
            medium: Medium::File { dev, ino },
            start: range.0,
            end: range.1,
            label: label.to_string(),
        };
        let writer = MediaUser::new(what, None, vec![extent]);
        if !self.files.contains(&writer) {
            self.files.push(writer);
        }
    }
}

/// What an open file is, as far as finding writers needs.
struct Node {
    /// Its `(st_dev, st_ino)`.
    file: (u64, u64),
    kind: NodeKind,
}

enum NodeKind {
    /// A block device, by its number.
    BlockDevice(u64),
    /// A regular file.
    File,
    /// Anything else.
    Other,
}

impl Node {
    /// What `/proc/PID/fd/N` (or `/proc/PID/map_files/RANGE`) leads to, from the attributes
    /// the kernel has cached (`statx` with `AT_STATX_DONT_SYNC`: a file on a network or FUSE
    /// filesystem whose server does not answer is not asked); `None` when it is gone or may
    /// not be looked at.
    fn of(link: &Path) -> Option<Node> {
        let stx = statx(
            link,
            libc::AT_STATX_DONT_SYNC,
            libc::STATX_TYPE | libc::STATX_INO,
        )?;
        let dev = libc::makedev(stx.stx_dev_major, stx.stx_dev_minor);
        let kind = match u32::from(stx.stx_mode) & libc::S_IFMT {
            libc::S_IFBLK => {
                NodeKind::BlockDevice(libc::makedev(stx.stx_rdev_major, stx.stx_rdev_minor))
            }
            libc::S_IFREG => NodeKind::File,
            _ => NodeKind::Other,
        };
        Some(Node {
            file: (dev, stx.stx_ino),
            kind,
        })
    }
}

/// Whether the descriptor whose `/proc/PID/fdinfo/N` is `fdinfo` was opened for writing
/// (`O_WRONLY` or `O_RDWR` in its `flags:`); one that cannot be read is passed over (its
/// process is gone, or may not be looked into).
fn open_for_writing(fdinfo: &Path) -> bool {
    std::fs::read_to_string(fdinfo)
        .ok()
        .and_then(|info| {
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
            i32::from_str_radix(flags.trim(), 8).ok()
        })
        .is_some_and(|flags| flags & libc::O_ACCMODE != libc::O_RDONLY)
}

/// A line of `/proc/PID/maps` that maps a file shared and writable (`rw-s`): what writes to
/// the memory writes to the file.
#[derive(Debug, PartialEq, Eq)]
struct SharedWritableMapping<'a> {
    /// `START-END`, the mapping's name in `map_files`.
    addresses: &'a str,
    /// The bytes of the file it maps.
    range: (u64, u64),
    /// The file as maps shows it: `(st_dev, st_ino)`.
    file: (u64, u64),
    /// Its path as maps shows it.
    path: &'a str,
}

impl<'a> SharedWritableMapping<'a> {
    /// `START-END PERMS OFFSET MAJ:MIN INODE PATH` (hex but the inode), if it maps a file
    /// shared and writable.
    fn parse(line: &'a str) -> Option<SharedWritableMapping<'a>> {
        let mut fields = line.splitn(6, ' ');
        let addresses = fields.next()?;
        let perms = fields.next()?.as_bytes();
        if perms.get(1) != Some(&b'w') || perms.get(3) != Some(&b's') {
            return None;
        }
        let offset = u64::from_str_radix(fields.next()?, 16).ok()?;
        let (major, minor) = fields.next()?.split_once(':')?;
        let dev = libc::makedev(
            u32::from_str_radix(major, 16).ok()?,
            u32::from_str_radix(minor, 16).ok()?,
        );
        let ino: u64 = fields.next()?.parse().ok()?;
        let path = fields.next().unwrap_or("").trim_start();
        if ino == 0 || path.is_empty() {
            return None;
        }
        let (start, end) = addresses.split_once('-')?;
        let len = u64::from_str_radix(end, 16).ok()? - u64::from_str_radix(start, 16).ok()?;
        Some(SharedWritableMapping {
            addresses,
            range: (offset, offset.saturating_add(len)),
            file: (dev, ino),
            path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{symlink, MetadataExt};
    use std::path::PathBuf;

    #[test]
    fn maps_lines_that_write_a_file_are_found() {
        let line = "7f1c2a000000-7f1c2a200000 rw-s 00100000 00:1a 4242                       /dev/shm/db (deleted)";
        assert_eq!(
            SharedWritableMapping::parse(line),
            Some(SharedWritableMapping {
                addresses: "7f1c2a000000-7f1c2a200000",
                range: (0x100000, 0x300000),
                file: (libc::makedev(0, 0x1a), 4242),
                path: "/dev/shm/db (deleted)",
            })
        );
        for not_a_writer in [
            "7f1c2a000000-7f1c2a200000 r--s 00000000 00:1a 4242 /dev/shm/db",
            "7f1c2a000000-7f1c2a200000 rw-p 00000000 00:1a 4242 /dev/shm/db",
            "7ffd5a000000-7ffd5a021000 rw-s 00000000 00:00 0 ",
            "garbage",
        ] {
            assert_eq!(
                SharedWritableMapping::parse(not_a_writer),
                None,
                "{not_a_writer}"
            );
        }
    }

    /// A stand-in `/proc` of one process (pid 4194304, above any real pid) with descriptors
    /// `(fd, file, fdinfo flags)` and maps text.
    fn fake_proc(tag: &str, fds: &[(&str, &Path, &str)], maps: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("hostmax-proc-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let process = root.join("4194304");
        fs::create_dir_all(process.join("fd")).unwrap();
        fs::create_dir_all(process.join("fdinfo")).unwrap();
        fs::write(process.join("comm"), "qemu-system-x86\n").unwrap();
        fs::write(process.join("maps"), maps).unwrap();
        for (fd, file, flags) in fds {
            symlink(file, process.join("fd").join(fd)).unwrap();
            fs::write(
                process.join("fdinfo").join(fd),
                format!("pos:\t0\nflags:\t{flags}\nmnt_id:\t1\n"),
            )
            .unwrap();
        }
        root
    }

    fn id(path: &Path) -> (u64, u64) {
        let m = fs::metadata(path).unwrap();
        (m.dev(), m.ino())
    }

    #[test]
    fn writers_of_a_file_are_found_by_inode_and_readers_are_not() {
        let dir = std::env::temp_dir().join(format!("hostmax-writers-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let (image, other, read_only) = (dir.join("vm.img"), dir.join("b"), dir.join("c"));
        for f in [&image, &other, &read_only] {
            fs::write(f, b"data").unwrap();
        }
        // The image through a second name (a hard link), open O_RDWR; another file O_WRONLY
        // that nobody asks about; a third only read.
        let alias = dir.join("alias.img");
        fs::hard_link(&image, &alias).unwrap();
        let (m, i) = id(&image);
        let maps = format!(
            "7f0000000000-7f0000001000 rw-s 00002000 {:02x}:{:02x} {i} {}\n",
            libc::major(m),
            libc::minor(m),
            image.display()
        );
        let root = fake_proc(
            "files",
            &[
                ("3", &alias, "0100002"),
                ("4", &other, "0100001"),
                ("5", &read_only, "0100000"),
            ],
            &maps,
        );
        let asked: BTreeSet<_> = [id(&image), id(&read_only)].into();
        let found = Writers::scan(&root, &asked);
        let whats: Vec<&str> = found.files().iter().map(|w| w.what.as_str()).collect();
        assert_eq!(found.files().len(), 2, "{whats:?}");
        let reach = |n: usize| {
            let e = &found.files()[n].extents[0];
            (e.medium.clone(), e.start, e.end)
        };
        let medium = Medium::File {
            dev: id(&image).0,
            ino: id(&image).1,
        };
        assert_eq!(reach(0), (medium.clone(), 0, u64::MAX));
        assert_eq!(
            found.files()[0].what,
            format!(
                "pid 4194304 (qemu-system-x86), which has {} open for writing",
                alias.display()
            )
        );
        assert_eq!(reach(1), (medium, 0x2000, 0x3000));
        assert!(
            found.files()[1].what.ends_with("shared and writable"),
            "{whats:?}"
        );
        // Nothing asked: the mappings are not read, and no file writer is listed.
        assert!(Writers::scan(&root, &BTreeSet::new()).files().is_empty());
        fs::remove_dir_all(&root).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }
}
