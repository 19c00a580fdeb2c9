//! ATA secure erase, the suite's first way to purge a disk: hdparm sets a temporary user
//! security password and erases the whole disk with it (which also clears it).

use anyhow::{anyhow, bail};
use hostmax_device::Sysfs;
use hostmax_engine::TargetInfo;

/// The environment variable the ATA secure erase password may come from (the suite reads it;
/// hdparm never inherits it).
pub const PASSWORD_ENV: &str = "HOSTMAX_SECURE_ERASE_PASSWORD";

/// ATA secure erase of the whole disk `t` with hdparm: sets `password` as the user security
/// password, then erases with it. Only ATA disks that are not frozen.
pub fn secure_erase(t: &TargetInfo, password: &str) -> anyhow::Result<()> {
    let sysfs = Sysfs::default();
    let disk = t
        .whole_disk(&sysfs)
        .ok_or_else(|| anyhow!("not a block device"))?;
    if t.kernel_name.as_deref() != Some(disk.as_str()) {
        bail!("a partition: secure erase takes the whole disk");
    }
    let vendor = sysfs
        .value(format!("block/{disk}/device/vendor"))
        .unwrap_or_default();
    if vendor != "ATA" {
        bail!("not an ATA disk");
    }
    let hdparm = |args: &[&str]| -> anyhow::Result<String> {
        // hdparm takes the password on its command line (it has no other way): visible
        // there while each of these two commands runs. Not in its environment too: neither
        // PASSWORD_ENV (whatever it holds: the password may have come from a file and the
        // variable hold another secret) nor any variable that holds the password goes with it.
        let mut command = std::process::Command::new("hdparm");
        command.args(args).arg(&t.path).env_remove(PASSWORD_ENV);
        for (name, value) in std::env::vars_os() {
            if value == password {
                command.env_remove(name);
            }
        }
        let out = command
            .output()
            .map_err(|e| anyhow!("cannot run hdparm ({e}); install it (apt-get install hdparm)"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            Ok(text)
        } else {
            // The password never goes into a message (which a report's purge record keeps).
            let shown: Vec<&str> = args
                .iter()
                .map(|a| if *a == password { "<redacted>" } else { a })
                .collect();
            bail!(
                "hdparm {}: {}",
                shown.join(" "),
                text.trim().replace(password, "<redacted>")
            )
        }
    };
    let identity = hdparm(&["-I"])?;
    if identity.lines().any(|l| l.trim() == "frozen") {
        bail!("the disk's security is frozen (suspend and resume the host, then retry)");
    }
    hdparm(&["--user-master", "u", "--security-set-pass", password])?;
    hdparm(&["--user-master", "u", "--security-erase", password])?;
    Ok(())
}
