//! What every experiment records about the run: when, where and with what.

use std::path::Path;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::harness::fio;
use vecio_host::{fs::fs_name, system};

/// The set-up of one experiment run, recorded beside its figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunMeta {
    /// When the run started, UTC (`YYYY-MM-DD HH:MM:SS`).
    pub date_utc: String,
    /// The vecio command line that produced the figures.
    pub command: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Online CPUs.
    pub cpus: usize,
    /// File or device measured.
    pub file: String,
    /// File system type of the file ("ext4", "xfs", "bdev" for a block device, ...).
    pub fs: String,
    /// Block device behind the file and its queue settings, as text.
    pub device: String,
    /// fio's version, when installed.
    pub fio: Option<String>,
}

impl RunMeta {
    /// Collects the facts for a run on `path`.
    pub fn collect(path: &Path) -> RunMeta {
        let fs = fs_name(path).unwrap_or_else(|_| "unknown".into());
        let device = match system::block_device(path) {
            Ok(Some(d)) => format!(
                "{} (scheduler {}, nr_requests {}, logical block {}, rotational {})",
                d.name,
                d.queue.scheduler.as_deref().unwrap_or("?"),
                d.queue.nr_requests.map_or("?".into(), |v| v.to_string()),
                d.queue
                    .logical_block_size
                    .map_or("?".into(), |v| v.to_string()),
                d.queue.rotational.map_or("?".into(), |v| v.to_string()),
            ),
            _ => "unknown".into(),
        };
        RunMeta {
            date_utc: utc_now(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            kernel: system::kernel_release().unwrap_or_else(|_| "unknown".into()),
            cpus: system::cpu_count(),
            file: path.display().to_string(),
            fs,
            device,
            fio: fio::fio_version(),
        }
    }
}

/// The current time in UTC as `YYYY-MM-DD HH:MM:SS`.
pub fn utc_now() -> String {
    let rfc3339 = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    rfc3339.replace('T', " ").trim_end_matches('Z').to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_time_is_a_date_and_a_time() {
        let now = super::utc_now();
        let b = now.as_bytes();
        assert_eq!(b.len(), 19, "{now}");
        assert!(
            now.starts_with("20") && b[4] == b'-' && b[10] == b' ' && b[16] == b':',
            "{now}"
        );
    }
}
