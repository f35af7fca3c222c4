//! A small file system of the test's own (ext4, XFS or btrfs): an image file, a loop device, a
//! mount; all undone on drop. Used where a test looks at free space, fills a file system,
//! wants no other writer on it, or runs on a file system other than the one it was built on.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A mounted file system on a loop device over an image in a scratch directory.
pub struct SmallFs {
    /// Holds the image; removed after the unmount (fields drop after `Drop::drop`).
    _scratch: tempfile::TempDir,
    mountpoint: PathBuf,
    loop_dev: Option<String>,
    mounted: bool,
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl SmallFs {
    /// Makes and mounts an ext4 of `mib` MiB under `parent` (a directory on a real file
    /// system: the image lives there). Root only; `Err` says what failed.
    pub fn ext4(parent: &Path, mib: u64) -> Result<SmallFs, String> {
        // No reserved blocks and no lazy init: free space is what statvfs says, and nothing
        // writes behind the test's back.
        let lazy = "lazy_itable_init=0,lazy_journal_init=0";
        SmallFs::make(
            parent,
            mib,
            &["mkfs.ext4", "-q", "-F", "-m", "0", "-E", lazy],
        )
    }

    /// Makes and mounts an XFS of `mib` MiB (at least 300: mkfs.xfs refuses less) under
    /// `parent`. Root only; `Err` says what failed (mkfs.xfs missing among it).
    pub fn xfs(parent: &Path, mib: u64) -> Result<SmallFs, String> {
        SmallFs::make(parent, mib, &["mkfs.xfs", "-q", "-f"])
    }

    /// Makes and mounts a btrfs of `mib` MiB (at least 114: mkfs.btrfs refuses less) under
    /// `parent`. Root only; `Err` says what failed (mkfs.btrfs missing among it).
    pub fn btrfs(parent: &Path, mib: u64) -> Result<SmallFs, String> {
        SmallFs::make(parent, mib, &["mkfs.btrfs", "-q", "-f"])
    }

    /// An image of `mib` MiB made by `mkfs` (the command and its options; the image is the last
    /// argument), looped and mounted.
    fn make(parent: &Path, mib: u64, mkfs: &[&str]) -> Result<SmallFs, String> {
        let scratch = tempfile::Builder::new()
            .prefix("vecio-smallfs-")
            .tempdir_in(parent)
            .map_err(|e| format!("scratch directory in {}: {e}", parent.display()))?;
        let image = scratch.path().join("fs.img");
        let mountpoint = scratch.path().join("mnt");
        std::fs::create_dir(&mountpoint).map_err(|e| e.to_string())?;
        let f = std::fs::File::create(&image).map_err(|e| e.to_string())?;
        f.set_len(mib << 20).map_err(|e| e.to_string())?;
        drop(f);
        run(Command::new(mkfs[0]).args(&mkfs[1..]).arg(&image))?;
        let mut fs = SmallFs {
            _scratch: scratch,
            mountpoint,
            loop_dev: None,
            mounted: false,
        };
        let dev = run(Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&image))?;
        fs.loop_dev = Some(dev.clone());
        run(Command::new("mount").arg(&dev).arg(&fs.mountpoint))?;
        fs.mounted = true;
        Ok(fs)
    }

    /// The mounted file system's root.
    pub fn path(&self) -> &Path {
        &self.mountpoint
    }

    /// Bytes in use (`statvfs`: blocks minus free blocks).
    pub fn used_bytes(&self) -> u64 {
        let st = rustix::fs::statvfs(&self.mountpoint).expect("statvfs of the small file system");
        (st.f_blocks - st.f_bfree) * st.f_frsize
    }

    /// Bytes free to an unprivileged writer (`statvfs` `f_bavail`).
    pub fn free_bytes(&self) -> u64 {
        let st = rustix::fs::statvfs(&self.mountpoint).expect("statvfs of the small file system");
        st.f_bavail * st.f_frsize
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        if self.mounted {
            // Lazily, so a server still holding a descriptor cannot leave the mount behind.
            let _ = Command::new("umount")
                .arg("-l")
                .arg(&self.mountpoint)
                .output();
        }
        if let Some(dev) = &self.loop_dev {
            let _ = Command::new("losetup").arg("-d").arg(dev).output();
        }
    }
}
