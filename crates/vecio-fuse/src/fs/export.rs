//! The kernel's file handles for the mount (`FUSE_EXPORT_SUPPORT`), as NFS re-export,
//! `open_by_handle_at` and CRIU use them. A handle holds a node id (and generation 0: vecio
//! never gives an id to another inode). When the kernel no longer has the inode, it asks for the
//! node by id: `LOOKUP` of `.` in that node. A node it still holds answers at once; one it forgot
//! is revived from the forgotten table (`crate::fs::forgotten`) by reopening its backing inode from
//! the backing file handle, as the server. To reconnect a directory the kernel also asks for
//! its parent: `LOOKUP` of `..`.
//!
//! Offered only where the server works on its private clone of the source's mounts (root):
//! there `..` of the clone's root is the root itself, and the kernel refuses `..` from a
//! directory moved out of it (`ENOENT`), so a parent lookup cannot leave the source.

use std::os::fd::AsFd;
use std::sync::Arc;

use rustix::fs::{AtFlags, Mode, OFlags};

use crate::error::{Errno, OpResult};
use crate::fs::inode::{Entry, Inode, Inodes};

impl Inodes {
    /// True when the kernel's file handles are served (`FUSE_EXPORT_SUPPORT` is asked for).
    pub fn exports(&self) -> bool {
        self.export
    }

    /// `LOOKUP` of `.` in node `id`: the node itself, one more kernel reference; revived from
    /// its backing file handle when the kernel had forgotten it (`ENOENT`, which the kernel
    /// turns into `ESTALE`, when it is unknown or its inode is gone). A node whose file was
    /// removed (no links left) is stale too, as on the backing file system once nothing holds
    /// it: the server's own descriptor, kept until the kernel's `FORGET` arrives, must not
    /// make a removed file's handle open.
    pub fn lookup_self(&self, id: u64) -> OpResult<(u64, rustix::fs::Stat)> {
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = t.by_id.get_mut(&id) {
            let inode = e.inode.clone();
            let st = inode.stat()?;
            if st.st_nlink == 0 {
                return Err(Errno::NOENT);
            }
            e.lookups += 1;
            drop(t);
            return Ok((id, st));
        }
        let gone = t.forgotten.take(id).ok_or(Errno::NOENT)?;
        if t.by_key.contains_key(&gone.key) {
            // Found again by name under another id meanwhile (it fell out of the table).
            return Err(Errno::NOENT);
        }
        let mount_fd = self
            .cache
            .mount_fd(gone.handle.mount_id)
            .ok_or(Errno::NOENT)?;
        let fd = {
            let _server = crate::fs::creds::AsServer::new();
            gone.handle
                .open(mount_fd.as_fd(), libc::O_PATH | libc::O_NOFOLLOW)
                .map_err(|_| Errno::NOENT)?
        };
        let st = rustix::fs::statat(&fd, c"", AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW)?;
        if (st.st_dev, st.st_ino) != gone.key {
            return Err(Errno::NOENT);
        }
        let inode = self.node(fd, Some(gone.handle), gone.key, gone.kind);
        t.by_id.insert(
            id,
            Entry {
                inode: inode.clone(),
                lookups: 1,
            },
        );
        t.by_key.insert(gone.key, id);
        drop(t);
        self.cache.installed(Arc::downgrade(&inode));
        Ok((id, st))
    }

    /// `LOOKUP` of `..` in directory node `id`: its parent (the root's is the root).
    pub fn lookup_parent(&self, id: u64) -> OpResult<(u64, rustix::fs::Stat)> {
        if id == crate::abi::ROOT_ID {
            return self.lookup_self(id);
        }
        let dir: Arc<Inode> = self.get(id)?;
        if dir.kind != rustix::fs::FileType::Directory {
            return Err(Errno(libc::ENOTDIR));
        }
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let parent = rustix::fs::openat(dir.fd()?, c"..", flags, Mode::empty())?;
        self.adopt(parent)
    }
}
