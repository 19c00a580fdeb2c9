//! `--fio-json`: the command's runs in fio's JSON (json+) layout, the [`FioJson`] output, for
//! the tools that read fio's results. The mapping is the aggregator's
//! ([`hostmax_aggregate::fio_json`]); this module decides the files.
//!
//! A single run is one file: every device a job, then the host as `All clients`. A command of
//! several runs (sweep steps, curve points, verify phases) fills a folder in the layout
//! fio-plot and bench-fio use, `PATH/NAME/BS/RW-IODEPTH-NUMJOBS.json` (a mixed pattern's in
//! `PATH/NAME/RWMIX/BS/`, `randrw70` for 70 % reads, as bench-fio does): NAME is the host
//! (every device and the host's `All clients`) and each device (that device alone), so
//! fio-plot charts the host or compares volumes; NUMJOBS is how many volumes ran at once.
//! A run whose file name an earlier run of the command took goes in `BS/run-N/` (bench-fio's
//! folder for repeated runs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hostmax_aggregate::fio_json::{device_job_name, fio_json, fio_json_of_device, fio_size};
use hostmax_aggregate::{CurveReport, HostReport, SweepReport, VerifyReport};

use super::destination::{
    write_folder, write_output, Destination, OutputFile, FIO_JSON_FILE, FIO_JSON_FOLDER,
};
use super::export::Export;

/// A command's result as the runs `--fio-json` writes.
pub trait FioRuns {
    /// Whether the command has several runs (a folder) rather than one (a file).
    const FOLDER: bool;
    /// Its runs, in order.
    fn fio_runs(&self) -> Vec<&HostReport>;
}

impl FioRuns for HostReport {
    const FOLDER: bool = false;
    fn fio_runs(&self) -> Vec<&HostReport> {
        vec![self]
    }
}

impl FioRuns for SweepReport {
    const FOLDER: bool = true;
    fn fio_runs(&self) -> Vec<&HostReport> {
        self.runs.iter().collect()
    }
}

impl FioRuns for CurveReport {
    const FOLDER: bool = true;
    fn fio_runs(&self) -> Vec<&HostReport> {
        self.runs.iter().collect()
    }
}

impl FioRuns for VerifyReport {
    const FOLDER: bool = true;
    fn fio_runs(&self) -> Vec<&HostReport> {
        self.phases.iter().collect()
    }
}

/// `--fio-json`: a file for a single run, a folder in fio-plot's layout for several.
#[derive(Debug, Clone, Copy, Default)]
pub struct FioJson;

impl<R: FioRuns + ?Sized> Export<R> for FioJson {
    fn file(&self) -> &'static OutputFile {
        if R::FOLDER {
            &FIO_JSON_FOLDER
        } else {
            &FIO_JSON_FILE
        }
    }

    fn write(self: Box<Self>, dest: &Destination, result: &R) -> anyhow::Result<()> {
        let runs = result.fio_runs();
        if !R::FOLDER {
            let Some(report) = runs.first() else {
                return Ok(());
            };
            let text = pretty(&fio_json(report)?)?;
            return Ok(write_output(&FIO_JSON_FILE, dest, text.as_bytes())?);
        }
        let files: Vec<(PathBuf, Vec<u8>)> = folder_files(Path::new(""), &runs)?
            .into_iter()
            .map(|(rel, text)| (rel, text.into_bytes()))
            .collect();
        Ok(write_folder(&FIO_JSON_FOLDER, dest, &files)?)
    }
}

fn pretty(value: &serde_json::Value) -> serde_json::Result<String> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    Ok(text)
}

