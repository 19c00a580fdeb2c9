//! The outside programs the simulated host runs (`modprobe`), and where it finds them.

use std::path::PathBuf;
use std::process::Command;

/// Loads kernel module `module` with `params` (`modprobe`), where we may (root). `Err` says
/// why it is not loaded, in a few words ("loading it needs root", modprobe's own complaint).
pub(crate) fn load_module(module: &str, params: &[&str]) -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("loading it needs root".into());
    }
    let Some(modprobe) = find_program("modprobe") else {
        return Err("modprobe is not installed (apt-get install -y kmod)".into());
    };
    match Command::new(&modprobe).arg(module).args(params).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "modprobe {module} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(err) => Err(format!("could not run {}: {err}", modprobe.display())),
    }
}

/// Program `name` on `PATH`, or in /usr/sbin, /sbin, /usr/bin or /bin (modprobe lives in sbin,
/// often off a user's PATH; a non-login root shell may lack them all).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
