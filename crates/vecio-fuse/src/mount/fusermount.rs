//! Mounting without root, the way libfuse does: `fusermount3` (setuid root, from the fuse3
//! package) opens `/dev/fuse`, mounts it with the options it allows a user, and passes the
//! descriptor back over a Unix socket named by `_FUSE_COMMFD`.

use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::Command;

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SocketFlags, SocketType,
};

/// Runs `fusermount3 -o OPTS -- MOUNTPOINT` and returns the mounted `/dev/fuse` descriptor.
pub fn mount(mountpoint: &Path, opts: &str) -> Result<OwnedFd, String> {
    // The helper's end must survive exec, so the pair is made without CLOEXEC and the parent
    // closes that end right after spawning; ours is marked, so no program started meanwhile
    // keeps it.
    let (ours, theirs) = rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::empty(),
        None,
    )
    .map_err(|e| format!("socketpair: {e}"))?;
    rustix::io::fcntl_setfd(&ours, rustix::io::FdFlags::CLOEXEC)
        .map_err(|e| format!("fcntl: {e}"))?;
    let status = Command::new("fusermount3")
        .arg("-o")
        .arg(opts)
        .arg("--")
        .arg(mountpoint)
        .env("_FUSE_COMMFD", theirs.as_raw_fd().to_string())
        .status();
    drop(theirs);
    match status {
        Err(e) => return Err(format!("running fusermount3 (install fuse3): {e}")),
        Ok(s) if !s.success() => return Err(format!("fusermount3 failed ({s})")),
        Ok(_) => {}
    }
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut anc = RecvAncillaryBuffer::new(&mut space);
    rustix::net::recvmsg(
        &ours,
        &mut [IoSliceMut::new(&mut byte)],
        &mut anc,
        RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(|e| format!("receiving the /dev/fuse descriptor from fusermount3: {e}"))?;
    for msg in anc.drain() {
        if let RecvAncillaryMessage::ScmRights(mut fds) = msg {
            if let Some(fd) = fds.next() {
                return Ok(fd);
            }
        }
    }
    Err("fusermount3 passed no descriptor".into())
}

/// `fusermount3 -u -z MOUNTPOINT`: a lazy unmount by the user who mounted.
pub fn unmount(mountpoint: &Path) -> std::io::Result<()> {
    let out = Command::new("fusermount3")
        .args(["-u", "-z", "--"])
        .arg(mountpoint)
        .output()?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    // Already gone (unmounted by someone else): nothing to do.
    if err.contains("not found in /etc/mtab") || err.contains("Invalid argument") {
        return Ok(());
    }
    Err(std::io::Error::other(format!(
        "fusermount3 -u: {}",
        err.trim()
    )))
}
