//! IOPS and bandwidth caps per device, made with a cgroup.
//!
//! An [`IoThrottle`] is one cgroup, `hostmax-<pid>-<n>`, in the cgroup v1 `blkio` hierarchy
//! (`blkio.throttle.*_device` files) or, where that is not mounted, in the cgroup v2 hierarchy
//! (`io.max`). Only processes (or, with v1, threads) inside the group are capped. Dropping it moves
//! its members back to the cgroups they came from and removes the group; [`IoThrottle::sweep_stale`]
//! removes empty groups left by processes that were killed. Where the v2 root had to delegate
//! the `io` controller (`+io` in its `cgroup.subtree_control`), the last of hostmax's groups
//! to go takes it back (`-io`), so the host is left as it was found.

use std::collections::HashMap;
use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::scratch::pid_alive;
use crate::{sys, FileLock, SimHostError};

/// Which cgroup interface a throttle uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CgroupFlavor {
    /// cgroup v1 `blkio`: `blkio.throttle.{read,write}_{iops,bps}_device`, one rule per write.
    V1Blkio,
    /// cgroup v2 with the `io` controller: `io.max`.
    V2Io,
}

impl std::fmt::Display for CgroupFlavor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CgroupFlavor::V1Blkio => "cgroup v1 blkio",
            CgroupFlavor::V2Io => "cgroup v2 io.max",
        })
    }
}

/// Caps for one device; `None` is "no cap".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceLimit {
    /// Read operations per second.
    pub read_iops: Option<u64>,
    /// Write operations per second.
    pub write_iops: Option<u64>,
    /// Read bytes per second.
    pub read_bps: Option<u64>,
    /// Write bytes per second.
    pub write_bps: Option<u64>,
}

impl DeviceLimit {
    /// The same IOPS cap for reads and writes.
    pub fn iops(iops: u64) -> Self {
        DeviceLimit {
            read_iops: Some(iops),
            write_iops: Some(iops),
            ..DeviceLimit::default()
        }
    }

    /// The same bandwidth cap for reads and writes.
    pub fn bps(bps: u64) -> Self {
        DeviceLimit {
            read_bps: Some(bps),
            write_bps: Some(bps),
            ..DeviceLimit::default()
        }
    }
}

with_setters!(DeviceLimit {
    with_read_iops => read_iops: Option<u64>,
    with_write_iops => write_iops: Option<u64>,
    with_read_bps => read_bps: Option<u64>,
    with_write_bps => write_bps: Option<u64>,
});

/// One cgroup whose members get per-device IOPS/bandwidth caps.
#[derive(Debug)]
pub struct IoThrottle {
    dir: PathBuf,
    root: PathBuf,
    flavor: CgroupFlavor,
    /// Where each member that joined through this value came from (pid or tid).
    origins: Mutex<HashMap<u32, PathBuf>>,
    /// Where this process was when the group was made: where the children it starts in the
    /// group come from, and where members of unknown origin go back to.
    home: PathBuf,
}

static NEXT_GROUP: AtomicU32 = AtomicU32::new(0);

const GROUP_PREFIX: &str = "hostmax-";

