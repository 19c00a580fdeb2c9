//! Every output file of every command, in one place: checked once before any I/O
//! ([`OutputFile::check`], [`check_apart`]; [`super::export::Outputs::declare`] calls them)
//! and written whole or not at all ([`write_output`], through [`super::atomic`]).
//!
//! `-` is standard output where that makes sense (a JSON report, which is then the only thing
//! written there) and refused with a one-line error elsewhere (an interval log or a picture
//! mixed into the table on stdout would be neither).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::atomic::{parent_dir, write_atomically};
use crate::error::BadInput;

/// Where a checked output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// `-`: standard output, and nothing else goes there (JSON only).
    Stdout,
    /// A file, written to a temporary file beside it and renamed into place.
    File(PathBuf),
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
}

/// `--json` of every command: a file, or `-` for standard output.
pub const JSON: OutputFile = OutputFile::new("--json", "hostmax.json", true);
/// `--hdr-log`: HdrHistogram's interval log.
pub const HDR_LOG: OutputFile = OutputFile::new("--hdr-log", "hostmax.hlog", false);
/// `--svg` of `hostmax sweep` and `hostmax curve`.
pub const SVG: OutputFile = OutputFile::new("--svg", "chart.svg", false);
/// `--html` of `hostmax suite`.
pub const HTML: OutputFile = OutputFile::new("--html", "report.html", false);
/// `--fio-json` of a single run: one file in fio's JSON layout.
pub const FIO_JSON_FILE: OutputFile = OutputFile::new("--fio-json", "fio.json", false);
/// `--fio-json` of a command of several runs: a folder in fio-plot's layout.
pub const FIO_JSON_FOLDER: OutputFile = OutputFile::folder("--fio-json", "fio-results");

impl OutputFile {
    /// The output file `option` names; `example` is the file name messages suggest, `stdout`
    /// whether `-` means standard output.
    pub const fn new(option: &'static str, example: &'static str, stdout: bool) -> OutputFile {
        OutputFile {
            option,
            example,
            stdout,
            folder: false,
        }
    }

    /// The output folder `option` names (made when the output is written); `example` is the
    /// folder name messages suggest.
    pub const fn folder(option: &'static str, example: &'static str) -> OutputFile {
        OutputFile {
            option,
            example,
            stdout: false,
            folder: true,
        }
    }

    /// Checks, before any I/O of a run, that the output can go to `path`: `-` is standard
    /// output (or refused where it makes no sense); a file must be writable atomically: not
    /// empty, not a directory or a special file (the rename would replace a device node rather
    /// than write into it), in an existing directory that accepts new files. The last is tried
    /// with a small probe file, since permission bits alone do not tell (a read-only mount,
    /// root, sysfs). A file is given back absolute, so a later change of directory cannot move
    /// it. Every refusal is one line naming the option, the path and the fix.
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
        let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let dir = parent_dir(&target);
        match fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(BadInput(format!(
                    "{option} {shown}: {} is not a directory; choose a path in an existing directory",
                    dir.display()
                )))
            }
            Err(e) => {
                return Err(BadInput(format!(
                    "{option} {shown}: directory {} does not exist or cannot be used ({}); create it or choose another path",
                    dir.display(),
                    one_line(&e)
                )))
            }
        }
        let probe = dir.join(format!(".hostmax-probe-{}", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&probe) {
            Ok(_) => {
                let _ = fs::remove_file(&probe);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(BadInput(format!(
                    "{option} {shown}: cannot create files in {} ({}); choose a writable directory",
                    dir.display(),
                    one_line(&e)
                )))
            }
        }
        Ok(Destination::File(
            std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
        ))
    }
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
        let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let dir = match fs::metadata(path) {
            Ok(m) if m.is_dir() => target,
            Ok(_) => {
                return Err(BadInput(format!(
                    "{option} {shown}: exists and is not a folder; this command writes a folder of files (one per run), give a folder path such as {example}"
                )))
            }
            Err(_) => {
                let parent = parent_dir(&target);
                match fs::metadata(&parent) {
                    Ok(m) if m.is_dir() => parent,
                    _ => {
                        return Err(BadInput(format!(
                            "{option} {shown}: directory {} does not exist; create it or choose another path",
                            parent.display()
                        )))
                    }
                }
            }
        };
        let probe = dir.join(format!(".hostmax-probe-{}", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&probe) {
            Ok(_) => {
                let _ = fs::remove_file(&probe);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(BadInput(format!(
                    "{option} {shown}: cannot create files in {} ({}); choose a writable directory",
                    dir.display(),
                    one_line(&e)
                )))
            }
        }
        Ok(Destination::File(
            std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
        ))
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
    /// Creating, writing or renaming the file failed.
    #[error("{option} {}: {source}", path.display())]
    File {
        /// The option that named the file.
        option: &'static str,
        /// The destination (a temporary file beside it is what was being written).
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Writing to standard output failed (for example a closed pipe).
    #[error("{option} -: writing to standard output failed: {source}")]
    Stdout {
        /// The option that chose standard output.
        option: &'static str,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// Writes `bytes` to a checked destination of `output`: a file whole or not at all, or
/// standard output.
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
                    source,
                })
        }
        Destination::File(path) => write_atomically(path, bytes).map_err(|e| OutputError::File {
            option: output.option,
            path: path.clone(),
            source: e.source,
        }),
    }
}

/// Prints text for people to stdout, or to stderr when the JSON report goes to stdout (which
/// then holds the JSON alone).
pub fn print_beside_json(text: &str, json: Option<&Destination>) {
    match json {
        Some(Destination::Stdout) => eprint!("{text}"),
        _ => print!("{text}"),
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
        assert_eq!(JSON.check(&path).unwrap(), Destination::File(path.clone()));
        assert!(scratch.entries().is_empty());
        let dotted = scratch.0.join(".").join("x.svg");
        assert_eq!(
            SVG.check(&dotted).unwrap(),
            Destination::File(scratch.0.join("x.svg"))
        );
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
        let path = scratch.0.join("gone/x.svg");
        let err = write_output(&SVG, &Destination::File(path), b"<svg/>").unwrap_err();
        assert!(err.to_string().starts_with("--svg "), "{err}");
        assert!(scratch.entries().is_empty());
        let ok = scratch.0.join("x.svg");
        write_output(&SVG, &Destination::File(ok.clone()), b"<svg/>").unwrap();
        assert_eq!(fs::read(&ok).unwrap(), b"<svg/>");
        assert_eq!(scratch.entries(), vec!["x.svg"]);
    }
}
