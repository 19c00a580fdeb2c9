//! The `--json` report: checked before the run, written atomically after it.

use std::io::{self, Write};
use std::path::PathBuf;

use super::atomic::{check_destination, write_atomically};
use crate::plan::{BadInput, JsonDest};

/// Why the JSON report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum JsonWriteError {
    /// Creating, writing or renaming the file failed.
    #[error("--json {}: {source}", path.display())]
    File {
        /// The file being written (the temporary one when that is where it failed).
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Writing to standard output failed (for example a closed pipe).
    #[error("--json -: writing to standard output failed: {0}")]
    Stdout(#[source] io::Error),
    /// The report could not be turned into JSON.
    #[error("cannot serialize the report: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// The report (a [`hostmax_aggregate::HostReport`], or another JSON root such as `hostmax verify`'s) as
/// pretty-printed JSON with a final newline.
pub fn report_json<R: serde::Serialize + ?Sized>(report: &R) -> Result<String, serde_json::Error> {
    let mut text = serde_json::to_string_pretty(report)?;
    text.push('\n');
    Ok(text)
}

/// Writes `report` to `dest`.
///
/// For a file, the JSON goes to a temporary file in the same directory, is flushed to disk and
/// renamed over the destination, so the path holds either the old content or the whole new
/// report, never a half-written one. A symlink is followed and its target replaced. For
/// stdout, the JSON is the only thing written there.
pub fn write_json<R: serde::Serialize + ?Sized>(
    report: &R,
    dest: &JsonDest,
) -> Result<(), JsonWriteError> {
    let text = report_json(report)?;
    match dest {
        JsonDest::Stdout => {
            let mut out = io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .map_err(JsonWriteError::Stdout)
        }
        JsonDest::File(path) => {
            write_atomically(path, text.as_bytes()).map_err(|e| JsonWriteError::File {
                path: e.path,
                source: e.source,
            })
        }
    }
}

/// Checks, before any I/O of the run, that `dest` can be written (see
/// [`check_destination`]); standard output always can.
pub fn check_json_dest(dest: &JsonDest) -> Result<(), BadInput> {
    match dest {
        JsonDest::Stdout => Ok(()),
        JsonDest::File(path) => check_destination(
            "--json",
            path,
            "hostmax.json",
            Some("- for standard output"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::tests_support::sample_report;
    use crate::test_support::ScratchDir;
    use hostmax_aggregate::HostReport;
    use std::fs;
    use std::path::Path;

    #[test]
    fn atomic_write_leaves_exactly_the_valid_report() {
        let scratch = ScratchDir::new("json-atomic");
        let path = scratch.0.join("report.json");
        fs::write(&path, "{ half a report").unwrap();
        let report = sample_report();
        let dest = JsonDest::File(path.clone());
        check_json_dest(&dest).unwrap();
        write_json(&report, &dest).unwrap();

        assert_eq!(scratch.entries(), vec!["report.json".to_string()]);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("}\n"));
        let back: HostReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, report);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema_version"], hostmax_aggregate::SCHEMA_VERSION);
        assert_eq!(v["devices"][1]["path"], "/dev/loop11");
    }

    #[test]
    fn symlinked_destination_replaces_its_target() {
        let scratch = ScratchDir::new("symlink");
        let real = scratch.0.join("real.json");
        let link = scratch.0.join("link.json");
        fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_json(&sample_report(), &JsonDest::File(link.clone())).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let v: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&real).unwrap()).unwrap();
        assert_eq!(v["schema_version"], hostmax_aggregate::SCHEMA_VERSION);
    }

    fn assert_one_line_naming(err: BadInput, path: &str) {
        let msg = err.to_string();
        assert!(!msg.contains('\n'), "not one line: {msg}");
        assert!(msg.starts_with(&format!("--json {path}")), "{msg}");
    }

    #[test]
    fn unwritable_directory_is_rejected() {
        // sysfs refuses new files even to root, so this holds whoever runs the test.
        let err = check_json_dest(&JsonDest::File("/sys/hostmax.json".into())).unwrap_err();
        assert!(err.0.contains("cannot create files in /sys"), "{err}");
        assert!(err.0.contains("choose a writable directory"), "{err}");
        assert_one_line_naming(err, "/sys/hostmax.json");
        assert!(!Path::new("/sys/hostmax.json").exists());
    }

    #[test]
    fn missing_directory_is_rejected() {
        let scratch = ScratchDir::new("missing");
        let path = scratch.0.join("no/such/dir/r.json");
        let err = check_json_dest(&JsonDest::File(path.clone())).unwrap_err();
        assert!(err.0.contains("create it"), "{err}");
        assert_one_line_naming(err, &path.display().to_string());
        // And writing there fails with an error, not a panic.
        assert!(write_json(&sample_report(), &JsonDest::File(path)).is_err());
    }

    #[test]
    fn directories_and_special_files_are_rejected() {
        let scratch = ScratchDir::new("special");
        let dir = scratch.0.display().to_string();
        let err = check_json_dest(&JsonDest::File(scratch.0.clone())).unwrap_err();
        assert!(err.0.contains("is a directory"), "{err}");
        assert_one_line_naming(err, &dir);

        let err = check_json_dest(&JsonDest::File("/dev/null".into())).unwrap_err();
        assert!(err.0.contains("not a regular file"), "{err}");
        assert_one_line_naming(err, "/dev/null");

        let err = check_json_dest(&JsonDest::File("".into())).unwrap_err();
        assert!(err.0.starts_with("--json: the path is empty"), "{err}");
    }

    #[test]
    fn check_leaves_no_probe_behind_and_accepts_stdout() {
        let scratch = ScratchDir::new("probe");
        check_json_dest(&JsonDest::File(scratch.0.join("r.json"))).unwrap();
        assert!(scratch.entries().is_empty());
        check_json_dest(&JsonDest::Stdout).unwrap();
    }
}
