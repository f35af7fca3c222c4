//! Per-call flags reach the kernel through every engine, and whatever the kernel says about
//! them is surfaced: a refused flag is `Error::Unsupported` naming the flag and the file (and
//! is remembered on the file), never silently dropped; accepted flags keep their meaning on
//! the unaligned direct path too.

use crate::common;

use std::path::Path;

use common::*;
use vecio::{AlignedBuf, Batch, Direct, EngineKind, Error, File, IoIter, RwFlags};

fn shm_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("vecio-test-")
        .tempdir_in("/dev/shm")
        .expect("a directory on /dev/shm (tmpfs)")
}

/// What `preadv2` itself says about `flags` on `path` (buffered), as an errno or bytes.
fn kernel_preadv2(path: &Path, flags: RwFlags) -> Result<usize, i32> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    let mut buf = [0u8; 512];
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: one valid iovec over a live buffer.
    let r = unsafe { libc::preadv2(f.as_raw_fd(), &iov, 1, 0, flags.to_kernel()) };
    if r < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap())
    } else {
        Ok(r as usize)
    }
}

#[track_caller]
fn assert_unsupported(r: &vecio::Result<usize>, flag: RwFlags, path: &Path, what: &str) {
    match r {
        Err(
            e @ Error::Unsupported {
                flag: f, path: p, ..
            },
        ) => {
            assert!(f.contains(flag), "{what}: flags {f:?} do not name {flag:?}");
            assert_eq!(&**p, path, "{what}: path");
            assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP));
            assert!(
                e.to_string().contains(&path.display().to_string()),
                "{what}: {e}"
            );
        }
        other => panic!("{what}: expected Unsupported({flag:?}), got {other:?}"),
    }
}

/// RWF_NOWAIT reads on tmpfs: this kernel refuses them (EOPNOTSUPP, probed first); vecio says
/// `Unsupported` with the flag and the path, on every engine, for batch and blocking calls,
/// and for flags given per call or per file.
#[test]
fn nowait_on_tmpfs_is_surfaced() {
    let dir = shm_dir();
    let path = dir.path().join("data");
    std::fs::write(&path, pattern(1, 0, 8192)).unwrap();
    let kernel = kernel_preadv2(&path, RwFlags::NOWAIT);
    println!("preadv2(RWF_NOWAIT) on tmpfs: {kernel:?}");
    for kind in EngineKind::ALL {
        for direct in [Direct::Off, Direct::Auto] {
            let what = format!("{kind:?} {direct:?}");
            let file = File::options()
                .read(true)
                .direct(direct)
                .open(&path)
                .unwrap();
            let mut engine = kind.build().unwrap();
            let mut buf = AlignedBuf::new(4096, 4096);
            let mut batch = Batch::new();
            batch.push(&file, 0, IoIter::read_into(&mut buf), RwFlags::NOWAIT);
            let r = batch.run(engine.as_mut()).pop().unwrap();
            match kernel {
                Err(libc::EOPNOTSUPP) => {
                    assert_unsupported(&r, RwFlags::NOWAIT, &path, &what);
                    assert!(
                        file.refused_flags().contains(RwFlags::NOWAIT),
                        "{what}: not remembered"
                    );
                }
                Err(errno) => {
                    assert_eq!(
                        r.as_ref().err().and_then(|e| e.raw_os_error()),
                        Some(errno),
                        "{what}: {r:?}"
                    )
                }
                // Accepted: the bytes are real (a miss would be EAGAIN, surfaced as such).
                Ok(_) => match &r {
                    Ok(n) => assert_pattern(&buf[..*n], 1, 0, &what),
                    Err(e) => assert!(e.is_would_block(), "{what}: {e:?}"),
                },
            }
        }
    }
    if kernel == Err(libc::EOPNOTSUPP) {
        let file = File::options()
            .read(true)
            .direct(Direct::Off)
            .open(&path)
            .unwrap();
        let mut buf = [0u8; 100];
        let r = file.readv_at(
            &mut [std::io::IoSliceMut::new(&mut buf)],
            10,
            RwFlags::NOWAIT,
        );
        assert_unsupported(&r, RwFlags::NOWAIT, &path, "readv_at");
        let file = File::options()
            .read(true)
            .direct(Direct::Off)
            .flags(RwFlags::NOWAIT)
            .open(&path)
            .unwrap();
        assert_unsupported(
            &file.read_at(&mut buf, 0),
            RwFlags::NOWAIT,
            &path,
            "per-file NOWAIT",
        );
    }
}

