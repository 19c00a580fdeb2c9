//! hostmax's release tasks, run as `cargo xtask TASK` (the alias in `.cargo/config.toml`; the
//! xtask pattern: a workspace member that is never published).
//!
//! `cargo xtask dist` builds every release artifact of this version into `target/dist/`:
//! - `hostmax-VERSION-x86_64-linux`: one static binary (glibc linked in, `+crt-static`), built
//!   with the `release-dist` profile (release, stripped), that runs on any x86_64 Linux with nothing
//!   else present ([`static_binary`]);
//! - `hostmax_VERSION_amd64.deb`: that binary, a man page per command and bash/zsh/fish
//!   completions generated from the CLI's clap definitions, README, changelog and licenses
//!   ([`deb`]);
//! - `hostmax-VERSION-image.tar`: an OCI image archive built from the repository's
//!   `Containerfile` with podman or buildah, tagged `localhost/hostmax:VERSION` ([`image`]).
//!
//! Each artifact has its SHA-256 beside it (`NAME.sha256`, `sha256sum`'s format, so
//! `sha256sum -c NAME.sha256` checks it). What the artifacts are checked against (an empty
//! root, a fresh Debian root, the image's unpacked root, lintian) is `tests/dist/run.sh`.
//!
//! Builds are reproducible where the tools allow: every date inside comes from
//! `SOURCE_DATE_EPOCH`, else the last commit's time.

#![forbid(unsafe_code)]

mod deb;
mod image;
mod static_binary;
mod tools;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The workspace version: every crate of the workspace, this one included, has it.
const VERSION: &str = env!("CARGO_PKG_VERSION");

const USAGE: &str = "usage: cargo xtask dist [--no-image]

  dist          build the static binary, the Debian package and the container image
                into target/dist/ (each with NAME.sha256 beside it)
  --no-image    leave out the container image (no podman or buildah here)";

/// Where things are, and what this build is.
pub struct Layout {
    /// The workspace root.
    pub root: PathBuf,
    /// Cargo's target directory.
    pub target: PathBuf,
    /// `target/dist`: the artifacts, nothing else.
    pub dist: PathBuf,
    /// `target/dist-work`: what the artifacts are assembled from.
    pub work: PathBuf,
    /// The commit the tree is at (`unknown` outside git), for the image's labels.
    pub commit: String,
    /// Seconds since the epoch every date inside the artifacts is taken from.
    pub source_date: i64,
}

fn main() {
    if let Err(err) = run() {
        eprintln!("xtask: {err:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("dist") => {
            let mut with_image = true;
            for arg in &args[1..] {
                match arg.as_str() {
                    "--no-image" => with_image = false,
                    other => bail!("unknown option '{other}' of dist\n{USAGE}"),
                }
            }
            dist(with_image)
        }
        Some("-h" | "--help") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown task '{other}'\n{USAGE}"),
    }
}

fn dist(with_image: bool) -> Result<()> {
    let layout = Layout::find()?;
    // The artifacts of an earlier version must not be taken for this one's.
    if layout.dist.exists() {
        std::fs::remove_dir_all(&layout.dist)
            .with_context(|| format!("clearing {}", layout.dist.display()))?;
    }
    std::fs::create_dir_all(&layout.dist)?;
    std::fs::create_dir_all(&layout.work)?;

    let binary = static_binary::build(&layout)?;
    tools::write_sha256(&binary)?;
    let package = deb::build(&layout, &binary)?;
    tools::write_sha256(&package)?;
    let mut made = vec![binary, package];
    if with_image {
        let archive = image::build(&layout, &made[0])?;
        tools::write_sha256(&archive)?;
        made.push(archive);
    }
    println!("built into {}:", layout.dist.display());
    for path in made {
        let size = std::fs::metadata(&path)?.len();
        println!(
            "  {:<36} {:>6.1} MiB",
            path.file_name().unwrap_or_default().to_string_lossy(),
            size as f64 / (1u64 << 20) as f64
        );
    }
    Ok(())
}

impl Layout {
    fn find() -> Result<Layout> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .canonicalize()
            .context("finding the workspace root")?;
        let target = match std::env::var_os("CARGO_TARGET_DIR") {
            Some(dir) => root.join(dir),
            None => root.join("target"),
        };
        let commit = tools::output(
            std::process::Command::new("git")
                .arg("-C")
                .arg(&root)
                .args(["rev-parse", "HEAD"]),
        )
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string());
        let source_date = match std::env::var("SOURCE_DATE_EPOCH") {
            Ok(epoch) => epoch
                .trim()
                .parse()
                .context("SOURCE_DATE_EPOCH is not a number of seconds")?,
            Err(_) => tools::output(
                std::process::Command::new("git")
                    .arg("-C")
                    .arg(&root)
                    .args(["log", "-1", "--format=%ct"]),
            )
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs() as i64)
                    .unwrap_or(0)
            }),
        };
        Ok(Layout {
            dist: target.join("dist"),
            work: target.join("dist-work"),
            root,
            target,
            commit,
            source_date,
        })
    }
}
