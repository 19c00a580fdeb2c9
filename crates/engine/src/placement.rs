//! Placing targets on CPUs from their blk-mq maps.
//!
//! Each block device lists, per hardware queue, the CPUs whose submissions go to that queue
//! (its [`QueueMap`], read by the device crate). Submitting from one of those CPUs keeps the
//! completion local, and submitting from several of them spreads a device over several
//! hardware queues. A target's candidate CPUs are its queue CPUs within the allowed set;
//! where its queues serve every allowed CPU or it has no map (bio-based zram, dm, md; files),
//! the allowed CPUs of its NUMA node when sysfs names one ([`Placement::numa_nodes`]), else
//! every allowed CPU.
//!
//! [`plan`] gives each target one or more [`DeviceShare`]s, each driven from its own CPU:
//!
//! - **Without `numjobs`** ([`Workload::numjobs`] `None`): every target first gets one CPU,
//!   the least loaded of its candidates, most constrained targets first (so when targets
//!   outnumber CPUs this is one ring per CPU over many targets, the arrangement measured
//!   fastest on 20 loop volumes: against one thread per device it won 3 of 4 alternating
//!   pairs, median 385K against 363K IOPS with 6-14% less CPU per I/O, benches/README.md's
//!   measurements). Then targets take turns taking one more candidate CPU that no target uses
//!   yet, until none is free, never more shares than the target's queue depth (nor its rate
//!   or blocks). A target's `iodepth` (and rate and I/O limit) is split among its shares,
//!   differing by at most one.
//! - **With `numjobs` N**: every target gets N shares on distinct candidate CPUs where it has
//!   that many (fio's `cpus_allowed_policy=split`), each keeping the whole `iodepth` in
//!   flight; beyond its candidates, other allowed CPUs, then CPUs again
//!   ([`Placement::oversubscribed`]).
//!
//! A target's working set is cut into as many contiguous parts as it has shares (fio's
//! `offset_increment`): each share's random offsets stay in its part and its sequential
//! stream walks its part from the start, so each block has one writer at a time.
//!
//! Shares on one CPU share one worker thread and ring ([`ThreadLayout::PerCpu`]), or get a
//! thread each ([`ThreadLayout::PerDevice`]). More threads than CPUs only add context switches.

use hostmax_device::{numa_node_cpus, QueueMap, Sysfs, TargetInfo};
use serde::{Deserialize, Serialize};

use crate::{EngineError, Setting, SettingError, Workload};

/// One worker's part of a target: part `part` of `parts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeviceShare {
    /// Index into the run's target list.
    pub device: usize,
    /// Which part of the target this is, `0..parts`.
    pub part: u32,
    /// How many shares the target has.
    pub parts: u32,
}

impl DeviceShare {
    /// Part `part` of `parts` of target `device`.
    pub fn new(device: usize, part: u32, parts: u32) -> DeviceShare {
        DeviceShare {
            device,
            part,
            parts,
        }
    }

    /// This share's part of `total` when `total` is split as evenly as whole numbers allow:
    /// the first `total % parts` shares get one more.
    pub fn split(&self, total: u64) -> u64 {
        let parts = u64::from(self.parts.max(1));
        total / parts + u64::from(u64::from(self.part) < total % parts)
    }

    /// The blocks `first..end` of a working set of `blocks` that this share covers: the
    /// contiguous part number `part` (fio's `offset_increment`).
    pub fn blocks(&self, blocks: u64) -> std::ops::Range<u64> {
        let parts = u128::from(self.parts.max(1));
        let at = |p: u32| (u128::from(blocks) * u128::from(p) / parts) as u64;
        at(self.part)..at(self.part + 1)
    }
}

/// One worker: its CPU and the shares of targets it drives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkerPlan {
    /// CPU the worker thread is pinned to.
    pub cpu: usize,
    /// Indices into the run's target list, each once.
    pub devices: Vec<usize>,
    /// The shares it drives (one per device unless a device has more shares than CPUs).
    pub shares: Vec<DeviceShare>,
}

impl WorkerPlan {
    #[cfg(test)]
    pub(crate) fn for_tests(cpu: usize, shares: Vec<DeviceShare>) -> WorkerPlan {
        WorkerPlan::new(cpu, shares)
    }

