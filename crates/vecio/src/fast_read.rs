//! The fast-read policy: try a read inline with `RWF_NOWAIT` (served from the page cache
//! without blocking), and hand only what would block to a thread pool; learn per file whether
//! trying pays.
//!
//! Per file, vecio keeps a decaying hit ratio. Below a threshold it stops trying (each miss
//! costs a system call for nothing) and probes again every so often, so a file that becomes
//! hot is noticed. `EOPNOTSUPP` (tmpfs, some file systems and kernels) turns the attempt off
//! for that file for good. Direct files are never tried: a direct read always waits for the
//! device, `RWF_NOWAIT` or not.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};

/// What [`File::try_read_inline`](crate::File::try_read_inline) did.
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

/// When to try a read inline.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FastReadMode {
    /// Never: every read goes to the pool (the seed's "before").
    Off,
    /// Always try, whatever the file's history (a fixed policy).
    Always,
    /// Try while the file's hit ratio stays above the threshold; probe now and then below it.
    Tracked,
}

/// The fast-read policy's settings.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct FastReadPolicy {
    /// When to try.
    pub mode: FastReadMode,
    /// Hit ratio below which a tracked file stops being tried.
    pub threshold: f64,
    /// Weight of each new outcome in the decaying hit ratio.
    pub decay: f64,
    /// Below the threshold, one read in this many is tried anyway (a probe).
    pub reprobe_every: u32,
    /// Also try writes with `RWF_NOWAIT` (where the file system supports it).
    pub writes: bool,
}

impl Default for FastReadPolicy {
    fn default() -> Self {
        FastReadPolicy {
            mode: FastReadMode::Tracked,
            threshold: 0.25,
            decay: 1.0 / 16.0,
            reprobe_every: 64,
            writes: false,
        }
    }
}

impl FastReadPolicy {
    /// A policy of the given mode with default settings.
    pub fn with_mode(mode: FastReadMode) -> Self {
        FastReadPolicy {
            mode,
            ..Self::default()
        }
    }
}

/// What one inline attempt found.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// Everything was in the page cache (or the read ended at end of file).
    Hit,
    /// Part was there: the fraction of the request served.
    Partial(f64),
    /// Nothing was there (`EAGAIN`).
    Miss,
    /// The file system refused `RWF_NOWAIT` (`EOPNOTSUPP`).
    Unsupported,
}

const ONE: f64 = 65536.0;

/// A file's fast-read history (kept in its [`File`]; read with [`File::fast_read_stats`]).
#[derive(Debug)]
pub(crate) struct FastReadState {
    attempts: AtomicU64,
    hits: AtomicU64,
    partials: AtomicU64,
    misses: AtomicU64,
    offloads: AtomicU64,
    skipped: AtomicU64,
    unsupported: AtomicBool,
    write_unsupported: AtomicBool,
    /// Decaying hit ratio, 16.16 fixed point.
    ratio: AtomicU32,
    since_probe: AtomicU32,
}

impl Default for FastReadState {
    fn default() -> Self {
        FastReadState {
            attempts: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            partials: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            offloads: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            unsupported: AtomicBool::new(false),
            write_unsupported: AtomicBool::new(false),
            // Start optimistic: a new file is tried until it proves cold.
            ratio: AtomicU32::new(ONE as u32),
            since_probe: AtomicU32::new(0),
        }
    }
}

/// A snapshot of fast-read counters, for one file or added up over many.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct FastReadStats {
    /// Inline attempts made.
    pub attempts: u64,
    /// Attempts served whole.
    pub hits: u64,
    /// Attempts served in part (the rest offloaded).
    pub partials: u64,
    /// Attempts that found nothing (`EAGAIN`).
    pub misses: u64,
    /// Requests (or remainders) handed to the pool.
    pub offloads: u64,
    /// Reads not tried because the file's hit ratio was low.
    pub skipped: u64,
    /// The file system refused `RWF_NOWAIT` reads: attempts are off for good.
    pub unsupported: bool,
    /// The decaying hit ratio (0 to 1).
    pub hit_ratio: f64,
    /// The ratio is below the threshold: only probes are tried.
    pub tracking_off: bool,
}

