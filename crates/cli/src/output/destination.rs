//! Every output file of every command, in one place: checked once before any I/O
//! ([`OutputFile::check`], [`check_apart`]; [`super::export::Outputs::declare`] calls them)
//! and written whole or not at all ([`write_output`], through [`super::atomic`]), or kept
//! elsewhere when its destination fails after the run ([`super::kept`]).
//!
//! The check proves the file can be written, as the write will do it: the path is resolved
//! once (a symlink followed now, to an existing file; the directory held open, and written
//! through later whatever its path then leads to), a temporary file is made in the directory
//! and removed, the filesystem has room, and a file already there can be replaced by this
//! user (not another user's in a sticky directory, not immutable or append-only).
//!
//! `-` is standard output where that makes sense (a JSON report, which is then the only thing
//! written there) and refused with a one-line error elsewhere (an interval log or a picture
//! mixed into the table on stdout would be neither).

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

use super::atomic::{
    node_kind, parent_dir, resolve, AtomicFile, AtomicWriteError, OutputDir, ResolveError,
};
use super::kept::{keep, keep_folder, name_of, Kept};
use crate::error::BadInput;
use crate::units::human_size;
use hostmax_device::links::{follow_trusted_links, untrusted};

/// The least free space a filesystem must have for an output to be written there. A floor,
/// not a promise: a one-device 2 s report is 21 KiB, four devices over 10 s 196 KiB (their
/// interval log 331 KiB), and a long run of many devices more; what a filesystem that fills
/// during the run cannot take is kept elsewhere ([`super::kept`]).
pub const MIN_ROOM: u64 = 1 << 20;

/// Where a checked output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// `-`: standard output, and nothing else goes there (JSON only).
    Stdout,
    /// A file, written to a temporary file beside it and renamed into place.
    File(OutputPath),
    /// A folder of files (made if missing), resolved when checked.
    Folder(OutputFolder),
}

impl Destination {
    /// The file's path as given (made absolute), or `None` for standard output.
    pub fn file_path(&self) -> Option<&Path> {
        match self {
            Destination::Stdout => None,
            Destination::File(out) => Some(out.path()),
            Destination::Folder(out) => Some(out.path()),
        }
    }
}

/// An output folder, resolved when it was checked: the folder itself held open, or, when it
/// was missing, the directory it goes in (held open) and its name there, made when written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFolder {
    /// The path as given, absolute: what messages name.
    path: PathBuf,
    /// The folder, or the directory it is made in.
    base: OutputDir,
    /// The folder's name in `base` when it did not exist yet.
    missing: Option<OsString>,
}

impl OutputFolder {
    /// The path as given, made absolute.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder, made now if it was missing, through the directory resolved when checked.
    fn open(&self) -> io::Result<OutputDir> {
        match &self.missing {
            Some(name) => self.base.subdir(name),
            None => Ok(self.base.clone()),
        }
    }

    /// The directory `rel` (a relative path of plain names) in the folder, each missing
    /// level made, each opened through the one above and never through a link.
    fn dir_of(&self, rel: &Path) -> io::Result<OutputDir> {
        let mut dir = self.open()?;
        for part in rel.components() {
            let std::path::Component::Normal(name) = part else {
                return Err(io::Error::other(format!(
                    "{}: not a plain name in the folder",
                    rel.display()
                )));
            };
            dir = dir.subdir(name)?;
        }
        Ok(dir)
    }
}

/// An output file, resolved when it was checked: the directory it goes in (held open) and
/// its name there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputPath {
    /// The path as given, absolute: what messages name.
    path: PathBuf,
    dir: OutputDir,
    name: OsString,
}

impl OutputPath {
    /// The path as given, made absolute.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the file goes, as resolved when checked (a symlink's target).
    #[cfg(test)]
    pub fn resolved(&self) -> PathBuf {
        self.dir.path().join(&self.name)
    }

    /// A temporary file for it, in the directory resolved when checked.
    pub fn create(&self) -> Result<AtomicFile, AtomicWriteError> {
        AtomicFile::create_in(&self.dir, &self.name)
    }
}

/// An option that names an output file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputFile {
    /// The option, as messages name it (`--json`).
    pub option: &'static str,
    /// A file name to suggest in messages.
    pub example: &'static str,
    /// Whether `-` means standard output.
    pub stdout: bool,
    /// Whether the option names a folder the output fills with files (`--fio-json` of a
    /// command of several runs) rather than one file.
    pub folder: bool,
    /// What the file holds, as messages name it (`the report`).
    pub what: &'static str,
}

