//! Kill-priv (`FUSE_HANDLE_KILLPRIV_V2`): the kernel leaves clearing setuid/setgid to the server
//! and marks the requests where a caller without `CAP_FSETID` writes (`FUSE_WRITE_KILL_SUIDGID`),
//! truncates (`FATTR_KILL_SUIDGID`) or opens with `O_TRUNC` (`FUSE_OPEN_KILL_SUIDGID`); a
//! `fallocate` it does not mark, and the server asks the caller's thread (see `fallocate`). The
//! server writes as root, which would keep the bits, so it clears them itself the way the
//! kernel's `should_remove_suid` does: setuid always; setgid when the group may execute, or when
//! the caller is neither in the file's group nor holds `CAP_FSETID` (setgid without group
//! execute otherwise marks mandatory locking and stays); regular files only. The mark is one
//! bit for both, so the caller's groups are read from its thread (`CallerRights`), and only
//! when the file has one of the bits.

use std::cell::Cell;
use std::os::fd::BorrowedFd;

use rustix::fs::{AtFlags, FileType, Mode};

use crate::error::OpResult;
use crate::fs::creds::{AsServer, CallerRights};
use crate::fs::inode::Inode;
use crate::fs::Fs;

thread_local! {
    /// The thread that sent the request this thread serves (the header's pid).
    static CALLER: Cell<u32> = const { Cell::new(0) };
}

/// Notes the pid of the request this thread is about to serve.
pub fn note_caller(pid: u32) {
    CALLER.with(|c| c.set(pid));
}

/// The rights of the current request's caller; `None` when its thread is gone.
fn caller() -> Option<CallerRights> {
    CallerRights::of(CALLER.with(Cell::get))
}

/// The mode with the bits a write or truncate by an unprivileged caller clears, or `None`
/// when nothing changes. `in_group`: the caller is in the file's group (or holds
/// `CAP_FSETID`).
fn killed(mode: u32, in_group: bool) -> Option<Mode> {
    if FileType::from_raw_mode(mode) != FileType::RegularFile {
        return None;
    }
    let mut kill = 0;
    if mode & libc::S_ISUID != 0 {
        kill |= libc::S_ISUID;
    }
    if mode & libc::S_ISGID != 0 && (mode & libc::S_IXGRP != 0 || !in_group) {
        kill |= libc::S_ISGID;
    }
    (kill != 0).then(|| Mode::from_raw_mode(mode & 0o7777 & !kill))
}

/// Whether a caller with `rights` keeps a setgid bit without group execute on a file of group
/// `gid`: in that group, or holding `CAP_FSETID` (the kernel's `in_group_or_capable`: root's
/// chown keeps it). A caller that is gone counts as neither (the bit is cleared: the safer
/// answer).
fn keeps_sgid(rights: Option<&CallerRights>, gid: u32) -> bool {
    rights.is_some_and(|c| c.fsetid || c.in_group(gid))
}

/// The mode a file of `mode` and group `gid` is left with after the current request's caller
/// wrote, truncated or (`unless_privileged`) fallocated it, or `None` when nothing changes. The
/// caller's thread is read only when the file has setuid or setgid.
fn killed_for_caller(mode: u32, gid: u32, unless_privileged: bool) -> Option<Mode> {
    if mode & (libc::S_ISUID | libc::S_ISGID) == 0 {
        return None;
    }
    let rights = caller();
    if unless_privileged && rights.as_ref().is_some_and(|c| c.fsetid) {
        return None;
    }
    killed(mode, keeps_sgid(rights.as_ref(), gid))
}

/// Clears setuid/setgid on the open file `fd` of node `node` (as the server: the caller may
/// not own it), and tells the kernel its cached mode is stale: a write does not make it look
/// again (`stat -c %a` asks for the mode alone).
pub fn kill_suid_sgid(fs: &Fs, node: u64, fd: BorrowedFd<'_>) -> OpResult<()> {
    clear(fs, node, fd, false)
}

/// After a `fallocate`: clears setuid/setgid as [`kill_suid_sgid`] does unless the caller holds
/// `CAP_FSETID` (the kernel marks no `FALLOCATE`).
pub fn after_fallocate(fs: &Fs, node: u64, fd: BorrowedFd<'_>) -> OpResult<()> {
    clear(fs, node, fd, true)
}

/// The work of [`kill_suid_sgid`] and [`after_fallocate`]: nothing to read of the caller when the
/// file has neither bit.
fn clear(fs: &Fs, node: u64, fd: BorrowedFd<'_>, unless_privileged: bool) -> OpResult<()> {
    let st = rustix::fs::fstat(fd)?;
    if let Some(mode) = killed_for_caller(st.st_mode, st.st_gid, unless_privileged) {
        {
            let _root = AsServer::new();
            rustix::fs::fchmod(fd, mode)?;
        }
        fs.notify.inval_attr(node);
    }
    Ok(())
}

/// Clears setuid/setgid on `inode` (no open file at hand: a truncate by path).
pub fn kill_suid_sgid_inode(fs: &Fs, inode: &Inode) -> OpResult<()> {
    let st = inode.stat()?;
    if let Some(mode) = killed_for_caller(st.st_mode, st.st_gid, false) {
        let _root = AsServer::new();
        rustix::fs::chmodat(
            fs.proc_dir(),
            inode.fd()?.proc_name(),
            mode,
            AtFlags::empty(),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::killed;

    #[test]
    fn clears_as_the_kernel_does() {
        let reg = libc::S_IFREG;
        let after = |mode, in_group| killed(mode, in_group).map(|m| m.as_raw_mode());
        for in_group in [true, false] {
            assert_eq!(after(reg | 0o4755, in_group), Some(0o755));
            assert_eq!(after(reg | 0o2755, in_group), Some(0o755));
            assert_eq!(after(reg | 0o6755, in_group), Some(0o755));
            assert_eq!(after(reg | 0o755, in_group), None);
            assert_eq!(after(libc::S_IFDIR | 0o4755, in_group), None);
        }
        // setgid without group execute: kept for a member of the group (mandatory-locking
        // marker), cleared for anyone else.
        assert_eq!(after(reg | 0o2745, true), None);
        assert_eq!(after(reg | 0o6745, true), Some(0o2745));
        assert_eq!(after(reg | 0o2745, false), Some(0o745));
        assert_eq!(after(reg | 0o6745, false), Some(0o745));
    }
}
