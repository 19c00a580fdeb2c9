//! [`SimulatedHost`]: a set of volumes, their caps and the host ceiling, built from a [`SimHostSpec`].
//! The volumes are loop devices, null_blk devices or plain files ([`SimHostMode`]).

use std::fmt;
use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::loopdev::{read_direct_4k, LoopDevice, LoopOptions};
use crate::nullblk::{
    self, null_blk_available, NullBlkDevice, NullBlkOptions, MIB, NULLB_CONFIGFS_ROOT,
};
use crate::scratch::{sweep_dead_owners, ScratchDir};
use crate::throttle::IoThrottle;
use crate::SimHostError;

/// What to simulate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SimHostSpec {
    /// How many volumes (1..=1024).
    pub volumes: usize,
    /// Size of each volume in bytes (a multiple of 4096). Backing files are sparse: only what is
    /// written takes memory.
    pub volume_size: u64,
    /// Per-volume IOPS cap (reads and writes each): empty for none, else one entry per volume.
    pub volume_iops: Vec<Option<u64>>,
    /// Per-volume bandwidth cap in bytes/s (reads and writes each): empty, or one per volume.
    pub volume_bps: Vec<Option<u64>>,
    /// IOPS ceiling of all volumes together (reads and writes each).
    pub host_iops: Option<u64>,
    /// Bandwidth ceiling of all volumes together, bytes/s (reads and writes each).
    pub host_bps: Option<u64>,
}

impl SimHostSpec {
    /// `volumes` uncapped volumes of `volume_size` bytes.
    pub fn new(volumes: usize, volume_size: u64) -> Self {
        SimHostSpec {
            volumes,
            volume_size,
            volume_iops: Vec::new(),
            volume_bps: Vec::new(),
            host_iops: None,
            host_bps: None,
        }
    }

    /// Caps every volume at `iops` (call after `volumes` is final).
    pub fn with_volume_iops(mut self, iops: u64) -> Self {
        self.volume_iops = vec![Some(iops); self.volumes];
        self
    }

    /// Caps every volume at `bps` bytes/s (call after `volumes` is final).
    pub fn with_volume_bps(mut self, bps: u64) -> Self {
        self.volume_bps = vec![Some(bps); self.volumes];
        self
    }

    /// Caps each volume at its entry of `caps` (`None`: no cap), one entry per volume.
    pub fn with_volume_iops_caps(mut self, caps: Vec<Option<u64>>) -> Self {
        self.volume_iops = caps;
        self
    }

    /// Caps each volume at its entry of `caps` bytes/s (`None`: no cap), one per volume.
    pub fn with_volume_bps_caps(mut self, caps: Vec<Option<u64>>) -> Self {
        self.volume_bps = caps;
        self
    }

    /// Caps all volumes together at `iops`.
    pub fn with_host_iops(mut self, iops: u64) -> Self {
        self.host_iops = Some(iops);
        self
    }

    /// Caps all volumes together at `bps` bytes/s.
    pub fn with_host_bps(mut self, bps: u64) -> Self {
        self.host_bps = Some(bps);
        self
    }

    /// The IOPS cap of volume `index`, if any.
    pub fn volume_iops_cap(&self, index: usize) -> Option<u64> {
        self.volume_iops.get(index).copied().flatten()
    }

    /// The bandwidth cap of volume `index`, if any.
    pub fn volume_bps_cap(&self, index: usize) -> Option<u64> {
        self.volume_bps.get(index).copied().flatten()
    }

    /// Whether a host ceiling is asked for (volumes are then slices of one parent device).
    pub fn has_host_cap(&self) -> bool {
        self.host_iops.is_some() || self.host_bps.is_some()
    }

    /// Whether any cap is asked for (a cgroup is then needed).
    pub fn is_throttled(&self) -> bool {
        self.has_host_cap()
            || self.volume_iops.iter().any(Option::is_some)
            || self.volume_bps.iter().any(Option::is_some)
    }

