//! On-disk signatures: whether a block device carries a partition table, a filesystem, RAID,
//! LVM, LUKS, ZFS, swap or a storage stack's label, found by the known magic numbers (what
//! blkid looks for first), and by util-linux's libblkid itself through `wipefs` where it is
//! installed ([`probe_with_blkid`]: libblkid knows about a hundred kinds; this probe is the
//! fallback without it, and its findings are kept either way).
//!
//! [`Signature`] is one finding; [`DiskView`] is the part of a device that holds them (its first
//! [`HEAD_BYTES`] and its last few hundred KiB, where the trailing superblocks live);
//! [`detect`] looks for every signature in a view. [`probe_device`] reads the view from a
//! device (read-only, with `O_DIRECT`-aligned reads: nothing is ever written) and
//! `probe_bytes` takes a whole image in memory (unit tests and the fuzzer).
//!
//! The checks are magic numbers plus the cheapest sanity checks that keep boot code and random
//! data from looking like a table; they do not verify checksums, so an unchecked signature
//! errs on the side of refusing.

use std::fmt;
use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::device_reads::{BlockingReads, DeviceReads, Patience};

/// Bytes read from a device's start: every leading signature, ZFS's first two labels included.
pub const HEAD_BYTES: u64 = 512 << 10;

/// ZFS label size: four labels, two at the start, two at the end of the 256 KiB-aligned size.
const ZFS_LABEL: u64 = 256 << 10;

/// Alignment (and length granule) of the reads, fine for `O_DIRECT` on any logical block size
/// up to 4 KiB.
const READ_ALIGN: u64 = 4096;

/// Which ext family member a superblock describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExtVersion {
    /// No journal, no ext4 features.
    Ext2,
    /// A journal, no ext4 features.
    Ext3,
    /// Extents, 64bit, flex_bg, metadata checksums or another ext4 feature.
    Ext4,
    /// An external ext3/4 journal device.
    JournalDevice,
}

/// The FAT variant a boot sector names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FatKind {
    /// `FAT12   ` at offset 54.
    Fat12,
    /// `FAT16   ` at offset 54.
    Fat16,
    /// `FAT     ` at offset 54 (mkfs tools that leave the size out).
    Fat,
    /// `FAT32   ` at offset 82.
    Fat32,
}

/// One signature found on a device.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Signature {
    /// A GPT header (`EFI PART`) at LBA 1 for the given sector size, or only the backup
    /// header in the last sector.
    Gpt {
        /// 512 or 4096.
        sector_size: u32,
        /// Only the backup header (at the device's end) was found.
        backup_only: bool,
    },
    /// A protective MBR (type 0xEE) without a GPT header where one should be.
    ProtectiveMbr,
    /// A DOS/MBR partition table with this many non-empty entries.
    Mbr {
        /// Non-empty primary entries (1 to 4).
        partitions: usize,
    },
    /// An ext2/3/4 superblock (`0xEF53` at 1024 + 56).
    Ext(ExtVersion),
    /// An XFS superblock (`XFSB` at 0).
    Xfs,
    /// A Btrfs superblock (`_BHRfS_M` at 64 KiB + 64).
    Btrfs,
    /// A FAT boot sector.
    Fat(FatKind),
    /// An exFAT boot sector (`EXFAT   ` at 3).
    ExFat,
    /// An NTFS boot sector (`NTFS    ` at 3).
    Ntfs,
    /// An ISO 9660 volume descriptor (`CD001` at 32769).
    Iso9660,
    /// A Linux md RAID superblock of this metadata version (`0.90`, `1.0`, `1.1`, `1.2`).
    MdRaid {
        /// The metadata version its position and header give.
        version: &'static str,
    },
    /// An LVM2 physical-volume label (`LABELONE` ... `LVM2 001` in sectors 0-3).
    Lvm2,
    /// A LUKS header (`LUKS\xba\xbe` at 0) of this version.
    Luks {
        /// 1 or 2 (0 when the version field is something else).
        version: u16,
    },
    /// A ZFS label (uberblock magic `0x00bab10c`).
    Zfs,
    /// A swap area (`SWAPSPACE2` or `SWAP-SPACE` at the end of the first page).
    Swap {
        /// The page size the signature sits at the end of.
        page_size: u32,
    },
    /// A hibernation image in a swap area (`S1SUSPEND`, `S2SUSPEND`).
    SwapHibernation,
    /// One of the kinds found by a magic number alone (cluster filesystems, storage stacks'
    /// labels, read-only images).
    Magic(MagicKind),
    /// A signature only util-linux's libblkid (through `wipefs`) knows.
    Blkid {
        /// libblkid's name of the kind (`hfsplus`, `vmfs_volume_member`, ...).
        kind: String,
        /// Byte offset of its magic.
        offset: u64,
    },
}

/// Kinds that one magic number at a fixed place identifies (the offsets libblkid probes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MagicKind {
    /// F2FS superblock (`0xF2F52010` at 1 KiB).
    F2fs,
    /// bcache backing or cache device (its 16-byte magic at 4 KiB + 24).
    Bcache,
    /// Ceph BlueStore OSD label (`bluestore block device` at 0).
    BlueStore,
    /// Oracle ASM disk (`ORCLDISK` at 32).
    OracleAsm,
    /// VDO volume geometry (`dmvdo001` at 0).
    Vdo,
    /// DRBD 8.x/9.x internal metadata (its magic 4 KiB before the 4 KiB-aligned end).
    Drbd,
    /// JFS superblock (`JFS1` at 32 KiB).
    Jfs,
    /// ReiserFS superblock (`ReIsErFs`/`ReIsEr2Fs`/`ReIsEr3Fs` at 64 KiB + 52, or 8 KiB + 52).
    ReiserFs,
    /// NILFS2 superblock (`0x3434` at 1 KiB + 6, revision 2).
    Nilfs2,
    /// SquashFS image (`hsqs` at 0).
    Squashfs,
    /// EROFS image (`0xE0F5E1E2` at 1 KiB).
    Erofs,
    /// OCFS2 superblock (`OCFSV2` at 1, 2, 4 or 8 KiB).
    Ocfs2,
    /// GFS2 superblock (`0x01161970` at 64 KiB, type 1).
    Gfs2,
    /// UDF volume recognition sequence (`NSR02`/`NSR03` from 32 KiB + 1).
    Udf,
}

