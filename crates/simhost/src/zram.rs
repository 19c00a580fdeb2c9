//! zram devices: compressed RAM disks, bio-based (no blk-mq queue map), which compress each
//! write on the CPU that submits it, so they scale with submitting CPUs. Made through
//! `/sys/class/zram-control/hot_add`, removed on drop (`reset`, then `hot_remove`).
//!
//! zram devices have no names of their own to carry a pid, so a killed process leaves its
//! device behind (empty once the process's memory is gone: `reset` and `hot_remove` it).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::nullblk::{read_major_minor, wait_for_node};
use crate::{DeviceNode, SimHostError};

const ZRAM_CONTROL: &str = "/sys/class/zram-control";

/// Whether this kernel can make zram devices (`/sys/class/zram-control` exists), and why not.
pub fn zram_available() -> Result<(), String> {
    if Path::new(ZRAM_CONTROL).join("hot_add").exists() {
        Ok(())
    } else {
        Err(format!(
            "{ZRAM_CONTROL}/hot_add is missing: the kernel has no zram (load it with 'modprobe zram')"
        ))
    }
}

/// One zram device of this process, removed on drop.
#[derive(Debug)]
pub struct ZramDevice {
    node: DeviceNode,
    id: u32,
}

impl std::ops::Deref for ZramDevice {
    type Target = DeviceNode;

    fn deref(&self) -> &DeviceNode {
        &self.node
    }
}

impl ZramDevice {
    /// A new zram device of `size_bytes` compressing with `algorithm` (`lz4`; the kernel's
    /// default when it does not offer that one).
    pub fn new(size_bytes: u64, algorithm: &str) -> Result<ZramDevice, SimHostError> {
        zram_available().map_err(SimHostError::Unsupported)?;
        let hot_add = Path::new(ZRAM_CONTROL).join("hot_add");
        // Reading hot_add makes a device and returns its number.
        let text = fs::read_to_string(&hot_add).map_err(SimHostError::io("read", &hot_add))?;
        let id: u32 = text.trim().parse().map_err(|_| SimHostError::Io {
            what: "parse a device number from",
            path: hot_add.clone(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, text.clone()),
        })?;
        let name = format!("zram{id}");
        let sys = PathBuf::from("/sys/block").join(&name);
        // From here on drop removes it, whatever fails next.
        let mut device = ZramDevice {
            node: DeviceNode {
                path: PathBuf::from("/dev").join(&name),
                kernel_name: name,
                major_minor: (0, 0),
            },
            id,
        };
        let algorithms = fs::read_to_string(sys.join("comp_algorithm")).unwrap_or_default();
        if algorithms
            .split_whitespace()
            .any(|a| a.trim_matches(|c| c == '[' || c == ']') == algorithm)
        {
            let path = sys.join("comp_algorithm");
            fs::write(&path, algorithm).map_err(SimHostError::io("write", &path))?;
        }
        let path = sys.join("disksize");
        fs::write(&path, size_bytes.to_string()).map_err(SimHostError::io("write", &path))?;
        device.node.major_minor = read_major_minor(&sys)?;
        wait_for_node(&device.node.path, Duration::from_secs(2))?;
        Ok(device)
    }
}

impl Drop for ZramDevice {
    fn drop(&mut self) {
        let sys = PathBuf::from("/sys/block").join(&self.node.kernel_name);
        let _ = fs::write(sys.join("reset"), "1");
        let _ = fs::write(
            Path::new(ZRAM_CONTROL).join("hot_remove"),
            self.id.to_string(),
        );
    }
}
