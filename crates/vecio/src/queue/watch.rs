//! A readiness watch on one descriptor beside the queue's I/O: a server arms one on its client
//! socket, so a single wait covers the socket and the disk (`IORING_OP_POLL_ADD` in the
//! engine's ring), instead of waiting on the disk with a timeout and polling the socket between.

use std::os::fd::BorrowedFd;

use rustix::event::PollFlags;

use super::Queue;
use crate::engine::Cqe;
use crate::error::Result;

/// The engine tag of the watch's poll op.
pub(super) const WATCH_TAG: u64 = u64::MAX;
/// The engine tag of the op that cancels it.
pub(super) const UNWATCH_TAG: u64 = u64::MAX - 1;

/// Where the watch stands.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum Watch {
    /// None armed.
    #[default]
    Off,
    /// Armed in the engine.
    Armed,
    /// Fired with this result (ready bits, or `-errno`), not yet taken.
    Fired(i64),
}

/// The watch's ops the engine holds: the poll, and a cancellation of it.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct WatchOps {
    pub(super) state: Watch,
    /// Engine ops of the watch not yet completed (the poll and its removal: 0 to 2).
    pub(super) in_engine: usize,
}

impl WatchOps {
    /// Takes a completion if it is the watch's own; false for a request's.
    pub(super) fn take(&mut self, c: &Cqe) -> bool {
        match c.tag {
            WATCH_TAG => {
                self.in_engine = self.in_engine.saturating_sub(1);
                if self.state == Watch::Armed {
                    self.state = Watch::Fired(c.result);
                }
                true
            }
            UNWATCH_TAG => {
                self.in_engine = self.in_engine.saturating_sub(1);
                true
            }
            _ => false,
        }
    }
}

impl Queue {
    /// Arms a one-shot watch on `fd` for `events` (`POLLIN`, `POLLOUT`...): the queue's waits
    /// ([`submit_and_wait_any`](Self::submit_and_wait_any)) then also return when `fd` is
    /// ready, and [`watch_fired`](Self::watch_fired) tells so. Returns `false` when the engine
    /// cannot watch a descriptor (only io_uring can); the caller then waits its own way. One
    /// watch at a time: while one is armed this does nothing and returns `true`.
    pub fn watch(&mut self, fd: BorrowedFd<'_>, events: PollFlags) -> Result<bool> {
        if self.watch.state == Watch::Armed {
            return Ok(true);
        }
        let armed = self
            .engine
            .watch(fd, u32::from(events.bits()), WATCH_TAG)
            .map_err(|e| self.engine_error(e))?;
        if armed {
            self.watch.state = Watch::Armed;
            self.watch.in_engine += 1;
        }
        Ok(armed)
    }

    /// True while a watch is armed and has not fired.
    pub fn watching(&self) -> bool {
        self.watch.state == Watch::Armed
    }

    /// The ready bits of a watch that fired since it was armed (which disarms it); `None`
    /// while it has not (or none is armed). What the last wait or [`reap`](Self::reap) saw:
    /// this makes no system call. A failed poll counts as ready (`POLLERR`): the descriptor's
    /// own call says why.
    pub fn watch_fired(&mut self) -> Option<PollFlags> {
        match self.watch.state {
            Watch::Fired(r) => {
                self.watch.state = Watch::Off;
                let bits = if r < 0 {
                    PollFlags::ERR.bits()
                } else {
                    r as u16
                };
                Some(PollFlags::from_bits_retain(bits))
            }
            _ => None,
        }
    }

    /// Cancels an armed watch (its poll op completes, cancelled, through the engine).
    pub fn unwatch(&mut self) -> Result<()> {
        if self.watch.state != Watch::Armed {
            self.watch.state = Watch::Off;
            return Ok(());
        }
        self.watch.state = Watch::Off;
        self.watch.in_engine += 1;
        self.engine
            .unwatch(WATCH_TAG, UNWATCH_TAG)
            .map_err(|e| self.engine_error(e))
    }

    /// Submits everything pushed and waits until a request finishes or the watch fires,
    /// whichever comes first (at once if either already happened, or if nothing is in the
    /// engine to wait for).
    pub fn submit_and_wait_any(&mut self) -> Result<()> {
        self.retry_parked();
        if !self.ready.is_empty() || matches!(self.watch.state, Watch::Fired(_)) {
            return self.submit();
        }
        if self.engine_io() == 0 && self.in_flight > 0 && self.refused.is_empty() {
            // Only parked requests, held up by other threads.
            self.wait_parked();
            return self.submit();
        }
        if self.engine_io() == 0 && self.watch.state != Watch::Armed {
            return self.submit();
        }
        self.engine_wait(1)?;
        self.collect();
        self.flush()
    }

    /// Ops in the engine for requests (the watch's own left out).
    pub(super) fn engine_io(&self) -> usize {
        self.engine.in_flight().saturating_sub(self.watch.in_engine)
    }
}
