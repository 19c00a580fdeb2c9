//! null_blk devices made through configfs: memory-backed blk-mq disks with one hardware queue
//! per online CPU, as NVMe has.
//!
//! A [`NullBlkDevice`] is a directory `<configfs>/nullb/hostmax<pid>_<n>` with its attributes
//! written and `power` set to 1. Unlike a loop device the kernel does not remove it when its
//! process dies: drop powers it off and removes the directory, and
//! [`SimulatedHost::sweep_stale`](crate::SimulatedHost::sweep_stale) removes those of dead
//! processes. [`null_blk_available`] says whether this kernel can make them, and why not.
//! [`NullBlkRoots`] lets a test point everything at a fake tree.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::programs::load_module;
use crate::scratch::pid_alive;
use crate::{DeviceNode, SimHostError};

/// Where null_blk's configfs directory is when configfs is mounted and null_blk is loaded.
pub const NULLB_CONFIGFS_ROOT: &str = "/sys/kernel/config/nullb";

/// Prefix of our configfs directory (and so disk) names: `hostmax<pid>_<n>`. Kept short: a disk
/// name has at most 31 characters.
const NAME_PREFIX: &str = "hostmax";

/// How long devtmpfs may take to make `/dev/<disk>` after power-on.
const NODE_PATIENCE: Duration = Duration::from_secs(2);

pub(crate) const MIB: u64 = 1024 * 1024;

static NEXT_DEVICE: AtomicU32 = AtomicU32::new(0);

/// Where null_blk's kernel interfaces are: the real ones by default, a fake tree in unit tests.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NullBlkRoots {
    /// null_blk's configfs directory (`/sys/kernel/config/nullb`).
    pub configfs: PathBuf,
    /// Where disks are listed (`/sys/block`).
    pub sys_block: PathBuf,
    /// Where their device nodes are (`/dev`).
    pub dev: PathBuf,
}

impl Default for NullBlkRoots {
    fn default() -> Self {
        NullBlkRoots {
            configfs: PathBuf::from(NULLB_CONFIGFS_ROOT),
            sys_block: PathBuf::from("/sys/block"),
            dev: PathBuf::from("/dev"),
        }
    }
}

/// How to configure a null_blk device.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NullBlkOptions {
    /// Size in MiB (null_blk's `size` attribute is in MiB).
    pub size_mib: u64,
    /// Logical (and physical) block size: 512 or 4096.
    pub block_size: u32,
    /// Hardware submission queues (the kernel caps this at the number of possible CPUs).
    pub submit_queues: u32,
    /// Poll queues (an IOPOLL ring needs at least one); `None` keeps the module's default
    /// (its `poll_queues` parameter).
    pub poll_queues: Option<u32>,
}

impl NullBlkOptions {
    /// A device of `size_bytes` (a positive whole number of MiB), 512-byte blocks like the loop
    /// volumes (so any I/O that works on one works on the other), one queue per online CPU.
    pub fn new(size_bytes: u64) -> Result<NullBlkOptions, SimHostError> {
        if size_bytes == 0 || !size_bytes.is_multiple_of(MIB) {
            return Err(SimHostError::BadSpec(format!(
                "volume size {size_bytes} bytes is not a positive whole number of MiB, \
                 which null_blk sizes devices in; round it"
            )));
        }
        Ok(NullBlkOptions {
            size_mib: size_bytes / MIB,
            block_size: 512,
            submit_queues: online_cpus(),
            poll_queues: None,
        })
    }

    /// The attributes written before power-on, in order: (name, value, required). Optional
    /// ones are written only where this kernel has them.
    fn attributes(&self) -> Vec<(&'static str, String, bool)> {
        let mut attributes = vec![
            ("size", self.size_mib.to_string(), true),
            ("blocksize", self.block_size.to_string(), true),
            // Data written reads back (tests mount filesystems and compare blocks).
            ("memory_backed", "1".into(), true),
            // blk-mq, the block layer NVMe uses.
            ("queue_mode", "2".into(), true),
            ("submit_queues", self.submit_queues.to_string(), true),
            ("discard", "1".into(), false),
        ];
        if let Some(poll_queues) = self.poll_queues {
            attributes.push(("poll_queues", poll_queues.to_string(), true));
        }
        attributes
    }
}

