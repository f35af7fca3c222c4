//! Open handles: what `OPEN`/`CREATE`/`OPENDIR` returned as `fh`, looked up by every
//! `READ`/`WRITE`/`READDIR` that follows.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::error::{Errno, OpResult};

/// An open directory: its descriptor, read with `getdents64` after a seek to the kernel's
/// offset (the lock keeps seek and read together).
pub struct DirHandle {
    /// The directory, opened `O_RDONLY | O_DIRECTORY`.
    pub fd: Mutex<OwnedFd>,
    /// Keeps the node's descriptor while open.
    #[allow(dead_code)]
    pub open: crate::fs::inode::OpenGuard,
}

/// One open handle.
pub enum Handle {
    /// A regular file through the vecio engine.
    File(FileHandle),
    /// A directory.
    Dir(DirHandle),
}

/// An open regular file.
pub struct FileHandle {
    /// The backing file (direct when the caller asked for `O_DIRECT` or `-o direct_io`).
    pub file: Arc<vecio::File>,
    /// The share of the inode's passthrough registration, when the kernel serves the file;
    /// held for its `Drop`, which gives the share back at `RELEASE`.
    #[allow(dead_code)]
    pub backing: Option<crate::fs::backing::Backing>,
    /// Counts this open among the inode's served ones, under read-only passthrough; held for
    /// its `Drop`.
    #[allow(dead_code)]
    pub served: Option<crate::fs::backing::Served>,
    /// Keeps the node's descriptor while open (an unlinked file cannot be reopened from its
    /// handle).
    #[allow(dead_code)]
    pub open: crate::fs::inode::OpenGuard,
}

/// The handle table, shared by every worker.
#[derive(Default)]
pub struct Handles {
    map: RwLock<HashMap<u64, Arc<Handle>>>,
    next: AtomicU64,
}

impl Handles {
    /// Stores `h` and returns its `fh`.
    pub fn insert(&self, h: Handle) -> u64 {
        let fh = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.map
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(fh, Arc::new(h));
        fh
    }

    /// The handle `fh` (`EBADF` when unknown).
    pub fn get(&self, fh: u64) -> OpResult<Arc<Handle>> {
        self.map
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&fh)
            .cloned()
            .ok_or(Errno::BADF)
    }

    /// The regular file behind `fh`.
    pub fn file(&self, fh: u64) -> OpResult<Arc<Handle>> {
        let h = self.get(fh)?;
        match &*h {
            Handle::File(_) => Ok(h),
            Handle::Dir(_) => Err(Errno(libc::EISDIR)),
        }
    }

    /// Open (files, directories) handles now.
    pub fn counts(&self) -> (usize, usize) {
        let map = self.map.read().unwrap_or_else(|p| p.into_inner());
        let dirs = map
            .values()
            .filter(|h| matches!(***h, Handle::Dir(_)))
            .count();
        (map.len() - dirs, dirs)
    }

    /// Removes `fh`; the descriptor closes when the last request using it finishes.
    pub fn remove(&self, fh: u64) -> Option<Arc<Handle>> {
        self.map
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&fh)
    }
}

impl Handle {
    /// The file handle's parts (`EISDIR` for a directory).
    pub fn as_file(&self) -> OpResult<&FileHandle> {
        match self {
            Handle::File(f) => Ok(f),
            Handle::Dir(_) => Err(Errno(libc::EISDIR)),
        }
    }

    /// The directory handle (`ENOTDIR` for a file).
    pub fn as_dir(&self) -> OpResult<&DirHandle> {
        match self {
            Handle::Dir(d) => Ok(d),
            Handle::File(_) => Err(Errno(libc::ENOTDIR)),
        }
    }
}

/// A descriptor to keep: used by `DirHandle` construction.
pub fn dir_handle(fd: OwnedFd, open: crate::fs::inode::OpenGuard) -> Handle {
    Handle::Dir(DirHandle {
        fd: Mutex::new(fd),
        open,
    })
}