impl MagicKind {
    /// What the user reads.
    pub fn describe(self) -> &'static str {
        match self {
            MagicKind::F2fs => "an F2FS filesystem",
            MagicKind::Bcache => "a bcache device",
            MagicKind::BlueStore => "a Ceph BlueStore OSD label",
            MagicKind::OracleAsm => "an Oracle ASM disk label (ORCLDISK)",
            MagicKind::Vdo => "a VDO volume",
            MagicKind::Drbd => "DRBD metadata",
            MagicKind::Jfs => "a JFS filesystem",
            MagicKind::ReiserFs => "a ReiserFS filesystem",
            MagicKind::Nilfs2 => "a NILFS2 filesystem",
            MagicKind::Squashfs => "a SquashFS image",
            MagicKind::Erofs => "an EROFS image",
            MagicKind::Ocfs2 => "an OCFS2 cluster filesystem",
            MagicKind::Gfs2 => "a GFS2 cluster filesystem",
            MagicKind::Udf => "a UDF filesystem",
        }
    }

    /// libblkid's name of the kind (what `blkid -p` and `wipefs` print as its type), as a
    /// one-name list.
    pub fn blkid_names(self) -> &'static [&'static str] {
        match self {
            MagicKind::F2fs => &["f2fs"],
            MagicKind::Bcache => &["bcache"],
            MagicKind::BlueStore => &["ceph_bluestore"],
            MagicKind::OracleAsm => &["oracleasm"],
            MagicKind::Vdo => &["vdo"],
            MagicKind::Drbd => &["drbd"],
            MagicKind::Jfs => &["jfs"],
            MagicKind::ReiserFs => &["reiserfs"],
            MagicKind::Nilfs2 => &["nilfs2"],
            MagicKind::Squashfs => &["squashfs"],
            MagicKind::Erofs => &["erofs"],
            MagicKind::Ocfs2 => &["ocfs2"],
            MagicKind::Gfs2 => &["gfs2"],
            MagicKind::Udf => &["udf"],
        }
    }
}

impl Signature {
    /// The libblkid type names this finding stands for, so a `wipefs` finding of the same kind
    /// is not listed twice (a GPT also covers its protective MBR; a FAT, exFAT or NTFS boot
    /// sector covers the `dos` marker libblkid sees at its end).
    pub fn blkid_names(&self) -> &'static [&'static str] {
        match self {
            Signature::Gpt { .. } | Signature::ProtectiveMbr => &["gpt", "PMBR"],
            Signature::Mbr { .. } => &["dos"],
            Signature::Ext(_) => &["ext2", "ext3", "ext4", "ext4dev", "jbd"],
            Signature::Xfs => &["xfs"],
            Signature::Btrfs => &["btrfs"],
            Signature::Fat(_) => &["vfat", "msdos", "dos"],
            Signature::ExFat => &["exfat", "dos"],
            Signature::Ntfs => &["ntfs", "dos"],
            Signature::Iso9660 => &["iso9660"],
            Signature::MdRaid { .. } => &["linux_raid_member"],
            Signature::Lvm2 => &["LVM2_member"],
            Signature::Luks { .. } => &["crypto_LUKS"],
            Signature::Zfs => &["zfs_member"],
            Signature::Swap { .. } => &["swap"],
            Signature::SwapHibernation => &["swsuspend", "swap"],
            // UDF images also carry an ISO 9660 descriptor set for old readers.
            Signature::Magic(MagicKind::Udf) => &["udf", "iso9660"],
            Signature::Magic(kind) => kind.blkid_names(),
            Signature::Blkid { .. } => &[],
        }
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Signature::Gpt {
                sector_size,
                backup_only: false,
            } => write!(f, "a GPT partition table ({sector_size}-byte sectors)"),
            Signature::Gpt {
                sector_size,
                backup_only: true,
            } => write!(
                f,
                "a GPT partition table (backup header only, {sector_size}-byte sectors)"
            ),
            Signature::ProtectiveMbr => f.write_str("a GPT protective MBR"),
            Signature::Mbr { partitions: 1 } => f.write_str("an MBR (DOS) partition table"),
            Signature::Mbr { partitions } => write!(
                f,
                "an MBR (DOS) partition table with {partitions} partitions"
            ),
            Signature::Ext(ExtVersion::Ext2) => f.write_str("an ext2 filesystem"),
            Signature::Ext(ExtVersion::Ext3) => f.write_str("an ext3 filesystem"),
            Signature::Ext(ExtVersion::Ext4) => f.write_str("an ext4 filesystem"),
            Signature::Ext(ExtVersion::JournalDevice) => f.write_str("an ext3/4 journal"),
            Signature::Xfs => f.write_str("an XFS filesystem"),
            Signature::Btrfs => f.write_str("a Btrfs filesystem"),
            Signature::Fat(FatKind::Fat12) => f.write_str("a FAT12 filesystem"),
            Signature::Fat(FatKind::Fat16) => f.write_str("a FAT16 filesystem"),
            Signature::Fat(FatKind::Fat) => f.write_str("a FAT filesystem"),
            Signature::Fat(FatKind::Fat32) => f.write_str("a FAT32 filesystem"),
            Signature::ExFat => f.write_str("an exFAT filesystem"),
            Signature::Ntfs => f.write_str("an NTFS filesystem"),
            Signature::Iso9660 => f.write_str("an ISO 9660 filesystem"),
            Signature::MdRaid { version } => {
                write!(f, "an md RAID member (metadata {version})")
            }
            Signature::Lvm2 => f.write_str("an LVM2 physical volume"),
            Signature::Luks { version: 0 } => f.write_str("a LUKS encrypted volume"),
            Signature::Luks { version } => write!(f, "a LUKS{version} encrypted volume"),
            Signature::Zfs => f.write_str("a ZFS pool member"),
            Signature::Swap { .. } => f.write_str("a swap area"),
            Signature::SwapHibernation => f.write_str("a hibernation image (swap)"),
            Signature::Magic(kind) => f.write_str(kind.describe()),
            Signature::Blkid { kind, offset } => {
                write!(f, "a {kind} signature (libblkid, at offset {offset:#x})")
            }
        }
    }
}

/// The parts of a device where signatures live: its first bytes and its last bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskView {
    /// The device size in bytes.
    pub size: u64,
    /// Bytes from offset 0 (up to [`HEAD_BYTES`], fewer on a smaller device).
    pub head: Vec<u8>,
    /// Where `tail` starts.
    pub tail_offset: u64,
    /// Bytes from `tail_offset` to the end (empty when `head` already covers the device).
    pub tail: Vec<u8>,
}

