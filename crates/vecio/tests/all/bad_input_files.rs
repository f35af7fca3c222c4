//! Bad files give a typed error, never a panic or a hang, naming the file: objects that are
//! not regular files (directories, character devices, FIFOs), file systems that refuse
//! O_DIRECT, and kernel failures (a write past ext4's largest file size), which also name the
//! request and the offset.

use crate::common;

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use vecio::{AlignedBuf, Batch, Direct, EngineKind, Error, File, IoIter, RwFlags};

/// Kernel failures are `Io` errors naming request, offset and file: a write past ext4's
/// largest file size is EFBIG, reported for its own request only.
#[test]
fn kernel_errors_name_request_offset_and_file() {
    let far = 1u64 << 45; // 32 TiB, past ext4's 16 TiB limit for 4 KiB blocks
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();
        let a = AlignedBuf::new(4096, 4096);
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::write_from(&a), RwFlags::empty());
        batch.push(&file, 4096, IoIter::write_from(&a), RwFlags::empty());
        batch.push(&file, far, IoIter::write_from(&a), RwFlags::empty());
        batch.push(
            &file,
            far + 1,
            IoIter::write_from(&a[..100]),
            RwFlags::empty(),
        );
        let res = batch.run(engine.as_mut());
        assert_eq!(res[0].as_ref().ok(), Some(&4096));
        assert_eq!(res[1].as_ref().ok(), Some(&4096));
        for (i, off) in [(2usize, far), (3, far + 1)] {
            match &res[i] {
                Err(
                    e @ Error::Io {
                        path: p,
                        request,
                        offset,
                        source,
                    },
                ) => {
                    assert_eq!(source.raw_os_error(), Some(libc::EFBIG), "{kind:?}: {e}");
                    assert_eq!(*request, i, "{kind:?}: request index");
                    assert_eq!(*offset, off, "{kind:?}: offset");
                    assert_eq!(&**p, path.as_path());
                    assert_eq!(e.raw_os_error(), Some(libc::EFBIG));
                    let msg = e.to_string();
                    assert!(
                        msg.contains(&format!("request {i}")) && msg.contains(&off.to_string()),
                        "{msg}"
                    );
                }
                other => panic!("{kind:?}: request {i}: expected Io(EFBIG), got {other:?}"),
            }
        }
        assert_eq!(file.size().unwrap(), 8192, "{kind:?}: no stray growth");
    }
}

#[track_caller]
fn assert_not_regular(r: vecio::Result<File>, path: &Path, what: &str) {
    match r {
        Err(Error::NotRegular { path: p }) => assert_eq!(&*p, path, "{what}"),
        Err(other) => panic!("{what}: expected NotRegular, got {other:?} ({other})"),
        Ok(f) => panic!("{what}: expected NotRegular, opened {f:?}"),
    }
}

/// A directory and a character device are not served: `NotRegular`.
#[test]
fn directory_and_char_device_are_not_regular() {
    let dir = tempdir();
    for mode in [Direct::Off, Direct::Auto] {
        let what = format!("directory, {mode:?}");
        assert_not_regular(
            File::options().read(true).direct(mode).open(dir.path()),
            dir.path(),
            &what,
        );
    }
    let null = Path::new("/dev/null");
    assert!(std::fs::metadata(null)
        .unwrap()
        .file_type()
        .is_char_device());
    for mode in [Direct::Off, Direct::Auto] {
        let what = format!("/dev/null, {mode:?}");
        assert_not_regular(
            File::options().read(true).direct(mode).open(null),
            null,
            &what,
        );
        let rw = File::options()
            .read(true)
            .write(true)
            .direct(mode)
            .open(null);
        assert_not_regular(rw, null, &format!("{what}, read-write"));
    }
    // Opening a directory for writing fails in open(2) itself (EISDIR): an Open error.
    match File::options()
        .read(true)
        .write(true)
        .direct(Direct::Off)
        .open(dir.path())
    {
        Err(Error::Open { path, source }) => {
            assert_eq!(&*path, dir.path());
            assert_eq!(source.raw_os_error(), Some(libc::EISDIR));
        }
        other => panic!("directory for writing: {other:?}"),
    }
    // A missing file: Open with ENOENT and the path.
    let missing = dir.path().join("missing");
    match File::open(&missing) {
        Err(Error::Open { path, source }) => {
            assert_eq!(&*path, missing.as_path());
            assert_eq!(source.raw_os_error(), Some(libc::ENOENT));
        }
        other => panic!("missing file: {other:?}"),
    }
}