impl IoThrottle {
    /// Creates a new empty group (after sweeping stale ones), with no caps yet.
    pub fn create() -> Result<IoThrottle, SimHostError> {
        let (flavor, root) = io_hierarchy()?;
        // Held while groups appear and vanish, so the last group's `-io` never races a new one.
        let _lock = DelegationLock::take();
        sweep_in(&root);
        if flavor == CgroupFlavor::V2Io {
            delegate_io(&root)?;
        }
        let n = NEXT_GROUP.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("{GROUP_PREFIX}{}-{n}", std::process::id()));
        fs::create_dir(&dir).map_err(SimHostError::io("create cgroup", &dir))?;
        let home = own_cgroup(flavor, &root, "self").unwrap_or_else(|| root.clone());
        Ok(IoThrottle {
            dir,
            root,
            flavor,
            origins: Mutex::new(HashMap::new()),
            home,
        })
    }

    /// Which cgroup interface this group uses.
    pub fn flavor(&self) -> CgroupFlavor {
        self.flavor
    }

    /// The group's directory, e.g. `/sys/fs/cgroup/blkio/hostmax-1234-0`.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Caps reads and writes on device `major_minor` at `iops` operations per second each.
    pub fn limit_iops(&self, major_minor: (u32, u32), iops: u64) -> Result<(), SimHostError> {
        self.set(major_minor, Rule::ReadIops, Some(iops))?;
        self.set(major_minor, Rule::WriteIops, Some(iops))
    }

    /// Caps reads and writes on device `major_minor` at `bps` bytes per second each.
    pub fn limit_bps(&self, major_minor: (u32, u32), bps: u64) -> Result<(), SimHostError> {
        self.set(major_minor, Rule::ReadBps, Some(bps))?;
        self.set(major_minor, Rule::WriteBps, Some(bps))
    }

    /// Sets all four caps of device `major_minor` (`None` removes that cap).
    pub fn limit(&self, major_minor: (u32, u32), limit: &DeviceLimit) -> Result<(), SimHostError> {
        self.set(major_minor, Rule::ReadIops, limit.read_iops)?;
        self.set(major_minor, Rule::WriteIops, limit.write_iops)?;
        self.set(major_minor, Rule::ReadBps, limit.read_bps)?;
        self.set(major_minor, Rule::WriteBps, limit.write_bps)
    }

    /// Moves process `pid` (all its threads) into the group.
    pub fn join_pid(&self, pid: u32) -> Result<(), SimHostError> {
        self.remember_origin(pid, &pid.to_string());
        let procs = self.dir.join("cgroup.procs");
        fs::write(&procs, pid.to_string()).map_err(SimHostError::io("write pid to", &procs))
    }

    /// Notes where `id` is now (`/proc/<proc_path>/cgroup`), to move it back there on drop.
    fn remember_origin(&self, id: u32, proc_path: &str) {
        if let Some(origin) = own_cgroup(self.flavor, &self.root, proc_path) {
            if origin != self.dir {
                lock(&self.origins).insert(id, origin);
            }
        }
    }

    /// Moves this process into the group (the demo does this before it runs the engine).
    pub fn join_self(&self) -> Result<(), SimHostError> {
        self.join_pid(std::process::id())
    }

    /// Moves one thread (by kernel tid) into the group; only cgroup v1 can split a process.
    pub fn join_thread(&self, tid: u32) -> Result<(), SimHostError> {
        if self.flavor != CgroupFlavor::V1Blkio {
            return Err(SimHostError::Unsupported(format!(
                "moving a single thread into {} (the io controller is not threaded); use join_pid",
                self.flavor
            )));
        }
        self.remember_origin(tid, &format!("self/task/{tid}"));
        let tasks = self.dir.join("tasks");
        fs::write(&tasks, tid.to_string()).map_err(SimHostError::io("write tid to", &tasks))
    }

    /// Makes `cmd` start its child inside the group: the child writes "0" (itself) to
    /// `cgroup.procs` between fork and exec, so its first I/O is already capped.
    pub fn command_in_group<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        command_in_cgroup(cmd, &self.dir)
    }

    /// Process ids now in the group.
    pub fn members(&self) -> Result<Vec<u32>, SimHostError> {
        read_ids(&self.dir.join("cgroup.procs"))
    }

    /// Removes empty `hostmax-<pid>-<n>` groups whose process is gone; returns how many.
    pub fn sweep_stale() -> usize {
        match io_hierarchy() {
            Ok((_, root)) => sweep_in(&root),
            Err(_) => 0,
        }
    }

    fn set(
        &self,
        (major, minor): (u32, u32),
        rule: Rule,
        value: Option<u64>,
    ) -> Result<(), SimHostError> {
        let (file, line) = match self.flavor {
            CgroupFlavor::V1Blkio => {
                let file = match rule {
                    Rule::ReadIops => "blkio.throttle.read_iops_device",
                    Rule::WriteIops => "blkio.throttle.write_iops_device",
                    Rule::ReadBps => "blkio.throttle.read_bps_device",
                    Rule::WriteBps => "blkio.throttle.write_bps_device",
                };
                // In v1, 0 removes the rule.
                (file, format!("{major}:{minor} {}", value.unwrap_or(0)))
            }
            CgroupFlavor::V2Io => {
                let key = match rule {
                    Rule::ReadIops => "riops",
                    Rule::WriteIops => "wiops",
                    Rule::ReadBps => "rbps",
                    Rule::WriteBps => "wbps",
                };
                let value = value.map_or_else(|| "max".to_owned(), |v| v.to_string());
                ("io.max", format!("{major}:{minor} {key}={value}"))
            }
        };
        let path = self.dir.join(file);
        fs::write(&path, line).map_err(SimHostError::io("write rule to", &path))
    }
}

