//! A report made through the libraries alone (the engine measures, the aggregator sums up),
//! as another Rust tool would make it.

// The harness's part that needs no hostmax binary (this package has none).
#[path = "../../../tests/support/volumes.rs"]
mod support;

use std::time::Duration;

use hostmax_engine::{measure, DeviceInterval, IoPattern, MeasureRequest, Workload};
use support::*;

/// A report made through the libraries alone carries its run's id and measured window, so
/// `merge_reports` refuses it given twice.
#[test]
fn a_library_report_carries_its_run_id_and_window() {
    require_root!();
    let host = volumes(1, 16 << 20);
    let dev = host.device_paths()[0].clone();
    let workload = Workload::default()
        .with_pattern(IoPattern::RandRead)
        .with_runtime(Duration::from_millis(300))
        .with_ramp(Duration::ZERO)
        .with_iodepth(8);
    let before = std::time::SystemTime::now();
    // A read run: no consent asked, no write-safety check made.
    let result = measure(
        MeasureRequest::new(vec![dev], workload),
        &mut |_: DeviceInterval| {},
    )
    .unwrap();
    let from = result.measured_from.expect("the engine records its window");
    assert!(from >= before, "{from:?} before {before:?}");
    assert_ne!(result.run_id, 0);
    let report = hostmax_aggregate::summarize(&result, Vec::new());
    let p = &report.provenance;
    assert_eq!(p.run_id, Some(format!("{:016x}", result.run_id)));
    assert!(p.started_at.is_some() && p.ended_at.is_some(), "{p:?}");
    assert!(p.started_at < p.ended_at, "{p:?}");
    let err =
        hostmax_aggregate::merge_reports(&[("one".into(), report.clone()), ("two".into(), report)])
            .unwrap_err();
    assert!(
        matches!(err, hostmax_aggregate::MergeError::SameRun { .. }),
        "{err}"
    );
}
