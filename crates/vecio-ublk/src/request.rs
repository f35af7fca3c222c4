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

#[cfg(test)]
mod tests {
    use super::*;

    fn iod(op: u32, flags: u32, sector: u64, sectors: u32) -> sys::ublksrv_io_desc {
        sys::ublksrv_io_desc {
            op_flags: op | flags,
            nr_sectors: sectors,
            start_sector: sector,
            addr: 0,
        }
    }

    #[test]
    fn sectors_become_bytes_and_flags_are_read() {
        assert_eq!(
            Request::decode(&iod(sys::UBLK_IO_OP_READ, 0, 8, 16)),
            Request::Read {
                offset: 4096,
                len: 8192
            }
        );
        assert_eq!(
            Request::decode(&iod(sys::UBLK_IO_OP_WRITE, sys::UBLK_IO_F_FUA, 1, 1)),
            Request::Write {
                offset: 512,
                len: 512,
                fua: true
            }
        );
        assert_eq!(
            Request::decode(&iod(sys::UBLK_IO_OP_FLUSH, 0, 0, 0)),
            Request::Flush
        );
        assert_eq!(
            Request::decode(&iod(
                sys::UBLK_IO_OP_WRITE_ZEROES,
                sys::UBLK_IO_F_NOUNMAP,
                0,
                8
            )),
            Request::WriteZeroes {
                offset: 0,
                len: 4096,
                unmap: false
            }
        );
        assert_eq!(
            Request::decode(&iod(sys::UBLK_IO_OP_WRITE_ZEROES, 0, 0, 8)),
            Request::WriteZeroes {
                offset: 0,
                len: 4096,
                unmap: true
            }
        );
        assert_eq!(
            Request::decode(&iod(sys::UBLK_IO_OP_ZONE_APPEND, 0, 0, 8)),
            Request::Unsupported(sys::UBLK_IO_OP_ZONE_APPEND)
        );
    }
}