/// `--json` of every command: a file, or `-` for standard output.
pub const JSON: OutputFile = OutputFile::new("--json", "hostmax.json", true, "the report");
/// `--hdr-log`: HdrHistogram's interval log.
pub const HDR_LOG: OutputFile = OutputFile::new("--hdr-log", "hostmax.hlog", false, "the log");
/// `--svg` of `hostmax sweep` and `hostmax curve`.
pub const SVG: OutputFile = OutputFile::new("--svg", "chart.svg", false, "the chart");
/// `--html` of `hostmax suite`.
pub const HTML: OutputFile = OutputFile::new("--html", "report.html", false, "the page");
/// `--fio-json` of a single run: one file in fio's JSON layout.
pub const FIO_JSON_FILE: OutputFile =
    OutputFile::new("--fio-json", "fio.json", false, "the fio report");
/// `--fio-json` of a command of several runs: a folder in fio-plot's layout.
pub const FIO_JSON_FOLDER: OutputFile =
    OutputFile::folder("--fio-json", "fio-results", "the fio reports");

impl OutputFile {
    /// The output file `option` names; `example` is the file name messages suggest, `stdout`
    /// whether `-` means standard output, `what` what the file holds.
    pub const fn new(
        option: &'static str,
        example: &'static str,
        stdout: bool,
        what: &'static str,
    ) -> OutputFile {
        OutputFile {
            option,
            example,
            stdout,
            folder: false,
            what,
        }
    }

    /// The output folder `option` names (made when the output is written); `example` is the
    /// folder name messages suggest, `what` what it holds.
    pub const fn folder(
        option: &'static str,
        example: &'static str,
        what: &'static str,
    ) -> OutputFile {
        OutputFile {
            option,
            example,
            stdout: false,
            folder: true,
            what,
        }
    }

