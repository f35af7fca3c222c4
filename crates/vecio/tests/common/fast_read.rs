use std::io::IoSliceMut;
use std::sync::Arc;

use vecio::engine::WhenFull;
use vecio::engine::{PoolEngine, PoolOptions};
use vecio::fast_read::{Attempt, FastReadMode, FastReadStats};
use vecio::{Batch, Completion, FastReadPolicy, IoIter, OwnedBuf, Queue, RwFlags};

use super::*;

pub const PAGE: u64 = 4096;
pub const MODES: [FastReadMode; 3] = [
    FastReadMode::Off,
    FastReadMode::Always,
    FastReadMode::Tracked,
];

// ---------------------------------------------------------------------------------------------
// Page-cache helpers
// ---------------------------------------------------------------------------------------------

pub fn fadvise_dontneed(file: &File, off: u64, len: u64) {
    // SAFETY: posix_fadvise on an open descriptor; it only advises the kernel.
    let r = unsafe {
        libc::posix_fadvise(
            file.as_raw_fd(),
            off as libc::off_t,
            len as libc::off_t,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    assert_eq!(r, 0, "posix_fadvise(DONTNEED) failed: errno {r}");
}

/// Pages of `off..off+len` (clipped to the file) resident in the page cache (`mincore`).
pub fn resident_pages(file: &File, off: u64, len: u64) -> usize {
    let size = file.size().unwrap();
    let end = off.saturating_add(len).min(size);
    if end <= off {
        return 0;
    }
    let start = off / PAGE * PAGE;
    let maplen = (end - start) as usize;
    // SAFETY: a fresh read-only shared mapping of a range of an open file; it is only passed
    // to mincore and unmapped before returning. Mapping a file does not read it.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            maplen,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            start as libc::off_t,
        );
        assert_ne!(
            p,
            libc::MAP_FAILED,
            "mmap: {}",
            std::io::Error::last_os_error()
        );
        let mut vec = vec![0u8; maplen.div_ceil(PAGE as usize)];
        let r = libc::mincore(p, maplen, vec.as_mut_ptr());
        let err = std::io::Error::last_os_error();
        libc::munmap(p, maplen);
        assert_eq!(r, 0, "mincore: {err}");
        vec.iter().filter(|&&b| b & 1 != 0).count()
    }
}

pub fn pages_in(file: &File, off: u64, len: u64) -> usize {
    let size = file.size().unwrap();
    let end = off.saturating_add(len).min(size);
    if end <= off {
        return 0;
    }
    (end.div_ceil(PAGE) - off / PAGE) as usize
}

