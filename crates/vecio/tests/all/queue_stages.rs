//! Unaligned direct requests are asynchronous stages of a `Queue`: `push` never blocks and never
//! drains what is in flight; the bounce read and the read-modify-write go through the engine;
//! a request whose range is held waits parked, in order of arrival; and a blocking call that
//! needs a range this thread's queued read-modify-write holds fails with `EDEADLK` instead of
//! hanging. Every case runs with a timeout, so a regression fails instead of hanging the suite.

use crate::common;

use std::sync::Arc;

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
    assert!(file.is_direct(), "the test directory refuses O_DIRECT");
    file.write_all_at(&common::pattern(3, 0, 4 * BS), 0)
        .unwrap();
    Arc::new(file)
}

fn aligned_read(q: &mut Queue, file: &Arc<File>, offset: u64, tag: u64) {
    let buf = OwnedBuf::Aligned(AlignedBuf::page_aligned(BS));
    q.push_read(file, offset, vec![buf], RwFlags::empty(), tag)
        .unwrap();
}

fn reap_all(q: &mut Queue, n: usize) -> Vec<vecio::Completion> {
    q.submit_and_wait(n).unwrap();
    let mut done = Vec::new();
    q.reap(&mut done);
    assert_eq!(done.len(), n);
    done.sort_by_key(|c| c.user_data);
    done
}

fn is_edeadlk(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.raw_os_error() == Some(libc::EDEADLK))
}

#[test]
fn an_unaligned_write_parks_behind_an_aligned_read_without_draining() {
    for kind in [EngineKind::Uring, EngineKind::Pool, EngineKind::Sync] {
        common::within_timeout("unaligned write behind a read", move || {
            let dir = common::tempdir();
            let file = direct_file(&dir);
            let mut q = Queue::new(kind.build().unwrap());
            aligned_read(&mut q, &file, 0, 0);
            q.push_write(
                &file,
                100,
                vec![OwnedBuf::Vec(vec![0xee; 10])],
                RwFlags::empty(),
                1,
            )
            .unwrap();
            // Nothing drained: neither request is finished, the write waits for the read's
            // block.
            assert_eq!(q.len(), 2, "{kind:?}");
            assert_eq!(q.parked(), 1, "{kind:?}: the write should wait, parked");
            let mut early = Vec::new();
            q.reap(&mut early);
            assert!(
                early.iter().all(|c| c.user_data == 0),
                "{kind:?}: the write ran at push"
            );
            let mut done = early;
            q.submit_and_wait(2 - done.len()).unwrap();
            q.reap(&mut done);
            done.sort_by_key(|c| c.user_data);
            assert_eq!(done.len(), 2);
            // The read ran first: it sees the old bytes.
            common::assert_pattern(done[0].bufs[0].as_slice(), 3, 0, "read before the write");
            assert_eq!(done[1].result.as_ref().ok(), Some(&10), "{kind:?}");
            let mut back = vec![0u8; BS];
            file.read_exact_at(&mut back, 0).unwrap();
            assert!(back[100..110].iter().all(|&b| b == 0xee));
            common::assert_pattern(&back[..100], 3, 0, "head kept");
            common::assert_pattern(&back[110..], 3, 110, "tail kept");
        });
    }
}

#[test]
fn unaligned_requests_go_through_the_engine() {
    common::within_timeout("engine ops", || {
        let dir = common::tempdir();
        let file = direct_file(&dir);
        let mut q = Queue::new(EngineKind::Uring.build().unwrap());
        let before = q.engine_mut().counters().ops;
        // A read across a block boundary: one bounce op over both blocks.
        q.push_read(
            &file,
            4000,
            vec![OwnedBuf::Vec(vec![0; 200])],
            RwFlags::empty(),
            0,
        )
        .unwrap();
        let done = reap_all(&mut q, 1);
        assert_eq!(done[0].result.as_ref().ok(), Some(&200));
        common::assert_pattern(done[0].bufs[0].as_slice(), 3, 4000, "bounce read");
        assert_eq!(q.engine_mut().counters().ops - before, 1, "one bounce op");
        // A write with two partial edges: two edge reads, then one window write.
        let before = q.engine_mut().counters().ops;
        q.push_write(
            &file,
            4000,
            vec![OwnedBuf::Vec(vec![7; 200])],
            RwFlags::empty(),
            1,
        )
        .unwrap();
        let done = reap_all(&mut q, 1);
        assert_eq!(done[0].result.as_ref().ok(), Some(&200));
        assert_eq!(
            q.engine_mut().counters().ops - before,
            3,
            "edges, then the window"
        );
        let mut back = vec![0u8; 2 * BS];
        file.read_exact_at(&mut back, 0).unwrap();
        assert!(back[4000..4200].iter().all(|&b| b == 7));
        common::assert_pattern(&back[..4000], 3, 0, "before the write");
        common::assert_pattern(&back[4200..], 3, 4200, "after the write");
    });
}

