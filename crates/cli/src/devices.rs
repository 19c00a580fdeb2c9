//! From what the user typed after `--devices` to probed, de-duplicated targets.
//!
//! [`expand_device_args`] turns paths and quoted glob patterns into [`DeviceCandidate`]s, and
//! [`resolve_targets`] probes them with `hostmax_device::probe` into [`TargetInfo`]s,
//! dropping the second naming of the same device (through a symlink such as
//! `/dev/disk/by-id/...`, a second device node, or a hard link). Every failure is a
//! [`BadInput`] naming the path or pattern.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use hostmax_device::{probe, ProbeError, Sysfs, TargetInfo, TargetKind};

use crate::error::BadInput;

/// One path to probe, and how the user named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCandidate {
    /// The path, as given or as a pattern matched it.
    pub path: PathBuf,
    /// The pattern that matched it, if it came from one: a pattern's matches that are not
    /// usable targets (such as `/dev/loop-control` under `/dev/loop*`) are skipped.
    pub from_pattern: Option<String>,
}

/// Whether `s` has a glob metacharacter; a path without one is taken literally.
pub fn is_pattern(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Expands `--devices` values in order: a path without glob metacharacters, or one that exists
/// as given (a file named `vol[1`), is kept as given (checked later by probing); a pattern is
/// expanded, its matches in natural order (`loop2` before `loop10`). A pattern that matches
/// nothing, or is malformed, is an error naming it.
pub fn expand_device_args(args: &[OsString]) -> Result<Vec<DeviceCandidate>, BadInput> {
    let mut out = Vec::new();
    for arg in args {
        if arg.is_empty() {
            return Err(BadInput(
                "--devices got an empty path; give a block device or file path, or a quoted pattern such as '/dev/sd[b-u]'"
                    .into(),
            ));
        }
        // A non-UTF-8 name cannot be a glob pattern for the glob crate, and a path that exists
        // is that path: take them literally.
        let Some(text) = arg
            .to_str()
            .filter(|t| is_pattern(t) && !Path::new(t).exists())
        else {
            out.push(DeviceCandidate {
                path: PathBuf::from(arg),
                from_pattern: None,
            });
            continue;
        };
        let entries = glob::glob(text).map_err(|e| {
            BadInput(format!(
                "--devices pattern '{text}' is malformed ({e}); quote it and check its brackets, e.g. '/dev/sd[b-u]'"
            ))
        })?;
        let mut matches = Vec::new();
        for entry in entries {
            match entry {
                Ok(path) => matches.push(path),
                Err(e) => {
                    return Err(BadInput(format!(
                        "--devices pattern '{text}': cannot read {}: {}",
                        e.path().display(),
                        e.error()
                    )))
                }
            }
        }
        if matches.is_empty() {
            return Err(BadInput(format!(
                "--devices pattern '{text}' matches nothing; check the path (ls {text})"
            )));
        }
        matches.sort_by(|a, b| natural_cmp(a.as_os_str(), b.as_os_str()));
        out.extend(matches.into_iter().map(|path| DeviceCandidate {
            path,
            from_pattern: Some(text.to_string()),
        }));
    }
    Ok(out)
}

/// Compares names with digit runs as numbers, so `loop2` sorts before `loop10`.
pub fn natural_cmp(a: &OsStr, b: &OsStr) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    use std::os::unix::ffi::OsStrExt;
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let si = i;
            while i < a.len() && a[i].is_ascii_digit() {
                i += 1;
            }
            let sj = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            // Compare numerically without parsing (runs may be longer than any integer):
            // strip leading zeros, then longer is larger, then bytewise.
            let na = strip_zeros(&a[si..i]);
            let nb = strip_zeros(&b[sj..j]);
            let ord = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
            if ord != Ordering::Equal {
                return ord;
            }
        } else {
            if a[i] != b[j] {
                return a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
    }
    (a.len() - i).cmp(&(b.len() - j)).then_with(|| a.cmp(b))
}

fn strip_zeros(digits: &[u8]) -> &[u8] {
    let first = digits
        .iter()
        .position(|&d| d != b'0')
        .unwrap_or(digits.len());
    &digits[first..]
}