/// A flag bit the kernel does not know is refused by the kernel (EOPNOTSUPP) and surfaced as
/// `Unsupported` on every engine, on the aligned, bounce-read and read-modify-write paths.
#[test]
fn unknown_flag_is_surfaced_not_dropped() {
    let unknown = RwFlags::from_bits_retain(0x1000);
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        std::fs::write(&path, pattern(2, 0, 8192)).unwrap();
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();
        let a = AlignedBuf::new(4096, 4096);
        let mut r1 = AlignedBuf::new(4096, 4096);
        let mut r2 = vec![0u8; 100];
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::write_from(&a), unknown);
        batch.push(&file, 4096, IoIter::read_into(&mut r1), unknown);
        batch.push(&file, 33, IoIter::read_into(&mut r2), unknown);
        batch.push(&file, 77, IoIter::write_from(&a[..10]), unknown);
        let res = batch.run(engine.as_mut());
        for (i, r) in res.iter().enumerate() {
            assert_unsupported(r, unknown, &path, &format!("{kind:?} request {i}"));
        }
        assert!(file.refused_flags().contains(unknown));
        assert_pattern(&read_all(&path), 2, 0, &format!("{kind:?}: file untouched"));
    }
}

/// RWF_DONTCACHE: ext4 takes it (with O_DIRECT it changes nothing); tmpfs refuses it. Both
/// answers reach the caller unchanged, on every engine.
#[test]
fn dontcache_follows_the_kernel() {
    let shm = shm_dir();
    let tmpfs_path = shm.path().join("data");
    std::fs::write(&tmpfs_path, pattern(3, 0, 4096)).unwrap();
    let tmpfs_kernel = kernel_preadv2(&tmpfs_path, RwFlags::DONTCACHE);
    println!("preadv2(RWF_DONTCACHE) on tmpfs: {tmpfs_kernel:?}");
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        std::fs::write(&path, pattern(3, 0, 8192)).unwrap();
        let ext4_kernel = kernel_preadv2(&path, RwFlags::DONTCACHE);
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();
        let mut a = AlignedBuf::new(4096, 4096);
        fill(&mut a, 4, 4096);
        let mut r = AlignedBuf::new(8192, 4096);
        let mut batch = Batch::new();
        batch.push(&file, 4096, IoIter::write_from(&a), RwFlags::DONTCACHE);
        let w = batch.run(engine.as_mut()).pop().unwrap();
        batch.push(&file, 0, IoIter::read_into(&mut r), RwFlags::DONTCACHE);
        let rd = batch.run(engine.as_mut()).pop().unwrap();
        match ext4_kernel {
            Ok(_) => {
                assert_eq!(w.as_ref().ok(), Some(&4096), "{kind:?}: write {w:?}");
                assert_eq!(rd.as_ref().ok(), Some(&8192), "{kind:?}: read {rd:?}");
                assert_pattern(&r[..4096], 3, 0, &format!("{kind:?}"));
                assert_pattern(&r[4096..], 4, 4096, &format!("{kind:?}"));
                assert!(file.refused_flags().is_empty());
            }
            Err(libc::EOPNOTSUPP) => {
                assert_unsupported(&w, RwFlags::DONTCACHE, &path, &format!("{kind:?}"));
                assert_unsupported(&rd, RwFlags::DONTCACHE, &path, &format!("{kind:?}"));
            }
            Err(e) => panic!("unexpected errno {e} from preadv2(RWF_DONTCACHE) on ext4"),
        }

        let file = File::options()
            .read(true)
            .direct(Direct::Off)
            .open(&tmpfs_path)
            .unwrap();
        let mut buf = vec![0u8; 4096];
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::read_into(&mut buf), RwFlags::DONTCACHE);
        let r = batch.run(engine.as_mut()).pop().unwrap();
        match tmpfs_kernel {
            Ok(_) => assert_eq!(r.as_ref().ok(), Some(&4096), "{kind:?} tmpfs: {r:?}"),
            Err(libc::EOPNOTSUPP) => assert_unsupported(
                &r,
                RwFlags::DONTCACHE,
                &tmpfs_path,
                &format!("{kind:?} tmpfs"),
            ),
            Err(errno) => assert_eq!(r.err().and_then(|e| e.raw_os_error()), Some(errno)),
        }
    }
}

