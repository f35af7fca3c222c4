//! `FUSE_PASSTHROUGH` registrations: one backing file per inode, shared by every open of it.
//!
//! The kernel serves a passthrough open's reads and writes on the registered backing file
//! itself, and allows one backing file per inode: a second open that named another one would
//! fail (`EIO` to the caller). So the first open of an inode registers a backing file opened
//! read-write by the server (`FUSE_DEV_IOC_BACKING_OPEN`), every later open shares its id, and
//! the last release drops it (`FUSE_DEV_IOC_BACKING_CLOSE`). The caller's own rights were
//! checked when its handle was opened; the kernel checks its open mode on every read and write.
//! Direct opens share it too (the kernel fails an open of an inode that has a backing file with
//! `EIO` unless it names that file, and keeps it attached while a direct write vecio serves
//! runs): vecio still serves their reads and writes, unless `--passthrough-direct` hands them
//! to the kernel, which passes `O_DIRECT` on to the backing file.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

use rustix::fs::OFlags;
use zerocopy::IntoBytes;

use crate::abi::BackingMap;
use crate::fs::creds::AsServer;
use crate::fs::inode::Inode;
use crate::fs::Fs;

/// An inode's registration: its id and how many opens share it; and, under read-only
/// passthrough, how many of its opens vecio serves.
#[derive(Default)]
pub struct Slot {
    state: Mutex<Option<(i32, usize)>>,
    /// Opens of the inode that vecio serves (read-only passthrough only).
    served: Mutex<usize>,
}

/// One open of an inode that vecio serves, counted until it is released (read-only
/// passthrough: while one is held, no read-only open is handed to the kernel).
pub struct Served(Arc<Inode>);

impl Drop for Served {
    fn drop(&mut self) {
        let mut served = self.0.backing.lock_served();
        *served = served.saturating_sub(1);
    }
}

impl Slot {
    fn lock_served(&self) -> std::sync::MutexGuard<'_, usize> {
        self.served.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How an open is answered under read-only passthrough (`FsConfig::passthrough_reads`).
pub enum ReadsOpen {
    /// Handed to the kernel: a share of the inode's registration.
    Kernel(Backing),
    /// Served by vecio; the count this open holds.
    Served(Served),
}

/// Decides an open of `inode` under read-only passthrough. The kernel keeps one I/O mode per
/// inode and wants every open of an inode that has a backing file to be a passthrough one (it
/// fails any other with `EIO`); so:
/// - an inode whose reads are with the kernel already: every open shares its registration,
///   a writer's too (the registration is read-write);
/// - a read-only buffered open of an inode no served open holds: registers the inode (a
///   read-write descriptor the server opens, as under `--passthrough`) and goes to the kernel,
///   unless the file is setuid, or setgid and group-executable: its writes must stay with the
///   server, which clears those bits (kill-priv v2);
/// - anything else is served, and counted: while one is held no open goes to the kernel.
///
/// The kernel leaves an I/O mode before it sends `RELEASE` and enters one after the reply to
/// `OPEN`, so the counts kept here never say an inode is free while the kernel holds it in a
/// mode.
pub fn for_open(fs: &Fs, inode: &Arc<Inode>, file: &vecio::File, read_only: bool) -> ReadsOpen {
    // Lock order: served, then the registration.
    let mut served = inode.backing.lock_served();
    let registered = inode
        .backing
        .state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_some();
    let hand_over = registered || (read_only && *served == 0 && !keeps_privileges(file));
    if hand_over {
        if let Some(b) = acquire(fs, inode, file) {
            return ReadsOpen::Kernel(b);
        }
    }
    *served += 1;
    ReadsOpen::Served(Served(inode.clone()))
}

/// True for a file a write must strip of setuid or setgid (setuid, or setgid with group
/// execute: the kernel's `should_remove_suid`), or whose mode cannot be read.
fn keeps_privileges(file: &vecio::File) -> bool {
    match rustix::fs::fstat(file) {
        Ok(st) => {
            st.st_mode & libc::S_ISUID != 0
                || st.st_mode & (libc::S_ISGID | libc::S_IXGRP) == libc::S_ISGID | libc::S_IXGRP
        }
        Err(_) => true,
    }
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
            // refused (a read-only file system, a running executable), read-only. Buffered
            // either way, whatever the caller's open: the kernel reads and maps it for buffered
            // opens too. The caller's own file only when both are refused.
            let rw = {
                let _root = AsServer::new();
                fs.reopen(inode, OFlags::RDWR)
                    .or_else(|_| fs.reopen(inode, OFlags::RDONLY))
                    .ok()
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
