//! hostmax-device inspects block devices and regular files before anything writes to them:
//! what a target is, what it carries, who uses it, and whether a write may touch it. It does
//! no I/O beyond reading (the one exception, an exclusive open, writes nothing).
//!
//! - [`probe`] reads a target into a [`TargetInfo`] ([`TargetKind`], size, logical block size
//!   or a file's `O_DIRECT` alignment, device number, kernel name); [`ProbeError`] says why not.
//! - [`safety`] decides which targets a write workload must not touch (mounted, held, swap, the
//!   root filesystem, claimed by another exclusive opener, reaching a device or file another
//!   process writes, or carrying data without consent:
//!   [`WriteSafety`]); [`check_write_safety`] returns one [`WriteRefused`] naming every refused
//!   target and reason. The system state comes from [`SystemSources`].
//! - [`probe_device`] finds on-disk signatures (partition tables, filesystems, RAID, LVM, LUKS,
//!   ZFS, swap, storage stacks' labels) by their magic numbers (read-only, `O_DIRECT`-aligned
//!   reads), and [`probe_with_blkid`] also through libblkid where util-linux is installed;
//!   [`Signature`] is one finding. The checks are magic numbers plus the cheapest sanity
//!   checks; they do not verify checksums, so an unchecked signature errs on the side of
//!   refusing.
//! - [`links`] is the rule for symbolic links on the way to a target or an output: one in a
//!   sticky, world-writable directory (`/tmp`) that belongs to another user is never followed
//!   ([`follow_trusted_links`], [`UntrustedLink`]; the kernel's `protected_symlinks` rule,
//!   whatever that setting says). [`probe`] applies it to every target.
//! - [`identity`] reads what a target is whatever it is called today ([`DeviceIdentity`]:
//!   WWID, serial, by-id names, a loop device's backing file, a file's inode).
//! - [`Sysfs`] is where sysfs is (`/sys`, or a stand-in tree in tests) and the one way its
//!   files are read, including the partition-to-disk resolver ([`Sysfs::whole_disk`]) and
//!   the kernel's own count of a device's I/Os ([`KernelCounts`], [`Sysfs::io_counts`]);
//!   [`QueueMap`] is a disk's blk-mq queue map and [`numa_node_cpus`] its NUMA node's CPUs;
//!   [`parse_cpu_list`] and [`format_cpu_list`]
//!   read and write the kernel's CPU lists ([`CpuListError`]).
//! - [`open_exclusive`] opens a block device with `O_EXCL`, waiting out a claim of a moment.
//! - [`DeviceReads`] is how the checks read a device, each wait bounded by a [`Patience`] (a
//!   device that stopped answering is named, not waited on); [`BlockingReads`] is the
//!   unbounded default, hostmax-engine's `UringReads` the bounded one.
//!
//! # Example
//!
//! Whether a write may touch a scratch file (a block device such as `/dev/sdb` is checked the
//! same way, and also for mounts, holders, swap, the root filesystem and signatures):
//!
//! ```
//! use std::io::Write;
//!
//! use hostmax_device::{check_write_safety, probe, ConsentWords, SystemSources, WriteSafety};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let path = std::env::temp_dir().join(format!("hostmax-device-doc-{}.img", std::process::id()));
//! let mut file = std::fs::File::create(&path)?;
//! file.write_all(b"data worth keeping")?;
//! file.set_len(1 << 20)?;
//! file.sync_all()?;
//!
//! let target = probe(&path)?;
//! let sources = SystemSources::default();
//! // A file that holds data needs consent before a workload writes it.
//! let refused = check_write_safety(&[target.clone()], WriteSafety::default(), &sources)
//!     .expect_err("no consent given");
//! // `Display` names the consent as the library field; a tool says its own option name.
//! println!("{refused}");
//! let flags = ConsentWords::new("--allow-write", "--force", "--allow-write --force");
//! println!("{}", refused.message(&flags));
//!
//! let consent = WriteSafety::default().with_allow_write(true);
//! check_write_safety(&[target], consent, &sources)?;
//! std::fs::remove_file(&path)?;
//! # Ok(())
//! # }
//! ```
//!
//! # Growing without breaking you
//!
//! Every public struct with public fields is `#[non_exhaustive]`: outside this crate you build
//! one with its `new` or [`Default`] and the chaining `with_*` setters
//! ([`WriteSafety::default`] then [`WriteSafety::with_allow_write`], [`TargetInfo::new`],
//! [`ConsentWords::new`]), never a struct literal; its fields stay public, to read and to
//! assign on a value you hold. Every public enum that may gain variants ([`ProbeError`],
//! [`RefusalReason`], [`Signature`], [`TargetKind`], ...) is `#[non_exhaustive]`: give a
//! `match` on it a `_` arm. So a new field or variant is not a breaking change.
//!
//! # Cargo features
//!
//! - `test-hooks` (off by default): makes public the signature probe's insides the
//!   repository's own tests and fuzzers use (`detect` over a `DiskView`, `probe_bytes`,
//!   `parse_wipefs_json`, ...). They are not part of the stable API.

#![warn(missing_docs)]

// The README's example is compiled and run as a doc test too, so it cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

mod claim;
mod cpu_list;
mod device_reads;
pub mod identity;
pub mod links;
mod loop_status;
pub mod media;
mod queue_map;
pub mod safety;
mod signature;
mod sysfs;
mod target;
mod writers;

pub use claim::{open_exclusive, EXCLUSIVE_OPEN_PATIENCE};
pub use cpu_list::{format_cpu_list, parse_cpu_list, CpuListError, MAX_CPU};
pub use device_reads::{
    call_off_waits_by, BlockingReads, DeviceReads, Patience, PROGRAM_PATIENCE, READ_PATIENCE,
};
pub use identity::DeviceIdentity;
pub use links::{follow_trusted_links, UntrustedLink};
pub use loop_status::{loop_backings, LoopBacking};
pub use queue_map::{numa_node_cpus, QueueMap};
pub use safety::{
    check_write_safety, recheck_while_held, ConsentWords, Refusal, RefusalReason, SystemSources,
    WriteRefused, WriteSafety,
};
pub use signature::{
    probe_device, probe_with_blkid, probe_with_blkid_within, ExtVersion, FatKind, MagicKind,
    Signature,
};
pub use sysfs::{KernelCounts, Sysfs};
pub use target::{probe, verify_opened, ProbeError, TargetChanged, TargetInfo, TargetKind};

// Test hooks: the repository's tests and fuzzers feed the signature probe bytes and wipefs
// output directly. Not part of the stable API: the non-default `test-hooks` feature turns
// them on, and they may change in any release.
#[cfg(feature = "test-hooks")]
pub use signature::{
    detect, parse_wipefs_json, probe_bytes, read_view, read_view_within, tail_offset,
    wipefs_signatures, DiskView, WipefsEntry, HEAD_BYTES,
};
