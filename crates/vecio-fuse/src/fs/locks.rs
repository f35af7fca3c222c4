//! The lock state every worker shares (`Fs::locks`): one open file description per (inode, lock
//! owner) with the handles the owner's locks came through, and the `SETLKW` requests waiting.
//! How locks are served with it, and why, is in `crate::ops::locks`.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::OFlags;

use crate::error::{Errno, OpResult};
use crate::fs::creds::AsServer;
use crate::fs::Fs;

/// A lock owner of one inode: its open file description, and the handles its locks came
/// through.
struct Owner {
    fd: Arc<OwnedFd>,
    handles: Vec<u64>,
}

/// The owners, by (inode, lock owner).
type Owners = HashMap<((u64, u64), u64), Owner>;

/// Lock state shared by every worker.
#[derive(Default)]
pub struct Locks {
    /// One open file description per (inode, lock owner).
    owners: Mutex<Owners>,
    /// Waiting `SETLKW` requests by their `unique`, with their cancel flag.
    waiting: Mutex<HashMap<u64, Arc<AtomicBool>>>,
    /// Set at shutdown: waiters stop.
    closing: AtomicBool,
}

impl Locks {
    /// The open file description of `owner`'s locks on node `node`, taken through handle `fh`.
    pub fn owner_fd(&self, fs: &Fs, node: u64, owner: u64, fh: u64) -> OpResult<Arc<OwnedFd>> {
        let inode = fs.inodes.get(node)?;
        let key = (inode.key, owner);
        if let Some(o) = self.lock_owners().get_mut(&key) {
            if !o.handles.contains(&fh) {
                o.handles.push(fh);
            }
            return Ok(o.fd.clone());
        }
        // The kernel checked the caller's open mode against the lock type; the description
        // is the server's own, opened as root with whatever access the file allows.
        let _root = AsServer::new();
        let fd = [OFlags::RDWR, OFlags::RDONLY, OFlags::WRONLY]
            .into_iter()
            .find_map(|mode| fs.reopen(&inode, mode).ok())
            .ok_or(Errno(libc::EACCES))?;
        let mut owners = self.lock_owners();
        let o = owners.entry(key).or_insert(Owner {
            fd: Arc::new(fd),
            handles: Vec::new(),
        });
        if !o.handles.contains(&fh) {
            o.handles.push(fh);
        }
        Ok(o.fd.clone())
    }

    fn lock_owners(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.owners.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops owner `owner`'s locks on node `node` (its `close`).
    pub fn release_owner(&self, fs: &Fs, node: u64, owner: u64) {
        if let Ok(inode) = fs.inodes.get(node) {
            self.lock_owners().remove(&(inode.key, owner));
        }
    }

    /// Handle `fh` is released (the last close of an open file): owners whose locks came
    /// through no other open handle go, and their locks with them (an OFD lock's owner is the
    /// open file itself).
    pub fn release_handle(&self, fh: u64) {
        let mut owners = self.lock_owners();
        if owners.is_empty() {
            return;
        }
        owners.retain(|_, o| {
            o.handles.retain(|&h| h != fh);
            !o.handles.is_empty()
        });
    }

    /// Ends the wait of request `unique` with `EINTR` (the kernel's `INTERRUPT`).
    pub fn interrupt(&self, unique: u64) {
        if let Some(flag) = self.waiting().get(&unique) {
            flag.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the connection is ending (waiters stop).
    pub fn closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    /// Stops every waiter (the connection is ending).
    pub fn shut_down(&self) {
        self.closing.store(true, Ordering::Relaxed);
        for flag in self.waiting().values() {
            flag.store(true, Ordering::Relaxed);
        }
    }

    /// The waiting `SETLKW` requests, by `unique`, with their cancel flags.
    pub fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<AtomicBool>>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}