/// What to say of the names given literally that name a target given before (the same path
/// twice, or a second view of one device such as a by-id link): one line each. Patterns
/// overlap by design (`sd*` and `sd[b-c]`) and are not listed. Called once every check has
/// passed, so a refusal stays one line.
pub fn duplicate_notes(candidates: &[DeviceCandidate]) -> Vec<String> {
    let key = |path: &Path| -> Option<Identity> {
        let meta = std::fs::metadata(path).ok()?;
        Some(if meta.file_type().is_block_device() {
            Identity::Device(libc::major(meta.rdev()), libc::minor(meta.rdev()))
        } else {
            Identity::Inode(meta.dev(), meta.ino())
        })
    };
    let mut first: Vec<(Identity, &Path)> = Vec::new();
    let mut notes = Vec::new();
    for cand in candidates {
        let Some(id) = key(&cand.path) else { continue };
        match first.iter().find(|(known, _)| *known == id) {
            Some((_, earlier)) if cand.from_pattern.is_none() => {
                notes.push(duplicate_note(&cand.path, earlier));
            }
            Some(_) => {}
            None => first.push((id, &cand.path)),
        }
    }
    notes
}

/// What is said of a target named again: `given` is the later name, `first` the name it was
/// first given by.
fn duplicate_note(given: &Path, first: &Path) -> String {
    if given == first {
        format!("{} given twice: measured once", given.display())
    } else {
        format!(
            "{} is the same device as {}: measured once, as {}",
            given.display(),
            first.display(),
            first.display()
        )
    }
}

/// The first literal `--devices` path, made absolute, that is another name (a symlink such as
/// `/dev/disk/by-id/...`) for the target at `canonical`: the name the user knows it by, kept
/// beside the kernel's in reports and the suite's checkpoint.
pub fn given_name(devices: &[OsString], canonical: &Path) -> Option<PathBuf> {
    devices.iter().map(PathBuf::from).find_map(|given| {
        if is_pattern(&given.to_string_lossy()) || given == canonical {
            return None;
        }
        let absolute = std::path::absolute(&given).ok()?;
        (std::fs::canonicalize(&absolute).ok()? == canonical && absolute != canonical)
            .then_some(absolute)
    })
}

/// Turns a probe error into a one-line message naming the path and the fix.
pub fn probe_error_message(path: &Path, err: &ProbeError) -> String {
    match err {
        ProbeError::Open { source, .. } => match source.kind() {
            std::io::ErrorKind::NotFound => format!(
                "{} does not exist; give an existing block device or regular file, or add --size to have hostmax create a file of that size",
                path.display()
            ),
            // As root, the refusal comes from something root does not override.
            std::io::ErrorKind::PermissionDenied if nix::unistd::geteuid().is_root() => format!(
                "{}: permission denied although hostmax runs as root: likely the container's device rules (the cgroup devices list; run it with --device {} or privileged) or a security module (SELinux, AppArmor: see the audit log or dmesg)",
                path.display(),
                path.display()
            ),
            std::io::ErrorKind::PermissionDenied => format!(
                "{}: permission denied; run as root or give yourself read access",
                path.display()
            ),
            _ => format!("{}: cannot probe it: {source}", path.display()),
        },
        ProbeError::NotATarget { what, .. } => format!(
            "{} is {what}; give a block device or a regular file",
            path.display()
        ),
        // The link itself, or the target found through it: one name either way.
        ProbeError::UntrustedLink { link, .. } if link.link == path => link.to_string(),
        ProbeError::UntrustedLink { link, .. } => format!("{}: {link}", path.display()),
        other => format!("{}: {other}", path.display()),
    }
}

/// What makes two names the same target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Identity {
    /// A block device: its device number.
    Device(u32, u32),
    /// A regular file: its filesystem and inode.
    Inode(u64, u64),
}