/// Evicts the whole file and waits until no page of `off..off+len` is resident, twice in a row
/// 20 ms apart: readahead started by an earlier `RWF_NOWAIT` miss may still be bringing pages
/// in, and `mincore` does not count a page until its read completes. Where a test needs a
/// range that is cold for certain, it uses [`cold_file`], which no read has touched.
pub fn make_cold(file: &File, off: u64, len: u64) {
    fsync(file);
    let mut clean = 0;
    for _ in 0..400 {
        fadvise_dontneed(file, 0, 0);
        if resident_pages(file, off, len) == 0 {
            clean += 1;
            if clean == 2 {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        } else {
            clean = 0;
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    panic!(
        "{}: {} pages of {off}..+{len} stay resident after 400 evictions",
        file.path().display(),
        resident_pages(file, off, len)
    );
}

/// A file written, flushed and evicted, never read: no readahead can be in flight for it, so
/// every page is cold until this test reads it.
pub fn cold_file(dir: &Path, name: &str, seed: u16, size: u64) -> Arc<File> {
    let file = pattern_file(dir, name, seed, size);
    make_cold(&file, 0, size);
    file
}

/// How many fresh cold files a test tries before concluding that cold reads are never missed.
pub const RACE_TRIES: u32 = 5;

/// Runs `try_once` (given the try number, for fresh file names) until it returns `Some`.
///
/// A `RWF_NOWAIT` read that misses starts readahead of the range before it gives up, and the
/// kernel checks the page again after starting it: when that I/O completes first (a fast
/// device, the thread preempted in between), the "cold" read is served inline. That is right,
/// not a bug, but it makes "a cold read misses" true only most of the time. Tests that need a
/// miss return `None` from `try_once` when they see this race (after checking the data) and
/// run again on a fresh cold file.
pub fn until_not_raced<T>(what: &str, mut try_once: impl FnMut(u32) -> Option<T>) -> T {
    for k in 0..RACE_TRIES {
        if let Some(v) = try_once(k) {
            return v;
        }
        eprintln!("{what}: the readahead started by a NOWAIT miss won the race; again");
    }
    panic!("{what}: {RACE_TRIES} fresh cold files were all served inline: cold reads never miss")
}

/// Reads the whole file (blocking) until every page is resident, and checks it is. The page
/// cache of this machine shrinks on its own now and then, so a page read a moment ago can be
/// gone again: the file is read again (a few times at most) rather than failing the test.
pub fn warm(file: &File) {
    let size = file.size().unwrap();
    let mut buf = vec![0u8; size as usize];
    let want = pages_in(file, 0, size);
    let mut have = 0;
    for _ in 0..5 {
        assert_eq!(file.read_at(&mut buf, 0).unwrap(), size as usize);
        have = resident_pages(file, 0, size);
        if have == want {
            return;
        }
    }
    assert_eq!(
        have,
        want,
        "{}: not every page is resident after reading the file five times",
        file.path().display()
    );
}

/// A buffered file of `size` bytes of the pattern of `seed`, flushed to disk.
pub fn pattern_file(dir: &Path, name: &str, seed: u16, size: u64) -> Arc<File> {
    let file = open_buffered(&dir.join(name));
    assert!(!file.is_direct());
    let data = pattern(seed, 0, size as usize);
    assert_eq!(file.write_at(&data, 0).unwrap(), size as usize);
    fsync(&file);
    Arc::new(file)
}

pub fn policy(mode: FastReadMode) -> FastReadPolicy {
    FastReadPolicy::with_mode(mode)
}

pub fn pool_with(fast_read: FastReadPolicy) -> PoolEngine {
    PoolEngine::new(PoolOptions {
        threads: 2,
        depth: 256,
        when_full: WhenFull::Wait,
        fast_read,
    })
    .unwrap()
}

pub fn pool(mode: FastReadMode) -> PoolEngine {
    pool_with(policy(mode))
}

/// Bytes a read of `len` at `off` returns from a file of `size` bytes.
pub fn expected_len(size: u64, off: u64, len: usize) -> usize {
    (size.saturating_sub(off) as usize).min(len)
}

pub fn counters(s: &FastReadStats) -> (u64, u64, u64, u64, u64, u64) {
    (
        s.attempts, s.hits, s.partials, s.misses, s.offloads, s.skipped,
    )
}

/// Reads `len` bytes at `off` through a one-request batch on `engine` and checks the data.
pub fn read_one(engine: &mut PoolEngine, file: &File, off: u64, len: usize, seed: u16) {
    let mut buf = vec![0u8; len];
    let mut batch = Batch::new();
    batch.push(file, off, IoIter::read_into(&mut buf), RwFlags::empty());
    let r = batch.run(engine).pop().unwrap();
    assert_eq!(r.unwrap(), len);
    assert_pattern(&buf, seed, off, "tracked read");
}

/// Pushes one read of `len` at `off` with the caller's `flags` through a queue; its result.
pub fn queue_read(
    q: &mut Queue,
    file: &Arc<File>,
    off: u64,
    len: usize,
    flags: RwFlags,
) -> (vecio::Result<usize>, Vec<u8>) {
    q.push_read(file, off, vec![OwnedBuf::Vec(vec![0; len])], flags, 7)
        .map_err(|e| e.error)
        .unwrap();
    q.submit_and_wait(1).unwrap();
    let mut done = Vec::new();
    q.reap(&mut done);
    assert_eq!(done.len(), 1);
    let c = done.pop().unwrap();
    (c.result, c.bufs[0].as_slice().to_vec())
}

// ---------------------------------------------------------------------------------------------
// Reading through each path
// ---------------------------------------------------------------------------------------------

/// One read: file offset and segment sizes (the segments are consecutive pieces of one buffer).
#[derive(Clone)]
pub struct Read {
    pub off: u64,
    pub segs: Vec<usize>,
}

impl Read {
    pub fn new(off: u64, segs: &[usize]) -> Self {
        Read {
            off,
            segs: segs.to_vec(),
        }
    }
    pub fn len(&self) -> usize {
        self.segs.iter().sum()
    }
}

#[derive(Copy, Clone, Debug)]
pub enum Route {
    BatchPool,
    QueuePool,
    Inline,
}

/// Reads `reads` through `path`; returns each read's (bytes, buffer truncated to the bytes).
pub fn read_through(
    path: Route,
    file: &Arc<File>,
    engine: &mut PoolEngine,
    queue: &mut Queue,
    pol: &FastReadPolicy,
    reads: &[Read],
) -> Vec<Vec<u8>> {
    match path {
        Route::BatchPool => {
            let mut bufs: Vec<Vec<u8>> = reads.iter().map(|r| vec![0xEE; r.len()]).collect();
            let results = {
                let mut slices: Vec<Vec<IoSliceMut<'_>>> = bufs
                    .iter_mut()
                    .zip(reads)
                    .map(|(b, r)| {
                        split_mut(b, &r.segs)
                            .into_iter()
                            .map(IoSliceMut::new)
                            .collect()
                    })
                    .collect();
                let mut batch = Batch::new();
                for (s, r) in slices.iter_mut().zip(reads) {
                    batch.push(file, r.off, IoIter::readv_into(s), RwFlags::empty());
                }
                batch.run(engine)
            };
            assert_eq!(results.len(), reads.len());
            results
                .into_iter()
                .zip(bufs)
                .enumerate()
                .map(|(i, (res, mut b))| {
                    let n = res.unwrap_or_else(|e| panic!("batch read {i}: {e}"));
                    b.truncate(n);
                    b
                })
                .collect()
        }
        Route::QueuePool => {
            for (i, r) in reads.iter().enumerate() {
                let bufs = r
                    .segs
                    .iter()
                    .map(|&n| OwnedBuf::Vec(vec![0xEE; n]))
                    .collect();
                queue
                    .push_read(file, r.off, bufs, RwFlags::empty(), i as u64)
                    .map_err(|e| e.error)
                    .unwrap();
            }
            queue.submit_and_wait(reads.len()).unwrap();
            let mut done: Vec<Completion> = Vec::new();
            queue.reap(&mut done);
            assert_eq!(done.len(), reads.len(), "every queued read completes");
            assert!(queue.is_empty());
            done.sort_by_key(|c| c.user_data);
            done.into_iter()
                .enumerate()
                .map(|(i, c)| {
                    assert_eq!(c.user_data, i as u64, "each read completes exactly once");
                    let n = c.result.unwrap_or_else(|e| panic!("queued read {i}: {e}"));
                    let mut flat: Vec<u8> = c
                        .bufs
                        .iter()
                        .flat_map(|b| b.as_slice().iter().copied())
                        .collect();
                    flat.truncate(n);
                    flat
                })
                .collect()
        }
        Route::Inline => reads
            .iter()
            .map(|r| {
                let mut flat = vec![0xEE; r.len()];
                let attempt = {
                    let mut s: Vec<IoSliceMut<'_>> = split_mut(&mut flat, &r.segs)
                        .into_iter()
                        .map(IoSliceMut::new)
                        .collect();
                    file.try_read_inline(IoIter::readv_into(&mut s), r.off, pol)
                        .unwrap_or_else(|e| panic!("try_read_inline at {}: {e}", r.off))
                };
                // Offload ourselves: a plain blocking read of whatever is left.
                let n = match attempt {
                    Attempt::Done(n) => n,
                    Attempt::Partial(n) => {
                        assert!(n > 0 && n < r.len(), "partial {n} of {}", r.len());
                        n + file.read_at(&mut flat[n..], r.off + n as u64).unwrap()
                    }
                    Attempt::WouldBlock | Attempt::Skipped => {
                        file.read_at(&mut flat, r.off).unwrap()
                    }
                };
                flat.truncate(n);
                flat
            })
            .collect(),
    }
}
