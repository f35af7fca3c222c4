//! The filesystem a path is on, by name.

use std::io;
use std::path::Path;

/// Name of the filesystem holding `path`, from `statfs(2)`'s `f_type` (e.g. `ext4`, `xfs`,
/// `btrfs`, `tmpfs`, `overlay`); an unknown type is given as its hex magic number. The ext2,
/// ext3 and ext4 share one magic number and are all reported as `ext4`.
pub fn fs_name(path: &Path) -> io::Result<String> {
    let st = rustix::fs::statfs(path)?;
    // The kernel's magic numbers are 32 bits; mask away any sign extension of `f_type`.
    let magic = (st.f_type as i64 as u64) & 0xffff_ffff;
    Ok(match magic_name(magic) {
        Some(name) => name.to_string(),
        None => format!("{magic:#x}"),
    })
}

/// Filesystem name for a statfs magic number (linux/magic.h).
fn magic_name(magic: u64) -> Option<&'static str> {
    Some(match magic {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x8584_58F6 => "ramfs",
        0x794C_7630 => "overlay",
        0xF2F5_2010 => "f2fs",
        0xCA45_1A4E => "bcachefs",
        0x2FC1_2FC1 => "zfs",
        0x6969 => "nfs",
        0x6573_5546 => "fuse",
        0xFE53_4D42 | 0xFF53_4D42 => "cifs",
        0x0102_1997 => "9p",
        0x4D44 => "vfat",
        0x2011_BAB0 => "exfat",
        0x7371_7368 => "squashfs",
        0x9FA0 => "proc",
        0x6265_6572 => "sysfs",
        0x0000_1373 => "devfs",
        0x00C3_6400 => "ceph",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_filesystems() -> io::Result<()> {
        assert_eq!(fs_name(Path::new("/proc"))?, "proc");
        let here = fs_name(Path::new("."))?;
        assert!(!here.is_empty());
        println!("current directory is on {here}");
        assert_eq!(magic_name(0x9123_683E), Some("btrfs"));
        assert_eq!(magic_name(0x1234), None);
        Ok(())
    }
}
