//! `--consistency`: the share of seconds each volume and the host must keep the promise in,
//! applied to a verdict ([`apply`]) and shown under the verdict table ([`render`]).

use hostmax_aggregate::consistency::{judge_consistency, Consistency, ConsistencyVerdict};
use hostmax_aggregate::verdict::Judgement;
use hostmax_aggregate::{HostReport, SpecSet, Verdict};

use crate::units::format_mib_per_sec;

/// Adds the consistency verdict over `reports` to `verdict` (its failures fail it) when a
/// share is required and a run judges IOPS or throughput.
pub fn apply(
    verdict: &mut Verdict,
    set: &SpecSet,
    reports: &[&HostReport],
    required: Option<Consistency>,
) {
    let Some(required) = required else { return };
    if let Some(c) = judge_consistency(set, reports, required) {
        verdict.judgement = verdict.judgement.and(Judgement::of(c.pass));
        verdict.consistency = Some(c);
    }
}

/// The consistency section: per volume and the host, seconds held of seconds measured, the
/// share against the required one, the per-second CV and the worst seconds.
pub fn render(c: &ConsistencyVerdict) -> String {
    let bytes = c.figure == "bytes_per_sec";
    let show = |v: f64| {
        if bytes {
            format!("{} MiB/s", format_mib_per_sec(v))
        } else {
            format!("{v:.0}")
        }
    };
    let mut out = format!(
        "consistency (each second at or above (1 - tolerance) x the promised {}; required in {} of seconds)\n",
        if bytes { "throughput" } else { "IOPS" },
        c.required
    );
    let rows = c
        .devices
        .iter()
        .map(|d| (d.path.as_str(), &d.series))
        .chain(std::iter::once(("host", &c.host)));
    for (name, s) in rows {
        let held = match (s.share_held, s.floor) {
            (Some(share), Some(floor)) => format!(
                "{}/{} seconds >= {} ({:.1}%) {}",
                s.seconds_held,
                s.seconds,
                show(floor),
                share * 100.0,
                if s.pass { "PASS" } else { "FAIL" }
            ),
            _ => "no promise".to_string(),
        };
        let worst = s
            .worst_seconds
            .iter()
            .map(|w| format!("s{} {}", w.second, show(w.value)))
            .collect::<Vec<_>>()
            .join(", ");
        out += &format!(
            "  {name:<14} {held}; CV {:.1}%; worst: {worst}\n",
            s.cv * 100.0
        );
    }
    crate::output::stdio::escape_lines(&out).into_owned()
}
