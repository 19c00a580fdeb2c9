//! What `hostmax merge` reads from a report before merging: the JSON as a report, its measured
//! windows (`started_at`/`ended_at`, RFC 3339, also per host of a merged report) and their
//! overlap. Never panics; an accepted window never ends before it starts.
#![no_main]

use hostmax::provenance::{check_overlap, overlap, windows_of};
use hostmax_aggregate::HostReport;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(report) = serde_json::from_str::<HostReport>(text) else {
        return;
    };
    if let Ok(windows) = windows_of("fuzz.json", &report) {
        for w in &windows {
            assert!(w.end >= w.start);
        }
        let _ = overlap(&windows);
        let _ = check_overlap(&windows, 0.5);
    }
});
