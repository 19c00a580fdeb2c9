//! The outside commands the tasks use, each checked, and the small file chores they share.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Runs `cmd`, its output going to ours; an error names the command and how it ended.
pub fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {}", describe(cmd)))?;
    if !status.success() {
        bail!("{} failed ({status})", describe(cmd));
    }
    Ok(())
}

/// Runs `cmd` and returns what it printed on stdout.
pub fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot run {}", describe(cmd)))?;
    if !out.status.success() {
        bail!(
            "{} failed ({}): {}",
            describe(cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn describe(cmd: &Command) -> String {
    let mut words = vec![cmd.get_program().to_string_lossy().into_owned()];
    words.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    format!("'{}'", words.join(" "))
}

/// Writes `PATH.sha256` in `sha256sum`'s format (the hash, two spaces, the file's name), so
/// `sha256sum -c` run beside the file checks it.
pub fn write_sha256(path: &Path) -> Result<()> {
    let dir = path.parent().context("an artifact has a folder")?;
    let name = path.file_name().context("an artifact has a name")?;
    let line = output(Command::new("sha256sum").arg(name).current_dir(dir))?;
    let mut sum = path.as_os_str().to_owned();
    sum.push(".sha256");
    std::fs::write(&sum, line)?;
    Ok(())
}

/// `data` gzipped as `gzip -9n` would (best compression, no name, no time: the same bytes on
/// every build), into `path`.
pub fn write_gzip(path: &Path, data: &[u8]) -> Result<()> {
    let file = std::fs::File::create(path).with_context(|| format!("{}", path.display()))?;
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(file, flate2::Compression::best());
    gz.write_all(data)?;
    gz.finish()?.sync_all()?;
    set_mode(path, 0o644)
}

/// Writes `data` to `path` with `mode`, making its folders (0755) first.
pub fn write_file(path: &Path, data: &[u8], mode: u32) -> Result<()> {
    if let Some(dir) = path.parent() {
        make_dirs(dir)?;
    }
    std::fs::write(path, data).with_context(|| format!("writing {}", path.display()))?;
    set_mode(path, mode)
}

/// Makes `dir` and its parents, 0755 whatever the umask.
pub fn make_dirs(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .with_context(|| format!("making {}", dir.display()))
}

pub fn set_mode(path: &Path, mode: u32) -> Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("chmod {mode:o} {}", path.display()))
}

/// A fresh, empty `dir` (whatever was there is removed).
pub fn fresh_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    make_dirs(dir)
}

/// A date of the build (`date(1)`'s `+FORMAT`, UTC) from seconds since the epoch.
pub fn format_date(epoch: i64, format: &str) -> Result<String> {
    let text = output(
        Command::new("date")
            .env("LC_ALL", "C")
            .args(["-u", "-d"])
            .arg(format!("@{epoch}"))
            .arg(format!("+{format}")),
    )?;
    Ok(text.trim().to_string())
}
