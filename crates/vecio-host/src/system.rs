//! The kernel release, the CPU count, the mounts (proc(5) `mountinfo`), the filesystem and block
//! device behind a path and that device's queue settings.

use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

/// The running kernel's release, e.g. `6.1.0-18-amd64` (uname(2) `release`).
pub fn kernel_release() -> io::Result<String> {
    let uts = rustix::system::uname();
    Ok(uts.release().to_string_lossy().into_owned())
}

/// CPUs this process may run on (sched_getaffinity(2), via
/// [`std::thread::available_parallelism`]); 1 when unknown.
pub fn cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// One line of `/proc/self/mountinfo` (proc(5)), the fields vecio uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mount {
    /// Major device number of the mounted filesystem (0 for virtual and some btrfs mounts).
    pub major: u32,
    /// Minor device number.
    pub minor: u32,
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// Filesystem type as the kernel names it, e.g. `ext4`.
    pub fs_type: String,
    /// Mount source, e.g. `/dev/vda1`, `overlay`, `tmpfs`.
    pub source: String,
}

/// Queue settings of a block device, from `/sys/block/DEV/queue/` (each `None` if unreadable).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct QueueSettings {
    /// Active I/O scheduler (the bracketed entry of `scheduler`), e.g. `mq-deadline`, `none`.
    pub scheduler: Option<String>,
    /// Requests the queue may hold (`nr_requests`).
    pub nr_requests: Option<u64>,
    /// Smallest unit the device addresses, in bytes (`logical_block_size`).
    pub logical_block_size: Option<u64>,
    /// Whether the device says it spins (`rotational`; virtual disks often claim 1).
    pub rotational: Option<bool>,
}

/// A block device, found from `/sys/dev/block/MAJOR:MINOR`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockDevice {
    /// Kernel name, e.g. `vda`, `nvme0n1p2`, `dm-0`.
    pub name: String,
    /// Major device number.
    pub major: u32,
    /// Minor device number.
    pub minor: u32,
    /// The whole disk when `name` is a partition, e.g. `vda` for `vda1`.
    pub disk: Option<String>,
    /// Queue settings (the whole disk's, for a partition).
    pub queue: QueueSettings,
}

/// Parses the text of a mountinfo file; malformed lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_mount_line).collect()
}

/// Parses one mountinfo line: `ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - TYPE SOURCE ...`.
fn parse_mount_line(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let left: Vec<&str> = left.split(' ').collect();
    let mut right = right.split(' ');
    let (major, minor) = left.get(2)?.split_once(':')?;
    Some(Mount {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        mount_point: PathBuf::from(unescape(left.get(4)?)),
        fs_type: right.next()?.to_string(),
        source: unescape(right.next()?),
    })
}