with_setters!(NullBlkOptions {
    with_block_size => block_size: u32,
    with_submit_queues => submit_queues: u32,
    with_poll_queues => poll_queues: Option<u32>,
});

with_setters!(NullBlkRoots {
    with_configfs => configfs: PathBuf,
    with_sys_block => sys_block: PathBuf,
    with_dev => dev: PathBuf,
});

/// A powered-on null_blk device, powered off and removed on drop.
#[derive(Debug)]
pub struct NullBlkDevice {
    config_dir: PathBuf,
    node: DeviceNode,
}

impl std::ops::Deref for NullBlkDevice {
    type Target = DeviceNode;

    fn deref(&self) -> &DeviceNode {
        &self.node
    }
}

impl NullBlkDevice {
    /// Makes a device in the real configfs (needs root and [`null_blk_available`]).
    pub fn create(options: &NullBlkOptions) -> Result<NullBlkDevice, SimHostError> {
        Self::create_in(&NullBlkRoots::default(), options)
    }

    /// Makes a device under `roots`: mkdir, attributes, power on, then find the disk and wait
    /// for its device node. On any error what was made is removed again.
    pub fn create_in(
        roots: &NullBlkRoots,
        options: &NullBlkOptions,
    ) -> Result<NullBlkDevice, SimHostError> {
        let n = NEXT_DEVICE.fetch_add(1, Ordering::Relaxed);
        let name = format!("{NAME_PREFIX}{}_{n}", std::process::id());
        let config_dir = roots.configfs.join(&name);
        fs::create_dir(&config_dir).map_err(SimHostError::io("create", &config_dir))?;
        // From here on, dropping `device` (also on an early return) undoes what was made.
        let mut device = NullBlkDevice {
            config_dir,
            node: DeviceNode::default(),
        };
        device.power_on(roots, options, NODE_PATIENCE)?;
        Ok(device)
    }

    /// Configures the (freshly made) directory, powers it on, and finds the disk and its node.
    fn power_on(
        &mut self,
        roots: &NullBlkRoots,
        options: &NullBlkOptions,
        patience: Duration,
    ) -> Result<(), SimHostError> {
        write_attributes(&self.config_dir, options)?;
        write_attribute(&self.config_dir, "power", "1")?;
        let kernel_name = disk_name(&roots.sys_block, &self.config_dir)?;
        self.node = DeviceNode {
            major_minor: read_major_minor(&roots.sys_block.join(&kernel_name))?,
            path: roots.dev.join(&kernel_name),
            kernel_name,
        };
        wait_for_node(&self.node.path, patience)
    }

    /// The device's configfs directory.
    pub fn config_dir(&self) -> &Path {
        &self.config_dir
    }
}

impl Drop for NullBlkDevice {
    fn drop(&mut self) {
        remove_config_dir(&self.config_dir);
    }
}

/// Powers the device off (the disk goes away) and removes its configfs directory. Errors are
/// ignored: this runs in drop, and removing the directory alone also deletes a powered disk.
fn remove_config_dir(dir: &Path) {
    let _ = write_attribute(dir, "power", "0");
    let _ = fs::remove_dir(dir);
}

/// Writes one configfs attribute. Never creates a file: a missing attribute means this kernel's
/// null_blk lacks it, and that should be an error naming it.
fn write_attribute(dir: &Path, attribute: &str, value: &str) -> Result<(), SimHostError> {
    let path = dir.join(attribute);
    // configfs takes one write per value.
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .and_then(|mut file| file.write_all(format!("{value}\n").as_bytes()))
        .map_err(SimHostError::io("write attribute", &path))
}

