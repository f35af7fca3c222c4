//! Acting as the caller: for the length of an operation the worker thread takes the requester's
//! filesystem uid and gid and its supplementary groups, so the backing file system checks
//! permissions, group membership and ownership exactly as it would for that user natively.
//!
//! Everything here is per thread: `setfsuid`/`setfsgid` are per-thread by nature, and the
//! supplementary groups are set with the raw `setgroups` system call
//! ([`rustix::thread::set_thread_groups`]), never libc's process-wide wrapper, which would
//! change every thread of the server at once. A worker starts by dropping the groups it
//! inherited ([`drop_own_groups`]), so the server's own groups never lend a caller a right.
//!
//! The caller's groups come from `/proc/PID/status` (`Groups:`), as libfuse's
//! `fuse_req_getgroups` reads them; the kernel names the calling thread in the request header.
//! A request with no process behind it (pid 0, sent by the kernel itself) gets no groups.

use std::cell::{Cell, RefCell};
use std::io::Read;

use rustix::process::Gid;

/// Groups a caller may have before vecio stops reading (`NGROUPS_MAX` is 65536; /proc prints
/// them all).
const MAX_GROUPS: usize = 65536;

thread_local! {
    /// The supplementary groups this thread holds now (empty after [`drop_own_groups`]), so a
    /// request from a caller with the same groups as the last costs no system call.
    static THREAD_GROUPS: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

thread_local! {
    /// The filesystem uid and gid this thread acts with now: the server's (0, 0) until a
    /// request of a caller switches them. Kept so that a switch to the ids already in force,
    /// and a probe of them, cost no system call.
    static FS_IDS: Cell<(u32, u32)> = const { Cell::new((0, 0)) };
}

/// Makes `uid`/`gid` this thread's filesystem ids, with no system call when they are in force.
fn set_fs_ids(uid: u32, gid: u32) {
    FS_IDS.with(|ids| {
        let (cur_uid, cur_gid) = ids.get();
        if (cur_uid, cur_gid) == (uid, gid) {
            return;
        }
        // SAFETY: setfsgid/setfsuid change only this thread's filesystem ids; they cannot fail
        // in a way that leaves memory unsafe. Away from root the group goes first, back to
        // root the uid first (the order the kernel's checks are easiest with); both are
        // allowed to a thread that keeps CAP_SETUID and CAP_SETGID, which fsuid does not drop.
        unsafe {
            if uid == 0 {
                libc::setfsuid(uid);
                libc::setfsgid(gid);
            } else {
                if cur_gid != gid {
                    libc::setfsgid(gid);
                }
                if cur_uid != uid {
                    libc::setfsuid(uid);
                }
            }
        }
        ids.set((uid, gid));
    })
}

/// The ids a request runs with, for its length. Switching is lazy: the ids stay in force after
/// the request, so the next request of the same caller (or the next one served as the server)
/// switches nothing; every request sets the ids it needs when it starts ([`AsCaller::new`] or
/// [`AsCaller::server`]), so none runs with another's.
pub struct AsCaller(());

impl AsCaller {
    /// Switches to `uid`/`gid` and the supplementary groups of thread `pid` (with `extra`, the
    /// groups the kernel passed with the request: `FUSE_CREATE_SUPP_GROUP`) when the server
    /// runs as root and the caller is someone else; root callers are served as the server. An
    /// unprivileged server acts as itself. A caller whose groups cannot be read (it exited)
    /// acts with `extra` alone. A caller whose ids the kernel could not map through an idmapped
    /// mount (`FUSE_INVALID_UIDGID`; the kernel checked its permissions, `default_permissions`
    /// being required there) is served as the server.
    pub fn new(uid: u32, gid: u32, pid: u32, extra: &[u32]) -> AsCaller {
        let unmapped = uid == crate::abi::INVALID_UIDGID || gid == crate::abi::INVALID_UIDGID;
        if !server_is_root() || (uid == 0 && gid == 0) || unmapped {
            return AsCaller::server();
        }
        let mut groups = caller_groups(pid);
        for g in extra {
            if !groups.contains(g) {
                groups.push(*g);
            }
        }
        set_groups(&groups);
        set_fs_ids(uid, gid);
        AsCaller(())
    }

    /// The server's own filesystem ids (root's), for a request not done as its caller.
    pub fn server() -> AsCaller {
        if server_is_root() {
            set_fs_ids(0, 0);
        }
        AsCaller(())
    }
}

/// Back to the server's own filesystem ids (root) while it lives, inside an operation that
/// runs as the caller: for steps the server does on its own behalf after the caller's rights
/// were checked (registering a passthrough backing file, reopening an inode from its handle).
/// Restores the caller's ids when dropped.
pub struct AsServer {
    saved: Option<(u32, u32)>,
}

impl AsServer {
    /// Switches this thread's filesystem ids to 0 if they are not already (no system call
    /// when they are).
    pub fn new() -> AsServer {
        if !server_is_root() {
            return AsServer { saved: None };
        }
        let (uid, gid) = FS_IDS.with(Cell::get);
        if (uid, gid) == (0, 0) {
            return AsServer { saved: None };
        }
        set_fs_ids(0, 0);
        AsServer {
            saved: Some((uid, gid)),
        }
    }
}

impl Default for AsServer {
    fn default() -> Self {
        AsServer::new()
    }
}

impl Drop for AsServer {
    fn drop(&mut self) {
        if let Some((uid, gid)) = self.saved {
            set_fs_ids(uid, gid);
        }
    }
}

/// Drops the supplementary groups the calling thread inherited from the process, with the raw
/// per-thread system call. Every serving thread calls it first: without it, a server started
/// by a user in group 0 (or any group) would lend that group to every caller whose request it
/// serves. Returns false when the thread may not change its groups (an unprivileged server,
/// which acts as itself anyway).
pub fn drop_own_groups() -> bool {
    if !server_is_root() {
        return false;
    }
    match rustix::thread::set_thread_groups(&[]) {
        Ok(()) => {
            THREAD_GROUPS.with(|g| g.borrow_mut().clear());
            true
        }
        Err(e) => {
            tracing::warn!("dropping the server's supplementary groups: {e}");
            false
        }
    }
}

/// Sets this thread's supplementary groups to `groups`, skipping the call when it already has
/// them. A failure leaves the thread with no groups, never with the previous caller's.
fn set_groups(groups: &[u32]) {
    THREAD_GROUPS.with(|cur| {
        let mut cur = cur.borrow_mut();
        if cur.as_slice() == groups {
            return;
        }
        let gids: Vec<Gid> = groups.iter().map(|&g| Gid::from_raw(g)).collect();
        match rustix::thread::set_thread_groups(&gids) {
            Ok(()) => {
                cur.clear();
                cur.extend_from_slice(groups);
            }
            Err(e) => {
                tracing::warn!("setgroups for a caller: {e}; serving it with no groups");
                if rustix::thread::set_thread_groups(&[]).is_ok() {
                    cur.clear();
                }
            }
        }
    })
}

/// The supplementary groups of thread `pid`, from `/proc/PID/status`. Empty when there is no
/// such thread (it exited) or no caller (pid 0).
pub fn caller_groups(pid: u32) -> Vec<u32> {
    proc_file(pid, "status").map_or_else(Vec::new, |text| parse_groups(&text))
}

/// `CAP_FSETID`'s bit in a capability set (linux/capability.h).
const CAP_FSETID: u32 = 4;

/// What the kernel weighs of a caller when its write, truncate or `fallocate` meets a setuid or
/// setgid file (`should_remove_suid`, `setattr_should_drop_sgid`): whether it holds
/// `CAP_FSETID`, and its groups.
pub struct CallerRights {
    /// Holds `CAP_FSETID` over the server's files: the bits stay.
    pub fsetid: bool,
    /// Its filesystem gid and supplementary groups.
    groups: Vec<u32>,
}

impl CallerRights {
    /// The rights of thread `pid`, from `/proc/PID/status`; `None` for a thread that is gone.
    /// A request the kernel sends on its own (pid 0) is privileged. `CAP_FSETID` counts only
    /// in a user namespace that maps ids as the server's does (its uid map, which anyone may
    /// read, where the `ns/user` link needs ptrace rights the server's threads do not keep).
    pub fn of(pid: u32) -> Option<CallerRights> {
        if pid == 0 {
            return Some(CallerRights {
                fsetid: true,
                groups: Vec::new(),
            });
        }
        let status = proc_file(pid, "status")?;
        static OWN_MAP: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
        let own_map = OWN_MAP.get_or_init(|| proc_file(std::process::id(), "uid_map"));
        let same_ids = proc_file(pid, "uid_map").is_some_and(|map| Some(map) == *own_map);
        let mut groups = parse_groups(&status);
        groups.extend(fs_gid(&status));
        Some(CallerRights {
            fsetid: same_ids && has_capability(&status, CAP_FSETID),
            groups,
        })
    }

    /// True when the caller is in group `gid` (its filesystem gid or a supplementary group).
    pub fn in_group(&self, gid: u32) -> bool {
        self.groups.contains(&gid)
    }
}

/// The filesystem gid (the `Gid:` line's fourth field) of a `/proc/PID/status` text.
fn fs_gid(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix("Gid:"))?;
    line.split_ascii_whitespace().nth(3)?.parse().ok()
}

