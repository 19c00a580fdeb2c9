//! [`DeviceMap`]: which target each of a trace's devices is replayed on, and
//! [`FleetShare`]: which of the trace's devices a host of a fleet takes.

use crate::hash::FastMap;
use crate::io::DeviceKey;
use crate::stats::{DeviceStats, TraceStats};

/// A device mapping or fleet share that cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MapError {
    /// A trace device given two targets.
    #[error("trace device {key} is mapped twice; map each trace device onto one target")]
    MappedTwice {
        /// The device.
        key: DeviceKey,
    },
    /// Devices to spread, and no target to spread them over.
    #[error("no targets to spread the trace's devices over; give at least one")]
    NoTargets,
    /// A fleet share whose index is not below its count.
    #[error("host {index} of {count} is not a host of the fleet; give an index from 0 to the count less one, and a count of at least 1")]
    BadShare {
        /// The host's index given.
        index: usize,
        /// The fleet's size given.
        count: usize,
    },
    /// Text that names no device of the format.
    #[error("{text:?} is not a trace device: {why}")]
    BadKey {
        /// The text.
        text: String,
        /// What a device of the format looks like.
        why: String,
    },
}

/// Which target each trace device is replayed on; I/Os of a device it does not map are not
/// replayed. `T` is whatever the caller calls a target (a path, an index). Several trace
/// devices may share a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceMap<T> {
    targets: Vec<T>,
    routes: FastMap<DeviceKey, usize>,
}

impl<T> Default for DeviceMap<T> {
    fn default() -> Self {
        DeviceMap {
            targets: Vec::new(),
            routes: FastMap::default(),
        }
    }
}

impl<T: PartialEq> DeviceMap<T> {
    /// Maps nothing yet.
    pub fn new() -> Self {
        DeviceMap::default()
    }

    /// Maps `key` onto `target` (an explicit `ID=TARGET` pair); a device mapped already is
    /// [`MapError::MappedTwice`].
    pub fn insert(&mut self, key: DeviceKey, target: T) -> Result<(), MapError> {
        if self.routes.contains_key(&key) {
            return Err(MapError::MappedTwice { key });
        }
        let at = match self.targets.iter().position(|t| *t == target) {
            Some(at) => at,
            None => {
                self.targets.push(target);
                self.targets.len() - 1
            }
        };
        self.routes.insert(key, at);
        Ok(())
    }

    /// This map with `key` onto `target` too ([`DeviceMap::insert`]).
    pub fn with_route(mut self, key: DeviceKey, target: T) -> Result<Self, MapError> {
        self.insert(key, target)?;
        Ok(self)
    }

    /// `devices` spread over `targets` so each target's I/O count is as even as whole devices
    /// allow: busiest device first, each onto the target with the fewest I/Os so far (the
    /// first such target on a tie). Deterministic: the same devices and targets give the same
    /// map. `devices` is typically [`TraceStats::busiest`]`(n)` (the n busiest) or
    /// [`FleetShare::devices`] (a fleet host's share).
    pub fn spread<'s>(
        devices: impl IntoIterator<Item = &'s DeviceStats>,
        targets: Vec<T>,
    ) -> Result<Self, MapError> {
        let mut map = DeviceMap::new();
        let placed = balance(devices, targets.len())?;
        for target in targets {
            // Targets are kept as given (a repeated one counts as two places).
            map.targets.push(target);
        }
        for (key, slot) in placed {
            if map.routes.insert(key.clone(), slot).is_some() {
                return Err(MapError::MappedTwice { key: key.clone() });
            }
        }
        Ok(map)
    }
}

impl<T> DeviceMap<T> {
    /// The target `key` is replayed on, if it is mapped.
    pub fn target(&self, key: &DeviceKey) -> Option<&T> {
        self.target_index(key).map(|at| &self.targets[at])
    }

    /// The index in [`DeviceMap::targets`] of `key`'s target, if it is mapped.
    pub fn target_index(&self, key: &DeviceKey) -> Option<usize> {
        self.routes.get(key).copied()
    }

    /// The targets: as given to [`DeviceMap::spread`], or each once in the order
    /// [`DeviceMap::insert`] first saw them.
    pub fn targets(&self) -> &[T] {
        &self.targets
    }

    /// Every mapped device and its target, by device key.
    pub fn routes(&self) -> Vec<(&DeviceKey, &T)> {
        let mut all: Vec<_> = self
            .routes
            .iter()
            .map(|(key, &at)| (key, &self.targets[at]))
            .collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        all
    }

    /// The trace devices mapped onto the target at `index`, by key.
    pub fn devices_on(&self, index: usize) -> Vec<&DeviceKey> {
        let mut keys: Vec<_> = self
            .routes
            .iter()
            .filter(|(_, &at)| at == index)
            .map(|(key, _)| key)
            .collect();
        keys.sort();
        keys
    }

    /// How many trace devices are mapped.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether no trace device is mapped.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }
}

/// Each device's place among `places`, the busiest device first onto the place with the
/// fewest I/Os so far (longest processing time first: within 4/3 of the best balance).
fn balance<'s>(
    devices: impl IntoIterator<Item = &'s DeviceStats>,
    places: usize,
) -> Result<Vec<(&'s DeviceKey, usize)>, MapError> {
    let mut devices: Vec<&DeviceStats> = devices.into_iter().collect();
    if devices.is_empty() {
        return Ok(Vec::new());
    }
    if places == 0 {
        return Err(MapError::NoTargets);
    }
    devices.sort_by(|a, b| b.ios.cmp(&a.ios).then_with(|| a.key.cmp(&b.key)));
    let mut load = vec![0u64; places];
    let mut placed = Vec::with_capacity(devices.len());
    for device in devices {
        let (at, _) = load
            .iter()
            .enumerate()
            .min_by_key(|&(i, &l)| (l, i))
            .expect("places > 0");
        load[at] += device.ios;
        placed.push((&device.key, at));
    }
    Ok(placed)
}

