//! The block device behind a path and every queue setting that shapes its I/O, read from
//! sysfs (`/sys/block/DEV/queue/*`), plus a loop device's backing file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Queue attributes reported, as named under `/sys/block/DEV/queue/`.
pub const QUEUE_ATTRIBUTES: [&str; 18] = [
    "scheduler",
    "nr_requests",
    "logical_block_size",
    "physical_block_size",
    "minimum_io_size",
    "optimal_io_size",
    "max_sectors_kb",
    "max_hw_sectors_kb",
    "max_segments",
    "read_ahead_kb",
    "rotational",
    "nomerges",
    "rq_affinity",
    "io_poll",
    "write_cache",
    "fua",
    "dma_alignment",
    "zoned",
];

/// A block device and its queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Kernel name, e.g. `vda1`, `loop3`, `nvme0n1`.
    pub name: String,
    /// `MAJOR:MINOR`.
    pub number: String,
    /// The whole disk, when `name` is a partition.
    pub disk: Option<String>,
    /// Queue attributes that could be read (the active scheduler without brackets).
    pub queue: BTreeMap<String, String>,
    /// For a loop device: what it serves.
    pub loop_backing: Option<LoopBacking>,
}

/// What a loop device serves (`/sys/block/loopN/loop/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopBacking {
    /// The backing file.
    pub file: String,
    /// Whether the loop driver does direct I/O on it (the 2015 seed's change).
    pub direct_io: bool,
}

/// The device behind `path` (the device itself for a block device), if there is one.
pub fn of(path: &Path) -> Option<DeviceInfo> {
    let dev = vecio_host::system::block_device(path).ok()??;
    let disk = dev.disk.clone().unwrap_or_else(|| dev.name.clone());
    let block = PathBuf::from("/sys/block").join(&disk);
    let read = |p: PathBuf| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let mut queue = BTreeMap::new();
    for attr in QUEUE_ATTRIBUTES {
        if let Some(v) = read(block.join("queue").join(attr)) {
            let v = if attr == "scheduler" {
                dev.queue.scheduler.clone().unwrap_or(v)
            } else {
                v
            };
            queue.insert(attr.to_string(), v);
        }
    }
    let loop_backing = read(block.join("loop/backing_file")).map(|file| LoopBacking {
        file,
        direct_io: read(block.join("loop/dio")).is_some_and(|d| d == "1"),
    });
    Some(DeviceInfo {
        name: dev.name,
        number: format!("{}:{}", dev.major, dev.minor),
        disk: dev.disk,
        queue,
        loop_backing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_of_the_current_directory_matches_sysfs() {
        let Some(d) = of(Path::new(".")) else {
            println!("skipped: no block device behind the current directory");
            return;
        };
        let disk = d.disk.clone().unwrap_or(d.name.clone());
        let lbs = std::fs::read_to_string(format!("/sys/block/{disk}/queue/logical_block_size"));
        assert_eq!(
            d.queue.get("logical_block_size").map(String::as_str),
            lbs.ok().as_deref().map(str::trim)
        );
        if let Some(s) = d.queue.get("scheduler") {
            assert!(!s.contains('['), "active scheduler only: {s}");
        }
        assert!(of(Path::new("/proc")).is_none());
    }
}
