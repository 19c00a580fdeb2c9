//! The per-second host time series, built from every device's one-second intervals.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use hostmax_engine::{new_latency_histogram, DeviceInterval, KeyedVisitor, OpKind, PerOp};
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::histogram_codec::EncodedHistograms;
use crate::latency::{add_exact, LatencySummary};

/// One kind's figures in one second of the whole host: `{kind}_iops`, `{kind}_p50_ns` and
/// `{kind}_p99_ns` of a `time_series[]` point in the JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct OpSecond {
    /// Successful I/Os of the kind in this second.
    pub iops: f64,
    /// Their median latency (merged histograms), ns.
    pub p50_ns: u64,
    /// Their 99th percentile latency, ns.
    pub p99_ns: u64,
}

/// The kind and the field a flat key names: `write_p99_ns` is (write, `p99_ns`).
fn op_field(key: &str) -> Option<(OpKind, &str)> {
    let (name, field) = key.split_once('_')?;
    Some((OpKind::from_name(name)?, field))
}

/// Each kind's [`OpSecond`], written flat (`read_iops`, `read_p50_ns`, ... `trim_p99_ns`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OpSeconds(pub PerOp<OpSecond>);

impl Serialize for OpSeconds {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3 * OpKind::COUNT))?;
        for (op, s) in self.0.iter() {
            map.serialize_entry(&format!("{op}_iops"), &s.iops)?;
            map.serialize_entry(&format!("{op}_p50_ns"), &s.p50_ns)?;
            map.serialize_entry(&format!("{op}_p99_ns"), &s.p99_ns)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for OpSeconds {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FlatVisitor;
        impl<'de> Visitor<'de> for FlatVisitor {
            type Value = OpSeconds;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("per-kind figures of a second")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OpSeconds, A::Error> {
                let mut ops = PerOp::<OpSecond>::default();
                while let Some(key) = map.next_key::<String>()? {
                    match op_field(&key) {
                        Some((op, "iops")) => ops[op].iops = map.next_value()?,
                        Some((op, "p50_ns")) => ops[op].p50_ns = map.next_value()?,
                        Some((op, "p99_ns")) => ops[op].p99_ns = map.next_value()?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(OpSeconds(ops))
            }
        }
        deserializer.deserialize_map(FlatVisitor)
    }
}

impl std::ops::Index<OpKind> for OpSeconds {
    type Output = OpSecond;

    fn index(&self, op: OpKind) -> &OpSecond {
        &self.0[op]
    }
}

/// Each kind's IOPS of one device in one second, written flat (`read_iops`, `write_iops`,
/// `trim_iops`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OpRates(pub PerOp<f64>);

impl std::ops::Index<OpKind> for OpRates {
    type Output = f64;

    fn index(&self, op: OpKind) -> &f64 {
        &self.0[op]
    }
}

impl Serialize for OpRates {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(OpKind::COUNT))?;
        self.0
            .serialize_keyed(&mut map, |op| format!("{op}_iops"))?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for OpRates {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_map(KeyedVisitor::new(|key: &str| match op_field(key) {
                Some((op, "iops")) => Some(op),
                _ => None,
            }))
            .map(OpRates)
    }
}

/// One measured second of the whole host.
///
/// Rates are per second, as floats like every rate of the report: a point covers one
/// second, so each is the count of that second (the last second of a run cut short covers
/// less).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SecondPoint {
    /// Second index: 0 is the first second after the ramp.
    pub second: i64,
    /// Successful I/Os of every kind in this second.
    pub iops: f64,
    /// Each kind's IOPS and host latency percentiles of this second (merged histograms).
    #[serde(flatten)]
    pub ops: OpSeconds,
    /// Bytes moved in this second.
    pub bytes_per_sec: f64,
    /// Failed I/Os in this second.
    pub errors: u64,
    /// With an offered rate: I/Os of every device due before this second's end and not yet
    /// issued (waiting for a slot: a stall's backlog). 0 without a rate.
    #[serde(default)]
    pub backlog: u64,
    /// Each device's figures in this second, in the order of the report's `devices`, each
    /// named like its entry there.
    pub devices: Vec<DeviceSecond>,
    /// Not every device reported this second (only from [`TimeSeries::finish`]); a missing
    /// device shows zeros in `devices`.
    #[serde(default)]
    pub partial: bool,
    /// This second's host latency histogram of each kind (V2 + DEFLATE, base64), so that
    /// merged reports compute each second's percentiles from added histograms too; absent in
    /// reports of older versions (merges then show the worst host's percentiles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<EncodedHistograms>,
}

