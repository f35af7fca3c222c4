//! File handles (`name_to_handle_at(2)`, `open_by_handle_at(2)`): a few bytes that name an
//! inode of a mounted file system for as long as it exists, with no descriptor held. The inode
//! table keeps one per node instead of an open descriptor, so a tree of any size stays
//! reachable under a small `RLIMIT_NOFILE` (see `crate::fs::inode`).

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::error::{Errno, OpResult};

/// `MAX_HANDLE_SZ` from the kernel.
const MAX_HANDLE_SZ: usize = 128;

/// `struct file_handle` with room for the largest handle.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawHandle {
    handle_bytes: u32,
    handle_type: i32,
    f_handle: [u8; MAX_HANDLE_SZ],
}

/// An inode's file handle and the id of the mount it was taken on.
#[derive(Clone)]
pub struct FileHandle {
    handle_type: i32,
    bytes: Box<[u8]>,
    /// `mnt_id` as `name_to_handle_at` reported it.
    pub mount_id: i32,
}

fn last_errno() -> Errno {
    Errno(
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO),
    )
}

impl FileHandle {
    /// The handle of the inode `fd` refers to (an `O_PATH` descriptor works, symlinks too).
    /// `EOPNOTSUPP` on file systems that cannot make handles (procfs, some FUSE mounts).
    pub fn of(fd: BorrowedFd<'_>) -> OpResult<FileHandle> {
        let mut raw = RawHandle {
            handle_bytes: MAX_HANDLE_SZ as u32,
            handle_type: 0,
            f_handle: [0; MAX_HANDLE_SZ],
        };
        let mut mount_id: libc::c_int = 0;
        // SAFETY: `raw` is a file_handle with handle_bytes set to the room that follows it;
        // the kernel writes at most that much, the handle type and the mount id; the empty
        // path is a valid C string and AT_EMPTY_PATH makes the call act on `fd` itself.
        let r = unsafe {
            libc::name_to_handle_at(
                fd.as_raw_fd(),
                c"".as_ptr(),
                (&mut raw as *mut RawHandle).cast(),
                &mut mount_id,
                libc::AT_EMPTY_PATH,
            )
        };
        if r != 0 {
            return Err(last_errno());
        }
        let n = (raw.handle_bytes as usize).min(MAX_HANDLE_SZ);
        Ok(FileHandle {
            handle_type: raw.handle_type,
            bytes: raw.f_handle[..n].into(),
            mount_id,
        })
    }

    /// True when `other` names the same inode (same type and bytes; the mount aside).
    pub fn same_inode(&self, other: &FileHandle) -> bool {
        self.handle_type == other.handle_type && self.bytes == other.bytes
    }

    /// Opens the inode anew with `flags` (`O_PATH` here), through `mount_fd`, any descriptor
    /// on the same mount. Needs `CAP_DAC_READ_SEARCH`. `ESTALE` once the inode is gone.
    pub fn open(&self, mount_fd: BorrowedFd<'_>, flags: i32) -> OpResult<OwnedFd> {
        let mut raw = RawHandle {
            handle_bytes: self.bytes.len() as u32,
            handle_type: self.handle_type,
            f_handle: [0; MAX_HANDLE_SZ],
        };
        raw.f_handle[..self.bytes.len()].copy_from_slice(&self.bytes);
        // SAFETY: `raw` is a complete file_handle whose handle_bytes matches the bytes after
        // it; the kernel only reads it. A non-negative return is a new descriptor we own.
        let fd = unsafe {
            libc::open_by_handle_at(
                mount_fd.as_raw_fd(),
                (&mut raw as *mut RawHandle).cast(),
                flags | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(last_errno());
        }
        // SAFETY: fd is a descriptor the call just opened for us.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}
