//! The fast-read policy on real files and the real page cache: reads tried inline with
//! `RWF_NOWAIT`, offloaded to the pool only on a miss, per-file hit tracking that stops trying
//! on cold files and comes back on warm ones, `EOPNOTSUPP` (tmpfs) turning the attempt off,
//! `RWF_NOWAIT` writes, and direct files never tried.
//!
//! Cache states are set with `posix_fadvise(POSIX_FADV_DONTNEED)` after `fsync` and checked
//! with `mincore` on a mapping of the file, so a test knows (rather than hopes) which pages are
//! resident. On this kernel a `RWF_NOWAIT` read that misses returns `EAGAIN` *and* starts
//! readahead of the range. Two consequences shape these tests:
//! - a range that just missed may become resident a moment later, and `mincore` does not see
//!   a page whose read is still in flight: tests that need a range cold for certain use a file
//!   no read has touched ([`cold_file`]);
//! - the kernel looks at the page again after starting that readahead, so on a fast device a
//!   "cold" read is now and then served inline. Tests that need a miss detect this and run
//!   again on a fresh cold file ([`until_not_raced`]); the data is checked every time.
//!
//! The last four tests show library bugs (see their docs); they fail until those are fixed.

mod common;

use std::io::IoSliceMut;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use vecio::engine::{PoolEngine, PoolOptions};
use vecio::{
    AlignedBuf, Attempt, Batch, Completion, Engine, FastReadMode, FastReadPolicy, FastReadStats,
    File, IoIter, OwnedBuf, Queue, RwFlags, WhenFull,
};

const PAGE: u64 = 4096;
const MODES: [FastReadMode; 3] = [
    FastReadMode::Off,
    FastReadMode::Always,
    FastReadMode::Tracked,
];

// ---------------------------------------------------------------------------------------------
// Page-cache helpers
// ---------------------------------------------------------------------------------------------

fn fsync(file: &File) {
    // SAFETY: fsync on an open descriptor.
    let r = unsafe { libc::fsync(file.as_raw_fd()) };
    assert_eq!(r, 0, "fsync: {}", std::io::Error::last_os_error());
}