    /// Checks the spec; the error names the field and the fix.
    pub fn validate(&self) -> Result<(), SimHostError> {
        let bad = |msg: String| Err(SimHostError::BadSpec(msg));
        if !(1..=1024).contains(&self.volumes) {
            return bad(format!(
                "volumes is {}; give between 1 and 1024",
                self.volumes
            ));
        }
        if self.volume_size == 0 || !self.volume_size.is_multiple_of(4096) {
            return bad(format!(
                "volume size {} bytes is not a positive multiple of 4096; round it",
                self.volume_size
            ));
        }
        if self.volume_size.checked_mul(self.volumes as u64).is_none() {
            return bad("volumes x volume size overflows 64 bits; make them smaller".into());
        }
        for (name, caps) in [
            ("volume_iops", &self.volume_iops),
            ("volume_bps", &self.volume_bps),
        ] {
            if !caps.is_empty() && caps.len() != self.volumes {
                return bad(format!(
                    "{name} has {} entries for {} volumes; give one per volume or none",
                    caps.len(),
                    self.volumes
                ));
            }
            if caps.contains(&Some(0)) {
                return bad(format!("{name} has a cap of 0; leave it out for no cap"));
            }
        }
        if self.host_iops == Some(0) || self.host_bps == Some(0) {
            return bad("host cap of 0; leave it out for no cap".into());
        }
        Ok(())
    }
}

/// How the volumes were made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SimHostMode {
    /// Loop devices over tmpfs with direct I/O, capped as the spec asked.
    LoopDevices,
    /// Memory-backed null_blk devices (blk-mq, one queue per CPU), capped as the spec asked;
    /// no host caps.
    NullBlk,
    /// Loop devices over tmpfs with direct I/O but without the spec's caps: root, but no
    /// cgroup could throttle block I/O (see [`crate::CGROUP_ROOT_ENV`]).
    UncappedLoopDevices {
        /// Why no caps.
        reason: String,
    },
    /// Plain files in a directory that takes O_DIRECT: no caps (they need root).
    PlainFiles {
        /// Why loop devices were not used.
        reason: String,
    },
}

impl fmt::Display for SimHostMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimHostMode::LoopDevices => f.write_str("loop devices on tmpfs"),
            SimHostMode::NullBlk => f.write_str("memory-backed null_blk devices"),
            SimHostMode::UncappedLoopDevices { reason } => {
                write!(f, "loop devices on tmpfs without caps ({reason})")
            }
            SimHostMode::PlainFiles { reason } => {
                write!(f, "plain files without caps ({reason})")
            }
        }
    }
}

/// One simulated volume.
#[derive(Debug)]
pub struct SimVolume {
    path: PathBuf,
    device: Option<LoopDevice>,
    null_blk: Option<NullBlkDevice>,
    iops_cap: Option<u64>,
    bps_cap: Option<u64>,
}

impl SimVolume {
    /// What to open: `/dev/loopN`, the null_blk disk, or the file in plain-file mode.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The loop device (in loop mode only).
    pub fn loop_device(&self) -> Option<&LoopDevice> {
        self.device.as_ref()
    }

    /// The null_blk device (in null_blk mode only).
    pub fn null_blk_device(&self) -> Option<&NullBlkDevice> {
        self.null_blk.as_ref()
    }

    /// The block device's name under `/sys/block` (`None` in plain-file mode).
    pub fn kernel_name(&self) -> Option<&str> {
        match (&self.device, &self.null_blk) {
            (Some(device), _) => Some(device.kernel_name()),
            (None, Some(device)) => Some(device.kernel_name()),
            (None, None) => None,
        }
    }

    /// The block device's number, as written in throttle rules (`None` in plain-file mode).
    pub fn major_minor(&self) -> Option<(u32, u32)> {
        match (&self.device, &self.null_blk) {
            (Some(device), _) => Some(device.major_minor()),
            (None, Some(device)) => Some(device.major_minor()),
            (None, None) => None,
        }
    }

    /// The IOPS cap in force (`None` in plain-file mode, where nothing is capped).
    pub fn iops_cap(&self) -> Option<u64> {
        self.iops_cap
    }

    /// The bandwidth cap in force, bytes/s.
    pub fn bps_cap(&self) -> Option<u64> {
        self.bps_cap
    }
}

/// Volumes, caps and host ceiling as a [`SimHostSpec`] asked; all removed on drop.
///
/// With a host cap, every volume is a loop device whose backing file is the parent loop device
/// (`lo_offset = i * volume_size`, `lo_sizelimit = volume_size`), and the parent is capped in the
/// same cgroup: loop issues the parent's I/O in the issuer's cgroup, so the parent's cap bounds
/// the sum. Only I/O from processes inside [`SimulatedHost::throttle`] is capped.
#[derive(Debug)]
pub struct SimulatedHost {
    spec: SimHostSpec,
    mode: SimHostMode,
    volumes: Vec<SimVolume>,
    host_device: Option<ParentDevice>,
    throttle: Option<IoThrottle>,
    plain_dir: Option<ScratchDir>,
}

