//! The static x86_64 binary every artifact ships.
//!
//! glibc linked in (`-C target-feature=+crt-static`, a static PIE) rather than musl: this
//! toolchain has only the x86_64 GNU target, and a static glibc binary needs nothing on the
//! host (hostmax resolves no user or host names, so glibc's NSS is never loaded). The target is
//! named explicitly so RUSTFLAGS reach hostmax alone and not the build scripts and proc macros,
//! which run here against this machine's shared glibc.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::{tools, Layout, VERSION};

pub const TARGET: &str = "x86_64-unknown-linux-gnu";

/// Builds hostmax static and copies it to `target/dist/hostmax-VERSION-x86_64-linux`.
pub fn build(layout: &Layout) -> Result<PathBuf> {
    if std::env::consts::ARCH != "x86_64" {
        bail!(
            "the static binary is built for x86_64 on x86_64 only (this is {})",
            std::env::consts::ARCH
        );
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    println!("building the static binary (cargo build --profile release-dist --target {TARGET})");
    tools::run(
        Command::new(cargo)
            .current_dir(&layout.root)
            .args([
                "build",
                "--locked",
                "--profile",
                "release-dist",
                "--package",
                "hostmax",
            ])
            .args(["--bin", "hostmax", "--target", TARGET])
            .env("RUSTFLAGS", "-C target-feature=+crt-static")
            // The flags above are the whole of what this build is.
            .env_remove("CARGO_ENCODED_RUSTFLAGS"),
    )?;
    let built = layout
        .target
        .join(TARGET)
        .join("release-dist")
        .join("hostmax");
    check_static(&built)?;
    let out = layout.dist.join(format!("hostmax-{VERSION}-x86_64-linux"));
    std::fs::copy(&built, &out).with_context(|| format!("copying {}", built.display()))?;
    tools::set_mode(&out, 0o755)?;
    Ok(out)
}

/// Refuses a binary that asks for a dynamic loader (an ELF `PT_INTERP` program header): one
/// that would not start in an empty root.
fn check_static(path: &Path) -> Result<()> {
    let elf = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    match has_interpreter(&elf) {
        Some(false) => Ok(()),
        Some(true) => bail!(
            "{} asks for a dynamic loader: the static build did not take",
            path.display()
        ),
        None => bail!("{} is not a 64-bit little-endian ELF file", path.display()),
    }
}

/// Whether a 64-bit little-endian ELF image names a program interpreter; `None` if `elf` is
/// not one.
fn has_interpreter(elf: &[u8]) -> Option<bool> {
    const PT_INTERP: u32 = 3;
    if elf.get(..4)? != b"\x7fELF" || *elf.get(4)? != 2 || *elf.get(5)? != 1 {
        return None;
    }
    let u16_at = |at: usize| Some(u16::from_le_bytes(elf.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(elf.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(elf.get(at..at + 8)?.try_into().ok()?));
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let phentsize = usize::from(u16_at(0x36)?);
    let phnum = usize::from(u16_at(0x38)?);
    for i in 0..phnum {
        if u32_at(phoff.checked_add(i.checked_mul(phentsize)?)?)? == PT_INTERP {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_a_dynamic_executable_from_a_static_one() {
        // This test's own executable is dynamically linked (the default for the GNU target).
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(has_interpreter(&me), Some(true));
        assert_eq!(has_interpreter(b"#!/bin/sh\n"), None);
        assert_eq!(has_interpreter(b"\x7fELF\x02\x01"), None, "truncated");
    }
}
