//! A [`Queue`](super::Queue) request between push and reap: its buffers, what is left of them as
//! iovecs, its progress, its range-lock ticket and the stage it is in.

use std::sync::Arc;

use crate::direct::{Bounce, Rmw};
use crate::engine::Cmd;
use crate::request::Progress;
use crate::{File, RwFlags};

use super::OwnedBuf;

/// What a request is doing. The unaligned stages are boxed: they are the rare path, and a small
/// `Stage` keeps every request's slot small, which the queue moves at push and at reap.
pub(super) enum Stage {
    /// Waiting for its range of the file's lock; nothing of it is in the engine yet.
    Parked,
    /// Reading or writing straight over the request's own buffers.
    Direct,
    /// An unaligned direct read: its aligned window read into a bounce buffer, copied out
    /// when it completes.
    Bounce(Box<Bounce>),
    /// A read-modify-write: its edge blocks are being read into the window.
    Edges(Box<Rmw>),
    /// A read-modify-write: the window, with the caller's bytes copied in, is being written.
    WriteBack(Box<Rmw>),
    /// A whole-file command (fsync, fdatasync, fallocate) of `len` bytes (fallocate).
    Command { cmd: Cmd, len: usize },
}

/// One request in the queue.
pub(super) struct InFlight {
    pub(super) file: Arc<File>,
    pub(super) user_data: u64,
    pub(super) at: Progress,
    pub(super) flags: RwFlags,
    pub(super) bufs: Vec<OwnedBuf>,
    /// What is left, as iovecs into `bufs` (trimmed from the front as bytes complete).
    pub(super) iov: Vec<libc::iovec>,
    pub(super) first: usize,
    /// The page pool all of `bufs` come from, if they do (registered buffers on io_uring).
    pub(super) pool: Option<u64>,
    /// The range-lock ticket, once taken.
    pub(super) ticket: Option<u64>,
    pub(super) stage: Stage,
    /// What the request goes to once its lock is taken (for a parked request).
    pub(super) plan: Plan,
    /// Ops of this request in the engine.
    pub(super) pending: u8,
    /// The iovecs of a stage's own ops (bounce window, edge blocks, window write).
    pub(super) op_iov: Vec<libc::iovec>,
}

/// The route a request takes through the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Plan {
    /// Straight over the buffers.
    Direct,
    /// Through an aligned bounce window (unaligned direct read).
    Bounce,
    /// Read-modify-write of the aligned window (unaligned or appending direct write).
    Rmw,
    /// A whole-file command.
    Command(Cmd, usize),
}

// SAFETY: the iovecs point into `bufs`, which the InFlight owns; moving it between threads
// moves that ownership along.
unsafe impl Send for InFlight {}

impl InFlight {
    /// Bytes left of the request.
    pub(super) fn rest(&self) -> usize {
        self.iov[self.first..].iter().map(|v| v.iov_len).sum()
    }

    /// Drops `n` bytes from the front of what is left.
    pub(super) fn advance(&mut self, mut n: usize) {
        while n > 0 && self.first < self.iov.len() {
            let v = &mut self.iov[self.first];
            if n < v.iov_len {
                // SAFETY: n < iov_len, so the new base stays inside the same buffer.
                v.iov_base = unsafe { v.iov_base.cast::<u8>().add(n) }.cast();
                v.iov_len -= n;
                n = 0;
            } else {
                n -= v.iov_len;
                self.first += 1;
            }
        }
    }

    /// Copies `src` into the front of what is left (an unaligned read's bytes); returns the
    /// bytes copied.
    pub(super) fn copy_in(&mut self, src: &[u8]) -> usize {
        let mut copied = 0;
        for v in &self.iov[self.first..] {
            if copied == src.len() {
                break;
            }
            let n = v.iov_len.min(src.len() - copied);
            // SAFETY: the iovec points into a buffer this request owns, at least iov_len
            // bytes long, and no op of this request is in the engine while it is copied to.
            unsafe { std::ptr::copy_nonoverlapping(src[copied..].as_ptr(), v.iov_base.cast(), n) };
            copied += n;
        }
        copied
    }

    /// Copies the front of what is left into `dst` (a read-modify-write's bytes); returns the
    /// bytes copied.
    pub(super) fn copy_out(&self, dst: &mut [u8]) -> usize {
        let mut copied = 0;
        for v in &self.iov[self.first..] {
            if copied == dst.len() {
                break;
            }
            let n = v.iov_len.min(dst.len() - copied);
            // SAFETY: the iovec points into a buffer this request owns, at least iov_len
            // bytes long.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    v.iov_base.cast::<u8>(),
                    dst[copied..].as_mut_ptr(),
                    n,
                )
            };
            copied += n;
        }
        copied
    }
}

/// iovec arrays of finished requests, kept for the next ones (no allocation per request).
#[derive(Default)]
pub(super) struct SpareIovecs(Vec<Vec<libc::iovec>>);

// SAFETY: the arrays are empty when stored (cleared before reuse, and never read before being
// refilled); their pointers point at nothing the queue would dereference.
unsafe impl Send for SpareIovecs {}

impl SpareIovecs {
    /// An empty array, recycled when one is spare.
    pub(super) fn take(&mut self) -> Vec<libc::iovec> {
        let mut v = self.0.pop().unwrap_or_default();
        v.clear();
        v
    }

    /// Keeps `v` for a later request.
    pub(super) fn put(&mut self, mut v: Vec<libc::iovec>) {
        v.clear();
        self.0.push(v);
    }
}
