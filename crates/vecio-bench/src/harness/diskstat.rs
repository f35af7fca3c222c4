//! The device's mean queue depth over a measurement, from `time_in_queue` in
//! `/sys/class/block/DEV/stat`.

use std::path::{Path, PathBuf};

use vecio_host::system;

/// Reads the stat file of the device holding a path.
#[derive(Debug, Clone)]
pub struct DiskProbe {
    stat: PathBuf,
}

/// One reading of a device's stat file.
#[derive(Debug, Clone, Copy)]
pub struct DiskStat {
    time_in_queue_ms: u64,
}

impl DiskProbe {
    /// The probe for the block device behind `path` (the device itself for a device node);
    /// `None` when there is none, e.g. on tmpfs.
    pub fn for_path(path: &Path) -> Option<DiskProbe> {
        let dev = system::block_device(path).ok()??;
        let stat = PathBuf::from("/sys/class/block")
            .join(&dev.name)
            .join("stat");
        stat.exists().then_some(DiskProbe { stat })
    }

    /// Reads the counters now; `None` when the file cannot be read or parsed.
    pub fn read(&self) -> Option<DiskStat> {
        let text = std::fs::read_to_string(&self.stat).ok()?;
        Some(DiskStat {
            time_in_queue_ms: parse_time_in_queue(&text)?,
        })
    }
}

impl DiskStat {
    /// Milliseconds requests spent queued at the device (summed over requests) between
    /// `earlier` and `self`: divided by an interval, the mean queue depth over it.
    pub fn queue_ms_since(&self, earlier: &DiskStat) -> u64 {
        self.time_in_queue_ms
            .saturating_sub(earlier.time_in_queue_ms)
    }
}

/// The 11th field of a block stat line (`time_in_queue`, ms).
fn parse_time_in_queue(text: &str) -> Option<u64> {
    text.split_whitespace().nth(10)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_line() {
        let line = "  1234 5 67890 111 222 3 4444 555 2 666 777 0 0 0 0 9 10\n";
        assert_eq!(parse_time_in_queue(line), Some(777));
        assert_eq!(parse_time_in_queue("1 2 3"), None);
    }
}
