//! What `hostmax merge` decodes of a report's histograms (base64 HdrHistogram V2 + DEFLATE),
//! and the merge itself on a report read from the same bytes. Never panics, never allocates
//! what a header claims: a decoded histogram stays within hostmax's bin layout.
#![no_main]

use hostmax_aggregate::{decode_histogram, merge_reports, merge_reports_with, HostReport};
use hostmax_engine::{LATENCY_HIGHEST_NS, LATENCY_SIGFIG};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(h) = decode_histogram(text) {
        assert!(h.sigfig() <= LATENCY_SIGFIG);
        assert!(h.high() <= 2 * LATENCY_HIGHEST_NS);
    }
    if let Ok(report) = serde_json::from_str::<HostReport>(text) {
        let twice = [("a".into(), report.clone()), ("b".into(), report)];
        // With the window check (times are text too) and without it, so that a report with
        // no window still reaches the histograms.
        let _ = merge_reports(&twice);
        let _ = merge_reports_with(&twice, 0.0);
    }
});
