//! What a file's direct I/O must be aligned to, learned once at open: `statx(STATX_DIOALIGN)`,
//! or a block device's logical block size (`BLKSSZGET`), or a conservative default.

use std::os::fd::{AsRawFd, BorrowedFd};

use super::FileKind;

/// Direct-I/O alignment of a file: what buffers and offsets must be multiples of.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DioAlign {
    /// Alignment of buffer addresses in memory (`stx_dio_mem_align`).
    pub mem: u32,
    /// Alignment of file offsets and lengths (`stx_dio_offset_align`).
    pub offset: u32,
    /// Where the numbers came from.
    pub source: AlignSource,
}

impl DioAlign {
    /// True when a transfer of `len` bytes at file offset `offset` meets the offset alignment:
    /// the one rule every part of vecio (engines, `Queue`, servers) uses to decide whether a
    /// direct request goes to the kernel as it is or is widened (bounce buffer,
    /// read-modify-write).
    ///
    /// ```
    /// use vecio::{file::AlignSource, DioAlign};
    /// let a = DioAlign { mem: 512, offset: 4096, source: AlignSource::Statx };
    /// assert!(a.allows(8192, 4096));
    /// assert!(!a.allows(8192, 100));
    /// assert!(a.allows_segment(0x1000, 4096) && !a.allows_segment(0x1001, 4096));
    /// ```
    #[inline]
    pub fn allows(&self, offset: u64, len: u64) -> bool {
        (offset | len) & (self.offset as u64).wrapping_sub(1) == 0
    }

    /// True when a memory segment at address `addr` of `len` bytes may take part in a direct
    /// transfer: its address meets the memory alignment and its length the offset alignment.
    #[inline]
    pub fn allows_segment(&self, addr: usize, len: usize) -> bool {
        addr & (self.mem as usize).wrapping_sub(1) == 0
            && len & (self.offset as usize).wrapping_sub(1) == 0
    }
}

/// Where a [`DioAlign`] was learned.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AlignSource {
    /// `statx(STATX_DIOALIGN)`.
    Statx,
    /// The block device's logical block size (`BLKSSZGET`).
    BlockSize,
    /// Neither was available: the conservative default of 4096.
    Default,
}

pub(super) fn probe_alignment(fd: BorrowedFd<'_>, kind: FileKind) -> DioAlign {
    use rustix::fs::{AtFlags, StatxFlags};
    if let Ok(stx) = rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN) {
        let has = StatxFlags::from_bits_retain(stx.stx_mask).contains(StatxFlags::DIOALIGN);
        if has && stx.stx_dio_mem_align > 0 && stx.stx_dio_offset_align > 0 {
            return DioAlign {
                mem: stx.stx_dio_mem_align,
                offset: stx.stx_dio_offset_align,
                source: AlignSource::Statx,
            };
        }
    }
    if kind == FileKind::Block {
        if let Ok(bs) = logical_block_size(fd) {
            return DioAlign {
                mem: bs,
                offset: bs,
                source: AlignSource::BlockSize,
            };
        }
    }
    DioAlign {
        mem: 4096,
        offset: 4096,
        source: AlignSource::Default,
    }
}

fn logical_block_size(fd: BorrowedFd<'_>) -> std::io::Result<u32> {
    let mut size: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one c_int through the pointer, which is valid for that write.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::BLKSSZGET, &mut size) };
    if r < 0 || size <= 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(size as u32)
}