/// Probes every candidate, in order, and keeps each device or file once.
///
/// A path given literally must be a usable target. A pattern's matches that are not (a
/// directory, a character device like `/dev/loop-control`, or an empty block device like an
/// unattached `/dev/loopN`) are skipped; a pattern all of whose matches are skipped is an
/// error. An empty target is an error: there is nothing to do I/O on.
pub fn resolve_targets(candidates: &[DeviceCandidate]) -> Result<Vec<TargetInfo>, BadInput> {
    Ok(resolve_targets_creating(candidates, None)?.0)
}

/// [`resolve_targets`], where a literal path that does not exist yet is a file hostmax will
/// make when `create_size` (the run's `--size`) is given and its directory exists: it gets a
/// placeholder [`TargetInfo`] of that size and is listed second, in order, for
/// [`create_files`] to make once every check has passed. Nothing is created here.
pub fn resolve_targets_creating(
    candidates: &[DeviceCandidate],
    create_size: Option<u64>,
) -> Result<(Vec<TargetInfo>, Vec<PathBuf>), BadInput> {
    let mut to_create: Vec<PathBuf> = Vec::new();
    let mut seen_paths: HashSet<PathBuf> = HashSet::new();
    let mut seen_ids: HashSet<Identity> = HashSet::new();
    let mut targets = Vec::new();
    let mut usable_per_pattern: Vec<(&str, bool)> = Vec::new();
    for cand in candidates {
        if let Some(p) = &cand.from_pattern {
            if !usable_per_pattern.iter().any(|(q, _)| q == p) {
                usable_per_pattern.push((p.as_str(), false));
            }
        }
        let info = match probe(&cand.path) {
            Ok(info) => info,
            Err(ProbeError::Open { ref source, .. })
                if source.kind() == std::io::ErrorKind::NotFound
                    && cand.from_pattern.is_none()
                    && create_size.is_some() =>
            {
                let info = planned_file(&cand.path, create_size.unwrap_or_default())?;
                if seen_paths.insert(info.path.clone()) {
                    to_create.push(info.path.clone());
                    targets.push(info);
                }
                continue;
            }
            Err(ProbeError::NotATarget { .. }) if cand.from_pattern.is_some() => continue,
            Err(e) => return Err(BadInput(probe_error_message(&cand.path, &e))),
        };
        if info.size == 0 {
            if cand.from_pattern.is_some() && info.kind == TargetKind::BlockDevice {
                continue;
            }
            return Err(BadInput(match info.kind {
                TargetKind::BlockDevice => format!(
                    "{} has size 0 (an unattached loop device or an empty drive?); give a device with data space",
                    cand.path.display()
                ),
                TargetKind::RegularFile => format!(
                    "{} is an empty file; give it a size first, e.g. fallocate -l 1g {}",
                    cand.path.display(),
                    cand.path.display()
                ),
                _ => format!("{} has size 0", cand.path.display()),
            }));
        }
        if let Some(p) = &cand.from_pattern {
            if let Some(entry) = usable_per_pattern.iter_mut().find(|(q, _)| q == p) {
                entry.1 = true;
            }
        }
        let id = identity(&info);
        let new_path = seen_paths.insert(info.path.clone());
        if !new_path || id.is_some_and(|id| !seen_ids.insert(id)) {
            continue;
        }
        targets.push(info);
    }
    if let Some((pattern, _)) = usable_per_pattern.iter().find(|(_, usable)| !usable) {
        return Err(BadInput(format!(
            "--devices pattern '{pattern}' matches no usable target (only directories, character devices or empty devices); give block devices or regular files"
        )));
    }
    Ok((targets, to_create))
}

