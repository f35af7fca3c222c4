//! A ublk request descriptor (`struct ublksrv_io_desc`) decoded into what vecio does with it.

use libublk::sys;

/// One request from the ublk driver, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// `UBLK_IO_OP_READ`.
    Read {
        /// Byte offset.
        offset: u64,
        /// Bytes.
        len: u32,
    },
    /// `UBLK_IO_OP_WRITE`; `fua` for `UBLK_IO_F_FUA` (served as `RWF_DSYNC`).
    Write {
        /// Byte offset.
        offset: u64,
        /// Bytes.
        len: u32,
        /// Forced unit access: durable before completion.
        fua: bool,
    },
    /// `UBLK_IO_OP_FLUSH` (served as `fdatasync`).
    Flush,
    /// `UBLK_IO_OP_DISCARD` (a hole punched).
    Discard {
        /// Byte offset.
        offset: u64,
        /// Bytes.
        len: u32,
    },
    /// `UBLK_IO_OP_WRITE_ZEROES`: a hole punched, or the range zeroed in place when
    /// `UBLK_IO_F_NOUNMAP` asks to keep the blocks allocated.
    WriteZeroes {
        /// Byte offset.
        offset: u64,
        /// Bytes.
        len: u32,
        /// Blocks may be deallocated (`UBLK_IO_F_NOUNMAP` not set).
        unmap: bool,
    },
    /// Anything else (zoned operations, `WRITE_SAME`): refused with `EOPNOTSUPP`.
    Unsupported(u32),
}

impl Request {
    /// Decodes `iod` (sectors are 512 bytes whatever the device's block size).
    pub(crate) fn decode(iod: &sys::ublksrv_io_desc) -> Self {
        let op = iod.op_flags & 0xff;
        let flags = iod.op_flags >> 8 << 8;
        let offset = iod.start_sector << 9;
        // nr_sectors is nr_zones for UBLK_IO_OP_REPORT_ZONES, which is refused.
        let len = iod.nr_sectors << 9;
        match op {
            sys::UBLK_IO_OP_READ => Request::Read { offset, len },
            sys::UBLK_IO_OP_WRITE => Request::Write {
                offset,
                len,
                fua: flags & sys::UBLK_IO_F_FUA != 0,
            },
            sys::UBLK_IO_OP_FLUSH => Request::Flush,
            sys::UBLK_IO_OP_DISCARD => Request::Discard { offset, len },
            sys::UBLK_IO_OP_WRITE_ZEROES => Request::WriteZeroes {
                offset,
                len,
                unmap: flags & sys::UBLK_IO_F_NOUNMAP == 0,
            },
            other => Request::Unsupported(other),
        }
    }
}