impl DiskView {
    /// A view of a whole image held in memory.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn of_image(image: &[u8]) -> DiskView {
        DiskView {
            size: image.len() as u64,
            head: image.to_vec(),
            tail_offset: image.len() as u64,
            tail: Vec::new(),
        }
    }

    /// `len` bytes at `offset`, if the view holds all of them.
    pub fn bytes(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let end = offset.checked_add(len as u64)?;
        if end > self.size {
            return None;
        }
        slice_at(&self.head, 0, offset, len)
            .or_else(|| slice_at(&self.tail, self.tail_offset, offset, len))
    }

    fn matches(&self, offset: u64, magic: &[u8]) -> bool {
        self.bytes(offset, magic.len()) == Some(magic)
    }

    fn u16_le(&self, offset: u64) -> Option<u16> {
        self.bytes(offset, 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32_le(&self, offset: u64) -> Option<u32> {
        self.bytes(offset, 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// `len` bytes at device offset `offset` from `buf`, which holds the device from `start`.
fn slice_at(buf: &[u8], start: u64, offset: u64, len: usize) -> Option<&[u8]> {
    let from = usize::try_from(offset.checked_sub(start)?).ok()?;
    buf.get(from..from.checked_add(len)?)
}

/// Where the tail window of a device of `size` bytes starts: low enough for ZFS's last two
/// labels, md 0.90 and 1.0 superblocks and a backup GPT header, aligned for `O_DIRECT`.
pub fn tail_offset(size: u64) -> u64 {
    let zfs = (size / ZFS_LABEL * ZFS_LABEL).saturating_sub(2 * ZFS_LABEL);
    let md_090 = md_090_offset(size).unwrap_or(size);
    let md_10 = md_10_offset(size).unwrap_or(size);
    let last_4k = size.saturating_sub(4096);
    let start = zfs.min(md_090).min(md_10).min(last_4k);
    start / READ_ALIGN * READ_ALIGN
}

/// md 0.90: 64 KiB at the last 64 KiB boundary, less 64 KiB.
fn md_090_offset(size: u64) -> Option<u64> {
    (size & !0xffff).checked_sub(0x10000)
}

/// md 1.0: 8 KiB from the end, on a 4 KiB boundary.
fn md_10_offset(size: u64) -> Option<u64> {
    Some(((size >> 9).checked_sub(16)? & !7) << 9)
}

/// Every signature in `view`, in a fixed order (partition tables, filesystems, RAID and
/// volume managers, swap).
pub fn detect(view: &DiskView) -> Vec<Signature> {
    let mut found = Vec::new();
    let boot_sector_fs = detect_boot_sector_fs(view);
    detect_partition_table(view, boot_sector_fs.is_some(), &mut found);
    found.extend(boot_sector_fs);
    detect_ext(view, &mut found);
    if view.matches(0, b"XFSB") {
        found.push(Signature::Xfs);
    }
    if view.matches(65536 + 64, b"_BHRfS_M") {
        found.push(Signature::Btrfs);
    }
    if view.matches(32769, b"CD001") {
        found.push(Signature::Iso9660);
    }
    detect_md(view, &mut found);
    detect_lvm2(view, &mut found);
    if view.matches(0, b"LUKS\xba\xbe") {
        let version = view
            .bytes(6, 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .filter(|v| (1..=2).contains(v))
            .unwrap_or(0);
        found.push(Signature::Luks { version });
    }
    if detect_zfs(view) {
        found.push(Signature::Zfs);
    }
    detect_swap(view, &mut found);
    found.extend(detect_magic(view).into_iter().map(Signature::Magic));
    found
}

/// The kinds [`MagicKind`] names, each found by its magic and the cheapest sanity check.
fn detect_magic(view: &DiskView) -> Vec<MagicKind> {
    const BCACHE: [u8; 16] = [
        0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d,
        0x81,
    ];
    let u32_be = |at: u64| {
        view.bytes(at, 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let reiser = |at: u64| {
        [&b"ReIsErFs"[..], b"ReIsEr2Fs", b"ReIsEr3Fs"]
            .iter()
            .any(|m| view.matches(at, m))
    };
    let drbd = (view.size & !4095)
        .checked_sub(4096)
        .is_some_and(|md| matches!(u32_be(md + 60), Some(0x8374_026b..=0x8374_026d)));
    let udf = (0..16u64).any(|k| {
        let at = 32769 + 2048 * k;
        view.matches(at, b"NSR02") || view.matches(at, b"NSR03")
    });
    let checks = [
        (MagicKind::F2fs, view.u32_le(1024) == Some(0xf2f5_2010)),
        (MagicKind::Bcache, view.matches(4096 + 24, &BCACHE)),
        (
            MagicKind::BlueStore,
            view.matches(0, b"bluestore block device"),
        ),
        (MagicKind::OracleAsm, view.matches(32, b"ORCLDISK")),
        (MagicKind::Vdo, view.matches(0, b"dmvdo001")),
        (MagicKind::Drbd, drbd),
        (MagicKind::Jfs, view.matches(32768, b"JFS1")),
        (MagicKind::ReiserFs, reiser(65536 + 52) || reiser(8192 + 52)),
        (
            MagicKind::Nilfs2,
            view.u16_le(1024 + 6) == Some(0x3434) && view.u32_le(1024) == Some(2),
        ),
        (
            MagicKind::Squashfs,
            view.matches(0, b"hsqs") || view.matches(0, b"sqsh"),
        ),
        (MagicKind::Erofs, view.u32_le(1024) == Some(0xe0f5_e1e2)),
        (
            MagicKind::Ocfs2,
            [1024u64, 2048, 4096, 8192]
                .iter()
                .any(|&at| view.matches(at, b"OCFSV2")),
        ),
        (
            MagicKind::Gfs2,
            u32_be(65536) == Some(0x0116_1970) && u32_be(65536 + 4) == Some(1),
        ),
        (MagicKind::Udf, udf),
    ];
    checks
        .into_iter()
        .filter_map(|(kind, hit)| hit.then_some(kind))
        .collect()
}

/// One signature `wipefs --json` reports: libblkid's type name and the magic's byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WipefsEntry {
    /// libblkid's name of the kind (`ext4`, `gpt`, `ceph_bluestore`).
    pub kind: String,
    /// Where its magic is.
    pub offset: u64,
}

/// Parses what `wipefs --no-act --json DEV` prints: nothing when the device carries no
/// signature, else `{"signatures": [{"offset": "0x438", "type": "ext4", ...}, ...]}`.
pub fn parse_wipefs_json(text: &str) -> Result<Vec<WipefsEntry>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let root: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let list = root
        .get("signatures")
        .and_then(|v| v.as_array())
        .ok_or("no \"signatures\" list")?;
    list.iter()
        .map(|entry| {
            let kind = entry
                .get("type")
                .and_then(|v| v.as_str())
                .filter(|t| !t.is_empty() && !t.contains(['\n', '\r']))
                .ok_or("a signature without a type")?;
            let offset = entry
                .get("offset")
                .and_then(|v| v.as_str())
                .and_then(|o| o.strip_prefix("0x"))
                .and_then(|hex| u64::from_str_radix(hex, 16).ok())
                .ok_or("a signature without a hex offset")?;
            Ok(WipefsEntry {
                kind: kind.to_string(),
                offset,
            })
        })
        .collect()
}

/// Asks util-linux's `wipefs` (libblkid, read-only: `--no-act`, no erase option) for every
/// signature on `path`, waiting for it at most [`Patience::program`]. `None` when wipefs is
/// not installed or cannot answer (too old for `--json`, or it failed): the caller then has
/// only [`probe_device`].
///
/// # Errors
///
/// [`io::ErrorKind::TimedOut`] when wipefs did not finish in time (it is killed, and left to
/// the kernel if a device read holds it), [`io::ErrorKind::Interrupted`] when the wait was
/// called off.
pub fn wipefs_signatures(path: &Path, patience: &Patience) -> io::Result<Option<Vec<WipefsEntry>>> {
    let spawned = std::process::Command::new("wipefs")
        .args(["--no-act", "--json"])
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(child) = spawned else {
        return Ok(None);
    };
    let out = patience.wait_for(child, &format!("wipefs --no-act {}", path.display()))?;
    if !out.status.success() {
        return Ok(None);
    }
    Ok(parse_wipefs_json(&String::from_utf8_lossy(&out.stdout)).ok())
}

/// Every signature on `path`: this probe's findings, then each kind libblkid (through
/// `wipefs`, where installed) finds that this probe did not, once per kind. Unbounded:
/// [`probe_with_blkid_within`] keeps a bound.
pub fn probe_with_blkid(path: &Path) -> io::Result<Vec<Signature>> {
    probe_with_blkid_within(path, &BlockingReads, &Patience::default())
}

/// [`probe_with_blkid`] reading through `reads`, with every wait bounded by `patience`.
///
/// # Errors
///
/// A device read or wipefs that did not finish in time ([`io::ErrorKind::TimedOut`]), or a
/// wait called off ([`io::ErrorKind::Interrupted`]), as `read_view_within` and
/// `wipefs_signatures` say.
pub fn probe_with_blkid_within(
    path: &Path,
    reads: &dyn DeviceReads,
    patience: &Patience,
) -> io::Result<Vec<Signature>> {
    let mut found = detect(&read_view_within(path, reads, patience)?);
    for entry in wipefs_signatures(path, patience)?.unwrap_or_default() {
        let known = found
            .iter()
            .any(|s| s.blkid_names().contains(&entry.kind.as_str()))
            || found
                .iter()
                .any(|s| matches!(s, Signature::Blkid { kind, .. } if *kind == entry.kind));
        if !known {
            found.push(Signature::Blkid {
                kind: entry.kind,
                offset: entry.offset,
            });
        }
    }
    Ok(found)
}

/// FAT, exFAT or NTFS in sector 0 (their boot sectors also end in 0x55AA, like an MBR).
fn detect_boot_sector_fs(view: &DiskView) -> Option<Signature> {
    if view.matches(3, b"NTFS    ") {
        return Some(Signature::Ntfs);
    }
    if view.matches(3, b"EXFAT   ") {
        return Some(Signature::ExFat);
    }
    if !view.matches(510, &[0x55, 0xaa]) {
        return None;
    }
    // Bytes per sector: a power of two from 512 to 4096 in every FAT boot sector.
    let bps = view.u16_le(11)?;
    if !matches!(bps, 512 | 1024 | 2048 | 4096) {
        return None;
    }
    if view.matches(82, b"FAT32   ") {
        return Some(Signature::Fat(FatKind::Fat32));
    }
    let kind = match view.bytes(54, 8)? {
        b"FAT12   " => FatKind::Fat12,
        b"FAT16   " => FatKind::Fat16,
        b"FAT     " => FatKind::Fat,
        _ => return None,
    };
    Some(Signature::Fat(kind))
}

fn detect_partition_table(view: &DiskView, boot_sector_fs: bool, found: &mut Vec<Signature>) {
    let gpt = [512u32, 4096]
        .into_iter()
        .find(|&s| view.matches(u64::from(s), b"EFI PART"));
    let backup = || {
        [512u32, 4096].into_iter().find(|&s| {
            view.size >= 2 * u64::from(s) && view.matches(view.size - u64::from(s), b"EFI PART")
        })
    };
    let mut protective = false;
    let mut mbr_partitions = 0;
    if !boot_sector_fs && view.matches(510, &[0x55, 0xaa]) {
        if let Some(table) = view.bytes(446, 64) {
            let entries: Vec<&[u8]> = table.chunks(16).collect();
            // A boot flag other than 0x00/0x80 means this is boot code, not a table.
            if entries.iter().all(|e| e[0] == 0 || e[0] == 0x80) {
                protective = entries.iter().any(|e| e[4] == 0xee);
                mbr_partitions = entries.iter().filter(|e| e[4] != 0).count();
            }
        }
    }
    if let Some(sector_size) = gpt {
        found.push(Signature::Gpt {
            sector_size,
            backup_only: false,
        });
    } else if let Some(sector_size) = backup() {
        found.push(Signature::Gpt {
            sector_size,
            backup_only: true,
        });
    } else if protective {
        found.push(Signature::ProtectiveMbr);
    }
    if !protective && mbr_partitions > 0 {
        found.push(Signature::Mbr {
            partitions: mbr_partitions,
        });
    }
}

fn detect_ext(view: &DiskView, found: &mut Vec<Signature>) {
    const SB: u64 = 1024;
    if view.u16_le(SB + 56) != Some(0xef53) {
        return;
    }
    let compat = view.u32_le(SB + 92).unwrap_or(0);
    let incompat = view.u32_le(SB + 96).unwrap_or(0);
    let ro_compat = view.u32_le(SB + 100).unwrap_or(0);
    // As blkid: a journal device; else ext4 when a feature beyond ext3's set is on
    // (ext3 knows incompat filetype|recover|meta_bg and ro_compat sparse_super|large_file|btree_dir).
    let version = if incompat & 0x0008 != 0 {
        ExtVersion::JournalDevice
    } else if incompat & !0x0016 != 0 || ro_compat & !0x0007 != 0 {
        ExtVersion::Ext4
    } else if compat & 0x0004 != 0 {
        ExtVersion::Ext3
    } else {
        ExtVersion::Ext2
    };
    found.push(Signature::Ext(version));
}

fn detect_md(view: &DiskView, found: &mut Vec<Signature>) {
    const MAGIC: u32 = 0xa92b_4efc;
    let v1_at =
        |offset: u64| view.u32_le(offset) == Some(MAGIC) && view.u32_le(offset + 4) == Some(1);
    if v1_at(4096) {
        found.push(Signature::MdRaid { version: "1.2" });
    }
    if v1_at(0) {
        found.push(Signature::MdRaid { version: "1.1" });
    }
    if md_10_offset(view.size).is_some_and(v1_at) {
        found.push(Signature::MdRaid { version: "1.0" });
    }
    // 0.90 is in the host's byte order: accept either.
    let v090 = md_090_offset(view.size).is_some_and(|at| {
        let le = view.u32_le(at) == Some(MAGIC) && view.u32_le(at + 4) == Some(0);
        let be = view.bytes(at, 4) == Some(&MAGIC.to_be_bytes()[..])
            && view.bytes(at + 4, 4) == Some(&[0, 0, 0, 0][..]);
        le || be
    });
    if v090 {
        found.push(Signature::MdRaid { version: "0.90" });
    }
}

fn detect_lvm2(view: &DiskView, found: &mut Vec<Signature>) {
    let labelled = (0..4u64).any(|sector| {
        let at = sector * 512;
        view.matches(at, b"LABELONE") && view.matches(at + 24, b"LVM2 001")
    });
    if labelled {
        found.push(Signature::Lvm2);
    }
}

/// An uberblock magic in the uberblock ring (the second half) of any of the four labels.
fn detect_zfs(view: &DiskView) -> bool {
    const MAGIC: u64 = 0x00ba_b10c;
    let aligned = view.size / ZFS_LABEL * ZFS_LABEL;
    if aligned < 2 * ZFS_LABEL {
        return false;
    }
    let labels = [0, ZFS_LABEL, aligned - 2 * ZFS_LABEL, aligned - ZFS_LABEL];
    labels.iter().any(|&label| {
        (0..128u64).any(|slot| {
            let at = label + ZFS_LABEL / 2 + slot * 1024;
            view.bytes(at, 8).is_some_and(|b| {
                b == MAGIC.to_le_bytes().as_slice() || b == MAGIC.to_be_bytes().as_slice()
            })
        })
    })
}

fn detect_swap(view: &DiskView, found: &mut Vec<Signature>) {
    for page_size in [4096u32, 8192, 16384, 65536] {
        let at = u64::from(page_size) - 10;
        if view.matches(at, b"SWAPSPACE2") || view.matches(at, b"SWAP-SPACE") {
            found.push(Signature::Swap { page_size });
            return;
        }
        if view.matches(at, b"S1SUSPEND\0") || view.matches(at, b"S2SUSPEND\0") {
            found.push(Signature::SwapHibernation);
            return;
        }
    }
}

/// Every signature in a whole image held in memory.
#[cfg(any(test, feature = "test-hooks"))]
pub fn probe_bytes(image: &[u8]) -> Vec<Signature> {
    detect(&DiskView::of_image(image))
}

/// Reads a device's signature areas: opened read-only, nothing is written. Uses `O_DIRECT`
/// with aligned reads (the page cache may hold stale blocks another program wrote around
/// it), and falls back to buffered reads where `O_DIRECT` is refused. Reads in this thread,
/// unbounded ([`BlockingReads`]); [`read_view_within`] keeps a bound.
pub fn read_view(path: &Path) -> io::Result<DiskView> {
    read_view_within(path, &BlockingReads, &Patience::default())
}

/// [`read_view`] with every read through `reads`, each waiting at most as `patience` says: a
/// device that stopped answering is an error ([`io::ErrorKind::TimedOut`]), not a wait.
pub fn read_view_within(
    path: &Path,
    reads: &dyn DeviceReads,
    patience: &Patience,
) -> io::Result<DiskView> {
    let direct = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT | libc::O_CLOEXEC)
        .open(path);
    let mut file = match direct {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => File::open(path)?,
        Err(e) => return Err(e),
    };
    let size = file.seek(SeekFrom::End(0))?;
    let head_len = size.min(HEAD_BYTES);
    let read = |offset: u64, len: u64| -> io::Result<Vec<u8>> {
        let len = usize::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        if len == 0 {
            return Ok(Vec::new());
        }
        match reads.read_exact_at(&file, offset, len, patience) {
            // A length `O_DIRECT` does not take (the end of a device whose size is only a
            // multiple of 512): read buffered.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                reads.read_exact_at(&File::open(path)?, offset, len, patience)
            }
            other => other,
        }
    };
    let head = read(0, head_len)?;
    // The windows may overlap on a small device; a device no larger than the head has none.
    let tail_offset = if size <= head_len {
        size
    } else {
        tail_offset(size)
    };
    let tail = read(tail_offset, size - tail_offset)?;
    Ok(DiskView {
        size,
        head,
        tail_offset,
        tail,
    })
}

/// Every on-disk signature of the device or image file at `path` (read-only).
pub fn probe_device(path: &Path) -> io::Result<Vec<Signature>> {
    Ok(detect(&read_view(path)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    const MIB: usize = 1 << 20;

    fn image(size: usize, writes: &[(usize, &[u8])]) -> Vec<u8> {
        let mut img = vec![0u8; size];
        for (at, bytes) in writes {
            img[*at..*at + bytes.len()].copy_from_slice(bytes);
        }
        img
    }

    fn one(img: &[u8]) -> Signature {
        let found = probe_bytes(img);
        assert_eq!(found.len(), 1, "{found:?}");
        found[0].clone()
    }

    fn mbr_entry(boot: u8, kind: u8) -> [u8; 16] {
        let mut e = [0u8; 16];
        e[0] = boot;
        e[4] = kind;
        e[8..12].copy_from_slice(&2048u32.to_le_bytes());
        e[12..16].copy_from_slice(&4096u32.to_le_bytes());
        e
    }

    #[test]
    fn a_blank_device_carries_nothing() {
        assert!(probe_bytes(&vec![0u8; 4 * MIB]).is_empty());
        assert!(probe_bytes(&[]).is_empty());
        assert!(probe_bytes(&[0x55, 0xaa]).is_empty());
        // Random-looking data without any magic.
        let noise: Vec<u8> = (0..MIB as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert!(probe_bytes(&noise).is_empty());
    }

    #[test]
    fn gpt_at_lba1_for_512_and_4096_sectors_and_backup_only() {
        let img = image(MIB, &[(512, b"EFI PART")]);
        assert_eq!(
            one(&img),
            Signature::Gpt {
                sector_size: 512,
                backup_only: false
            }
        );
        let img = image(MIB, &[(4096, b"EFI PART")]);
        assert_eq!(
            one(&img),
            Signature::Gpt {
                sector_size: 4096,
                backup_only: false
            }
        );
        let img = image(MIB, &[(MIB - 512, b"EFI PART")]);
        assert_eq!(
            one(&img).to_string(),
            "a GPT partition table (backup header only, 512-byte sectors)"
        );
        // With its protective MBR, a GPT is one finding, not two.
        let pmbr = mbr_entry(0, 0xee);
        let img = image(
            MIB,
            &[(446, &pmbr), (510, &[0x55, 0xaa]), (512, b"EFI PART")],
        );
        assert_eq!(
            one(&img).to_string(),
            "a GPT partition table (512-byte sectors)"
        );
        // A protective MBR whose GPT header is gone still marks the device.
        let img = image(MIB, &[(446, &pmbr), (510, &[0x55, 0xaa])]);
        assert_eq!(one(&img), Signature::ProtectiveMbr);
    }

    #[test]
    fn mbr_needs_a_non_empty_entry_and_sane_boot_flags() {
        let linux = mbr_entry(0x80, 0x83);
        let swap = mbr_entry(0, 0x82);
        let img = image(MIB, &[(446, &linux), (462, &swap), (510, &[0x55, 0xaa])]);
        assert_eq!(one(&img), Signature::Mbr { partitions: 2 });
        assert_eq!(
            one(&img).to_string(),
            "an MBR (DOS) partition table with 2 partitions"
        );
        // 0x55AA with four empty entries is not a table.
        assert!(probe_bytes(&image(MIB, &[(510, &[0x55, 0xaa])])).is_empty());
        // Boot code in the table area (boot flag 0x33) is not a table.
        let code = mbr_entry(0x33, 0x83);
        assert!(probe_bytes(&image(MIB, &[(446, &code), (510, &[0x55, 0xaa])])).is_empty());
        // Entries without the 0x55AA marker are not a table.
        assert!(probe_bytes(&image(MIB, &[(446, &linux)])).is_empty());
    }

    fn ext_image(compat: u32, incompat: u32, ro_compat: u32) -> Vec<u8> {
        image(
            MIB,
            &[
                (1024 + 56, &0xef53u16.to_le_bytes()),
                (1024 + 92, &compat.to_le_bytes()),
                (1024 + 96, &incompat.to_le_bytes()),
                (1024 + 100, &ro_compat.to_le_bytes()),
            ],
        )
    }

    #[test]
    fn ext_versions_follow_the_feature_flags() {
        assert_eq!(
            one(&ext_image(0, 0x2, 0x1)),
            Signature::Ext(ExtVersion::Ext2)
        );
        assert_eq!(
            one(&ext_image(0x4, 0x2, 0x3)),
            Signature::Ext(ExtVersion::Ext3)
        );
        // extents | 64bit | flex_bg, and metadata_csum alone.
        assert_eq!(
            one(&ext_image(0x4, 0x2c2, 0x1)),
            Signature::Ext(ExtVersion::Ext4)
        );
        assert_eq!(
            one(&ext_image(0x4, 0x2, 0x400)),
            Signature::Ext(ExtVersion::Ext4)
        );
        assert_eq!(
            one(&ext_image(0, 0x8, 0)),
            Signature::Ext(ExtVersion::JournalDevice)
        );
        assert_eq!(
            one(&ext_image(0x4, 0x2c2, 0x1)).to_string(),
            "an ext4 filesystem"
        );
    }

    #[test]
    fn real_mkfs_ext4_and_mkswap_images_are_recognized() {
        let dir = std::env::temp_dir().join(format!("hostmax-sig-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        struct Cleanup(std::path::PathBuf);
        impl Drop for Cleanup {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let _cleanup = Cleanup(dir.clone());
        let run = |tool: &str, args: &[&str], file: &Path| {
            std::fs::File::create(file)
                .unwrap()
                .set_len(16 * MIB as u64)
                .unwrap();
            let out = Command::new(tool).args(args).arg(file).output();
            match out {
                Ok(o) if o.status.success() => true,
                Ok(o) => panic!("{tool}: {}", String::from_utf8_lossy(&o.stderr)),
                Err(e) => {
                    eprintln!("skipped {tool}: {e}");
                    false
                }
            }
        };
        let ext4 = dir.join("ext4.img");
        if run("mkfs.ext4", &["-q", "-F"], &ext4) {
            assert_eq!(
                probe_device(&ext4).unwrap(),
                vec![Signature::Ext(ExtVersion::Ext4)]
            );
        }
        let ext2 = dir.join("ext2.img");
        if run("mkfs.ext2", &["-q", "-F"], &ext2) {
            assert_eq!(
                probe_device(&ext2).unwrap(),
                vec![Signature::Ext(ExtVersion::Ext2)]
            );
        }
        let swap = dir.join("swap.img");
        if run("mkswap", &["-q"], &swap) {
            assert_eq!(
                probe_device(&swap).unwrap(),
                vec![Signature::Swap { page_size: 4096 }]
            );
        }
    }

    #[test]
    fn storage_stack_labels_and_cluster_filesystems_by_magic_alone() {
        let drbd_at = 16 * MIB - 4096 + 60;
        let bcache = [
            0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba,
            0x6d, 0x81,
        ];
        type Writes = Vec<(usize, Vec<u8>)>;
        let cases: Vec<(MagicKind, Writes)> = vec![
            (
                MagicKind::F2fs,
                vec![(1024, 0xf2f5_2010u32.to_le_bytes().to_vec())],
            ),
            (MagicKind::Bcache, vec![(4096 + 24, bcache.to_vec())]),
            (
                MagicKind::BlueStore,
                vec![(0, b"bluestore block device\n".to_vec())],
            ),
            (MagicKind::OracleAsm, vec![(32, b"ORCLDISK".to_vec())]),
            (MagicKind::Vdo, vec![(0, b"dmvdo001".to_vec())]),
            (
                MagicKind::Drbd,
                vec![(drbd_at, 0x8374_026bu32.to_be_bytes().to_vec())],
            ),
            (MagicKind::Jfs, vec![(32768, b"JFS1".to_vec())]),
            (
                MagicKind::ReiserFs,
                vec![(65536 + 52, b"ReIsEr2Fs".to_vec())],
            ),
            (
                MagicKind::Nilfs2,
                vec![
                    (1024, 2u32.to_le_bytes().to_vec()),
                    (1030, vec![0x34, 0x34]),
                ],
            ),
            (MagicKind::Squashfs, vec![(0, b"hsqs".to_vec())]),
            (
                MagicKind::Erofs,
                vec![(1024, 0xe0f5_e1e2u32.to_le_bytes().to_vec())],
            ),
            (MagicKind::Ocfs2, vec![(2048, b"OCFSV2".to_vec())]),
            (
                MagicKind::Gfs2,
                vec![
                    (65536, vec![0x01, 0x16, 0x19, 0x70]),
                    (65540, vec![0, 0, 0, 1]),
                ],
            ),
            (MagicKind::Udf, vec![(32769 + 2048, b"NSR02".to_vec())]),
        ];
        for (kind, writes) in cases {
            let refs: Vec<(usize, &[u8])> = writes.iter().map(|(a, b)| (*a, &b[..])).collect();
            let img = image(16 * MIB, &refs);
            assert_eq!(one(&img), Signature::Magic(kind), "{kind:?}");
            assert_eq!(one(&img).to_string(), kind.describe());
        }
        // NILFS2's two-byte magic alone, without its revision, is not enough.
        assert!(probe_bytes(&image(MIB, &[(1030, &[0x34, 0x34])])).is_empty());
    }

    #[test]
    fn wipefs_json_is_read_and_bad_output_refused() {
        assert_eq!(parse_wipefs_json("").unwrap(), vec![]);
        let text = r#"{"signatures": [
            {"device":"loop3","offset":"0x438","type":"ext4","uuid":"x","label":null},
            {"device":"loop3","offset":"0x1fe","type":"PMBR","uuid":null,"label":null}]}"#;
        assert_eq!(
            parse_wipefs_json(text).unwrap(),
            vec![
                WipefsEntry {
                    kind: "ext4".into(),
                    offset: 0x438
                },
                WipefsEntry {
                    kind: "PMBR".into(),
                    offset: 0x1fe
                }
            ]
        );
        for bad in [
            "nonsense",
            "{}",
            r#"{"signatures": [{"offset": "0x0"}]}"#,
            r#"{"signatures": [{"type": "ext4", "offset": "1080"}]}"#,
            r#"{"signatures": [{"type": "a\nb", "offset": "0x0"}]}"#,
        ] {
            assert!(parse_wipefs_json(bad).is_err(), "{bad}");
        }
        // A kind this probe already names is not listed twice.
        assert!(Signature::Ext(ExtVersion::Ext4)
            .blkid_names()
            .contains(&"ext4"));
        assert!(Signature::ExFat.blkid_names().contains(&"dos"));
    }

    #[test]
    fn xfs_btrfs_iso_ntfs_exfat_luks() {
        assert_eq!(one(&image(MIB, &[(0, b"XFSB")])), Signature::Xfs);
        assert_eq!(
            one(&image(MIB, &[(65536 + 64, b"_BHRfS_M")])),
            Signature::Btrfs
        );
        assert_eq!(one(&image(MIB, &[(32769, b"CD001")])), Signature::Iso9660);
        // NTFS and exFAT boot sectors end in 0x55AA too: no MBR besides.
        let boot = mbr_entry(0x80, 0x07);
        for (magic, sig) in [
            (b"NTFS    ", Signature::Ntfs),
            (b"EXFAT   ", Signature::ExFat),
        ] {
            let img = image(MIB, &[(3, magic), (446, &boot), (510, &[0x55, 0xaa])]);
            assert_eq!(one(&img), sig);
        }
        assert_eq!(
            one(&image(MIB, &[(0, b"LUKS\xba\xbe\x00\x02")])),
            Signature::Luks { version: 2 }
        );
        assert_eq!(
            one(&image(MIB, &[(0, b"LUKS\xba\xbe\x00\x01")])).to_string(),
            "a LUKS1 encrypted volume"
        );
        assert_eq!(
            one(&image(MIB, &[(0, b"LUKS\xba\xbe\x00\x09")])),
            Signature::Luks { version: 0 }
        );
    }

    #[test]
    fn fat_boot_sectors_need_the_marker_and_a_sector_size() {
        let bps = 512u16.to_le_bytes();
        let marker: &[u8] = &[0x55, 0xaa];
        let cases: [(usize, &[u8], FatKind); 4] = [
            (54, b"FAT12   ", FatKind::Fat12),
            (54, b"FAT16   ", FatKind::Fat16),
            (54, b"FAT     ", FatKind::Fat),
            (82, b"FAT32   ", FatKind::Fat32),
        ];
        for (at, name, kind) in cases {
            let img = image(MIB, &[(11, &bps), (at, name), (510, marker)]);
            assert_eq!(one(&img), Signature::Fat(kind));
            // Without 0x55AA, or with a nonsense sector size, it is not FAT.
            assert!(probe_bytes(&image(MIB, &[(11, &bps), (at, name)])).is_empty());
            let odd = 513u16.to_le_bytes();
            assert!(probe_bytes(&image(MIB, &[(11, &odd), (at, name), (510, marker)])).is_empty());
        }
        // A FAT boot sector whose boot code looks like partition entries is FAT only.
        let fake = mbr_entry(0, 0x0c);
        let img = image(
            MIB,
            &[(11, &bps), (82, b"FAT32   "), (446, &fake), (510, marker)],
        );
        assert_eq!(one(&img), Signature::Fat(FatKind::Fat32));
    }

    fn md_header(major: u32) -> Vec<u8> {
        let mut h = 0xa92b_4efcu32.to_le_bytes().to_vec();
        h.extend_from_slice(&major.to_le_bytes());
        h
    }

    #[test]
    fn md_superblocks_at_every_version_position() {
        let size = 4 * MIB + 12 * 1024; // not 64 KiB-aligned, as real partitions often are
        let v1 = md_header(1);
        let v0 = md_header(0);
        let v1_0_at = md_10_offset(size as u64).unwrap() as usize;
        let v0_90_at = md_090_offset(size as u64).unwrap() as usize;
        assert_eq!(v1_0_at, size - 8 * 1024);
        assert_eq!(v0_90_at, 4 * MIB - 64 * 1024);
        for (at, header, version) in [
            (4096, &v1, "1.2"),
            (0, &v1, "1.1"),
            (v1_0_at, &v1, "1.0"),
            (v0_90_at, &v0, "0.90"),
        ] {
            let img = image(size, &[(at, header)]);
            assert_eq!(one(&img), Signature::MdRaid { version }, "at {at}");
        }
        // Big-endian 0.90 (made on a big-endian host).
        let mut be = 0xa92b_4efcu32.to_be_bytes().to_vec();
        be.extend_from_slice(&[0; 4]);
        assert_eq!(
            one(&image(size, &[(v0_90_at, &be)])),
            Signature::MdRaid { version: "0.90" }
        );
        // The magic with a wrong major version is not md.
        assert!(probe_bytes(&image(size, &[(4096, &md_header(7))])).is_empty());
        assert_eq!(
            one(&image(size, &[(4096, &v1)])).to_string(),
            "an md RAID member (metadata 1.2)"
        );
    }

    #[test]
    fn lvm2_label_in_any_of_the_first_four_sectors() {
        for sector in 0..4 {
            let at = sector * 512;
            let img = image(MIB, &[(at, b"LABELONE"), (at + 24, b"LVM2 001")]);
            assert_eq!(one(&img), Signature::Lvm2, "sector {sector}");
        }
        assert!(probe_bytes(&image(
            MIB,
            &[(4 * 512, b"LABELONE"), (4 * 512 + 24, b"LVM2 001")]
        ))
        .is_empty());
        assert!(probe_bytes(&image(MIB, &[(0, b"LABELONE")])).is_empty());
    }

    #[test]
    fn zfs_uberblocks_in_each_label() {
        let size = 4 * MIB + 100 * 1024;
        let aligned = size / (256 << 10) * (256 << 10);
        let magic_le = 0x00ba_b10cu64.to_le_bytes();
        let magic_be = 0x00ba_b10cu64.to_be_bytes();
        for label in [0, 256 << 10, aligned - (512 << 10), aligned - (256 << 10)] {
            for slot in [0usize, 5, 127] {
                let at = label + (128 << 10) + slot * 1024;
                assert_eq!(one(&image(size, &[(at, &magic_le)])), Signature::Zfs);
                assert_eq!(one(&image(size, &[(at, &magic_be)])), Signature::Zfs);
            }
        }
        // Outside the uberblock ring (in the label's nvlist area) it does not count.
        assert!(probe_bytes(&image(size, &[(64 << 10, &magic_le)])).is_empty());
        // Too small for four labels.
        assert!(probe_bytes(&image(256 << 10, &[(128 << 10, &magic_le)])).is_empty());
    }

    #[test]
    fn swap_at_the_end_of_the_first_page() {
        for (page, magic) in [
            (4096, b"SWAPSPACE2"),
            (4096, b"SWAP-SPACE"),
            (65536, b"SWAPSPACE2"),
        ] {
            let img = image(MIB, &[(page - 10, magic)]);
            assert_eq!(
                one(&img),
                Signature::Swap {
                    page_size: page as u32
                }
            );
        }
        assert_eq!(
            one(&image(MIB, &[(4086, b"S1SUSPEND\0")])),
            Signature::SwapHibernation
        );
        assert!(probe_bytes(&image(MIB, &[(4000, b"SWAPSPACE2")])).is_empty());
        assert_eq!(
            one(&image(MIB, &[(4086, b"SWAPSPACE2")])).to_string(),
            "a swap area"
        );
    }

    #[test]
    fn several_signatures_are_all_reported() {
        let img = image(
            MIB,
            &[
                (0, b"XFSB"),
                (1024 + 56, &0xef53u16.to_le_bytes()),
                (4086, b"SWAPSPACE2"),
            ],
        );
        assert_eq!(
            probe_bytes(&img),
            vec![
                Signature::Ext(ExtVersion::Ext2),
                Signature::Xfs,
                Signature::Swap { page_size: 4096 }
            ]
        );
    }

    #[test]
    fn head_and_tail_windows_see_what_the_whole_image_shows() {
        let size = 64 * MIB + 512;
        let magic = 0x00ba_b10cu64.to_le_bytes();
        let aligned = size / (256 << 10) * (256 << 10);
        let img = image(
            size,
            &[
                (aligned - (256 << 10) + (128 << 10), &magic),
                (md_090_offset(size as u64).unwrap() as usize, &md_header(0)),
                (size - 512, b"EFI PART"),
            ],
        );
        let whole = probe_bytes(&img);
        assert_eq!(whole.len(), 3, "{whole:?}");
        let tail_at = tail_offset(size as u64);
        assert_eq!(tail_at % READ_ALIGN, 0);
        let view = DiskView {
            size: size as u64,
            head: img[..HEAD_BYTES as usize].to_vec(),
            tail_offset: tail_at,
            tail: img[tail_at as usize..].to_vec(),
        };
        assert_eq!(detect(&view), whole);
        // A range across the gap between the windows is not served.
        assert_eq!(view.bytes(HEAD_BYTES - 4, 8), None);
        assert_eq!(view.bytes(u64::MAX - 2, 8), None);
    }

    #[test]
    fn read_view_of_a_file_matches_the_image() {
        let path = std::env::temp_dir().join(format!("hostmax-sig-view-{}", std::process::id()));
        let size = 3 * MIB + 4096;
        let img = image(size, &[(512, b"EFI PART"), (size - 8192, &md_header(1))]);
        std::fs::write(&path, &img).unwrap();
        let view = read_view(&path);
        let _ = std::fs::remove_file(&path);
        let view = view.unwrap();
        assert_eq!(view.size, size as u64);
        assert_eq!(detect(&view), probe_bytes(&img));
        assert_eq!(detect(&view).len(), 2);
    }
}
