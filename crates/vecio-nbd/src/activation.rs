//! systemd socket activation (`sd_listen_fds(3)`): a service manager binds the sockets and
//! passes them to the server as descriptors 3, 4, ..., naming the receiving process in
//! `LISTEN_PID` and the count in `LISTEN_FDS`, as qemu-nbd and nbdkit accept them.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// The first descriptor passed (`SD_LISTEN_FDS_START`).
const LISTEN_FDS_START: RawFd = 3;
/// More than this many passed sockets is taken as a malformed `LISTEN_FDS`.
const MOST_FDS: i32 = 256;

/// The listening sockets passed to this process by socket activation, in order; empty when
/// `LISTEN_PID` is not this process's id or `LISTEN_FDS` is absent or 0.
///
/// `LISTEN_PID`, `LISTEN_FDS` and `LISTEN_FDNAMES` are removed from the environment either
/// way, so no child takes the sockets for its own, and the descriptors are made close-on-exec.
/// Call it before the process starts threads (it changes the environment).
pub fn listen_fds() -> Vec<OwnedFd> {
    let pid = std::env::var("LISTEN_PID").ok();
    let count = std::env::var("LISTEN_FDS").ok();
    for v in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
        std::env::remove_var(v);
    }
    let ours = pid.and_then(|p| p.trim().parse::<u32>().ok()) == Some(std::process::id());
    let count = count
        .and_then(|n| n.trim().parse::<i32>().ok())
        .unwrap_or(0);
    if !ours || count <= 0 || count > MOST_FDS {
        return Vec::new();
    }
    let mut fds = Vec::new();
    for fd in LISTEN_FDS_START..LISTEN_FDS_START + count {
        // SAFETY: fcntl on a descriptor number only queries or sets its flags; a number that is
        // not open returns -1 and is skipped.
        let open = unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } == 0;
        if !open {
            tracing::warn!(fd, "LISTEN_FDS names a descriptor that is not open");
            continue;
        }
        // SAFETY: the service manager passed this open descriptor to this process (LISTEN_PID
        // is ours) for it to own; nothing else in the process refers to it.
        fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    fds
}