impl Drop for IoThrottle {
    fn drop(&mut self) {
        // v1 can hold single threads, so move by tid there; v2 moves whole processes.
        let members = match self.flavor {
            CgroupFlavor::V1Blkio => "tasks",
            CgroupFlavor::V2Io => "cgroup.procs",
        };
        let origins = std::mem::take(&mut *lock(&self.origins));
        let _lock = DelegationLock::take();
        for _ in 0..100 {
            let _ = read_ids(&self.dir.join(members)).map(|ids| {
                for id in ids {
                    // Back where it came from (children started in the group came from this
                    // process's cgroup); the root if that is gone. A member may exit meanwhile
                    // (ESRCH): nothing to move then.
                    let origin = origins.get(&id).unwrap_or(&self.home);
                    if fs::write(origin.join(members), id.to_string()).is_err() {
                        let _ = fs::write(self.root.join(members), id.to_string());
                    }
                }
            });
            match fs::remove_dir(&self.dir) {
                Ok(()) => {
                    if self.flavor == CgroupFlavor::V2Io {
                        undelegate_io_if_last(&self.root);
                    }
                    return;
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => return,
                // EBUSY: a member was still on its way out or a new child just joined.
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        eprintln!(
            "hostmax: could not remove cgroup {} (members still in it); `rmdir` it when they exit",
            self.dir.display()
        );
    }
}

/// Where hostmax notes that it enabled the v2 `io` controller in a root's
/// `cgroup.subtree_control` (the file holds that root's path): the last group to go disables
/// it again. /run is cleared on boot, as the cgroup tree is.
const IO_DELEGATED_MARK: &str = "/run/hostmax-delegated-io";

/// Serialises making and removing groups across processes ([`IO_DELEGATED_MARK`]'s owner).
const DELEGATION_LOCK: &str = "/run/hostmax-cgroups.lock";

/// An exclusive flock on [`DELEGATION_LOCK`] while it lives (nothing if /run is not writable:
/// the controller is then left as found only without concurrent hostmax processes).
struct DelegationLock {
    _held: Option<FileLock>,
}

impl DelegationLock {
    fn take() -> DelegationLock {
        DelegationLock {
            _held: FileLock::acquire(Path::new(DELEGATION_LOCK)).ok(),
        }
    }
}

/// Enables `io` for the children of v2 `root` unless it already is; notes that we did.
fn delegate_io(root: &Path) -> Result<(), SimHostError> {
    let control = root.join("cgroup.subtree_control");
    let enabled = fs::read_to_string(&control).map_err(SimHostError::io("read", &control))?;
    if enabled.split_whitespace().any(|c| c == "io") {
        return Ok(());
    }
    // Children of the root only get io.max once the root delegates the controller.
    fs::write(&control, "+io").map_err(SimHostError::io("write +io to", &control))?;
    let _ = fs::write(IO_DELEGATED_MARK, root.as_os_str().as_bytes());
    Ok(())
}

/// Takes `io` back from v2 `root`'s children if hostmax enabled it and none of its groups is
/// left there (call with the [`DelegationLock`] held).
fn undelegate_io_if_last(root: &Path) {
    let marked = fs::read(IO_DELEGATED_MARK).is_ok_and(|m| m == root.as_os_str().as_bytes());
    let ours_left = fs::read_dir(root).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| stale_owner(GROUP_PREFIX, &e.file_name().to_string_lossy()).is_some())
    });
    if marked && !ours_left {
        // Refused (EBUSY) where another user enabled io further down meanwhile: theirs now.
        let _ = fs::write(root.join("cgroup.subtree_control"), "-io");
        let _ = fs::remove_file(IO_DELEGATED_MARK);
    }
}

