//! Files written whole or not at all, through a directory resolved once: [`OutputDir`],
//! [`AtomicFile`] and [`write_atomically`]. Where each output file may go is checked in
//! [`super::destination`].
//!
//! A destination is resolved once ([`resolve`]: a symlink at its name is followed then, and
//! its directory held open as an `O_PATH` descriptor); everything after goes through that
//! descriptor (`openat`, `renameat2`, `unlinkat`), so a link re-pointed later changes nothing.
//! A result file is never half-written: the bytes go to a new temporary file in that
//! directory (created `O_EXCL`, so never through a planted link), are flushed to disk, and the
//! temporary file is renamed onto the name. The rename replaces only a regular file: a name
//! that was free takes the file with `RENAME_NOREPLACE`, and one that is taken is exchanged
//! with it (`RENAME_EXCHANGE`) and exchanged back if what it held was anything else (a device
//! node, a directory, a link that appeared meanwhile). The directory is then synced.
//! An `AtomicFile` dropped before [`AtomicFile::commit`] removes its temporary file, and making
//! one removes those a killed run left in the directory (their process is gone).

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::{renameat2, OFlag, RenameFlags};
use nix::sys::stat::{fstatat, FileStat, Mode, SFlag};
use nix::unistd::{unlinkat, UnlinkatFlags};

use hostmax_device::links::{follow_trusted_links, untrusted, UntrustedLink};

/// A failed atomic write, naming the file that failed.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct AtomicWriteError {
    /// The temporary file or the destination.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: io::Error,
}

/// A directory resolved once and held open (`O_PATH`): the files of an output are made,
/// renamed and removed through it, wherever its path leads later.
#[derive(Debug, Clone)]
pub struct OutputDir {
    fd: Arc<OwnedFd>,
    /// Where it was when opened, for messages.
    path: PathBuf,
}

impl PartialEq for OutputDir {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

impl Eq for OutputDir {}

impl OutputDir {
    /// Opens the directory `path` leads to now, following no link another user controls
    /// ([`follow_trusted_links`]; the path found is then opened with no link followed at
    /// all, where the kernel has `openat2`, so none planted meanwhile is either).
    pub fn open(path: &Path) -> io::Result<OutputDir> {
        let real = follow_trusted_links(path)?;
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let how = nix::fcntl::OpenHow::new()
            .flags(flags)
            .resolve(nix::fcntl::ResolveFlag::RESOLVE_NO_SYMLINKS);
        let fd = match nix::fcntl::openat2(nix::fcntl::AT_FDCWD, &real, how) {
            // A kernel before 5.6, or a seccomp filter that does not know openat2: the walk
            // above already refused links another user controls.
            Err(Errno::ENOSYS | Errno::EPERM) => nix::fcntl::open(&real, flags, Mode::empty())?,
            opened => opened?,
        };
        // The path of what was opened (links and `..` seen through), as the kernel knows it.
        let path = fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .or_else(|_| fs::canonicalize(path))
            .unwrap_or_else(|_| path.to_path_buf());
        Ok(OutputDir {
            fd: Arc::new(fd),
            path,
        })
    }

    /// Where the directory was when it was opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory's own status.
    pub fn stat(&self) -> io::Result<FileStat> {
        Ok(nix::sys::stat::fstat(self.fd.as_fd())?)
    }

