//! vecio-tokio in an ordinary multi-threaded tokio runtime: many tasks reading and writing one
//! file at any alignment, direct and buffered, checked byte for byte against `std::fs`; a
//! future dropped mid-flight; end of file; a write-only file; cached reads served inline.

use std::os::unix::fs::FileExt;
use std::sync::Arc;

use crate::common::{self, pattern, Rng};
use vecio::{Direct, EngineKind};
use vecio_tokio::{Driver, File};

const SIZE: usize = 4 << 20;

fn tempdir() -> tempfile::TempDir {
    common::tempdir("vecio-tokio-")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

async fn open(driver: &Driver, path: &std::path::Path, direct: Direct) -> File {
    let opts = vecio::File::options().read(true).write(true).direct(direct);
    driver.open(path, opts).await.unwrap()
}

#[test]
fn many_tasks_on_one_file_match_std() {
    for (direct, kind) in [
        (Direct::On, EngineKind::Uring),
        (Direct::Off, EngineKind::Uring),
        (Direct::On, EngineKind::Pool),
        (Direct::Off, EngineKind::Sync),
    ] {
        let dir = tempdir();
        let path = dir.path().join("f");
        let mut model = pattern(1, SIZE);
        std::fs::write(&path, &model).unwrap();
        let rt = runtime();
        type Done = Vec<(u64, Vec<u8>)>;
        let (writes, reads): (Done, Done) = rt.block_on(async {
            let driver = Driver::new(kind.build().unwrap()).unwrap();
            let file = open(&driver, &path, direct).await;
            assert_eq!(file.vecio().is_direct(), direct == Direct::On);
            // Even tasks read anywhere; odd tasks write, each in a region of its own.
            let mut tasks = Vec::new();
            for t in 0..32u64 {
                let file = file.clone();
                tasks.push(tokio::spawn(async move {
                    let mut rng = Rng(t * 7919 + 1);
                    let region = (t as usize) * (SIZE / 32);
                    let (mut writes, mut reads) = (Vec::new(), Vec::new());
                    for i in 0..16 {
                        if t % 2 == 0 {
                            let len = 1 + rng.below(70_000) as usize;
                            let off = rng.below((SIZE - len) as u64);
                            let (r, buf) = file.read_at(vec![0u8; len], off).await;
                            assert_eq!(r.unwrap(), len);
                            reads.push((off, buf));
                        } else {
                            let len = 1 + rng.below(9000) as usize;
                            let off = region as u64 + rng.below((SIZE / 32 - len) as u64);
                            let data = pattern(t * 100 + i, len);
                            let (r, _) = file.write_all_at(data.clone(), off).await;
                            r.unwrap();
                            writes.push((off, data));
                        }
                    }
                    (writes, reads)
                }));
            }
            let (mut writes, mut reads) = (Vec::new(), Vec::new());
            for t in tasks {
                let (w, r) = t.await.unwrap();
                writes.extend(w);
                reads.extend(r);
            }
            file.sync_data().await.unwrap();
            (writes, reads)
        });
        // Apply the writes (each task's in order; regions are disjoint) and compare.
        for (off, data) in &writes {
            model[*off as usize..*off as usize + data.len()].copy_from_slice(data);
        }
        let back = std::fs::read(&path).unwrap();
        assert!(
            back == model,
            "{direct:?} {kind:?}: the file differs from std's model"
        );
        // Reads raced with writes: bytes no write touched must be the original pattern.
        let orig = pattern(1, SIZE);
        let mut touched = vec![false; SIZE];
        for (off, data) in &writes {
            touched[*off as usize..*off as usize + data.len()].fill(true);
        }
        for (off, data) in &reads {
            for (k, &b) in data.iter().enumerate() {
                let at = *off as usize + k;
                if !touched[at] {
                    assert_eq!(b, orig[at], "{direct:?} {kind:?}: read at {at}");
                }
            }
        }
    }
}

#[test]
fn a_future_dropped_mid_flight_leaves_the_driver_working() {
    let dir = tempdir();
    let path = dir.path().join("f");
    std::fs::write(&path, pattern(2, SIZE)).unwrap();
    runtime().block_on(async {
        let driver = Driver::uring().unwrap();
        let file = open(&driver, &path, Direct::On).await;
        for i in 0..50u64 {
            let f = file.clone();
            let read = f.read_at(vec![0u8; 1 << 20], (i % 3) << 20);
            // Dropped before (or just as) it completes: the queue keeps the buffer until then.
            let _ = tokio::time::timeout(std::time::Duration::from_micros(50), read).await;
        }
        let (r, buf) = file.read_at(vec![0u8; 4096], 8192).await;
        assert_eq!(r.unwrap(), 4096);
        assert_eq!(buf, pattern(2, SIZE)[8192..12288]);
    });
}

#[test]
fn end_of_file_and_a_write_only_file() {
    let dir = tempdir();
    let path = dir.path().join("f");
    std::fs::write(&path, pattern(3, 10_000)).unwrap();
    runtime().block_on(async {
        let driver = Driver::uring().unwrap();
        let file = open(&driver, &path, Direct::On).await;
        let (r, buf) = file.read_at(vec![0u8; 5000], 9000).await;
        assert_eq!(r.unwrap(), 1000);
        assert_eq!(&buf[..1000], &pattern(3, 10_000)[9000..]);
        let (r, _) = file.read_at(vec![0u8; 10], 20_000).await;
        assert_eq!(r.unwrap(), 0);
        let (r, _) = file.read_exact_at(vec![0u8; 5000], 9000).await;
        assert_eq!(r.unwrap_err().kind(), std::io::ErrorKind::UnexpectedEof);

        let wo = vecio::File::options().write(true);
        let wo = driver.open(&path, wo).await.unwrap();
        let (r, _) = wo.read_at(vec![0u8; 10], 0).await;
        assert!(r.is_err(), "a read of a write-only file must fail");
        let (r, _) = wo.write_at(b"abc".to_vec(), 1).await;
        assert_eq!(r.unwrap(), 3);
    });
    assert_eq!(&std::fs::read(&path).unwrap()[1..4], b"abc");
}

#[test]
fn cached_reads_are_served_inline_not_by_the_engine() {
    let dir = tempdir();
    let path = dir.path().join("f");
    std::fs::write(&path, pattern(4, 1 << 20)).unwrap();
    // Warm the page cache.
    let std_file = std::fs::File::open(&path).unwrap();
    let mut warm = vec![0u8; 1 << 20];
    std_file.read_exact_at(&mut warm, 0).unwrap();
    runtime().block_on(async {
        let driver = Driver::uring().unwrap();
        let file = Arc::new(open(&driver, &path, Direct::Off).await);
        let before = driver.counters().ops;
        for i in 0..100u64 {
            let (r, buf) = file.read_at(vec![0u8; 16384], i * 8192).await;
            assert_eq!(r.unwrap(), 16384);
            assert_eq!(
                buf[..],
                warm[(i * 8192) as usize..(i * 8192) as usize + 16384]
            );
        }
        assert_eq!(
            driver.counters().ops,
            before,
            "a cached read went to the engine"
        );
        let stats = file.vecio().fast_read_stats(driver.policy());
        assert!(stats.hits >= 100, "{stats:?}");
    });
}

/// `File::open` serves every file through the one shared driver, not a ring and a thread each.
#[test]
fn files_opened_alone_share_one_driver() {
    let dir = tempdir();
    runtime().block_on(async {
        let opts = || vecio::File::options().read(true).write(true).create(true);
        let a = File::open(dir.path().join("a"), opts()).await.unwrap();
        let b = File::open(dir.path().join("b"), opts()).await.unwrap();
        assert!(a.driver() == b.driver());
        assert!(a.driver() == &Driver::shared().unwrap());
        assert!(
            a.driver() != &Driver::uring().unwrap(),
            "a new driver is another one"
        );
        let (n, _) = b.write_at(vec![1u8; 100], 0).await;
        assert_eq!(n.unwrap(), 100);
    });
}
