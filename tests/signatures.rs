//! Signatures at libblkid's level: images of 24 kinds, made with the real tools (mkfs.* from
//! Debian's packages, installed when missing) or by hand where no tool installs (Ceph
//! BlueStore, Oracle ASM, VDO, DRBD), are each refused for writing without `--force` and named
//! in the one-line message, and every signature util-linux's `wipefs -n` reports on them is
//! named too. The images are plain files on tmpfs (a file that holds data follows the block
//! device rules), so one hostmax run checks them all, and none of them is written.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use support::*;

const MIB: u64 = 1 << 20;

/// How one image is made.
enum Maker {
    /// `binary` from Debian's `package`, run with `args` then the image path, on a sparse file
    /// of `size` bytes.
    Tool {
        binary: &'static str,
        package: &'static str,
        args: &'static [&'static str],
        size: u64,
    },
    /// An image written from a directory (`binary args... DIR IMAGE` or `IMAGE DIR`).
    FromDir {
        binary: &'static str,
        package: &'static str,
        image_first: bool,
        args: &'static [&'static str],
    },
    /// Written by hand: `(offset, bytes)` into a sparse file of `size` bytes.
    ByHand {
        size: u64,
        at: fn(u64) -> Vec<(u64, Vec<u8>)>,
    },
}

struct Case {
    name: &'static str,
    /// What the refusal must say about it.
    named: &'static str,
    maker: Maker,
}

const fn tool(
    binary: &'static str,
    package: &'static str,
    args: &'static [&'static str],
    size: u64,
) -> Maker {
    Maker::Tool {
        binary,
        package,
        args,
        size,
    }
}

fn cases() -> Vec<Case> {
    let case = |name, named, maker| Case { name, named, maker };
    vec![
        case(
            "ext4",
            "an ext4 filesystem",
            tool("mkfs.ext4", "e2fsprogs", &["-q", "-F"], 16 * MIB),
        ),
        case(
            "xfs",
            "an XFS filesystem",
            tool("mkfs.xfs", "xfsprogs", &["-q", "-f"], 320 * MIB),
        ),
        case(
            "btrfs",
            "a Btrfs filesystem",
            tool("mkfs.btrfs", "btrfs-progs", &["-q", "-f"], 128 * MIB),
        ),
        case(
            "vfat",
            "a FAT",
            tool("mkfs.vfat", "dosfstools", &[], 16 * MIB),
        ),
        case(
            "exfat",
            "an exFAT filesystem",
            tool("mkfs.exfat", "exfatprogs", &[], 16 * MIB),
        ),
        case(
            "ntfs",
            "an NTFS filesystem",
            tool("mkntfs", "ntfs-3g", &["-q", "-F", "-Q"], 16 * MIB),
        ),
        case(
            "f2fs",
            "an F2FS filesystem",
            tool("mkfs.f2fs", "f2fs-tools", &["-q", "-f"], 64 * MIB),
        ),
        case(
            "jfs",
            "a JFS filesystem",
            tool("mkfs.jfs", "jfsutils", &["-q"], 64 * MIB),
        ),
        case(
            "reiserfs",
            "a ReiserFS filesystem",
            tool("mkreiserfs", "reiserfsprogs", &["-q", "-f", "-f"], 64 * MIB),
        ),
        case(
            "nilfs2",
            "a NILFS2 filesystem",
            tool("mkfs.nilfs2", "nilfs-tools", &["-q", "-f"], 256 * MIB),
        ),
        case(
            "udf",
            "a UDF filesystem",
            tool("mkudffs", "udftools", &[], 16 * MIB),
        ),
        case(
            "bcache",
            "a bcache device",
            tool("make-bcache", "bcache-tools", &["-B"], 16 * MIB),
        ),
        case(
            "ocfs2",
            "an OCFS2 cluster filesystem",
            tool(
                "mkfs.ocfs2",
                "ocfs2-tools",
                &["-q", "-F", "-M", "local"],
                256 * MIB,
            ),
        ),
        case(
            "gfs2",
            "a GFS2 cluster filesystem",
            tool(
                "mkfs.gfs2",
                "gfs2-utils",
                &["-q", "-O", "-p", "lock_nolock"],
                256 * MIB,
            ),
        ),
        case(
            "swap",
            "a swap area",
            tool("mkswap", "util-linux", &["-q"], 16 * MIB),
        ),
        case(
            "luks2",
            "a LUKS2 encrypted volume",
            tool(
                "cryptsetup",
                "cryptsetup-bin",
                &[
                    "luksFormat",
                    "-q",
                    "--type",
                    "luks2",
                    "--pbkdf",
                    "pbkdf2",
                    "--pbkdf-force-iterations",
                    "1000",
                    "--key-file",
                    "/proc/self/cmdline",
                ],
                32 * MIB,
            ),
        ),
        case(
            "squashfs",
            "a SquashFS image",
            Maker::FromDir {
                binary: "mksquashfs",
                package: "squashfs-tools",
                image_first: false,
                args: &["-noappend", "-quiet"],
            },
        ),
        case(
            "erofs",
            "an EROFS image",
            Maker::FromDir {
                binary: "mkfs.erofs",
                package: "erofs-utils",
                image_first: true,
                args: &["--quiet"],
            },
        ),
        case(
            "gpt",
            "a GPT partition table",
            Maker::ByHand {
                size: 16 * MIB,
                at: |_| Vec::new(),
            },
        ),
        case(
            "dos",
            "an MBR (DOS) partition table",
            Maker::ByHand {
                size: 16 * MIB,
                at: |_| Vec::new(),
            },
        ),
        case(
            "bluestore",
            "a Ceph BlueStore OSD label",
            Maker::ByHand {
                size: 16 * MIB,
                at: |_| vec![(0, b"bluestore block device\n".to_vec())],
            },
        ),
        case(
            "asm",
            "an Oracle ASM disk label (ORCLDISK)",
            Maker::ByHand {
                size: 16 * MIB,
                at: |_| vec![(32, b"ORCLDISK".to_vec())],
            },
        ),
        case(
            "vdo",
            "a VDO volume",
            Maker::ByHand {
                size: 16 * MIB,
                at: |_| vec![(0, b"dmvdo001".to_vec())],
            },
        ),
        case(
            "drbd",
            "DRBD metadata",
            // DRBD 9 internal metadata: its magic 60 bytes into the block 4 KiB before the end.
            Maker::ByHand {
                size: 16 * MIB,
                at: |size| {
                    vec![(
                        (size & !4095) - 4096 + 60,
                        0x8374_026du32.to_be_bytes().to_vec(),
                    )]
                },
            },
        ),
    ]
}

