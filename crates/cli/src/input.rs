//! Input files (reports to merge, checkpoints, spec and password files) read whole, with
//! bounds: only a regular file is read (a FIFO, device or socket is refused before any read;
//! the file is opened `O_NONBLOCK`, so opening a FIFO does not wait for a writer), and never
//! more than a limit, so `merge /dev/zero` or a FIFO nobody writes cannot hold a command.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::units::human_size;

/// The most bytes read from one report, checkpoint or other input file.
pub const INPUT_LIMIT: u64 = 1 << 30;

/// Why an input file was not read. Each is one line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// It cannot be opened or read.
    #[error("{}: cannot read it ({}); give a readable file", path.display(), one_line(source))]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// It is not a regular file.
    #[error("{}: is a {kind}, not a regular file, so it is not read; give a regular file", path.display())]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is (`FIFO`, `character device`).
        kind: &'static str,
    },
    /// It is larger than the limit.
    #[error("{}: is larger than the {} hostmax reads from one input file; give the right file", path.display(), human_size(*limit))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit.
        limit: u64,
    },
}

impl InputError {
    /// Whether the file does not exist.
    pub fn not_found(&self) -> bool {
        matches!(self, InputError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

fn one_line(e: &io::Error) -> String {
    e.to_string().replace('\n', " ")
}

fn kind_of(ft: std::fs::FileType) -> &'static str {
    if ft.is_fifo() {
        "FIFO"
    } else if ft.is_char_device() {
        "character device"
    } else if ft.is_block_device() {
        "block device"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

/// Reads the regular file `path` whole, refusing anything else and anything larger than
/// `limit` bytes (see the module overview).
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let io_error = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    // A socket cannot be opened at all: name it from its status first.
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            return Err(InputError::NotRegular {
                path: path.to_path_buf(),
                kind: kind_of(meta.file_type()),
            });
        }
    }
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(io_error)?;
    // What was opened, which may not be what the path held a moment before.
    let meta = file.metadata().map_err(io_error)?;
    if !meta.is_file() {
        return Err(InputError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(meta.file_type()),
        });
    }
    if meta.len() > limit {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // A file that grows while read is still cut at the limit.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(bytes)
}

/// [`read_bounded`] with [`INPUT_LIMIT`], as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String, InputError> {
    let bytes = read_bounded(path, INPUT_LIMIT)?;
    String::from_utf8(bytes).map_err(|e| InputError::Io {
        path: path.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ScratchDir;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = ScratchDir::new("input");
        let file = dir.write("r.json", "{}");
        assert_eq!(read_bounded(&file, 2).unwrap(), b"{}");
        let err = read_bounded(&file, 1).unwrap_err().to_string();
        assert!(err.contains("is larger than the 1 B"), "{err}");
        let fifo = dir.0.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let err = read_bounded(&fifo, 10).unwrap_err().to_string();
        assert!(err.contains("is a FIFO, not a regular file"), "{err}");
        let err = read_bounded(Path::new("/dev/zero"), 10)
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a character device"), "{err}");
        assert!(read_bounded(&dir.0.join("none"), 10)
            .unwrap_err()
            .not_found());
    }
}