    fn new(cpu: usize, mut shares: Vec<DeviceShare>) -> WorkerPlan {
        shares.sort_by_key(|s| (s.device, s.part));
        let mut devices: Vec<usize> = shares.iter().map(|s| s.device).collect();
        devices.dedup();
        WorkerPlan {
            cpu,
            devices,
            shares,
        }
    }
}

/// Where every target of a run is driven from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Placement {
    /// One entry per worker thread, in CPU order.
    pub workers: Vec<WorkerPlan>,
    /// Per target, the NUMA node whose CPUs it was given because its queues serve every
    /// allowed CPU or it has no queue map; `None` where its queue map chose, or no node is
    /// known.
    pub numa_nodes: Vec<Option<u32>>,
    /// Whether some target has more shares than it had CPUs to put them on (`numjobs` above
    /// the allowed CPUs): some CPU drives two of its shares.
    pub oversubscribed: bool,
}

impl Placement {
    /// The first CPU that drives target `device`.
    pub fn cpu_of(&self, device: usize) -> Option<usize> {
        self.cpus_of(device).first().copied()
    }

    /// Every CPU that drives target `device`, in share order (a CPU twice when it drives two
    /// of its shares).
    pub fn cpus_of(&self, device: usize) -> Vec<usize> {
        let mut shares: Vec<(u32, usize)> = self
            .workers
            .iter()
            .flat_map(|w| {
                w.shares
                    .iter()
                    .filter(move |s| s.device == device)
                    .map(move |s| (s.part, w.cpu))
            })
            .collect();
        shares.sort_unstable();
        shares.into_iter().map(|(_, cpu)| cpu).collect()
    }

    /// How many shares target `device` has.
    pub fn parts_of(&self, device: usize) -> u32 {
        self.workers
            .iter()
            .flat_map(|w| &w.shares)
            .find(|s| s.device == device)
            .map_or(0, |s| s.parts)
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
    /// One thread per used CPU, one ring over all its shares (the default: fastest measured).
    #[default]
    PerCpu,
    /// One thread and ring per device share (fio's one-job-per-device layout), pinned the
    /// same way.
    PerDevice,
}

/// What a target knows of where it may run: its queue CPUs and its NUMA node's CPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TargetCpus {
    /// CPUs its hardware queues serve; `None` without a blk-mq map.
    pub queues: Option<Vec<usize>>,
    /// Its NUMA node and that node's CPUs, when sysfs names one.
    pub numa: Option<(u32, Vec<usize>)>,
}

/// How many shares a target may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShareCount {
    /// As many as free CPUs allow, up to this many.
    UpTo(u32),
    /// Exactly this many (`numjobs`).
    Exactly(u32),
}

impl ShareCount {
    /// What `workload` allows a target of `size` bytes.
    pub(crate) fn of(workload: &Workload, size: u64) -> ShareCount {
        // Every share needs a block of its own, an I/O a second and one of the I/O limit.
        let blocks = workload.working_set.unwrap_or(size) / u64::from(workload.block_size);
        let mut most = blocks.max(1);
        if let Some(rate) = workload.rate_iops {
            most = most.min(rate);
        }
        if let Some(limit) = workload.io_limit {
            most = most.min(limit / u64::from(workload.block_size)).max(1);
        }
        let most = |also: u64| u32::try_from(most.min(also).max(1)).unwrap_or(u32::MAX);
        match workload.numjobs {
            Some(n) => ShareCount::Exactly(most(u64::from(n))),
            // Without numjobs the depth is split: at least one I/O in flight per share.
            None => ShareCount::UpTo(most(u64::from(workload.iodepth))),
        }
    }
}

/// Places targets on the `allowed` CPUs (see the module overview).
pub fn plan(
    targets: &[TargetInfo],
    workload: &Workload,
    allowed: &[usize],
    layout: ThreadLayout,
) -> Result<Placement, EngineError> {
    let sysfs = Sysfs::default();
    let cpus: Vec<TargetCpus> = targets
        .iter()
        .map(|t| {
            let Some(disk) = t.whole_disk(&sysfs) else {
                return TargetCpus::default();
            };
            TargetCpus {
                queues: QueueMap::read(&sysfs, &disk)
                    .map(|m| m.cpus())
                    .filter(|c| !c.is_empty()),
                numa: numa_node_cpus(&sysfs, &disk),
            }
        })
        .collect();
    let counts: Vec<ShareCount> = targets
        .iter()
        .map(|t| ShareCount::of(workload, t.size))
        .collect();
    let placement = plan_shares(&cpus, &counts, allowed)?;
    Ok(match layout {
        ThreadLayout::PerCpu => placement,
        ThreadLayout::PerDevice => placement.split_per_device(),
    })
}

