//! Notifications the server sends the kernel unasked (`FUSE_NOTIFY_*`): a write to `/dev/fuse`
//! with `unique` 0 and the notification's code in the header's `error`. vecio sends them when
//! it changes a backing file itself in a way the kernel's caches cannot know of: clearing
//! setuid/setgid on a write (`FUSE_NOTIFY_INVAL_INODE`, attributes only).
//!
//! An attribute-only invalidation (`off` < 0) touches no page of the file, so it may be sent
//! from inside the request that caused it without waiting on anything the request holds.

use std::io::IoSlice;
use std::os::fd::OwnedFd;
use std::sync::{Arc, OnceLock};

use zerocopy::IntoBytes;

use crate::abi::{NotifyInvalInodeOut, OutHeader};

/// `FUSE_NOTIFY_INVAL_INODE`.
const NOTIFY_INVAL_INODE: i32 = 2;

/// Sends notifications on the connection, once it is known.
#[derive(Default)]
pub struct Notifier {
    dev: OnceLock<Arc<OwnedFd>>,
}

impl Notifier {
    /// Sends through `dev` from now on.
    pub fn connect(&self, dev: Arc<OwnedFd>) {
        let _ = self.dev.set(dev);
    }

    /// Drops the kernel's cached attributes of node `node` (`FUSE_NOTIFY_INVAL_INODE` with
    /// `off` -1: no page is touched).
    pub fn inval_attr(&self, node: u64) {
        let out = NotifyInvalInodeOut {
            ino: node,
            off: -1,
            len: 0,
        };
        self.send(NOTIFY_INVAL_INODE, &[out.as_bytes()]);
    }

    fn send(&self, code: i32, parts: &[&[u8]]) {
        let Some(dev) = self.dev.get() else { return };
        let len = std::mem::size_of::<OutHeader>() + parts.iter().map(|p| p.len()).sum::<usize>();
        let header = OutHeader {
            len: len as u32,
            error: code,
            unique: 0,
        };
        let mut iov = vec![IoSlice::new(header.as_bytes())];
        iov.extend(parts.iter().map(|p| IoSlice::new(p)));
        // ENOENT: the kernel no longer holds the node; nothing was cached.
        match rustix::io::writev(&**dev, &iov) {
            Ok(_) => {}
            Err(e) if e == rustix::io::Errno::NOENT => {}
            Err(e) => tracing::debug!(code, "notification refused: {e}"),
        }
    }
}
