//! The Debian package: `hostmax_VERSION_amd64.deb`, assembled file by file and built with
//! `dpkg-deb` (no debian/ source tree: the binary is already built and tested).
//!
//! It holds the static binary (so it has no dependencies and the same package installs on any
//! Debian or Ubuntu release; a lintian override says the static link is meant), a man page per
//! command and bash/zsh/fish completions generated from the CLI's clap definitions, and under
//! `/usr/share/doc/hostmax/` the README, the project's changelog, a Debian changelog and the
//! licenses in Debian's machine-readable `copyright` format. Every file is mode 0644 (the
//! binary 0755), owned by root, compressed as Debian policy asks (`gzip -9n`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::{tools, Layout, VERSION};

const PACKAGE: &str = "hostmax";
const MAINTAINER: &str = "The hostmax developers <hostmax@users.noreply.github.com>";
const HOMEPAGE: &str = "https://github.com/hostmax/hostmax";

/// Builds `target/dist/hostmax_VERSION_amd64.deb` around `binary`.
pub fn build(layout: &Layout, binary: &Path) -> Result<PathBuf> {
    println!("building the Debian package");
    let root = layout.work.join("deb");
    tools::fresh_dir(&root)?;
    let usr = root.join("usr");

    let bin = usr.join("bin/hostmax");
    tools::make_dirs(bin.parent().unwrap())?;
    std::fs::copy(binary, &bin)?;
    tools::set_mode(&bin, 0o755)?;

    for (name, page) in man_pages(layout.source_date)? {
        tools::make_dirs(&usr.join("share/man/man1"))?;
        tools::write_gzip(
            &usr.join("share/man/man1").join(format!("{name}.gz")),
            &page,
        )?;
    }
    for (path, script) in completions()? {
        tools::write_file(&usr.join(path), &script, 0o644)?;
    }

    let doc = usr.join("share/doc").join(PACKAGE);
    tools::make_dirs(&doc)?;
    tools::write_file(&doc.join("copyright"), copyright(layout)?.as_bytes(), 0o644)?;
    // A native package (the version has no Debian revision): its Debian changelog is
    // changelog.gz; the project's own is beside it under its own name.
    tools::write_gzip(
        &doc.join("changelog.gz"),
        debian_changelog(layout)?.as_bytes(),
    )?;
    for (source, name) in [
        ("README.md", "README.md.gz"),
        ("CHANGELOG.md", "CHANGELOG.md.gz"),
    ] {
        let text =
            std::fs::read(layout.root.join(source)).with_context(|| format!("reading {source}"))?;
        tools::write_gzip(&doc.join(name), &text)?;
    }
    tools::write_file(
        &usr.join("share/lintian/overrides").join(PACKAGE),
        format!(
            "# One static binary for the .deb, the plain download and the image: it runs on\n\
             # every glibc and none, and what was tested is what ships.\n\
             {PACKAGE}: statically-linked-binary [usr/bin/hostmax]\n\
             # A static PIE has a dynamic section (for its own relocations) and needs no library.\n\
             {PACKAGE}: shared-library-lacks-prerequisites [usr/bin/hostmax]\n"
        )
        .as_bytes(),
        0o644,
    )?;

    let debian = root.join("DEBIAN");
    tools::make_dirs(&debian)?;
    let md5sums = tools::output(
        Command::new("sh")
            .arg("-c")
            .arg("find usr -type f | LC_ALL=C sort | xargs md5sum")
            .current_dir(&root),
    )?;
    tools::write_file(&debian.join("md5sums"), md5sums.as_bytes(), 0o644)?;
    let control = control(installed_kib(&usr)?);
    tools::write_file(&debian.join("control"), control.as_bytes(), 0o644)?;

    let out = layout.dist.join(format!("{PACKAGE}_{VERSION}_amd64.deb"));
    tools::run(
        Command::new("dpkg-deb")
            .args(["--root-owner-group", "-Zxz", "--build"])
            .arg(&root)
            .arg(&out)
            .env("SOURCE_DATE_EPOCH", layout.source_date.to_string()),
    )
    .context("dpkg-deb builds the package (apt-get install dpkg if it is missing)")?;
    Ok(out)
}

/// One man page per command (`hostmax.1`, `hostmax-doctor.1`, ...), as (file name, roff).
fn man_pages(source_date: i64) -> Result<Vec<(String, Vec<u8>)>> {
    let date = tools::format_date(source_date, "%Y-%m-%d")?;
    let mut cli = hostmax::args::Cli::command().disable_help_subcommand(true);
    // Sets each subcommand's display name ("hostmax-doctor"), which names its page.
    cli.build();
    let mut pages = Vec::new();
    let mut pending = vec![cli];
    while let Some(cmd) = pending.pop() {
        pending.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
        let man = clap_mangen::Man::new(cmd)
            .date(date.clone())
            .manual("hostmax manual")
            .source(format!("hostmax {VERSION}"));
        let mut page = Vec::new();
        man.render(&mut page)?;
        pages.push((man.get_filename(), page));
    }
    pages.sort();
    Ok(pages)
}

