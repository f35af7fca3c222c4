//! `FUSE_PASSTHROUGH` registrations: one backing file per inode, shared by every open of it.
//!
//! The kernel serves a passthrough open's reads and writes on the registered backing file
//! itself, and allows one backing file per inode: a second open that named another one would
//! fail (`EIO` to the caller). So the first open of an inode registers a backing file opened
//! read-write by the server (`FUSE_DEV_IOC_BACKING_OPEN`), every later open shares its id, and
//! the last release drops it (`FUSE_DEV_IOC_BACKING_CLOSE`). The caller's own rights were
//! checked when its handle was opened; the kernel checks its open mode on every read and write.
//! Direct opens share it too: the kernel passes `O_DIRECT` on to the backing file.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

use rustix::fs::OFlags;
use zerocopy::IntoBytes;

use crate::abi::BackingMap;
use crate::fs::creds::AsServer;
use crate::fs::inode::Inode;
use crate::fs::Fs;

/// An inode's registration: its id and how many opens share it.
#[derive(Default)]
pub struct Slot {
    state: Mutex<Option<(i32, usize)>>,
}

/// One open's share of its inode's registration; the last one dropped unregisters it.
pub struct Backing {
    inode: Arc<Inode>,
    dev: Arc<OwnedFd>,
    id: i32,
}

impl Backing {
    /// The backing id the kernel knows.
    pub fn id(&self) -> i32 {
        self.id
    }
}

impl Drop for Backing {
    fn drop(&mut self) {
        let mut slot = self
            .inode
            .backing
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some((id, opens)) = slot.as_mut() {
            *opens -= 1;
            if *opens == 0 {
                close(&self.dev, *id);
                crate::fs::held::BACKINGS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                *slot = None;
            }
        }
    }
}

/// A share of `inode`'s registration, registering it first if no open holds one; `None` when
/// the kernel refuses (the open is then served by vecio).
pub fn acquire(fs: &Fs, inode: &Arc<Inode>, file: &vecio::File) -> Option<Backing> {
    let dev = fs.dev.get()?.clone();
    let mut slot = inode
        .backing
        .state
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let id = match slot.as_mut() {
        Some((id, opens)) => {
            *opens += 1;
            *id
        }
        None => {
            // Read-write, so that later opens of either mode can share it; where that is
            // refused (a read-only file system, a running executable), the caller's own file.
            let rw = {
                let _root = AsServer::new();
                fs.reopen(inode, OFlags::RDWR).ok()
            };
            if let Some(rw) = &rw {
                // The kernel reads this file itself: under -o noatime it must not touch atime.
                fs.keep_atime(rw);
            }
            let raw = rw.as_ref().map_or(file.as_raw_fd(), |f| f.as_raw_fd());
            let id = open(&dev, raw)?;
            crate::fs::held::BACKINGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            *slot = Some((id, 1));
            id
        }
    };
    Some(Backing {
        inode: inode.clone(),
        dev,
        id,
    })
}

/// `FUSE_DEV_IOC_BACKING_OPEN`.
fn open(dev: &OwnedFd, fd: i32) -> Option<i32> {
    let map = BackingMap {
        fd,
        flags: 0,
        padding: 0,
    };
    // SAFETY: the ioctl reads one fuse_backing_map from the pointer, which points at `map`
    // for the call.
    let id = unsafe {
        libc::ioctl(
            dev.as_raw_fd(),
            crate::abi::DEV_IOC_BACKING_OPEN,
            map.as_bytes().as_ptr(),
        )
    };
    if id > 0 {
        Some(id)
    } else {
        tracing::debug!(
            "FUSE passthrough refused: {}",
            std::io::Error::last_os_error()
        );
        None
    }
}

/// `FUSE_DEV_IOC_BACKING_CLOSE`.
fn close(dev: &OwnedFd, id: i32) {
    let id = id as u32;
    // SAFETY: the ioctl reads one u32 from the pointer, which points at `id`.
    unsafe { libc::ioctl(dev.as_raw_fd(), crate::abi::DEV_IOC_BACKING_CLOSE, &id) };
}
