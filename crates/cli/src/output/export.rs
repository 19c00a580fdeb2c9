//! A command's outputs, declared beside its plan and written through one trait (hyperfine's
//! exporters are the model): [`Export`] is one output format (the JSON report, the interval
//! log, an SVG chart, the suite's HTML page), [`Outputs`] the list a command declares.
//!
//! Each output is checked when it is declared ([`Outputs::declare`], before any I/O: its
//! destination by [`OutputFile::check`], and apart from the other outputs), is shown every
//! run while the command measures ([`Outputs::recorders`], for a format made from the runs'
//! seconds), and is written once, at the end, from the command's result ([`Outputs::write`]).
//! A command of several runs (verify's phases, sweep's steps, curve's depths) hands every run
//! to the same outputs, so they hold every run.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hostmax_aggregate::SecondHistograms;
use hostmax_engine::{DeviceInterval, Workload};

use super::destination::{check_apart, Destination, OutputFile};
use crate::error::BadInput;

/// One output format: what a command's result `R` becomes in the file (or standard output)
/// its option names.
pub trait Export<R: ?Sized> {
    /// The option naming this output, and what its destination may be.
    fn file(&self) -> &'static OutputFile;

    /// Readies the output for its checked destination, once, when it is declared (before any
    /// I/O): a format written while the runs go learns where it goes.
    fn prepare(&mut self, dest: &Destination) -> Result<(), BadInput> {
        let _ = dest;
        Ok(())
    }

    /// What follows the runs as they go, for a format made from their seconds (the interval
    /// log); `None` (the default) for one made from the result alone.
    fn recorder(&mut self) -> Option<&mut dyn RecordRuns> {
        None
    }

    /// Writes the output for `result` to `dest` (checked when it was declared), whole or not
    /// at all.
    fn write(self: Box<Self>, dest: &Destination, result: &R) -> anyhow::Result<()>;
}

/// One run as it begins, for [`RecordRuns::begin`].
#[derive(Debug, Clone, Copy)]
pub struct RunStart<'a> {
    /// The run's name among the command's runs (`step2`, `phase1`), `None` for a command's
    /// only run.
    pub label: Option<&'a str>,
    /// Its targets, in the order the engine numbers them.
    pub targets: &'a [PathBuf],
    /// Its workload.
    pub workload: &'a Workload,
    /// When its measured window starts (after the ramp).
    pub measured_start: SystemTime,
}

/// What sees the runs' seconds as they are measured (see [`Export::recorder`]).
pub trait RecordRuns {
    /// A run is about to start; an error calls it off before any I/O.
    fn begin(&mut self, run: &RunStart<'_>) -> anyhow::Result<()>;
    /// One device's second.
    fn interval(&mut self, interval: &DeviceInterval);
    /// The host's second: every device's histograms of it added.
    fn host_second(&mut self, host: &SecondHistograms);
    /// The run ended after measuring `measured` (a signal or an I/O limit may end it early);
    /// the host's seconds some device never completed follow.
    fn ended_after(&mut self, measured: Duration);
}

/// Every [`RecordRuns`] of a command's outputs, for one run ([`Outputs::recorders`]).
pub struct Recorders<'a>(Vec<&'a mut dyn RecordRuns>);

impl Recorders<'_> {
    /// No recorder: a run whose outputs are made from its result alone.
    pub fn none() -> Recorders<'static> {
        Recorders(Vec::new())
    }

    /// Whether nothing records the runs (so no host histograms need be handed over).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl RecordRuns for Recorders<'_> {
    fn begin(&mut self, run: &RunStart<'_>) -> anyhow::Result<()> {
        self.0.iter_mut().try_for_each(|r| r.begin(run))
    }

    fn interval(&mut self, interval: &DeviceInterval) {
        self.0.iter_mut().for_each(|r| r.interval(interval));
    }

    fn host_second(&mut self, host: &SecondHistograms) {
        self.0.iter_mut().for_each(|r| r.host_second(host));
    }

    fn ended_after(&mut self, measured: Duration) {
        self.0.iter_mut().for_each(|r| r.ended_after(measured));
    }
}

/// One declared output: where it goes and its format.
struct Declared<R: ?Sized> {
    dest: Destination,
    export: Box<dyn Export<R>>,
}

/// The outputs a command declared, in the order they are written.
pub struct Outputs<R: ?Sized> {
    declared: Vec<Declared<R>>,
}

impl<R: ?Sized> Default for Outputs<R> {
    fn default() -> Self {
        Outputs {
            declared: Vec::new(),
        }
    }
}

impl<R: ?Sized> Outputs<R> {
    /// No outputs yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares `export`, when its option was given (`path`): the destination is checked now
    /// ([`OutputFile::check`]), and refused if another declared output writes the same file.
    pub fn declare(
        mut self,
        path: Option<&Path>,
        export: impl Export<R> + 'static,
    ) -> Result<Self, BadInput> {
        let Some(path) = path else {
            return Ok(self);
        };
        let dest = export.file().check(path)?;
        let mut files = self.files();
        if let Some(p) = dest.file_path() {
            files.push((export.file().option, p.to_path_buf()));
        }
        let pairs: Vec<(&str, &Path)> = files.iter().map(|(o, p)| (*o, p.as_path())).collect();
        check_apart(&pairs, &[])?;
        let mut export = export;
        export.prepare(&dest)?;
        self.declared.push(Declared {
            dest,
            export: Box::new(export),
        });
        Ok(self)
    }

