//! The page cache, the one place experiments touch it: warm a file, evict it (all or in
//! part), count how much of it is resident (`mincore(2)`), and account for a measurement with
//! the system's `Cached:` (proc(5), `/proc/meminfo`) beside the file's resident bytes.
//!
//! `Cached:` is system-wide: anything else running on the machine moves it too. The file's
//! resident bytes are exact for that file.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::Serialize;

use crate::{Context, Error, Result};

/// Reads the whole file through the page cache so that it is resident.
pub fn warm(path: &Path) -> Result<()> {
    let mut f = File::open(path).ctx(|| format!("opening {}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    while f
        .read(&mut buf)
        .ctx(|| format!("reading {}", path.display()))?
        > 0
    {}
    Ok(())
}

/// Drops `[offset, offset + len)` of the file from the page cache (`POSIX_FADV_DONTNEED`);
/// `len` 0 means to the end.
pub fn evict_range(path: &Path, offset: u64, len: u64) -> Result<()> {
    let f = File::open(path).ctx(|| format!("opening {}", path.display()))?;
    rustix::fs::fadvise(
        &f,
        offset,
        std::num::NonZeroU64::new(len),
        rustix::fs::Advice::DontNeed,
    )
    .ctx(|| format!("posix_fadvise(DONTNEED) on {}", path.display()))
}

/// Drops the whole file from the page cache.
pub fn evict(path: &Path) -> Result<()> {
    evict_range(path, 0, 0)
}

/// Bytes of the file or block device resident in the page cache (`mincore` over a shared
/// mapping; the size from `lseek(SEEK_END)`, so devices count too).
pub fn resident_bytes(path: &Path) -> Result<u64> {
    let mut f = File::open(path).ctx(|| format!("opening {}", path.display()))?;
    let total = f
        .seek(SeekFrom::End(0))
        .ctx(|| format!("size of {}", path.display()))?;
    let len = usize::try_from(total).map_err(|_| {
        Error::Other(format!(
            "{} is larger than the address space",
            path.display()
        ))
    })?;
    if len == 0 {
        return Ok(0);
    }
    let page = 4096usize;
    use rustix::mm::{MapFlags, ProtFlags};
    // SAFETY: a fresh read-only shared mapping of the file at an address the kernel picks;
    // unmapped below; never dereferenced.
    let addr = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            len,
            ProtFlags::READ,
            MapFlags::SHARED,
            &f,
            0,
        )
    }
    .ctx(|| format!("mmap of {} for mincore", path.display()))?;
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: addr..addr+len is the mapping made above; vec has one byte per page. (rustix
    // has no mincore.)
    let r = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    // SAFETY: unmapping exactly the mapping made above, which nothing refers to.
    let _ = unsafe { rustix::mm::munmap(addr, len) };
    if r != 0 {
        return Err(std::io::Error::last_os_error())
            .ctx(|| format!("mincore on {}", path.display()));
    }
    Ok((vec.iter().filter(|&&b| b & 1 == 1).count() as u64 * page as u64).min(total))
}

/// A field of `/proc/meminfo`, in bytes (the file gives kB).
pub fn meminfo_bytes(field: &str) -> Result<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ctx(|| "reading /proc/meminfo".into())?;
    parse_meminfo(&text, field)
        .ok_or_else(|| Error::Other(format!("/proc/meminfo has no {field}: line")))
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
    let f = std::fs::File::open(path).ctx(|| format!("opening {}", path.display()))?;
    f.sync_all()
        .ctx(|| format!("fsync of {}", path.display()))?;
    drop(f);
    evict(path)
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
            file_resident: resident_bytes(path)?,
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
    fn growth_follows_a_file_into_the_cache() -> std::result::Result<(), Box<dyn std::error::Error>>
    {
        // Beside the crate, not in /tmp: tmpfs has no disk to evict to.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR"))?;
        let p = dir.path().join("g");
        std::fs::write(&p, vec![3u8; 4 << 20])?;
        flush_and_evict(&p)?;
        let before = CacheSnapshot::take(&p)?;
        warm(&p)?;
        let g = CacheSnapshot::take(&p)?.growth_since(&before);
        assert!(g.file_resident >= 3 << 20, "{g:?}");
        Ok(())
    }

    #[test]
    fn warm_and_evict_change_residency() {
        // Beside the crate, not in /tmp: tmpfs has no disk to evict to.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let p = dir.path().join("c");
        std::fs::write(&p, vec![7u8; 8 << 20]).unwrap();
        let f = File::open(&p).unwrap();
        f.sync_all().unwrap();
        evict(&p).unwrap();
        let cold = resident_bytes(&p).unwrap();
        warm(&p).unwrap();
        let hot = resident_bytes(&p).unwrap();
        assert!(hot >= 7 << 20, "warm file resident: {hot}");
        assert!(cold < hot, "evicted {cold} < warm {hot}");
    }
}