    /// Checks, before any I/O of a run, that the output can go to `path`: `-` is standard
    /// output (or refused where it makes no sense); a file must be writable atomically: not
    /// empty, not a directory or a special file (the rename would replace a device node rather
    /// than write into it), not a link to nothing, in an existing directory where this user
    /// can make files, on a filesystem with room ([`MIN_ROOM`]), and replaceable if it exists
    /// (see the module overview). The path is resolved now, once: the write goes to the
    /// directory found now. Every refusal is one line naming the option, the path and the fix.
    pub fn check(&self, path: &Path) -> Result<Destination, BadInput> {
        if self.folder {
            return self.check_folder(path);
        }
        let option = self.option;
        let example = self.example;
        let shown = path.display();
        let or_stdout = if self.stdout {
            ", or - for standard output"
        } else {
            ""
        };
        if path.as_os_str() == "-" {
            return if self.stdout {
                Ok(Destination::Stdout)
            } else {
                Err(BadInput(format!(
                    "{option} -: this output goes to a file, not standard output; give a path such as {example}"
                )))
            };
        }
        if path.as_os_str().is_empty() {
            return Err(BadInput(format!(
                "{option}: the path is empty; give a file path such as {example}{or_stdout}"
            )));
        }
        if let Some(link) = follow_trusted_links(path)
            .err()
            .as_ref()
            .and_then(untrusted)
        {
            return Err(BadInput(format!("{option} {shown}: {link}")));
        }
        match fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                return Err(BadInput(format!(
                    "{option} {shown}: is a directory; give a file path such as {}",
                    path.join(example).display()
                )))
            }
            Ok(m) if !m.is_file() => {
                return Err(BadInput(format!(
                    "{option} {shown}: exists and is not a regular file; give a regular file path{or_stdout}"
                )))
            }
            _ => {}
        }
        if path.as_os_str().to_string_lossy().ends_with('/') {
            return Err(BadInput(format!(
                "{option} {shown}: names a directory; give a file path such as {shown}{example}"
            )));
        }
        let (dir, name) = match resolve(path) {
            Ok(resolved) => resolved,
            Err(ResolveError::DanglingLink { target }) => {
                let parent = parent_dir(&target);
                return Err(BadInput(if parent.is_dir() {
                    format!(
                        "{option} {shown}: is a symbolic link to {}, which does not exist (a link is not followed to make a file); give {} itself, or remove the link",
                        target.display(),
                        target.display()
                    )
                } else {
                    format!(
                        "{option} {shown}: is a symbolic link to {}, whose directory {} does not exist; create it, or give another path",
                        target.display(),
                        parent.display()
                    )
                }));
            }
            Err(ResolveError::Untrusted(link)) => {
                return Err(BadInput(format!("{option} {shown}: {link}")))
            }
            Err(ResolveError::NoFileName) => {
                return Err(BadInput(format!(
                    "{option} {shown}: names no file; give a file path such as {example}"
                )))
            }
            Err(ResolveError::Directory { dir, source })
                if source.raw_os_error() == Some(libc::ENOTDIR) =>
            {
                return Err(BadInput(format!(
                    "{option} {shown}: {} is not a directory; choose a path in an existing directory",
                    dir.display()
                )))
            }
            Err(ResolveError::Directory { dir, source }) => {
                return Err(BadInput(format!(
                    "{option} {shown}: directory {} does not exist or cannot be used ({}); create it or choose another path",
                    dir.display(),
                    one_line(&source)
                )))
            }
        };
        self.check_writable(path, &dir, &name)?;
        Ok(Destination::File(OutputPath {
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            dir,
            name,
        }))
    }

    /// Proves that `name` in `dir` can be written as the write will do it: a temporary file
    /// made there (and removed), room on the filesystem, and a file already there replaceable.
    fn check_writable(
        &self,
        path: &Path,
        dir: &OutputDir,
        name: &OsString,
    ) -> Result<(), BadInput> {
        let option = self.option;
        let shown = path.display();
        let dir_shown = dir.path().display();
        // The temporary file the write will make, made now and dropped (which removes it).
        if let Err(e) = AtomicFile::create_in(dir, name) {
            return Err(BadInput(format!(
                "{option} {shown}: cannot create files in {dir_shown} ({}); choose a writable directory",
                one_line(&e.source)
            )));
        }
        check_room(option, &shown.to_string(), dir)?;
        let Ok(Some(existing)) = dir.entry(name) else {
            return Ok(());
        };
        let resolved = dir.path().join(name);
        if node_kind(&existing) != "regular file" {
            return Err(BadInput(format!(
                "{option} {shown}: {} is a {}, not a regular file; give a regular file path",
                resolved.display(),
                node_kind(&existing)
            )));
        }
        // Replacing a loop device's backing file would take its image from under it (the
        // kernel's identity of the file: device and inode, whatever its name).
        let this_file = hostmax_device::LoopBacking::File {
            dev: existing.st_dev,
            ino: existing.st_ino,
        };
        if let Some((loop_name, _)) =
            hostmax_device::loop_backings(&hostmax_device::Sysfs::default())
                .into_iter()
                .find(|(_, backing)| *backing == this_file)
        {
            return Err(BadInput(format!(
                "{option} {shown}: {} is the backing file of /dev/{loop_name}, which the output would replace; choose another path",
                resolved.display()
            )));
        }
        // Nor an active swap file (the kernel's by device and inode).
        let swaps = std::fs::read_to_string(hostmax_device::safety::SystemSources::default().swaps)
            .map(|text| {
                hostmax_device::safety::identify_swaps(&hostmax_device::safety::parse_swaps(&text))
            })
            .unwrap_or_default();
        if swaps
            .iter()
            .any(|swap| swap.inode == Some((existing.st_dev, existing.st_ino)))
        {
            return Err(BadInput(format!(
                "{option} {shown}: {} is an active swap file, which the output would replace; choose another path",
                resolved.display()
            )));
        }
        // In a sticky directory (/tmp) only the file's owner, the directory's owner or a
        // process with CAP_FOWNER may replace (rename over) a file.
        if let Ok(d) = dir.stat() {
            let me = nix::unistd::geteuid().as_raw();
            let sticky = d.st_mode & libc::S_ISVTX != 0;
            if sticky && existing.st_uid != me && d.st_uid != me && !has_cap_fowner() {
                return Err(BadInput(format!(
                    "{option} {shown}: {} belongs to another user (uid {}) in the sticky directory {dir_shown}, so this user cannot replace it; choose another path, or have its owner remove it",
                    resolved.display(),
                    existing.st_uid
                )));
            }
        }
        // An immutable or append-only file cannot be renamed over, even by root; opening it
        // for writing (nothing is written) is refused the same way.
        let probe = dir.open_entry(
            name,
            OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY,
            0,
        );
        if probe.is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)) {
            return Err(BadInput(format!(
                "{option} {shown}: {} is immutable or append-only, so it cannot be replaced; clear that (chattr -i -a {}) or choose another path",
                resolved.display(),
                resolved.display()
            )));
        }
        Ok(())
    }
}

