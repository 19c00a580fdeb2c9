//! Placing targets on CPUs from their blk-mq maps.
//!
//! Each block device lists, per hardware queue, the CPUs whose submissions go to that queue
//! (its [`QueueMap`], read by the device crate). Submitting from one of those CPUs keeps the completion
//! local. [`plan`] gives each target to the least-loaded allowed CPU among its queue CPUs (any
//! allowed CPU when the map is missing or disjoint from the allowed set), most constrained
//! targets first, and makes one worker per CPU that got targets. One pinned thread per CPU
//! with one ring over many devices was the fastest arrangement measured on the 2-core test
//! machine: against one thread per device (fio's layout, [`ThreadLayout::PerDevice`]) it won 3
//! of 4 alternating pairs on 20 loop volumes, median 385K against 363K IOPS with 6-14% less
//! CPU per I/O (README.md, speed section). More threads than CPUs only add context switches.

use hostmax_device::{QueueMap, Sysfs, TargetInfo};
use serde::{Deserialize, Serialize};

use crate::{EngineError, Setting, SettingError};

/// One worker: its CPU and the targets (indices) it drives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkerPlan {
    /// CPU the worker thread is pinned to.
    pub cpu: usize,
    /// Indices into the run's target list.
    pub devices: Vec<usize>,
}

/// Where every target of a run is driven from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Placement {
    /// One entry per worker thread, in CPU order.
    pub workers: Vec<WorkerPlan>,
}

impl Placement {
    /// The CPU that drives target `device`.
    pub fn cpu_of(&self, device: usize) -> Option<usize> {
        self.workers
            .iter()
            .find(|w| w.devices.contains(&device))
            .map(|w| w.cpu)
    }
}

/// The CPUs this process may run on (its affinity mask).
pub fn allowed_cpus() -> Result<Vec<usize>, EngineError> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).map_err(|e| {
        EngineError::InvalidCpus(SettingError::new(
            format!("cannot read CPU affinity: {e}"),
            &[],
        ))
    })?;
    Ok((0..nix::sched::CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect())
}

/// How many worker threads a run uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ThreadLayout {
    /// One thread per used CPU, one ring over all its devices (the default: fastest measured).
    #[default]
    PerCpu,
    /// One thread and ring per device (fio's one-job-per-device layout), pinned the same way.
    PerDevice,
}

/// Places targets on the `allowed` CPUs (see the module overview).
pub fn plan(
    targets: &[TargetInfo],
    allowed: &[usize],
    layout: ThreadLayout,
) -> Result<Placement, EngineError> {
    let sysfs = Sysfs::default();
    let queue_maps: Vec<Option<Vec<usize>>> = targets
        .iter()
        .map(|t| {
            let map = QueueMap::read(&sysfs, &t.whole_disk(&sysfs)?)?;
            Some(map.cpus()).filter(|cpus| !cpus.is_empty())
        })
        .collect();
    let placement = plan_with_maps(&queue_maps, allowed)?;
    Ok(match layout {
        ThreadLayout::PerCpu => placement,
        ThreadLayout::PerDevice => placement.split_per_device(),
    })
}

impl Placement {
    /// The same CPUs, but one worker per device.
    pub fn split_per_device(self) -> Placement {
        let mut workers: Vec<WorkerPlan> = self
            .workers
            .into_iter()
            .flat_map(|w| {
                w.devices.into_iter().map(move |d| WorkerPlan {
                    cpu: w.cpu,
                    devices: vec![d],
                })
            })
            .collect();
        workers.sort_by_key(|w| w.devices[0]);
        Placement { workers }
    }
}

/// [`plan`] with the queue maps given (one per target; `None` where a target has none).
pub(crate) fn plan_with_maps(
    queue_maps: &[Option<Vec<usize>>],
    allowed: &[usize],
) -> Result<Placement, EngineError> {
    if allowed.is_empty() {
        return Err(EngineError::InvalidCpus(SettingError::new(
            "no CPU to run on: give a list of online CPUs this process may use",
            &[Setting::Cpus],
        )));
    }
    let candidates: Vec<Vec<usize>> = queue_maps
        .iter()
        .map(|map| {
            let local: Vec<usize> = map
                .iter()
                .flatten()
                .copied()
                .filter(|c| allowed.contains(c))
                .collect();
            if local.is_empty() {
                allowed.to_vec()
            } else {
                local
            }
        })
        .collect();
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by_key(|&i| (candidates[i].len(), i));
    let mut load: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for i in order {
        let cpu = *candidates[i]
            .iter()
            .min_by_key(|c| (load.get(c).map_or(0, Vec::len), **c))
            .expect("candidates are never empty");
        load.entry(cpu).or_default().push(i);
    }
    Ok(Placement {
        workers: load
            .into_iter()
            .map(|(cpu, mut devices)| {
                devices.sort_unstable();
                WorkerPlan { cpu, devices }
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_shared_queue_devices_over_allowed_cpus() {
        let maps = vec![Some(vec![0, 1]); 20];
        let p = plan_with_maps(&maps, &[0, 1]).unwrap();
        assert_eq!(p.workers.len(), 2);
        assert_eq!(p.workers[0].devices.len(), 10);
        assert_eq!(p.workers[1].devices.len(), 10);
    }

    #[test]
    fn per_device_layout_keeps_the_cpus() {
        let maps = vec![Some(vec![0, 1]); 4];
        let p = plan_with_maps(&maps, &[0, 1]).unwrap().split_per_device();
        assert_eq!(p.workers.len(), 4);
        assert_eq!(p.workers.iter().filter(|w| w.cpu == 0).count(), 2);
        assert!(p.workers.iter().all(|w| w.devices.len() == 1));
    }

    #[test]
    fn keeps_devices_on_their_queue_cpus() {
        // Device 0 may only go to CPU 2, device 1 only to CPU 3; device 2 has no map.
        let maps = vec![Some(vec![2]), Some(vec![3]), None];
        let p = plan_with_maps(&maps, &[0, 1, 2, 3]).unwrap();
        assert_eq!(p.cpu_of(0), Some(2));
        assert_eq!(p.cpu_of(1), Some(3));
        assert_eq!(p.cpu_of(2), Some(0));
    }

    #[test]
    fn falls_back_to_allowed_cpus_when_the_map_is_disjoint() {
        let maps = vec![Some(vec![5]), Some(vec![5])];
        let p = plan_with_maps(&maps, &[1]).unwrap();
        assert_eq!(
            p.workers,
            vec![WorkerPlan {
                cpu: 1,
                devices: vec![0, 1]
            }]
        );
        assert!(plan_with_maps(&maps, &[]).is_err());
    }
}
