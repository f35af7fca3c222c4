//! A reader-writer lock over byte ranges of one file. Aligned direct writes hold their ranges
//! shared; a read-modify-write of unaligned edges holds its widened range exclusive, so no
//! other write can land between its read and its write and tear a block.
//!
//! Two kinds of holder: a scoped guard lives for one blocking call and never waits while it
//! holds; a ticket lives as long as a [`Queue`](crate::Queue) request, from push until the
//! thread that pushed it reaps it. A thread that waited on a ticket of its own would wait
//! forever (only it can reap), so [`try_exclusive`](RangeLock::try_exclusive) refuses with
//! `EDEADLK` instead of waiting when a conflicting holder is a ticket of the calling thread, or
//! a ticket of a thread that is itself waiting on one of the caller's tickets.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::thread::ThreadId;

#[derive(Debug, Clone, Copy)]
struct Held {
    start: u64,
    end: u64,
    exclusive: bool,
    id: u64,
    /// The thread that pushed the queued request holding this range, for a ticket.
    ticket_of: Option<ThreadId>,
}

/// A thread waiting in [`RangeLock::try_exclusive`], and what it waits for.
struct Waiting {
    thread: ThreadId,
    start: u64,
    end: u64,
}

/// Byte-range reader-writer lock (see the module docs).
#[derive(Default)]
pub(crate) struct RangeLock {
    held: Mutex<State>,
    freed: Condvar,
}

#[derive(Default)]
struct State {
    held: Vec<Held>,
    last_id: u64,
    /// Threads waiting on `freed`: a release wakes them only when there are any (a wake is a
    /// system call, and on the aligned path nobody waits).
    waiters: usize,
    /// Threads waiting for an exclusive range they checked for self-deadlock.
    waiting: Vec<Waiting>,
}

/// Waiting would never end: the conflicting range is held by the caller's own queued requests.
#[derive(Debug)]
pub(crate) struct WouldDeadlock;

impl State {
    /// True when waiting for `[start, end)` exclusive could never end: a conflicting holder is
    /// a ticket of `me`, or a ticket of a thread waiting for a range one of `me`'s tickets holds.
    fn would_deadlock(&self, me: ThreadId, start: u64, end: u64) -> bool {
        let mine = |s: u64, e: u64| {
            self.held
                .iter()
                .any(|h| h.ticket_of == Some(me) && overlaps(h, s, e))
        };
        self.held
            .iter()
            .filter(|h| overlaps(h, start, end))
            .filter_map(|h| h.ticket_of)
            .any(|owner| {
                owner == me
                    || self
                        .waiting
                        .iter()
                        .any(|w| w.thread == owner && mine(w.start, w.end))
            })
    }
}

/// Every open inode's lock, by `(st_dev, st_ino)`: two `File`s of one inode in this process
/// (two opens of one path, or a file server's several handles) share one lock, so their
/// read-modify-writes and direct writes order against each other too.
static BY_INODE: OnceLock<Mutex<InodeLocks>> = OnceLock::new();

/// `(st_dev, st_ino)` to the lock of an inode some `File` still holds.
type InodeLocks = HashMap<(u64, u64), Weak<RangeLock>>;

/// The range lock of inode `(dev, ino)`, shared with every other open `File` of it.
pub(crate) fn for_inode(dev: u64, ino: u64) -> Arc<RangeLock> {
    let mut map = BY_INODE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(lock) = map.get(&(dev, ino)).and_then(Weak::upgrade) {
        return lock;
    }
    // Forget closed inodes now and then, so the map stays the size of what is open.
    if map.len() >= 64 && map.len().is_power_of_two() {
        map.retain(|_, w| w.strong_count() > 0);
    }
    let lock = Arc::new(RangeLock::default());
    map.insert((dev, ino), Arc::downgrade(&lock));
    lock
}

/// Releases its ranges when dropped.
pub(crate) struct RangeGuard<'a> {
    lock: &'a RangeLock,
    id: u64,
}

fn overlaps(a: &Held, start: u64, end: u64) -> bool {
    a.start < end && start < a.end
}

