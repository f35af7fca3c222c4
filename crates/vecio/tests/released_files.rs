//! A dropped `File` is closed everywhere: an io_uring ring that served it (and holds it in a
//! fixed-file slot) lets go at once, with other requests in flight on the ring, from another
//! thread, on a single-issuer ring at its next wait; and a churn of files leaves no file, slot
//! or descriptor behind.
//!
//! "Closed everywhere" is seen through inotify: the kernel reports `IN_CLOSE_*` when the last
//! reference to an open file goes, which a ring's slot is. The descriptor of the `File` itself
//! closes first, so the event comes only when no ring holds the file any more.

mod common;

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use vecio::engine::{Engine, Op, UringEngine, UringOptions};
use vecio::{AlignedBuf, Batch, Dir, Direct, File, IoIter, OwnedBuf, Queue, RwFlags};

/// An inotify watch for the close of a file's last open reference.
struct CloseWatch {
    fd: OwnedFd,
}

impl CloseWatch {
    fn on(path: &Path) -> CloseWatch {
        // SAFETY: inotify_init1 takes flags only and returns a new descriptor or -1.
        let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(
            raw >= 0,
            "inotify_init1: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: raw is a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let c = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: c is a valid NUL-terminated path for the call's duration.
        let wd = unsafe {
            libc::inotify_add_watch(
                fd.as_raw_fd(),
                c.as_ptr(),
                libc::IN_CLOSE_WRITE | libc::IN_CLOSE_NOWRITE,
            )
        };
        assert!(
            wd >= 0,
            "inotify_add_watch: {}",
            std::io::Error::last_os_error()
        );
        CloseWatch { fd }
    }

    /// Close events seen since the last call.
    fn closes(&self) -> usize {
        let mut buf = [0u8; 4096];
        let mut n = 0;
        loop {
            // SAFETY: buf is valid for writes of its length.
            let r = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if r <= 0 {
                return n;
            }
            // Events without a name are 16 bytes each (struct inotify_event).
            n += r as usize / std::mem::size_of::<libc::inotify_event>();
        }
    }

    /// Waits up to a second for a close.
    fn closed_within_a_second(&self) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(1) {
            if self.closes() > 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }
}

/// The tests of this file one at a time: the churn counts the process's descriptors.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn uring(single_thread: bool) -> UringEngine {
    UringEngine::new(UringOptions {
        single_thread,
        ..UringOptions::default()
    })
    .expect("an io_uring ring")
}

fn open_rw(path: &Path) -> File {
    File::options()
        .read(true)
        .write(true)
        .create(true)
        .direct(Direct::Off)
        .open(path)
        .unwrap()
}

/// Writes and reads `file` through `engine` with a `Batch`, so the ring registers it.
fn serve(file: &File, engine: &mut UringEngine) {
    let mut batch = Batch::new();
    batch.push(
        file,
        0,
        IoIter::write_from(b"held by the ring"),
        RwFlags::empty(),
    );
    assert_eq!(batch.run(&mut *engine).pop().unwrap().unwrap(), 16);
    let mut back = [0u8; 16];
    let mut batch = Batch::new();
    batch.push(file, 0, IoIter::read_into(&mut back), RwFlags::empty());
    assert_eq!(batch.run(&mut *engine).pop().unwrap().unwrap(), 16);
}

#[test]
fn a_dropped_file_leaves_the_ring_that_served_it() {
    let _one = serial();
    let dir = common::tempdir();
    let path = dir.path().join("f");
    let file = open_rw(&path);
    let mut engine = uring(false);
    serve(&file, &mut engine);
    assert_eq!(engine.counters().registered_files, 1);
    let watch = CloseWatch::on(&path);
    drop(file);
    assert!(
        watch.closed_within_a_second(),
        "the ring still holds the dropped file"
    );
    assert_eq!(engine.counters().registered_files, 0);
    // The ring serves on, and takes the next file into the freed slot.
    let other = open_rw(&dir.path().join("g"));
    serve(&other, &mut engine);
    assert_eq!(engine.counters().registered_files, 1);
}