/// A second's host latency histogram of each kind, merged bin by bin from every device's
/// interval: handed over by a series made with [`TimeSeries::hand_over_histograms`] to a
/// caller that logs them whole (an HdrHistogram interval log, say), so each second is merged
/// once.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SecondHistograms {
    /// Second index, as in [`SecondPoint::second`].
    pub second: i64,
    /// Host latencies of this second, per kind.
    pub ops: PerOp<Histogram<u64>>,
    /// Host response times of this second, per kind (empty without an offered rate).
    pub response: PerOp<Histogram<u64>>,
}

/// One device's figures in one second: `time_series[].devices[]` in the JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeviceSecond {
    /// The device, as the report's `devices[].path` names it. [`TimeSeries`] knows devices
    /// only by index and leaves this empty; [`crate::summarize`] fills it in.
    pub path: String,
    /// The host the device is on, in merged (fleet) reports, as `devices[].host`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Its successful I/Os of every kind in this second.
    pub iops: f64,
    /// Each kind's successful I/Os in this second.
    #[serde(flatten)]
    pub ops: OpRates,
    /// Bytes it moved in this second.
    pub bytes_per_sec: f64,
    /// With an offered rate: its I/Os due before this second's end and not yet issued.
    #[serde(default)]
    pub backlog: u64,
}

impl DeviceSecond {
    /// A device's second from its counts, unnamed.
    fn from_counts(counts: &DeviceCounts) -> DeviceSecond {
        DeviceSecond {
            path: String::new(),
            host: None,
            iops: counts.ios.total() as f64,
            ops: OpRates(counts.ios.map(|_, &n| n as f64)),
            bytes_per_sec: counts.bytes as f64,
            backlog: counts.backlog,
        }
    }

    /// The same figures of zero I/O, for a device that did not report the second.
    pub fn idle(path: &str, host: Option<&str>) -> DeviceSecond {
        DeviceSecond {
            path: path.to_string(),
            host: host.map(str::to_string),
            ..DeviceSecond::default()
        }
    }
}

/// One device's counts in a pending second.
#[derive(Debug, Clone, Copy, Default)]
struct DeviceCounts {
    ios: PerOp<u64>,
    bytes: u64,
    backlog: u64,
}

/// A second some devices have reported and others not yet.
#[derive(Debug)]
struct PendingSecond {
    reported: Vec<bool>,
    reported_count: usize,
    ios: PerOp<u64>,
    bytes: u64,
    errors: u64,
    devices: Vec<DeviceCounts>,
    latency: PerOp<Histogram<u64>>,
    response: PerOp<Histogram<u64>>,
}

impl PendingSecond {
    fn new(device_count: usize) -> PendingSecond {
        PendingSecond {
            reported: vec![false; device_count],
            reported_count: 0,
            ios: PerOp::default(),
            bytes: 0,
            errors: 0,
            devices: vec![DeviceCounts::default(); device_count],
            latency: PerOp::from_fn(|_| new_latency_histogram()),
            response: PerOp::from_fn(|_| new_latency_histogram()),
        }
    }

    fn add(&mut self, interval: &DeviceInterval) {
        // A device reporting the same second twice would be an engine bug; its counts are
        // still added (nothing is dropped) but it completes the second only once.
        if !self.reported[interval.device] {
            self.reported[interval.device] = true;
            self.reported_count += 1;
        }
        self.errors += interval.errors;
        let device = &mut self.devices[interval.device];
        device.backlog += interval.backlog;
        for (op, counts) in interval.ops.iter() {
            self.ios[op] += counts.ios;
            self.bytes += counts.bytes;
            device.ios[op] += counts.ios;
            device.bytes += counts.bytes;
            add_exact(&mut self.latency[op], &counts.latency);
            add_exact(&mut self.response[op], &counts.response);
        }
    }

    fn histograms(&self, second: i64) -> SecondHistograms {
        SecondHistograms {
            second,
            ops: self.latency.clone(),
            response: self.response.clone(),
        }
    }