fn run(binary: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new(binary)
        .args(args)
        .output()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} {args:?}: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn sparse(path: &Path, size: u64) {
    std::fs::File::create(path)
        .and_then(|f| f.set_len(size))
        .unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
}

/// Makes one image; `Err` only when its tool cannot be had.
fn make(case: &Case, dir: &ScratchDir) -> Result<PathBuf, String> {
    let image = dir.join(&format!("{}.img", case.name));
    let path = image.to_str().unwrap();
    match &case.maker {
        Maker::Tool {
            binary,
            package,
            args,
            size,
        } => {
            let bin = require_tool(binary, package)?;
            sparse(&image, *size);
            let mut all = args.to_vec();
            all.push(path);
            run(&bin, &all).unwrap_or_else(|e| panic!("making {}: {e}", case.name));
        }
        Maker::FromDir {
            binary,
            package,
            image_first,
            args,
        } => {
            let bin = require_tool(binary, package)?;
            let content = dir.join(&format!("{}.d", case.name));
            std::fs::create_dir_all(&content).unwrap();
            std::fs::write(content.join("a"), b"some data").unwrap();
            let content = content.to_str().unwrap().to_string();
            let mut all: Vec<&str> = args.to_vec();
            if *image_first {
                all.extend([path, &content]);
            } else {
                all.splice(0..0, [content.as_str(), path]);
            }
            run(&bin, &all).unwrap_or_else(|e| panic!("making {}: {e}", case.name));
        }
        Maker::ByHand { size, at } => {
            use std::os::unix::fs::FileExt;
            sparse(&image, *size);
            if matches!(case.name, "gpt" | "dos") {
                let sfdisk = require_tool("sfdisk", "fdisk")?;
                let label = if case.name == "gpt" {
                    "label: gpt\n,1M\n"
                } else {
                    ",1M\n"
                };
                let mut child = Command::new(sfdisk)
                    .args(["-q", path])
                    .stdin(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(label.as_bytes())
                    .unwrap();
                assert!(child.wait().unwrap().success(), "sfdisk {}", case.name);
            }
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&image)
                .unwrap();
            for (offset, bytes) in at(*size) {
                file.write_all_at(&bytes, offset).unwrap();
            }
        }
    }
    Ok(image)
}