/// The completion scripts, as (path under /usr, script), where each shell looks for a
/// package's completions.
fn completions() -> Result<Vec<(&'static str, Vec<u8>)>> {
    use clap_complete::Shell;
    let mut out = Vec::new();
    for (shell, path) in [
        (Shell::Bash, "share/bash-completion/completions/hostmax"),
        (Shell::Zsh, "share/zsh/vendor-completions/_hostmax"),
        (Shell::Fish, "share/fish/vendor_completions.d/hostmax.fish"),
    ] {
        let mut script = Vec::new();
        clap_complete::generate(
            shell,
            &mut hostmax::args::Cli::command(),
            "hostmax",
            &mut script,
        );
        out.push((path, script));
    }
    Ok(out)
}

/// The size of what the package installs, in KiB as dpkg counts it (each file rounded up).
fn installed_kib(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            installed_kib(&entry.path())?
        } else {
            meta.len().div_ceil(1024)
        };
    }
    Ok(total)
}

fn control(installed_kib: u64) -> String {
    format!(
        "Package: {PACKAGE}\n\
         Version: {VERSION}\n\
         Architecture: amd64\n\
         Maintainer: {MAINTAINER}\n\
         Installed-Size: {installed_kib}\n\
         Section: admin\n\
         Priority: optional\n\
         Homepage: {HOMEPAGE}\n\
         Description: find and verify the maximum storage performance of a host\n \
         hostmax drives every block volume of a host at once with io_uring, from\n \
         worker threads pinned to the CPUs of each device's blk-mq queues, and\n \
         reports per volume and for the whole host the IOPS, throughput and exact\n \
         latency percentiles (HDR histograms merged bin by bin).\n \
         .\n \
         It judges each volume and the host against the promises of a cloud\n \
         provider's volume class, finds the host's knee and its ceiling at a\n \
         latency promise, runs a CloudHarmony-style suite, and merges the reports\n \
         of many hosts. Write tests refuse volumes that are in use or hold data.\n"
    )
}

/// The licenses in Debian's machine-readable copyright format: MIT in full, Apache-2.0 from
/// common-licenses (base-files ships it on every Debian system).
fn copyright(layout: &Layout) -> Result<String> {
    let mit = std::fs::read_to_string(layout.root.join("LICENSE-MIT"))?;
    let year = tools::format_date(layout.source_date, "%Y")?;
    let mit_indented: String = mit
        .trim_end()
        .lines()
        .map(|line| {
            if line.trim().is_empty() {
                " .\n".to_string()
            } else {
                format!(" {line}\n")
            }
        })
        .collect();
    Ok(format!(
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\
         Upstream-Name: hostmax\n\
         Upstream-Contact: {HOMEPAGE}/issues\n\
         Source: {HOMEPAGE}\n\
         \n\
         Files: *\n\
         Copyright: {year} The hostmax developers\n\
         License: MIT or Apache-2.0\n\
         Comment: usr/bin/hostmax is statically linked: it also holds the Rust crates\n \
         its source's Cargo.lock names (each under MIT, Apache-2.0 or a compatible\n \
         license) and the GNU C Library (LGPL-2.1+).\n\
         \n\
         License: MIT\n{mit_indented}\
         \n\
         License: Apache-2.0\n \
         On Debian systems, the complete text of the Apache License, Version 2.0,\n \
         can be found in /usr/share/common-licenses/Apache-2.0.\n"
    ))
}

fn debian_changelog(layout: &Layout) -> Result<String> {
    let date = tools::format_date(layout.source_date, "%a, %d %b %Y %H:%M:%S +0000")?;
    Ok(format!(
        "{PACKAGE} ({VERSION}) unstable; urgency=medium\n\
         \n  \
         * hostmax {VERSION}; what changed is in /usr/share/doc/hostmax/CHANGELOG.md.gz.\n\
         \n \
         -- {MAINTAINER}  {date}\n"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_its_own_man_page() {
        let pages = man_pages(0).unwrap();
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"hostmax.1"), "{names:?}");
        for sub in hostmax::args::Cli::command().get_subcommands() {
            let name = format!("hostmax-{}.1", sub.get_name());
            assert!(names.contains(&name.as_str()), "{name} missing: {names:?}");
        }
        let (_, top) = pages.iter().find(|(n, _)| n == "hostmax.1").unwrap();
        let top = String::from_utf8_lossy(top);
        assert!(top.contains("1970-01-01"), "the build's date, not today's");
        assert!(top.contains("\\-\\-devices"), "the options are listed");
    }

    #[test]
    fn completions_name_the_subcommands() {
        for (path, script) in completions().unwrap() {
            let script = String::from_utf8(script).unwrap();
            assert!(script.contains("doctor"), "{path}");
        }
    }

    #[test]
    fn the_control_file_is_well_formed() {
        let text = control(1234);
        // Every continuation line of the description starts with one space and is short
        // enough for lintian.
        let lines: Vec<&str> = text.lines().collect();
        let desc = lines
            .iter()
            .position(|l| l.starts_with("Description:"))
            .unwrap();
        assert!(lines[desc].len() <= 80);
        for line in &lines[desc + 1..] {
            assert!(line.starts_with(' ') && !line.starts_with("  "), "{line:?}");
            assert!(line.len() <= 80, "{line:?}");
        }
        assert!(text.contains("Installed-Size: 1234\n"));
        assert!(text.ends_with('\n'));
    }
}
