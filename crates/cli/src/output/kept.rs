//! A finished run is not lost when its output cannot be written: what the destination could
//! not take is kept elsewhere ([`keep`], as `hostmax-kept-PID-NAME` in the temporary
//! directory, else `/dev/shm`, else the working directory; a folder output's files all
//! together, in its layout, by [`keep_folder`]), and the error says where ([`Kept`]).
//! [`SpillingFile`] does the same for a file written while the runs go (the interval log):
//! the moment its destination fails, what it holds so far moves to the kept file and the
//! rest follows it there.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::atomic::{write_atomically, AtomicFile, AtomicWriteError, OutputDir};

/// Where an output that could not be written went instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// Kept whole in this file.
    At(PathBuf),
    /// Keeping it failed too (every place tried), for this reason.
    Lost(String),
}

impl fmt::Display for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kept::At(path) => write!(f, "kept in {}", path.display()),
            Kept::Lost(why) => write!(f, "keeping it elsewhere failed too ({why})"),
        }
    }
}

/// The places a kept output may go, in the order tried: the temporary directory, `/dev/shm`
/// (memory, so not the full disk that failed), the working directory.
fn places() -> Vec<PathBuf> {
    let mut places = vec![std::env::temp_dir(), PathBuf::from("/dev/shm")];
    if let Ok(cwd) = std::env::current_dir() {
        places.push(cwd);
    }
    places.dedup();
    places
}

/// The kept file's name for an output named `name` (`r.json` -> `hostmax-kept-PID-r.json`).
fn kept_name(name: &OsStr) -> OsString {
    let mut kept = OsString::from(format!("hostmax-kept-{}-", std::process::id()));
    kept.push(name);
    kept
}

/// The file name of `path` to keep it under.
pub fn name_of(path: &Path) -> OsString {
    path.file_name()
        .map_or_else(|| OsString::from("hostmax-output"), OsStr::to_os_string)
}

/// Keeps `bytes`, what an output named `name` failed to take, in the first place that takes
/// them whole.
pub fn keep(name: &OsStr, bytes: &[u8]) -> Kept {
    let mut why = String::from("no place to keep it");
    for place in places() {
        let path = place.join(kept_name(name));
        match write_kept(&place, &kept_name(name), bytes) {
            Ok(()) => return Kept::At(path),
            Err(e) => why = e.to_string(),
        }
    }
    Kept::Lost(why)
}

/// Writes `bytes` as `name` in the directory `place` (opened following no link another user
/// controls), never through a link at `name`: in a shared temporary directory another user
/// may have put one there.
fn write_kept(place: &Path, name: &OsStr, bytes: &[u8]) -> Result<(), AtomicWriteError> {
    let dir = OutputDir::open(place).map_err(|source| AtomicWriteError {
        path: place.to_path_buf(),
        source,
    })?;
    let mut file = AtomicFile::create_in(&dir, name)?;
    file.write_all(bytes).map_err(|source| AtomicWriteError {
        path: file.temp_path(),
        source,
    })?;
    file.commit()
}

/// Keeps the files of a folder output named `name` that its destination failed to take,
/// (path in the folder, bytes), all of them in one new folder in the first place that takes
/// them whole, in the same layout.
pub fn keep_folder(name: &OsStr, files: &[(PathBuf, Vec<u8>)]) -> Kept {
    let mut why = String::from("no place to keep it");
    for place in places() {
        let root = place.join(kept_name(name));
        if let Err(e) = std::fs::create_dir(&root) {
            why = format!("{}: {e}", root.display());
            continue;
        }
        let all = files.iter().try_for_each(|(rel, bytes)| {
            let path = root.join(rel);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            write_atomically(&path, bytes).map_err(|e| e.to_string())
        });
        match all {
            Ok(()) => return Kept::At(root),
            Err(e) => {
                why = e;
                let _ = std::fs::remove_dir_all(&root);
            }
        }
    }
    Kept::Lost(why)
}

/// A file written while the runs go, through an [`AtomicFile`] at its destination; when the
/// destination fails (a full filesystem, a device gone), the bytes it took are read back and
/// moved to a kept file, where the rest goes too. Writes fail only when keeping fails as well.
pub struct SpillingFile {
    /// The destination's temporary file, until it fails.
    primary: Option<AtomicFile>,
    /// Bytes the primary took.
    written: usize,
    /// The kept file, once the primary failed, and its path.
    spill: Option<(AtomicFile, PathBuf)>,
    /// Why the destination failed.
    failure: Option<AtomicWriteError>,
    /// The destination's name, for the kept file's.
    name: OsString,
}

impl SpillingFile {
    /// Writes to `file`, an output named `name`.
    pub fn new(file: AtomicFile, name: OsString) -> SpillingFile {
        SpillingFile {
            primary: Some(file),
            written: 0,
            spill: None,
            failure: None,
            name,
        }
    }