impl FastReadStats {
    /// Adds `other`'s counters to these (flags and ratio are not summed).
    pub fn add(&mut self, other: &FastReadStats) {
        self.attempts += other.attempts;
        self.hits += other.hits;
        self.partials += other.partials;
        self.misses += other.misses;
        self.offloads += other.offloads;
        self.skipped += other.skipped;
    }
}

/// What the policy says of one read.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Try it inline.
    Try,
    /// Not this time: the file's hit ratio is low (counted as skipped).
    Skip,
    /// Never: the policy is off, or the file refuses `RWF_NOWAIT`.
    Off,
}

impl FastReadState {
    /// Whether to try this read inline under `policy`.
    pub(crate) fn should_try(&self, policy: &FastReadPolicy) -> bool {
        self.decide(policy) == Decision::Try
    }

    /// What `policy` says of this read; a skip is counted on the file.
    pub(crate) fn decide(&self, policy: &FastReadPolicy) -> Decision {
        match policy.mode {
            FastReadMode::Off => Decision::Off,
            _ if self.unsupported.load(Relaxed) => Decision::Off,
            FastReadMode::Always => Decision::Try,
            FastReadMode::Tracked => {
                if self.ratio() >= policy.threshold {
                    return Decision::Try;
                }
                if self.since_probe.fetch_add(1, Relaxed) + 1 >= policy.reprobe_every {
                    self.since_probe.store(0, Relaxed);
                    return Decision::Try;
                }
                self.note_skipped();
                Decision::Skip
            }
        }
    }

    /// Counts a read not tried because of a low hit ratio.
    pub(crate) fn note_skipped(&self) {
        self.skipped.fetch_add(1, Relaxed);
    }

    /// Records the outcome of an attempt.
    pub(crate) fn record(&self, outcome: Outcome, policy: &FastReadPolicy) {
        self.attempts.fetch_add(1, Relaxed);
        let x = match outcome {
            Outcome::Hit => {
                self.hits.fetch_add(1, Relaxed);
                1.0
            }
            Outcome::Partial(f) => {
                self.partials.fetch_add(1, Relaxed);
                f.clamp(0.0, 1.0)
            }
            Outcome::Miss => {
                self.misses.fetch_add(1, Relaxed);
                0.0
            }
            Outcome::Unsupported => {
                self.unsupported.store(true, Relaxed);
                0.0
            }
        };
        let r = self.ratio();
        let next = r + policy.decay * (x - r);
        self.ratio
            .store((next.clamp(0.0, 1.0) * ONE) as u32, Relaxed);
    }

    /// Counts a request (or remainder) handed to the pool.
    pub(crate) fn note_offload(&self) {
        self.offloads.fetch_add(1, Relaxed);
    }

    /// Whether to try this write inline under `policy`.
    pub(crate) fn should_try_write(&self, policy: &FastReadPolicy) -> bool {
        policy.writes && policy.mode != FastReadMode::Off && !self.write_unsupported.load(Relaxed)
    }

    /// Records that the file system refused `RWF_NOWAIT` writes.
    pub(crate) fn note_write_unsupported(&self) {
        self.write_unsupported.store(true, Relaxed);
    }

    fn ratio(&self) -> f64 {
        self.ratio.load(Relaxed) as f64 / ONE
    }

    /// A snapshot of the counters, judged against `policy`'s threshold.
    pub(crate) fn stats(&self, policy: &FastReadPolicy) -> FastReadStats {
        let hit_ratio = self.ratio();
        FastReadStats {
            attempts: self.attempts.load(Relaxed),
            hits: self.hits.load(Relaxed),
            partials: self.partials.load(Relaxed),
            misses: self.misses.load(Relaxed),
            offloads: self.offloads.load(Relaxed),
            skipped: self.skipped.load(Relaxed),
            unsupported: self.unsupported.load(Relaxed),
            hit_ratio,
            tracking_off: policy.mode == FastReadMode::Tracked && hit_ratio < policy.threshold,
        }
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
