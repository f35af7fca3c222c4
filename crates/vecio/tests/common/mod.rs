//! Shared helpers of the vecio integration tests: temporary directories on a real (ext4) file
//! system, a checksummed data pattern that names the offset it belongs to, and small helpers
//! for splitting buffers into segments.
//!
//! The pattern: the 8-byte word at file offset `w` (a multiple of 8) is
//! `(w / 8) << 24 | seed << 8 | check(w / 8, seed)`, little endian. Any byte at any offset can
//! be generated on its own, and a word found at the wrong place decodes to the offset and seed it
//! was written for, so a misplaced, stale or zeroed block is named in the failure message.

#![allow(dead_code)]

use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use vecio::{Direct, File};

/// A fresh temporary directory under Cargo's target tmp dir (on ext4 here, unlike /tmp).
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("vecio-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create a temporary directory under CARGO_TARGET_TMPDIR")
}

fn check_byte(word_index: u64, seed: u16) -> u8 {
    let h = (word_index ^ ((seed as u64) << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((h >> 56) as u8) | 1
}

/// The pattern word for the 8-byte-aligned file offset `word_off`.
pub fn word(seed: u16, word_off: u64) -> u64 {
    let idx = word_off / 8;
    (idx << 24) | ((seed as u64) << 8) | check_byte(idx, seed) as u64
}

/// The pattern byte at file offset `off`.
pub fn pattern_byte(seed: u16, off: u64) -> u8 {
    word(seed, off & !7).to_le_bytes()[(off & 7) as usize]
}

/// Fills `buf` with the pattern of `seed` as if it sat at file offset `file_off`.
pub fn fill(buf: &mut [u8], seed: u16, file_off: u64) {
    let mut i = 0usize;
    while i < buf.len() {
        let off = file_off + i as u64;
        let w = word(seed, off & !7).to_le_bytes();
        let start = (off & 7) as usize;
        let n = (8 - start).min(buf.len() - i);
        buf[i..i + n].copy_from_slice(&w[start..start + n]);
        i += n;
    }
}

/// `len` bytes of the pattern of `seed` at file offset `file_off`.
pub fn pattern(seed: u16, file_off: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    fill(&mut v, seed, file_off);
    v
}

/// What the 8-byte word at file offset `word_off` of `data` (which starts at file offset
/// `data_off`) holds, in words.
pub fn describe_word(data: &[u8], data_off: u64, word_off: u64) -> String {
    let Some(i) = word_off.checked_sub(data_off).map(|i| i as usize) else {
        return "before the buffer".into();
    };
    if i + 8 > data.len() {
        return format!("partial word {:02x?}", &data[i.min(data.len())..]);
    }
    let v = u64::from_le_bytes(data[i..i + 8].try_into().unwrap());
    if v == 0 {
        return "zeros".into();
    }
    let (idx, seed, check) = (v >> 24, ((v >> 8) & 0xffff) as u16, (v & 0xff) as u8);
    if check == check_byte(idx, seed) {
        format!("pattern word of offset {} seed {}", idx * 8, seed)
    } else {
        format!("unknown word {v:#018x}")
    }
}

/// Asserts that `data` equals `expected`, both standing for file offset `file_off`; on a
/// mismatch names the first bad offset and what the words there decode to.
#[track_caller]
pub fn assert_same(data: &[u8], expected: &[u8], file_off: u64, what: &str) {
    assert_eq!(
        data.len(),
        expected.len(),
        "{what}: length differs (got {}, expected {})",
        data.len(),
        expected.len()
    );
    if let Some(i) = data.iter().zip(expected).position(|(a, b)| a != b) {
        let bad = file_off + i as u64;
        let last = data
            .iter()
            .zip(expected)
            .rposition(|(a, b)| a != b)
            .unwrap();
        let w = bad & !7;
        panic!(
            "{what}: first difference at file offset {bad} (last at {}), got byte {:#04x}, \
             expected {:#04x}; word at {w}: found {}, expected {}",
            file_off + last as u64,
            data[i],
            expected[i],
            describe_word(data, file_off, w),
            describe_word(expected, file_off, w),
        );
    }
}

/// Asserts that `data` is the pattern of `seed` at `file_off`.
#[track_caller]
pub fn assert_pattern(data: &[u8], seed: u16, file_off: u64, what: &str) {
    assert_same(data, &pattern(seed, file_off, data.len()), file_off, what);
}

/// Opens (creating) `path` read-write with `O_DIRECT`, and checks that it is direct.
pub fn open_direct(path: &Path) -> File {
    let f = File::options()
        .read(true)
        .write(true)
        .create(true)
        .direct(Direct::On)
        .open(path)
        .unwrap_or_else(|e| panic!("open {} with O_DIRECT: {e}", path.display()));
    assert!(f.is_direct(), "{} is not direct", path.display());
    f
}

/// Opens (creating) `path` read-write, buffered.
pub fn open_buffered(path: &Path) -> File {
    File::options()
        .read(true)
        .write(true)
        .create(true)
        .direct(Direct::Off)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

/// Splits `buf` into consecutive mutable pieces of the given sizes (which must fit).
pub fn split_mut<'a>(mut buf: &'a mut [u8], sizes: &[usize]) -> Vec<&'a mut [u8]> {
    let mut out = Vec::with_capacity(sizes.len());
    for &n in sizes {
        let (a, b) = std::mem::take(&mut buf).split_at_mut(n);
        out.push(a);
        buf = b;
    }
    out
}

/// Splits `buf` into consecutive pieces of the given sizes (which must fit).
pub fn split<'a>(mut buf: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::with_capacity(sizes.len());
    for &n in sizes {
        let (a, b) = buf.split_at(n);
        out.push(a);
        buf = b;
    }
    out
}

