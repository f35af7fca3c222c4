//! Page-cache accounting around one measurement: the system's `Cached:` (proc(5),
//! `/proc/meminfo`) and the bytes of one file resident in the page cache (`mincore(2)`, see
//! [`crate::cache::resident_bytes`]).
//!
//! `Cached:` is system-wide: anything else running on the machine moves it too. The file's
//! resident bytes are exact for that file.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::cache;

/// A field of `/proc/meminfo`, in bytes (the file gives kB).
pub fn meminfo_bytes(field: &str) -> Result<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").context("reading /proc/meminfo")?;
    parse_meminfo(&text, field).with_context(|| format!("/proc/meminfo has no {field}: line"))
}

/// The value of `field` (e.g. `Cached`) in meminfo text, in bytes.
fn parse_meminfo(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        let kb = rest
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<u64>()
            .ok()?;
        Some(kb * 1024)
    })
}

/// Writes the file's dirty pages back (`fsync(2)`) and drops its pages from the page cache
/// (`POSIX_FADV_DONTNEED`), so a measurement starts with none of it cached.
pub fn flush_and_evict(path: &Path) -> Result<()> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    f.sync_all()
        .with_context(|| format!("fsync of {}", path.display()))?;
    drop(f);
    cache::evict(path)
}

/// The page cache at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CacheSnapshot {
    /// System `Cached:` of `/proc/meminfo`, bytes.
    pub system_cached: u64,
    /// Bytes of the file resident in the page cache.
    pub file_resident: u64,
}

impl CacheSnapshot {
    /// Takes a snapshot for the file at `path`.
    pub fn take(path: &Path) -> Result<CacheSnapshot> {
        Ok(CacheSnapshot {
            system_cached: meminfo_bytes("Cached")?,
            file_resident: cache::resident_bytes(path)?,
        })
    }

    /// How the cache changed from `earlier` to `self` (negative when it shrank).
    pub fn growth_since(&self, earlier: &CacheSnapshot) -> CacheGrowth {
        let d = |a: u64, b: u64| a as i64 - b as i64;
        CacheGrowth {
            system_cached: d(self.system_cached, earlier.system_cached),
            file_resident: d(self.file_resident, earlier.file_resident),
        }
    }
}

/// The change of the page cache over a measurement, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CacheGrowth {
    /// Change of system `Cached:`.
    pub system_cached: i64,
    /// Change of the file's resident bytes.
    pub file_resident: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_meminfo() {
        let text = "MemTotal:       24684084 kB\nCached:          1045632 kB\nSwapCached: 0 kB\n";
        assert_eq!(parse_meminfo(text, "Cached"), Some(1_045_632 * 1024));
        assert_eq!(parse_meminfo(text, "MemTotal"), Some(24_684_084 * 1024));
        assert_eq!(parse_meminfo(text, "Dirty"), None);
        assert!(meminfo_bytes("MemTotal").is_ok_and(|b| b > 0));
    }

    #[test]
    fn growth_follows_a_file_into_the_cache() -> Result<()> {
        // Beside the crate, not in /tmp: tmpfs has no disk to evict to.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR"))?;
        let p = dir.path().join("g");
        std::fs::write(&p, vec![3u8; 4 << 20])?;
        flush_and_evict(&p)?;
        let before = CacheSnapshot::take(&p)?;
        cache::warm(&p)?;
        let g = CacheSnapshot::take(&p)?.growth_since(&before);
        assert!(g.file_resident >= 3 << 20, "{g:?}");
        Ok(())
    }
}
