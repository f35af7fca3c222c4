//! The source directory as the server sees it. As root, the server works on a private clone of
//! the source's mount tree (`open_tree(OPEN_TREE_CLONE | AT_RECURSIVE)`), detached from every
//! mount namespace: what the server opens lives on mounts of its own, whose flags it may set
//! without touching the host's view. Under `-o noatime` that clone is `MOUNT_ATTR_NOATIME`, so
//! no read through the mount moves a backing access time, not even one the kernel does itself
//! on a passthrough file (it reads a file it opened on the server's mount); under
//! `-o strictatime` it is `MOUNT_ATTR_STRICTATIME`, so every read does. The sandbox later
//! pivots into this clone. Without root (no `CAP_SYS_ADMIN` to clone mounts) the source is
//! opened as it is, and `O_NOATIME` on each opened file does what it can (files the server
//! owns).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::mount::OpenTreeFlags;

/// `MOUNT_ATTR_NOATIME`.
const MOUNT_ATTR_NOATIME: u64 = 0x10;
/// `MOUNT_ATTR_STRICTATIME`.
const MOUNT_ATTR_STRICTATIME: u64 = 0x20;
/// `MOUNT_ATTR__ATIME`: the access-time bits, cleared before one of them is set.
const MOUNT_ATTR_ATIME_MASK: u64 = 0x70;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// How reads through the mount move the backing files' access times.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AccessTimes {
    /// As the backing file system's own mount says (`relatime`, usually).
    AsBacking,
    /// Never (`-o noatime`).
    Never,
    /// On every read (`-o strictatime`).
    Always,
}

/// Opens `source`: a private clone of its mount tree where the server may make one (root),
/// with its access-time rule set to `atime`; the directory itself otherwise. Returns an
/// `O_PATH` descriptor of the source directory, and whether it lies on a private clone.
pub fn open(source: &Path, atime: AccessTimes) -> std::io::Result<(OwnedFd, bool)> {
    if rustix::process::geteuid().is_root() {
        match clone_tree(source, atime) {
            Ok(root) => return Ok((root, true)),
            Err(e) => tracing::info!(
                "private view of {}: {e}; serving it as is",
                source.display()
            ),
        }
    }
    let root = rustix::fs::open(
        source,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok((root, false))
}

fn clone_tree(source: &Path, atime: AccessTimes) -> std::io::Result<OwnedFd> {
    let flags = OpenTreeFlags::OPEN_TREE_CLONE
        | OpenTreeFlags::OPEN_TREE_CLOEXEC
        | OpenTreeFlags::AT_RECURSIVE;
    let tree = rustix::mount::open_tree(rustix::fs::CWD, source, flags)?;
    let st = rustix::fs::fstat(&tree)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory {
        return Err(std::io::Error::from_raw_os_error(libc::ENOTDIR));
    }
    let set = match atime {
        AccessTimes::AsBacking => None,
        AccessTimes::Never => Some(MOUNT_ATTR_NOATIME),
        AccessTimes::Always => Some(MOUNT_ATTR_STRICTATIME),
    };
    if let Some(attr_set) = set {
        let attr = MountAttr {
            attr_set,
            attr_clr: MOUNT_ATTR_ATIME_MASK,
            propagation: 0,
            userns_fd: 0,
        };
        // SAFETY: mount_setattr reads `size` bytes of a mount_attr from the pointer, which
        // points at `attr` for the call; the empty path is a valid C string.
        let r = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                tree.as_raw_fd(),
                c"".as_ptr(),
                libc::AT_EMPTY_PATH | libc::AT_RECURSIVE,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(tree)
}
