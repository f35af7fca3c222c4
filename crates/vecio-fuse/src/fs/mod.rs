//! The file-system layer: the passthrough file system that the operations (`crate::ops`) serve
//! requests from. Its inodes (`inode`: node ids over file handles, `fhandle`, with the nodes the
//! kernel forgot, `forgotten`, and the kernel's own file handles for them, `export`), its open
//! handles (`handle`), the caller's credentials for the length of an operation (`creds`),
//! attributes (`attr`), the source and `/proc` as the server opens them (`source`, `procfs`),
//! `FUSE_PASSTHROUGH` backing files (`backing`), notifications to the kernel (`notify`) and
//! what it all holds (`held`).
//!
//! This module is the shared state: the inode and handle tables, the `/proc/self/fd`
//! directory used to reopen an inode for I/O, and the settings every worker reads.

pub mod attr;
pub mod backing;
pub mod creds;
pub mod export;
pub mod fhandle;
pub mod forgotten;
pub mod handle;
pub mod held;
pub mod inode;
pub mod locks;
pub mod notify;
pub mod procfs;
pub mod source;

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags};

use crate::error::{Errno, Error, OpResult, Result};
use crate::fs::attr::Timeouts;
use crate::fs::handle::Handles;
use crate::fs::inode::{Inode, InodeFd, Inodes};

/// Settings of the file system (as opposed to the mount).
#[derive(Clone, Debug, Default)]
pub struct FsConfig {
    /// Name and attribute cache lifetimes.
    pub timeouts: Timeouts,
    /// Refuse every change (the mount is read-only too).
    pub read_only: bool,
    /// Open every backing file `O_DIRECT` and reply `FOPEN_DIRECT_IO`, whatever the caller's
    /// flags (`-o direct_io`).
    pub direct_io: bool,
    /// The kernel caches writes of buffered opens (`-o writeback_cache`): it may then read a
    /// file opened write-only, so such opens get a read-write backing file.
    pub writeback_cache: bool,
    /// Hand buffered opens to the kernel (`FUSE_PASSTHROUGH`): reads and writes of those files
    /// never reach the server.
    pub passthrough: bool,
    /// Hand read-only buffered opens to the kernel (`FUSE_PASSTHROUGH`) while no open of the
    /// inode is served by vecio (and the file is not setuid); writers stay served (kill-priv,
    /// write times), except one that comes while readers are with the kernel, which joins them
    /// (the kernel wants every open of such an inode passed through). `vecio fuse`'s default;
    /// `passthrough` covers it. See `crate::fs::backing::for_open`.
    pub passthrough_reads: bool,
    /// With `passthrough`, hand `O_DIRECT` opens to the kernel too (the kernel passes
    /// `O_DIRECT` on to the backing file, so their buffers must then be aligned as natively);
    /// without it they stay with vecio, which serves any alignment.
    pub passthrough_direct: bool,
    /// Serve only this user and root (`-o allow_root`): anyone else's requests are refused
    /// with `EACCES`, but for those on a handle already open (`ops::on_open_handle`).
    pub only_owner_and_root: Option<u32>,
    /// Leave access times alone (`-o noatime`): every backing file and directory the server
    /// opens for reading gets `O_NOATIME`.
    pub noatime: bool,
    /// Move access times on every read (`-o strictatime`), whatever the backing file system's
    /// own mount says (as root: the server's private view of the source is made
    /// `strictatime`).
    pub strictatime: bool,
}

/// The shared state of one served source directory.
pub struct Fs {
    /// Node ids the kernel knows.
    pub inodes: Inodes,
    /// Open files and directories.
    pub handles: Handles,
    /// Settings.
    pub cfg: FsConfig,
    /// The fast-read policy for buffered files.
    pub policy: vecio::FastReadPolicy,
    source: PathBuf,
    proc_fd: std::os::fd::BorrowedFd<'static>,
    /// A descriptor of the FUSE connection, for passthrough backing-file registration.
    pub dev: std::sync::OnceLock<std::sync::Arc<OwnedFd>>,
    /// File locks served by the backing file system.
    pub locks: locks::Locks,
    /// Notifications to the kernel.
    pub notify: crate::fs::notify::Notifier,
    /// What `FUSE_INIT` agreed (set once the kernel answered).
    pub granted: std::sync::OnceLock<crate::abi::InitFlags>,
    /// The private clone of the source's mounts, for the sandbox to pivot into (taken once).
    pub tree: std::sync::Mutex<Option<OwnedFd>>,
}