#[test]
fn a_later_request_waits_behind_a_parked_one_in_order() {
    common::within_timeout("order of parked requests", || {
        let dir = common::tempdir();
        let file = direct_file(&dir);
        let mut q = Queue::new(EngineKind::Uring.build().unwrap());
        aligned_read(&mut q, &file, 0, 0);
        q.push_write(
            &file,
            8,
            vec![OwnedBuf::Vec(vec![0xab; 8])],
            RwFlags::empty(),
            1,
        )
        .unwrap();
        // Its range is free (only shared holders), but the write parked before it comes first.
        aligned_read(&mut q, &file, 0, 2);
        assert_eq!(q.parked(), 2);
        let done = reap_all(&mut q, 3);
        common::assert_pattern(done[0].bufs[0].as_slice(), 3, 0, "first read");
        let second = done[2].bufs[0].as_slice();
        assert_eq!(
            &second[8..16],
            &[0xab; 8],
            "the second read ran before the write"
        );
        common::assert_pattern(&second[16..], 3, 16, "second read");
    });
}

#[test]
fn a_blocking_read_under_a_queued_read_modify_write_fails_instead_of_hanging() {
    common::within_timeout("blocking read under a queued write", || {
        let dir = common::tempdir();
        let file = direct_file(&dir);
        let mut q = Queue::new(EngineKind::Uring.build().unwrap());
        q.push_write(
            &file,
            10,
            vec![OwnedBuf::Vec(vec![1; 10])],
            RwFlags::empty(),
            0,
        )
        .unwrap();
        assert_eq!(q.parked(), 0, "the write holds its window");
        let mut buf = AlignedBuf::page_aligned(BS);
        let e = file.read_at(&mut buf, 0).unwrap_err();
        assert!(is_edeadlk(&e), "expected EDEADLK, got {e}");
        let done = reap_all(&mut q, 1);
        assert_eq!(done[0].result.as_ref().ok(), Some(&10));
        assert_eq!(file.read_at(&mut buf, 0).unwrap(), BS);
        assert_eq!(&buf[10..20], &[1; 10]);
    });
}

#[test]
fn fallocate_waits_for_queued_writes_of_its_blocks_without_draining() {
    common::within_timeout("fallocate behind a write", || {
        let dir = common::tempdir();
        let file = direct_file(&dir);
        let mut q = Queue::new(EngineKind::Uring.build().unwrap());
        q.push_write(
            &file,
            10,
            vec![OwnedBuf::Vec(vec![1; 10])],
            RwFlags::empty(),
            0,
        )
        .unwrap();
        let punch = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
        q.push_fallocate(&file, punch, 0, BS as u64, 1).unwrap();
        assert_eq!(q.parked(), 1, "the punch waits for the write's window");
        let done = reap_all(&mut q, 2);
        assert!(done.iter().all(|c| c.result.is_ok()));
        let mut back = vec![9u8; BS];
        file.read_exact_at(&mut back, 0).unwrap();
        assert!(
            back.iter().all(|&b| b == 0),
            "the punch ran after the write"
        );
    });
}

#[test]
fn a_short_unaligned_read_at_end_of_file_stops_there() {
    common::within_timeout("unaligned read past the end", || {
        let dir = common::tempdir();
        let file = direct_file(&dir);
        let size = file.size().unwrap();
        let mut q = Queue::new(EngineKind::Uring.build().unwrap());
        q.push_read(
            &file,
            size - 100,
            vec![OwnedBuf::Vec(vec![0; 5000])],
            RwFlags::empty(),
            0,
        )
        .unwrap();
        q.push_read(
            &file,
            size + 7,
            vec![OwnedBuf::Vec(vec![0; 10])],
            RwFlags::empty(),
            1,
        )
        .unwrap();
        let done = reap_all(&mut q, 2);
        assert_eq!(done[0].result.as_ref().ok(), Some(&100));
        common::assert_pattern(&done[0].bufs[0].as_slice()[..100], 3, size - 100, "tail");
        assert_eq!(done[1].result.as_ref().ok(), Some(&0));
    });
}

#[test]
fn an_eventfd_waiter_sees_every_stage_through() {
    common::within_timeout("stages seen through an eventfd", || {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let dir = common::tempdir();
        let file = direct_file(&dir);
        let mut q = Queue::new(EngineKind::Uring.build().unwrap());
        // SAFETY: eventfd returns a new descriptor this test owns (checked below).
        let raw = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        assert!(raw >= 0);
        // SAFETY: raw is a fresh, open descriptor owned by nobody else.
        let efd = Arc::new(unsafe { OwnedFd::from_raw_fd(raw) });
        assert!(q.notify_on(efd.clone()).unwrap());
        // Edge read, then the window write: the second op is pushed while reaping the first.
        q.push_write(
            &file,
            100,
            vec![OwnedBuf::Vec(vec![5; 10])],
            RwFlags::empty(),
            0,
        )
        .unwrap();
        q.submit().unwrap();
        let mut done = Vec::new();
        q.reap(&mut done);
        while done.is_empty() {
            let mut pfd = libc::pollfd {
                fd: efd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd for the call.
            let n = unsafe { libc::poll(&mut pfd, 1, 5000) };
            assert_eq!(
                n, 1,
                "no completion was signalled: an op was left unsubmitted"
            );
            let mut count = [0u8; 8];
            // SAFETY: reads 8 bytes into `count`.
            unsafe { libc::read(efd.as_raw_fd(), count.as_mut_ptr().cast(), 8) };
            q.submit().unwrap();
            q.reap(&mut done);
        }
        assert_eq!(done[0].result.as_ref().ok(), Some(&10));
    });
}
