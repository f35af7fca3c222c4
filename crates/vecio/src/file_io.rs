//! Blocking single-request calls on a [`File`]: `read_at`, `write_at` and their vectored and
//! flagged forms. An aligned (or buffered) request is one system call with no allocation and,
//! for one buffer, no array walk; anything else takes the one-request [`Batch`] path.

use std::io::{IoSlice, IoSliceMut};

use crate::engine::SyncEngine;
use crate::error::{Error, Invalid, Result};
use crate::{Batch, Dir, File, IoIter, RwFlags};

impl File {
    /// Reads into `buf` at `offset` (`pread(2)`); returns bytes read, fewer only at end of file.
    #[inline]
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        self.io_at(IoIter::read_into(buf), offset, RwFlags::empty())
    }

    /// Writes `buf` at `offset` (`pwrite(2)`); returns bytes written.
    #[inline]
    pub fn write_at(&self, buf: &[u8], offset: u64) -> Result<usize> {
        self.io_at(IoIter::write_from(buf), offset, RwFlags::empty())
    }

    /// Reads into `bufs` at `offset` (`preadv2(2)`) with `flags`.
    pub fn readv_at(
        &self,
        bufs: &mut [IoSliceMut<'_>],
        offset: u64,
        flags: RwFlags,
    ) -> Result<usize> {
        self.io_at(IoIter::readv_into(bufs), offset, flags)
    }

    /// Writes `bufs` at `offset` (`pwritev2(2)`) with `flags`.
    pub fn writev_at(&self, bufs: &[IoSlice<'_>], offset: u64, flags: RwFlags) -> Result<usize> {
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
                let _guard = self.locks.shared(&[(offset, offset + len as u64)]);
                self.single_at(iter.dir(), base, len, offset, flags)
            }
            Some((base, len)) => self.single_at(iter.dir(), base, len, offset, flags),
            None => self.io_at_batch(iter, offset, flags),
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
        let fd = std::os::fd::AsRawFd::as_raw_fd(self);
        let mut done = 0usize;
        while done < len {
            let at = offset + done as u64;
            // SAFETY: done < len, so base + done stays in the caller's buffer.
            let p = unsafe { base.add(done) };
            let n = len - done;
            let iov = libc::iovec {
                iov_base: p.cast(),
                iov_len: n,
            };
            // SAFETY: p..p+n lies in the buffer the caller lent for this call.
            let r = unsafe {
                match (dir, flags.is_empty()) {
                    (Dir::Dest, true) => libc::pread(fd, p.cast(), n, at as libc::off_t),
                    (Dir::Source, true) => libc::pwrite(fd, p.cast(), n, at as libc::off_t),
                    (Dir::Dest, false) => {
                        libc::preadv2(fd, &iov, 1, at as libc::off_t, flags.to_kernel())
                    }
                    (Dir::Source, false) => {
                        libc::pwritev2(fd, &iov, 1, at as libc::off_t, flags.to_kernel())
                    }
                }
            };
            if r < 0 {
                let errno = std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO);
                if errno == libc::EINTR {
                    continue;
                }
                return if done > 0 {
                    Ok(done)
                } else {
                    Err(self.request_error(0, at, flags, errno))
                };
            }
            if r == 0 {
                return match (dir, done) {
                    (Dir::Source, 0) => Err(self.request_error(0, at, flags, libc::EIO)),
                    _ => Ok(done),
                };
            }
            done += r as usize;
        }
        Ok(done)
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

    /// The error for request `index` failing at `offset` with `errno`: a refused flag becomes
    /// [`Error::Unsupported`] (and is remembered on the file), anything else [`Error::Io`].
    pub(crate) fn request_error(
        &self,
        index: usize,
        offset: u64,
        flags: RwFlags,
        errno: i32,
    ) -> Error {
        if errno == libc::EOPNOTSUPP && !flags.is_empty() {
            self.note_refused(flags);
            return Error::Unsupported {
                flag: flags,
                path: self.shared_path(),
                request: index,
                offset,
            };
        }
        Error::Io {
            path: self.shared_path(),
            request: index,
            offset,
            source: std::io::Error::from_raw_os_error(errno),
        }
    }
}