impl RangeLock {
    /// Holds every range in `ranges` shared (waits while any overlaps an exclusive holder).
    pub(crate) fn shared(&self, ranges: &[(u64, u64)]) -> RangeGuard<'_> {
        self.acquire(ranges, false)
    }

    /// Holds `[start, end)` exclusive (waits while anything overlaps it). Tests only: the
    /// library takes exclusive ranges with [`RangeLock::try_exclusive`], which refuses a
    /// wait on the calling thread's own queued requests.
    #[cfg(test)]
    pub(crate) fn exclusive(&self, start: u64, end: u64) -> RangeGuard<'_> {
        self.acquire(&[(start, end)], true)
    }

    /// Holds `[start, end)` exclusive, waiting while anything overlaps it unless the wait could
    /// never end (see the module docs): then [`WouldDeadlock`], at once.
    pub(crate) fn try_exclusive(
        &self,
        start: u64,
        end: u64,
    ) -> Result<RangeGuard<'_>, WouldDeadlock> {
        let me = std::thread::current().id();
        let mut g = self.held.lock().unwrap_or_else(|p| p.into_inner());
        while g.held.iter().any(|h| overlaps(h, start, end)) {
            if g.would_deadlock(me, start, end) {
                return Err(WouldDeadlock);
            }
            g.waiters += 1;
            g.waiting.push(Waiting {
                thread: me,
                start,
                end,
            });
            g = self.freed.wait(g).unwrap_or_else(|p| p.into_inner());
            g.waiters -= 1;
            if let Some(i) = g.waiting.iter().position(|w| w.thread == me) {
                g.waiting.swap_remove(i);
            }
        }
        Ok(Self::hold(&mut g, self, &[(start, end)], true, None))
    }

    /// Holds every range in `ranges` shared until [`release`](Self::release) is called with
    /// the returned ticket (for holders whose lifetime is not a scope, like queued requests).
    pub(crate) fn shared_ticket(&self, ranges: &[(u64, u64)]) -> u64 {
        let guard = self.acquire_as(ranges, false, Some(std::thread::current().id()));
        let id = guard.id;
        std::mem::forget(guard);
        id
    }

    /// Releases the ranges of a ticket from [`shared_ticket`](Self::shared_ticket).
    pub(crate) fn release(&self, ticket: u64) {
        drop(RangeGuard {
            lock: self,
            id: ticket,
        });
    }

    fn acquire(&self, ranges: &[(u64, u64)], exclusive: bool) -> RangeGuard<'_> {
        self.acquire_as(ranges, exclusive, None)
    }

    fn acquire_as(
        &self,
        ranges: &[(u64, u64)],
        exclusive: bool,
        ticket_of: Option<ThreadId>,
    ) -> RangeGuard<'_> {
        let mut g = self.held.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let blocked = ranges.iter().any(|&(s, e)| {
                g.held
                    .iter()
                    .any(|h| (exclusive || h.exclusive) && overlaps(h, s, e))
            });
            if !blocked {
                break;
            }
            g.waiters += 1;
            g = self.freed.wait(g).unwrap_or_else(|p| p.into_inner());
            g.waiters -= 1;
        }
        let guard = Self::hold(&mut g, self, ranges, exclusive, ticket_of);
        let checkers = ticket_of.is_some() && !g.waiting.is_empty();
        drop(g);
        if checkers {
            // A thread already waiting may now wait on a cycle through this ticket: it looks
            // again.
            self.freed.notify_all();
        }
        guard
    }

    /// Records `ranges` as held under a new id.
    fn hold<'a>(
        g: &mut State,
        lock: &'a RangeLock,
        ranges: &[(u64, u64)],
        exclusive: bool,
        ticket_of: Option<ThreadId>,
    ) -> RangeGuard<'a> {
        g.last_id += 1;
        let id = g.last_id;
        for &(start, end) in ranges {
            g.held.push(Held {
                start,
                end,
                exclusive,
                id,
                ticket_of,
            });
        }
        RangeGuard { lock, id }
    }
}

impl Drop for RangeGuard<'_> {
    fn drop(&mut self) {
        let mut g = self.lock.held.lock().unwrap_or_else(|p| p.into_inner());
        g.held.retain(|h| h.id != self.id);
        let wake = g.waiters > 0;
        drop(g);
        if wake {
            self.lock.freed.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn shared_ranges_coexist() {
        let l = RangeLock::default();
        let _a = l.shared(&[(0, 10)]);
        let _b = l.shared(&[(5, 15)]);
    }

    #[test]
    fn exclusive_waits_for_overlapping_shared() {
        let l = Arc::new(RangeLock::default());
        let got = Arc::new(AtomicBool::new(false));
        let a = l.shared(&[(0, 4096)]);
        let (l2, got2) = (l.clone(), got.clone());
        let t = std::thread::spawn(move || {
            let _g = l2.try_exclusive(100, 200).unwrap();
            got2.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !got.load(Ordering::SeqCst),
            "exclusive lock taken over a shared holder"
        );
        drop(a);
        t.join().unwrap();
        assert!(got.load(Ordering::SeqCst));
    }

    #[test]
    fn disjoint_exclusive_ranges_do_not_wait() {
        let l = RangeLock::default();
        let _a = l.exclusive(0, 4096);
        let _b = l.exclusive(4096, 8192);
    }
}
