//! What every experiment records about the run: when, where and with what.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

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
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
    }
}