    fn into_point(self, second: i64, keep_histograms: bool) -> SecondPoint {
        SecondPoint {
            second,
            iops: self.ios.total() as f64,
            ops: OpSeconds(self.latency.map(|op, h| {
                let latency = LatencySummary::from_histogram(h);
                OpSecond {
                    iops: self.ios[op] as f64,
                    p50_ns: latency.p50,
                    p99_ns: latency.p99,
                }
            })),
            bytes_per_sec: self.bytes as f64,
            errors: self.errors,
            backlog: self.devices.iter().map(|d| d.backlog).sum(),
            partial: self.reported_count < self.reported.len(),
            devices: self.devices.iter().map(DeviceSecond::from_counts).collect(),
            histograms: keep_histograms
                .then(|| EncodedHistograms::encode(&self.latency).ok())
                .flatten(),
        }
    }
}

/// Builds host [`SecondPoint`]s from [`DeviceInterval`]s of many devices arriving in any
/// order.
///
/// Ramp seconds (negative) are ignored. A second is complete once each of the `device_count`
/// devices has reported it; its histograms are then merged bin by bin into the point and
/// dropped, so memory holds only the seconds still waiting for a device.
#[derive(Debug)]
pub struct TimeSeries {
    device_count: usize,
    keep_histograms: bool,
    /// Completed seconds' histograms waiting for [`TimeSeries::take_histograms`]; `None`
    /// unless [`TimeSeries::hand_over_histograms`] asked for them.
    handed_over: Option<Vec<SecondHistograms>>,
    pending: BTreeMap<i64, PendingSecond>,
    /// Completed points, sorted by second.
    points: Vec<SecondPoint>,
}

impl TimeSeries {
    /// A series for a run of `device_count` devices (indexed `0..device_count`).
    pub fn new(device_count: usize) -> TimeSeries {
        TimeSeries {
            device_count,
            keep_histograms: true,
            handed_over: None,
            pending: BTreeMap::new(),
            points: Vec::new(),
        }
    }

    /// Whether each point keeps its second's encoded histograms ([`SecondPoint::histograms`],
    /// about 11 KB a second); on by default. Without them a long run's series stays small.
    pub fn keep_histograms(mut self, keep: bool) -> TimeSeries {
        self.keep_histograms = keep;
        self
    }

    /// Whether each completed second's merged histograms are kept for
    /// [`TimeSeries::take_histograms`] (off by default).
    pub fn hand_over_histograms(mut self, hand_over: bool) -> TimeSeries {
        self.handed_over = hand_over.then(Vec::new);
        self
    }

    /// The merged histograms of the seconds completed since the last call, in the order they
    /// completed (empty unless [`TimeSeries::hand_over_histograms`]).
    pub fn take_histograms(&mut self) -> Vec<SecondHistograms> {
        self.handed_over
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Adds one device's second. Returns the host point of that second if this interval was
    /// the last one it waited for.
    ///
    /// Ignored (returns `None`): ramp seconds, device indices out of range, and intervals of a
    /// second that was already completed.
    pub fn push(&mut self, interval: DeviceInterval) -> Option<SecondPoint> {
        if interval.second < 0 || interval.device >= self.device_count {
            return None;
        }
        let slot = match self
            .points
            .binary_search_by_key(&interval.second, |p| p.second)
        {
            Ok(_) => return None,
            Err(slot) => slot,
        };
        let pending = self
            .pending
            .entry(interval.second)
            .or_insert_with(|| PendingSecond::new(self.device_count));
        pending.add(&interval);
        if pending.reported_count < self.device_count {
            return None;
        }
        let pending = self.pending.remove(&interval.second)?;
        if let Some(handed_over) = &mut self.handed_over {
            handed_over.push(pending.histograms(interval.second));
        }
        let point = pending.into_point(interval.second, self.keep_histograms);
        self.points.insert(slot, point.clone());
        Some(point)
    }

    /// The completed seconds so far, in order.
    pub fn points(&self) -> &[SecondPoint] {
        &self.points
    }

    /// Seconds some but not all devices have reported, in order.
    pub fn incomplete_seconds(&self) -> Vec<i64> {
        self.pending.keys().copied().collect()
    }

    /// The completed seconds, in order; incomplete seconds are left out.
    pub fn into_points(self) -> Vec<SecondPoint> {
        self.points
    }

    /// Every second, in order: the completed ones and, marked `partial`, those some device
    /// never reported (a run cut short can leave such seconds).
    pub fn finish(self) -> Vec<SecondPoint> {
        self.finish_with_histograms().0
    }

    /// [`TimeSeries::finish`], and the merged histograms not taken yet: those of completed
    /// seconds, then those of the partial ones (empty unless
    /// [`TimeSeries::hand_over_histograms`]).
    pub fn finish_with_histograms(mut self) -> (Vec<SecondPoint>, Vec<SecondHistograms>) {
        let mut histograms = self.take_histograms();
        if self.handed_over.is_some() {
            histograms.extend(
                self.pending
                    .iter()
                    .map(|(&second, pending)| pending.histograms(second)),
            );
        }
        let mut all = self.points;
        all.extend(
            self.pending
                .into_iter()
                .map(|(second, pending)| pending.into_point(second, self.keep_histograms)),
        );
        all.sort_by_key(|p| p.second);
        (all, histograms)
    }
}

impl OpSecond {
    /// A second of `iops` with median `p50_ns` and 99th percentile `p99_ns` latencies.
    pub const fn new(iops: f64, p50_ns: u64, p99_ns: u64) -> OpSecond {
        OpSecond {
            iops,
            p50_ns,
            p99_ns,
        }
    }
}

impl SecondPoint {
    /// Second `second` of the host with nothing in it yet (no I/O, no devices, complete):
    /// for tools and tests that build series; set the figures with the setters or on the
    /// value.
    pub fn new(second: i64) -> SecondPoint {
        SecondPoint {
            second,
            iops: 0.0,
            ops: OpSeconds::default(),
            bytes_per_sec: 0.0,
            errors: 0,
            backlog: 0,
            devices: Vec::new(),
            partial: false,
            histograms: None,
        }
    }
}

with_setters!(SecondPoint {
    with_iops => iops: f64,
    with_ops => ops: OpSeconds,
    with_bytes_per_sec => bytes_per_sec: f64,
    with_errors => errors: u64,
    with_backlog => backlog: u64,
    with_devices => devices: Vec<DeviceSecond>,
    with_partial => partial: bool,
    with_histograms => histograms: Option<EncodedHistograms>,
});

#[cfg(test)]
mod tests {
    use super::*;