/// The device every loop volume is a slice of: with a host cap (the parent is capped too), and
/// wherever tmpfs takes no O_DIRECT (Linux before 6.6), where a null_blk device is the backing.
#[derive(Debug)]
#[non_exhaustive]
pub enum ParentDevice {
    /// A loop device over an unlinked tmpfs file.
    Loop(LoopDevice),
    /// A memory-backed null_blk device.
    NullBlk(NullBlkDevice),
}

impl ParentDevice {
    /// `/dev/loopN` or the null_blk disk.
    pub fn path(&self) -> &Path {
        match self {
            ParentDevice::Loop(d) => d.path(),
            ParentDevice::NullBlk(d) => d.path(),
        }
    }

    /// The name under `/sys/block`.
    pub fn kernel_name(&self) -> &str {
        match self {
            ParentDevice::Loop(d) => d.kernel_name(),
            ParentDevice::NullBlk(d) => d.kernel_name(),
        }
    }

    /// The device number, as written in throttle rules.
    pub fn major_minor(&self) -> (u32, u32) {
        match self {
            ParentDevice::Loop(d) => d.major_minor(),
            ParentDevice::NullBlk(d) => d.major_minor(),
        }
    }

    /// The size in bytes, as the kernel reports it.
    pub fn size_bytes(&self) -> Result<u64, SimHostError> {
        let path = Path::new("/sys/block")
            .join(self.kernel_name())
            .join("size");
        let text = fs::read_to_string(&path).map_err(SimHostError::io("read", &path))?;
        let sectors: u64 = text.trim().parse().map_err(|_| SimHostError::Io {
            what: "parse",
            path: path.clone(),
            source: std::io::Error::from(std::io::ErrorKind::InvalidData),
        })?;
        Ok(sectors * 512)
    }

    /// The loop device, if the parent is one.
    pub fn loop_device(&self) -> Option<&LoopDevice> {
        match self {
            ParentDevice::Loop(d) => Some(d),
            ParentDevice::NullBlk(_) => None,
        }
    }
}

/// Why the loop volumes' memory is a null_blk device rather than tmpfs files, or `None` where
/// tmpfs takes O_DIRECT (Linux 6.6+), which loop's direct I/O needs. Probed once per process
/// with a file in `scratch`.
fn tmpfs_lacks_direct_io(scratch: &ScratchDir) -> Result<bool, SimHostError> {
    static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if let Some(&lacks) = ANSWER.get() {
        return Ok(lacks);
    }
    let (_, path) = scratch.new_file("direct-io-probe", 4096)?;
    let lacks = read_direct_4k(&path, 0).is_err();
    fs::remove_file(&path).map_err(SimHostError::io("remove", &path))?;
    Ok(*ANSWER.get_or_init(|| lacks))
}

impl SimulatedHost {
    /// Builds the host: loop devices when root (uncapped when no cgroup can cap them), else
    /// plain files (see [`SimulatedHost::mode`]).
    pub fn build(spec: &SimHostSpec) -> Result<SimulatedHost, SimHostError> {
        spec.validate()?;
        let euid = nix::unistd::geteuid();
        if !euid.is_root() {
            let reason = format!(
                "not root (euid {euid}): loop devices and cgroup caps need root; \
                 using plain files, uncapped"
            );
            return Self::build_plain_files(spec, &reason);
        }
        match Self::build_loop_devices(spec) {
            // Loop volumes without caps still measure a real block-device host; say why.
            Err(SimHostError::ThrottleUnavailable(reason)) => {
                let mut host =
                    Self::build_loop_devices(&SimHostSpec::new(spec.volumes, spec.volume_size))?;
                host.mode = SimHostMode::UncappedLoopDevices { reason };
                Ok(host)
            }
            built => built,
        }
    }

    /// The cgroup that enforces the spec's caps, if it has any.
    fn throttle_for(spec: &SimHostSpec) -> Result<Option<IoThrottle>, SimHostError> {
        if !spec.is_throttled() {
            return Ok(None);
        }
        IoThrottle::create()
            .map(Some)
            .map_err(|e| SimHostError::ThrottleUnavailable(e.to_string()))
    }

