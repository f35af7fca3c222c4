//! The ABI layer: the FUSE kernel ABI (`include/uapi/linux/fuse.h`, protocol 7.45) and the
//! decoding of requests in it. The request and reply structs vecio reads and writes
//! (`structs`), their opcodes (`opcode`) and flags (`flags`), the ioctl numbers of
//! `/dev/fuse`, a request's header and arguments (`request`) and its extensions (`ext`).
//! Structs are `repr(C)` with the kernel's explicit padding; zerocopy checks at compile time
//! that they have no hidden padding, so a request can be read from, and a reply written to,
//! plain bytes without `unsafe`. Nothing here touches a file or the kernel: every other layer
//! builds on this one, and this one on nothing else of the crate (`errno`: the errno a failed
//! request is answered with).

pub(crate) mod errno;
pub(crate) mod ext;
mod flags;
mod opcode;
pub(crate) mod request;
mod structs;

pub use flags::*;
pub use opcode::Opcode;
pub use structs::*;

/// Major protocol version vecio speaks.
pub const KERNEL_VERSION: u32 = 7;
/// Highest minor protocol version vecio knows.
pub const KERNEL_MINOR_VERSION: u32 = 45;
/// Node id of the root directory.
pub const ROOT_ID: u64 = 1;
/// The smallest read buffer the kernel accepts on `/dev/fuse`.
pub const MIN_READ_BUFFER: usize = 8192;

/// `_IOR(229, 0, uint32_t)`: attach a new `/dev/fuse` fd to an existing connection.
pub const DEV_IOC_CLONE: libc::c_ulong = ior(229, 0, 4);
/// `_IOW(229, 1, struct fuse_backing_map)`: register a backing file for passthrough.
pub const DEV_IOC_BACKING_OPEN: libc::c_ulong = iow(229, 1, 16);
/// `_IOW(229, 2, uint32_t)`: drop a backing-file registration.
pub const DEV_IOC_BACKING_CLOSE: libc::c_ulong = iow(229, 2, 4);

const fn ioc(
    dir: libc::c_ulong,
    typ: libc::c_ulong,
    nr: libc::c_ulong,
    size: libc::c_ulong,
) -> libc::c_ulong {
    (dir << 30) | (size << 16) | (typ << 8) | nr
}
const fn ior(typ: libc::c_ulong, nr: libc::c_ulong, size: libc::c_ulong) -> libc::c_ulong {
    ioc(2, typ, nr, size)
}
const fn iow(typ: libc::c_ulong, nr: libc::c_ulong, size: libc::c_ulong) -> libc::c_ulong {
    ioc(1, typ, nr, size)
}

/// Bytes in front of a `WRITE` payload: `fuse_in_header` + `fuse_write_in`.
pub const WRITE_HEADERS: usize = std::mem::size_of::<InHeader>() + std::mem::size_of::<WriteIn>();

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    #[test]
    fn sizes_match_the_kernel_header() {
        assert_eq!(size_of::<InHeader>(), 40);
        assert_eq!(size_of::<OutHeader>(), 16);
        assert_eq!(size_of::<InitIn>(), 64);
        assert_eq!(size_of::<InitOut>(), 64);
        assert_eq!(size_of::<Attr>(), 88);
        assert_eq!(size_of::<EntryOut>(), 128);
        assert_eq!(size_of::<AttrOut>(), 104);
        assert_eq!(size_of::<SetattrIn>(), 88);
        assert_eq!(size_of::<ReadIn>(), 40);
        assert_eq!(size_of::<WriteIn>(), 40);
        assert_eq!(size_of::<Kstatfs>(), 80);
        assert_eq!(size_of::<CopyFileRangeIn>(), 56);
        assert_eq!(size_of::<UringReqHeader>(), 288);
        assert_eq!(size_of::<UringCmdReq>(), 24);
        assert_eq!(WRITE_HEADERS, 80);
        assert_eq!(size_of::<LkIn>(), 48);
        assert_eq!(size_of::<LkOut>(), 24);
        assert_eq!(size_of::<StatxIn>(), 24);
        assert_eq!(size_of::<Statx>(), 256);
        assert_eq!(size_of::<StatxOut>(), 288);
    }

    #[test]
    fn ioctl_numbers_match_the_kernel_header() {
        assert_eq!(DEV_IOC_CLONE, 0x8004_e500);
        assert_eq!(DEV_IOC_BACKING_OPEN, 0x4010_e501);
        assert_eq!(DEV_IOC_BACKING_CLOSE, 0x4004_e502);
    }
}