    /// What `name` in the directory is now (a link is not followed), `None` if nothing.
    pub fn entry(&self, name: &OsStr) -> io::Result<Option<FileStat>> {
        match fstatat(
            self.fd.as_fd(),
            name,
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens `name` in the directory with `flags` (never following a link at the name).
    pub fn open_entry(&self, name: &OsStr, flags: OFlag, mode: u32) -> io::Result<File> {
        let fd = nix::fcntl::openat(
            self.fd.as_fd(),
            name,
            flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(mode),
        )?;
        Ok(File::from(fd))
    }

    /// The subdirectory `name`, made if missing and opened through this directory's
    /// descriptor, never through a link: a link or anything else put at the name is refused
    /// (`ELOOP`/`ENOTDIR`), so a folder's files go only where it was resolved.
    pub fn subdir(&self, name: &OsStr) -> io::Result<OutputDir> {
        match nix::sys::stat::mkdirat(self.fd.as_fd(), name, Mode::from_bits_truncate(0o777)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(e.into()),
        }
        let fd = nix::fcntl::openat(
            self.fd.as_fd(),
            name,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        let dir = OutputDir {
            fd: Arc::new(fd),
            path: self.path.join(name),
        };
        // O_PATH with O_NOFOLLOW opens a link itself rather than failing: refuse it here.
        let st = dir.stat()?;
        if st.st_mode & SFlag::S_IFMT.bits() != SFlag::S_IFDIR.bits() {
            return Err(io::Error::other(format!(
                "{}: is now a {} (something put it there after the check): not followed",
                dir.path.display(),
                node_kind(&st)
            )));
        }
        Ok(dir)
    }

    /// The statistics of the filesystem the directory is on.
    pub fn filesystem(&self) -> io::Result<nix::sys::statvfs::Statvfs> {
        Ok(nix::sys::statvfs::fstatvfs(self.fd.as_fd())?)
    }

    fn remove(&self, name: &OsStr) -> io::Result<()> {
        Ok(unlinkat(self.fd.as_fd(), name, UnlinkatFlags::NoRemoveDir)?)
    }

    fn rename(&self, from: &OsStr, to: &OsStr, flags: RenameFlags) -> nix::Result<()> {
        renameat2(self.fd.as_fd(), from, self.fd.as_fd(), to, flags)
    }

    fn sync(&self) {
        // O_PATH descriptors cannot be synced; open the directory itself through it. A failure
        // here leaves a complete file, so it is ignored.
        if let Ok(d) = nix::fcntl::openat(
            self.fd.as_fd(),
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            let _ = File::from(d).sync_all();
        }
    }
}

/// Why a destination could not be resolved ([`resolve`]).
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The path names no file (empty, or ends in `/`, `.` or `..`).
    #[error("names no file")]
    NoFileName,
    /// The path is a symbolic link to nothing.
    #[error("is a symbolic link to {}, which does not exist", target.display())]
    DanglingLink {
        /// Where the link leads.
        target: PathBuf,
    },
    /// The path goes through a link another user controls.
    #[error(transparent)]
    Untrusted(UntrustedLink),
    /// The directory cannot be opened.
    #[error("directory {}: {source}", dir.display())]
    Directory {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// Resolves the destination `path` once: a symlink at its name is followed now (and must
/// lead to an existing file), and its directory is opened. Gives the directory and the file's
/// name in it.
pub fn resolve(path: &Path) -> Result<(OutputDir, OsString), ResolveError> {
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = match follow_trusted_links(path) {
        Ok(target) if is_link && fs::symlink_metadata(&target).is_err() => {
            return Err(ResolveError::DanglingLink {
                target: link_target(path),
            })
        }
        Ok(target) => target,
        Err(e) => match untrusted(&e) {
            Some(link) => return Err(ResolveError::Untrusted(link)),
            None => {
                return Err(ResolveError::Directory {
                    dir: parent_dir(path),
                    source: e,
                })
            }
        },
    };
    let name = match target.file_name() {
        Some(name) if !target.as_os_str().as_bytes().ends_with(b"/") => name.to_os_string(),
        _ => return Err(ResolveError::NoFileName),
    };
    let dir = parent_dir(&target);
    let dir = OutputDir::open(&dir).map_err(|source| ResolveError::Directory { dir, source })?;
    Ok((dir, name))
}

/// Where the link `path` leads, as far as it can be followed (for messages).
fn link_target(path: &Path) -> PathBuf {
    let mut at = path.to_path_buf();
    // A chain of links: follow a few, as the kernel would (it stops at 40).
    for _ in 0..40 {
        let Ok(next) = fs::read_link(&at) else { break };
        at = parent_dir(&at).join(next);
    }
    std::path::absolute(&at).unwrap_or(at)
}

/// A destination being written through a temporary file in its directory.
#[derive(Debug)]
pub struct AtomicFile {
    dir: OutputDir,
    name: OsString,
    temp: OsString,
    file: Option<File>,
}

impl AtomicFile {
    /// Resolves `path` now ([`resolve`]) and creates its temporary file.
    pub fn create(path: &Path) -> Result<AtomicFile, AtomicWriteError> {
        let (dir, name) = resolve(path).map_err(|e| AtomicWriteError {
            path: path.to_path_buf(),
            source: match e {
                ResolveError::Directory { source, .. } => source,
                other => io::Error::new(io::ErrorKind::NotFound, other.to_string()),
            },
        })?;
        AtomicFile::create_in(&dir, &name)
    }

    /// Creates the temporary file for `name` in `dir`.
    pub fn create_in(dir: &OutputDir, name: &OsStr) -> Result<AtomicFile, AtomicWriteError> {
        remove_dead_temporaries(dir);
        let mut attempt = 0u32;
        loop {
            let mut temp = OsString::from(".");
            temp.push(name);
            temp.push(format!(".tmp-{}-{attempt}", std::process::id()));
            // Readable too, so what it took can be read back to keep elsewhere.
            let flags = OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_EXCL;
            match dir.open_entry(&temp, flags, 0o666) {
                Ok(file) => {
                    return Ok(AtomicFile {
                        dir: dir.clone(),
                        name: name.to_os_string(),
                        temp,
                        file: Some(file),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
                Err(source) => {
                    return Err(AtomicWriteError {
                        path: dir.path.join(&temp),
                        source,
                    })
                }
            }
        }
    }

    /// The temporary file's path (for messages).
    pub fn temp_path(&self) -> PathBuf {
        self.dir.path.join(&self.temp)
    }

    /// The destination's path, as resolved (for messages).
    pub fn target_path(&self) -> PathBuf {
        self.dir.path.join(&self.name)
    }

    /// The bytes written so far, read back from the temporary file (to keep them elsewhere
    /// when the destination cannot take them), through its descriptor: whatever became of
    /// its name.
    pub fn read_back(&self) -> io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let file = self.file.as_ref().expect("present until commit");
        let len = file.metadata()?.len();
        let mut bytes = vec![0; usize::try_from(len).map_err(io::Error::other)?];
        file.read_exact_at(&mut bytes, 0)?;
        Ok(bytes)
    }

    /// Puts the written bytes on disk and renames them onto the destination, replacing only a
    /// regular file (see the module overview).
    pub fn commit(mut self) -> Result<(), AtomicWriteError> {
        self.try_commit()
    }

    /// [`AtomicFile::commit`], and on failure the bytes written, read back before the
    /// temporary file goes (to keep them elsewhere).
    pub fn commit_or_read_back(mut self) -> Result<(), (AtomicWriteError, io::Result<Vec<u8>>)> {
        self.try_commit().map_err(|e| (e, self.read_back()))
    }

    fn try_commit(&mut self) -> Result<(), AtomicWriteError> {
        let file = self.file.as_ref().expect("present until commit");
        // On disk before the rename, so a crash cannot leave the new name on empty data.
        if let Err(source) = file.sync_all() {
            return Err(AtomicWriteError {
                path: self.temp_path(),
                source,
            });
        }
        if let Err(source) = replace_regular(&self.dir, &self.temp, &self.name) {
            return Err(AtomicWriteError {
                path: self.target_path(),
                source,
            });
        }
        self.file = None;
        self.dir.sync();
        Ok(())
    }
}

/// What kind of node `st` is, for messages.
pub fn node_kind(st: &FileStat) -> &'static str {
    match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFREG => "regular file",
        SFlag::S_IFDIR => "directory",
        SFlag::S_IFLNK => "symbolic link",
        SFlag::S_IFBLK => "block device",
        SFlag::S_IFCHR => "character device",
        SFlag::S_IFIFO => "FIFO",
        SFlag::S_IFSOCK => "socket",
        _ => "special file",
    }
}

fn is_regular(st: &FileStat) -> bool {
    st.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFREG.bits()
}

/// The refusal of a name that holds something other than a regular file now.
fn not_replaced(st: &FileStat) -> io::Error {
    io::Error::other(format!(
        "is now a {} (something put it there after the check): not replaced",
        node_kind(st)
    ))
}

/// Renames `temp` onto `name` in `dir` when `name` is free or a regular file; anything else
/// there (a node that appeared after the check) is left as it is and the rename refused.
fn replace_regular(dir: &OutputDir, temp: &OsStr, name: &OsStr) -> io::Result<()> {
    match dir.rename(temp, name, RenameFlags::RENAME_NOREPLACE) {
        Ok(()) => return Ok(()),
        Err(Errno::EEXIST) => {}
        // A filesystem without renameat2's flags: check, then a plain rename.
        Err(Errno::EINVAL) => return plain_replace(dir, temp, name),
        Err(e) => return Err(e.into()),
    }
    match dir.entry(name)? {
        Some(st) if !is_regular(&st) => return Err(not_replaced(&st)),
        _ => {}
    }
    match dir.rename(temp, name, RenameFlags::RENAME_EXCHANGE) {
        Ok(()) => {}
        Err(Errno::EINVAL) => return plain_replace(dir, temp, name),
        // Gone since: the name is free again.
        Err(Errno::ENOENT) => return Ok(dir.rename(temp, name, RenameFlags::RENAME_NOREPLACE)?),
        Err(e) => return Err(e.into()),
    }
    // `temp` now holds what was at the name.
    match dir.entry(temp)? {
        Some(st) if !is_regular(&st) => {
            // Put it back where it was.
            dir.rename(temp, name, RenameFlags::RENAME_EXCHANGE)?;
            Err(not_replaced(&st))
        }
        _ => {
            let _ = dir.remove(temp);
            Ok(())
        }
    }
}

fn plain_replace(dir: &OutputDir, temp: &OsStr, name: &OsStr) -> io::Result<()> {
    match dir.entry(name)? {
        Some(st) if !is_regular(&st) => Err(not_replaced(&st)),
        _ => Ok(nix::fcntl::renameat(
            dir.fd.as_fd(),
            temp,
            dir.fd.as_fd(),
            name,
        )?),
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.as_mut().expect("present until commit").write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().expect("present until commit").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // Not committed (or the rename failed): leave no temporary file behind.
        if self.file.take().is_some() {
            let _ = self.dir.remove(&self.temp);
        }
    }
}

/// Removes the temporary files a killed run left in `dir`: regular files of this user named
/// `.NAME.tmp-PID-N` (as [`AtomicFile::create`] names them) whose process PID is gone. A
/// live process's, another user's, and any other name are left alone.
fn remove_dead_temporaries(dir: &OutputDir) {
    let Ok(entries) = fs::read_dir(format!("/proc/self/fd/{}", dir.fd.as_raw_fd()))
        .or_else(|_| fs::read_dir(&dir.path))
    else {
        return;
    };
    let me = nix::unistd::geteuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temporary_owner) else {
            continue;
        };
        let ours = dir
            .entry(&name)
            .ok()
            .flatten()
            .is_some_and(|st| is_regular(&st) && st.st_uid == me);
        if ours && !pid_alive(pid) {
            let _ = dir.remove(&name);
        }
    }
}

/// The PID in a temporary file's name `.NAME.tmp-PID-N`, if the name is one.
fn temporary_owner(name: &str) -> Option<u32> {
    let (base, tail) = name.strip_prefix('.')?.rsplit_once(".tmp-")?;
    let (pid, attempt) = tail.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (!base.is_empty() && digits(attempt)).then_some(())?;
    pid.parse().ok().filter(|_| digits(pid))
}

/// Whether process `pid` exists (its `/proc` entry does), as the simulated host's sweep of
/// scratch directories decides it.
fn pid_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Writes `bytes` to `path` whole or not at all (see the module overview).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), AtomicWriteError> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes).map_err(|source| AtomicWriteError {
        path: file.temp_path(),
        source,
    })?;
    file.commit()
}