/// The text of `/proc/PID/NAME`, read through the server's own /proc descriptor; `None` for no
/// caller (pid 0) or a thread that is gone.
fn proc_file(pid: u32, name: &str) -> Option<String> {
    if pid == 0 {
        return None;
    }
    let proc = crate::fs::procfs::dir().ok()?;
    let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC;
    let fd = rustix::fs::openat(proc, format!("{pid}/{name}"), flags, rustix::fs::Mode::empty())
        .ok()?;
    let mut text = String::new();
    std::fs::File::from(fd).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Whether the `CapEff:` line of a `/proc/PID/status` text has capability `cap`.
fn has_capability(status: &str, cap: u32) -> bool {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| cap < 64 && caps & (1 << cap) != 0)
}

/// The `Groups:` line of a `/proc/PID/status` text.
fn parse_groups(status: &str) -> Vec<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .map(|rest| {
            rest.split_ascii_whitespace()
                .filter_map(|g| g.parse().ok())
                .take(MAX_GROUPS)
                .collect()
        })
        .unwrap_or_default()
}

/// True when the server process runs with uid 0 (asked once: the server never changes its
/// effective uid, only its threads' filesystem ids).
pub fn server_is_root() -> bool {
    static ROOT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ROOT.get_or_init(|| rustix::process::geteuid().is_root())
}

