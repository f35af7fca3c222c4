//! Blocking single-request calls on a [`File`]: `read_at`, `write_at` and their vectored and
//! flagged forms. An aligned (or buffered) request is one system call with no allocation and,
//! for one buffer, no array walk; anything else takes the one-request [`Batch`] path.
//!
//! # Deadlock avoidance
//!
//! An unaligned write to a direct file holds the blocks it touches exclusive while it reads and
//! writes them back. If this thread has [`Queue`](crate::Queue) requests in flight (pushed,
//! not yet reaped) over those blocks, waiting for them would never end, so the call fails at
//! once with [`Error::Io`] carrying `EDEADLK`: reap the queue, then call again. See
//! `docs/engine.md`, "Locking rules".

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::AsFd;

use crate::engine::{syscall, SyncEngine, IOV_MAX};
use crate::error::{Error, Invalid, Result};
use crate::request::{Progress, Step};
use crate::{Batch, Dir, File, IoIter, RwFlags};

impl File {
    /// Reads into `buf` at `offset` (`pread(2)`); returns bytes read, fewer only at end of file.
    ///
    /// On a buffered file opened for reading with no per-file flags (the plain case, decided
    /// once at open), this is one `pread(2)` made directly (rustix's inline system call, no libc
    /// wrapper) and one compare: the single-buffer call costs what the system call costs.
    #[inline]
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        if self.plain_read && !buf.is_empty() {
            let len = buf.len();
            // An offset past the largest the kernel takes fails there (`EINVAL`) and the
            // general path below then gives the typed error: no bounds check here.
            if let Ok(n) = rustix::io::pread(self.as_fd(), &mut *buf, offset) {
                if n == len {
                    return Ok(n);
                }
            }
        }
        self.io_at(IoIter::read_into(buf), offset, RwFlags::empty())
    }

    /// Writes `buf` at `offset` (`pwrite(2)`); returns bytes written. The plain case is one
    /// `pwrite`, as for [`read_at`](Self::read_at).
    ///
    /// On a direct file, an unaligned write over blocks this thread's own unreaped
    /// [`Queue`](crate::Queue) requests hold fails with `EDEADLK` ("reap, then call again")
    /// instead of waiting on requests only this thread can finish.
    #[inline]
    pub fn write_at(&self, buf: &[u8], offset: u64) -> Result<usize> {
        if self.plain_write && !buf.is_empty() {
            // As in read_at: an offset the kernel refuses falls to the general path's error.
            match rustix::io::pwrite(self.as_fd(), buf, offset) {
                Ok(n) if n == buf.len() => return Ok(n),
                Ok(n) if n > 0 => {
                    // Short write: resume the rest through the general path.
                    return match self.write_at(&buf[n..], offset + n as u64) {
                        Ok(m) => Ok(n + m),
                        Err(_) => Ok(n),
                    };
                }
                _ => {}
            }
        }
        self.io_at(IoIter::write_from(buf), offset, RwFlags::empty())
    }

    /// Reads exactly `buf.len()` bytes at `offset`, resuming short reads (as
    /// `std::os::unix::fs::FileExt::read_exact_at`). Reaching the end of the file first is an
    /// [`Error::Io`] of kind `UnexpectedEof`; the bytes before it are in `buf`.
    ///
    /// ```
    /// # fn main() -> vecio::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let file = vecio::File::options().read(true).write(true).create(true)
    ///     .open(dir.path().join("f"))?;
    /// file.write_all_at(b"hello world", 0)?;
    /// let mut buf = [0u8; 5];
    /// file.read_exact_at(&mut buf, 6)?;
    /// assert_eq!(&buf, b"world");
    /// assert!(file.read_exact_at(&mut buf, 8).is_err());
    /// # Ok(()) }
    /// ```
    pub fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, offset)? {
                0 => {
                    return Err(Error::Io {
                        path: self.shared_path(),
                        request: 0,
                        offset,
                        source: std::io::ErrorKind::UnexpectedEof.into(),
                    })
                }
                n => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
            }
        }
        Ok(())
    }

    /// Writes all of `buf` at `offset`, resuming short writes (as
    /// `std::os::unix::fs::FileExt::write_all_at`).
    pub fn write_all_at(&self, mut buf: &[u8], mut offset: u64) -> Result<()> {
        while !buf.is_empty() {
            // write_at never returns Ok(0) for a non-empty buffer: no progress is EIO.
            let n = self.write_at(buf, offset)?;
            buf = &buf[n..];
            offset += n as u64;
        }
        Ok(())
    }

    /// Reads into `bufs` at `offset` (`preadv2(2)`) with `flags`. One buffer and no flags
    /// reduce to [`read_at`](Self::read_at).
    #[inline]
    pub fn readv_at(
        &self,
        bufs: &mut [IoSliceMut<'_>],
        offset: u64,
        flags: RwFlags,
    ) -> Result<usize> {
        if let ([one], true) = (&mut *bufs, flags.is_empty()) {
            return self.read_at(one, offset);
        }
        self.io_at(IoIter::readv_into(bufs), offset, flags)
    }

    /// Writes `bufs` at `offset` (`pwritev2(2)`) with `flags`. One buffer and no flags reduce
    /// to [`write_at`](Self::write_at).
    #[inline]
    pub fn writev_at(&self, bufs: &[IoSlice<'_>], offset: u64, flags: RwFlags) -> Result<usize> {
        if let ([one], true) = (bufs, flags.is_empty()) {
            return self.write_at(one, offset);
        }
        self.io_at(IoIter::writev_from(bufs), offset, flags)
    }

    /// Reads or writes (by the iterator's direction) at `offset` with `flags`, blocking.
    /// A one-segment iterator reduces to the single-buffer call.
    #[inline]
    pub fn io_at(&self, iter: IoIter<'_>, offset: u64, flags: RwFlags) -> Result<usize> {
        let flags = flags | self.base_flags();
        let ok_dir = match iter.dir() {
            Dir::Dest => self.is_readable(),
            Dir::Source => self.is_writable(),
        };
        if !ok_dir
            || iter.is_empty()
            || offset
                .checked_add(iter.len() as u64)
                .is_none_or(|e| e > i64::MAX as u64)
            || !self.is_aligned_request(offset, &iter)
        {
            return self.io_at_batch(iter, offset, flags);
        }
        match iter.single() {
            Some((base, len)) if self.is_direct() => {
                // As in Batch: no read-modify-write may interleave with this range.
                let Ok(_guard) = self.locks.shared(&[(offset, offset + len as u64)]) else {
                    return Err(self.request_error(0, offset, flags, libc::EDEADLK));
                };
                self.single_at(iter.dir(), base, len, offset, flags)
            }
            Some((base, len)) => self.single_at(iter.dir(), base, len, offset, flags),
            None if !self.is_direct() && iter.nr_segs() <= IOV_MAX => {
                self.vectored_at(iter, offset, flags)
            }
            None => self.io_at_batch(iter, offset, flags),
        }
    }

    /// Several buffers of a buffered file: one `preadv2`/`pwritev2` over the caller's own
    /// iovec array per pass (no copy of it unless a short transfer trims it); short transfers
    /// resumed.
    fn vectored_at(&self, mut iter: IoIter<'_>, offset: u64, flags: RwFlags) -> Result<usize> {
        let mut scratch = Vec::new();
        let mut at = Progress::new(offset, iter.dir());
        loop {
            let iov = iter.iovecs(&mut scratch);
            let op = crate::engine::Op {
                fd: self.raw_fd(),
                file_id: self.id(),
                offset: at.offset,
                iov: iov.as_ptr(),
                nr_segs: iov.len() as u32,
                len: iter.len(),
                dir: iter.dir(),
                flags,
                pool: None,
                tag: 0,
                fast: std::ptr::null(),
                cmd: crate::engine::Cmd::Rw,
            };
            let r = crate::engine::syscall::vectored(&op);
            let (rest, before) = (iter.len(), at.offset);
            iter.advance(r.max(0) as usize);
            match at.account_result(r, rest) {
                Step::Resume => continue,
                step => return step.into_result(self, 0, before, flags),
            }
        }
    }

    /// One buffer, one system call per pass; short transfers resumed.
    #[inline]
    fn single_at(
        &self,
        dir: Dir,
        base: *mut u8,
        len: usize,
        offset: u64,
        flags: RwFlags,
    ) -> Result<usize> {
        let mut at = Progress::new(offset, dir);
        loop {
            let done = at.done;
            // SAFETY: done < len, so base + done..base + len lies in the buffer the caller lent
            // for this call; the descriptor is this file's. EINTR is retried inside.
            let r = unsafe {
                syscall::single(
                    self.raw_fd(),
                    dir,
                    flags,
                    base.add(done),
                    len - done,
                    at.offset,
                )
            };
            let before = at.offset;
            match at.account_result(r, len - done) {
                Step::Resume => continue,
                step => return step.into_result(self, 0, before, flags),
            }
        }
    }

    #[cold]
    fn io_at_batch(&self, iter: IoIter<'_>, offset: u64, flags: RwFlags) -> Result<usize> {
        let mut engine = SyncEngine::new();
        let mut batch = Batch::new();
        batch.push(self, offset, iter, flags - self.base_flags());
        batch.run(&mut engine).pop().unwrap_or(Err(Error::Invalid {
            path: self.shared_path(),
            request: 0,
            offset,
            reason: Invalid::Empty,
        }))
    }
}
