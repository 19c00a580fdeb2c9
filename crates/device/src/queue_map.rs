//! A disk's blk-mq queue map ([`QueueMap`]): per hardware queue, the CPUs whose submissions go
//! to it (`block/DEV/mq/N/cpu_list`). Submitting from one of those CPUs keeps the completion
//! local; where to submit from is the engine's decision, what the kernel maps is read here.

use crate::cpu_list::parse_cpu_list;
use crate::sysfs::Sysfs;

/// The hardware queues of a whole disk and the CPUs each serves, by queue index. A queue that
/// serves no CPU (an NVMe poll queue can) is left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueMap {
    /// `(queue index, its CPUs sorted)`, in queue order.
    pub queues: Vec<(usize, Vec<usize>)>,
}

impl QueueMap {
    /// Reads the map of whole disk `disk` (a name `block/` lists: see [`Sysfs::whole_disk`]);
    /// `None` when the disk has no blk-mq map or a queue's CPU list cannot be read.
    pub fn read(sysfs: &Sysfs, disk: &str) -> Option<QueueMap> {
        let mut queues = Vec::new();
        for entry in std::fs::read_dir(sysfs.block(disk).join("mq")).ok()? {
            let entry = entry.ok()?;
            let Some(index) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<usize>().ok())
            else {
                continue;
            };
            let text = sysfs.read(entry.path().join("cpu_list")).ok()?;
            if text.trim().is_empty() {
                continue;
            }
            queues.push((index, parse_cpu_list(&text).ok()?));
        }
        queues.sort();
        Some(QueueMap { queues })
    }

    /// The CPUs of queue `index`.
    pub fn queue(&self, index: usize) -> Option<&[usize]> {
        self.queues
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, cpus)| cpus.as_slice())
    }

    /// Every CPU some queue serves, sorted, each once.
    pub fn cpus(&self) -> Vec<usize> {
        let mut cpus: Vec<usize> = self.queues.iter().flat_map(|(_, c)| c).copied().collect();
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    }
}

/// A disk's NUMA node and its CPUs: the first `numa_node` of 0 or more found from the disk's
/// `block/DEV/device` upwards (an NVMe namespace's controller, a virtio disk's PCI function),
/// and that node's `devices/system/node/nodeN/cpulist`. `None` when no node is known (a
/// single-node host often says -1; bio-based disks have no `device`).
pub fn numa_node_cpus(sysfs: &Sysfs, disk: &str) -> Option<(u32, Vec<usize>)> {
    let devices = std::fs::canonicalize(sysfs.path("devices")).ok()?;
    let mut dir = std::fs::canonicalize(sysfs.block(disk).join("device")).ok()?;
    let node = loop {
        let value = sysfs.read(dir.join("numa_node")).ok();
        if let Some(node) = value.and_then(|v| v.trim().parse::<i64>().ok()) {
            if let Ok(node) = u32::try_from(node) {
                break node;
            }
        }
        if !dir.pop() || !dir.starts_with(&devices) || dir == devices {
            return None;
        }
    };
    let cpus = sysfs.value(format!("devices/system/node/node{node}/cpulist"))?;
    Some((node, parse_cpu_list(&cpus).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_are_read_in_order_and_cpuless_queues_left_out() {
        let root = std::env::temp_dir().join(format!("hostmax-mq-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (queue, cpus) in [("1", "2, 3\n"), ("0", "0, 1\n"), ("2", "\n")] {
            let dir = root.join("block/nvme0n1/mq").join(queue);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("cpu_list"), cpus).unwrap();
        }
        let sysfs = Sysfs::at(&root);
        let map = QueueMap::read(&sysfs, "nvme0n1").unwrap();
        assert_eq!(map.queues, vec![(0, vec![0, 1]), (1, vec![2, 3])]);
        assert_eq!(map.queue(1), Some(&[2, 3][..]));
        assert_eq!(map.queue(2), None);
        assert_eq!(map.cpus(), vec![0, 1, 2, 3]);
        assert_eq!(QueueMap::read(&sysfs, "sdz"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn numa_node_is_found_on_the_pci_parent() {
        let root = std::env::temp_dir().join(format!("hostmax-numa-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let pci = root.join("devices/pci0000:00/0000:00:04.0");
        let ctrl = pci.join("nvme/nvme0");
        std::fs::create_dir_all(&ctrl).unwrap();
        std::fs::write(ctrl.join("numa_node"), "-1\n").unwrap();
        std::fs::write(pci.join("numa_node"), "1\n").unwrap();
        let node = root.join("devices/system/node/node1");
        std::fs::create_dir_all(&node).unwrap();
        std::fs::write(node.join("cpulist"), "4-7\n").unwrap();
        std::fs::create_dir_all(root.join("block/nvme0n1")).unwrap();
        std::fs::create_dir_all(root.join("block/zram0")).unwrap();
        std::os::unix::fs::symlink(&ctrl, root.join("block/nvme0n1/device")).unwrap();
        let sysfs = Sysfs::at(&root);
        assert_eq!(
            numa_node_cpus(&sysfs, "nvme0n1"),
            Some((1, vec![4, 5, 6, 7]))
        );
        assert_eq!(numa_node_cpus(&sysfs, "zram0"), None, "no device: no node");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