    /// Builds loop volumes (needs root).
    pub fn build_loop_devices(spec: &SimHostSpec) -> Result<SimulatedHost, SimHostError> {
        spec.validate()?;
        Self::sweep_stale();
        let scratch = host_scratch(Path::new("/dev/shm"))?;
        let throttle = Self::throttle_for(spec)?;
        let mut volumes = Vec::with_capacity(spec.volumes);
        let mut host_device = None;
        let total = spec.volume_size * spec.volumes as u64;
        let parent = if tmpfs_lacks_direct_io(&scratch)? {
            // Before Linux 6.6 tmpfs refuses O_DIRECT, and loop's direct I/O with it: the
            // volumes are slices of one memory-backed null_blk device instead (sparse, like
            // tmpfs), capped the same way.
            null_blk_available().map_err(|why| SimHostError::NoDirectIoBacking(why.clone()))?;
            let options = NullBlkOptions::new(total.div_ceil(MIB) * MIB)?;
            Some(ParentDevice::NullBlk(NullBlkDevice::create(&options)?))
        } else if spec.has_host_cap() {
            let (file, path) = scratch.new_file("host.img", total)?;
            let parent = LoopDevice::attach(&file, &LoopOptions::default())?;
            // The loop device holds the inode; unlinking now means its memory goes with it.
            fs::remove_file(&path).map_err(SimHostError::io("unlink", &path))?;
            Some(ParentDevice::Loop(parent))
        } else {
            None
        };
        if let Some(parent) = parent {
            let parent_file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(parent.path())
                .map_err(SimHostError::io("open", parent.path()))?;
            for index in 0..spec.volumes {
                let options = LoopOptions {
                    offset: index as u64 * spec.volume_size,
                    size_limit: spec.volume_size,
                    ..LoopOptions::default()
                };
                let device = LoopDevice::attach(&parent_file, &options)?;
                volumes.push(Self::loop_volume(spec, index, device));
            }
            host_device = Some(parent);
        } else {
            for index in 0..spec.volumes {
                let (file, path) =
                    scratch.new_file(&format!("volume-{index}.img"), spec.volume_size)?;
                let device = LoopDevice::attach(&file, &LoopOptions::default())?;
                fs::remove_file(&path).map_err(SimHostError::io("unlink", &path))?;
                volumes.push(Self::loop_volume(spec, index, device));
            }
        }
        if let Some(throttle) = &throttle {
            limit_volumes(throttle, &volumes)?;
            if let Some(parent) = host_device.as_ref().filter(|_| spec.has_host_cap()) {
                if let Some(iops) = spec.host_iops {
                    throttle.limit_iops(parent.major_minor(), iops)?;
                }
                if let Some(bps) = spec.host_bps {
                    throttle.limit_bps(parent.major_minor(), bps)?;
                }
            }
        }
        // Every backing file is unlinked: the empty directory can go now, so a SIGKILL later
        // leaves nothing on disk either.
        drop(scratch);
        Ok(SimulatedHost {
            spec: spec.clone(),
            mode: SimHostMode::LoopDevices,
            volumes,
            host_device,
            throttle,
            plain_dir: None,
        })
    }

    /// Builds null_blk volumes (needs root and [`null_blk_available`]), capped per volume like
    /// loop volumes. Sizes must be whole MiB; a host cap is refused (it is built from a parent
    /// loop device that every volume is a slice of).
    pub fn build_null_blk(spec: &SimHostSpec) -> Result<SimulatedHost, SimHostError> {
        spec.validate()?;
        if spec.has_host_cap() {
            return Err(SimHostError::BadSpec(
                "host caps need loop volumes (each volume a slice of one capped parent loop \
                 device); build loop volumes or leave host_iops and host_bps out"
                    .into(),
            ));
        }
        let options = NullBlkOptions::new(spec.volume_size)?;
        null_blk_available().map_err(SimHostError::NullBlkUnavailable)?;
        Self::sweep_stale();
        let throttle = Self::throttle_for(spec)?;
        let mut volumes = Vec::with_capacity(spec.volumes);
        for index in 0..spec.volumes {
            let device = NullBlkDevice::create(&options)?;
            volumes.push(SimVolume {
                path: device.path().to_path_buf(),
                device: None,
                null_blk: Some(device),
                iops_cap: spec.volume_iops_cap(index),
                bps_cap: spec.volume_bps_cap(index),
            });
        }
        if let Some(throttle) = &throttle {
            limit_volumes(throttle, &volumes)?;
        }
        Ok(SimulatedHost {
            spec: spec.clone(),
            mode: SimHostMode::NullBlk,
            volumes,
            host_device: None,
            throttle,
            plain_dir: None,
        })
    }

