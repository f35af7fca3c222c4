//! Range locks for [`Queue`] requests, without ever blocking `push`: a request takes its range
//! of the file's lock when nothing is in the way, and otherwise waits, parked in the queue,
//! until a completion (its own queue's or another thread's release) frees the range. Parked
//! requests start in order of arrival: a later request over an earlier parked one's range
//! parks behind it, so a read-modify-write is not starved by a stream of aligned requests.
//!
//! Only when the engine has nothing left in flight and parked requests remain does the queue
//! wait on the lock itself (the holders are then other threads, whose calls end by
//! themselves); a wait that could never end (a holder is a ticket of this thread's other
//! queue) fails the request with `EDEADLK`.

use std::collections::VecDeque;

use rustix::fs::FallocateFlags;

use super::inflight::{InFlight, LockSpan, Plan, Stage};
use super::Queue;
use crate::engine::Cmd;
use crate::request::{window_end, Step};
use crate::RwFlags;

/// What came of asking for a request's range.
enum Taken {
    /// Held: the request can start.
    Yes,
    /// Something is in the way now.
    Busy,
    /// The request fails with this errno (`EDEADLK`, or the file's size could not be read).
    Failed(i32),
}

/// Parked requests, in order of arrival.
#[derive(Default)]
pub(super) struct Parked(VecDeque<usize>);

impl Parked {
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

impl Queue {
    /// Starts a new request, or parks it when its range is not free now.
    pub(super) fn admit(&mut self, slot: usize) {
        let behind = self.slots[slot]
            .as_ref()
            .and_then(|f| self.claim(f))
            .is_some_and(|claim| self.parked_in_way(slot, claim, self.parked.0.len()));
        if behind {
            self.park(slot);
            return;
        }
        match self.take_range(slot, false) {
            Taken::Yes => self.start(slot),
            Taken::Busy => self.park(slot),
            Taken::Failed(errno) => self.finish(slot, Step::Failed(errno)),
        }
    }

    fn park(&mut self, slot: usize) {
        if let Some(f) = self.slots[slot].as_mut() {
            f.stage = Stage::Parked;
        }
        self.parked.0.push_back(slot);
    }

    /// Starts the parked requests whose ranges are free now, in order of arrival.
    pub(super) fn retry_parked(&mut self) {
        let mut i = 0;
        while i < self.parked.0.len() {
            let slot = self.parked.0[i];
            let claim = self.slots[slot].as_ref().and_then(|f| self.claim(f));
            if claim.is_some_and(|c| self.parked_in_way(slot, c, i)) {
                i += 1;
                continue;
            }
            match self.take_range(slot, false) {
                Taken::Busy => i += 1,
                Taken::Yes => {
                    self.parked.0.remove(i);
                    self.start(slot);
                }
                Taken::Failed(errno) => {
                    self.parked.0.remove(i);
                    self.finish(slot, Step::Failed(errno));
                }
            }
        }
    }

    /// With nothing in the engine, waits for the oldest parked request's range (held by other
    /// threads) and starts it.
    pub(super) fn wait_parked(&mut self) {
        let Some(slot) = self.parked.0.pop_front() else {
            return;
        };
        match self.take_range(slot, true) {
            Taken::Yes => self.start(slot),
            Taken::Busy => self.parked.0.push_front(slot),
            Taken::Failed(errno) => self.finish(slot, Step::Failed(errno)),
        }
    }

    /// True when one of the first `upto` parked requests (other than `slot`) claims a range of
    /// the same file overlapping `claim`.
    fn parked_in_way(&self, slot: usize, claim: LockSpan, upto: usize) -> bool {
        let Some(me) = self.slots[slot].as_ref() else {
            return false;
        };
        self.parked.0.iter().take(upto).any(|&other| {
            other != slot
                && self.slots[other].as_ref().is_some_and(|o| {
                    o.file.id() == me.file.id()
                        && self
                            .claim(o)
                            .is_some_and(|c| c.start < claim.end && claim.start < c.end)
                })
        })
    }

    /// The range a request will ask for, roughly (for ordering parked requests; the exact
    /// range of a read-modify-write depends on the file's size when it is taken).
    fn claim(&self, f: &InFlight) -> Option<LockSpan> {
        let bs = (f.file.dio_align().offset as u64).max(1);
        let end = f.at.offset + f.rest() as u64;
        match f.plan {
            Plan::Direct if !f.file.is_direct() => None,
            Plan::Direct | Plan::Bounce => Some(span(f.at.offset, end, false)),
            Plan::Rmw if f.flags.contains(RwFlags::APPEND) => Some(span(0, u64::MAX, true)),
            Plan::Rmw => Some(span(f.at.offset / bs * bs, window_end(end, bs), true)),
            Plan::Command(Cmd::Fallocate(mode), len) => Some(fallocate_span(
                f,
                FallocateFlags::from_bits_retain(mode as u32),
                len,
            )),
            Plan::Command(..) => None,
        }
    }