/// Writes every attribute of `options` into `dir` (before power-on).
fn write_attributes(dir: &Path, options: &NullBlkOptions) -> Result<(), SimHostError> {
    for (attribute, value, required) in options.attributes() {
        if required || dir.join(attribute).exists() {
            write_attribute(dir, attribute, &value)?;
        }
    }
    Ok(())
}

/// The name of the disk a powered-on device directory made: since Linux 6.0 the directory's
/// own name, before that `nullb<index>`.
fn disk_name(sys_block: &Path, config_dir: &Path) -> Result<String, SimHostError> {
    let dir_name = config_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if sys_block.join(&dir_name).exists() {
        return Ok(dir_name);
    }
    let index_path = config_dir.join("index");
    let index = fs::read_to_string(&index_path).map_err(SimHostError::io("read", &index_path))?;
    let legacy = format!("nullb{}", index.trim());
    if sys_block.join(&legacy).exists() {
        return Ok(legacy);
    }
    Err(SimHostError::NullBlkNoDisk {
        config_dir: config_dir.to_path_buf(),
        tried: format!(
            "{} and {}",
            sys_block.join(&dir_name).display(),
            sys_block.join(&legacy).display()
        ),
    })
}

/// MAJ:MIN from `<sys_block>/<disk>/dev`.
pub(crate) fn read_major_minor(sys_disk: &Path) -> Result<(u32, u32), SimHostError> {
    let path = sys_disk.join("dev");
    let text = fs::read_to_string(&path).map_err(SimHostError::io("read", &path))?;
    text.trim()
        .split_once(':')
        .and_then(|(major, minor)| Some((major.parse().ok()?, minor.parse().ok()?)))
        .ok_or_else(|| SimHostError::Io {
            what: "parse MAJ:MIN from",
            path,
            source: io::Error::new(io::ErrorKind::InvalidData, format!("{:?}", text.trim())),
        })
}