impl Fs {
    /// Opens `source` (a directory) as the root of the served tree.
    pub fn new(source: &Path, cfg: FsConfig) -> Result<Fs> {
        let src_err = |source_err: std::io::Error| Error::Source {
            path: source.to_path_buf(),
            source: source_err,
        };
        let atime = match (cfg.noatime, cfg.strictatime) {
            (true, _) => crate::fs::source::AccessTimes::Never,
            (false, true) => crate::fs::source::AccessTimes::Always,
            (false, false) => crate::fs::source::AccessTimes::AsBacking,
        };
        let (root, cloned) = crate::fs::source::open(source, atime).map_err(src_err)?;
        let tree = cloned
            .then(|| rustix::io::fcntl_dupfd_cloexec(&root, 0).ok())
            .flatten();
        let proc_fd = crate::fs::procfs::dir().map_err(|e| Error::Source {
            path: "/proc".into(),
            source: e,
        })?;
        let limit = raise_fd_limit();
        // The kernel's file handles are served where a parent lookup cannot leave the source.
        let inodes = Inodes::new(root, cached_fds(limit), cloned)
            .map_err(|e| src_err(std::io::Error::from_raw_os_error(e.0)))?;
        Ok(Fs {
            inodes,
            handles: Handles::default(),
            cfg,
            policy: vecio::FastReadPolicy::default(),
            // Absolute: a server that goes to the background leaves its directory.
            source: std::path::absolute(source).unwrap_or_else(|_| source.to_path_buf()),
            proc_fd,
            dev: std::sync::OnceLock::new(),
            locks: locks::Locks::default(),
            notify: Default::default(),
            granted: Default::default(),
            tree: std::sync::Mutex::new(tree),
        })
    }

    /// Opens inode `inode` for I/O with `flags` through its `/proc/self/fd` magic link, which
    /// names the inode itself, never a path. Symlinks are not opened (`ELOOP`).
    pub fn reopen(&self, inode: &Inode, flags: OFlags) -> OpResult<OwnedFd> {
        if inode.kind == FileType::Symlink {
            return Err(Errno(libc::ELOOP));
        }
        let flags = (flags - (OFlags::CREATE | OFlags::EXCL | OFlags::NOCTTY | OFlags::NOFOLLOW))
            | OFlags::CLOEXEC;
        let fd = inode.fd()?;
        Ok(rustix::fs::openat(
            self.proc_fd,
            fd.proc_name(),
            flags,
            Mode::empty(),
        )?)
    }

    /// Under `-o noatime`, sets `O_NOATIME` on `fd` (open for reading, by the server or a
    /// caller), so reads through it leave the backing access time alone. Set as the server:
    /// the flag needs the file's owner or `CAP_FOWNER`, which a caller's fsuid drops.
    pub fn keep_atime(&self, fd: &impl AsFd) {
        if !self.cfg.noatime {
            return;
        }
        let _server = crate::fs::creds::AsServer::new();
        let set = rustix::fs::fcntl_getfl(fd)
            .and_then(|fl| rustix::fs::fcntl_setfl(fd, fl | OFlags::NOATIME));
        if let Err(e) = set {
            tracing::debug!("O_NOATIME: {e}");
        }
    }

    /// An `O_PATH` descriptor of the inode open as `fd`.
    pub fn path_fd_of(&self, fd: &OwnedFd) -> OpResult<OwnedFd> {
        Ok(rustix::fs::openat(
            self.proc_fd,
            crate::fs::procfs::fd_name(fd.as_raw_fd()),
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
        )?)
    }

    /// The `/proc/self/fd` path of an inode, for calls that only take a path (xattrs), with
    /// the descriptor it names: the path is valid while that is held. A call that follows it
    /// lands on the inode itself, a symlink included: the magic link jumps to the descriptor's
    /// own inode and is never resolved further, so the link's target is not reached.
    pub fn proc_path(&self, inode: &Inode) -> OpResult<(InodeFd, std::ffi::CString)> {
        let fd = inode.fd()?;
        let path = std::ffi::CString::new(crate::fs::procfs::fd_path(fd.as_fd().as_raw_fd()))
            .map_err(|_| Errno::INVAL)?;
        Ok((fd, path))
    }

    /// The `/proc/self/fd` directory.
    pub fn proc_dir(&self) -> impl AsFd + '_ {
        self.proc_fd
    }

    /// True when `FUSE_INIT` agreed on `flag`.
    pub fn granted(&self, flag: crate::abi::InitFlags) -> bool {
        self.granted.get().is_some_and(|f| f.contains(flag))
    }

    /// The source directory's path (as given).
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// A label for error messages about inode `st_ino`.
    pub fn label(&self, ino: u64) -> PathBuf {
        self.source.join(format!("<inode {ino}>"))
    }
}

/// Lifts the soft open-file limit to the hard one, as passthrough servers do, and returns the
/// limit in force (`None`: unlimited).
fn raise_fd_limit() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let lim = getrlimit(Resource::Nofile);
    if let (Some(cur), Some(max)) = (lim.current, lim.maximum) {
        if cur < max {
            let raised = Rlimit {
                current: Some(max),
                maximum: Some(max),
            };
            if let Err(e) = setrlimit(Resource::Nofile, raised) {
                tracing::info!("raising the open-file limit from {cur} to {max}: {e}");
                return Some(cur);
            }
        }
        return Some(max);
    }
    lim.current
}

/// How many node descriptors to keep open under an open-file limit of `limit`: half of it
/// (the rest is for open files and directories, rings and the connection), at most 65536.
fn cached_fds(limit: Option<u64>) -> usize {
    let limit = limit.unwrap_or(1 << 20).min(1 << 20) as usize;
    (limit / 2).clamp(16, 65536)
}

/// A name as the kernel sent it, checked to be one component (never `.` or `..`).
pub fn component(name: &CStr) -> OpResult<&CStr> {
    match name.to_bytes() {
        b"." | b".." => Err(Errno::INVAL),
        _ => Ok(name),
    }
}