/// Gives the calling thread its own filesystem context (`unshare(CLONE_FS)`) with umask 0:
/// modes arrive with the caller's umask already applied and must not be masked twice, and the
/// process embedding the server keeps its own umask.
/// Returns true when the thread has its own filesystem context.
pub fn own_umask() -> bool {
    // SAFETY: CLONE_FS unshares only the cwd, root and umask of this thread; no descriptor
    // table is unshared, so no thread can observe descriptors it does not share.
    match unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FS) } {
        Ok(()) => {
            rustix::process::umask(rustix::fs::Mode::empty());
            UMASK.with(|cur| cur.set(0));
            true
        }
        Err(e) => {
            tracing::warn!("unshare(CLONE_FS): {e}; new files get the process umask");
            false
        }
    }
}

thread_local! {
    /// The umask this thread has now (0 after [`own_umask`]; `u32::MAX` while unknown).
    static UMASK: Cell<u32> = const { Cell::new(u32::MAX) };
}

/// The caller's umask on this thread, for a request that creates a file. vecio asks the
/// kernel not to apply the umask itself (`FUSE_DONT_MASK`) and applies it where the caller's
/// kernel would: in the backing file system, which ignores it when the parent directory has a
/// default ACL, exactly as natively. Every request that creates something with a mode sets
/// its caller's umask first (`MKNOD`, `MKDIR`, `CREATE`, `TMPFILE`), so the umask is left in
/// force afterwards and the next request with the same umask makes no system call.
pub struct CallerUmask(());

impl CallerUmask {
    /// Sets this thread's umask to `umask` (the serving threads have their own, see
    /// [`own_umask`]), unless it is in force already.
    pub fn new(umask: u32) -> CallerUmask {
        let umask = umask & 0o777;
        UMASK.with(|cur| {
            if cur.get() != umask {
                rustix::process::umask(rustix::fs::Mode::from_raw_mode(umask));
                cur.set(umask);
            }
        });
        CallerUmask(())
    }
}

/// Prepares a serving thread: its own umask and working directory (`/proc`, see
/// `crate::fs::procfs`), and none of the process's supplementary groups.
pub fn serving_thread() {
    crate::fs::procfs::enter(own_umask());
    drop_own_groups();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_capabilities_are_read() {
        let s = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001fffeffffff\n";
        assert!(has_capability(s, CAP_FSETID));
        let s = "CapPrm:\t0000000000000010\nCapEff:\t00000000000000ef\n";
        assert!(!has_capability(s, CAP_FSETID));
        assert!(has_capability(s, 0));
        assert!(!has_capability("CapEff:\tzz\n", 0));
        assert!(!has_capability("Name:\tx\n", 0));
    }

    #[test]
    fn this_process_is_its_own_caller() {
        // Root with every capability where the tests run as root, otherwise without FSETID.
        let me = CallerRights::of(std::process::id()).expect("this process's status");
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        assert_eq!(me.fsetid, has_capability(&status, CAP_FSETID));
        assert!(me.in_group(rustix::process::getegid().as_raw()));
        assert!(CallerRights::of(u32::MAX - 1).is_none(), "no such thread");
        assert!(CallerRights::of(0).is_some_and(|k| k.fsetid), "the kernel's own request");
    }

    #[test]
    fn fs_gid_is_the_fourth_field() {
        assert_eq!(fs_gid("Uid:\t0\t0\t0\t0\nGid:\t1\t2\t3\t4\n"), Some(4));
        assert_eq!(fs_gid("Gid:\t1\t2\n"), None);
    }

    #[test]
    fn groups_line_is_parsed() {
        let s = "Name:\tls\nUid:\t0\t0\t0\t0\nGroups:\t4 24 65533 \nNgid:\t0\n";
        assert_eq!(parse_groups(s), vec![4, 24, 65533]);
        assert_eq!(parse_groups("Groups:\t\n"), Vec::<u32>::new());
        assert_eq!(parse_groups("Name:\tx\n"), Vec::<u32>::new());
    }

    #[test]
    fn own_groups_are_read() {
        let mine = caller_groups(std::process::id());
        let expected: Vec<u32> = rustix::process::getgroups()
            .unwrap()
            .iter()
            .map(|g| g.as_raw())
            .collect();
        assert_eq!(mine, expected);
        assert!(caller_groups(0).is_empty());
    }
}