    /// Builds plain sparse files (no root needed, no caps), in the first of `/dev/shm`,
    /// `/var/tmp` and the temp dir whose filesystem takes O_DIRECT. `reason` says why.
    pub fn build_plain_files(
        spec: &SimHostSpec,
        reason: &str,
    ) -> Result<SimulatedHost, SimHostError> {
        spec.validate()?;
        Self::sweep_stale();
        let mut tried = Vec::new();
        let candidates = [
            PathBuf::from("/dev/shm"),
            PathBuf::from("/var/tmp"),
            std::env::temp_dir(),
        ];
        for base in &candidates {
            let scratch = match host_scratch(base) {
                Ok(s) => s,
                Err(err) => {
                    tried.push(format!("{}: {err}", base.display()));
                    continue;
                }
            };
            let probe = scratch.new_file("probe", 4096).and_then(|(_, path)| {
                read_direct_4k(&path, 0).map_err(SimHostError::io("O_DIRECT read of", &path))?;
                fs::remove_file(&path).map_err(SimHostError::io("remove", &path))
            });
            if let Err(err) = probe {
                tried.push(err.to_string());
                continue;
            }
            let mut volumes = Vec::with_capacity(spec.volumes);
            for index in 0..spec.volumes {
                let (_, path) =
                    scratch.new_file(&format!("volume-{index}.img"), spec.volume_size)?;
                volumes.push(SimVolume {
                    path,
                    device: None,
                    null_blk: None,
                    iops_cap: None,
                    bps_cap: None,
                });
            }
            return Ok(SimulatedHost {
                spec: spec.clone(),
                mode: SimHostMode::PlainFiles {
                    reason: reason.to_owned(),
                },
                volumes,
                host_device: None,
                throttle: None,
                plain_dir: Some(scratch),
            });
        }
        Err(SimHostError::NoDirectIoDir(tried.join("; ")))
    }

    /// Removes leftovers of killed processes: empty `hostmax-<pid>-<n>` cgroups,
    /// `hostmax-sim-<pid>-<n>` scratch directories, `hostmax<pid>_<n>` null_blk devices and
    /// zram devices marked `hostmax-zram-<pid>-<id>` ([`crate::sweep_stale_zram`]) whose pid is
    /// gone. Returns how many. (Loop devices need no sweeping: the kernel detaches them
    /// when their process dies.)
    pub fn sweep_stale() -> usize {
        let mut removed = IoThrottle::sweep_stale();
        removed += nullblk::sweep_stale_in(Path::new(NULLB_CONFIGFS_ROOT));
        removed += crate::sweep_stale_zram();
        let mut bases = vec![
            PathBuf::from("/dev/shm"),
            PathBuf::from("/var/tmp"),
            std::env::temp_dir(),
        ];
        bases.dedup();
        for base in bases {
            removed += sweep_dead_owners(&base, SCRATCH_PREFIX);
        }
        removed
    }

    fn loop_volume(spec: &SimHostSpec, index: usize, device: LoopDevice) -> SimVolume {
        SimVolume {
            path: device.path().to_path_buf(),
            device: Some(device),
            null_blk: None,
            iops_cap: spec.volume_iops_cap(index),
            bps_cap: spec.volume_bps_cap(index),
        }
    }

    /// What was asked for.
    pub fn spec(&self) -> &SimHostSpec {
        &self.spec
    }

    /// Loop devices, null_blk devices or plain files (and why).
    pub fn mode(&self) -> &SimHostMode {
        &self.mode
    }

    /// The volumes, in spec order.
    pub fn volumes(&self) -> &[SimVolume] {
        &self.volumes
    }

    /// What to pass to `hostmax --devices`: one path per volume, in order.
    pub fn device_paths(&self) -> Vec<PathBuf> {
        self.volumes.iter().map(|v| v.path.clone()).collect()
    }

    /// The device every loop volume is a slice of: a loop device with a host cap, a null_blk
    /// device wherever tmpfs takes no O_DIRECT (Linux before 6.6); else none.
    pub fn host_device(&self) -> Option<&ParentDevice> {
        self.host_device.as_ref()
    }

    /// The cgroup holding the caps (only when the spec asked for caps, in loop or null_blk mode).
    /// Caps apply only to processes in it: [`IoThrottle::join_self`] or
    /// [`IoThrottle::command_in_group`].
    pub fn throttle(&self) -> Option<&IoThrottle> {
        self.throttle.as_ref()
    }

