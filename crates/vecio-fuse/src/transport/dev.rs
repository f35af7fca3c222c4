//! The `/dev/fuse` connection: open, clone per worker, receive requests, send replies.

use std::io::IoSlice;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::{Mode, OFlags};

use crate::abi::{self, OutHeader};
use crate::error::{Error, Result};
use zerocopy::IntoBytes;

/// One `/dev/fuse` file descriptor of a connection.
pub struct Channel {
    fd: OwnedFd,
}

/// What a receive produced.
pub enum Received {
    /// A request of this many bytes.
    Request(usize),
    /// The file system was unmounted (or the connection aborted).
    Gone,
}

impl Channel {
    /// Opens `/dev/fuse` (a new, not yet mounted connection).
    pub fn open() -> Result<Channel> {
        let fd = rustix::fs::open("/dev/fuse", OFlags::RDWR | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| Error::Device {
                what: "open",
                source: e.into(),
            })?;
        Ok(Channel { fd })
    }

    /// A channel over a `/dev/fuse` descriptor opened elsewhere (by `fusermount3`).
    pub fn from_fd(fd: OwnedFd) -> Channel {
        Channel { fd }
    }

    /// A new descriptor on the same connection (`FUSE_DEV_IOC_CLONE`), so that a worker
    /// thread reads and answers its own requests.
    pub fn clone_channel(&self) -> Result<Channel> {
        let new = Self::open()?;
        let session: u32 = self.fd.as_raw_fd() as u32;
        // SAFETY: FUSE_DEV_IOC_CLONE reads one u32 (the fd to clone) from the pointer, which
        // points at a live u32 for the call.
        let r = unsafe { libc::ioctl(new.fd.as_raw_fd(), abi::DEV_IOC_CLONE, &session) };
        if r != 0 {
            return Err(Error::Device {
                what: "FUSE_DEV_IOC_CLONE",
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(new)
    }

    /// Reads one request into `buf`, retrying on interruption; `Gone` once unmounted.
    pub fn receive(&self, buf: &mut [u8]) -> Result<Received> {
        loop {
            match rustix::io::read(&self.fd, &mut *buf) {
                Ok(n) => return Ok(Received::Request(n)),
                // ENOENT: the request was interrupted before we read it.
                Err(e) if e == rustix::io::Errno::INTR || e == rustix::io::Errno::NOENT => {}
                Err(e) if e == rustix::io::Errno::AGAIN => {}
                Err(e) if e == rustix::io::Errno::NODEV || e == rustix::io::Errno::CONNABORTED => {
                    return Ok(Received::Gone)
                }
                Err(e) => {
                    return Err(Error::Device {
                        what: "read",
                        source: e.into(),
                    })
                }
            }
        }
    }

    /// Sends a reply: the header, then `parts`, in one `writev`. A reply to a request the
    /// kernel no longer waits for (interrupted, `ENOENT`) is dropped quietly.
    pub fn reply(&self, unique: u64, error: i32, parts: &[&[u8]]) -> std::io::Result<()> {
        let len = std::mem::size_of::<OutHeader>() + parts.iter().map(|p| p.len()).sum::<usize>();
        let header = OutHeader {
            len: len as u32,
            error,
            unique,
        };
        let mut iov: [IoSlice<'_>; 4] = [IoSlice::new(&[]); 4];
        iov[0] = IoSlice::new(header.as_bytes());
        let mut n = 1;
        let mut spill: Vec<IoSlice<'_>> = Vec::new();
        for p in parts {
            if n < iov.len() {
                iov[n] = IoSlice::new(p);
                n += 1;
            } else {
                if spill.is_empty() {
                    spill.extend_from_slice(&iov);
                }
                spill.push(IoSlice::new(p));
            }
        }
        let slices: &[IoSlice<'_>] = if spill.is_empty() { &iov[..n] } else { &spill };
        match rustix::io::writev(&self.fd, slices) {
            Ok(_) => Ok(()),
            Err(e) if e == rustix::io::Errno::NOENT => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Sends an error reply.
    pub fn reply_error(&self, unique: u64, errno: i32) -> std::io::Result<()> {
        self.reply(unique, -errno, &[])
    }
}

impl AsFd for Channel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
