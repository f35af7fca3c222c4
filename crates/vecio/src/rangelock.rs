//! A reader-writer lock over byte ranges of one file. Aligned direct writes hold their ranges
//! shared; a read-modify-write of unaligned edges holds its widened range exclusive, so no
//! other write can land between its read and its write and tear a block.
//!
//! Two kinds of holder: a scoped guard lives for one blocking call and never waits while it
//! holds; a ticket lives as long as a [`Queue`](crate::Queue) request, from push until the
//! thread that pushed it reaps it (a read-modify-write through the queue holds its window
//! exclusive that way, across its edge reads and its write). A thread that waited on a ticket
//! of its own would wait forever (only it can reap), so every waiting call refuses with
//! `EDEADLK` instead when a holder in the way is a ticket of the calling thread, or a ticket of
//! a thread that is itself waiting on one of the caller's tickets. A queue never waits: it
//! takes a ticket only when nothing is in the way ([`RangeLock::ticket_now`]) and parks the
//! request otherwise.

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

/// A thread waiting for ranges, and what it waits for (for the self-deadlock check).
struct Waiting {
    thread: ThreadId,
    ranges: Vec<(u64, u64)>,
    exclusive: bool,
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
    /// How many of `held` are exclusive: with none, nothing stands in a shared request's way
    /// and `blocked` need not look (the aligned direct path, one request after another).
    exclusive: usize,
    last_id: u64,
    /// Threads waiting on `freed`: a release wakes them only when there are any (a wake is a
    /// system call, and on the aligned path nobody waits).
    waiters: usize,
    /// Threads waiting for ranges, checked for self-deadlock.
    waiting: Vec<Waiting>,
}

/// Waiting would never end: the conflicting range is held by the caller's own queued requests.
#[derive(Debug)]
pub(crate) struct WouldDeadlock;

/// True when `h` stands in the way of holding `[start, end)` (exclusive or shared).
fn conflicts(h: &Held, start: u64, end: u64, exclusive: bool) -> bool {
    (exclusive || h.exclusive) && overlaps(h, start, end)
}

impl State {
    /// True when something held stands in the way of `ranges`.
    fn blocked(&self, ranges: &[(u64, u64)], exclusive: bool) -> bool {
        if !exclusive && self.exclusive == 0 {
            return false;
        }
        ranges
            .iter()
            .any(|&(s, e)| self.held.iter().any(|h| conflicts(h, s, e, exclusive)))
    }

    /// True when waiting for `ranges` could never end: a holder in the way is a ticket of
    /// `me`, or a ticket of a thread that waits for a range one of `me`'s tickets holds.
    fn would_deadlock(&self, me: ThreadId, ranges: &[(u64, u64)], exclusive: bool) -> bool {
        let mine_in_way_of = |w: &Waiting| {
            self.held.iter().any(|h| {
                h.ticket_of == Some(me)
                    && w.ranges
                        .iter()
                        .any(|&(s, e)| conflicts(h, s, e, w.exclusive))
            })
        };
        self.held
            .iter()
            .filter(|h| ranges.iter().any(|&(s, e)| conflicts(h, s, e, exclusive)))
            .filter_map(|h| h.ticket_of)
            .any(|owner| {
                owner == me
                    || self
                        .waiting
                        .iter()
                        .any(|w| w.thread == owner && mine_in_way_of(w))
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
    /// Holds every range in `ranges` shared for a scope, waiting while an exclusive holder is
    /// in the way, unless the wait could never end (see the module docs).
    pub(crate) fn shared(&self, ranges: &[(u64, u64)]) -> Result<RangeGuard<'_>, WouldDeadlock> {
        self.wait_for(ranges, false, None)
    }

    /// Holds `[start, end)` exclusive (waits while anything overlaps it). Tests only: the
    /// library takes exclusive ranges with [`RangeLock::try_exclusive`], which refuses a
    /// wait on the calling thread's own queued requests.
    #[cfg(test)]
    pub(crate) fn exclusive(&self, start: u64, end: u64) -> RangeGuard<'_> {
        self.acquire(&[(start, end)], true)
    }

    /// Holds `[start, end)` exclusive for a scope, waiting while anything overlaps it unless
    /// the wait could never end (see the module docs): then [`WouldDeadlock`], at once.
    pub(crate) fn try_exclusive(
        &self,
        start: u64,
        end: u64,
    ) -> Result<RangeGuard<'_>, WouldDeadlock> {
        self.wait_for(&[(start, end)], true, None)
    }