#[test]
fn a_file_dropped_while_the_ring_has_requests_in_flight_is_released_at_once() {
    let _one = serial();
    let dir = common::tempdir();
    let path = dir.path().join("f");
    let file = open_rw(&path);
    let mut engine = uring(false);
    serve(&file, &mut engine);

    // A read from an empty pipe stays in flight until the pipe is written.
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `ends`.
    assert_eq!(
        unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) },
        0
    );
    // SAFETY: both descriptors are fresh and owned by nobody else.
    let (rx, tx) = unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    let mut byte = [0u8; 1];
    let iov = [libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    }];
    // Offset -1: the pipe's own position.
    let op = Op::rw(
        rx.as_raw_fd(),
        Dir::Dest,
        u64::MAX,
        &iov,
        RwFlags::empty(),
        7,
    );
    // SAFETY: the pipe, the iovec array and the byte outlive the op, which is reaped below
    // before they drop.
    unsafe { engine.push(op).unwrap() };
    engine.submit_and_wait(0).unwrap();
    assert_eq!(engine.in_flight(), 1);

    let watch = CloseWatch::on(&path);
    drop(file);
    assert!(
        watch.closed_within_a_second(),
        "a request in flight kept the dropped file in the ring"
    );

    // SAFETY: writes one byte from a valid buffer to the pipe.
    assert_eq!(
        unsafe { libc::write(tx.as_raw_fd(), b"x".as_ptr().cast(), 1) },
        1
    );
    engine.submit_and_wait(1).unwrap();
    let mut done = Vec::new();
    engine.reap(&mut done);
    assert_eq!(done, vec![vecio::engine::Cqe { tag: 7, result: 1 }]);
    assert_eq!(byte, *b"x");
}

#[test]
fn a_file_dropped_on_another_thread_is_released() {
    let _one = serial();
    let dir = common::tempdir();
    let path = dir.path().join("f");
    let file = open_rw(&path);
    let mut engine = uring(false);
    serve(&file, &mut engine);
    let watch = CloseWatch::on(&path);
    std::thread::spawn(move || drop(file)).join().unwrap();
    assert!(watch.closed_within_a_second());
    assert_eq!(engine.counters().registered_files, 0);
}

#[test]
fn a_single_issuer_ring_releases_a_file_dropped_elsewhere_at_its_next_wait() {
    let _one = serial();
    let dir = common::tempdir();
    let path = dir.path().join("f");
    let file = open_rw(&path);
    let mut engine = uring(true);
    serve(&file, &mut engine);
    let watch = CloseWatch::on(&path);
    // The ring refuses registrations from other threads: the slot waits for its own.
    std::thread::spawn(move || drop(file)).join().unwrap();
    assert_eq!(engine.counters().registered_files, 0);
    engine.submit_and_wait(0).unwrap();
    assert!(watch.closed_within_a_second());
}

#[test]
fn a_queue_lets_go_of_a_file_when_its_last_request_completes() {
    let _one = serial();
    let dir = common::tempdir();
    let path = dir.path().join("f");
    let file = Arc::new(open_rw(&path));
    let mut queue = Queue::new(Box::new(uring(false)));
    let mut buf = AlignedBuf::page_aligned(4096);
    buf.fill(3);
    queue
        .push_write(&file, 0, vec![OwnedBuf::Aligned(buf)], RwFlags::empty(), 1)
        .unwrap();
    let watch = CloseWatch::on(&path);
    drop(file); // the queue holds the file until the write completes
    queue.submit_and_wait(1).unwrap();
    let mut done = Vec::new();
    queue.reap(&mut done);
    assert_eq!(done.len(), 1);
    drop(done);
    assert!(watch.closed_within_a_second());
    assert_eq!(queue.engine_mut().counters().registered_files, 0);
}

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// A thousand files created, written through the ring, closed and removed: no `File`, slot
/// or descriptor is left, and the last file's close is seen at once. Run on one thread so the
/// process-wide counts are this test's alone.
#[test]
fn a_churn_of_files_leaves_nothing_behind() {
    let _one = serial();
    let dir = common::tempdir();
    let mut engine = uring(false);
    let mut queue = Queue::new(Box::new(uring(false)));
    // Warm up: the rings' own descriptors exist before the baseline.
    let fds = open_descriptors();
    let data = vec![0x5a_u8; 64 * 1024];
    for i in 0..1000 {
        let path = dir.path().join(format!("f{i}"));
        let file = Arc::new(open_rw(&path));
        if i % 2 == 0 {
            let mut batch = Batch::new();
            batch.push(&file, 0, IoIter::write_from(&data), RwFlags::empty());
            assert_eq!(batch.run(&mut engine).pop().unwrap().unwrap(), data.len());
        } else {
            let mut buf = AlignedBuf::page_aligned(data.len());
            buf.copy_from_slice(&data);
            queue
                .push_write(&file, 0, vec![OwnedBuf::Aligned(buf)], RwFlags::empty(), i)
                .unwrap();
            queue.submit_and_wait(1).unwrap();
            let mut done = Vec::new();
            queue.reap(&mut done);
            assert_eq!(done.len(), 1);
        }
        let watch = CloseWatch::on(&path);
        drop(file);
        std::fs::remove_file(&path).unwrap();
        if i % 500 == 499 {
            assert!(watch.closed_within_a_second(), "file {i} is still held");
        }
    }
    assert_eq!(engine.counters().registered_files, 0);
    assert_eq!(queue.engine_mut().counters().registered_files, 0);
    assert_eq!(open_descriptors(), fds);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