/// libblkid's kinds as `wipefs` prints them, and how hostmax's message names each one.
fn named_in(kind: &str, segment: &str) -> bool {
    let lower = segment.to_lowercase();
    let needles: &[&str] = match kind {
        "dos" => &["mbr", "fat", "ntfs"],
        "PMBR" => &["gpt"],
        "crypto_LUKS" => &["luks"],
        "ceph_bluestore" => &["bluestore"],
        "oracleasm" => &["oracle asm"],
        "linux_raid_member" => &["md raid"],
        "LVM2_member" => &["lvm2"],
        "vfat" => &["fat"],
        _ => &[],
    };
    lower.contains(&kind.to_lowercase()) || needles.iter().any(|n| lower.contains(n))
}

/// The types `wipefs -n` reports on `image`.
fn wipefs_kinds(wipefs: &Path, image: &Path) -> Vec<String> {
    let out = Command::new(wipefs)
        .args(["--no-act", "--json"])
        .arg(image)
        .output()
        .expect("run wipefs");
    assert!(out.status.success(), "wipefs {}", image.display());
    hostmax_device::parse_wipefs_json(&String::from_utf8_lossy(&out.stdout))
        .expect("wipefs JSON")
        .into_iter()
        .map(|e| e.kind)
        .collect()
}

#[test]
fn every_kind_libblkid_reports_is_refused_without_force_and_named() {
    let dir = ScratchDir::new("signatures");
    let mut made: Vec<(&Case, PathBuf)> = Vec::new();
    let cases = cases();
    for case in &cases {
        match make(case, &dir) {
            Ok(image) => made.push((case, image)),
            Err(why) => say_skipped(&format!("{}: {why}", case.name)),
        }
    }
    assert!(made.len() >= 20, "only {} kinds could be made", made.len());
    let before: Vec<SystemTime> = made
        .iter()
        .map(|(_, p)| std::fs::metadata(p).unwrap().modified().unwrap())
        .collect();

    let mut args = vec!["--devices".to_string()];
    args.extend(made.iter().map(|(_, p)| p.display().to_string()));
    args.extend(
        [
            "--rw",
            "randwrite",
            "--allow-write",
            "--bs",
            "4k",
            "--runtime",
            "1s",
            "--ramp",
            "0s",
        ]
        .map(String::from),
    );
    let out = run_hostmax(&args, None);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.matches('\n').count(), 1, "not one line: {stderr}");
    assert!(out.stdout.is_empty(), "{stderr}");

    let wipefs = require_tool("wipefs", "util-linux").ok();
    if wipefs.is_none() {
        say_skipped("wipefs is not installed: no oracle, only hostmax's own names are checked");
    }
    for ((case, image), mtime) in made.iter().zip(&before) {
        let shown = image.display().to_string();
        let segment = stderr
            .split("; ")
            .find(|s| s.contains(&format!("{shown} ")))
            .unwrap_or_else(|| panic!("{} is not refused: {stderr}", case.name));
        assert!(
            segment.contains(case.named),
            "{}: lacks '{}': {segment}",
            case.name,
            case.named
        );
        assert!(segment.contains("--force"), "{}: {segment}", case.name);
        if let Some(wipefs) = &wipefs {
            let kinds = wipefs_kinds(wipefs, image);
            for kind in &kinds {
                assert!(
                    named_in(kind, segment),
                    "{}: wipefs finds {kind}, hostmax says: {segment}",
                    case.name
                );
            }
        }
        let now = std::fs::metadata(image).unwrap().modified().unwrap();
        assert_eq!(now, *mtime, "{} was written", case.name);
    }
}

/// A kind only libblkid knows (hostmax's own probe does not) is still refused and named by
/// libblkid's type: an HFS+ volume header that libblkid accepts.
#[test]
fn a_kind_only_libblkid_knows_is_named_by_its_type() {
    let Ok(mkfs) = require_tool("mkfs.minix", "util-linux") else {
        skip!("mkfs.minix cannot be had");
    };
    if require_tool("wipefs", "util-linux").is_err() {
        skip!("wipefs cannot be had: there is no libblkid to ask");
    }
    let dir = ScratchDir::new("blkid-only");
    let image = dir.join("minix.img");
    sparse(&image, 16 * MIB);
    run(&mkfs, &[image.to_str().unwrap()]).unwrap();
    let args: Vec<String> = [
        "--devices",
        image.to_str().unwrap(),
        "--rw",
        "randwrite",
        "--allow-write",
        "--runtime",
        "1s",
        "--ramp",
        "0s",
    ]
    .map(String::from)
    .to_vec();
    let out = run_hostmax(&args, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("carries a minix signature (libblkid, at offset 0x410)"),
        "{stderr}"
    );
}