/// Refuses a directory whose filesystem has less than [`MIN_ROOM`] free for this user.
fn check_room(option: &str, shown: &str, dir: &OutputDir) -> Result<(), BadInput> {
    let Ok(fs) = dir.filesystem() else {
        return Ok(());
    };
    // root may use the blocks the filesystem keeps for it; others may not.
    let blocks = if nix::unistd::geteuid().is_root() {
        fs.blocks_free()
    } else {
        fs.blocks_available()
    };
    let room = blocks.saturating_mul(fs.fragment_size());
    if room < MIN_ROOM {
        return Err(BadInput(format!(
            "{option} {shown}: the filesystem of {} has {} free, less than the {} an output needs; free some space there or choose another path",
            dir.path().display(),
            human_size(room),
            human_size(MIN_ROOM)
        )));
    }
    Ok(())
}

/// Checks, before any I/O, that the directory `dir` (which `option` names; made later if
/// missing, so then its nearest existing ancestor is checked) can take the files a command
/// writes into it while it runs (a suite's checkpoint): a file made there and removed, and
/// room on its filesystem ([`MIN_ROOM`]).
pub fn check_directory(option: &str, dir: &Path) -> Result<(), BadInput> {
    let shown = dir.display().to_string();
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let existing = absolute
        .ancestors()
        .find(|a| a.is_dir())
        .unwrap_or(Path::new("/"));
    let opened =
        OutputDir::open(existing).map_err(|e| dir_refusal(option, &shown, existing, &e))?;
    if let Err(e) = AtomicFile::create_in(&opened, "suite.json".as_ref()) {
        return Err(BadInput(format!(
            "{option} {shown}: cannot create files in {} ({}); choose a writable directory",
            opened.path().display(),
            one_line(&e.source)
        )));
    }
    check_room(option, &shown, &opened)
}

/// The refusal of a directory `dir` that `option` (given `shown`) cannot use: a link another
/// user controls on the way, or why it cannot be opened.
fn dir_refusal(option: &str, shown: &str, dir: &Path, e: &io::Error) -> BadInput {
    match untrusted(e) {
        Some(link) => BadInput(format!("{option} {shown}: {link}")),
        None => BadInput(format!(
            "{option} {shown}: cannot use {} ({}); choose a writable directory",
            dir.display(),
            one_line(e)
        )),
    }
}

/// Whether this process has CAP_FOWNER (bit 3 of `CapEff` in `/proc/self/status`); without
/// `/proc`, whether it is root.
fn has_cap_fowner() -> bool {
    const CAP_FOWNER: u32 = 3;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
            u64::from_str_radix(hex.trim(), 16).ok()
        })
        .map_or_else(
            || nix::unistd::geteuid().is_root(),
            |caps| caps >> CAP_FOWNER & 1 == 1,
        )
}

impl OutputFile {
    /// [`OutputFile::check`] for a folder: an existing directory that accepts new files, or a
    /// path whose parent does (the folder is made when the output is written). Given back
    /// absolute, as [`Destination::File`].
    fn check_folder(&self, path: &Path) -> Result<Destination, BadInput> {
        let option = self.option;
        let example = self.example;
        let shown = path.display();
        if path.as_os_str() == "-" {
            return Err(BadInput(format!(
                "{option} -: this output is a folder of files, not standard output; give a folder path such as {example}"
            )));
        }
        if path.as_os_str().is_empty() {
            return Err(BadInput(format!(
                "{option}: the path is empty; give a folder path such as {example}"
            )));
        }
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let (dir, missing) = match fs::metadata(path) {
            // An existing folder (a link to one followed now, once).
            Ok(m) if m.is_dir() => match follow_trusted_links(path) {
                Ok(real) => (real, None),
                Err(e) => return Err(dir_refusal(option, &shown.to_string(), path, &e)),
            },
            Ok(_) => {
                return Err(BadInput(format!(
                    "{option} {shown}: exists and is not a folder; this command writes a folder of files (one per run), give a folder path such as {example}"
                )))
            }
            Err(_) if fs::symlink_metadata(path).is_ok() => {
                return Err(BadInput(format!(
                    "{option} {shown}: is a symbolic link to nothing (a link is not followed to make a folder); give the folder itself, or remove the link"
                )))
            }
            Err(_) => {
                let parent = parent_dir(&absolute);
                match (fs::metadata(&parent), absolute.file_name()) {
                    (Ok(m), Some(name)) if m.is_dir() => (parent, Some(name.to_os_string())),
                    _ => {
                        return Err(BadInput(format!(
                            "{option} {shown}: directory {} does not exist; create it or choose another path",
                            parent.display()
                        )))
                    }
                }
            }
        };
        let base =
            OutputDir::open(&dir).map_err(|e| dir_refusal(option, &shown.to_string(), &dir, &e))?;
        // A file made where the write will make the first ones (the folder, or the directory
        // the folder is made in), then removed; and room for them.
        if let Err(e) = AtomicFile::create_in(&base, "fio.json".as_ref()) {
            return Err(BadInput(format!(
                "{option} {shown}: cannot create files in {} ({}); choose a writable directory",
                base.path().display(),
                one_line(&e.source)
            )));
        }
        check_room(option, &shown.to_string(), &base)?;
        Ok(Destination::Folder(OutputFolder {
            path: absolute,
            base,
            missing,
        }))
    }
}

