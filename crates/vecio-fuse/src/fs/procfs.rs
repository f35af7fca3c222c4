//! `/proc`, opened once, before anything could hide the path (a forked server, a sandbox that
//! pivots into the source): an inode is reopened through `self/fd/N` beneath it, which names
//! the inode itself, and a caller's groups are read from `PID/status` beneath it. `self` is
//! resolved at each call, so the descriptor serves a process forked after it was opened.
//!
//! Calls that take only a path (extended attributes) use `self/fd/N` relative to the serving
//! thread's working directory, which each serving thread sets to `/proc` in its own filesystem
//! context ([`enter`]); a thread that could not gets the absolute path.

use std::cell::Cell;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::OnceLock;

use rustix::fs::{Mode, OFlags};

static PROC: OnceLock<OwnedFd> = OnceLock::new();

thread_local! {
    /// This thread's working directory is `/proc` (see [`enter`]).
    static IN_PROC: Cell<bool> = const { Cell::new(false) };
}

/// The `/proc` directory (opened on first use).
pub fn dir() -> std::io::Result<BorrowedFd<'static>> {
    if let Some(fd) = PROC.get() {
        return Ok(fd.as_fd());
    }
    let fd = rustix::fs::open(
        "/proc",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok(PROC.get_or_init(|| fd).as_fd())
}

/// The name of descriptor `fd` beneath `/proc`.
pub fn fd_name(fd: RawFd) -> String {
    format!("self/fd/{fd}")
}

/// Makes `/proc` the calling thread's working directory, when the thread has a filesystem
/// context of its own (`unshare(CLONE_FS)`: `own_fs` true), so path-only calls can name
/// `self/fd/N` whatever the process's root is.
pub fn enter(own_fs: bool) {
    if !own_fs {
        return;
    }
    if let Ok(proc) = dir() {
        if rustix::process::fchdir(proc).is_ok() {
            IN_PROC.with(|c| c.set(true));
        }
    }
}

/// The path of descriptor `fd` for a call that takes only a path.
pub fn fd_path(fd: RawFd) -> String {
    if IN_PROC.with(Cell::get) {
        fd_name(fd)
    } else {
        format!("/proc/self/fd/{fd}")
    }
}
