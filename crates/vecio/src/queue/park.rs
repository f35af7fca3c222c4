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

use super::inflight::{InFlight, Plan, Stage};
use super::Queue;
use crate::direct::{LockSpan, Route};
use crate::engine::Cmd;
use crate::request::Step;
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
        match route(f) {
            Ok(route) => LockSpan::claim(&f.file, route, f.at.offset, f.rest()),
            Err(span) => span,
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
                Ok(Some(now)) if want.covers(now) => {
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

/// The lock route of a request, or for a command the span it holds outright.
fn route(f: &InFlight) -> Result<Route, Option<LockSpan>> {
    match f.plan {
        Plan::Direct => Ok(Route::Direct),
        Plan::Bounce => Ok(Route::Bounce),
        Plan::Rmw => Ok(Route::Rmw {
            append: f.flags.contains(RwFlags::APPEND),
        }),
        Plan::Command(Cmd::Fallocate(mode), len) => Err(Some(LockSpan::fallocate(
            f.file.dio_align(),
            FallocateFlags::from_bits_retain(mode as u32),
            f.at.offset,
            len as u64,
        ))),
        Plan::Command(..) => Err(None),
    }
}

/// The range a request must hold, given the file as it is now; `None` when it needs none.
fn exact_span(f: &InFlight) -> Result<Option<LockSpan>, i32> {
    match route(f) {
        Ok(route) => LockSpan::exact(&f.file, route, f.at.offset, f.rest()),
        Err(span) => Ok(span),
    }
}