/// The directory a file path lives in (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ScratchDir;

    #[test]
    fn replaces_the_destination_whole_and_leaves_no_temporary_file() {
        let dir = ScratchDir::new("atomic");
        let path = dir.0.join("out.txt");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(dir.entries(), vec!["out.txt"]);
    }

    #[test]
    fn an_uncommitted_file_leaves_the_destination_untouched() {
        let dir = ScratchDir::new("atomic-drop");
        let path = dir.write("out.txt", "old");
        {
            let mut f = AtomicFile::create(&path).unwrap();
            f.write_all(b"half").unwrap();
        }
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(dir.entries(), vec!["out.txt"]);
    }

    #[test]
    fn a_symlinked_destination_has_its_target_replaced() {
        let dir = ScratchDir::new("atomic-link");
        let real = dir.write("real.txt", "old");
        let link = dir.0.join("link.txt");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomically(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
    }

    #[test]
    fn a_dead_runs_temporaries_are_removed_and_a_live_ones_kept() {
        let dir = ScratchDir::new("atomic-stale");
        // 4194305 is above the kernel's largest pid_max, so no process has it.
        let dead = dir.write(".out.json.tmp-4194305-0", "half");
        let live = dir.write(&format!(".log.hdr.tmp-{}-3", std::process::id()), "x");
        let other = dir.write(".notes.tmp-4194305-x", "keep");
        write_atomically(&dir.0.join("out.json"), b"{}").unwrap();
        assert!(!dead.exists());
        assert!(live.exists() && other.exists());
        assert_eq!(temporary_owner(".a.b.tmp-12-0"), Some(12));
        assert_eq!(temporary_owner(".tmp-12-0"), None);
        assert_eq!(temporary_owner(".a.tmp--0"), None);
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_the_file() {
        let err = write_atomically(Path::new("/nonexistent-hostmax-dir/x.json"), b"x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent-hostmax-dir/"), "{err}");
    }
}
