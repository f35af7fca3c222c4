//! Page-cache control for experiments: warm a file, evict it (all or in part), and count how
//! much of it is resident (`mincore`).

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{Context, Result};

/// Reads the whole file through the page cache so that it is resident.
pub fn warm(path: &Path) -> Result<()> {
    let mut f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    while f
        .read(&mut buf)
        .with_context(|| format!("reading {}", path.display()))?
        > 0
    {}
    Ok(())
}

/// Drops `[offset, offset + len)` of the file from the page cache (`POSIX_FADV_DONTNEED`);
/// `len` 0 means to the end.
pub fn evict_range(path: &Path, offset: u64, len: u64) -> Result<()> {
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    // SAFETY: posix_fadvise only reads its integer arguments; the fd is valid for the call.
    let r = unsafe {
        libc::posix_fadvise(
            f.as_raw_fd(),
            offset as i64,
            len as i64,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    if r != 0 {
        anyhow::bail!(
            "posix_fadvise(DONTNEED) on {}: {}",
            path.display(),
            std::io::Error::from_raw_os_error(r)
        );
    }
    Ok(())
}

/// Drops the whole file from the page cache.
pub fn evict(path: &Path) -> Result<()> {
    evict_range(path, 0, 0)
}

/// Bytes of the file or block device resident in the page cache (`mincore` over a shared
/// mapping; the size from `lseek(SEEK_END)`, so devices count too).
pub fn resident_bytes(path: &Path) -> Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let total = f
        .seek(SeekFrom::End(0))
        .with_context(|| format!("size of {}", path.display()))?;
    let len = usize::try_from(total).context("file larger than the address space")?;
    if len == 0 {
        return Ok(0);
    }
    let page = 4096usize;
    // SAFETY: a fresh read-only shared mapping of the file; unmapped below; never dereferenced.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error()).context("mmap for mincore");
    }
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: addr..addr+len is the mapping made above; vec has one byte per page.
    let r = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    // SAFETY: unmapping exactly the mapping made above.
    unsafe { libc::munmap(addr, len) };
    if r != 0 {
        return Err(std::io::Error::last_os_error()).context("mincore");
    }
    Ok((vec.iter().filter(|&&b| b & 1 == 1).count() as u64 * page as u64).min(total))
}

#[cfg(test)]
mod tests {
    use super::*;

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