impl Placement {
    /// The same CPUs, but one worker per device share.
    pub fn split_per_device(self) -> Placement {
        let mut workers: Vec<WorkerPlan> = self
            .workers
            .into_iter()
            .flat_map(|w| {
                w.shares
                    .into_iter()
                    .map(move |s| WorkerPlan::new(w.cpu, vec![s]))
            })
            .collect();
        workers.sort_by_key(|w| (w.shares[0].device, w.shares[0].part));
        Placement { workers, ..self }
    }
}

/// [`plan`] with each target's CPUs and share count given.
pub(crate) fn plan_shares(
    targets: &[TargetCpus],
    counts: &[ShareCount],
    allowed: &[usize],
) -> Result<Placement, EngineError> {
    if allowed.is_empty() {
        return Err(EngineError::InvalidCpus(SettingError::new(
            "no CPU to run on: give a list of online CPUs this process may use",
            &[Setting::Cpus],
        )));
    }
    let mut numa_nodes = vec![None; targets.len()];
    let candidates: Vec<Vec<usize>> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let local: Vec<usize> = t
                .queues
                .iter()
                .flatten()
                .copied()
                .filter(|c| allowed.contains(c))
                .collect();
            if !local.is_empty() && local.len() < allowed.len() {
                return local;
            }
            // Queues on every allowed CPU, or no map: the device's NUMA node decides.
            if let Some((node, cpus)) = &t.numa {
                let near: Vec<usize> = allowed
                    .iter()
                    .copied()
                    .filter(|c| cpus.contains(c))
                    .collect();
                if !near.is_empty() {
                    numa_nodes[i] = Some(*node);
                    return near;
                }
            }
            allowed.to_vec()
        })
        .collect();
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by_key(|&i| (candidates[i].len(), i));
    let mut load: std::collections::BTreeMap<usize, usize> = Default::default();
    let mut chosen: Vec<Vec<usize>> = vec![Vec::new(); targets.len()];
    let load_of = |load: &std::collections::BTreeMap<usize, usize>, c: usize| {
        load.get(&c).copied().unwrap_or(0)
    };
    // Round one: every target its least-loaded candidate.
    for &i in &order {
        let cpu = *candidates[i]
            .iter()
            .min_by_key(|&&c| (load_of(&load, c), c))
            .expect("candidates are never empty");
        *load.entry(cpu).or_default() += 1;
        chosen[i].push(cpu);
    }
    let mut oversubscribed = false;
    loop {
        let mut progress = false;
        for &i in &order {
            let have = chosen[i].len() as u32;
            let pick = match counts[i] {
                ShareCount::UpTo(most) if have < most => candidates[i]
                    .iter()
                    .copied()
                    .find(|&c| load_of(&load, c) == 0),
                ShareCount::Exactly(n) if have < n => {
                    let fresh = |from: &[usize]| {
                        from.iter()
                            .copied()
                            .filter(|c| !chosen[i].contains(c))
                            .min_by_key(|&c| (load_of(&load, c), c))
                    };
                    fresh(&candidates[i])
                        .or_else(|| fresh(allowed))
                        .or_else(|| {
                            oversubscribed = true;
                            candidates[i]
                                .iter()
                                .copied()
                                .min_by_key(|&c| (chosen[i].iter().filter(|&&x| x == c).count(), c))
                        })
                }
                _ => None,
            };
            if let Some(cpu) = pick {
                *load.entry(cpu).or_default() += 1;
                chosen[i].push(cpu);
                progress = true;
            }
        }
        if !progress {
            break;
        }
    }
    let mut by_cpu: std::collections::BTreeMap<usize, Vec<DeviceShare>> = Default::default();
    for (device, cpus) in chosen.iter().enumerate() {
        let parts = cpus.len() as u32;
        for (part, &cpu) in cpus.iter().enumerate() {
            by_cpu
                .entry(cpu)
                .or_default()
                .push(DeviceShare::new(device, part as u32, parts));
        }
    }
    Ok(Placement {
        workers: by_cpu
            .into_iter()
            .map(|(cpu, shares)| WorkerPlan::new(cpu, shares))
            .collect(),
        numa_nodes,
        oversubscribed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped(cpus: &[usize]) -> TargetCpus {
        TargetCpus {
            queues: Some(cpus.to_vec()),
            numa: None,
        }
    }

    fn up_to(n: usize, most: u32) -> Vec<ShareCount> {
        vec![ShareCount::UpTo(most); n]
    }

    fn shares_per_device(p: &Placement, devices: usize) -> Vec<Vec<usize>> {
        (0..devices).map(|d| p.cpus_of(d)).collect()
    }

    #[test]
    fn devices_outnumbering_cpus_keep_one_ring_per_cpu() {
        let maps = vec![mapped(&[0, 1]); 20];
        let p = plan_shares(&maps, &up_to(20, 32), &[0, 1]).unwrap();
        assert_eq!(p.workers.len(), 2);
        assert_eq!(p.workers[0].devices.len(), 10);
        assert_eq!(p.workers[1].devices.len(), 10);
        assert!(p
            .workers
            .iter()
            .flat_map(|w| &w.shares)
            .all(|s| s.parts == 1));
    }

    #[test]
    fn one_device_gets_every_queue_cpu() {
        // A 4-queue device, one CPU per queue: one share per queue CPU.
        let p = plan_shares(&[mapped(&[0, 1, 2, 3])], &up_to(1, 32), &[0, 1, 2, 3]).unwrap();
        assert_eq!(p.cpus_of(0), vec![0, 1, 2, 3]);
        assert_eq!(p.workers.len(), 4);
        assert!(p.workers.iter().all(|w| w.shares[0].parts == 4));
        // Within --cpus only, and never more shares than its depth allows.
        let p = plan_shares(&[mapped(&[0, 1, 2, 3])], &up_to(1, 32), &[1, 3]).unwrap();
        assert_eq!(p.cpus_of(0), vec![1, 3]);
        let p = plan_shares(&[mapped(&[0, 1, 2, 3])], &up_to(1, 2), &[0, 1, 2, 3]).unwrap();
        assert_eq!(p.cpus_of(0).len(), 2);
    }

    #[test]
    fn devices_without_a_map_share_the_spare_cpus() {
        // zram and dm have no map: two devices on four CPUs get two each.
        let none = TargetCpus::default();
        let p = plan_shares(&[none.clone(), none.clone()], &up_to(2, 32), &[0, 1, 2, 3]).unwrap();
        assert_eq!(shares_per_device(&p, 2), vec![vec![0, 2], vec![1, 3]]);
        // Three devices on four CPUs: 2, 1, 1.
        let p = plan_shares(&vec![none; 3], &up_to(3, 32), &[0, 1, 2, 3]).unwrap();
        let counts: Vec<usize> = shares_per_device(&p, 3).iter().map(Vec::len).collect();
        assert_eq!(counts, vec![2, 1, 1]);
        assert_eq!(p.workers.len(), 4, "one worker per CPU");
    }

    #[test]
    fn a_device_on_every_cpu_prefers_its_numa_node() {
        let t = TargetCpus {
            queues: Some(vec![0, 1, 2, 3]),
            numa: Some((1, vec![2, 3])),
        };
        let p = plan_shares(&[t], &up_to(1, 32), &[0, 1, 2, 3]).unwrap();
        assert_eq!(p.cpus_of(0), vec![2, 3]);
        assert_eq!(p.numa_nodes, vec![Some(1)]);
        // A map that chooses its CPUs keeps them, whatever the node.
        let t = TargetCpus {
            queues: Some(vec![0]),
            numa: Some((1, vec![2, 3])),
        };
        let p = plan_shares(&[t], &up_to(1, 32), &[0, 1, 2, 3]).unwrap();
        assert_eq!((p.cpus_of(0), p.numa_nodes), (vec![0], vec![None]));
    }

    #[test]
    fn numjobs_takes_distinct_queue_cpus_then_doubles_up() {
        let p = plan_shares(
            &[mapped(&[0, 1, 2, 3])],
            &[ShareCount::Exactly(2)],
            &[0, 1, 2, 3],
        )
        .unwrap();
        assert_eq!(p.cpus_of(0), vec![0, 1]);
        assert!(!p.oversubscribed);
        let p = plan_shares(&[mapped(&[0, 1])], &[ShareCount::Exactly(3)], &[0, 1]).unwrap();
        assert_eq!(p.cpus_of(0), vec![0, 1, 0]);
        assert!(p.oversubscribed);
        assert_eq!(p.workers.len(), 2, "per CPU: one ring holds both shares");
        assert_eq!(p.workers[0].shares.len(), 2);
        let per_device = p.split_per_device();
        assert_eq!(per_device.workers.len(), 3);
        // Beyond its queue CPUs, other allowed CPUs before doubling up.
        let p = plan_shares(&[mapped(&[2])], &[ShareCount::Exactly(2)], &[0, 1, 2]).unwrap();
        assert_eq!(p.cpus_of(0), vec![2, 0]);
        assert!(!p.oversubscribed);
    }

    #[test]
    fn per_device_layout_keeps_the_cpus() {
        let maps = vec![mapped(&[0, 1]); 4];
        let p = plan_shares(&maps, &up_to(4, 32), &[0, 1])
            .unwrap()
            .split_per_device();
        assert_eq!(p.workers.len(), 4);
        assert_eq!(p.workers.iter().filter(|w| w.cpu == 0).count(), 2);
        assert!(p.workers.iter().all(|w| w.devices.len() == 1));
    }

    #[test]
    fn keeps_devices_on_their_queue_cpus() {
        // Device 0 may only go to CPU 2, device 1 only to CPU 3; device 2 has no map and
        // takes the two free CPUs.
        let maps = vec![mapped(&[2]), mapped(&[3]), TargetCpus::default()];
        let p = plan_shares(&maps, &up_to(3, 32), &[0, 1, 2, 3]).unwrap();
        assert_eq!(p.cpus_of(0), vec![2]);
        assert_eq!(p.cpus_of(1), vec![3]);
        assert_eq!(p.cpus_of(2), vec![0, 1]);
    }

    #[test]
    fn falls_back_to_allowed_cpus_when_the_map_is_disjoint() {
        let maps = vec![mapped(&[5]), mapped(&[5])];
        let p = plan_shares(&maps, &up_to(2, 32), &[1]).unwrap();
        assert_eq!(p.workers.len(), 1);
        assert_eq!((p.workers[0].cpu, &p.workers[0].devices), (1, &vec![0, 1]));
        assert!(plan_shares(&maps, &up_to(2, 32), &[]).is_err());
    }

    #[test]
    fn share_counts_follow_depth_without_numjobs_and_numjobs_with_it() {
        let w = |iodepth, numjobs| Workload {
            iodepth,
            numjobs,
            ..Workload::default()
        };
        assert_eq!(ShareCount::of(&w(2, None), 1 << 30), ShareCount::UpTo(2));
        assert_eq!(
            ShareCount::of(&w(2, Some(3)), 1 << 30),
            ShareCount::Exactly(3)
        );
        // Two blocks: at most two shares, each with a block of its own.
        assert_eq!(
            ShareCount::of(&w(32, Some(3)), 8192),
            ShareCount::Exactly(2)
        );
        let capped = Workload {
            rate_iops: Some(1),
            ..w(32, None)
        };
        assert_eq!(ShareCount::of(&capped, 1 << 30), ShareCount::UpTo(1));
    }

    #[test]
    fn shares_split_counts_and_blocks_exactly() {
        let shares: Vec<DeviceShare> = (0..3).map(|p| DeviceShare::new(0, p, 3)).collect();
        assert_eq!(
            shares.iter().map(|s| s.split(32)).collect::<Vec<_>>(),
            [11, 11, 10]
        );
        let ranges: Vec<_> = shares.iter().map(|s| s.blocks(10)).collect();
        assert_eq!(ranges, [0..3, 3..6, 6..10]);
        assert_eq!(DeviceShare::new(0, 0, 1).blocks(10), 0..10);
    }
}
