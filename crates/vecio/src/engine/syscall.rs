//! The blocking system calls of the synchronous engines, on raw iovecs.

use std::os::fd::RawFd;

use crate::engine::{Cmd, Op};
use crate::{Dir, RwFlags};

/// One `preadv2`/`pwritev2` for the whole op; `EINTR` is retried. Returns bytes or `-errno`.
pub(crate) fn vectored(op: &Op) -> i64 {
    if op.cmd != Cmd::Rw {
        return command(op);
    }
    loop {
        // SAFETY: the pusher of `op` guarantees fd and iovecs are valid (Engine::push).
        let r = unsafe {
            match op.dir {
                Dir::Dest => libc::preadv2(
                    op.fd,
                    op.iov,
                    op.nr_segs as libc::c_int,
                    op.offset as libc::off_t,
                    op.flags.to_kernel(),
                ),
                Dir::Source => libc::pwritev2(
                    op.fd,
                    op.iov,
                    op.nr_segs as libc::c_int,
                    op.offset as libc::off_t,
                    op.flags.to_kernel(),
                ),
            }
        };
        if let Some(v) = done_or_retry(r as i64) {
            return v;
        }
    }
}

/// One `pread`/`pwrite` (or `preadv2`/`pwritev2` of one segment when flags are set) of
/// `len` bytes at `base`; `EINTR` is retried. Returns bytes or `-errno`.
///
/// # Safety
/// `fd` is open and `base..base + len` is valid for the transfer's direction.
pub(crate) unsafe fn single(
    fd: RawFd,
    dir: Dir,
    flags: RwFlags,
    base: *mut u8,
    len: usize,
    offset: u64,
) -> i64 {
    let iov = libc::iovec {
        iov_base: base.cast(),
        iov_len: len,
    };
    let at = offset as libc::off_t;
    loop {
        // SAFETY: the caller guarantees fd and base..base+len (this function's contract).
        let r = unsafe {
            match (dir, flags.is_empty()) {
                (Dir::Dest, true) => libc::pread(fd, base.cast(), len, at),
                (Dir::Source, true) => libc::pwrite(fd, base.cast(), len, at),
                (Dir::Dest, false) => libc::preadv2(fd, &iov, 1, at, flags.to_kernel()),
                (Dir::Source, false) => libc::pwritev2(fd, &iov, 1, at, flags.to_kernel()),
            }
        };
        if let Some(v) = done_or_retry(r as i64) {
            return v;
        }
    }
}

/// `fsync(2)`, `fdatasync(2)` or `fallocate(2)` for a non-`Rw` op; `EINTR` is retried.
/// Returns 0 or `-errno`.
pub(crate) fn command(op: &Op) -> i64 {
    loop {
        // SAFETY: plain system calls on the pusher's descriptor (valid until the completion is
        // reaped, Engine::push); no memory is handed over.
        let r = unsafe {
            match op.cmd {
                Cmd::Rw | Cmd::Fsync => libc::fsync(op.fd),
                Cmd::Fdatasync => libc::fdatasync(op.fd),
                Cmd::Fallocate(mode) => {
                    libc::fallocate(op.fd, mode, op.offset as libc::off_t, op.len as libc::off_t)
                }
            }
        };
        if let Some(v) = done_or_retry(r as i64) {
            return v;
        }
    }
}

fn done_or_retry(r: i64) -> Option<i64> {
    if r >= 0 {
        return Some(r);
    }
    let errno = std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO);
    if errno == libc::EINTR {
        None
    } else {
        Some(-(errno as i64))
    }
}
