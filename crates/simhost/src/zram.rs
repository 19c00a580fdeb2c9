//! zram devices: compressed RAM disks, bio-based (no blk-mq queue map), which compress each
//! write on the CPU that submits it, so they scale with submitting CPUs. Made through
//! `/sys/class/zram-control/hot_add`, removed on drop (`reset`, then `hot_remove`).
//!
//! zram devices have no names of their own to carry a pid, so each of ours has a marker
//! directory beside the scratch directories, `hostmax-zram-<pid>-<id>`, holding its size: a
//! killed process leaves device and marker behind, and [`sweep_stale_zram`] (run by the first
//! [`ZramDevice::new`] of a process and by the simulated host's sweep) removes the devices of
//! dead owners that are still as they made them and used by nobody.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::nullblk::{read_major_minor, wait_for_node};
use crate::scratch::{sweep_dead_owners_with, tmpfs_base, ScratchDir};
use crate::{DeviceNode, SimHostError};

const ZRAM_CONTROL: &str = "/sys/class/zram-control";

/// Prefix of the marker directories: `hostmax-zram-<pid>-<id>`.
pub const ZRAM_MARKER_PREFIX: &str = "hostmax-zram-";

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
    /// Says whose device this is until it is gone (removed after the device, on drop).
    _marker: Option<ScratchDir>,
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
        static SWEEP: std::sync::Once = std::sync::Once::new();
        SWEEP.call_once(|| {
            sweep_stale_zram();
        });
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
            _marker: None,
        };
        // The kernel just gave out this number, so a marker of ours naming it is stale.
        let base = tmpfs_base();
        let _ = fs::remove_dir_all(
            base.join(format!("{ZRAM_MARKER_PREFIX}{}-{id}", std::process::id())),
        );
        let marker = ScratchDir::create_private(&base, ZRAM_MARKER_PREFIX, &id.to_string())?;
        let path = marker.join("disksize");
        fs::write(&path, size_bytes.to_string()).map_err(SimHostError::io("write", &path))?;
        device._marker = Some(marker);
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
        let _ = remove_zram(self.id);
    }
}

/// Resets zram device `id` and hands it back to the kernel; whether it is gone. Both refuse a
/// device that is open (`EBUSY`), as it is for a moment while udev probes a new one (seen in
/// the kernel matrix's VMs), so they are retried for a while.
fn remove_zram(id: u32) -> bool {
    let sys = PathBuf::from("/sys/block").join(format!("zram{id}"));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let _ = fs::write(sys.join("reset"), "1");
        let _ = fs::write(Path::new(ZRAM_CONTROL).join("hot_remove"), id.to_string());
        if !sys.exists() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Removes the zram devices of processes that are gone (their markers say which, see the
/// module overview) and their markers; returns how many devices. A device is removed only if
/// it still has the size its maker gave it and nothing uses it (no holders, not mounted, not
/// swap): a number the kernel gave to someone else since is left alone.
pub fn sweep_stale_zram() -> usize {
    let mut removed = 0;
    sweep_dead_owners_with(&tmpfs_base(), ZRAM_MARKER_PREFIX, |tag, marker| {
        let Ok(id) = tag.parse::<u32>() else {
            return;
        };
        let made = fs::read_to_string(marker.join("disksize")).unwrap_or_default();
        if still_ours_and_unused(id, made.trim()) && remove_zram(id) {
            removed += 1;
        }
    });
    removed
}

/// Whether zram device `id` exists with size `disksize` and nothing uses it.
fn still_ours_and_unused(id: u32, disksize: &str) -> bool {
    let sys = PathBuf::from("/sys/block").join(format!("zram{id}"));
    let size = fs::read_to_string(sys.join("disksize")).unwrap_or_default();
    if disksize.is_empty() || size.trim() != disksize {
        return false;
    }
    let held = fs::read_dir(sys.join("holders")).map_or(true, |mut d| d.next().is_some());
    let node = format!("/dev/zram{id}");
    let named = |table: &str| {
        fs::read_to_string(table)
            .unwrap_or_default()
            .lines()
            .any(|l| l.split_whitespace().next() == Some(node.as_str()))
    };
    !held && !named("/proc/mounts") && !named("/proc/swaps")
}
