//! A `Queue`'s readiness watch: a socket watched in the io_uring engine's ring wakes a wait that
//! also covers the disk; a request that finishes first wakes it too and leaves the watch armed;
//! waits for requests are not held up by a socket that stays quiet; dropping a queue with a
//! watch armed returns; engines without a ring say they cannot watch. Every case runs with a
//! timeout, so a regression fails instead of hanging the suite.

use crate::common;

use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use rustix::event::PollFlags;
use vecio::{EngineKind, File, OwnedBuf, Queue, RwFlags};

fn file_with_data(dir: &tempfile::TempDir) -> Arc<File> {
    let path = dir.path().join("f");
    std::fs::write(&path, common::pattern(5, 0, 8192)).unwrap();
    Arc::new(File::open(&path).unwrap())
}

fn read(q: &mut Queue, file: &Arc<File>, tag: u64) {
    q.push_read(
        file,
        0,
        vec![OwnedBuf::Vec(vec![0; 4096])],
        RwFlags::empty(),
        tag,
    )
    .unwrap();
}

fn uring_queue() -> Queue {
    Queue::new(EngineKind::Uring.build().unwrap())
}

#[test]
fn a_socket_that_becomes_readable_wakes_the_wait() {
    common::within_timeout("socket watch", || {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut q = uring_queue();
        assert!(q.watch(a.as_fd(), PollFlags::IN).unwrap());
        assert!(q.watching());
        assert_eq!(q.watch_fired(), None);
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            b.write_all(b"x").unwrap();
            b
        });
        q.submit_and_wait_any().unwrap();
        let fired = q
            .watch_fired()
            .expect("the wait returned without the watch firing");
        assert!(fired.contains(PollFlags::IN), "{fired:?}");
        assert!(!q.watching());
        drop(writer.join().unwrap());
    });
}

#[test]
fn a_request_that_finishes_first_wakes_the_wait_and_the_watch_stays() {
    common::within_timeout("request before socket", || {
        let dir = common::tempdir();
        let file = file_with_data(&dir);
        let (a, _b) = UnixStream::pair().unwrap();
        let mut q = uring_queue();
        assert!(q.watch(a.as_fd(), PollFlags::IN).unwrap());
        read(&mut q, &file, 7);
        q.submit_and_wait_any().unwrap();
        let mut done = Vec::new();
        q.reap(&mut done);
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].user_data, 7);
        assert!(matches!(done[0].result, Ok(4096)));
        assert!(q.watching(), "the quiet socket's watch was lost");
        assert_eq!(q.watch_fired(), None);
        // Arming again while armed changes nothing.
        assert!(q.watch(a.as_fd(), PollFlags::IN).unwrap());
    });
}

#[test]
fn waits_for_requests_ignore_a_quiet_watched_socket() {
    common::within_timeout("request waits with a watch", || {
        let dir = common::tempdir();
        let file = file_with_data(&dir);
        let (a, _b) = UnixStream::pair().unwrap();
        let mut q = uring_queue();
        q.watch(a.as_fd(), PollFlags::IN).unwrap();
        for tag in 0..3 {
            read(&mut q, &file, tag);
        }
        q.submit_and_wait(3).unwrap();
        let mut done = Vec::new();
        q.reap(&mut done);
        assert_eq!(done.len(), 3);
        // Nothing in flight but the watch: a wait for requests returns at once.
        q.submit_and_wait(1).unwrap();
        q.submit_and_wait_timeout(Duration::from_secs(5)).unwrap();
        assert!(q.is_empty());
    });
}

#[test]
fn a_queue_dropped_with_a_watch_armed_returns_and_unwatch_cancels() {
    common::within_timeout("drop with a watch", || {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut q = uring_queue();
        q.watch(a.as_fd(), PollFlags::IN).unwrap();
        q.submit().unwrap();
        drop(q);
        let mut q = uring_queue();
        q.watch(a.as_fd(), PollFlags::IN).unwrap();
        q.submit().unwrap();
        q.unwatch().unwrap();
        assert!(!q.watching());
        // A cancelled watch does not fire, even once the socket is readable.
        b.write_all(b"x").unwrap();
        q.submit_and_wait_timeout(Duration::from_millis(20))
            .unwrap();
        assert_eq!(q.watch_fired(), None);
    });
}

#[test]
fn engines_without_a_ring_cannot_watch() {
    let (a, _b) = UnixStream::pair().unwrap();
    for kind in [EngineKind::Serial, EngineKind::Sync, EngineKind::Pool] {
        let mut q = Queue::new(kind.build().unwrap());
        assert!(!q.watch(a.as_fd(), PollFlags::IN).unwrap(), "{kind:?}");
        assert!(!q.watching());
    }
}
