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

/// `len` bytes of an xorshift sequence seeded by `seed`: the same for the same seed.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

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