    /// Holds `ranges` (shared or exclusive) for a queued request of the calling thread if
    /// nothing is in the way now; never waits. Release with [`release`](Self::release).
    pub(crate) fn ticket_now(&self, ranges: &[(u64, u64)], exclusive: bool) -> Option<u64> {
        let mut g = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if g.blocked(ranges, exclusive) {
            return None;
        }
        let me = Some(std::thread::current().id());
        let guard = Self::hold(&mut g, self, ranges, exclusive, me);
        let checkers = !g.waiting.is_empty();
        drop(g);
        if checkers {
            // A thread already waiting may now wait on a cycle through this ticket: it looks
            // again.
            self.freed.notify_all();
        }
        let id = guard.id;
        std::mem::forget(guard);
        Some(id)
    }

    /// As [`ticket_now`](Self::ticket_now), but waits while something is in the way, unless
    /// the wait could never end: then [`WouldDeadlock`].
    pub(crate) fn ticket_wait(
        &self,
        ranges: &[(u64, u64)],
        exclusive: bool,
    ) -> Result<u64, WouldDeadlock> {
        let guard = self.wait_for(ranges, exclusive, Some(std::thread::current().id()))?;
        let id = guard.id;
        std::mem::forget(guard);
        Ok(id)
    }

    /// Releases the ranges of a ticket.
    pub(crate) fn release(&self, ticket: u64) {
        drop(RangeGuard {
            lock: self,
            id: ticket,
        });
    }

    /// Waits until nothing is in the way of `ranges`, then holds them; refuses a wait that
    /// could never end.
    fn wait_for(
        &self,
        ranges: &[(u64, u64)],
        exclusive: bool,
        ticket_of: Option<ThreadId>,
    ) -> Result<RangeGuard<'_>, WouldDeadlock> {
        let me = std::thread::current().id();
        let mut g = self.held.lock().unwrap_or_else(|p| p.into_inner());
        while g.blocked(ranges, exclusive) {
            if g.would_deadlock(me, ranges, exclusive) {
                return Err(WouldDeadlock);
            }
            g.waiters += 1;
            g.waiting.push(Waiting {
                thread: me,
                ranges: ranges.to_vec(),
                exclusive,
            });
            g = self.freed.wait(g).unwrap_or_else(|p| p.into_inner());
            g.waiters -= 1;
            if let Some(i) = g.waiting.iter().position(|w| w.thread == me) {
                g.waiting.swap_remove(i);
            }
        }
        let guard = Self::hold(&mut g, self, ranges, exclusive, ticket_of);
        let checkers = ticket_of.is_some() && !g.waiting.is_empty();
        drop(g);
        if checkers {
            self.freed.notify_all();
        }
        Ok(guard)
    }

    #[cfg(test)]
    fn acquire(&self, ranges: &[(u64, u64)], exclusive: bool) -> RangeGuard<'_> {
        let mut g = self.held.lock().unwrap_or_else(|p| p.into_inner());
        while g.blocked(ranges, exclusive) {
            g.waiters += 1;
            g = self.freed.wait(g).unwrap_or_else(|p| p.into_inner());
            g.waiters -= 1;
        }
        Self::hold(&mut g, self, ranges, exclusive, None)
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
        if exclusive {
            g.exclusive += ranges.len();
        }
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
        // The ranges of this id (one, mostly), each swapped out: the order of `held` does not
        // matter.
        let mut i = 0;
        while i < g.held.len() {
            if g.held[i].id == self.id {
                if g.held.swap_remove(i).exclusive {
                    g.exclusive -= 1;
                }
            } else {
                i += 1;
            }
        }
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

    /// A shared request is refused while an exclusive holder overlaps it, granted beside it
    /// elsewhere, and granted once it is released (the count of exclusive holders that lets
    /// shared requests skip the scan goes back to zero).
    #[test]
    fn shared_tickets_see_exclusive_holders_come_and_go() {
        let l = RangeLock::default();
        let x = l.try_exclusive(0, 4096).unwrap();
        assert!(l.ticket_now(&[(1024, 2048)], false).is_none());
        let beside = l
            .ticket_now(&[(8192, 12288)], false)
            .expect("a range apart");
        drop(x);
        let after = l.ticket_now(&[(1024, 2048)], false).expect("released");
        l.release(after);
        l.release(beside);
        let x2 = l.ticket_now(&[(0, 4096)], true).expect("nothing held");
        assert!(l.ticket_now(&[(0, 512)], false).is_none());
        l.release(x2);
        assert!(l.ticket_now(&[(0, 512)], false).is_some());
    }

    #[test]
    fn shared_ranges_coexist() {
        let l = RangeLock::default();
        let _a = l.shared(&[(0, 10)]).unwrap();
        let _b = l.shared(&[(5, 15)]).unwrap();
    }

    #[test]
    fn exclusive_waits_for_overlapping_shared() {
        let l = Arc::new(RangeLock::default());
        let got = Arc::new(AtomicBool::new(false));
        let a = l.shared(&[(0, 4096)]).unwrap();
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
