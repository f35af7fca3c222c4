//! Why `vecio info` could not open a path, said in terms of the permission that was missing,
//! and a block device's size from sysfs, which needs no open at all.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

use super::probes::errno_text;

/// Why opening `path` for reading fails, or `None` when it opens.
///
/// - `EACCES`: the file's mode does not let this user read it; the mode and owner are named.
/// - `EPERM`: not a mode matter (root gets it too): a Linux security module (those active are
///   named, from `/sys/kernel/security/lsm`), a device cgroup or a sandbox refused the open.
pub fn open_refusal(path: &Path, meta: &std::fs::Metadata) -> Option<String> {
    let e = std::fs::File::open(path).err()?;
    let call = format!("open(O_RDONLY): {}", errno_text(&e));
    Some(match e.raw_os_error() {
        Some(libc::EACCES) => format!(
            "{call}; reading needs read permission: mode {:o}, owner uid {} gid {}, this \
             process runs as uid {} (run as the owner, as root or in the group)",
            meta.permissions().mode() & 0o7777,
            meta.uid(),
            meta.gid(),
            rustix::process::geteuid().as_raw()
        ),
        Some(libc::EPERM) => {
            let who = if rustix::process::geteuid().is_root() {
                "even for root: not a file-mode or capability matter"
            } else {
                "not a file-mode matter"
            };
            let lsm = std::fs::read_to_string("/sys/kernel/security/lsm")
                .ok()
                .map(|l| format!(" (security modules here: {})", l.trim().replace(',', ", ")))
                .unwrap_or_default();
            format!(
                "{call}, {who}; a security policy refused it: a Linux security module{lsm}, \
                 a device cgroup, or the sandbox (container or virtual machine) this runs in"
            )
        }
        _ => call,
    })
}

/// A block device's capacity from `/sys/dev/block/MAJOR:MINOR/size` (512-byte sectors),
/// readable without opening the device.
pub fn device_size(meta: &std::fs::Metadata) -> Option<u64> {
    if !meta.file_type().is_block_device() {
        return None;
    }
    let rdev = meta.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let text = std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/size")).ok()?;
    text.trim().parse::<u64>().ok().map(|sectors| sectors * 512)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_readable_file_has_no_refusal() -> std::io::Result<()> {
        let meta = std::fs::metadata("/proc/self/status")?;
        assert_eq!(open_refusal(Path::new("/proc/self/status"), &meta), None);
        assert_eq!(device_size(&meta), None);
        Ok(())
    }

    #[test]
    fn a_device_is_sized_without_opening_it() -> std::io::Result<()> {
        let Some(dev) = vecio_host::system::block_device(Path::new("/"))
            .ok()
            .flatten()
        else {
            println!("skipped: no block device behind /");
            return Ok(());
        };
        let node = Path::new("/dev").join(&dev.name);
        let Ok(meta) = std::fs::metadata(&node) else {
            println!("skipped: no {} node", node.display());
            return Ok(());
        };
        let size = device_size(&meta);
        println!("{} holds {size:?} bytes", node.display());
        assert!(size.is_some_and(|s| s > 0));
        Ok(())
    }
}