    /// Moves what the primary took to a kept file, after `failure`.
    fn spill(&mut self, failure: AtomicWriteError, taken: io::Result<Vec<u8>>) -> io::Result<()> {
        self.failure = Some(failure);
        let mut bytes = taken?;
        bytes.truncate(self.written);
        let mut last = io::Error::other("no place to keep it");
        for place in places() {
            let path = place.join(kept_name(&self.name));
            let made = OutputDir::open(&place)
                .and_then(|dir| {
                    AtomicFile::create_in(&dir, &kept_name(&self.name)).map_err(|e| e.source)
                })
                .and_then(|mut f| f.write_all(&bytes).map(|()| f));
            match made {
                Ok(file) => {
                    self.spill = Some((file, path));
                    return Ok(());
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Renames the file into place (the destination, or the kept file after a failure).
    /// `Ok(None)`: written where it should be; `Ok(Some((failure, kept)))`: the destination
    /// failed and what it should hold is kept elsewhere (or lost, as [`Kept`] says).
    pub fn finish(mut self) -> Option<(AtomicWriteError, Kept)> {
        if let Some(primary) = self.primary.take() {
            return match primary.commit_or_read_back() {
                Ok(()) => None,
                Err((failure, bytes)) => Some(match bytes {
                    Ok(bytes) => (failure, keep(&self.name, &bytes)),
                    Err(e) => (failure, Kept::Lost(e.to_string())),
                }),
            };
        }
        let failure = self.failure.take().unwrap_or_else(|| AtomicWriteError {
            path: PathBuf::from(&self.name),
            source: io::Error::other("written nowhere"),
        });
        let kept = match self.spill.take() {
            Some((file, path)) => match file.commit() {
                Ok(()) => Kept::At(path),
                Err(e) => Kept::Lost(e.to_string()),
            },
            None => Kept::Lost("no place to keep it".into()),
        };
        Some((failure, kept))
    }
}

impl Write for SpillingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some((spill, _)) = &mut self.spill {
            return spill.write(buf);
        }
        let Some(primary) = &mut self.primary else {
            return Err(io::Error::other("the output failed and could not be kept"));
        };
        match primary.write(buf) {
            Ok(n) => {
                self.written += n;
                Ok(n)
            }
            Err(source) => {
                let primary = self.primary.take().expect("checked above");
                let taken = primary.read_back();
                let failure = AtomicWriteError {
                    path: primary.target_path(),
                    source,
                };
                drop(primary);
                self.spill(failure, taken)?;
                self.write(buf)
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match (&mut self.spill, &mut self.primary) {
            (Some((spill, _)), _) => spill.flush(),
            (None, Some(primary)) => primary.flush(),
            (None, None) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ScratchDir;
    use std::fs;

    #[test]
    fn kept_bytes_go_to_the_temporary_directory_whole() {
        let name = OsString::from(format!("keep-test-{}.svg", std::process::id()));
        let Kept::At(path) = keep(&name, b"<svg/>") else {
            panic!("not kept")
        };
        assert!(path.starts_with(std::env::temp_dir()), "{}", path.display());
        assert_eq!(fs::read(&path).unwrap(), b"<svg/>");
        fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_destination_that_fails_mid_write_spills_what_it_took_and_the_rest() {
        let scratch = ScratchDir::new("spill");
        let gone = scratch.0.join("gone");
        fs::create_dir(&gone).unwrap();
        let name = OsString::from(format!("spill-{}.hlog", std::process::id()));
        let file = AtomicFile::create(&gone.join(&name)).unwrap();
        let mut out = SpillingFile::new(file, name);
        out.write_all(b"first ").unwrap();
        // The destination's directory goes: the commit fails, the log is kept elsewhere.
        let temp = fs::read_dir(&gone).unwrap().next().unwrap().unwrap().path();
        fs::remove_file(&temp).unwrap();
        fs::remove_dir(&gone).unwrap();
        out.write_all(b"second").unwrap();
        let (failure, kept) = out.finish().expect("the destination failed");
        assert!(failure.path.starts_with(&gone), "{failure}");
        let Kept::At(path) = kept else {
            panic!("not kept: {kept}")
        };
        // The bytes of an unlinked temporary file are still readable through its descriptor.
        assert_eq!(fs::read(&path).unwrap(), b"first second");
        fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_link_at_the_kept_name_is_not_followed() {
        let dir = ScratchDir::new("kept-link");
        let victim = dir.write("victim", "precious");
        let name = kept_name("r.json".as_ref());
        std::os::unix::fs::symlink(&victim, dir.0.join(&name)).unwrap();
        let err = write_kept(&dir.0, &name, b"{}").unwrap_err().to_string();
        assert!(err.contains("not replaced"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }
}
