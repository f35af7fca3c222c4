//! Acting as the caller: the worker thread's filesystem uid and gid are switched to the
//! requester's for the length of an operation, so the backing file system checks permissions
//! and sets ownership as it would for that user. `setfsuid`/`setfsgid` are per thread.

/// Restores the server's own filesystem ids when dropped.
pub struct AsCaller {
    switched: bool,
}

impl AsCaller {
    /// Switches to `uid`/`gid` when the server runs as root and the caller is someone else;
    /// otherwise does nothing (an unprivileged server acts as itself).
    pub fn new(uid: u32, gid: u32) -> AsCaller {
        if !crate::creds::server_is_root() || (uid == 0 && gid == 0) {
            return AsCaller { switched: false };
        }
        // SAFETY: setfsgid/setfsuid change only this thread's filesystem ids; they cannot
        // fail in a way that leaves memory unsafe. The group goes first: once the fsuid is no
        // longer 0 the thread may lose the right to change its group.
        unsafe {
            libc::setfsgid(gid);
            libc::setfsuid(uid);
        }
        AsCaller { switched: true }
    }
}

impl Drop for AsCaller {
    fn drop(&mut self) {
        if self.switched {
            // SAFETY: as above; back to root, uid first so the group change is allowed.
            unsafe {
                libc::setfsuid(0);
                libc::setfsgid(0);
            }
        }
    }
}

/// True when the server process runs with uid 0.
pub fn server_is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Gives the calling thread its own filesystem context (`unshare(CLONE_FS)`) with umask 0:
/// modes arrive with the caller's umask already applied and must not be masked twice, and the
/// process embedding the server keeps its own umask.
pub fn own_umask() {
    // SAFETY: CLONE_FS unshares only the cwd, root and umask of this thread; no descriptor
    // table is unshared, so no thread can observe descriptors it does not share.
    match unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FS) } {
        Ok(()) => {
            rustix::process::umask(rustix::fs::Mode::empty());
        }
        Err(e) => tracing::warn!("unshare(CLONE_FS): {e}; new files get the process umask"),
    }
}