/// With `Direct::On` too: the kernel refuses O_DIRECT on a directory or a character device
/// (EINVAL), but the thing wrong with the request is the kind of file, and "direct I/O refused"
/// would send the user looking at the file system instead.
#[test]
fn direct_on_for_directory_and_char_device_is_not_regular() {
    let dir = tempdir();
    let r = File::options()
        .read(true)
        .direct(Direct::On)
        .open(dir.path());
    assert_not_regular(r, dir.path(), "directory, Direct::On");
    let null = Path::new("/dev/null");
    let r = File::options()
        .read(true)
        .write(true)
        .direct(Direct::On)
        .open(null);
    assert_not_regular(r, null, "/dev/null, Direct::On");
}

/// Opening a FIFO must not hang waiting for a writer: it is not a regular file, so the answer
/// is `NotRegular`, at once.
#[test]
fn fifo_is_not_regular_and_open_does_not_block() {
    let dir = tempdir();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: c is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let path = fifo.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = File::open(&path).map(|f| format!("{f:?}"));
        let _ = tx.send(r);
    });
    let start = Instant::now();
    let mut unblocked = 0;
    let result = loop {
        if let Ok(r) = rx.recv_timeout(Duration::from_millis(50)) {
            break r;
        }
        if start.elapsed() > Duration::from_secs(2) {
            // File::open is blocked in open(2) waiting for a writer: be the writer, so the
            // thread can finish (it may open more than once).
            // SAFETY: c is a valid path; the descriptor is closed at once.
            let fd = unsafe { libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK) };
            if fd >= 0 {
                unblocked += 1;
                // SAFETY: fd was just opened by this thread.
                unsafe { libc::close(fd) };
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "File::open on a FIFO never returned"
        );
    };
    assert_eq!(
        unblocked, 0,
        "File::open on a FIFO blocked in open(2) until a writer appeared ({unblocked} times), \
         then returned {result:?}"
    );
    match result {
        Err(Error::NotRegular { path }) => assert_eq!(&*path, fifo.as_path()),
        other => panic!("FIFO: expected NotRegular, got {other:?}"),
    }
}

/// `Direct::On` on a file system that refuses O_DIRECT (procfs and sysfs here) is
/// `DirectRefused` naming the file; `Direct::Auto` falls back to buffered I/O and works.
#[test]
fn direct_on_where_the_file_system_refuses_it() {
    let candidates = [
        "/proc/version",
        "/sys/kernel/mm/transparent_hugepage/enabled",
    ];
    let mut tried = 0;
    for p in candidates {
        let path = Path::new(p);
        if !path.exists() {
            println!("skip {p}: not present");
            continue;
        }
        let probe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags_direct()
            .open(path);
        match probe {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
            Ok(_) => {
                println!("skip {p}: the kernel accepts O_DIRECT there");
                continue;
            }
            Err(e) => {
                println!("skip {p}: {e}");
                continue;
            }
        }
        tried += 1;
        match File::options().read(true).direct(Direct::On).open(path) {
            Err(Error::DirectRefused { path: got, source }) => {
                assert_eq!(&*got, path);
                assert_eq!(source.raw_os_error(), Some(libc::EINVAL));
            }
            other => panic!("{p}: expected DirectRefused, got {other:?}"),
        }
        let f = File::options()
            .read(true)
            .direct(Direct::Auto)
            .open(path)
            .unwrap();
        assert!(!f.is_direct(), "{p}: Auto must fall back to buffered");
        let mut buf = vec![0u8; 4096];
        let n = f.read_at(&mut buf, 0).unwrap();
        assert!(n > 0, "{p}: buffered read returned nothing");
        assert_eq!(&buf[..n], &std::fs::read(path).unwrap()[..n], "{p}");
    }
    if tried == 0 {
        println!("skipped: no file system on this machine refuses O_DIRECT");
    }
}

trait DirectFlag {
    fn custom_flags_direct(&mut self) -> &mut Self;
}

impl DirectFlag for std::fs::OpenOptions {
    fn custom_flags_direct(&mut self) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::custom_flags(self, libc::O_DIRECT)
    }
}
