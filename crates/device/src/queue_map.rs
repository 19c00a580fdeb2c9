//! A disk's blk-mq queue map ([`QueueMap`]): per hardware queue, the CPUs whose submissions go
//! to it (`block/DEV/mq/N/cpu_list`). Submitting from one of those CPUs keeps the completion
//! local; where to submit from is the engine's decision, what the kernel maps is read here.

use crate::cpu_list::parse_cpu_list;
use crate::sysfs::Sysfs;

/// The hardware queues of a whole disk and the CPUs each serves, by queue index. A queue that
/// serves no CPU (an NVMe poll queue can) is left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
            let text = std::fs::read_to_string(entry.path().join("cpu_list")).ok()?;
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
}
