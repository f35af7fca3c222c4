//! File locks served by the backing file system (`FUSE_POSIX_LOCKS`, `FUSE_FLOCK_LOCKS`), so a
//! lock taken through the mount excludes a process that locks the same file on the host.
//!
//! - POSIX record locks (`fcntl(F_SETLK)`, and OFD locks, which the kernel sends the same way)
//!   belong to an owner the kernel names (`lock_owner`). Each (inode, owner) gets its own open
//!   file description on the backing file, locked with `F_OFD_SETLK`: owners exclude each other
//!   in the backing file system, and one owner's locks merge and split as POSIX says. `FLUSH`
//!   (a `close` by that owner) drops the description, and with it the owner's locks.
//! - An OFD lock's owner is its open file, which the kernel releases without naming any owner
//!   (`RELEASE` carries one only for `flock`). So each owner remembers the handles (`fh`) its
//!   locks came through, and `RELEASE` of the last of them drops it: an OFD owner uses exactly
//!   one handle, while a process's POSIX owner keeps its locks as long as another handle it
//!   locked through is open (a `close` of any of them still drops them, through `FLUSH`).
//! - `flock(2)` locks belong to the open file: they are taken with `flock` on the handle's own
//!   backing descriptor and go with it at `RELEASE`.
//! - A lock that must wait (`SETLKW`) is not waited for on the worker thread, which other
//!   requests (the unlock among them) need: a small waiter thread retries it with a growing
//!   pause (1 ms to 50 ms) and sends the reply itself; `INTERRUPT` (a signal to the waiting
//!   process) ends the wait with `EINTR`. Only transports that can reply later offer this;
//!   FUSE over io_uring leaves locks to the kernel (see `crate::mount::session`).
//!
//! The state all this keeps (owners, waiters) is `crate::fs::locks::Locks`, stored in `Fs`.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{Answer, LateReply};
use crate::abi::{FileLock, FlushIn, LkIn, LkOut, LK_FLOCK};
use crate::error::{Errno, OpResult};
use crate::fs::Fs;

/// `OFFSET_MAX` as the kernel sends it for "to the end of the file".
const OFFSET_MAX: u64 = i64::MAX as u64;

/// A lock request in `struct flock` terms.
fn to_flock(lk: &FileLock) -> OpResult<libc::flock> {
    if lk.end < lk.start {
        return Err(Errno::INVAL);
    }
    let start = i64::try_from(lk.start).map_err(|_| Errno::INVAL)?;
    let len = if lk.end >= OFFSET_MAX {
        0
    } else {
        let end = i64::try_from(lk.end).map_err(|_| Errno::INVAL)?;
        end - start + 1
    };
    // SAFETY: flock is plain data; all-zero is a valid value.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = lk.typ as i16;
    fl.l_whence = libc::SEEK_SET as i16;
    fl.l_start = start;
    fl.l_len = len;
    Ok(fl)
}

fn fcntl_lock(fd: BorrowedFd<'_>, cmd: i32, fl: &mut libc::flock) -> OpResult<()> {
    // SAFETY: F_OFD_GETLK/F_OFD_SETLK read (and GETLK writes) one struct flock at the
    // pointer, which points at `fl` for the call.
    let r = unsafe { libc::fcntl(fd.as_raw_fd(), cmd, fl as *mut libc::flock) };
    if r < 0 {
        return Err(Errno(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        ));
    }
    Ok(())
}

/// `GETLK`: the first lock that would conflict, or `F_UNLCK`.
pub fn getlk(fs: &Fs, node: u64, body: &mut crate::abi::request::Body<'_>) -> OpResult<Answer> {
    let arg: LkIn = body.arg()?;
    let fd = fs.locks.owner_fd(fs, node, arg.owner, arg.fh)?;
    let mut fl = to_flock(&arg.lk)?;
    fcntl_lock(fd.as_fd(), libc::F_OFD_GETLK, &mut fl)?;
    let lk = if fl.l_type == libc::F_UNLCK as i16 {
        FileLock {
            typ: libc::F_UNLCK as u32,
            ..arg.lk
        }
    } else {
        let start = fl.l_start as u64;
        FileLock {
            start,
            end: if fl.l_len == 0 {
                OFFSET_MAX
            } else {
                start + fl.l_len as u64 - 1
            },
            typ: fl.l_type as u32,
            // An OFD lock has no process; the holder is not named.
            pid: 0,
        }
    };
    Ok(Answer::of(&LkOut { lk }))
}