    /// Asks for a request's range: `wait` waits while other threads hold it (refusing a wait
    /// that could never end), otherwise only takes it when it is free now. A
    /// read-modify-write learns the file's size under the lock, and an append its offset.
    fn take_range(&mut self, slot: usize, wait: bool) -> Taken {
        let Some(f) = self.slots[slot].as_mut() else {
            return Taken::Busy;
        };
        // A size-dependent range is checked again once held; a file that keeps changing size
        // under it is asked for again, a few times, then parked.
        for _ in 0..4 {
            let want = match exact_span(f) {
                Ok(Some(want)) => want,
                Ok(None) => return Taken::Yes,
                Err(errno) => return Taken::Failed(errno),
            };
            let ranges = [(want.start, want.end)];
            let ticket = if wait {
                match f.file.locks.ticket_wait(&ranges, want.exclusive) {
                    Ok(t) => t,
                    Err(_) => return Taken::Failed(libc::EDEADLK),
                }
            } else {
                match f.file.locks.ticket_now(&ranges, want.exclusive) {
                    Some(t) => t,
                    None => return Taken::Busy,
                }
            };
            match exact_span(f) {
                Ok(Some(now)) if covers(want, now) => {
                    f.ticket = Some(ticket);
                    return Taken::Yes;
                }
                Ok(_) => f.file.locks.release(ticket),
                Err(errno) => {
                    f.file.locks.release(ticket);
                    return Taken::Failed(errno);
                }
            }
        }
        Taken::Busy
    }
}

fn span(start: u64, end: u64, exclusive: bool) -> LockSpan {
    LockSpan {
        start,
        end,
        exclusive,
    }
}

/// True when holding `held` is enough for `need`.
fn covers(held: LockSpan, need: LockSpan) -> bool {
    held.start <= need.start && need.end <= held.end && (held.exclusive || !need.exclusive)
}

/// The range a request must hold, given the file as it is now; `None` when it needs none.
fn exact_span(f: &InFlight) -> Result<Option<LockSpan>, i32> {
    let bs = (f.file.dio_align().offset as u64).max(1);
    let end = f.at.offset + f.rest() as u64;
    let size = || {
        f.file
            .size()
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    };
    Ok(match f.plan {
        Plan::Direct if !f.file.is_direct() => None,
        Plan::Direct | Plan::Bounce => Some(span(f.at.offset, end, false)),
        // RWF_APPEND on a direct file: everything from the block holding the end on, so no
        // request inside the file stops an append.
        Plan::Rmw if f.flags.contains(RwFlags::APPEND) => {
            Some(span(size()? / bs * bs, u64::MAX, true))
        }
        // Whole blocks with no edge to read: nothing can tear, a shared hold suffices.
        Plan::Rmw if f.at.offset % bs == 0 && end % bs == 0 => Some(span(f.at.offset, end, false)),
        // A window reaching past the end grows the file, then cuts it back: everything from
        // its start on is held, so no other request past the end lands in between.
        Plan::Rmw => {
            let (start, wend) = (f.at.offset / bs * bs, window_end(end, bs));
            let lock_end = if wend > size()? { u64::MAX } else { wend };
            Some(span(start, lock_end, true))
        }
        Plan::Command(Cmd::Fallocate(mode), len) => Some(fallocate_span(
            f,
            FallocateFlags::from_bits_retain(mode as u32),
            len,
        )),
        Plan::Command(..) => None,
    })
}

/// The whole blocks an fallocate touches, held exclusive (as [`crate::File::fallocate`] does);
/// modes that move data hold everything from `offset` on.
fn fallocate_span(f: &InFlight, mode: FallocateFlags, len: usize) -> LockSpan {
    let bs = (f.file.dio_align().offset as u64).max(1);
    let start = f.at.offset / bs * bs;
    let shifts = FallocateFlags::COLLAPSE_RANGE | FallocateFlags::INSERT_RANGE;
    let end = if mode.intersects(shifts) {
        u64::MAX
    } else {
        (f.at.offset + len as u64).div_ceil(bs).saturating_mul(bs)
    };
    span(start, end, true)
}
