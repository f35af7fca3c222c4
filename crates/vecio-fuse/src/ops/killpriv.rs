//! Kill-priv (`FUSE_HANDLE_KILLPRIV_V2`): the kernel leaves clearing setuid/setgid to the server
//! and marks the requests where a caller without `CAP_FSETID` writes (`FUSE_WRITE_KILL_SUIDGID`),
//! truncates (`FATTR_KILL_SUIDGID`) or opens with `O_TRUNC` (`FUSE_OPEN_KILL_SUIDGID`). The
//! server writes as root, which would keep the bits, so it clears them itself the way the
//! kernel's `should_remove_suid` does: setuid always, setgid when the group may execute (setgid
//! without group-execute marks mandatory locking and stays), regular files only.

use std::os::fd::BorrowedFd;

use rustix::fs::{AtFlags, FileType, Mode};

use crate::error::OpResult;
use crate::fs::creds::AsServer;
use crate::fs::inode::Inode;
use crate::fs::Fs;

/// The mode with the bits a write or truncate by an unprivileged caller clears, or `None`
/// when nothing changes.
fn killed(mode: u32) -> Option<Mode> {
    if FileType::from_raw_mode(mode) != FileType::RegularFile {
        return None;
    }
    let mut kill = 0;
    if mode & libc::S_ISUID != 0 {
        kill |= libc::S_ISUID;
    }
    if mode & (libc::S_ISGID | libc::S_IXGRP) == libc::S_ISGID | libc::S_IXGRP {
        kill |= libc::S_ISGID;
    }
    (kill != 0).then(|| Mode::from_raw_mode(mode & 0o7777 & !kill))
}

/// Clears setuid/setgid on the open file `fd` of node `node` (as the server: the caller may
/// not own it), and tells the kernel its cached mode is stale: a write does not make it look
/// again (`stat -c %a` asks for the mode alone).
pub fn kill_suid_sgid(fs: &Fs, node: u64, fd: BorrowedFd<'_>) -> OpResult<()> {
    let st = rustix::fs::fstat(fd)?;
    if let Some(mode) = killed(st.st_mode) {
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
    if let Some(mode) = killed(st.st_mode) {
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
        assert_eq!(killed(reg | 0o4755).map(|m| m.as_raw_mode()), Some(0o755));
        assert_eq!(killed(reg | 0o2755).map(|m| m.as_raw_mode()), Some(0o755));
        assert_eq!(killed(reg | 0o6755).map(|m| m.as_raw_mode()), Some(0o755));
        // setgid without group execute: mandatory-locking marker, kept.
        assert_eq!(killed(reg | 0o2745), None);
        assert_eq!(killed(reg | 0o6745).map(|m| m.as_raw_mode()), Some(0o2745));
        assert_eq!(killed(reg | 0o755), None);
        assert_eq!(killed(libc::S_IFDIR | 0o4755), None);
    }
}