/// Waits until `path` is a block device: devtmpfs makes the node right after the disk is added
/// (there is no udev here), but not necessarily before power-on returns.
pub(crate) fn wait_for_node(path: &Path, patience: Duration) -> Result<(), SimHostError> {
    let deadline = Instant::now() + patience;
    loop {
        if fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device()) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(SimHostError::NoDeviceNode {
                path: path.to_path_buf(),
                waited_ms: patience.as_millis() as u64,
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The pid in one of our directory names, `hostmax<pid>_<n>`.
fn owner_pid(name: &str) -> Option<u32> {
    let (pid, n) = name.strip_prefix(NAME_PREFIX)?.split_once('_')?;
    n.parse::<u32>().ok()?;
    pid.parse().ok()
}

/// Removes the devices under `configfs` of processes that are gone; returns how many.
pub(crate) fn sweep_stale_in(configfs: &Path) -> usize {
    let Ok(entries) = fs::read_dir(configfs) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let Some(pid) = owner_pid(&entry.file_name().to_string_lossy()) else {
            continue;
        };
        if !pid_alive(pid) {
            remove_config_dir(&entry.path());
            if !entry.path().exists() {
                removed += 1;
            }
        }
    }
    removed
}

/// The number of online CPUs (at least 1).
fn online_cpus() -> u32 {
    use nix::unistd::{sysconf, SysconfVar};
    let n = sysconf(SysconfVar::_NPROCESSORS_ONLN)
        .ok()
        .flatten()
        .unwrap_or(1);
    u32::try_from(n).unwrap_or(1).max(1)
}

/// Whether this machine can make null_blk devices: `Ok` if [`NULLB_CONFIGFS_ROOT`] exists (and
/// we are root), else the reason. The first call tries once to make it exist, by loading the
/// module (`modprobe null_blk nr_devices=0`) and mounting configfs on `/sys/kernel/config`;
/// the answer is kept for the rest of the process.
pub fn null_blk_available() -> Result<(), String> {
    static ANSWER: OnceLock<Result<(), String>> = OnceLock::new();
    ANSWER
        .get_or_init(|| probe(Path::new(NULLB_CONFIGFS_ROOT), true))
        .clone()
}

/// [`null_blk_available`] for `root`; `may_load` lets it run modprobe and mount configfs on
/// `root`'s parent.
fn probe(root: &Path, may_load: bool) -> Result<(), String> {
    let root_user = nix::unistd::geteuid().is_root();
    if root.is_dir() {
        return if root_user {
            Ok(())
        } else {
            Err(format!(
                "{} exists but making null_blk devices needs root",
                root.display()
            ))
        };
    }
    if !root_user {
        return Err(format!(
            "no {}: null_blk is not loaded, and loading it needs root \
             ('modprobe null_blk nr_devices=0' as root)",
            root.display()
        ));
    }
    let mut tried = Vec::new();
    if may_load {
        // Loading null_blk loads configfs too, which makes the mount point; nr_devices=0 keeps
        // the module from making a default nullb0 of its own.
        match load_module("null_blk", &["nr_devices=0"]) {
            Ok(()) => tried.push("modprobe null_blk ran".into()),
            Err(why) => tried.push(why),
        }
        if let Some(config) = root.parent() {
            if !config.is_dir() {
                tried.push(format!(
                    "no {}: the kernel has no configfs",
                    config.display()
                ));
            } else if !root.is_dir() && !is_mount_point(config) {
                match mount_configfs(config) {
                    Ok(()) => tried.push(format!("mounted configfs on {}", config.display())),
                    Err(err) => tried.push(format!(
                        "mounting configfs on {} failed: {err}",
                        config.display()
                    )),
                }
            }
        }
    }
    if root.is_dir() {
        return Ok(());
    }
    let detail = if tried.is_empty() {
        String::new()
    } else {
        format!(" ({})", tried.join("; "))
    };
    Err(format!(
        "no {}: the kernel has no null_blk{detail}; 'modprobe null_blk nr_devices=0' loads it \
         where the kernel has the module",
        root.display()
    ))
}

/// Whether something is mounted on `dir` (it is on another device than its parent).
fn is_mount_point(dir: &Path) -> bool {
    let parent = dir.parent().unwrap_or(Path::new("/"));
    match (fs::metadata(dir), fs::metadata(parent)) {
        (Ok(d), Ok(p)) => d.dev() != p.dev(),
        _ => false,
    }
}

fn mount_configfs(dir: &Path) -> nix::Result<()> {
    nix::mount::mount(
        Some("configfs"),
        dir,
        Some("configfs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ScratchDir;

    /// A fake null_blk configfs, /sys/block and /dev under one scratch directory.
    fn fake_roots(scratch: &ScratchDir) -> NullBlkRoots {
        let roots = NullBlkRoots {
            configfs: scratch.0.join("nullb"),
            sys_block: scratch.0.join("block"),
            dev: scratch.0.join("dev"),
        };
        for dir in [&roots.configfs, &roots.sys_block, &roots.dev] {
            fs::create_dir(dir).unwrap();
        }
        roots
    }

    /// A device directory as configfs shows it after mkdir: every attribute file present.
    fn fake_device_dir(roots: &NullBlkRoots, name: &str, with_discard: bool) -> PathBuf {
        let dir = roots.configfs.join(name);
        fs::create_dir(&dir).unwrap();
        let mut attributes = vec![
            "size",
            "blocksize",
            "memory_backed",
            "queue_mode",
            "submit_queues",
            "power",
            "index",
        ];
        if with_discard {
            attributes.push("discard");
        }
        for attribute in attributes {
            fs::write(dir.join(attribute), "0\n").unwrap();
        }
        dir
    }

    fn read(path: &Path) -> String {
        fs::read_to_string(path).unwrap().trim_end().to_owned()
    }

    #[test]
    fn options_take_whole_mebibytes_only() {
        let options = NullBlkOptions::new(64 * MIB).unwrap();
        assert_eq!(options.size_mib, 64);
        assert_eq!(options.block_size, 512);
        assert!(options.submit_queues >= 1);
        assert_eq!(options.submit_queues, online_cpus());
        for bad in [0, MIB + 4096, 4096] {
            let err = NullBlkOptions::new(bad).expect_err("not whole MiB");
            assert!(err.to_string().contains("whole number of MiB"), "{err}");
        }
    }

    #[test]
    fn attributes_hold_the_configuration_after_writing() {
        let scratch = ScratchDir::new("nullb-attrs");
        let roots = fake_roots(&scratch);
        let options = NullBlkOptions {
            size_mib: 32,
            block_size: 4096,
            submit_queues: 3,
            poll_queues: None,
        };
        let dir = fake_device_dir(&roots, "hostmax1_0", true);
        write_attributes(&dir, &options).unwrap();
        for (attribute, want) in [
            ("size", "32"),
            ("blocksize", "4096"),
            ("memory_backed", "1"),
            ("queue_mode", "2"),
            ("submit_queues", "3"),
            ("discard", "1"),
            // Power-on is a separate step, after every attribute is in place.
            ("power", "0"),
        ] {
            assert_eq!(read(&dir.join(attribute)), want, "{attribute}");
        }
        // A kernel without `discard`: skipped, not created.
        let old = fake_device_dir(&roots, "hostmax1_1", false);
        write_attributes(&old, &options).unwrap();
        assert!(!old.join("discard").exists());
        assert_eq!(read(&old.join("size")), "32");
        // A kernel without a required attribute: an error naming it, and nothing created.
        fs::remove_file(old.join("memory_backed")).unwrap();
        let err = write_attributes(&old, &options).expect_err("memory_backed is missing");
        assert!(err.to_string().contains("memory_backed"), "{err}");
        assert!(!old.join("memory_backed").exists());
    }

    #[test]
    fn the_disk_is_named_after_the_directory_or_its_index() {
        let scratch = ScratchDir::new("nullb-name");
        let roots = fake_roots(&scratch);
        let dir = fake_device_dir(&roots, "hostmax7_2", false);
        fs::write(dir.join("index"), "5\n").unwrap();
        // Neither disk exists yet: the error names both candidates.
        let err = disk_name(&roots.sys_block, &dir).expect_err("no disk");
        let text = err.to_string();
        assert!(
            text.contains("hostmax7_2") && text.contains("nullb5"),
            "{text}"
        );
        // A kernel before 6.0 names it nullb<index>.
        fs::create_dir(roots.sys_block.join("nullb5")).unwrap();
        assert_eq!(disk_name(&roots.sys_block, &dir).unwrap(), "nullb5");
        // Since 6.0 the disk has the directory's name, which wins over a stale nullb<index>.
        fs::create_dir(roots.sys_block.join("hostmax7_2")).unwrap();
        assert_eq!(disk_name(&roots.sys_block, &dir).unwrap(), "hostmax7_2");
    }

    #[test]
    fn major_minor_is_read_from_the_disks_dev_file() {
        let scratch = ScratchDir::new("nullb-dev");
        let roots = fake_roots(&scratch);
        let disk = roots.sys_block.join("hostmax1_0");
        fs::create_dir(&disk).unwrap();
        fs::write(disk.join("dev"), "252:7\n").unwrap();
        assert_eq!(read_major_minor(&disk).unwrap(), (252, 7));
        fs::write(disk.join("dev"), "garbage\n").unwrap();
        let err = read_major_minor(&disk).expect_err("not MAJ:MIN");
        assert!(err.to_string().contains("garbage"), "{err}");
    }

    #[test]
    fn a_missing_device_node_is_an_error_naming_it() {
        let scratch = ScratchDir::new("nullb-node");
        let roots = fake_roots(&scratch);
        let path = roots.dev.join("hostmax1_0");
        let err = wait_for_node(&path, Duration::ZERO).expect_err("no node");
        assert!(err.to_string().contains("hostmax1_0"), "{err}");
        // A regular file is not a block device either.
        fs::write(&path, "").unwrap();
        assert!(wait_for_node(&path, Duration::ZERO).is_err());
        // A real block device node passes (if this machine has one).
        let block_dev = fs::read_dir("/dev").unwrap().flatten().find(|e| {
            e.file_type()
                .is_ok_and(|t| t.is_block_device() && !t.is_symlink())
        });
        if let Some(entry) = block_dev {
            wait_for_node(&entry.path(), Duration::ZERO).unwrap();
        }
    }

    /// A block device node `dev/<name>` for MAJ:MIN, or `None` where mknod is not allowed.
    fn fake_node(roots: &NullBlkRoots, name: &str, (major, minor): (u32, u32)) -> Option<()> {
        let path = roots.dev.join(name);
        let made = nix::sys::stat::mknod(
            &path,
            nix::sys::stat::SFlag::S_IFBLK,
            nix::sys::stat::Mode::from_bits_truncate(0o600),
            libc::makedev(major, minor),
        );
        match made {
            Ok(()) => Some(()),
            Err(err) => {
                eprintln!(
                    "skipped the power-on check: mknod {}: {err}",
                    path.display()
                );
                None
            }
        }
    }

    /// What the kernel does on power-on, done beforehand: the disk `disk` in `block` with `dev`,
    /// and its node.
    fn fake_disk(roots: &NullBlkRoots, disk: &str, major_minor: (u32, u32)) -> Option<()> {
        let sys = roots.sys_block.join(disk);
        fs::create_dir(&sys).unwrap();
        fs::write(
            sys.join("dev"),
            format!("{}:{}\n", major_minor.0, major_minor.1),
        )
        .unwrap();
        fake_node(roots, disk, major_minor)
    }

    #[test]
    fn power_on_configures_then_finds_the_disk_and_its_node() {
        let scratch = ScratchDir::new("nullb-power");
        let roots = fake_roots(&scratch);
        let options = NullBlkOptions {
            size_mib: 16,
            block_size: 512,
            submit_queues: 2,
            poll_queues: None,
        };
        // Since 6.0 the disk has the directory's name; before, nullb<index>.
        for (dir_name, disk, index) in [
            ("hostmax3_0", "hostmax3_0", "0"),
            ("hostmax3_1", "nullb4", "4"),
        ] {
            let dir = fake_device_dir(&roots, dir_name, true);
            fs::write(dir.join("index"), index).unwrap();
            if fake_disk(&roots, disk, (252, 9)).is_none() {
                return;
            }
            let mut device = NullBlkDevice {
                config_dir: dir.clone(),
                node: DeviceNode::default(),
            };
            device
                .power_on(&roots, &options, Duration::ZERO)
                .unwrap_or_else(|e| panic!("{dir_name}: {e}"));
            assert_eq!(device.kernel_name(), disk);
            assert_eq!(device.path(), roots.dev.join(disk));
            assert_eq!(device.major_minor(), (252, 9));
            assert_eq!(read(&dir.join("power")), "1");
            assert_eq!(read(&dir.join("size")), "16");
            assert_eq!(read(&dir.join("memory_backed")), "1");
            drop(device);
            // Powered off; the fake's files keep rmdir from removing it (configfs would).
            assert_eq!(read(&dir.join("power")), "0");
        }
    }

    #[test]
    fn drop_powers_off_and_removes_the_directory() {
        let scratch = ScratchDir::new("nullb-drop");
        let roots = fake_roots(&scratch);
        // configfs lets rmdir remove a directory with attribute files in it; a real directory
        // does not, so the fake's powered device keeps only `power` to observe the write, and
        // a second one has no files so its removal can be seen.
        let powered = roots.configfs.join("hostmax1_0");
        fs::create_dir(&powered).unwrap();
        fs::write(powered.join("power"), "1\n").unwrap();
        drop(NullBlkDevice {
            config_dir: powered.clone(),
            node: DeviceNode {
                path: roots.dev.join("hostmax1_0"),
                kernel_name: "hostmax1_0".into(),
                major_minor: (252, 0),
            },
        });
        assert_eq!(read(&powered.join("power")), "0");
        let bare = roots.configfs.join("hostmax1_1");
        fs::create_dir(&bare).unwrap();
        // No `power` file: the write fails, drop does not panic and still removes the dir.
        drop(NullBlkDevice {
            config_dir: bare.clone(),
            node: DeviceNode {
                path: roots.dev.join("hostmax1_1"),
                kernel_name: "hostmax1_1".into(),
                major_minor: (252, 1),
            },
        });
        assert!(!bare.exists(), "rmdir on drop");
        assert!(!bare.join("power").exists(), "drop created no file");
    }

    #[test]
    fn a_failed_create_removes_its_directory() {
        let scratch = ScratchDir::new("nullb-fail");
        let roots = fake_roots(&scratch);
        // A plain directory has no attribute files, so the first write fails.
        let err = NullBlkDevice::create_in(&roots, &NullBlkOptions::new(MIB).unwrap())
            .expect_err("no attributes");
        let text = err.to_string();
        assert!(text.contains("size"), "{text}");
        let dir_name = format!("{NAME_PREFIX}{}_", std::process::id());
        assert!(text.contains(&dir_name), "{text}");
        assert!(
            fs::read_dir(&roots.configfs).unwrap().next().is_none(),
            "the device directory is removed"
        );
    }

    #[test]
    fn owner_pid_is_parsed_only_from_our_names() {
        assert_eq!(owner_pid("hostmax1234_0"), Some(1234));
        assert_eq!(owner_pid("hostmax1234_x"), None);
        assert_eq!(owner_pid("hostmax-1234-0"), None);
        assert_eq!(owner_pid("nullb0"), None);
    }

    #[test]
    fn sweep_removes_only_dead_owners_directories() {
        let scratch = ScratchDir::new("nullb-sweep");
        let roots = fake_roots(&scratch);
        // pid_max is at most 2^22: this pid cannot be running.
        let dead = roots.configfs.join("hostmax999999999_0");
        let ours = roots
            .configfs
            .join(format!("hostmax{}_0", std::process::id()));
        let foreign = roots.configfs.join("nullb0");
        for dir in [&dead, &ours, &foreign] {
            fs::create_dir(dir).unwrap();
        }
        assert_eq!(sweep_stale_in(&roots.configfs), 1);
        assert!(!dead.exists());
        assert!(ours.exists() && foreign.exists());
        assert_eq!(sweep_stale_in(&scratch.0.join("absent")), 0);
    }

    #[test]
    fn probe_of_an_existing_root_is_ok_for_root_only() {
        let scratch = ScratchDir::new("nullb-probe");
        let roots = fake_roots(&scratch);
        let answer = probe(&roots.configfs, false);
        if nix::unistd::geteuid().is_root() {
            answer.unwrap();
        } else {
            assert!(answer.unwrap_err().contains("needs root"));
        }
        let missing = scratch.0.join("config").join("nullb");
        let reason = probe(&missing, false).expect_err("no such root");
        assert!(reason.contains("null_blk"), "{reason}");
        assert!(reason.contains(&missing.display().to_string()), "{reason}");
    }

    #[test]
    fn availability_matches_the_kernel() {
        let answer = null_blk_available();
        if Path::new(NULLB_CONFIGFS_ROOT).is_dir() {
            if nix::unistd::geteuid().is_root() {
                assert_eq!(answer, Ok(()));
            }
        } else {
            let reason = answer.expect_err("no null_blk configfs directory");
            assert!(reason.contains("null_blk"), "{reason}");
            assert!(reason.contains(NULLB_CONFIGFS_ROOT), "{reason}");
            eprintln!("null_blk here: {reason}");
        }
    }
}