/// Every flag gives the same answer on every engine: the engine is a way of getting the call
/// to the kernel, not a filter on what the call means. (HIPRI on a device without poll queues,
/// DSYNC, SYNC, NOWAIT on an ext4 direct read of written data.)
#[test]
fn flags_mean_the_same_on_every_engine() {
    let dir = tempdir();
    let path = dir.path().join("data");
    std::fs::write(&path, pattern(5, 0, 16384)).unwrap();
    let file = open_direct(&path);
    file.sync_data().unwrap();
    let mut differ = Vec::new();
    for flag in [
        RwFlags::empty(),
        RwFlags::DSYNC,
        RwFlags::SYNC,
        RwFlags::NOWAIT,
        RwFlags::HIPRI,
    ] {
        let mut answers = Vec::new();
        for kind in EngineKind::ALL {
            let mut engine = kind.build().unwrap();
            let mut r = AlignedBuf::new(4096, 4096);
            let mut w = AlignedBuf::new(4096, 4096);
            fill(&mut w, 5, 8192);
            let mut batch = Batch::new();
            batch.push(&file, 4096, IoIter::read_into(&mut r), flag);
            batch.push(&file, 8192, IoIter::write_from(&w), flag);
            let res = batch.run(engine.as_mut());
            let summary: Vec<Result<usize, Option<i32>>> = res
                .iter()
                .map(|r| r.as_ref().map(|n| *n).map_err(|e| e.raw_os_error()))
                .collect();
            if let Ok(n) = &res[0] {
                assert_pattern(&r[..*n], 5, 4096, &format!("{kind:?} {flag:?}"));
            }
            answers.push((kind, summary));
        }
        if answers.iter().any(|(_, a)| *a != answers[0].1) {
            differ.push(format!("{flag:?}: {answers:?}"));
        }
    }
    assert_pattern(&read_all(&path), 5, 0, "file");
    assert!(
        differ.is_empty(),
        "engines answer differently (read, write) for:\n{}",
        differ.join("\n")
    );
}

/// RWF_APPEND puts the data at the end of the file whatever the offset, as `pwritev2(2)` does
/// on this file: aligned (straight to the kernel) and unaligned (read-modify-write) requests
/// alike. An unaligned append must not overwrite the bytes at `offset`.
#[test]
fn append_writes_at_the_end_of_file() {
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        let mut model = pattern(6, 0, 4096);
        std::fs::write(&path, &model).unwrap();
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();

        let mut a = AlignedBuf::new(4096, 4096);
        fill(&mut a, 7, 0);
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::write_from(&a), RwFlags::APPEND);
        let r = batch.run(engine.as_mut()).pop().unwrap();
        assert_eq!(
            r.as_ref().ok(),
            Some(&4096),
            "{kind:?}: aligned append {r:?}"
        );
        model.extend_from_slice(&a);
        assert_same(
            &read_all(&path),
            &model,
            0,
            &format!("{kind:?}: aligned append"),
        );

        let b = pattern(8, 0, 100);
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::write_from(&b), RwFlags::APPEND);
        let r = batch.run(engine.as_mut()).pop().unwrap();
        assert_eq!(
            r.as_ref().ok(),
            Some(&100),
            "{kind:?}: unaligned append {r:?}"
        );
        model.extend_from_slice(&b);
        let all = read_all(&path);
        assert_eq!(
            all.len(),
            model.len(),
            "{kind:?}: size after an unaligned append"
        );
        assert_same(&all, &model, 0, &format!("{kind:?}: unaligned append"));
    }
}

/// The reference for the append test: the kernel's own RWF_APPEND on a buffered file, through
/// every engine (no read-modify-write involved).
#[test]
fn append_on_buffered_file() {
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        std::fs::write(&path, pattern(6, 0, 1000)).unwrap();
        let file = open_buffered(&path);
        let mut engine = kind.build().unwrap();
        let b = pattern(8, 0, 100);
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::write_from(&b), RwFlags::APPEND);
        assert_eq!(batch.run(engine.as_mut()).pop().unwrap().ok(), Some(100));
        let all = read_all(&path);
        assert_eq!(all.len(), 1100, "{kind:?}");
        assert_pattern(&all[..1000], 6, 0, &format!("{kind:?}"));
        assert_same(&all[1000..], &b, 1000, &format!("{kind:?}"));
    }
}
