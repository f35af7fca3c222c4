//! Per-call read/write flags, the `RWF_*` bits of `preadv2(2)` and `pwritev2(2)`.

use bitflags::bitflags;

bitflags! {
    /// Flags carried by one request to `preadv2`/`pwritev2` or io_uring's `rw_flags`.
    ///
    /// The values are the kernel's. A flag the file or kernel refuses is reported as
    /// [`Error::Unsupported`](crate::Error::Unsupported), never dropped.
    ///
    /// ```
    /// use vecio::{File, RwFlags};
    /// # fn main() -> vecio::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let file = File::options().write(true).create(true).open(dir.path().join("f"))?;
    /// // This one write is durable when it returns (O_DSYNC for one call).
    /// file.writev_at(&[std::io::IoSlice::new(b"journal")], 0, RwFlags::DSYNC)?;
    /// # Ok(()) }
    /// ```
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub struct RwFlags: u32 {
        /// `RWF_HIPRI`: high-priority request, polled where the device supports it.
        const HIPRI = 0x01;
        /// `RWF_DSYNC`: per-call `O_DSYNC`; the data is durable when the call returns.
        const DSYNC = 0x02;
        /// `RWF_SYNC`: per-call `O_SYNC`; data and metadata are durable when the call returns.
        const SYNC = 0x04;
        /// `RWF_NOWAIT`: fail with `EAGAIN` instead of blocking (page-cache miss, lock, allocation).
        const NOWAIT = 0x08;
        /// `RWF_APPEND`: per-call `O_APPEND`; the offset is ignored and data goes at the end.
        const APPEND = 0x10;
        /// `RWF_DONTCACHE`: buffered I/O whose pages are dropped once written back or read.
        const DONTCACHE = 0x80;
    }
}

impl RwFlags {
    /// The value for the kernel's `rw_flags` / `preadv2` flags argument.
    #[inline]
    pub fn to_kernel(self) -> libc::c_int {
        self.bits() as libc::c_int
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_match_the_kernel() {
        assert_eq!(RwFlags::HIPRI.to_kernel(), libc::RWF_HIPRI);
        assert_eq!(RwFlags::DSYNC.to_kernel(), libc::RWF_DSYNC);
        assert_eq!(RwFlags::SYNC.to_kernel(), libc::RWF_SYNC);
        assert_eq!(RwFlags::NOWAIT.to_kernel(), libc::RWF_NOWAIT);
        assert_eq!(RwFlags::APPEND.to_kernel(), libc::RWF_APPEND);
        assert_eq!(RwFlags::DONTCACHE.to_kernel(), libc::RWF_DONTCACHE);
    }
}
