//! Page-cache residency of a regular file or a block device: `mincore(2)` over a read-only
//! shared mapping, the size taken from `lseek(SEEK_END)` so devices count too.

use std::io::{Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{Context, Result};

use super::Residency;

/// Page size `mincore` counts in.
const PAGE: usize = 4096;

/// Bytes of `path` resident in the page cache, and its size.
pub fn resident_bytes(path: &Path) -> Result<Residency> {
    let mut f = std::fs::File::open(path).with_context(|| format!("{}", path.display()))?;
    let total = f
        .seek(SeekFrom::End(0))
        .with_context(|| format!("size of {}", path.display()))?;
    let len = usize::try_from(total).context("file larger than the address space")?;
    if len == 0 {
        return Ok(Residency { resident: 0, total });
    }
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
    let mut vec = vec![0u8; len.div_ceil(PAGE)];
    // SAFETY: addr..addr+len is the mapping made above; vec has one byte per page of it.
    let r = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    // SAFETY: unmapping exactly the mapping made above.
    unsafe { libc::munmap(addr, len) };
    if r != 0 {
        return Err(std::io::Error::last_os_error()).context("mincore");
    }
    let pages = vec.iter().filter(|&&b| b & 1 == 1).count() as u64;
    Ok(Residency {
        resident: (pages * PAGE as u64).min(total),
        total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_warm_file_and_an_evicted_one() -> Result<()> {
        // Beside the crate, not in /tmp: tmpfs has no disk to evict to.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR"))?;
        let p = dir.path().join("r");
        std::fs::write(&p, vec![1u8; 1 << 20])?;
        crate::pagecache::flush_and_evict(&p)?;
        let cold = resident_bytes(&p)?;
        crate::cache::warm(&p)?;
        let warm = resident_bytes(&p)?;
        assert_eq!((cold.total, warm.total), (1 << 20, 1 << 20));
        assert_eq!(warm.resident, 1 << 20);
        assert!(cold.resident < warm.resident, "{cold:?}");
        std::fs::write(&p, b"")?;
        assert_eq!(
            resident_bytes(&p)?,
            Residency {
                resident: 0,
                total: 0
            }
        );
        Ok(())
    }
}