/// The whole file as the page cache sees it (`std::fs::read`).
pub fn read_all(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Runs `f` on its own thread and fails the test if it has not finished after `secs` seconds
/// (the thread is left behind; the process ends with the test run).
pub fn with_timeout<T: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: still running after {secs} s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked (see above)"),
    }
}

/// A small deterministic generator (xorshift64*), so tests need no seed plumbing.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `lo..hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
    /// A permutation of `0..n`.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.range(0, i as u64 + 1) as usize;
            v.swap(i, j);
        }
        v
    }
}

pub fn fsync(file: &File) {
    // SAFETY: fsync on an open descriptor.
    let r = unsafe { libc::fsync(file.as_raw_fd()) };
    assert_eq!(r, 0, "fsync: {}", std::io::Error::last_os_error());
}

/// Helpers of the fast-read tests (`fast_read_*.rs`): page-cache states, pattern files, pool
/// engines per fast-read mode, and reads through each path.
///
/// Cache states are set with `posix_fadvise(POSIX_FADV_DONTNEED)` after `fsync` and checked
/// with `mincore` on a mapping of the file, so a test knows (rather than hopes) which pages are
/// resident. On this kernel a `RWF_NOWAIT` read that misses returns `EAGAIN` *and* starts
/// readahead of the range. Two consequences shape these tests:
/// - a range that just missed may become resident a moment later, and `mincore` does not see
///   a page whose read is still in flight: tests that need a range cold for certain use a file
///   no read has touched ([`fast_read::cold_file`]);
/// - the kernel looks at the page again after starting that readahead, so on a fast device a
///   "cold" read is now and then served inline. Tests that need a miss detect this and run
///   again on a fresh cold file ([`fast_read::until_not_raced`]); the data is checked every
///   time.
pub mod fast_read;

/// Helpers of the thread-pool engine tests (`pool_*.rs`).
pub mod pool;

/// Runs `case` on its own thread and fails if it does not finish within 20 s, so a test of a
/// would-be hang fails instead of hanging the suite.
pub fn within_timeout(what: &str, case: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let t = std::thread::spawn(move || {
        case();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(()) => t.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(p) = t.join() {
                std::panic::resume_unwind(p)
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: hung"),
    }
}
