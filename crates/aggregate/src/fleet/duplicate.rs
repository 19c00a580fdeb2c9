//! The same run given twice to [`crate::merge_reports`]: known by its run id, and, when the
//! id is missing (reports of older versions, or one taken out), by what it measured.

use std::collections::BTreeMap;

use super::MergeError;
use crate::histogram_codec::EncodedHistograms;
use crate::report::{DeviceReport, HostReport, Provenance};

/// What one device of a run measured: its name, exact counts and latency histograms.
#[derive(PartialEq)]
struct DeviceContent<'a> {
    path: &'a str,
    ios: Vec<(u64, u64)>,
    errors: u64,
    histograms: Option<&'a EncodedHistograms>,
}

/// What a run measured, as no other run can have measured it: its window, and each
/// device's exact counts and latency histograms. A run that did no I/O at all has nothing
/// of its own in those, so its host name is part of it too.
#[derive(PartialEq)]
struct RunContent<'a> {
    started_at: Option<&'a str>,
    ended_at: Option<&'a str>,
    measured_secs: u64,
    devices: Vec<DeviceContent<'a>>,
    idle_host: Option<&'a str>,
}

impl<'a> RunContent<'a> {
    fn new(
        provenance: &'a Provenance,
        measured_secs: f64,
        host: &'a str,
        devices: impl Iterator<Item = &'a DeviceReport>,
    ) -> RunContent<'a> {
        let devices: Vec<DeviceContent> = devices
            .map(|d| DeviceContent {
                path: &d.path,
                ios: d.figures.ops.values().map(|o| (o.ios, o.bytes)).collect(),
                errors: d.figures.errors,
                histograms: d.figures.histograms.as_ref(),
            })
            .collect();
        let idle = devices
            .iter()
            .all(|d| d.errors == 0 && d.ios.iter().all(|&(ios, _)| ios == 0));
        RunContent {
            started_at: provenance.started_at.as_deref(),
            ended_at: provenance.ended_at.as_deref(),
            measured_secs: measured_secs.to_bits(),
            devices,
            idle_host: idle.then_some(host),
        }
    }
}

/// Each run a report holds, as (run id, host name, what it measured): its own, or for a
/// merged report its hosts' (their devices are those naming them).
fn runs<'a>(
    label: &'a str,
    report: &'a HostReport,
) -> Vec<(Option<&'a str>, &'a str, RunContent<'a>)> {
    match &report.fleet {
        Some(fleet) => fleet
            .hosts
            .iter()
            .map(|h| {
                let devices = report
                    .devices
                    .iter()
                    .filter(|d| d.host.as_deref() == Some(h.hostname.as_str()));
                (
                    h.provenance.run_id.as_deref(),
                    h.hostname.as_str(),
                    RunContent::new(&h.provenance, h.measured_secs, &h.hostname, devices),
                )
            })
            .collect(),
        None => {
            // As the merge names a host without a hostname: by its label.
            let host = report.hostname.as_deref().unwrap_or(label);
            vec![(
                report.provenance.run_id.as_deref(),
                host,
                RunContent::new(
                    &report.provenance,
                    report.measured_secs,
                    host,
                    report.devices.iter(),
                ),
            )]
        }
    }
}

/// Refuses a run that two reports hold (the same file twice, a copy with its run id taken
/// out, or a host's report beside a merged report that already holds it).
pub(super) fn refuse_repeated_runs(reports: &[(String, HostReport)]) -> Result<(), MergeError> {
    let mut ids: BTreeMap<&str, &str> = BTreeMap::new();
    let mut contents: Vec<(RunContent, &str)> = Vec::new();
    for (label, report) in reports {
        for (id, host, content) in runs(label, report) {
            if let Some(id) = id {
                if let Some(first) = ids.insert(id, label) {
                    return Err(MergeError::SameRun {
                        label: label.clone(),
                        first_label: first.to_string(),
                        run_id: id.to_string(),
                    });
                }
            }
            if let Some((_, first)) = contents.iter().find(|(c, _)| *c == content) {
                return Err(MergeError::SameContent {
                    label: label.clone(),
                    first_label: first.to_string(),
                    host: host.to_string(),
                });
            }
            contents.push((content, label));
        }
    }
    Ok(())
}