/// One host's share of a trace replayed by a fleet: host `index` of `count` takes the trace
/// devices the balance gives it, every host computing the same balance from the same trace,
/// so the shares never overlap and cover every device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetShare {
    index: usize,
    count: usize,
}

impl FleetShare {
    /// Host `index` (from 0) of a fleet of `count`.
    pub fn new(index: usize, count: usize) -> Result<FleetShare, MapError> {
        if count == 0 || index >= count {
            return Err(MapError::BadShare { index, count });
        }
        Ok(FleetShare { index, count })
    }

    /// This host's index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The fleet's size.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The trace devices this host takes, busiest first: the trace's devices spread over the
    /// fleet's hosts as [`DeviceMap::spread`] spreads them over targets (so every host's I/O
    /// count is as even as whole devices allow), this host's part.
    pub fn devices<'s>(&self, stats: &'s TraceStats) -> Vec<&'s DeviceStats> {
        let all = stats.devices();
        let placed = balance(all.iter().copied(), self.count).expect("count > 0");
        placed
            .into_iter()
            .filter(|&(_, host)| host == self.index)
            .filter_map(|(key, _)| stats.device(key))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{TraceIo, TraceOp};

    /// Stats of devices 0.. with these I/O counts.
    fn stats_of(counts: &[u64]) -> TraceStats {
        let mut stats = TraceStats::new();
        for (dev, &n) in counts.iter().enumerate() {
            for t in 0..n {
                stats.record(&TraceIo::new(
                    t,
                    DeviceKey::Id(dev as u64),
                    TraceOp::Read,
                    0,
                    512,
                ));
            }
        }
        stats
    }

    #[test]
    fn explicit_pairs_map_and_refuse_a_device_twice() {
        let mut map = DeviceMap::new();
        map.insert(DeviceKey::Id(4), "/dev/sdb").unwrap();
        map.insert(DeviceKey::Id(9), "/dev/sdb").unwrap();
        map.insert(DeviceKey::name("a.img"), "/dev/sdc").unwrap();
        assert_eq!(map.targets(), ["/dev/sdb", "/dev/sdc"]);
        assert_eq!(map.target(&DeviceKey::Id(9)), Some(&"/dev/sdb"));
        assert_eq!(map.target(&DeviceKey::Id(5)), None);
        assert_eq!(map.devices_on(0), [&DeviceKey::Id(4), &DeviceKey::Id(9)]);
        assert_eq!(
            map.insert(DeviceKey::Id(4), "/dev/sdd"),
            Err(MapError::MappedTwice {
                key: DeviceKey::Id(4)
            })
        );
    }

    #[test]
    fn the_busiest_devices_spread_evenly_over_targets() {
        // 100, 60, 50, 40, 30, 20 over 3, busiest first onto the least loaded: 100 | 60 + 30
        // + 20 | 50 + 40.
        let stats = stats_of(&[30, 100, 50, 60, 20, 40, 1]);
        let map = DeviceMap::spread(stats.busiest(6), vec!["a", "b", "c"]).unwrap();
        assert_eq!(map.len(), 6);
        assert_eq!(
            map.target(&DeviceKey::Id(6)),
            None,
            "the 7th busiest is left out"
        );
        let load = |t: usize| -> u64 {
            map.devices_on(t)
                .iter()
                .map(|k| stats.device(k).unwrap().ios)
                .sum()
        };
        assert_eq!([load(0), load(1), load(2)], [100, 110, 90]);
        assert_eq!(map.devices_on(0), [&DeviceKey::Id(1)]);
        // The same input gives the same map.
        let again = DeviceMap::spread(stats.busiest(6), vec!["a", "b", "c"]).unwrap();
        assert_eq!(map, again);
    }

    #[test]
    fn spreading_needs_a_target() {
        let stats = stats_of(&[1]);
        assert_eq!(
            DeviceMap::<&str>::spread(stats.busiest(1), vec![]),
            Err(MapError::NoTargets)
        );
    }

    #[test]
    fn fleet_shares_cover_every_device_once_and_balance() {
        let stats = stats_of(&[5, 9, 1, 7, 3, 8, 2, 6]);
        let shares: Vec<Vec<DeviceKey>> = (0..3)
            .map(|i| {
                FleetShare::new(i, 3)
                    .unwrap()
                    .devices(&stats)
                    .iter()
                    .map(|d| d.key.clone())
                    .collect()
            })
            .collect();
        let mut all: Vec<_> = shares.iter().flatten().cloned().collect();
        all.sort();
        assert_eq!(all, (0..8).map(DeviceKey::Id).collect::<Vec<_>>());
        let loads: Vec<u64> = shares
            .iter()
            .map(|s| s.iter().map(|k| stats.device(k).unwrap().ios).sum())
            .collect();
        assert_eq!(loads.iter().sum::<u64>(), 41);
        assert!(
            loads.iter().max().unwrap() - loads.iter().min().unwrap() <= 2,
            "{loads:?}"
        );
        assert_eq!(
            FleetShare::new(3, 3),
            Err(MapError::BadShare { index: 3, count: 3 })
        );
        assert!(FleetShare::new(0, 0).is_err());
    }
}
