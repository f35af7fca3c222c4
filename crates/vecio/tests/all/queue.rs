//! The completion API: many requests in flight from one thread, owned buffers handed back,
//! aligned and unaligned requests, exact short reads, drop with requests in flight.

use crate::common;

use std::sync::Arc;

use vecio::{
    AlignedBuf, Completion, Direct, EngineKind, Error, File, Invalid, OwnedBuf, Queue, RwFlags,
};

const BS: usize = 4096;

fn open(dir: &tempfile::TempDir, name: &str) -> Arc<File> {
    let f = File::options()
        .read(true)
        .write(true)
        .create(true)
        .direct(Direct::On)
        .open(dir.path().join(name))
        .unwrap();
    assert!(f.is_direct());
    Arc::new(f)
}

fn aligned(data: &[u8]) -> OwnedBuf {
    let mut b = AlignedBuf::page_aligned(data.len());
    b.copy_from_slice(data);
    OwnedBuf::Aligned(b)
}

fn reap_all(q: &mut Queue, n: usize) -> Vec<Completion> {
    q.submit_and_wait(n).unwrap();
    let mut out = Vec::new();
    q.reap(&mut out);
    out.sort_by_key(|c| c.user_data);
    out
}

#[test]
fn many_in_flight_then_read_back_on_every_engine() {
    for kind in EngineKind::ALL {
        let dir = common::tempdir();
        let file = open(&dir, "q");
        let mut q = Queue::new(kind.build().unwrap());
        let n = 64u64;
        for i in 0..n {
            let data = common::pattern(7, i * BS as u64 * 2, BS * 2);
            let bufs = vec![aligned(&data[..BS]), aligned(&data[BS..])];
            q.push_write(&file, i * BS as u64 * 2, bufs, RwFlags::empty(), i)
                .map_err(|e| e.error)
                .unwrap();
        }
        assert_eq!(
            q.len(),
            n as usize,
            "{kind:?}: all pushed requests are counted"
        );
        let done = reap_all(&mut q, n as usize);
        assert_eq!(done.len(), n as usize, "{kind:?}");
        for (i, c) in done.iter().enumerate() {
            assert_eq!(c.user_data, i as u64);
            assert_eq!(
                c.result.as_ref().ok(),
                Some(&(2 * BS)),
                "{kind:?} write {i}"
            );
            assert_eq!(c.bufs.len(), 2, "buffers come back");
        }
        for i in 0..n {
            let bufs = vec![OwnedBuf::Aligned(AlignedBuf::page_aligned(BS * 2))];
            q.push_read(&file, i * BS as u64 * 2, bufs, RwFlags::empty(), i)
                .map_err(|e| e.error)
                .unwrap();
        }
        for c in reap_all(&mut q, n as usize) {
            assert_eq!(c.result.as_ref().ok(), Some(&(2 * BS)));
            let want = common::pattern(7, c.user_data * BS as u64 * 2, BS * 2);
            assert_eq!(
                c.bufs[0].as_slice(),
                &want[..],
                "{kind:?} read {}",
                c.user_data
            );
        }
        assert!(q.is_empty());
    }
}

#[test]
fn unaligned_requests_are_served_correctly() {
    for kind in EngineKind::ALL {
        let dir = common::tempdir();
        let file = open(&dir, "u");
        let mut q = Queue::new(kind.build().unwrap());
        let base = common::pattern(1, 0, 3 * BS);
        q.push_write(&file, 0, vec![aligned(&base)], RwFlags::empty(), 0)
            .map_err(|e| e.error)
            .unwrap();
        let patch = common::pattern(2, 1000, 333);
        q.push_write(
            &file,
            1000,
            vec![OwnedBuf::Vec(patch.clone())],
            RwFlags::empty(),
            1,
        )
        .map_err(|e| e.error)
        .unwrap();
        let done = reap_all(&mut q, 2);
        assert_eq!(done[1].result.as_ref().ok(), Some(&333), "{kind:?}");
        q.push_read(
            &file,
            999,
            vec![OwnedBuf::Vec(vec![0; 335])],
            RwFlags::empty(),
            2,
        )
        .map_err(|e| e.error)
        .unwrap();
        let done = reap_all(&mut q, 1);
        let got = done[0].bufs[0].as_slice();
        assert_eq!(done[0].result.as_ref().ok(), Some(&335));
        assert_eq!(got[0], base[999], "{kind:?}: byte before the patch kept");
        assert_eq!(&got[1..334], &patch[..], "{kind:?}");
        assert_eq!(got[334], base[1333], "{kind:?}: byte after the patch kept");
    }
}

#[test]
fn read_across_end_of_file_is_exact() {
    for kind in EngineKind::ALL {
        let dir = common::tempdir();
        let file = open(&dir, "eof");
        let mut q = Queue::new(kind.build().unwrap());
        q.push_write(
            &file,
            0,
            vec![aligned(&common::pattern(3, 0, 2 * BS))],
            RwFlags::empty(),
            0,
        )
        .map_err(|e| e.error)
        .unwrap();
        reap_all(&mut q, 1);
        let bufs = vec![OwnedBuf::Aligned(AlignedBuf::page_aligned(4 * BS))];
        q.push_read(&file, BS as u64, bufs, RwFlags::empty(), 1)
            .map_err(|e| e.error)
            .unwrap();
        let done = reap_all(&mut q, 1);
        assert_eq!(
            done[0].result.as_ref().ok(),
            Some(&BS),
            "{kind:?}: only the bytes that exist"
        );
    }
}

#[test]
fn bad_requests_give_their_buffers_back() {
    let dir = common::tempdir();
    let file = open(&dir, "bad");
    let ro = Arc::new(
        File::options()
            .read(true)
            .open(dir.path().join("bad"))
            .unwrap(),
    );
    let mut q = Queue::new(EngineKind::Uring.build().unwrap());
    let vecio::PushError { error: e, bufs } = q
        .push_write(
            &file,
            0,
            vec![OwnedBuf::Vec(Vec::new())],
            RwFlags::empty(),
            0,
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Invalid {
                reason: Invalid::Empty,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(bufs.len(), 1);
    let vecio::PushError { error: e, .. } = q
        .push_write(&ro, 0, vec![aligned(&[1; BS])], RwFlags::empty(), 0)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Invalid {
                reason: Invalid::NotWritable,
                ..
            }
        ),
        "{e}"
    );
    let vecio::PushError { error: e, .. } = q
        .push_read(
            &file,
            u64::MAX - 10,
            vec![aligned(&[1; BS])],
            RwFlags::empty(),
            0,
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Invalid {
                reason: Invalid::Overflow,
                ..
            }
        ),
        "{e}"
    );
    assert!(q.is_empty());
}

#[test]
fn dropping_a_queue_with_requests_in_flight_waits_for_them() {
    let dir = common::tempdir();
    let file = open(&dir, "drop");
    {
        let mut q = Queue::new(EngineKind::Uring.build().unwrap());
        for i in 0..32u64 {
            let data = common::pattern(9, i * BS as u64, BS);
            q.push_write(
                &file,
                i * BS as u64,
                vec![aligned(&data)],
                RwFlags::empty(),
                i,
            )
            .map_err(|e| e.error)
            .unwrap();
        }
        q.submit().unwrap();
    }
    let mut got = vec![0u8; 32 * BS];
    let file2 = File::options()
        .read(true)
        .direct(Direct::Off)
        .open(dir.path().join("drop"))
        .unwrap();
    assert_eq!(file2.read_at(&mut got, 0).unwrap(), 32 * BS);
    assert_eq!(got, common::pattern(9, 0, 32 * BS));
}