/// The target a file to be made at `path` will be: its directory must exist (it is not made).
/// The logical block size is 512 until the file exists and is probed again.
fn planned_file(path: &Path, size: u64) -> Result<TargetInfo, BadInput> {
    let name = path.file_name().ok_or_else(|| {
        BadInput(format!(
            "{} does not exist and names no file to create; give an existing device or a file path",
            path.display()
        ))
    })?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // The file is made where the directory leads, never through another user's link.
    let resolved = hostmax_device::follow_trusted_links(parent).map_err(|e| {
        match hostmax_device::links::untrusted(&e) {
            Some(link) => BadInput(format!(
                "{} does not exist and hostmax would make it through a link it does not follow: {link}",
                path.display()
            )),
            None => BadInput(format!("{}: cannot resolve its directory ({e})", path.display())),
        }
    })?;
    let dir = Some(resolved)
        .filter(|d| d.is_dir())
        .ok_or_else(|| {
            BadInput(format!(
                "{} does not exist and its directory {} does not either; create the directory or give an existing device",
                path.display(),
                parent.display()
            ))
        })?;
    if in_dev(&dir) {
        return Err(BadInput(format!(
            "{} does not exist, and hostmax makes no file under /dev (a mistyped device name would become a file in memory); give an existing device, or a path outside /dev for a file of --size",
            path.display()
        )));
    }
    // Not made yet: the probe of the file hostmax makes records its inode.
    Ok(TargetInfo::new(
        dir.join(name),
        TargetKind::RegularFile,
        size,
        512,
    ))
}

/// Whether the directory `dir` (canonical) is `/dev` or below it on the same filesystem
/// (devtmpfs, where device nodes live; a filesystem mounted below it, such as `/dev/shm`, is
/// not).
fn in_dev(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let dev = Path::new("/dev");
    dir.starts_with(dev)
        && match (std::fs::metadata(dir), std::fs::metadata(dev)) {
            (Ok(d), Ok(root)) => d.dev() == root.dev(),
            _ => true,
        }
}

/// The files this process made ([`create_files`]), by path and inode, until a run starts:
/// [`remove_unused_files`] takes them away again when the command ends without one (a later
/// check, such as the engine's `--iopoll` or buffer-memory check, refused the run).
static MADE_UNUSED: std::sync::Mutex<Vec<(PathBuf, u64, u64)>> = std::sync::Mutex::new(Vec::new());

/// A run has started I/O on its targets: the files made for it are its now, kept whatever
/// happens next.
pub fn note_run_started() {
    if let Ok(mut made) = MADE_UNUSED.lock() {
        made.clear();
    }
}