    fn iops_of(p: &SecondPoint) -> Vec<f64> {
        p.devices.iter().map(|d| d.iops).collect()
    }

    fn interval(device: usize, second: i64, reads: &[u64], writes: &[u64]) -> DeviceInterval {
        let mut ops = PerOp::<hostmax_engine::OpResult>::default();
        for (op, latencies, bs) in [(OpKind::Read, reads, 4096), (OpKind::Write, writes, 8192)] {
            for &v in latencies {
                ops[op].latency.record(v).unwrap();
            }
            ops[op].ios = latencies.len() as u64;
            ops[op].bytes = latencies.len() as u64 * bs;
        }
        DeviceInterval::new(device, second, ops, device as u64)
    }

    #[test]
    fn a_second_completes_only_when_every_device_reported() {
        let mut ts = TimeSeries::new(3);
        assert!(ts.push(interval(0, 0, &[100, 200], &[])).is_none());
        assert!(ts.push(interval(2, 1, &[100], &[])).is_none());
        assert!(ts.push(interval(1, 0, &[300], &[5000])).is_none());
        // A duplicate from device 0 must not stand in for device 2.
        assert!(ts.push(interval(0, 0, &[400], &[])).is_none());
        assert!(ts.points().is_empty());
        assert_eq!(ts.incomplete_seconds(), vec![0, 1]);

        let p = ts
            .push(interval(2, 0, &[500], &[]))
            .expect("second 0 complete");
        assert_eq!(p.second, 0);
        assert_eq!(p.ops[OpKind::Read].iops, 5.0);
        assert_eq!(p.ops[OpKind::Write].iops, 1.0);
        assert_eq!(p.iops, 6.0);
        assert_eq!(iops_of(&p), vec![3.0, 2.0, 1.0]);
        assert_eq!(
            (
                p.devices[1].ops[OpKind::Read],
                p.devices[1].ops[OpKind::Write]
            ),
            (1.0, 1.0)
        );
        assert_eq!(p.devices[1].bytes_per_sec, 4096.0 + 8192.0);
        assert_eq!(p.bytes_per_sec, (5 * 4096 + 8192) as f64);
        assert_eq!(p.errors, 1 + 2);
        assert!(!p.partial);
        assert_eq!(ts.points(), std::slice::from_ref(&p));
        assert_eq!(ts.incomplete_seconds(), vec![1]);

        // Late interval for a completed second: ignored.
        assert!(ts.push(interval(1, 0, &[1], &[])).is_none());
        assert_eq!(ts.points()[0], p);
    }

