//! The blocking system calls of the synchronous engines, on raw iovecs, made through rustix's
//! inline system calls: no libc wrapper (glibc's `preadv2` costs 27 user-space instructions more
//! than its `pread`, and both enter and leave its cancellation state when threads exist) and
//! errors as values, not through `errno`.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, RawFd};

use rustix::fs::FallocateFlags;
use rustix::io::{Errno, ReadWriteFlags};

use crate::engine::{Cmd, Op};
use crate::{Dir, RwFlags};

/// One `preadv2`/`pwritev2` for the whole op; `EINTR` is retried. Returns bytes or `-errno`.
pub(crate) fn vectored(op: &Op) -> i64 {
    if op.cmd != Cmd::Rw {
        return command(op);
    }
    let (n, fd, dir, iov) = (op.nr_segs as usize, op.fd, op.dir, op.iov);
    // SAFETY: the pusher of `op` guarantees the descriptor stays open and `iov` holds
    // `nr_segs` iovecs valid for the transfer's direction until the completion is reaped
    // (Engine::push).
    retried(|| unsafe { rw(fd, dir, iov, n, op.offset, op.flags) })
}

/// One `pread`/`pwrite` (or `preadv2`/`pwritev2` of one segment when flags are set) of
/// `len` bytes at `base`; `EINTR` is retried. Returns bytes or `-errno`.
///
/// # Safety
/// `fd` is open and `base..base + len` is valid for the transfer's direction; `base` is not
/// null, even for a zero `len` (it is made a slice; the callers' come from slices).
pub(crate) unsafe fn single(
    fd: RawFd,
    dir: Dir,
    flags: RwFlags,
    base: *mut u8,
    len: usize,
    offset: u64,
) -> i64 {
    // SAFETY: the caller keeps `fd` open for the call (this function's contract).
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    let call = || match (dir, flags.is_empty()) {
        (Dir::Dest, true) => {
            // SAFETY: base..base+len is valid for writes (this function's contract); the
            // kernel only writes it, so it is handed over as uninitialized bytes.
            let buf =
                unsafe { std::slice::from_raw_parts_mut(base.cast::<MaybeUninit<u8>>(), len) };
            rustix::io::pread(borrowed, buf, offset).map(|(done, _)| done.len())
        }
        (Dir::Source, true) => {
            // SAFETY: base..base+len is valid for reads (this function's contract).
            let buf = unsafe { std::slice::from_raw_parts(base.cast_const(), len) };
            rustix::io::pwrite(borrowed, buf, offset)
        }
        _ => {
            let iov = libc::iovec {
                iov_base: base.cast(),
                iov_len: len,
            };
            // SAFETY: `iov` describes base..base+len, valid for the direction (the contract).
            unsafe { rw(fd, dir, &iov, 1, offset, flags) }
        }
    };
    retried(call)
}

/// `preadv2` or `pwritev2` of `n` iovecs at `iov`.
///
/// # Safety
/// `fd` is open and the `n` iovecs at `iov` are valid for the transfer's direction.
unsafe fn rw(
    fd: RawFd,
    dir: Dir,
    iov: *const libc::iovec,
    n: usize,
    offset: u64,
    flags: RwFlags,
) -> Result<usize, Errno> {
    // SAFETY: the caller keeps `fd` open for the call.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let flags = ReadWriteFlags::from_bits_retain(flags.bits());
    match dir {
        Dir::Dest => {
            // SAFETY: the iovecs are valid for writes (the contract); `IoSliceMut` is
            // ABI-compatible with `iovec` on Unix, and no reference to the bytes is made.
            let bufs = unsafe { std::slice::from_raw_parts_mut(iov as *mut IoSliceMut, n) };
            rustix::io::preadv2(fd, bufs, offset, flags)
        }
        Dir::Source => {
            // SAFETY: the iovecs are valid for reads (the contract); `IoSlice` is
            // ABI-compatible with `iovec` on Unix.
            let bufs = unsafe { std::slice::from_raw_parts(iov as *const IoSlice, n) };
            rustix::io::pwritev2(fd, bufs, offset, flags)
        }
    }
}

/// Runs `call` until it is not interrupted: bytes (or 0) on success, `-errno` on failure.
fn retried(mut call: impl FnMut() -> Result<usize, Errno>) -> i64 {
    loop {
        match call() {
            Ok(n) => return n as i64,
            Err(Errno::INTR) => {}
            Err(e) => return -(e.raw_os_error() as i64),
        }
    }
}

/// `fsync(2)`, `fdatasync(2)` or `fallocate(2)` for a non-`Rw` op; `EINTR` is retried.
/// Returns 0 or `-errno`.
pub(crate) fn command(op: &Op) -> i64 {
    // SAFETY: the pusher of `op` guarantees the descriptor stays open until the completion is
    // reaped (Engine::push); no memory is handed over.
    let fd = unsafe { BorrowedFd::borrow_raw(op.fd) };
    let call = || {
        match op.cmd {
            Cmd::Rw | Cmd::Fsync => rustix::fs::fsync(fd),
            Cmd::Fdatasync => rustix::fs::fdatasync(fd),
            Cmd::Fallocate(mode) => {
                let mode = FallocateFlags::from_bits_retain(mode as u32);
                rustix::fs::fallocate(fd, mode, op.offset, op.len as u64)
            }
        }
        .map(|()| 0)
    };
    retried(call)
}
