//! Page-cache residency of a regular file or a block device: `mincore(2)` over a read-only
//! shared mapping, the size taken from `lseek(SEEK_END)` so devices count too.

use std::io::{Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result};

use super::Residency;

/// Bytes of `path` resident in the page cache, and its size.
pub fn resident_bytes(path: &Path) -> Result<Residency> {
    let mut f = std::fs::File::open(path).with_context(|| format!("{}", path.display()))?;
    let total = f
        .seek(SeekFrom::End(0))
        .with_context(|| format!("size of {}", path.display()))?;
    let resident = vecio_host::pagecache::resident_bytes(path)?;
    Ok(Residency { resident, total })
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
        vecio_host::pagecache::flush_and_evict(&p)?;
        let cold = resident_bytes(&p)?;
        vecio_host::pagecache::warm(&p)?;
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
