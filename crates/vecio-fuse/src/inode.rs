//! The inode table: node ids the kernel knows, each backed by an `O_PATH` descriptor of the
//! backing inode (never a path), with the kernel's lookup count.
//!
//! Confinement comes from here: a node is reached only by `openat2(parent, name,
//! RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` with `O_NOFOLLOW`, one component at a time, from
//! the root's descriptor; a symlink is opened as itself and never followed; a rename or a
//! symlink swap between two requests changes nothing, because a node holds the inode itself.

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

use crate::error::{Errno, OpResult};

/// One backing inode the kernel holds a reference to.
pub struct Inode {
    fd: OwnedFd,
    /// `(st_dev, st_ino)` of the backing inode.
    pub key: (u64, u64),
    /// File type, fixed for the inode's life.
    pub kind: FileType,
    /// The inode's passthrough registration, shared by its opens.
    pub backing: crate::passthrough::Slot,
}

impl Inode {
    /// The `O_PATH` descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Name of this inode's descriptor under `/proc/self/fd`, to reopen it for I/O.
    pub fn proc_name(&self) -> String {
        self.fd.as_raw_fd().to_string()
    }

    /// `stat` of the inode.
    pub fn stat(&self) -> OpResult<rustix::fs::Stat> {
        Ok(rustix::fs::statat(
            &self.fd,
            c"",
            AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW,
        )?)
    }
}

struct Entry {
    inode: Arc<Inode>,
    lookups: u64,
}

#[derive(Default)]
struct Table {
    by_id: HashMap<u64, Entry>,
    by_key: HashMap<(u64, u64), u64>,
    next_id: u64,
}

/// Node id to inode, shared by every worker.
pub struct Inodes {
    table: Mutex<Table>,
}

/// Opens `name` in directory `dir` as an `O_PATH` descriptor, beneath `dir` only.
pub fn open_beneath(dir: BorrowedFd<'_>, name: &CStr) -> OpResult<OwnedFd> {
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    Ok(rustix::fs::openat2(
        dir,
        name,
        flags,
        Mode::empty(),
        resolve,
    )?)
}

impl Inodes {
    /// A table whose root (node 1) is `root`, an `O_PATH` descriptor of the source directory.
    pub fn new(root: OwnedFd) -> OpResult<Inodes> {
        let st = rustix::fs::statat(&root, c"", AtFlags::EMPTY_PATH)?;
        let key = (st.st_dev, st.st_ino);
        let inode = Arc::new(Inode {
            fd: root,
            key,
            kind: FileType::Directory,
            backing: Default::default(),
        });
        let mut table = Table {
            next_id: crate::abi::ROOT_ID + 1,
            ..Default::default()
        };
        table
            .by_id
            .insert(crate::abi::ROOT_ID, Entry { inode, lookups: 1 });
        table.by_key.insert(key, crate::abi::ROOT_ID);
        Ok(Inodes {
            table: Mutex::new(table),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        // A worker that panicked while holding the lock left the table consistent (every
        // change is one insert or remove), so the poison flag carries no meaning here.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The inode of node `id` (`ENOENT` for an id the kernel should not know).
    pub fn get(&self, id: u64) -> OpResult<Arc<Inode>> {
        self.lock()
            .by_id
            .get(&id)
            .map(|e| e.inode.clone())
            .ok_or(Errno::NOENT)
    }

    /// Looks `name` up in directory node `parent`: the node id (counted as one more kernel
    /// reference) and the inode's `stat`.
    pub fn lookup(&self, parent: u64, name: &CStr) -> OpResult<(u64, rustix::fs::Stat)> {
        let dir = self.get(parent)?;
        let fd = open_beneath(dir.fd(), name)?;
        self.adopt(fd)
    }

    /// Enters an `O_PATH` descriptor into the table (or counts one more reference to the
    /// node that already has its inode).
    pub fn adopt(&self, fd: OwnedFd) -> OpResult<(u64, rustix::fs::Stat)> {
        let st = rustix::fs::statat(&fd, c"", AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW)?;
        let key = (st.st_dev, st.st_ino);
        let mut t = self.lock();
        if let Some(&id) = t.by_key.get(&key) {
            if let Some(e) = t.by_id.get_mut(&id) {
                e.lookups += 1;
                return Ok((id, st));
            }
        }
        let id = t.next_id;
        t.next_id += 1;
        let inode = Arc::new(Inode {
            fd,
            key,
            kind: FileType::from_raw_mode(st.st_mode),
            backing: Default::default(),
        });
        t.by_id.insert(id, Entry { inode, lookups: 1 });
        t.by_key.insert(key, id);
        Ok((id, st))
    }

    /// Drops `n` kernel references to node `id`; the inode is closed at zero. The root stays.
    pub fn forget(&self, id: u64, n: u64) {
        if id == crate::abi::ROOT_ID {
            return;
        }
        let mut t = self.lock();
        let gone = match t.by_id.get_mut(&id) {
            Some(e) => {
                e.lookups = e.lookups.saturating_sub(n);
                (e.lookups == 0).then_some(e.inode.key)
            }
            None => None,
        };
        if let Some(key) = gone {
            t.by_id.remove(&id);
            if t.by_key.get(&key) == Some(&id) {
                t.by_key.remove(&key);
            }
        }
    }
}
