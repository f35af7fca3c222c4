//! The fast-read policy applied to one file: a buffered read tried inline with `RWF_NOWAIT`,
//! its outcome recorded in the file's own history.

use crate::fastread::Outcome;
use crate::{FastReadPolicy, FastReadState, FastReadStats, File, IoIter, RwFlags};

/// What [`File::try_read_inline`] did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// Served whole (or up to end of file): the bytes read.
    Done(usize),
    /// Served in part: the bytes read; the caller offloads the rest.
    Partial(usize),
    /// Nothing in the page cache; the caller offloads the read.
    WouldBlock,
    /// Not tried (policy, direct file, or `RWF_NOWAIT` refused); the caller offloads.
    Skipped,
}

impl File {
    /// The fast-read policy on its own, for servers with their own thread pool: tries the read
    /// inline with `RWF_NOWAIT` when `policy` says so for this file, and records the outcome.
    pub fn try_read_inline(
        &self,
        iter: IoIter<'_>,
        offset: u64,
        policy: &FastReadPolicy,
    ) -> crate::Result<Attempt> {
        let state = self.fast_read_state();
        if self.is_direct() || !state.should_try(policy) {
            return Ok(Attempt::Skipped);
        }
        let want = iter.len();
        let at_eof = |n: usize| self.size().is_ok_and(|size| offset + n as u64 >= size);
        match self.io_at(iter, offset, RwFlags::NOWAIT) {
            Ok(n) if n == want || n == 0 || at_eof(n) => {
                state.record(Outcome::Hit, policy);
                Ok(Attempt::Done(n))
            }
            Ok(n) => {
                state.record(Outcome::Partial(n as f64 / want as f64), policy);
                Ok(Attempt::Partial(n))
            }
            Err(e) if e.is_would_block() => {
                state.record(Outcome::Miss, policy);
                Ok(Attempt::WouldBlock)
            }
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                state.record(Outcome::Unsupported, policy);
                Ok(Attempt::Skipped)
            }
            Err(e) => Err(e),
        }
    }

    /// This file's fast-read history.
    pub fn fast_read_state(&self) -> &FastReadState {
        &self.fast
    }

    /// A snapshot of this file's fast-read counters under `policy`.
    pub fn fast_read_stats(&self, policy: &FastReadPolicy) -> FastReadStats {
        self.fast.stats(policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracked() -> FastReadPolicy {
        FastReadPolicy {
            reprobe_every: 8,
            ..FastReadPolicy::default()
        }
    }

    #[test]
    fn misses_turn_tracking_off_and_probes_come_back() {
        let p = tracked();
        let s = FastReadState::default();
        assert!(s.should_try(&p), "a new file is tried");
        for _ in 0..40 {
            s.record(Outcome::Miss, &p);
        }
        assert!(s.stats(&p).tracking_off);
        let tried = (0..80).filter(|_| s.should_try(&p)).count();
        assert_eq!(tried, 10, "one probe in reprobe_every reads");
        assert_eq!(s.stats(&p).skipped, 70);
    }

    #[test]
    fn a_file_that_turns_hot_is_tried_again() {
        let p = tracked();
        let s = FastReadState::default();
        for _ in 0..40 {
            s.record(Outcome::Miss, &p);
        }
        let mut probes = 0;
        while s.stats(&p).tracking_off {
            if s.should_try(&p) {
                probes += 1;
                s.record(Outcome::Hit, &p);
            }
            assert!(probes < 20, "hits on probes must bring the file back");
        }
        assert!(s.should_try(&p));
    }

    #[test]
    fn unsupported_is_final_and_always_mode_ignores_history() {
        let p = tracked();
        let s = FastReadState::default();
        s.record(Outcome::Unsupported, &p);
        assert!(!s.should_try(&p));
        assert!(!s.should_try(&FastReadPolicy::with_mode(FastReadMode::Always)));
        assert!(s.stats(&p).unsupported);
        let t = FastReadState::default();
        for _ in 0..100 {
            t.record(Outcome::Miss, &p);
        }
        assert!(t.should_try(&FastReadPolicy::with_mode(FastReadMode::Always)));
        assert!(!t.should_try(&FastReadPolicy::with_mode(FastReadMode::Off)));
    }

    #[test]
    fn counters_count_each_outcome() {
        let p = tracked();
        let s = FastReadState::default();
        s.record(Outcome::Hit, &p);
        s.record(Outcome::Partial(0.5), &p);
        s.record(Outcome::Miss, &p);
        s.note_offload();
        s.note_offload();
        let st = s.stats(&p);
        assert_eq!(
            (st.attempts, st.hits, st.partials, st.misses, st.offloads),
            (3, 1, 1, 1, 2)
        );
        assert!(st.hit_ratio < 1.0 && st.hit_ratio > 0.8);
    }
}