    /// One line saying what was built, for the demo's banner.
    pub fn describe(&self) -> String {
        let count = self.volumes.len();
        let size_mib = self.spec.volume_size as f64 / (1024.0 * 1024.0);
        let mut mode = self.mode.to_string();
        if let Some(ParentDevice::NullBlk(parent)) = &self.host_device {
            mode = mode.replacen(
                "on tmpfs",
                &format!(
                    "on null_blk {} (tmpfs takes O_DIRECT only from Linux 6.6 on)",
                    parent.path().display()
                ),
                1,
            );
        }
        let mut line = format!("{count} volumes of {size_mib:.0} MiB as {mode}");
        if let (Some(first), Some(last)) = (self.volumes.first(), self.volumes.last()) {
            line += &format!(" ({} .. {})", first.path.display(), last.path.display());
        }
        if matches!(self.mode, SimHostMode::LoopDevices | SimHostMode::NullBlk) {
            let caps: Vec<String> = [
                self.spec.volume_iops_cap(0).map(|v| format!("{v} IOPS")),
                self.spec.volume_bps_cap(0).map(|v| format!("{v} B/s")),
            ]
            .into_iter()
            .flatten()
            .collect();
            let uniform = |caps: &[Option<u64>]| caps.windows(2).all(|w| w[0] == w[1]);
            if !caps.is_empty() {
                if uniform(&self.spec.volume_iops) && uniform(&self.spec.volume_bps) {
                    line += &format!(", each capped at {}", caps.join(" and "));
                } else {
                    line += ", per-volume caps";
                }
            }
            let host: Vec<String> = [
                self.spec.host_iops.map(|v| format!("{v} IOPS")),
                self.spec.host_bps.map(|v| format!("{v} B/s")),
            ]
            .into_iter()
            .flatten()
            .collect();
            if let Some(parent) = self.host_device.as_ref().filter(|_| !host.is_empty()) {
                line += &format!(
                    ", host capped at {} (all volumes are slices of {})",
                    host.join(" and "),
                    parent.path().display()
                );
            }
            if let Some(throttle) = &self.throttle {
                line += &format!(
                    "; caps in {} {}",
                    throttle.flavor(),
                    throttle.path().display()
                );
            }
        }
        line
    }
}

impl Drop for SimulatedHost {
    fn drop(&mut self) {
        // What each of our loop devices is attached to now, to see the kernel finish detaching.
        let attached: Vec<(String, String)> = self
            .volumes
            .iter()
            .filter_map(|v| v.device.as_ref())
            .chain(
                self.host_device
                    .as_ref()
                    .and_then(ParentDevice::loop_device),
            )
            .filter_map(|d| Some((d.kernel_name().to_string(), d.backing_file().ok()?)))
            .collect();
        // Volumes first: each holds the parent device open as its backing file.
        self.volumes.clear();
        self.host_device.take();
        self.throttle.take();
        self.plain_dir.take();
        wait_until_detached(&attached, std::time::Duration::from_secs(3));
    }
}

/// Sets each volume's caps (on its block device) in `throttle`.
fn limit_volumes(throttle: &IoThrottle, volumes: &[SimVolume]) -> Result<(), SimHostError> {
    for volume in volumes {
        let Some(major_minor) = volume.major_minor() else {
            continue;
        };
        if let Some(iops) = volume.iops_cap {
            throttle.limit_iops(major_minor, iops)?;
        }
        if let Some(bps) = volume.bps_cap {
            throttle.limit_bps(major_minor, bps)?;
        }
    }
    Ok(())
}

/// Autoclear detaches a loop device after its last close, but the kernel may finish that a
/// moment later (deferred work); wait for it so that nothing of ours is attached when we return.
/// A device that was reattached by someone else meanwhile shows another backing file.
fn wait_until_detached(attached: &[(String, String)], limit: std::time::Duration) {
    let deadline = std::time::Instant::now() + limit;
    for (name, backing) in attached {
        let path = Path::new("/sys/block").join(name).join("loop/backing_file");
        while std::time::Instant::now() < deadline {
            match fs::read_to_string(&path) {
                Ok(now) if now.trim_end() == backing.trim_end() => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                _ => break,
            }
        }
    }
}

const SCRATCH_PREFIX: &str = "hostmax-sim-";

static NEXT_SCRATCH: AtomicU32 = AtomicU32::new(0);

/// A fresh private directory `<base>/hostmax-sim-<pid>-<n>` for backing files.
fn host_scratch(base: &Path) -> Result<ScratchDir, SimHostError> {
    let n = NEXT_SCRATCH.fetch_add(1, Ordering::Relaxed);
    ScratchDir::create_private(base, SCRATCH_PREFIX, &n.to_string())
}
