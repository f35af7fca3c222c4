//! The range of the file's lock a direct request holds while it is in the engine, so that no
//! read-modify-write of an edge block can interleave with another write of that block, and no
//! read sees the block-padded size a growing read-modify-write has for a moment.
//!
//! - Straight or bounced: the request's own bytes, shared.
//! - Read-modify-write: its aligned window, exclusive; to the end of everything when the window
//!   passes the end of the file (the file grows, then is cut back, and nothing else may land
//!   past the end in between). Whole blocks with no edge to read (unaligned memory only) can
//!   tear nothing: shared. An append (`RWF_APPEND`): everything from the block holding the end
//!   on, exclusive, so no request inside the file stops it.
//! - `fallocate` and `set_len`: the whole blocks they touch, exclusive.

use crate::rangelock::RangeGuard;
use crate::{DioAlign, File};

/// How a request goes through the engine, as far as its lock is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Straight over the caller's buffers.
    Direct,
    /// Through an aligned bounce window (an unaligned direct read).
    Bounce,
    /// Read-modify-write of its aligned window; `append` for `RWF_APPEND`.
    Rmw { append: bool },
}

/// A range of a file's lock, and how it is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LockSpan {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) exclusive: bool,
}

impl LockSpan {
    fn new(start: u64, end: u64, exclusive: bool) -> LockSpan {
        LockSpan {
            start,
            end,
            exclusive,
        }
    }

    /// The whole blocks holding `[start, end)`, exclusive (`end` `u64::MAX`: to the end).
    pub(crate) fn blocks(align: DioAlign, start: u64, end: u64) -> LockSpan {
        LockSpan::new(align.block_floor(start), align.block_ceil(end), true)
    }

    /// The whole blocks an `fallocate(2)` of `len` bytes at `offset` touches, exclusive; the
    /// modes that move data (collapse, insert) hold everything from `offset` on.
    pub(crate) fn fallocate(
        align: DioAlign,
        mode: rustix::fs::FallocateFlags,
        offset: u64,
        len: u64,
    ) -> LockSpan {
        use rustix::fs::FallocateFlags as F;
        let end = if mode.intersects(F::COLLAPSE_RANGE | F::INSERT_RANGE) {
            u64::MAX
        } else {
            offset.saturating_add(len)
        };
        LockSpan::blocks(align, offset, end)
    }

    /// What `route` must hold for `len` bytes at `offset` of `file` as it is now (its size read
    /// when it matters); `None` when nothing need be held (a buffered file).
    pub(crate) fn exact(
        file: &File,
        route: Route,
        offset: u64,
        len: usize,
    ) -> Result<Option<LockSpan>, i32> {
        let align = file.dio_align();
        let end = offset + len as u64;
        let size = || {
            file.size()
                .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
        };
        Ok(match route {
            Route::Direct if !file.is_direct() => None,
            Route::Direct | Route::Bounce => Some(LockSpan::new(offset, end, false)),
            Route::Rmw { append: true } => {
                Some(LockSpan::new(align.block_floor(size()?), u64::MAX, true))
            }
            Route::Rmw { .. } if align.allows(offset, len as u64) => {
                Some(LockSpan::new(offset, end, false))
            }
            Route::Rmw { .. } => {
                let w = align.window(offset, len as u64);
                let lock_end = if w.end > size()? { u64::MAX } else { w.end };
                Some(LockSpan::new(w.start, lock_end, true))
            }
        })
    }

    /// Roughly what [`exact`](Self::exact) will ask for, without reading the file's size: for
    /// ordering requests that wait.
    pub(crate) fn claim(file: &File, route: Route, offset: u64, len: usize) -> Option<LockSpan> {
        let end = offset + len as u64;
        match route {
            Route::Direct if !file.is_direct() => None,
            Route::Direct | Route::Bounce => Some(LockSpan::new(offset, end, false)),
            Route::Rmw { append: true } => Some(LockSpan::new(0, u64::MAX, true)),
            Route::Rmw { .. } => {
                let w = file.dio_align().window(offset, len as u64);
                Some(LockSpan::new(w.start, w.end, true))
            }
        }
    }

    /// True when holding `self` is enough for `need`.
    pub(crate) fn covers(self, need: LockSpan) -> bool {
        self.start <= need.start && need.end <= self.end && (self.exclusive || !need.exclusive)
    }

    /// Takes `self` of `file`'s lock, waiting while other threads hold it. `Err` when the wait
    /// could never end (the calling thread's own queued requests hold some of it).
    pub(crate) fn take<'f>(self, file: &'f File) -> Result<RangeGuard<'f>, i32> {
        let held = if self.exclusive {
            file.locks.try_exclusive(self.start, self.end)
        } else {
            file.locks.shared(&[(self.start, self.end)])
        };
        held.map_err(|_| libc::EDEADLK)
    }
}

/// Holds what `route` needs for `len` bytes at `offset` of `file`, blocking: the span is read
/// again once held, and taken again if the file's size moved it; after a few tries everything
/// from the request's block on is held, which covers any size. `Ok(None)`: nothing to hold.
pub(crate) fn hold(
    file: &File,
    route: Route,
    offset: u64,
    len: usize,
) -> Result<Option<RangeGuard<'_>>, i32> {
    for _ in 0..3 {
        let Some(want) = LockSpan::exact(file, route, offset, len)? else {
            return Ok(None);
        };
        let guard = want.take(file)?;
        match LockSpan::exact(file, route, offset, len)? {
            Some(now) if want.covers(now) => return Ok(Some(guard)),
            _ => drop(guard),
        }
    }
    let align = file.dio_align();
    let all = LockSpan::blocks(
        align,
        if matches!(route, Route::Rmw { append: true }) {
            0
        } else {
            offset
        },
        u64::MAX,
    );
    all.take(file).map(Some)
}