fn fadvise_dontneed(file: &File, off: u64, len: u64) {
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
fn resident_pages(file: &File, off: u64, len: u64) -> usize {
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

fn pages_in(file: &File, off: u64, len: u64) -> usize {
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
fn make_cold(file: &File, off: u64, len: u64) {
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
fn cold_file(dir: &Path, name: &str, seed: u16, size: u64) -> Arc<File> {
    let file = pattern_file(dir, name, seed, size);
    make_cold(&file, 0, size);
    file
}

/// How many fresh cold files a test tries before concluding that cold reads are never missed.
const RACE_TRIES: u32 = 5;

/// Runs `try_once` (given the try number, for fresh file names) until it returns `Some`.
///
/// A `RWF_NOWAIT` read that misses starts readahead of the range before it gives up, and the
/// kernel checks the page again after starting it: when that I/O completes first (a fast
/// device, the thread preempted in between), the "cold" read is served inline. That is right,
/// not a bug, but it makes "a cold read misses" true only most of the time. Tests that need a
/// miss return `None` from `try_once` when they see this race (after checking the data) and
/// run again on a fresh cold file.
fn until_not_raced<T>(what: &str, mut try_once: impl FnMut(u32) -> Option<T>) -> T {
    for k in 0..RACE_TRIES {
        if let Some(v) = try_once(k) {
            return v;
        }
        eprintln!("{what}: the readahead started by a NOWAIT miss won the race; again");
    }
    panic!("{what}: {RACE_TRIES} fresh cold files were all served inline: cold reads never miss")
}

/// Reads the whole file (blocking) and checks every page is resident.
fn warm(file: &File) {
    let size = file.size().unwrap();
    let mut buf = vec![0u8; size as usize];
    assert_eq!(file.read_at(&mut buf, 0).unwrap(), size as usize);
    assert_eq!(
        resident_pages(file, 0, size),
        pages_in(file, 0, size),
        "{}: not every page is resident after reading the file",
        file.path().display()
    );
}

/// A buffered file of `size` bytes of the pattern of `seed`, flushed to disk.
fn pattern_file(dir: &Path, name: &str, seed: u16, size: u64) -> Arc<File> {
    let file = open_buffered(&dir.join(name));
    assert!(!file.is_direct());
    let data = pattern(seed, 0, size as usize);
    assert_eq!(file.write_at(&data, 0).unwrap(), size as usize);
    fsync(&file);
    Arc::new(file)
}

/// A new handle on `path` (fresh fast-read statistics), buffered, read-only.
fn reopen(path: &Path) -> Arc<File> {
    Arc::new(
        File::options()
            .direct(vecio::Direct::Off)
            .open(path)
            .unwrap(),
    )
}

fn policy(mode: FastReadMode) -> FastReadPolicy {
    FastReadPolicy::with_mode(mode)
}

fn pool_with(fast_read: FastReadPolicy) -> PoolEngine {
    PoolEngine::new(PoolOptions {
        threads: 2,
        depth: 256,
        when_full: WhenFull::Wait,
        fast_read,
    })
    .unwrap()
}

fn pool(mode: FastReadMode) -> PoolEngine {
    pool_with(policy(mode))
}

/// Bytes a read of `len` at `off` returns from a file of `size` bytes.
fn expected_len(size: u64, off: u64, len: usize) -> usize {
    (size.saturating_sub(off) as usize).min(len)
}

// ---------------------------------------------------------------------------------------------
// Reading through each path
// ---------------------------------------------------------------------------------------------

/// One read: file offset and segment sizes (the segments are consecutive pieces of one buffer).
#[derive(Clone)]
struct Read {
    off: u64,
    segs: Vec<usize>,
}

impl Read {
    fn new(off: u64, segs: &[usize]) -> Self {
        Read {
            off,
            segs: segs.to_vec(),
        }
    }
    fn len(&self) -> usize {
        self.segs.iter().sum()
    }
}

#[derive(Copy, Clone, Debug)]
enum Route {
    BatchPool,
    QueuePool,
    Inline,
}

/// Reads `reads` through `path`; returns each read's (bytes, buffer truncated to the bytes).
fn read_through(
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
                    .map_err(|(e, _)| e)
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

#[derive(Copy, Clone, Debug)]
enum CacheState {
    Cached,
    Evicted,
    SecondHalfEvicted,
}

fn set_state(file: &File, state: CacheState) {
    let size = file.size().unwrap();
    match state {
        CacheState::Cached => warm(file),
        CacheState::Evicted => make_cold(file, 0, size),
        CacheState::SecondHalfEvicted => {
            let half = size / 2 / PAGE * PAGE;
            warm(file);
            for _ in 0..400 {
                fadvise_dontneed(file, half, 0);
                if resident_pages(file, half, size) == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(resident_pages(file, half, size), 0, "second half evicted");
            assert_eq!(
                resident_pages(file, 0, half),
                pages_in(file, 0, half),
                "first half still resident"
            );
        }
    }
}

/// Every path, every mode, every cache state returns exactly the file's bytes: single and
/// multi-segment reads, odd offsets and lengths, reads across the cached/evicted boundary,
/// across end of file, at and past end of file.
#[test]
fn every_path_returns_the_files_bytes_in_every_mode_and_cache_state() {
    const SEED: u16 = 21;
    const SIZE: u64 = 256 * 1024 + 1234;
    let dir = tempdir();
    let half = SIZE / 2 / PAGE * PAGE;
    let many: Vec<usize> = (0..40).map(|i| 512 + 37 * i).collect();
    let reads = vec![
        Read::new(0, &[16384]),
        Read::new(3 * PAGE + 100, &[1000, 3000, 5000, 7]),
        Read::new(half - 5000, &[4096, 4096, 4096]),
        Read::new(half + 1, &[8191]),
        Read::new(SIZE - 3000, &[2000, 4096]),
        Read::new(SIZE - 100, &[65536]),
        Read::new(SIZE, &[4096]),
        Read::new(SIZE + 5000, &[10, 20]),
        Read::new(0, &[SIZE as usize + 4096]),
        Read::new(777, &many),
        Read::new(64 * 1024, &[1, 4095, 1, 4096 * 4, 3]),
    ];
    for mode in MODES {
        let pol = policy(mode);
        let file = pattern_file(dir.path(), &format!("f-{mode:?}"), SEED, SIZE);
        let mut engine = pool(mode);
        let mut queue = Queue::new(Box::new(pool(mode)));
        for state in [
            CacheState::Cached,
            CacheState::Evicted,
            CacheState::SecondHalfEvicted,
        ] {
            for path in [Route::BatchPool, Route::QueuePool, Route::Inline] {
                set_state(&file, state);
                let got = read_through(path, &file, &mut engine, &mut queue, &pol, &reads);
                for (r, data) in reads.iter().zip(&got) {
                    let what = format!(
                        "{mode:?} {state:?} {path:?}: read of {} at {} in {} segments",
                        r.len(),
                        r.off,
                        r.segs.len()
                    );
                    assert_eq!(
                        data.len(),
                        expected_len(SIZE, r.off, r.len()),
                        "{what}: bytes"
                    );
                    assert_pattern(data, SEED, r.off, &what);
                }
            }
        }
        let st = file.fast_read_stats(&pol);
        if mode == FastReadMode::Off {
            assert_eq!(st.attempts, 0, "Off never tries inline: {st:?}");
            assert_eq!(engine.fast_read_totals().attempts, 0);
        } else {
            // Evicted state, first read of the batch: a miss for sure. Second half evicted:
            // the read across the boundary is served in part (Always keeps trying).
            assert!(st.misses >= 1, "{mode:?}: cold reads were tried: {st:?}");
            if mode == FastReadMode::Always {
                assert!(
                    st.partials >= 1,
                    "{mode:?}: half-cached reads were tried: {st:?}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Hits, misses, offloads
// ---------------------------------------------------------------------------------------------

fn counters(s: &FastReadStats) -> (u64, u64, u64, u64, u64, u64) {
    (
        s.attempts, s.hits, s.partials, s.misses, s.offloads, s.skipped,
    )
}

/// A warm file is served inline: every read a hit, nothing offloaded; the engine's totals
/// agree with the file's counters; one system call per read.
#[test]
fn a_warm_file_is_served_inline() {
    const SEED: u16 = 22;
    const SIZE: u64 = 1 << 20;
    const N: u64 = 32;
    let dir = tempdir();
    let path = dir.path().join("warm");
    let pol = policy(FastReadMode::Tracked);
    drop(pattern_file(dir.path(), "warm", SEED, SIZE));

    // Batch over a pool engine: single and multi-segment reads.
    let file = reopen(&path);
    warm(&file);
    let mut engine = pool(FastReadMode::Tracked);
    let reads: Vec<Read> = (0..N)
        .map(|i| {
            if i % 2 == 0 {
                Read::new(i * 32 * 1024, &[16384])
            } else {
                Read::new(i * 32 * 1024 + 3, &[100, 5000, 11000])
            }
        })
        .collect();
    let mut q = Queue::new(Box::new(pool(FastReadMode::Tracked)));
    let got = read_through(Route::BatchPool, &file, &mut engine, &mut q, &pol, &reads);
    for (r, d) in reads.iter().zip(&got) {
        assert_eq!(d.len(), r.len());
        assert_pattern(d, SEED, r.off, "warm batch read");
    }
    let st = file.fast_read_stats(&pol);
    assert_eq!(counters(&st), (N, N, 0, 0, 0, 0), "per-file stats: {st:?}");
    assert!(!st.tracking_off && !st.unsupported, "{st:?}");
    let t = engine.fast_read_totals();
    assert_eq!(
        (t.attempts, t.hits, t.partials, t.misses, t.offloads),
        (st.attempts, st.hits, st.partials, st.misses, st.offloads),
        "engine totals agree with the file: {t:?} vs {st:?}"
    );
    assert_eq!(
        engine.counters().syscalls,
        N,
        "one RWF_NOWAIT call per read, nothing offloaded"
    );

    // Queue over a pool engine, on a fresh handle.
    let file = reopen(&path);
    warm(&file);
    let got = read_through(Route::QueuePool, &file, &mut engine, &mut q, &pol, &reads);
    for (r, d) in reads.iter().zip(&got) {
        assert_pattern(d, SEED, r.off, "warm queued read");
    }
    let st = file.fast_read_stats(&pol);
    assert_eq!(counters(&st), (N, N, 0, 0, 0, 0), "queue: {st:?}");

    // try_read_inline on its own: every attempt done whole.
    let file = reopen(&path);
    warm(&file);
    for r in &reads {
        let mut buf = vec![0u8; r.len()];
        let a = file
            .try_read_inline(IoIter::read_into(&mut buf), r.off, &pol)
            .unwrap();
        assert_eq!(a, Attempt::Done(r.len()), "warm read at {}", r.off);
        assert_pattern(&buf, SEED, r.off, "try_read_inline");
    }
    let st = file.fast_read_stats(&pol);
    assert_eq!(counters(&st), (N, N, 0, 0, 0, 0), "inline: {st:?}");
}

/// A file evicted with `POSIX_FADV_DONTNEED` misses and is offloaded; the data is right.
#[test]
fn an_evicted_file_is_offloaded() {
    const SEED: u16 = 23;
    const SIZE: u64 = 4 << 20;
    let dir = tempdir();
    for mode in [FastReadMode::Always, FastReadMode::Tracked] {
        let pol = policy(mode);
        let mut q = Queue::new(Box::new(pool(mode)));

        // One read of a cold file: exactly one miss, one offload (engine totals the same).
        until_not_raced(&format!("{mode:?} one cold read"), |k| {
            let mut engine = pool(mode);
            let file = cold_file(dir.path(), &format!("one-{mode:?}-{k}"), SEED, SIZE);
            let one = [Read::new(1 << 20, &[1 << 20])];
            let got = read_through(Route::BatchPool, &file, &mut engine, &mut q, &pol, &one);
            assert_eq!(got[0].len(), 1 << 20);
            assert_pattern(&got[0], SEED, 1 << 20, "cold read");
            let st = file.fast_read_stats(&pol);
            assert_eq!(st.attempts, 1, "{st:?}");
            assert_eq!(st.offloads, st.misses + st.partials, "{st:?}");
            if st.misses == 0 {
                return None;
            }
            assert_eq!(
                (st.attempts, st.hits, st.misses, st.partials, st.offloads),
                (1, 0, 1, 0, 1),
                "{mode:?}: a cold read misses and is offloaded: {st:?}"
            );
            let t = engine.fast_read_totals();
            assert_eq!((t.attempts, t.misses, t.offloads), (1, 1, 1), "{t:?}");
            Some(())
        });

        // Many reads of a cold file in one batch, and through a queue: the data is right, and
        // what misses (or is served in part) is offloaded, exactly once.
        let reads: Vec<Read> = (0..8)
            .map(|i| Read::new(i * 512 * 1024 + 5, &[8000, 9000]))
            .collect();
        for p in [Route::BatchPool, Route::QueuePool] {
            until_not_raced(&format!("{mode:?} {p:?} cold reads"), |k| {
                let mut engine = pool(mode);
                let name = format!("many-{mode:?}-{p:?}-{k}");
                let file = cold_file(dir.path(), &name, SEED, SIZE);
                let got = read_through(p, &file, &mut engine, &mut q, &pol, &reads);
                for (r, d) in reads.iter().zip(&got) {
                    assert_eq!(d.len(), r.len());
                    assert_pattern(d, SEED, r.off, &format!("{mode:?} {p:?} cold read"));
                }
                let st = file.fast_read_stats(&pol);
                assert_eq!(st.attempts, reads.len() as u64, "{st:?}");
                assert_eq!(st.attempts, st.hits + st.partials + st.misses, "{st:?}");
                assert_eq!(st.offloads, st.misses + st.partials, "{st:?}");
                (st.misses >= 1).then_some(())
            });
        }

        // try_read_inline on a cold range says so; the data, read blocking, is right.
        until_not_raced(&format!("{mode:?} try_read_inline cold"), |k| {
            let file = cold_file(dir.path(), &format!("inline-{mode:?}-{k}"), SEED, SIZE);
            let mut buf = vec![0u8; 1 << 20];
            let a = file
                .try_read_inline(IoIter::read_into(&mut buf), 2 << 20, &pol)
                .unwrap();
            assert_eq!(file.read_at(&mut buf, 2 << 20).unwrap(), 1 << 20);
            assert_pattern(&buf, SEED, 2 << 20, "after an inline attempt");
            (a == Attempt::WouldBlock).then(|| {
                assert_eq!(file.fast_read_stats(&pol).misses, 1);
            })
        });
    }
}

// ---------------------------------------------------------------------------------------------
// EOPNOTSUPP: tmpfs
// ---------------------------------------------------------------------------------------------

fn tmpfs_dir() -> Option<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    let st = rustix::fs::statfs(shm).ok()?;
    // TMPFS_MAGIC, compared as the kernel's 32-bit magic whatever the width of f_type.
    if st.f_type as u32 != 0x0102_1994 {
        return None;
    }
    tempfile::Builder::new()
        .prefix("vecio-fast-read-")
        .tempdir_in(shm)
        .ok()
}

/// tmpfs refuses `RWF_NOWAIT` reads with `EOPNOTSUPP`: the file is marked unsupported after
/// the first attempt, never tried again, and every read is still right (Always and Tracked).
#[test]
fn eopnotsupp_on_tmpfs_turns_the_attempt_off_for_that_file() {
    const SEED: u16 = 24;
    const SIZE: u64 = 100 * 1024 + 17;
    let Some(dir) = tmpfs_dir() else {
        println!("skipped: /dev/shm is not a writable tmpfs here");
        return;
    };
    let reads: Vec<Read> = (0..20)
        .map(|i| Read::new(i * 5000 + i, &[1000, 2000, 3000]))
        .chain([Read::new(SIZE - 10, &[4096])])
        .collect();
    for mode in MODES {
        let pol = policy(mode);
        let file = pattern_file(dir.path(), &format!("shm-{mode:?}"), SEED, SIZE);
        let mut engine = pool(mode);
        let mut q = Queue::new(Box::new(pool(mode)));
        let mut total = 0u64;
        for p in [Route::BatchPool, Route::QueuePool, Route::Inline] {
            let got = read_through(p, &file, &mut engine, &mut q, &pol, &reads);
            for (r, d) in reads.iter().zip(&got) {
                assert_eq!(d.len(), expected_len(SIZE, r.off, r.len()));
                assert_pattern(d, SEED, r.off, &format!("tmpfs {mode:?} {p:?}"));
            }
            total += reads.len() as u64;
            let st = file.fast_read_stats(&pol);
            if mode == FastReadMode::Off {
                assert_eq!(st.attempts, 0, "{st:?}");
                assert!(!st.unsupported, "Off never learns: {st:?}");
            } else {
                assert!(
                    st.unsupported,
                    "{mode:?} {p:?}: EOPNOTSUPP is remembered: {st:?}"
                );
                assert_eq!(
                    st.attempts, 1,
                    "{mode:?} {p:?}: only the first read is tried: {st:?}"
                );
                assert_eq!((st.hits, st.partials, st.misses), (0, 0, 0), "{st:?}");
            }
            if !matches!(p, Route::Inline) {
                // A read across end of file is resumed once (and finds end of file), so
                // it may go to the pool twice.
                let off = file.fast_read_stats(&pol).offloads;
                assert!(
                    off >= total,
                    "{mode:?} {p:?}: every engine read goes to the pool ({off} of {total})"
                );
            }
        }
        // The inline call reports a skip, never an error.
        let mut buf = vec![0u8; 4096];
        let a = file
            .try_read_inline(IoIter::read_into(&mut buf), 0, &pol)
            .unwrap();
        assert_eq!(a, Attempt::Skipped, "{mode:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Tracking: stop trying on cold files, come back on warm ones
// ---------------------------------------------------------------------------------------------

/// Reads `len` bytes at `off` through a one-request batch on `engine` and checks the data.
fn read_one(engine: &mut PoolEngine, file: &File, off: u64, len: usize, seed: u16) {
    let mut buf = vec![0u8; len];
    let mut batch = Batch::new();
    batch.push(file, off, IoIter::read_into(&mut buf), RwFlags::empty());
    let r = batch.run(engine).pop().unwrap();
    assert_eq!(r.unwrap(), len);
    assert_pattern(&buf, seed, off, "tracked read");
}

/// True when a read of a cold range was served inline (see [`until_not_raced`]).
fn raced(st: &FastReadStats) -> bool {
    st.hits > 0 || st.partials > 0
}

/// A file that keeps missing stops being tried (only one read in `reprobe_every` is probed),
/// and once it is warm, hits on probes bring every read back inline.
#[test]
fn tracking_stops_trying_a_cold_file_and_comes_back_when_it_is_warm() {
    const SEED: u16 = 25;
    const SLOT: u64 = 256 * 1024;
    const SLOTS: u64 = 48;
    const LEN: usize = 64 * 1024;
    const EVERY: u32 = 4;
    let pol = FastReadPolicy {
        mode: FastReadMode::Tracked,
        threshold: 0.5,
        decay: 0.25,
        reprobe_every: EVERY,
        writes: false,
    };
    let dir = tempdir();
    until_not_raced("tracking", |k| {
        // Every read goes to a slot no read has touched, made cold right before.
        let file = cold_file(dir.path(), &format!("tracked-{k}"), SEED, SLOT * SLOTS);
        let mut engine = pool_with(pol);
        let mut slot = 0u64;
        let mut cold_read = |engine: &mut PoolEngine| {
            slot += 1;
            assert!(slot < SLOTS, "test needs more slots");
            let off = slot * SLOT + 8192;
            make_cold(&file, off, LEN as u64);
            read_one(engine, &file, off, LEN, SEED);
        };

        // Cold reads until tracking turns off: each one tried, each a miss, each offloaded.
        let mut cold_reads = 0u64;
        while !file.fast_read_stats(&pol).tracking_off {
            cold_read(&mut engine);
            cold_reads += 1;
            let st = file.fast_read_stats(&pol);
            if raced(&st) {
                return None;
            }
            assert!(cold_reads <= 10, "tracking never turned off: {st:?}");
        }
        let st = file.fast_read_stats(&pol);
        assert_eq!(
            (st.attempts, st.misses, st.offloads, st.skipped),
            (cold_reads, cold_reads, cold_reads, 0),
            "every cold read tried, missed and offloaded: {st:?}"
        );
        assert!(cold_reads >= 2, "one miss is not enough to give up: {st:?}");

        // Still cold: only probes are tried; every read is offloaded.
        let before = file.fast_read_stats(&pol);
        let n = 4 * EVERY as u64;
        for _ in 0..n {
            cold_read(&mut engine);
        }
        let st = file.fast_read_stats(&pol);
        if raced(&st) {
            return None;
        }
        assert!(st.tracking_off, "{st:?}");
        let probes = n / EVERY as u64;
        assert_eq!(
            (
                st.attempts - before.attempts,
                st.misses - before.misses,
                st.skipped - before.skipped,
                st.offloads - before.offloads
            ),
            (probes, probes, n - probes, n),
            "one probe per reprobe_every reads, the rest skipped: {st:?}"
        );

        // Warm: hits on probes bring the file back.
        warm(&file);
        let mut warm_reads = 0u64;
        while file.fast_read_stats(&pol).tracking_off {
            warm_reads += 1;
            read_one(&mut engine, &file, warm_reads * SLOT, LEN, SEED);
            assert!(
                warm_reads <= 4 * EVERY as u64,
                "a warm file was not tried again: {:?}",
                file.fast_read_stats(&pol)
            );
        }
        let before = file.fast_read_stats(&pol);
        assert!(before.hits >= 1, "probes of a warm file hit: {before:?}");
        let n = 12u64;
        for i in 0..n {
            read_one(&mut engine, &file, i * SLOT + 100, LEN, SEED);
        }
        let st = file.fast_read_stats(&pol);
        assert!(!st.tracking_off, "{st:?}");
        assert_eq!(
            (
                st.attempts - before.attempts,
                st.hits - before.hits,
                st.skipped - before.skipped,
                st.offloads - before.offloads
            ),
            (n, n, 0, 0),
            "back on: every read tried and served inline: {st:?}"
        );
        Some(())
    });
}

// ---------------------------------------------------------------------------------------------
// NOWAIT writes and caller-given NOWAIT
// ---------------------------------------------------------------------------------------------

/// With `writes: true`, writes are tried with `RWF_NOWAIT`; ext4 refuses buffered NOWAIT
/// writes (`EOPNOTSUPP`), which falls back to the pool, at most once per file. The data is
/// right in every mode, through a batch and a queue.
#[test]
fn nowait_writes_fall_back_and_write_the_right_data() {
    const SEED: u16 = 26;
    let dir = tempdir();
    for mode in MODES {
        let pol = FastReadPolicy {
            writes: true,
            ..policy(mode)
        };
        // Batch: 8 multi-segment writes at odd offsets.
        let path = dir.path().join(format!("w-batch-{mode:?}"));
        let file = open_buffered(&path);
        let mut engine = pool_with(pol);
        let total = 8 * 20_000usize;
        let src = pattern(SEED, 0, total);
        let res = {
            let segs: Vec<Vec<std::io::IoSlice<'_>>> = (0..8)
                .map(|i| {
                    split(&src[i * 20_000..(i + 1) * 20_000], &[1, 4095, 9000, 6904])
                        .into_iter()
                        .map(std::io::IoSlice::new)
                        .collect()
                })
                .collect();
            let mut batch = Batch::new();
            for (i, s) in segs.iter().enumerate() {
                batch.push(
                    &file,
                    (i * 20_000) as u64,
                    IoIter::writev_from(s),
                    RwFlags::empty(),
                );
            }
            batch.run(&mut engine)
        };
        for (i, r) in res.iter().enumerate() {
            assert_eq!(r.as_ref().ok(), Some(&20_000), "{mode:?} write {i}: {r:?}");
        }
        let sys = engine.counters().syscalls;
        if mode == FastReadMode::Off {
            assert_eq!(sys, 8, "Off never tries writes inline");
        } else {
            assert!(
                sys <= 8 + 1,
                "{mode:?}: a refused NOWAIT write is tried at most once per file ({sys} calls)"
            );
        }
        assert_same(&read_all(&path), &src, 0, &format!("{mode:?} batch writes"));

        // Queue: 16 writes, single and multi-buffer, then read back through the same queue.
        let path = dir.path().join(format!("w-queue-{mode:?}"));
        let file = Arc::new(open_buffered(&path));
        let mut q = Queue::new(Box::new(pool_with(pol)));
        for i in 0..16u64 {
            let data = pattern(SEED + 1, i * 5000, 5000);
            let bufs = if i % 2 == 0 {
                vec![OwnedBuf::Vec(data)]
            } else {
                vec![
                    OwnedBuf::Vec(data[..1234].to_vec()),
                    OwnedBuf::Vec(data[1234..].to_vec()),
                ]
            };
            q.push_write(&file, i * 5000, bufs, RwFlags::empty(), i)
                .map_err(|(e, _)| e)
                .unwrap();
        }
        q.submit_and_wait(16).unwrap();
        let mut done = Vec::new();
        q.reap(&mut done);
        assert_eq!(done.len(), 16);
        for c in &done {
            assert_eq!(c.result.as_ref().ok(), Some(&5000), "{mode:?} queued write");
        }
        assert_same(
            &read_all(&path),
            &pattern(SEED + 1, 0, 16 * 5000),
            0,
            &format!("{mode:?} queued writes"),
        );
    }
}

/// Pushes one read of `len` at `off` with the caller's `flags` through a queue; its result.
fn queue_read(
    q: &mut Queue,
    file: &Arc<File>,
    off: u64,
    len: usize,
    flags: RwFlags,
) -> (vecio::Result<usize>, Vec<u8>) {
    q.push_read(file, off, vec![OwnedBuf::Vec(vec![0; len])], flags, 7)
        .map_err(|(e, _)| e)
        .unwrap();
    q.submit_and_wait(1).unwrap();
    let mut done = Vec::new();
    q.reap(&mut done);
    assert_eq!(done.len(), 1);
    let c = done.pop().unwrap();
    (c.result, c.bufs[0].as_slice().to_vec())
}

/// A read the caller marks `RWF_NOWAIT` is not turned into a blocking read: on a cold file it
/// fails with `EAGAIN` (through a queue and through a batch); on a warm one it succeeds.
/// A caller's `RWF_NOWAIT` write on ext4 is refused, not silently made blocking.
#[test]
fn a_callers_nowait_is_kept() {
    const SEED: u16 = 27;
    const SIZE: u64 = 1 << 20;
    let dir = tempdir();
    for mode in MODES {
        let mut q = Queue::new(Box::new(pool(mode)));
        let mut engine = pool(mode);

        until_not_raced(&format!("{mode:?} queued NOWAIT read"), |k| {
            let file = cold_file(dir.path(), &format!("nw-q-{mode:?}-{k}"), SEED, SIZE);
            match queue_read(&mut q, &file, 4096, 65536, RwFlags::NOWAIT) {
                (Err(e), _) => {
                    assert!(e.is_would_block(), "{mode:?}: queue: {e}");
                    Some(())
                }
                (Ok(n), data) => {
                    // Served by the readahead the attempt itself started: must be right.
                    assert!(n > 0 && n <= 65536);
                    assert_pattern(&data[..n], SEED, 4096, "raced NOWAIT read");
                    None
                }
            }
        });

        let file = until_not_raced(&format!("{mode:?} batched NOWAIT read"), |k| {
            let file = cold_file(dir.path(), &format!("nw-b-{mode:?}-{k}"), SEED, SIZE);
            let mut buf = vec![0u8; 65536];
            let r = {
                let mut batch = Batch::new();
                batch.push(&file, 65536, IoIter::read_into(&mut buf), RwFlags::NOWAIT);
                batch.run(&mut engine).pop().unwrap()
            };
            match r {
                Err(e) => {
                    assert!(e.is_would_block(), "{mode:?}: batch: {e}");
                    Some(file)
                }
                Ok(n) => {
                    assert!(n > 0 && n <= 65536);
                    assert_pattern(&buf[..n], SEED, 65536, "raced NOWAIT read");
                    None
                }
            }
        });

        warm(&file);
        let (r, data) = queue_read(&mut q, &file, 4096, 8192, RwFlags::NOWAIT);
        assert_eq!(r.unwrap(), 8192);
        assert_pattern(&data, SEED, 4096, "warm NOWAIT read");
    }

    let wfile = Arc::new(open_buffered(&dir.path().join("nw-write")));
    let mut q = Queue::new(Box::new(pool_with(FastReadPolicy {
        writes: true,
        ..policy(FastReadMode::Always)
    })));
    q.push_write(
        &wfile,
        0,
        vec![OwnedBuf::Vec(pattern(SEED, 0, 4096))],
        RwFlags::NOWAIT,
        1,
    )
    .map_err(|(e, _)| e)
    .unwrap();
    q.submit_and_wait(1).unwrap();
    let mut done = Vec::new();
    q.reap(&mut done);
    match &done[0].result {
        Ok(n) => {
            // A kernel that takes buffered NOWAIT writes on ext4: then the data must be there.
            assert_eq!(*n, 4096);
            assert_same(
                &read_all(wfile.path()),
                &pattern(SEED, 0, 4096),
                0,
                "NOWAIT write",
            );
        }
        Err(e) => assert!(
            e.raw_os_error() == Some(libc::EOPNOTSUPP) || e.is_would_block(),
            "a refused caller NOWAIT write is reported as such: {e}"
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Direct files
// ---------------------------------------------------------------------------------------------

/// Direct (`O_DIRECT`) files are never tried inline: no attempt is counted on the file or the
/// engine, `try_read_inline` skips, and aligned and unaligned reads are right.
#[test]
fn direct_files_are_never_tried_inline() {
    const SEED: u16 = 28;
    const SIZE: usize = 256 * 1024;
    let dir = tempdir();
    let path = dir.path().join("direct");
    let file = Arc::new(open_direct(&path));
    let mut src = AlignedBuf::page_aligned(SIZE);
    fill(&mut src, SEED, 0);
    assert_eq!(file.write_at(&src, 0).unwrap(), SIZE);
    for mode in [FastReadMode::Always, FastReadMode::Tracked] {
        let pol = policy(mode);
        let mut engine = pool(mode);

        // Aligned reads into aligned buffers, and unaligned ones (bounce path).
        let mut a = AlignedBuf::page_aligned(65536);
        let mut b = vec![0u8; 10_000];
        let res = {
            let mut batch = Batch::new();
            batch.push(&file, 65536, IoIter::read_into(&mut a), RwFlags::empty());
            batch.push(&file, 1001, IoIter::read_into(&mut b), RwFlags::empty());
            batch.run(&mut engine)
        };
        assert_eq!(res[0].as_ref().ok(), Some(&65536));
        assert_eq!(res[1].as_ref().ok(), Some(&10_000));
        assert_pattern(&a, SEED, 65536, "direct aligned read");
        assert_pattern(&b, SEED, 1001, "direct unaligned read");

        let mut q = Queue::new(Box::new(pool(mode)));
        for i in 0..8u64 {
            let buf = OwnedBuf::Aligned(AlignedBuf::page_aligned(8192));
            q.push_read(&file, i * 8192, vec![buf], RwFlags::empty(), i)
                .map_err(|(e, _)| e)
                .unwrap();
        }
        q.submit_and_wait(8).unwrap();
        let mut done = Vec::new();
        q.reap(&mut done);
        assert_eq!(done.len(), 8);
        for c in &done {
            assert_eq!(c.result.as_ref().ok(), Some(&8192));
            assert_pattern(
                c.bufs[0].as_slice(),
                SEED,
                c.user_data * 8192,
                "direct queued read",
            );
        }

        let mut c = AlignedBuf::page_aligned(4096);
        let at = file
            .try_read_inline(IoIter::read_into(&mut c), 0, &pol)
            .unwrap();
        assert_eq!(at, Attempt::Skipped, "{mode:?}");

        let st = file.fast_read_stats(&pol);
        assert_eq!(
            st.attempts, 0,
            "{mode:?}: a direct file is never tried: {st:?}"
        );
        assert_eq!(engine.fast_read_totals().attempts, 0, "{mode:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Library bugs found by these tests (each test names the defect it shows)
// ---------------------------------------------------------------------------------------------

/// A warm small file read with a buffer larger than the file (FUSE and NBD servers read with
/// 128 KiB buffers) is all in the page cache: the docs say such a read is a hit ("or the read
/// ended at end of file"), served inline. The pool engine counts it a *partial* and offloads
/// the empty remainder to a worker (a thread hop and a system call for nothing, on every
/// read). (Batch then resumes the short read once, finding end of file; that round is its own
/// business and is a hit either way.)
#[test]
fn a_warm_read_ending_at_end_of_file_is_a_hit_in_the_pool_engine() {
    const SEED: u16 = 29;
    const SIZE: u64 = 1000;
    const N: u64 = 64;
    let dir = tempdir();
    let file = pattern_file(dir.path(), "small", SEED, SIZE);
    warm(&file);
    let pol = policy(FastReadMode::Tracked);
    let mut engine = pool(FastReadMode::Tracked);
    for _ in 0..N {
        let mut buf = vec![0u8; 65536];
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::read_into(&mut buf), RwFlags::empty());
        assert_eq!(
            batch.run(&mut engine).pop().unwrap().unwrap(),
            SIZE as usize
        );
        assert_pattern(&buf[..SIZE as usize], SEED, 0, "small file");
    }
    let st = file.fast_read_stats(&pol);
    assert!(
        st.hits >= N && st.attempts == st.hits && st.offloads == 0 && !st.tracking_off,
        "a fully cached read that ends at end of file must be a hit served inline; \
         got {st:?} (engine/pool.rs try_inline counts 0 < r < op.len as Partial and offloads)"
    );
}

/// The same through `File::try_read_inline`: `Attempt::Done` is documented as "served whole
/// (or up to end of file)", but a cached read across end of file comes back `Partial`, so the
/// caller offloads a remainder that does not exist, and each such read counts as a partial of
/// a small fraction: a server reading a small, fully cached file with large buffers sees its
/// hit ratio fall until tracking turns the fast path off.
#[test]
fn try_read_inline_across_end_of_file_is_done() {
    const SEED: u16 = 30;
    const SIZE: u64 = 10_000;
    let dir = tempdir();
    let file = pattern_file(dir.path(), "eof", SEED, SIZE);
    warm(&file);
    let pol = policy(FastReadMode::Tracked);
    let mut buf = vec![0u8; 8192];
    let a = file
        .try_read_inline(IoIter::read_into(&mut buf), SIZE - 1000, &pol)
        .unwrap();
    assert_pattern(&buf[..1000], SEED, SIZE - 1000, "eof read");
    // A small file read whole with a large buffer, as a file server does, 64 times.
    let mut skipped_or_partial = 0;
    for _ in 0..64 {
        let mut big = vec![0u8; 131072];
        match file
            .try_read_inline(IoIter::read_into(&mut big), 0, &pol)
            .unwrap()
        {
            Attempt::Done(n) => assert_eq!(n, SIZE as usize),
            _ => skipped_or_partial += 1,
        }
    }
    let st = file.fast_read_stats(&pol);
    assert_eq!(
        (a, skipped_or_partial, st.hits, st.partials, st.tracking_off),
        (Attempt::Done(1000), 0, 65, 0, false),
        "a cached read across end of file is done, not partial: {st:?} \
         (fastread.rs try_read_inline treats only n == 0 as end of file)"
    );
}

/// A request whose *own* flags the kernel refuses (`EOPNOTSUPP` for an unknown bit; likewise
/// `RWF_DONTCACHE` on a file system without it) fails, as it should. But the pool engine's
/// `RWF_NOWAIT` attempt carries the caller's flags, gets the same `EOPNOTSUPP`, and takes it
/// to mean "this file refuses NOWAIT": fast reads are turned off for the file for good,
/// although ext4 serves NOWAIT reads.
#[test]
fn a_refused_caller_flag_does_not_turn_fast_reads_off() {
    const SEED: u16 = 31;
    const SIZE: u64 = 64 * 1024;
    let dir = tempdir();
    let file = pattern_file(dir.path(), "flags", SEED, SIZE);
    warm(&file);
    let pol = policy(FastReadMode::Tracked);
    let mut q = Queue::new(Box::new(pool(FastReadMode::Tracked)));
    let bad = RwFlags::from_bits_retain(0x1000);
    let (r, _) = queue_read(&mut q, &file, 0, 4096, bad);
    let e = r.expect_err("an unknown RWF bit is refused by the kernel");
    assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}");

    for i in 0..8u64 {
        let (r, data) = queue_read(&mut q, &file, i * 4096, 4096, RwFlags::empty());
        assert_eq!(r.unwrap(), 4096);
        assert_pattern(&data, SEED, i * 4096, "read after a refused flag");
    }
    let st = file.fast_read_stats(&pol);
    assert!(
        !st.unsupported && st.hits == 8,
        "ext4 serves NOWAIT reads; one request's bad flag must not turn fast reads off for \
         the file: {st:?} (engine/pool.rs try_inline records Outcome::Unsupported for any \
         EOPNOTSUPP, even when the caller's other flags caused it)"
    );
}

/// `PoolEngine::fast_read_totals` is documented as the counters "over every file this engine
/// served", but reads skipped because a file's hit ratio is low are counted on the file only:
/// the engine's `skipped` stays 0.
#[test]
fn engine_totals_count_skipped_reads() {
    const SEED: u16 = 32;
    const SLOT: u64 = 256 * 1024;
    let pol = FastReadPolicy {
        mode: FastReadMode::Tracked,
        threshold: 0.5,
        decay: 0.5,
        reprobe_every: 1000,
        writes: false,
    };
    let dir = tempdir();
    let file = cold_file(dir.path(), "totals", SEED, 32 * SLOT);
    let mut engine = pool_with(pol);
    let mut i = 0u64;
    while !file.fast_read_stats(&pol).tracking_off {
        i += 1;
        assert!(i < 24, "tracking never turned off");
        make_cold(&file, i * SLOT, 4096);
        read_one(&mut engine, &file, i * SLOT, 4096, SEED);
    }
    for j in 0..4 {
        read_one(&mut engine, &file, (i + 1 + j) * SLOT, 4096, SEED);
    }
    let st = file.fast_read_stats(&pol);
    let t = engine.fast_read_totals();
    assert_eq!(st.skipped, 4, "{st:?}");
    assert_eq!(
        counters(&t),
        counters(&st),
        "one file served: the engine totals equal its counters (skipped included); \
         totals {t:?}, file {st:?} (FastReadState::should_try counts skipped on the file \
         only; engine/pool.rs try_inline never adds it to the totals)"
    );
}
