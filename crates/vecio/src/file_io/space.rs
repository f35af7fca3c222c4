//! Calls that change a file's space or size outside the read/write path, under the inode's
//! range lock: `fallocate(2)` (allocate, punch, zero, any mode), `ftruncate(2)` and
//! `copy_file_range(2)`.
//!
//! A read-modify-write of an unaligned direct write reads its edge blocks, then writes them back
//! whole: a hole punched, a range zeroed, a size cut or a copy landing between the two would be
//! overwritten with the stale bytes. These calls hold the whole blocks they touch exclusively,
//! as a read-modify-write does, so the two never interleave. The lock belongs to the inode, so
//! it holds whether the call goes through a direct or a buffered `File` of it.

use std::sync::Arc;

use rustix::fs::FallocateFlags;

use crate::direct::LockSpan;
use crate::File;

impl File {
    /// Deallocates `[offset, offset + len)`; it reads back as zeroes and the size is kept
    /// (`fallocate(2)` with `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`). `EOPNOTSUPP` where
    /// the file system cannot punch.
    pub fn punch_hole(&self, offset: u64, len: u64) -> std::io::Result<()> {
        self.fallocate(
            FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
            offset,
            len,
        )
    }

    /// Zeroes `[offset, offset + len)` in place, keeping the size
    /// (`fallocate(2)` with `FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE`).
    pub fn zero_range(&self, offset: u64, len: u64) -> std::io::Result<()> {
        self.fallocate(
            FallocateFlags::ZERO_RANGE | FallocateFlags::KEEP_SIZE,
            offset,
            len,
        )
    }

    /// Allocates `[offset, offset + len)` (`fallocate(2)` mode 0), growing the file if needed.
    pub fn allocate(&self, offset: u64, len: u64) -> std::io::Result<()> {
        self.fallocate(FallocateFlags::empty(), offset, len)
    }

    /// `fallocate(2)` with any `mode` (`FALLOC_FL_*`: keep size, punch hole, zero range,
    /// collapse or insert range...), under the range lock. Modes that move data (collapse,
    /// insert) hold everything from `offset` to the end of the file.
    pub fn fallocate(&self, mode: FallocateFlags, offset: u64, len: u64) -> std::io::Result<()> {
        if offset.checked_add(len).is_none() {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        let _guard = take(
            self,
            LockSpan::fallocate(self.dio_align(), mode, offset, len),
        )?;
        Ok(rustix::fs::fallocate(self, mode, offset, len)?)
    }

    /// Sets the file's length (`ftruncate(2)`) under the range lock: every block from the
    /// shorter of the old and new ends onwards is held, so a read-modify-write cannot write
    /// back bytes past a cut, nor lose the zeroes of a growth.
    pub fn set_len(&self, len: u64) -> std::io::Result<()> {
        let _guard = take(self, LockSpan::blocks(self.dio_align(), len, u64::MAX))?;
        self.set_len_unlocked(len)
    }

    /// `copy_file_range(2)`: copies up to `len` bytes from this file at `off_in` to `out` at
    /// `off_out`, in the kernel (the file system may clone or copy on the server side), under
    /// both files' range locks (the source's blocks shared, the destination's exclusive).
    /// Returns the bytes copied; 0 at end of file.
    ///
    /// Where the kernel refuses the copy because a direct file's alignment does not fit
    /// (`EINVAL`), or the files are on different file systems the kernel will not copy between
    /// (`EXDEV`), or the file system has no such call (`EOPNOTSUPP`), the bytes go through
    /// vecio's own reads and writes instead, which handle any alignment.
    pub fn copy_range_to(
        &self,
        off_in: u64,
        out: &File,
        off_out: u64,
        len: usize,
    ) -> std::io::Result<usize> {
        let in_end = off_in.saturating_add(len as u64);
        let out_end = off_out.saturating_add(len as u64);
        let same = Arc::ptr_eq(&self.locks, &out.locks);
        let overlapping = same && off_in < out_end && off_out < in_end;
        if overlapping {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        let r = {
            let _dst = take(out, LockSpan::blocks(out.dio_align(), off_out, out_end))?;
            let _src = match (!same).then(|| self.locks.shared(&[(off_in, in_end)])) {
                Some(Err(_)) => return Err(std::io::Error::from_raw_os_error(libc::EDEADLK)),
                held => held,
            };
            let (mut a, mut b) = (off_in, off_out);
            rustix::fs::copy_file_range(self, Some(&mut a), out, Some(&mut b), len)
        };
        match r {
            Ok(n) => Ok(n),
            Err(e)
                if e == rustix::io::Errno::INVAL
                    || e == rustix::io::Errno::XDEV
                    || e == rustix::io::Errno::OPNOTSUPP =>
            {
                self.copy_through(off_in, out, off_out, len)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Copies by reading and writing through vecio (any alignment), 1 MiB at a time.
    fn copy_through(
        &self,
        off_in: u64,
        out: &File,
        off_out: u64,
        len: usize,
    ) -> std::io::Result<usize> {
        const CHUNK: usize = 1 << 20;
        let mut buf = crate::AlignedBuf::page_aligned(len.min(CHUNK));
        let mut done = 0;
        while done < len {
            let want = (len - done).min(CHUNK);
            let n = self
                .read_at(&mut buf[..want], off_in + done as u64)
                .map_err(to_io)?;
            if n == 0 {
                break;
            }
            let mut w = 0;
            while w < n {
                let k = out
                    .write_at(&buf[w..n], off_out + (done + w) as u64)
                    .map_err(to_io)?;
                if k == 0 {
                    return Err(std::io::Error::from_raw_os_error(libc::EIO));
                }
                w += k;
            }
            done += n;
            if n < want {
                break;
            }
        }
        Ok(done)
    }
}

/// Holds `span` of `file`'s lock. `EDEADLK` instead of waiting forever when this thread's own
/// unreaped Queue requests hold some of it (reap them, then call again).
fn take(file: &File, span: LockSpan) -> std::io::Result<crate::rangelock::RangeGuard<'_>> {
    span.take(file).map_err(std::io::Error::from_raw_os_error)
}

/// The system error inside a vecio error (`EIO` for one without).
fn to_io(e: crate::Error) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.raw_os_error().unwrap_or(libc::EIO))
}

#[cfg(test)]
mod tests {
    use crate::{Direct, File};

    #[test]
    fn punch_and_zero_read_back_as_zeroes_and_keep_the_size() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let p = dir.path().join("f");
        let f = File::options()
            .read(true)
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
