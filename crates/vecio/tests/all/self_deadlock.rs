//! A thread with direct requests in flight on a `Queue` that then makes a blocking call on the
//! same file never hangs on its own range locks: the call fails with `EDEADLK` (reap first),
//! and succeeds once the queue is reaped. Each case runs on a thread with a timeout, so a
//! regression fails the test instead of hanging the suite.

use crate::common;

use std::io::IoSlice;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use vecio::{AlignedBuf, Direct, EngineKind, Error, File, OwnedBuf, Queue, RwFlags};

const BS: usize = 4096;

fn direct_file(dir: &tempfile::TempDir) -> Arc<File> {
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .direct(Direct::On)
        .open(dir.path().join("f"))
        .unwrap();
    assert!(file.is_direct());
    file.write_at(&common::pattern(3, 0, 2 * BS), 0).unwrap();
    Arc::new(file)
}

fn is_edeadlk(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.raw_os_error() == Some(libc::EDEADLK))
}

/// Pushes an aligned direct read of the first block, not yet reaped. (Not submitted either: a
/// submit may reap a read that finished at once, and with it its lock; a pushed request holds
/// its range until it is reaped either way.)
fn read_in_flight(file: &Arc<File>, kind: EngineKind) -> Queue {
    let mut q = Queue::new(kind.build().unwrap());
    let buf = OwnedBuf::Aligned(AlignedBuf::page_aligned(BS));
    q.push_read(file, 0, vec![buf], RwFlags::empty(), 7)
        .map_err(|e| e.error)
        .unwrap();
    q
}

fn reap_one(q: &mut Queue) {
    q.submit_and_wait(1).unwrap();
    let mut done = Vec::new();
    q.reap(&mut done);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].result.as_ref().ok(), Some(&BS));
    common::assert_pattern(done[0].bufs[0].as_slice(), 3, 0, "queued read");
}

#[test]
fn unaligned_write_over_own_in_flight_read_fails_instead_of_hanging() {
    for kind in EngineKind::ALL {
        common::within_timeout("write_at(b\"x\", 1)", move || {
            let dir = common::tempdir();
            let file = direct_file(&dir);
            let mut q = read_in_flight(&file, kind);
            let e = file.write_at(b"x", 1).unwrap_err();
            assert!(is_edeadlk(&e), "{kind:?}: expected EDEADLK, got {e}");
            reap_one(&mut q);
            // Nothing in flight any more: the same write now goes through.
            assert_eq!(file.write_at(b"x", 1).unwrap(), 1);
            let mut b = [0u8; 3];
            file.read_at(&mut b, 0).unwrap();
            assert_eq!(b[1], b'x', "{kind:?}");
            assert_eq!(b[0], common::pattern_byte(3, 0), "{kind:?}: edge kept");
        });
    }
}

#[test]
fn direct_append_waits_only_on_the_last_block() {
    common::within_timeout("RWF_APPEND", || {
        let dir = common::tempdir();
        let file = direct_file(&dir);
        let append = |data: &[u8]| file.writev_at(&[IoSlice::new(data)], 0, RwFlags::APPEND);
        // A read in flight inside the file does not stop an append.
        let mut q = read_in_flight(&file, EngineKind::Uring);
        assert_eq!(append(b"tail").unwrap(), 4);
        reap_one(&mut q);
        assert_eq!(file.size().unwrap(), 2 * BS as u64 + 4);
        // A read in flight of the block holding the end does: EDEADLK, not a hang.
        let mut q = Queue::new(EngineKind::Uring.build().unwrap());
        let buf = OwnedBuf::Aligned(AlignedBuf::page_aligned(BS));
        q.push_read(&file, 2 * BS as u64, vec![buf], RwFlags::empty(), 1)
            .map_err(|e| e.error)
            .unwrap();
        let e = append(b"more").unwrap_err();
        assert!(is_edeadlk(&e), "expected EDEADLK, got {e}");
        q.submit_and_wait(1).unwrap();
        let mut done = Vec::new();
        q.reap(&mut done);
        assert_eq!(done[0].result.as_ref().ok(), Some(&4), "read up to the end");
        assert_eq!(&done[0].bufs[0].as_slice()[..4], b"tail");
        assert_eq!(append(b"more").unwrap(), 4);
        assert_eq!(file.size().unwrap(), 2 * BS as u64 + 8);
    });
}

#[test]
fn another_queue_on_the_same_thread_gets_an_error_completion() {
    common::within_timeout("second queue", || {
        let dir = common::tempdir();
        let file = direct_file(&dir);
        let mut q = read_in_flight(&file, EngineKind::Uring);
        let mut q2 = Queue::new(EngineKind::Sync.build().unwrap());
        q2.push_write(
            &file,
            5,
            vec![OwnedBuf::Vec(b"abc".to_vec())],
            RwFlags::empty(),
            1,
        )
        .map_err(|e| e.error)
        .unwrap();
        q2.submit_and_wait(1).unwrap();
        let mut done = Vec::new();
        q2.reap(&mut done);
        let e = done[0].result.as_ref().unwrap_err();
        assert!(is_edeadlk(e), "expected EDEADLK, got {e}");
        reap_one(&mut q);
    });
}

#[test]
fn a_blocking_call_that_does_not_overlap_goes_through() {
    common::within_timeout("disjoint write", || {
        let dir = common::tempdir();
        let file = direct_file(&dir);
        let mut q = read_in_flight(&file, EngineKind::Uring);
        // The second block's read-modify-write does not touch the in-flight first block.
        assert_eq!(file.write_at(b"y", BS as u64 + 1).unwrap(), 1);
        reap_one(&mut q);
    });
}

#[test]
fn two_threads_waiting_on_each_others_queued_requests_do_not_both_wait() {
    common::within_timeout("two threads", || {
        let dir = common::tempdir();
        let file = direct_file(&dir);
        let (a_ready, b_waits) = (mpsc::channel::<()>(), mpsc::channel::<()>());
        let (a_tx, a_rx) = a_ready;
        let (b_tx, b_rx) = b_waits;
        let fb = file.clone();
        // B: a read of block 1 in flight, then a write into block 0 (held by A's read).
        let b = std::thread::spawn(move || {
            let mut q = Queue::new(EngineKind::Uring.build().unwrap());
            let buf = OwnedBuf::Aligned(AlignedBuf::page_aligned(BS));
            q.push_read(&fb, BS as u64, vec![buf], RwFlags::empty(), 1)
                .map_err(|e| e.error)
                .unwrap();
            a_rx.recv().unwrap();
            b_tx.send(()).unwrap();
            let r = fb.write_at(b"b", 10);
            q.submit_and_wait(1).unwrap();
            r
        });
        let mut q = read_in_flight(&file, EngineKind::Uring);
        a_tx.send(()).unwrap();
        b_rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(200)); // let B start waiting on A's read
                                                        // A: a write into block 1, held by B's read while B waits on A: one of them must give.
        let ra = file.write_at(b"a", BS as u64 + 10);
        reap_one(&mut q);
        let rb = b.join().unwrap();
        let refused = [&ra, &rb]
            .iter()
            .filter(|r| matches!(r, Err(e) if is_edeadlk(e)))
            .count();
        assert!(refused >= 1, "a: {ra:?}, b: {rb:?}");
        assert!(ra.is_ok() || rb.is_ok(), "a: {ra:?}, b: {rb:?}");
    });
}