/// Undoes mountinfo's octal escapes (`\040` is a space, `\011` a tab, `\012` a newline,
/// `\134` a backslash).
pub fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let oct = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], oct) {
            (b'\\', Some(d)) => {
                let v = d.iter().fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
                out.push(v as u8);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount holding `path`: the longest mount point that contains it, the latest mounted
/// among equals (it shadows the others).
pub fn mount_of(path: &Path) -> io::Result<Option<Mount>> {
    let path = fs::canonicalize(path)?;
    let mounts = parse_mountinfo(&fs::read_to_string("/proc/self/mountinfo")?);
    let mut best: Option<Mount> = None;
    for m in mounts {
        let longer = best
            .as_ref()
            .is_none_or(|b| m.mount_point.as_os_str().len() >= b.mount_point.as_os_str().len());
        if path.starts_with(&m.mount_point) && longer {
            best = Some(m);
        }
    }
    Ok(best)
}

/// The block device behind `path`: the device itself when `path` is a block device, else the
/// device of the filesystem holding it (mountinfo's `MAJ:MIN`, then the file's `st_dev`, then
/// the mount source, for btrfs's anonymous device numbers). `None` for filesystems with no
/// block device (tmpfs, overlay, NFS...).
pub fn block_device(path: &Path) -> io::Result<Option<BlockDevice>> {
    let meta = fs::metadata(path)?;
    if meta.file_type().is_block_device() {
        return block_device_by_number(dev_major(meta.rdev()), dev_minor(meta.rdev()));
    }
    let mut candidates = Vec::new();
    let mount = mount_of(path)?;
    if let Some(m) = &mount {
        candidates.push((m.major, m.minor));
    }
    candidates.push((dev_major(meta.dev()), dev_minor(meta.dev())));
    if let Some(m) = mount.filter(|m| m.source.starts_with("/dev/")) {
        if let Ok(src) = fs::metadata(&m.source) {
            if src.file_type().is_block_device() {
                candidates.push((dev_major(src.rdev()), dev_minor(src.rdev())));
            }
        }
    }
    for (major, minor) in candidates {
        if let Some(dev) = block_device_by_number(major, minor)? {
            return Ok(Some(dev));
        }
    }
    Ok(None)
}

/// The block device numbered `major:minor`, if `/sys/dev/block/MAJOR:MINOR` exists.
pub fn block_device_by_number(major: u32, minor: u32) -> io::Result<Option<BlockDevice>> {
    let link = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let dir = match fs::canonicalize(&link) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let file_name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let name = file_name(&dir).unwrap_or_else(|| format!("{major}:{minor}"));
    let is_partition = dir.join("partition").exists();
    let disk_dir = if is_partition {
        dir.parent().unwrap_or(&dir)
    } else {
        &dir
    };
    Ok(Some(BlockDevice {
        name,
        major,
        minor,
        disk: if is_partition {
            file_name(disk_dir)
        } else {
            None
        },
        queue: queue_settings(&disk_dir.join("queue")),
    }))
}

/// Reads the queue settings under a sysfs `queue` directory.
fn queue_settings(queue: &Path) -> QueueSettings {
    let read = |name: &str| fs::read_to_string(queue.join(name)).ok();
    let number = |name: &str| read(name).and_then(|s| s.trim().parse::<u64>().ok());
    QueueSettings {
        scheduler: read("scheduler").map(|s| active_scheduler(&s)),
        nr_requests: number("nr_requests"),
        logical_block_size: number("logical_block_size"),
        rotational: number("rotational").map(|r| r != 0),
    }
}

/// The active entry of a sysfs `scheduler` file: `none [mq-deadline] kyber` gives
/// `mq-deadline`; a file without brackets is returned trimmed.
fn active_scheduler(text: &str) -> String {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(text.trim())
        .to_string()
}

/// Major number of a `dev_t`.
fn dev_major(dev: u64) -> u32 {
    rustix::fs::major(dev)
}

/// Minor number of a `dev_t`.
fn dev_minor(dev: u64) -> u32 {
    rustix::fs::minor(dev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_and_cpus() -> io::Result<()> {
        let release = kernel_release()?;
        assert_eq!(
            release,
            fs::read_to_string("/proc/sys/kernel/osrelease")?.trim()
        );
        assert!(cpu_count() >= 1);
        Ok(())
    }

    #[test]
    fn parses_mountinfo_lines() {
        let text = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n\
                    36 27 0:33 / /mnt/my\\040disk rw shared:5 - btrfs /dev/sdb1 rw\n\
                    garbage\n";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[0].major, m[0].minor, m[0].fs_type.as_str()),
            (254, 0, "ext4")
        );
        assert_eq!(m[1].mount_point, PathBuf::from("/mnt/my disk"));
        assert_eq!(m[1].source, "/dev/sdb1");
        assert_eq!(unescape("/a\\040b\\134c"), "/a b\\c");
        assert_eq!(unescape("/plain\\9"), "/plain\\9");
    }

    #[test]
    fn picks_active_scheduler() {
        assert_eq!(
            active_scheduler("none [mq-deadline] kyber bfq\n"),
            "mq-deadline"
        );
        assert_eq!(active_scheduler("none\n"), "none");
    }

    #[test]
    fn finds_mount_and_device_of_current_dir() -> io::Result<()> {
        let mount = mount_of(Path::new("."))?;
        assert!(mount.is_some(), "every path is under some mount");
        assert_eq!(
            mount_of(Path::new("/proc/self"))?.map(|m| m.fs_type),
            Some("proc".into())
        );
        match block_device(Path::new("."))? {
            Some(dev) => {
                println!("current directory is on {dev:?}");
                if let Some(lbs) = dev.queue.logical_block_size {
                    assert!(lbs >= 512 && lbs.is_power_of_two(), "{lbs}");
                }
            }
            None => println!("skipped device checks: no block device behind {mount:?}"),
        }
        assert_eq!(block_device(Path::new("/proc"))?, None);
        Ok(())
    }
}