    /// The files the outputs write, as (option, absolute path): what the plan keeps apart
    /// from its targets.
    pub fn files(&self) -> Vec<(&'static str, PathBuf)> {
        self.declared
            .iter()
            .filter_map(|d| {
                let path = d.dest.file_path()?;
                Some((d.export.file().option, path.to_path_buf()))
            })
            .collect()
    }

    /// Refuses outputs that are one of `inputs` (option, path): see [`check_apart`].
    pub fn check_apart_from(&self, inputs: &[(&str, &Path)]) -> Result<(), BadInput> {
        let files = self.files();
        let outputs: Vec<(&str, &Path)> = files.iter().map(|(o, p)| (*o, p.as_path())).collect();
        check_apart(&outputs, inputs)
    }

    /// Where the output named `option` goes, if declared.
    pub fn destination(&self, option: &str) -> Option<&Destination> {
        self.declared
            .iter()
            .find(|d| d.export.file().option == option)
            .map(|d| &d.dest)
    }

    /// Where the JSON report goes, if anywhere (text for people goes to stderr when it is
    /// standard output: see [`super::destination::print_beside_json`]).
    pub fn json(&self) -> Option<&Destination> {
        self.destination(super::destination::JSON.option)
    }

    /// The recorders of the runs, to hand one run ([`crate::measure`]).
    pub fn recorders(&mut self) -> Recorders<'_> {
        Recorders(
            self.declared
                .iter_mut()
                .filter_map(|d| d.export.recorder())
                .collect(),
        )
    }

    /// Writes every output from `result`, in the order declared. A failure does not stop the
    /// others (each is its own file); every failure is said, in one error (each kept output
    /// says where it went).
    pub fn write(self, result: &R) -> anyhow::Result<()> {
        let failed: Vec<String> = self
            .declared
            .into_iter()
            .filter_map(|Declared { dest, export }| export.write(&dest, result).err())
            .map(|e| crate::error::error_line(&e))
            .collect();
        match failed.is_empty() {
            true => Ok(()),
            false => Err(anyhow::anyhow!("{}", failed.join("; also "))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::destination::{write_output, HTML, JSON, SVG};
    use crate::test_support::ScratchDir;

    /// A format that writes the result as it is.
    struct Text(&'static OutputFile);

    impl Export<str> for Text {
        fn file(&self) -> &'static OutputFile {
            self.0
        }

        fn write(self: Box<Self>, dest: &Destination, result: &str) -> anyhow::Result<()> {
            Ok(write_output(self.0, dest, result.as_bytes())?)
        }
    }

    #[test]
    fn outputs_are_checked_when_declared_and_kept_apart() {
        let scratch = ScratchDir::new("declare");
        let same = scratch.0.join("r.out");
        let err = Outputs::<str>::new()
            .declare(Some(&same), Text(&JSON))
            .unwrap()
            .declare(Some(&same), Text(&SVG))
            .err()
            .unwrap();
        assert!(err.0.contains("--json writes that file too"), "{err}");
        let err = Outputs::<str>::new()
            .declare(Some(Path::new("-")), Text(&HTML))
            .err()
            .unwrap();
        assert!(err.0.starts_with("--html -"), "{err}");
        let outputs = Outputs::<str>::new()
            .declare(Some(Path::new("-")), Text(&JSON))
            .unwrap()
            .declare(None, Text(&SVG))
            .unwrap();
        assert_eq!(outputs.json(), Some(&Destination::Stdout));
        assert!(outputs.files().is_empty() && outputs.destination("--svg").is_none());
        assert!(
            scratch.entries().is_empty(),
            "nothing written when declared"
        );
    }

    #[test]
    fn a_failed_output_does_not_stop_the_others() {
        let scratch = ScratchDir::new("write-all");
        let gone = scratch.0.join("gone");
        std::fs::create_dir(&gone).unwrap();
        let gone_too = scratch.0.join("gone-too");
        std::fs::create_dir(&gone_too).unwrap();
        let name = format!("all-{}", std::process::id());
        let outputs = Outputs::<str>::new()
            .declare(Some(&gone.join(format!("{name}.json"))), Text(&JSON))
            .unwrap()
            .declare(Some(&scratch.0.join("c.svg")), Text(&SVG))
            .unwrap()
            .declare(Some(&gone_too.join(format!("{name}.html"))), Text(&HTML))
            .unwrap();
        std::fs::remove_dir(&gone).unwrap();
        std::fs::remove_dir(&gone_too).unwrap();
        let err = outputs.write("<svg/>").unwrap_err().to_string();
        // Both failures are said, each with where its bytes went.
        let (json, html) = err.split_once("; also ").expect(&err);
        assert!(
            json.starts_with("--json ") && html.starts_with("--html "),
            "{err}"
        );
        for (said, what) in [(json, "the report"), (html, "the page")] {
            let kept = said
                .rsplit_once(&format!("{what} is kept in "))
                .expect(said)
                .1;
            assert_eq!(std::fs::read_to_string(kept).unwrap(), "<svg/>");
            std::fs::remove_file(kept).unwrap();
        }
        assert_eq!(scratch.entries(), vec!["c.svg"]);
    }
}