/// Removes the files [`create_files`] made that no run has used (each only while it is still
/// the file made: same device and inode). Called when a command ends in an error before any
/// run started, and when a signal calls a run off before it started.
pub fn remove_unused_files() {
    let Ok(mut made) = MADE_UNUSED.lock() else {
        return;
    };
    for (path, dev, ino) in made.drain(..) {
        let same = std::fs::symlink_metadata(&path).is_ok_and(|m| m.dev() == dev && m.ino() == ino);
        if same {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Makes the files [`resolve_targets_creating`] planned, each `size` bytes (allocated with
/// `fallocate` where the filesystem can, else sparse), never replacing a file that appeared in
/// the meantime (`O_EXCL`), and probes each one. On failure the files made so far are removed.
pub fn create_files(paths: &[PathBuf], size: u64) -> Result<Vec<TargetInfo>, BadInput> {
    let mut made: Vec<&PathBuf> = Vec::new();
    let mut infos = Vec::new();
    for path in paths {
        match create_one(path, size) {
            Ok(info) => {
                made.push(path);
                infos.push(info);
            }
            Err(e) => {
                for m in made {
                    let _ = std::fs::remove_file(m);
                }
                return Err(e);
            }
        }
    }
    Ok(infos)
}

fn create_one(path: &Path, size: u64) -> Result<TargetInfo, BadInput> {
    let fail = |what: &str, e: std::io::Error| {
        BadInput(format!(
            "{}: cannot {what} ({e}); give a writable directory with {} free, or an existing device",
            path.display(),
            crate::units::format_size(size)
        ))
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| fail("create it", e))?;
    let made_inode = file.metadata().ok().map(|meta| (meta.dev(), meta.ino()));
    if let (Some((dev, ino)), Ok(mut made)) = (made_inode, MADE_UNUSED.lock()) {
        made.push((path.to_path_buf(), dev, ino));
    }
    let len = libc::off_t::try_from(size).map_err(|_| {
        BadInput(format!(
            "{}: --size {size} is too large for a file",
            path.display()
        ))
    })?;
    let sized = match nix::fcntl::fallocate(&file, nix::fcntl::FallocateFlags::empty(), 0, len) {
        Ok(()) => Ok(()),
        Err(nix::errno::Errno::EOPNOTSUPP) => file.set_len(size),
        Err(e) => Err(e.into()),
    };
    drop(file);
    let probed = sized
        .map_err(|e| fail("allocate it", e))
        .and_then(|()| probe(path).map_err(|e| BadInput(probe_error_message(path, &e))))
        .and_then(|info| {
            // The file made is the one the run writes, not one renamed onto its name since.
            if made_inode.is_some() && info.inode != made_inode {
                return Err(BadInput(format!(
                    "{}: replaced by another file right after hostmax made it; check what is there and run again",
                    path.display()
                )));
            }
            Ok(info)
        });
    // Remove only what hostmax made: never a file renamed onto its name since.
    let still_ours = || std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino())) == made_inode;
    if probed.is_err() && still_ours() {
        let _ = std::fs::remove_file(path);
    }
    probed
}

/// Refuses targets that reach the same storage, unless `allow` (the user's `--allow-overlap`):
/// a partition beside its own disk, two loop devices over one file or its overlapping ranges, a
/// loop device beside its own backing file, devices stacked on one disk range (the same blocks
/// measured twice and counted as two devices; `--verify` would take the other's writes for
/// misdirected blocks). What each target reaches is `hostmax_device::media`'s, the rule the
/// write-safety checks use for mounts and swap; `sysfs` is a stand-in in tests.
pub fn check_overlaps(targets: &[TargetInfo], allow: bool, sysfs: &Sysfs) -> Result<(), BadInput> {
    use hostmax_device::media::{
        loop_backing, read_dm_table, shared_media, MediaSources, MediaUser,
    };
    if allow {
        return Ok(());
    }
    let media = MediaSources::new(sysfs, &read_dm_table, &loop_backing);
    let reach: Vec<_> = targets.iter().map(|t| media.target_extents(t)).collect();
    for (i, (a, (extents, _))) in targets.iter().zip(&reach).enumerate() {
        for (b, (others, _)) in targets.iter().zip(&reach).skip(i + 1) {
            let other = MediaUser::new(String::new(), None, others.clone());
            let Some((_, medium)) = shared_media(extents, &[], &[], std::slice::from_ref(&other))
                .into_iter()
                .next()
            else {
                continue;
            };
            let name = |t: &TargetInfo| {
                identity(t).and_then(|id| match id {
                    Identity::Device(major, minor) => sysfs.kernel_name((major, minor)),
                    Identity::Inode(..) => None,
                })
            };
            let (first, second) = (a.path.display(), b.path.display());
            let partition_of = |p: &TargetInfo, d: &TargetInfo| {
                name(p)
                    .and_then(|n| sysfs.partition_disk(&n))
                    .is_some_and(|disk| name(d).as_deref() == Some(disk.as_str()))
            };
            let what = if partition_of(b, a) {
                format!("{second} is a partition of {first}, also given")
            } else if partition_of(a, b) {
                format!("{first} is a partition of {second}, also given")
            } else {
                format!("{first} and {second} reach the same storage ({medium})")
            };
            return Err(BadInput(format!(
                "{what}: the same blocks would be measured twice; drop one, or add --allow-overlap to measure both"
            )));
        }
    }
    Ok(())
}

fn identity(info: &TargetInfo) -> Option<Identity> {
    match (info.kind, info.rdev) {
        (TargetKind::BlockDevice, Some((major, minor))) => Some(Identity::Device(major, minor)),
        _ => {
            let meta = std::fs::metadata(&info.path).ok()?;
            if meta.file_type().is_block_device() {
                let rdev = meta.rdev();
                return Some(Identity::Device(libc::major(rdev), libc::minor(rdev)));
            }
            Some(Identity::Inode(meta.dev(), meta.ino()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_beside_its_disk_is_refused_unless_allowed() {
        use std::os::unix::fs::symlink;
        // A stand-in sysfs: disk 8:0 (sda) with partition 8:1 (sda1), and disk 8:16 (sdb).
        let sys = ScratchDir::new("overlap-sys");
        let block = sys.0.join("devices/block");
        for (dir, dev) in [("sda", "8:0"), ("sda/sda1", "8:1"), ("sdb", "8:16")] {
            std::fs::create_dir_all(block.join(dir)).unwrap();
            std::fs::write(block.join(dir).join("dev"), format!("{dev}\n")).unwrap();
        }
        std::fs::write(block.join("sda/sda1/partition"), "1\n").unwrap();
        std::fs::create_dir_all(sys.0.join("dev/block")).unwrap();
        std::fs::create_dir_all(sys.0.join("class/block")).unwrap();
        for (dev, dir) in [("8:0", "sda"), ("8:1", "sda/sda1"), ("8:16", "sdb")] {
            symlink(block.join(dir), sys.0.join("dev/block").join(dev)).unwrap();
            let name = dir.rsplit('/').next().unwrap();
            symlink(block.join(dir), sys.0.join("class/block").join(name)).unwrap();
        }
        let sysfs = Sysfs::at(&sys.0);
        let target = |path: &str, rdev: (u32, u32)| {
            TargetInfo::new(path, TargetKind::BlockDevice, 1 << 20, 512)
                .with_device(rdev, path.strip_prefix("/dev/").unwrap_or(path))
        };
        let (sda, sda1, sdb) = (
            target("/dev/sda", (8, 0)),
            target("/dev/sda1", (8, 1)),
            target("/dev/sdb", (8, 16)),
        );
        let err = check_overlaps(&[sda.clone(), sdb.clone(), sda1.clone()], false, &sysfs)
            .unwrap_err()
            .0;
        assert!(
            err.contains("/dev/sda1 is a partition of /dev/sda") && err.contains("--allow-overlap"),
            "{err}"
        );
        check_overlaps(&[sda.clone(), sda1.clone()], true, &sysfs).unwrap();
        check_overlaps(&[sda1, sdb.clone()], false, &sysfs).unwrap();
        check_overlaps(&[sda, sdb], false, &sysfs).unwrap();
    }

    #[test]
    fn permission_denied_names_the_likely_cause_for_root_and_the_fix_for_others() {
        let err = ProbeError::Open {
            path: PathBuf::from("/dev/sdz"),
            source: std::io::Error::from_raw_os_error(libc::EPERM),
        };
        let said = probe_error_message(Path::new("/dev/sdz"), &err);
        if nix::unistd::geteuid().is_root() {
            assert!(
                said.contains("although hostmax runs as root")
                    && said.contains("device rules")
                    && said.contains("SELinux, AppArmor"),
                "{said}"
            );
        } else {
            assert!(said.contains("run as root"), "{said}");
        }
        assert_eq!(
            duplicate_note(Path::new("/dev/disk/by-id/x"), Path::new("/dev/sdb")),
            "/dev/disk/by-id/x is the same device as /dev/sdb: measured once, as /dev/sdb"
        );
    }
    use crate::test_support::ScratchDir;
    use std::cmp::Ordering;
    use std::fs;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn natural_order_sorts_numbers_by_value() {
        let mut names = vec!["loop10", "loop2", "loop1", "loop02", "sdb", "sda", "loop"];
        names.sort_by(|a, b| natural_cmp(OsStr::new(a), OsStr::new(b)));
        assert_eq!(
            names,
            vec!["loop", "loop1", "loop02", "loop2", "loop10", "sda", "sdb"]
        );
        assert_eq!(
            natural_cmp(
                OsStr::new("a99999999999999999999999"),
                OsStr::new("a100000000000000000000000")
            ),
            Ordering::Less
        );
    }

    #[test]
    fn patterns_expand_in_natural_order_and_literals_stay() {
        let dir = ScratchDir::new("expand");
        for name in ["v10", "v2", "v1"] {
            dir.file(name, 1 << 20);
        }
        let pattern = format!("{}/v*", dir.0.display());
        let literal = dir.0.join("v2");
        let got = expand_device_args(&[literal.clone().into(), pattern.clone().into()]).unwrap();
        let paths: Vec<_> = got.iter().map(|c| c.path.clone()).collect();
        assert_eq!(
            paths,
            vec![
                literal.clone(),
                dir.0.join("v1"),
                dir.0.join("v2"),
                dir.0.join("v10")
            ]
        );
        assert_eq!(got[0].from_pattern, None);
        assert_eq!(got[1].from_pattern.as_deref(), Some(pattern.as_str()));
    }

    #[test]
    fn a_pattern_matching_nothing_is_named() {
        let dir = ScratchDir::new("nomatch");
        let pattern = format!("{}/nothing[0-9]", dir.0.display());
        let err = expand_device_args(&os(&[&pattern])).unwrap_err();
        assert!(err.0.contains(&pattern), "{err}");
        assert!(err.0.contains("matches nothing"), "{err}");
        let err = expand_device_args(&os(&["/dev/sd[b-"])).unwrap_err();
        assert!(err.0.contains("malformed"), "{err}");
        let err = expand_device_args(&os(&[""])).unwrap_err();
        assert!(err.0.contains("empty"), "{err}");
    }

    #[test]
    fn a_file_whose_name_looks_like_a_pattern_is_taken_literally() {
        let dir = ScratchDir::new("bracket");
        // `a[1]` would match `a1` as a pattern, and `b[` is no pattern at all.
        dir.file("a1", 1 << 20);
        for name in ["a[1]", "b["] {
            let odd = dir.file(name, 1 << 20);
            let got = expand_device_args(&[odd.clone().into()]).unwrap();
            assert_eq!(got.len(), 1, "{got:?}");
            assert_eq!(got[0].path, odd);
            assert_eq!(got[0].from_pattern, None);
        }
    }

    #[test]
    fn the_same_file_named_twice_counts_once_in_order() {
        let dir = ScratchDir::new("dedupe");
        let a = dir.file("a", 1 << 20);
        let b = dir.file("b", 1 << 20);
        let link = dir.0.join("link-to-a");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let hard = dir.0.join("hard-b");
        fs::hard_link(&b, &hard).unwrap();
        let cands = expand_device_args(&[
            b.clone().into(),
            link.into(),
            a.clone().into(),
            hard.into(),
            dir.0.join("./b").into(),
        ])
        .unwrap();
        let targets = resolve_targets(&cands).unwrap();
        let paths: Vec<_> = targets.iter().map(|t| t.path.clone()).collect();
        assert_eq!(paths, vec![b, a]);
    }

    #[test]
    fn unusable_literals_are_clear_errors() {
        let dir = ScratchDir::new("unusable");
        let missing = dir.0.join("missing");
        let err =
            resolve_targets(&expand_device_args(&[missing.clone().into()]).unwrap()).unwrap_err();
        assert!(
            err.0.contains("does not exist") && err.0.contains("missing"),
            "{err}"
        );
        let err =
            resolve_targets(&expand_device_args(&[dir.0.clone().into()]).unwrap()).unwrap_err();
        assert!(err.0.contains("a directory"), "{err}");
        let err = resolve_targets(&expand_device_args(&os(&["/dev/null"])).unwrap()).unwrap_err();
        assert!(
            err.0.contains("/dev/null") && err.0.contains("character device"),
            "{err}"
        );
        let empty = dir.file("empty", 0);
        let err = resolve_targets(&expand_device_args(&[empty.into()]).unwrap()).unwrap_err();
        assert!(err.0.contains("empty file"), "{err}");
    }

    #[test]
    fn a_pattern_skips_unusable_matches_but_not_all_of_them() {
        let dir = ScratchDir::new("skip");
        fs::create_dir(dir.0.join("t-dir")).unwrap();
        let file = dir.file("t-file", 1 << 20);
        let pattern = format!("{}/t-*", dir.0.display());
        let targets = resolve_targets(&expand_device_args(&os(&[&pattern])).unwrap()).unwrap();
        assert_eq!(targets.len(), 1);
        assert_eq!(targets[0].path, file);

        let only_dirs = format!("{}/t-d*", dir.0.display());
        let err = resolve_targets(&expand_device_args(&os(&[&only_dirs])).unwrap()).unwrap_err();
        assert!(
            err.0.contains(&only_dirs) && err.0.contains("no usable"),
            "{err}"
        );
    }
}