/// The cgroup directory (under `root`) that `/proc/<proc_path>` is in, in the hierarchy of
/// `flavor`; `None` if it cannot be told or is not under `root` (a namespaced view).
fn own_cgroup(flavor: CgroupFlavor, root: &Path, proc_path: &str) -> Option<PathBuf> {
    let text = fs::read_to_string(format!("/proc/{proc_path}/cgroup")).ok()?;
    let relative = text.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let ours = match flavor {
            CgroupFlavor::V2Io => controllers.is_empty(),
            CgroupFlavor::V1Blkio => controllers.split(',').any(|c| c == "blkio"),
        };
        ours.then(|| path.trim_start_matches('/').to_owned())
    })?;
    let dir = root.join(relative);
    dir.is_dir().then_some(dir)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Clone, Copy)]
enum Rule {
    ReadIops,
    WriteIops,
    ReadBps,
    WriteBps,
}

fn read_ids(path: &Path) -> Result<Vec<u32>, SimHostError> {
    let text = fs::read_to_string(path).map_err(SimHostError::io("read", path))?;
    Ok(text.lines().filter_map(|l| l.trim().parse().ok()).collect())
}

/// Makes `cmd` start its child inside the cgroup directory `dir` (any controller's, v1 or v2):
/// the child writes "0" (itself) to `dir/cgroup.procs` between fork and exec, so it runs
/// there from its first instruction; the spawn fails with the error if it cannot. A path
/// holding a NUL byte cannot be written to and fails the spawn too.
pub fn command_in_cgroup<'c>(cmd: &'c mut Command, dir: &Path) -> &'c mut Command {
    // A NUL byte in the path: an empty path, which the child's open refuses (ENOENT).
    let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()).unwrap_or_default();
    sys::join_cgroup_before_exec(cmd, procs)
}

/// Finds the cgroup hierarchy that can throttle block I/O: v1 `blkio` first (on hybrid
/// machines the io controller is bound there), else v2 with `io` in `cgroup.controllers`.
fn io_hierarchy() -> Result<(CgroupFlavor, PathBuf), SimHostError> {
    if let Some(root) = std::env::var_os(CGROUP_ROOT_ENV) {
        return classify_cgroup_root(Path::new(&root));
    }
    let mounts_path = Path::new("/proc/self/mounts");
    let mounts = fs::read_to_string(mounts_path).map_err(SimHostError::io("read", mounts_path))?;
    let mut v2 = None;
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, mount_point, fs_type, options, ..] = fields[..] else {
            continue;
        };
        match fs_type {
            "cgroup" if options.split(',').any(|o| o == "blkio") => {
                return Ok((CgroupFlavor::V1Blkio, PathBuf::from(mount_point)));
            }
            "cgroup2" if v2.is_none() => {
                let controllers = Path::new(mount_point).join("cgroup.controllers");
                if fs::read_to_string(controllers)
                    .is_ok_and(|c| c.split_whitespace().any(|name| name == "io"))
                {
                    v2 = Some(PathBuf::from(mount_point));
                }
            }
            _ => {}
        }
    }
    v2.map(|root| (CgroupFlavor::V2Io, root))
        .ok_or(SimHostError::NoIoController)
}

/// Names the cgroup directory throttle groups are made in, instead of the mounted hierarchy
/// hostmax finds itself: for a delegated cgroup v2 subtree (a container whose own cgroup holds
/// processes cannot enable controllers for children).
pub const CGROUP_ROOT_ENV: &str = "HOSTMAX_CGROUP_ROOT";