/// One attempt at the lock; `Ok(false)` when it would have to wait.
fn try_lock(fs: &Fs, node: u64, arg: &LkIn) -> OpResult<bool> {
    let attempt = if arg.lk_flags & LK_FLOCK != 0 {
        let handle = fs.handles.file(arg.fh)?;
        let op = match arg.lk.typ as i32 {
            libc::F_RDLCK => libc::LOCK_SH | libc::LOCK_NB,
            libc::F_WRLCK => libc::LOCK_EX | libc::LOCK_NB,
            libc::F_UNLCK => libc::LOCK_UN,
            _ => return Err(Errno::INVAL),
        };
        // SAFETY: flock takes a descriptor and an operation; the descriptor is live (held by
        // the handle for the call).
        let r = unsafe { libc::flock(handle.as_file()?.file.as_raw_fd(), op) };
        if r < 0 {
            Err(Errno(
                std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO),
            ))
        } else {
            Ok(())
        }
    } else {
        let fd = fs.locks.owner_fd(fs, node, arg.owner, arg.fh)?;
        let mut fl = to_flock(&arg.lk)?;
        fcntl_lock(fd.as_fd(), libc::F_OFD_SETLK, &mut fl)
    };
    match attempt {
        Ok(()) => Ok(true),
        Err(e) if e.0 == libc::EAGAIN || e.0 == libc::EACCES || e.0 == libc::EWOULDBLOCK => {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// `SETLK` and `SETLKW`.
pub fn setlk(
    fs: &Arc<Fs>,
    node: u64,
    body: &mut crate::abi::request::Body<'_>,
    wait: bool,
    unique: u64,
    later: Option<&Arc<dyn LateReply>>,
) -> OpResult<Answer> {
    let arg: LkIn = body.arg()?;
    if try_lock(fs, node, &arg)? {
        return Ok(Answer::empty());
    }
    if !wait {
        return Err(Errno(libc::EAGAIN));
    }
    let Some(later) = later.cloned() else {
        return Err(Errno(libc::EDEADLK));
    };
    let cancel = Arc::new(AtomicBool::new(false));
    fs.locks.waiting().insert(unique, cancel.clone());
    let fs = fs.clone();
    let spawned = std::thread::Builder::new()
        .name("vecio-fuse-lock".into())
        .spawn(move || {
            let result = wait_for_lock(&fs, node, &arg, &cancel);
            fs.locks.waiting().remove(&unique);
            later.send(unique, result.map(|()| Vec::new()));
        });
    match spawned {
        Ok(_) => Ok(Answer::Nothing),
        Err(_) => Err(Errno(libc::ENOLCK)),
    }
}

fn wait_for_lock(fs: &Fs, node: u64, arg: &LkIn, cancel: &AtomicBool) -> OpResult<()> {
    let mut pause = Duration::from_millis(1);
    loop {
        if cancel.load(Ordering::Relaxed) || fs.locks.closing() {
            return Err(Errno(libc::EINTR));
        }
        if try_lock(fs, node, arg)? {
            return Ok(());
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// `FLUSH` (a `close` of the file by one owner): the owner's POSIX locks on it go.
pub fn flush(fs: &Fs, node: u64, arg: &FlushIn) {
    fs.locks.release_owner(fs, node, arg.lock_owner);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_convert_to_flock() {
        let lk = FileLock {
            start: 10,
            end: 19,
            typ: libc::F_WRLCK as u32,
            pid: 0,
        };
        let fl = to_flock(&lk).unwrap();
        assert_eq!((fl.l_start, fl.l_len), (10, 10));
        let whole = FileLock {
            start: 0,
            end: OFFSET_MAX,
            ..lk
        };
        assert_eq!(to_flock(&whole).unwrap().l_len, 0);
        let bad = FileLock {
            start: 20,
            end: 10,
            ..lk
        };
        assert!(to_flock(&bad).is_err());
    }
}
