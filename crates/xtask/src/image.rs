//! The container image: built from the repository's `Containerfile` with podman (or buildah)
//! and saved as an OCI archive, `target/dist/hostmax-VERSION-image.tar`, tagged
//! `localhost/hostmax:VERSION` in the builder's local storage.
//!
//! The image is `FROM scratch`: the static binary, plus the two tools hostmax's safety checks
//! call when they are on PATH (util-linux's `wipefs`, which adds libblkid's signatures to
//! hostmax's own probe, and `dmsetup`, which reads device-mapper tables to find which part of a
//! disk a dm device maps), copied from the Debian host that builds it with the shared
//! libraries they load and their packages' copyright files. Without them the checks would
//! still run, on hostmax's own probe and with every dm device taken to cover its whole disks,
//! but a volume holding a kind of signature only libblkid knows would not be refused.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use hostmax_simhost::find_program;

use crate::{tools, Layout, VERSION};

/// The tools the safety checks call, where the Containerfile expects them.
const TOOLS: [(&str, &str); 2] = [
    ("wipefs", "usr/sbin/wipefs"),
    ("dmsetup", "usr/sbin/dmsetup"),
];

/// The image's name in the builder's storage (podman's `localhost/` for a local build).
pub fn tag() -> String {
    format!("localhost/hostmax:{VERSION}")
}

/// Builds the image around `binary` and saves it to `target/dist/hostmax-VERSION-image.tar`.
pub fn build(layout: &Layout, binary: &Path) -> Result<PathBuf> {
    let Some(builder) = ["podman", "buildah"]
        .into_iter()
        .find(|name| find_program(name).is_some())
    else {
        bail!(
            "building the container image needs podman or buildah (apt-get install podman), \
             or leave it out with 'cargo xtask dist --no-image'"
        );
    };
    println!("building the container image with {builder}");
    let context = layout.work.join("image");
    tools::fresh_dir(&context)?;
    let rootfs = context.join("rootfs");
    let bin = rootfs.join("usr/bin/hostmax");
    tools::make_dirs(bin.parent().unwrap())?;
    std::fs::copy(binary, &bin)?;
    tools::set_mode(&bin, 0o755)?;
    let mut packages = Vec::new();
    for (name, dest) in TOOLS {
        let source = find_program(name).with_context(|| {
            format!(
                "the image carries {name}, which is not installed here (apt-get install {})",
                if name == "wipefs" {
                    "util-linux"
                } else {
                    "dmsetup"
                }
            )
        })?;
        copy_with_libraries(&source, &rootfs.join(dest), &rootfs, &mut packages)?;
    }
    packages.sort();
    packages.dedup();
    // hostmax's own licenses, as the Debian package states them (built just before).
    let own = layout.work.join("deb/usr/share/doc/hostmax/copyright");
    let dest = rootfs.join("usr/share/doc/hostmax/copyright");
    tools::make_dirs(dest.parent().unwrap())?;
    std::fs::copy(&own, &dest).context("the Debian package is built before the image")?;
    for package in &packages {
        let copyright = Path::new("/usr/share/doc").join(package).join("copyright");
        if copyright.exists() {
            let dest = rootfs.join("usr/share/doc").join(package).join("copyright");
            tools::make_dirs(dest.parent().unwrap())?;
            std::fs::copy(&copyright, &dest)?;
        }
    }

    let containerfile = layout.root.join("Containerfile");
    let archive = layout.dist.join(format!("hostmax-{VERSION}-image.tar"));
    let build_args = [
        format!("VERSION={VERSION}"),
        format!("REVISION={}", layout.commit),
    ];
    let mut build = Command::new(builder);
    build.arg(if builder == "podman" { "build" } else { "bud" });
    for arg in &build_args {
        build.arg("--build-arg").arg(arg);
    }
    tools::run(
        build
            .arg("--timestamp")
            .arg(layout.source_date.to_string())
            .arg("--file")
            .arg(&containerfile)
            .arg("--tag")
            .arg(tag())
            .arg(&context),
    )?;
    if builder == "podman" {
        tools::run(
            Command::new("podman")
                .args(["save", "--quiet", "--format", "oci-archive", "--output"])
                .arg(&archive)
                .arg(tag()),
        )?;
    } else {
        let mut dest = std::ffi::OsString::from("oci-archive:");
        dest.push(&archive);
        dest.push(format!(":{}", tag()));
        tools::run(
            Command::new("buildah")
                .args(["push", "--quiet"])
                .arg(tag())
                .arg(dest),
        )?;
    }
    Ok(archive)
}

/// Copies the executable `source` to `dest` and each shared library `ldd` says it loads to the
/// same path under `rootfs`, noting the Debian packages they came from.
fn copy_with_libraries(
    source: &Path,
    dest: &Path,
    rootfs: &Path,
    packages: &mut Vec<String>,
) -> Result<()> {
    let mut files = vec![(source.to_path_buf(), dest.to_path_buf())];
    let ldd = tools::output(Command::new("ldd").arg(source))?;
    for line in ldd.lines() {
        // "libblkid.so.1 => /lib/x86_64-linux-gnu/libblkid.so.1 (0x...)" or
        // "/lib64/ld-linux-x86-64.so.2 (0x...)"; the vDSO has no file.
        let path = match line.split_once("=>") {
            Some((_, right)) => right.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(path) = path.filter(|p| p.starts_with('/')) {
            files.push((
                PathBuf::from(path),
                rootfs.join(path.trim_start_matches('/')),
            ));
        }
    }
    for (from, to) in files {
        tools::make_dirs(to.parent().unwrap())?;
        // Through symlinks: the file a name resolves to, under that name.
        std::fs::copy(&from, &to).with_context(|| format!("copying {}", from.display()))?;
        if let Some(package) = owning_package(&from) {
            packages.push(package);
        }
    }
    Ok(())
}

/// The Debian package that installed `path` (`dpkg -S`; with merged /usr, dpkg may know the
/// file under its other name).
fn owning_package(path: &Path) -> Option<String> {
    let mut names = vec![path.to_path_buf()];
    if let Ok(real) = path.canonicalize() {
        names.push(real.clone());
        if let Ok(rest) = real.strip_prefix("/usr") {
            names.push(Path::new("/").join(rest));
        }
    }
    names.iter().find_map(|name| {
        let out = tools::output(Command::new("dpkg").arg("-S").arg(name)).ok()?;
        let first = out.lines().next()?;
        let package = first.split(':').next()?.trim();
        (!package.is_empty() && !package.contains(' ')).then(|| package.to_string())
    })
}