/// Every file of the folder for `runs`, as (path, JSON text): the host's and each device's
/// file of each run, in fio-plot's layout (see the module's documentation).
pub fn folder_files(folder: &Path, runs: &[&HostReport]) -> anyhow::Result<Vec<(PathBuf, String)>> {
    let mut files = Vec::new();
    let mut taken: BTreeMap<PathBuf, u32> = BTreeMap::new();
    for report in runs {
        let w = &report.workload;
        let file = format!(
            "{}-{}-{}.json",
            w.pattern.name(),
            w.iodepth,
            report.devices.len()
        );
        let bs = fio_size(u64::from(w.block_size));
        // bench-fio keeps each read share of a mixed pattern in its own folder (randrw70).
        let mix = (w.pattern.reads() && w.pattern.writes())
            .then(|| format!("{}{}", w.pattern.name(), w.rwmixread));
        let host = report.hostname.clone().unwrap_or_else(|| "host".into());
        let mut entries = vec![(host, fio_json(report)?)];
        for (index, device) in report.devices.iter().enumerate() {
            entries.push((device_job_name(device), fio_json_of_device(report, index)?));
        }
        for (name, value) in entries {
            let mut dir = folder.join(&name);
            if let Some(mix) = &mix {
                dir.push(mix);
            }
            dir.push(&bs);
            let first = dir.join(&file);
            let seen = taken.entry(first.clone()).or_insert(0);
            *seen += 1;
            let path = if *seen == 1 {
                first
            } else {
                dir.join(format!("run-{seen}")).join(&file)
            };
            files.push((path, pretty(&value)?));
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::tests_support::sample_report;
    use crate::test_support::ScratchDir;

    #[test]
    fn a_single_run_is_one_file_with_the_host_last() {
        let scratch = ScratchDir::new("fio-json-file");
        let path = scratch.0.join("fio.json");
        let dest = FIO_JSON_FILE.check(&path).unwrap();
        let report = sample_report();
        Box::new(FioJson).write(&dest, &report).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let jobs = v["jobs"].as_array().unwrap();
        let names: Vec<&str> = jobs
            .iter()
            .map(|j| j["jobname"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["loop0", "loop11", "All clients"]);
        // The host's read p99 is the report's own, off the merged histogram.
        assert_eq!(
            jobs[2]["read"]["clat_ns"]["percentile"]["99.000000"],
            report.host.ops[hostmax_engine::OpKind::Read].latency_ns.p99
        );
        assert_eq!(jobs[0]["job options"]["filename"], "/dev/loop0");
        assert_eq!(v["global options"]["rw"], "randrw");
    }

    #[test]
    fn several_runs_fill_a_folder_in_fio_plot_s_layout() {
        let scratch = ScratchDir::new("fio-json-folder");
        let first = sample_report();
        let mut deeper = sample_report();
        deeper.workload.iodepth = 64;
        let same = sample_report();
        let files = folder_files(&scratch.0, &[&first, &deeper, &same]).unwrap();
        let rel: Vec<String> = files
            .iter()
            .map(|(p, _)| p.strip_prefix(&scratch.0).unwrap().display().to_string())
            .collect();
        assert_eq!(
            rel,
            [
                "host/randrw70/4k/randrw-32-2.json",
                "loop0/randrw70/4k/randrw-32-2.json",
                "loop11/randrw70/4k/randrw-32-2.json",
                "host/randrw70/4k/randrw-64-2.json",
                "loop0/randrw70/4k/randrw-64-2.json",
                "loop11/randrw70/4k/randrw-64-2.json",
                "host/randrw70/4k/run-2/randrw-32-2.json",
                "loop0/randrw70/4k/run-2/randrw-32-2.json",
                "loop11/randrw70/4k/run-2/randrw-32-2.json",
            ]
        );
        let device: serde_json::Value = serde_json::from_str(&files[1].1).unwrap();
        assert_eq!(device["jobs"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn a_folder_output_refuses_a_file_and_stdout() {
        let scratch = ScratchDir::new("fio-json-check");
        let file = scratch.0.join("f");
        std::fs::write(&file, "x").unwrap();
        let err = FIO_JSON_FOLDER.check(&file).unwrap_err();
        assert!(err.0.contains("is not a folder"), "{err}");
        assert!(FIO_JSON_FOLDER.check(Path::new("-")).is_err());
        let made_later = scratch.0.join("results");
        assert_eq!(
            FIO_JSON_FOLDER.check(&made_later).unwrap().file_path(),
            Some(made_later.as_path())
        );
        assert!(!made_later.exists(), "nothing made when checked");
        let err = FIO_JSON_FILE.check(&scratch.0).unwrap_err();
        assert!(err.0.contains("is a directory"), "{err}");
    }
}