/// Which flavour of cgroup directory `root` is, if it can throttle block I/O.
fn classify_cgroup_root(root: &Path) -> Result<(CgroupFlavor, PathBuf), SimHostError> {
    let bad = |why: &str| SimHostError::BadCgroupRoot {
        path: root.display().to_string(),
        why: why.to_string(),
    };
    if !root.is_dir() {
        return Err(bad("not a directory"));
    }
    if let Ok(controllers) = fs::read_to_string(root.join("cgroup.controllers")) {
        return if controllers.split_whitespace().any(|c| c == "io") {
            Ok((CgroupFlavor::V2Io, root.to_path_buf()))
        } else {
            Err(bad("a cgroup v2 directory without the io controller"))
        };
    }
    if root.join("blkio.throttle.read_iops_device").exists() {
        return Ok((CgroupFlavor::V1Blkio, root.to_path_buf()));
    }
    Err(bad("not a cgroup directory"))
}

fn sweep_in(root: &Path) -> usize {
    let Ok(entries) = fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = stale_owner(GROUP_PREFIX, &name.to_string_lossy()) else {
            continue;
        };
        if !pid_alive(pid) && fs::remove_dir(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The pid in a `<prefix><pid>-<n>` name, e.g. `hostmax-1234-0`.
pub(crate) fn stale_owner(prefix: &str, name: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?;
    let (pid, n) = rest.split_once('-')?;
    n.parse::<u32>().ok()?;
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_is_parsed_only_from_our_names() {
        assert_eq!(stale_owner(GROUP_PREFIX, "hostmax-1234-0"), Some(1234));
        assert_eq!(stale_owner(GROUP_PREFIX, "hostmax-1234-x"), None);
        assert_eq!(stale_owner(GROUP_PREFIX, "hostmax-sim-1234-0"), None);
        assert_eq!(stale_owner(GROUP_PREFIX, "system.slice"), None);
    }

    /// Every rule `limit` writes, in order, as (file, line), against a stand-in group
    /// directory (a plain file keeps only the last write, so each is read back and removed).
    fn rules_written(flavor: CgroupFlavor, limit: &DeviceLimit) -> Vec<(String, String)> {
        let scratch = crate::ScratchDir::new(&format!("throttle-{flavor}"));
        let group = IoThrottle {
            dir: scratch.0.clone(),
            root: scratch.0.clone(),
            flavor,
            origins: Mutex::new(HashMap::new()),
            home: scratch.0.clone(),
        };
        let mut written = Vec::new();
        for (rule, value) in [
            (Rule::ReadIops, limit.read_iops),
            (Rule::WriteIops, limit.write_iops),
            (Rule::ReadBps, limit.read_bps),
            (Rule::WriteBps, limit.write_bps),
        ] {
            group.set((7, 3), rule, value).unwrap();
            let [name] = &scratch.entries()[..] else {
                panic!("one rule file per write: {:?}", scratch.entries());
            };
            let path = scratch.0.join(name);
            written.push((name.clone(), fs::read_to_string(&path).unwrap()));
            fs::remove_file(path).unwrap();
        }
        // The stand-in is no cgroup: nothing to move out, and the directory goes with `scratch`.
        std::mem::forget(group);
        written
    }

    #[test]
    fn cgroup_v2_rules_go_to_io_max_with_max_for_no_cap() {
        let limit = DeviceLimit {
            read_iops: Some(1500),
            write_iops: Some(700),
            read_bps: None,
            write_bps: Some(50_000_000),
        };
        let rules = rules_written(CgroupFlavor::V2Io, &limit);
        let lines: Vec<&str> = rules.iter().map(|(_, l)| l.as_str()).collect();
        assert!(rules.iter().all(|(file, _)| file == "io.max"), "{rules:?}");
        assert_eq!(
            lines,
            [
                "7:3 riops=1500",
                "7:3 wiops=700",
                "7:3 rbps=max",
                "7:3 wbps=50000000"
            ]
        );
    }

    #[test]
    fn cgroup_v1_rules_go_to_one_file_each_with_0_for_no_cap() {
        let rules = rules_written(CgroupFlavor::V1Blkio, &DeviceLimit::iops(2000));
        assert_eq!(
            rules,
            [
                ("blkio.throttle.read_iops_device", "7:3 2000"),
                ("blkio.throttle.write_iops_device", "7:3 2000"),
                ("blkio.throttle.read_bps_device", "7:3 0"),
                ("blkio.throttle.write_bps_device", "7:3 0"),
            ]
            .map(|(f, l)| (f.to_string(), l.to_string()))
        );
    }
}