    #[test]
    fn ramp_and_unknown_devices_are_ignored() {
        let mut ts = TimeSeries::new(1);
        assert!(ts.push(interval(0, -1, &[100], &[])).is_none());
        assert!(ts.push(interval(5, 0, &[100], &[])).is_none());
        assert!(ts.points().is_empty());
        assert!(ts.incomplete_seconds().is_empty());
        assert!(ts.push(interval(0, 0, &[100], &[])).is_some());
    }

    #[test]
    fn points_are_ordered_whatever_the_arrival_order() {
        let mut ts = TimeSeries::new(2);
        for second in [2, 0, 1] {
            ts.push(interval(0, second, &[10], &[]));
        }
        for second in [1, 2, 0] {
            assert!(ts.push(interval(1, second, &[10], &[])).is_some());
        }
        let seconds: Vec<i64> = ts.points().iter().map(|p| p.second).collect();
        assert_eq!(seconds, vec![0, 1, 2]);
    }

    #[test]
    fn second_percentiles_come_from_merged_interval_histograms() {
        let a: Vec<u64> = (1..=900).map(|i| i * 1000).collect();
        let b: Vec<u64> = (1..=100).map(|i| i * 1_000_000).collect();
        let mut ts = TimeSeries::new(2);
        ts.push(interval(0, 0, &a, &b));
        let p = ts.push(interval(1, 0, &b, &a)).unwrap();
        let mut direct = new_latency_histogram();
        for v in a.iter().chain(&b) {
            direct.record(*v).unwrap();
        }
        let s = LatencySummary::from_histogram(&direct);
        assert_eq!(p.ops[OpKind::Read].p50_ns, s.p50);
        assert_eq!(p.ops[OpKind::Read].p99_ns, s.p99);
        assert_eq!(p.ops[OpKind::Write].p50_ns, s.p50);
        assert_eq!(p.ops[OpKind::Write].p99_ns, s.p99);
        // 10% of the values are >= 1 ms: p99 sits among them, p50 does not.
        assert!(p.ops[OpKind::Read].p99_ns >= 1_000_000 && p.ops[OpKind::Read].p50_ns < 1_000_000);
        // The point carries the second's merged histograms, unless asked not to.
        let read = &p.histograms.as_ref().unwrap().decode().unwrap()[OpKind::Read];
        assert_eq!(read.len(), direct.len());
        let mut lean = TimeSeries::new(2).keep_histograms(false);
        lean.push(interval(0, 0, &a, &b));
        let p = lean.push(interval(1, 0, &b, &a)).unwrap();
        assert!(p.histograms.is_none());
        assert_eq!(p.ops[OpKind::Read].p99_ns, s.p99);
    }

    #[test]
    fn merged_histograms_are_handed_over_once_per_second_when_asked() {
        let mut ts = TimeSeries::new(2).hand_over_histograms(true);
        ts.push(interval(0, 0, &[10, 20], &[30]));
        assert!(ts.take_histograms().is_empty());
        ts.push(interval(1, 0, &[40], &[]));
        ts.push(interval(0, 1, &[50], &[]));
        let done = ts.take_histograms();
        assert_eq!(done.len(), 1);
        assert_eq!(
            (
                done[0].second,
                done[0].ops[OpKind::Read].len(),
                done[0].ops[OpKind::Write].len()
            ),
            (0, 3, 1)
        );
        assert!(
            ts.take_histograms().is_empty(),
            "each second is handed over once"
        );
        let (points, rest) = ts.finish_with_histograms();
        assert_eq!(points.len(), 2);
        assert_eq!(rest.len(), 1, "the partial second too");
        assert_eq!((rest[0].second, rest[0].ops[OpKind::Read].len()), (1, 1));
        let mut plain = TimeSeries::new(1);
        plain.push(interval(0, 0, &[10], &[]));
        assert!(plain.take_histograms().is_empty());
        assert!(plain.finish_with_histograms().1.is_empty());
    }

    #[test]
    fn finish_keeps_incomplete_seconds_marked_partial() {
        let mut ts = TimeSeries::new(2);
        ts.push(interval(0, 0, &[10], &[]));
        ts.push(interval(1, 0, &[10], &[]));
        ts.push(interval(1, 1, &[10, 20], &[]));
        let all = ts.finish();
        assert_eq!(all.len(), 2);
        assert!(!all[0].partial);
        assert!(all[1].partial);
        assert_eq!(iops_of(&all[1]), vec![0.0, 2.0]);
    }
}
