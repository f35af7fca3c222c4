use std::collections::HashMap;
use std::sync::Arc;

use vecio::engine::WhenFull;
use vecio::engine::{PoolEngine, PoolOptions};
use vecio::fast_read::FastReadMode;
use vecio::{Completion, FastReadPolicy, Queue};

use super::*;

pub const MIB: usize = 1 << 20;

pub fn engine(threads: usize, depth: usize, when_full: WhenFull, mode: FastReadMode) -> PoolEngine {
    PoolEngine::new(PoolOptions {
        threads,
        depth,
        when_full,
        fast_read: FastReadPolicy::with_mode(mode),
    })
    .unwrap()
}

/// A buffered file of `size` bytes of the pattern of `seed`, flushed.
pub fn pattern_file(path: &Path, seed: u16, size: usize) -> Arc<File> {
    let file = open_buffered(path);
    assert_eq!(file.write_at(&pattern(seed, 0, size), 0).unwrap(), size);
    fsync(&file);
    Arc::new(file)
}

/// Submits and reaps until `want` completions have been collected into `out` (bounded).
pub fn reap_until(q: &mut Queue, out: &mut Vec<Completion>, want: usize) {
    let mut rounds = 0;
    while out.len() < want {
        q.submit_and_wait(1).unwrap();
        q.reap(out);
        rounds += 1;
        assert!(
            rounds < 100_000,
            "only {} of {want} completions arrive",
            out.len()
        );
    }
}

/// Asserts each of `tags` appears exactly once among `done`'s user_data, and nothing else does.
#[track_caller]
pub fn assert_each_once(done: &[Completion], tags: impl IntoIterator<Item = u64>) {
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for c in done {
        *seen.entry(c.user_data).or_default() += 1;
    }
    let mut want = 0;
    for t in tags {
        want += 1;
        assert_eq!(
            seen.get(&t),
            Some(&1),
            "completion {t}: seen {:?} times",
            seen.get(&t)
        );
    }
    assert_eq!(done.len(), want, "no completion without a request");
}
