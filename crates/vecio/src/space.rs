//! Hole punching and zeroing (`fallocate(2)`) under the file's range lock.
//!
//! A read-modify-write of an unaligned direct write reads its edge blocks, then writes them back
//! whole: a hole punched or a range zeroed between the two would be overwritten with the stale
//! bytes. These calls hold the whole blocks they touch exclusively, as a read-modify-write does,
//! so the two never interleave.

use rustix::fs::FallocateFlags;

use crate::File;

impl File {
    /// Deallocates `[offset, offset + len)`; it reads back as zeroes and the size is kept
    /// (`FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`). `EOPNOTSUPP` where the file system
    /// cannot punch.
    pub fn punch_hole(&self, offset: u64, len: u64) -> std::io::Result<()> {
        self.fallocate_locked(
            FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
            offset,
            len,
        )
    }

    /// Zeroes `[offset, offset + len)` in place, keeping the size
    /// (`FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE`).
    pub fn zero_range(&self, offset: u64, len: u64) -> std::io::Result<()> {
        self.fallocate_locked(
            FallocateFlags::ZERO_RANGE | FallocateFlags::KEEP_SIZE,
            offset,
            len,
        )
    }

    /// Allocates `[offset, offset + len)` (`fallocate` mode 0), growing the file if needed.
    pub fn allocate(&self, offset: u64, len: u64) -> std::io::Result<()> {
        self.fallocate_locked(FallocateFlags::empty(), offset, len)
    }

    fn fallocate_locked(&self, mode: FallocateFlags, offset: u64, len: u64) -> std::io::Result<()> {
        let end = offset
            .checked_add(len)
            .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let _guard = self.is_direct().then(|| {
            let bs = self.dio_align().offset as u64;
            self.locks
                .exclusive(offset / bs * bs, end.div_ceil(bs).saturating_mul(bs))
        });
        Ok(rustix::fs::fallocate(self, mode, offset, len)?)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Direct, File};

    #[test]
    fn punch_and_zero_read_back_as_zeroes_and_keep_the_size() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let p = dir.path().join("f");
        let f = File::options()
            .write(true)
            .create(true)
            .direct(Direct::On)
            .open(&p)
            .unwrap();
        let data = vec![0xabu8; 64 * 1024];
        f.write_at(&data, 0).unwrap();
        f.punch_hole(4096, 8192).unwrap();
        f.zero_range(1000, 10).unwrap();
        let mut back = vec![1u8; 64 * 1024];
        assert_eq!(f.read_at(&mut back, 0).unwrap(), back.len());
        assert!(back[4096..12288].iter().all(|&b| b == 0));
        assert!(back[1000..1010].iter().all(|&b| b == 0));
        assert_eq!(back[999], 0xab);
        assert_eq!(back[12288], 0xab);
        assert_eq!(f.size().unwrap(), 64 * 1024);
        assert!(f.punch_hole(u64::MAX - 1, 10).is_err());
    }
}
