//! Files written whole or not at all: [`AtomicFile`] and [`write_atomically`]. Where each
//! output file may go is checked in [`super::destination`].
//!
//! A result file is never half-written: the bytes go to a new temporary file beside the
//! destination (created with `create_new`, so never through a planted link in a shared
//! directory), are flushed to disk, and the temporary file is renamed over the destination,
//! whose directory is then synced. A destination that is a symlink has its target replaced.
//! An `AtomicFile` dropped before [`AtomicFile::commit`] removes its temporary file, and making
//! one removes those a killed run left in the directory (their process is gone).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

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

/// A destination being written through a temporary file beside it.
#[derive(Debug)]
pub struct AtomicFile {
    temp: PathBuf,
    target: PathBuf,
    file: Option<File>,
}

impl AtomicFile {
    /// Creates the temporary file for `path` (the symlink's target if `path` is a symlink).
    pub fn create(path: &Path) -> Result<AtomicFile, AtomicWriteError> {
        let fail = |path: &Path| {
            let path = path.to_path_buf();
            move |source| AtomicWriteError { path, source }
        };
        let target = match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path).map_err(fail(path))?,
            _ => path.to_path_buf(),
        };
        let dir = parent_dir(&target);
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "hostmax-output".to_string());
        remove_dead_temporaries(&dir);
        let mut attempt = 0u32;
        loop {
            let temp = dir.join(format!(".{name}.tmp-{}-{attempt}", std::process::id()));
            match OpenOptions::new().write(true).create_new(true).open(&temp) {
                Ok(file) => {
                    return Ok(AtomicFile {
                        temp,
                        target,
                        file: Some(file),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
                Err(source) => return Err(AtomicWriteError { path: temp, source }),
            }
        }
    }

    /// The temporary file's path (for messages).
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// Puts the written bytes on disk and renames them over the destination.
    pub fn commit(mut self) -> Result<(), AtomicWriteError> {
        let file = self.file.take().expect("present until commit");
        // On disk before the rename, so a crash cannot leave the new name on empty data.
        if let Err(source) = file.sync_all() {
            return Err(AtomicWriteError {
                path: self.temp.clone(),
                source,
            });
        }
        drop(file);
        if let Err(source) = fs::rename(&self.temp, &self.target) {
            return Err(AtomicWriteError {
                path: self.target.clone(),
                source,
            });
        }
        // Make the rename durable; a failure here leaves a complete file, so it is ignored.
        if let Ok(d) = File::open(parent_dir(&self.target)) {
            let _ = d.sync_all();
        }
        Ok(())
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
        if self.file.is_some() || self.temp.exists() {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// Removes the temporary files a killed run left in `dir`: regular files of this user named
/// `.NAME.tmp-PID-N` (as [`AtomicFile::create`] names them) whose process PID is gone. A
/// live process's, another user's, and any other name are left alone.
fn remove_dead_temporaries(dir: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let me = nix::unistd::geteuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temporary_owner) else {
            continue;
        };
        let ours = fs::symlink_metadata(entry.path())
            .is_ok_and(|m| m.file_type().is_file() && m.uid() == me);
        if ours && !pid_alive(pid) {
            let _ = fs::remove_file(entry.path());
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
        path: file.temp.clone(),
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
