//! Helpers the test modules share: a scratch directory on a real file system, a deterministic
//! byte pattern, and a small generator for offsets and lengths.

/// A scratch directory under the target directory: a real file system (tmpfs refuses O_DIRECT
/// and RWF_NOWAIT), its name starting with `prefix`.
pub fn tempdir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

pub use vecio_testkit::pattern;

/// A small deterministic generator for offsets and lengths.
pub struct Rng(pub u64);

impl Rng {
    /// The next value, below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}
