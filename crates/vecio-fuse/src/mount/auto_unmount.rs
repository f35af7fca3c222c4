//! `-o auto_unmount`: the mount goes when its server does, however the server ends (a crash,
//! `kill -9`), rather than staying behind answering "Transport endpoint is not connected".
//!
//! libfuse has `fusermount3` stay and wait on a socket, and unmount when it closes if opening
//! the mount point then fails with `ENOTCONN`. Over FUSE over io_uring that check loses a
//! race: the socket closes while the kernel is still tearing the rings down, the open fails
//! with `ECANCELED` or `ECONNABORTED`, and the mount stays (seen with fuse3 3.14). So vecio
//! forks its own watcher at mount time. It holds the read end of a pipe whose write end only
//! the server holds; end of file there means every server process has ended. It then unmounts
//! lazily if the mount point still holds the same mount (its unique id from `statx`, so a
//! mount made there since is never touched): with `umount2(MNT_DETACH)` as root, else through
//! `fusermount3 -u -z`.
//!
//! The watcher is forked, not executed (no program of vecio's need be installed), so between
//! `fork` and its end it makes raw system calls only: the parent may have other threads.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, StatxFlags, CWD};

/// `STATX_MNT_ID_UNIQUE` (Linux 6.8): a mount id never given again.
const MNT_ID_UNIQUE: StatxFlags = StatxFlags::from_bits_retain(0x4000);

/// The watcher's name in `ps` and `/proc/PID/comm`, free of "vecio" so that `pkill vecio`,
/// meant for the server, leaves it to do its work.
const NAME: &CStr = c"auto_unmount";

/// The server's end of the watcher's pipe: while any process holds it, the mount stays.
/// Dropped, it lets the watcher go and reaps it (when this process started it).
#[derive(Debug)]
pub struct Watch {
    held: Option<OwnedFd>,
    pid: libc::pid_t,
}

impl Drop for Watch {
    fn drop(&mut self) {
        drop(self.held.take());
        // The watcher now finds the mount gone (or unmounts it) and exits at once. A process
        // that forked since (`--fork`) is not its parent: ECHILD, nothing to wait for.
        loop {
            // SAFETY: waitpid on a pid this process forked; no memory is passed.
            let r = unsafe { libc::waitpid(self.pid, std::ptr::null_mut(), 0) };
            if r >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
    }
}

/// The id of the mount on `mountpoint` of the kind `mask` asks for (`MNT_ID_UNIQUE`, or the
/// older `MNT_ID`, reused after an unmount); `None` where the kernel gives no such id.
fn mount_id(mountpoint: &CStr, mask: StatxFlags) -> Option<u64> {
    // No request reaches the server: a mount's root is entered without a lookup, and
    // DONT_SYNC takes the attributes the kernel holds. A dead connection answers too.
    // Symbolic links are followed, as `umount2` follows them.
    let flags = AtFlags::STATX_DONT_SYNC | AtFlags::NO_AUTOMOUNT;
    let st = rustix::fs::statx(CWD, mountpoint, flags, mask).ok()?;
    (StatxFlags::from_bits_retain(st.stx_mask) & mask == mask).then_some(st.stx_mnt_id)
}

/// Starts the watcher of the mount on `mountpoint`, made just now by this process; `as_user`:
/// it was made through `fusermount3`, which then unmounts it too.
pub fn watch(mountpoint: &Path, as_user: bool) -> Result<Watch, String> {
    // Absolute, so the watcher can leave this directory (it keeps none busy); made without
    // looking at the mount, whose server does not serve yet.
    let absolute = std::path::absolute(mountpoint).map_err(|e| format!("auto_unmount: {e}"))?;
    let point = CString::new(absolute.as_os_str().as_bytes())
        .map_err(|_| "the mount point holds a NUL byte".to_string())?;
    let (mask, id) = [MNT_ID_UNIQUE, StatxFlags::MNT_ID]
        .into_iter()
        .find_map(|m| Some((m, mount_id(&point, m)?)))
        .ok_or("auto_unmount: statx names no mount id here")?;
    // Everything the watcher needs is made before the fork: after it, nothing allocates.
    let helper = if as_user {
        let path = find_in_path("fusermount3").ok_or("auto_unmount needs fusermount3 (fuse3)")?;
        let args = [c"fusermount3", c"-u", c"-z", c"-q", c"--"];
        Some((path, args))
    } else {
        None
    };
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| format!("auto_unmount: pipe: {e}"))?;
    // SAFETY: the child runs only `watcher`, which makes raw system calls and never returns;
    // the parent goes on as before.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!(
            "auto_unmount: fork: {}",
            std::io::Error::last_os_error()
        ));
    }
    if pid == 0 {
        let argv = helper.as_ref().map(|(path, args)| {
            let mut v = [std::ptr::null(); 7];
            for (slot, a) in v.iter_mut().zip(args) {
                *slot = a.as_ptr();
            }
            v[args.len()] = point.as_ptr();
            (path.as_c_str(), v)
        });
        watcher(read.as_raw_fd(), &point, mask, id, argv);
    }
    drop(read);
    Ok(Watch {
        held: Some(write),
        pid,
    })
}

/// The forked watcher: waits for end of file on `pipe`, unmounts if the mount is still the one
/// with `id`, and exits. Raw system calls only, no allocation, never returns.
fn watcher(
    pipe: i32,
    point: &CStr,
    mask: StatxFlags,
    id: u64,
    exec: Option<(&CStr, [*const libc::c_char; 7])>,
) -> ! {
    // SAFETY: each call below is a plain system call on descriptors and memory this child owns
    // (the pipe, NUL-terminated strings and arrays made before the fork); `_exit` ends it
    // without running the parent's destructors or atexit handlers.
    unsafe {
        // Its own session: a terminal's Ctrl-C or hang-up goes to the server, not here.
        libc::setsid();
        libc::chdir(c"/".as_ptr());
        libc::prctl(libc::PR_SET_NAME, NAME.as_ptr());
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
        // Nothing but the pipe is kept: a copy of /dev/fuse here would keep the connection
        // alive, one of a caller's pipe would keep the caller waiting.
        let below = pipe == 0 || libc::syscall(libc::SYS_close_range, 0, pipe - 1, 0) == 0;
        let above = libc::syscall(libc::SYS_close_range, pipe + 1, libc::c_uint::MAX, 0) == 0;
        if !(below && above) {
            // Before Linux 5.9: one by one, as far as this process may have opened.
            let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
            let most = limit.unwrap_or(1024).clamp(1024, 1 << 20) as i32;
            for fd in (0..most).filter(|&fd| fd != pipe) {
                libc::close(fd);
            }
        }
        let mut byte = 0u8;
        loop {
            let n = libc::read(pipe, (&mut byte as *mut u8).cast(), 1);
            if n == 0 || (n < 0 && *libc::__errno_location() != libc::EINTR) {
                break;
            }
        }
        if mount_id(point, mask) == Some(id) {
            match exec {
                None => {
                    libc::umount2(point.as_ptr(), libc::MNT_DETACH);
                }
                Some((path, argv)) => {
                    let env: [*const libc::c_char; 1] = [std::ptr::null()];
                    libc::execve(path.as_ptr(), argv.as_ptr(), env.as_ptr());
                }
            }
        }
        libc::_exit(0)
    }
}

/// `name` found in a directory of `PATH`, as the shell would run it.
fn find_in_path(name: &str) -> Option<CString> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| rustix::fs::access(p, rustix::fs::Access::EXEC_OK).is_ok())
        .and_then(|p| CString::new(p.as_os_str().as_bytes()).ok())
}