/// Refuses an output file that is also another output or one of the command's inputs (a
/// `--devices` file, a report being merged): writing it would replace what the run reads, or
/// what another output wrote. `outputs` and `inputs` are (option, path) pairs; `-` and files
/// that are neither are let through. Files are the same when their canonical paths are (a
/// symlink or `..` is seen through), or, for files not made yet, their absolute paths.
pub fn check_apart(outputs: &[(&str, &Path)], inputs: &[(&str, &Path)]) -> Result<(), BadInput> {
    let key = |path: &Path| {
        fs::canonicalize(path)
            .or_else(|_| std::path::absolute(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let files = |list: &[(&str, &Path)]| -> Vec<(String, PathBuf)> {
        list.iter()
            .filter(|(_, p)| p.as_os_str() != "-")
            .map(|(option, p)| (option.to_string(), key(p)))
            .collect()
    };
    let outs = files(outputs);
    let ins = files(inputs);
    for (i, (option, path)) in outs.iter().enumerate() {
        if let Some((other, _)) = outs[..i].iter().find(|(_, p)| p == path) {
            return Err(BadInput(format!(
                "{option} {}: {other} writes that file too; give each output its own path",
                path.display()
            )));
        }
        if let Some((input, _)) = ins.iter().find(|(_, p)| p == path) {
            return Err(BadInput(format!(
                "{option} {}: is also an input ({input}), which the output would replace; give another path",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Why an output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// Creating, writing or renaming the file failed; what it would have held was kept
    /// elsewhere (or not, as `kept` says).
    #[error("{option} {}: {source}; {what} is {kept}", path.display())]
    File {
        /// The option that named the file.
        option: &'static str,
        /// What the file holds (`the report`).
        what: &'static str,
        /// The destination as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: AtomicWriteError,
        /// Where it went instead.
        kept: Kept,
    },
    /// A file of a folder output could not be written (nor made, nor its subfolder); every
    /// file of the folder was kept elsewhere, in the same layout (or not, as `kept` says).
    #[error("{option} {}: {source}; {what} are {kept}", path.display())]
    Folder {
        /// The option that named the folder.
        option: &'static str,
        /// What the folder holds (`the fio reports`).
        what: &'static str,
        /// The folder as given.
        path: PathBuf,
        /// The file that failed (its path in the folder), and why (boxed: the error stays
        /// as small as one file's).
        #[source]
        source: Box<AtomicWriteError>,
        /// Where the folder's files went instead.
        kept: Kept,
    },
    /// A one-file output was given a folder destination: a mistake of the code that declared
    /// it, never of the user's (folders are checked as folders).
    #[error("{option} {}: is a folder, and this output is one file", path.display())]
    NotOneFile {
        /// The option that named the folder.
        option: &'static str,
        /// The folder.
        path: PathBuf,
    },
    /// Writing to standard output failed (for example a closed pipe); what it would have
    /// held was kept elsewhere (or not, as `kept` says).
    #[error("{option} -: writing to standard output failed: {source}; {what} is {kept}")]
    Stdout {
        /// The option that chose standard output.
        option: &'static str,
        /// What the output holds (`the report`).
        what: &'static str,
        /// Why.
        #[source]
        source: io::Error,
        /// Where it went instead.
        kept: Kept,
    },
}

/// Writes `bytes` to a checked destination of `output`: a file whole or not at all (kept
/// elsewhere if it cannot be written there: see [`super::kept`]), or standard output.
pub fn write_output(
    output: &OutputFile,
    dest: &Destination,
    bytes: &[u8],
) -> Result<(), OutputError> {
    match dest {
        Destination::Stdout => {
            let mut out = io::stdout().lock();
            out.write_all(bytes)
                .and_then(|()| out.flush())
                .map_err(|source| OutputError::Stdout {
                    option: output.option,
                    what: output.what,
                    source,
                    kept: keep(output.example.as_ref(), bytes),
                })
        }
        Destination::Folder(out) => Err(OutputError::NotOneFile {
            option: output.option,
            path: out.path().to_path_buf(),
        }),
        Destination::File(out) => {
            let written = out.create().and_then(|mut file| {
                file.write_all(bytes).map_err(|source| AtomicWriteError {
                    path: file.temp_path(),
                    source,
                })?;
                file.commit()
            });
            written.map_err(|source| OutputError::File {
                option: output.option,
                what: output.what,
                path: out.path().to_path_buf(),
                source,
                kept: keep(&name_of(out.path()), bytes),
            })
        }
    }
}

/// Writes `files` (paths relative to the folder, and their bytes) to a checked folder
/// destination of `output`, as [`write_output`] writes one file: each file whole, through
/// the folder resolved when checked (missing subfolders made, none followed through a link,
/// no node but a regular file replaced). When one cannot be written, every file of the
/// folder is kept elsewhere in the same layout ([`super::kept::keep_folder`]) and the error
/// says where.
pub fn write_folder(
    output: &OutputFile,
    dest: &Destination,
    files: &[(PathBuf, Vec<u8>)],
) -> Result<(), OutputError> {
    let folder = match dest {
        Destination::Folder(folder) => folder,
        Destination::File(out) => {
            return Err(OutputError::NotOneFile {
                option: output.option,
                path: out.path().to_path_buf(),
            })
        }
        Destination::Stdout => {
            return Err(OutputError::NotOneFile {
                option: output.option,
                path: PathBuf::from("-"),
            })
        }
    };
    for (rel, bytes) in files {
        let written = write_in(folder, rel, bytes);
        if let Err(source) = written {
            return Err(OutputError::Folder {
                option: output.option,
                what: output.what,
                path: folder.path().to_path_buf(),
                source: Box::new(AtomicWriteError {
                    path: rel.clone(),
                    source,
                }),
                kept: keep_folder(&name_of(folder.path()), files),
            });
        }
    }
    Ok(())
}

/// Writes one file of a folder (see [`write_folder`]).
fn write_in(folder: &OutputFolder, rel: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = rel
        .file_name()
        .ok_or_else(|| io::Error::other("names no file"))?;
    let dir = folder.dir_of(rel.parent().unwrap_or(Path::new("")))?;
    let mut file = AtomicFile::create_in(&dir, name).map_err(|e| e.source)?;
    file.write_all(bytes)?;
    file.commit().map_err(|e| e.source)
}

/// Prints text for people to stdout, or to stderr when the JSON report goes to stdout (which
/// then holds the JSON alone).
pub fn print_beside_json(text: &str, json: Option<&Destination>) {
    match json {
        Some(Destination::Stdout) => super::stdio::print_stderr(text),
        _ => super::stdio::print_stdout(text),
    }
}

fn one_line(e: &io::Error) -> String {
    e.to_string().replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ScratchDir;

    fn assert_one_line_naming(err: &BadInput, option: &str, path: &str) {
        let msg = err.to_string();
        assert!(!msg.contains('\n'), "not one line: {msg}");
        assert!(msg.starts_with(&format!("{option} {path}")), "{msg}");
    }

    #[test]
    fn dash_is_stdout_only_where_that_makes_sense() {
        assert_eq!(JSON.check(Path::new("-")).unwrap(), Destination::Stdout);
        for output in [HDR_LOG, SVG, HTML] {
            let err = output.check(Path::new("-")).unwrap_err();
            assert!(err.0.contains("goes to a file"), "{err}");
            assert_one_line_naming(&err, output.option, "-");
        }
    }

    #[test]
    fn unwritable_directory_is_rejected() {
        // sysfs refuses new files even to root, so this holds whoever runs the test.
        let err = JSON.check(Path::new("/sys/hostmax.json")).unwrap_err();
        assert!(err.0.contains("cannot create files in /sys"), "{err}");
        assert!(err.0.contains("choose a writable directory"), "{err}");
        assert_one_line_naming(&err, "--json", "/sys/hostmax.json");
        assert!(!Path::new("/sys/hostmax.json").exists());
    }

    #[test]
    fn missing_directory_is_rejected() {
        let scratch = ScratchDir::new("missing");
        let path = scratch.0.join("no/such/dir/r.svg");
        let err = SVG.check(&path).unwrap_err();
        assert!(
            err.0.contains("does not exist") && err.0.contains("create it"),
            "{err}"
        );
        assert_one_line_naming(&err, "--svg", &path.display().to_string());
    }

    #[test]
    fn directories_and_special_files_are_rejected() {
        let scratch = ScratchDir::new("special");
        let dir = scratch.0.display().to_string();
        let err = HDR_LOG.check(&scratch.0).unwrap_err();
        assert!(err.0.contains("is a directory"), "{err}");
        assert!(err.0.contains("hostmax.hlog"), "{err}");
        assert_one_line_naming(&err, "--hdr-log", &dir);

        let err = JSON.check(Path::new("/dev/null")).unwrap_err();
        assert!(err.0.contains("not a regular file"), "{err}");
        assert_one_line_naming(&err, "--json", "/dev/null");

        let err = HTML.check(Path::new("")).unwrap_err();
        assert!(err.0.starts_with("--html: the path is empty"), "{err}");
    }

    #[test]
    fn a_good_path_is_given_back_and_leaves_no_probe_behind() {
        let scratch = ScratchDir::new("probe");
        let path = scratch.0.join("r.json");
        let dest = JSON.check(&path).unwrap();
        assert_eq!(dest.file_path(), Some(path.as_path()));
        assert!(scratch.entries().is_empty());
        let dotted = scratch.0.join(".").join("x.svg");
        let Destination::File(out) = SVG.check(&dotted).unwrap() else {
            panic!("a file")
        };
        assert_eq!(out.resolved(), scratch.0.join("x.svg"));
    }

    #[test]
    fn a_link_to_nothing_is_refused_naming_where_it_leads() {
        let scratch = ScratchDir::new("dangling");
        let link = scratch.0.join("r.json");
        std::os::unix::fs::symlink(scratch.0.join("missing.json"), &link).unwrap();
        let err = JSON.check(&link).unwrap_err();
        assert_one_line_naming(&err, "--json", &link.display().to_string());
        assert!(
            err.0.contains("is a symbolic link to")
                && err.0.contains("missing.json, which does not exist"),
            "{err}"
        );
        let to_dir = scratch.0.join("d.svg");
        std::os::unix::fs::symlink(scratch.0.join("no-dir/c.svg"), &to_dir).unwrap();
        let err = SVG.check(&to_dir).unwrap_err();
        assert!(err.0.contains("no-dir does not exist; create it"), "{err}");
        assert_eq!(scratch.entries(), vec!["d.svg", "r.json"]);
    }

    #[test]
    fn the_write_goes_where_the_link_led_when_checked() {
        let scratch = ScratchDir::new("relink");
        let first = scratch.write("first.json", "old");
        let second = scratch.write("second.json", "keep");
        let link = scratch.0.join("r.json");
        std::os::unix::fs::symlink(&first, &link).unwrap();
        let dest = JSON.check(&link).unwrap();
        // Re-pointed during the run.
        fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&second, &link).unwrap();
        write_output(&JSON, &dest, b"{}").unwrap();
        assert_eq!(fs::read_to_string(&first).unwrap(), "{}");
        assert_eq!(fs::read_to_string(&second).unwrap(), "keep");
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_node_put_at_the_name_after_the_check_is_not_replaced_and_the_output_is_kept() {
        use std::os::unix::fs::FileTypeExt;
        let scratch = ScratchDir::new("node");
        let path = scratch.write(&format!("node-{}.svg", std::process::id()), "old");
        let dest = SVG.check(&path).unwrap();
        fs::remove_file(&path).unwrap();
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let err = write_output(&SVG, &dest, b"<svg/>")
            .unwrap_err()
            .to_string();
        assert!(fs::symlink_metadata(&path).unwrap().file_type().is_fifo());
        assert!(
            err.contains("is now a FIFO") && err.contains("not replaced"),
            "{err}"
        );
        let kept = err.rsplit_once("the chart is kept in ").expect(&err).1;
        assert_eq!(fs::read(kept).unwrap(), b"<svg/>");
        fs::remove_file(kept).unwrap();
        assert_eq!(scratch.entries().len(), 1, "no temporary file left");
    }

    #[test]
    fn an_existing_file_that_cannot_be_written_here_is_refused_before_the_run() {
        // A directory that is not a directory any more: the probe of a file in a file.
        let scratch = ScratchDir::new("notdir");
        let file = scratch.write("f", "x");
        let err = HTML.check(&file.join("p.html")).unwrap_err();
        assert!(err.0.contains("is not a directory"), "{err}");
    }

    #[test]
    fn an_output_that_is_an_input_or_another_output_is_refused() {
        let scratch = ScratchDir::new("apart");
        let image = scratch.write("disk.img", "data");
        let link = scratch.0.join("link.img");
        std::os::unix::fs::symlink(&image, &link).unwrap();
        let report = scratch.0.join("r.json");
        let err = check_apart(&[("--json", &link)], &[("--devices", &image)]).unwrap_err();
        assert!(err.0.contains("is also an input (--devices)"), "{err}");
        // A file not made yet (a --devices file --size makes) is compared by its name.
        let new = scratch.0.join("new.img");
        assert!(check_apart(&[("--hdr-log", &new)], &[("--devices", &new)]).is_err());
        let err = check_apart(&[("--json", &report), ("--hdr-log", &report)], &[]).unwrap_err();
        assert!(err.0.contains("--json writes that file too"), "{err}");
        let dash = Path::new("-");
        check_apart(
            &[("--json", dash), ("--hdr-log", &report)],
            &[("--devices", &image), ("report", dash)],
        )
        .unwrap();
    }

    #[test]
    fn a_failed_write_names_the_option_and_leaves_no_file() {
        let scratch = ScratchDir::new("write");
        fs::create_dir(scratch.0.join("gone")).unwrap();
        let name = format!("gone-{}.svg", std::process::id());
        let path = scratch.0.join("gone").join(&name);
        let dest = SVG.check(&path).unwrap();
        fs::remove_dir(scratch.0.join("gone")).unwrap();
        let err = write_output(&SVG, &dest, b"<svg/>").unwrap_err();
        assert!(err.to_string().starts_with("--svg "), "{err}");
        assert!(scratch.entries().is_empty());
        let OutputError::File {
            kept: Kept::At(kept),
            ..
        } = err
        else {
            panic!("not kept: {err}")
        };
        assert_eq!(fs::read(&kept).unwrap(), b"<svg/>");
        fs::remove_file(kept).unwrap();
        let ok = scratch.0.join("x.svg");
        write_output(&SVG, &SVG.check(&ok).unwrap(), b"<svg/>").unwrap();
        assert_eq!(fs::read(&ok).unwrap(), b"<svg/>");
        assert_eq!(scratch.entries(), vec!["x.svg"]);
    }

    #[test]
    fn a_folder_is_written_where_it_was_resolved_and_a_planted_link_is_not_followed() {
        let scratch = ScratchDir::new("folder");
        let folder = scratch.0.join("fio");
        let dest = FIO_JSON_FOLDER.check(&folder).unwrap();
        assert!(!folder.exists(), "nothing made when checked");
        let files = vec![
            (PathBuf::from("host/4k/a.json"), b"{}".to_vec()),
            (PathBuf::from("loop0/4k/a.json"), b"[]".to_vec()),
        ];
        write_folder(&FIO_JSON_FOLDER, &dest, &files).unwrap();
        assert_eq!(fs::read(folder.join("loop0/4k/a.json")).unwrap(), b"[]");
        // A link planted at a subfolder's name after the check leads nowhere the write goes.
        let elsewhere = scratch.0.join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::remove_dir_all(folder.join("loop0")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, folder.join("loop0")).unwrap();
        let err = write_folder(&FIO_JSON_FOLDER, &dest, &files)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "--fio-json {}: loop0/4k/a.json: ",
                folder.display()
            )),
            "{err}"
        );
        assert!(fs::read_dir(&elsewhere).unwrap().next().is_none());
        assert!(fs::symlink_metadata(folder.join("loop0"))
            .unwrap()
            .file_type()
            .is_symlink());
        // Every file of the folder is kept, in its layout.
        let kept = PathBuf::from(
            err.rsplit_once("the fio reports are kept in ")
                .expect(&err)
                .1,
        );
        assert_eq!(fs::read(kept.join("host/4k/a.json")).unwrap(), b"{}");
        assert_eq!(fs::read(kept.join("loop0/4k/a.json")).unwrap(), b"[]");
        fs::remove_dir_all(kept).unwrap();
        // A link at a file's own name is not replaced.
        fs::remove_file(folder.join("loop0")).unwrap();
        let target = scratch.write("target.json", "keep");
        fs::remove_file(folder.join("host/4k/a.json")).unwrap();
        std::os::unix::fs::symlink(&target, folder.join("host/4k/a.json")).unwrap();
        let err = write_folder(&FIO_JSON_FOLDER, &dest, &files)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not replaced"), "{err}");
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
        let kept = PathBuf::from(
            err.rsplit_once("the fio reports are kept in ")
                .expect(&err)
                .1,
        );
        fs::remove_dir_all(kept).unwrap();
    }
}
