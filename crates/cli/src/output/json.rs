//! The `--json` report: its destination is checked before the run
//! ([`super::destination::JSON`]), and it is written whole after it, as the [`JsonReport`]
//! output of every command.

use super::destination::{write_output, Destination, OutputError, OutputFile, JSON};
use super::export::Export;

/// `--json`: the command's JSON root (a [`hostmax_aggregate::HostReport`], `hostmax verify`'s
/// [`hostmax_aggregate::VerifyReport`]...), pretty-printed, to a file or standard output.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonReport;

impl<R: serde::Serialize + ?Sized> Export<R> for JsonReport {
    fn file(&self) -> &'static OutputFile {
        &JSON
    }

    /// A report that cannot be written to its file after the run is kept elsewhere, and the
    /// error says where ([`write_output`]): a finished run is not lost.
    fn write(self: Box<Self>, dest: &Destination, result: &R) -> anyhow::Result<()> {
        Ok(write_json(result, dest)?)
    }
}

/// Why the JSON report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum JsonWriteError {
    /// Writing the file or standard output failed.
    #[error(transparent)]
    Output(#[from] OutputError),
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
/// For a file, the JSON goes to a temporary file in the directory resolved when it was
/// checked, is flushed to disk and renamed over the destination, so the path holds either the
/// old content or the whole new report, never a half-written one (and when that fails, the
/// report is kept elsewhere: [`write_output`]). A symlink was followed when checked and its
/// target is replaced. For stdout, the JSON is the only thing written there.
pub fn write_json<R: serde::Serialize + ?Sized>(
    report: &R,
    dest: &Destination,
) -> Result<(), JsonWriteError> {
    let text = report_json(report)?;
    Ok(write_output(&JSON, dest, text.as_bytes())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::tests_support::sample_report;
    use crate::test_support::ScratchDir;
    use hostmax_aggregate::HostReport;
    use std::fs;

    #[test]
    fn atomic_write_leaves_exactly_the_valid_report() {
        let scratch = ScratchDir::new("json-atomic");
        let path = scratch.0.join("report.json");
        fs::write(&path, "{ half a report").unwrap();
        let report = sample_report();
        let dest = JSON.check(&path).unwrap();
        assert_eq!(dest.file_path(), Some(path.as_path()));
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
    fn a_report_that_cannot_be_written_after_the_run_is_kept_elsewhere() {
        let scratch = ScratchDir::new("json-kept");
        let gone = scratch.0.join("gone");
        fs::create_dir(&gone).unwrap();
        let name = format!("kept-{}.json", std::process::id());
        let path = gone.join(&name);
        let dest = JSON.check(&path).unwrap();
        // The directory goes away during the run.
        fs::remove_dir(&gone).unwrap();
        let report = sample_report();
        let err = Box::new(JsonReport)
            .write(&dest, &report)
            .unwrap_err()
            .to_string();
        let kept = std::env::temp_dir().join(format!("hostmax-kept-{}-{name}", std::process::id()));
        assert!(
            err.starts_with(&format!("--json {}: ", path.display()))
                && err.ends_with(&format!("; the report is kept in {}", kept.display())),
            "{err}"
        );
        let back: HostReport = serde_json::from_str(&fs::read_to_string(&kept).unwrap()).unwrap();
        fs::remove_file(&kept).unwrap();
        assert_eq!(back, report);
    }

    #[test]
    fn symlinked_destination_replaces_its_target() {
        let scratch = ScratchDir::new("symlink");
        let real = scratch.0.join("real.json");
        let link = scratch.0.join("link.json");
        fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_json(&sample_report(), &JSON.check(&link).unwrap()).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let v: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&real).unwrap()).unwrap();
        assert_eq!(v["schema_version"], hostmax_aggregate::SCHEMA_VERSION);
    }
}
