//! The FUSE kernel ABI (`include/uapi/linux/fuse.h`, protocol 7.45): the request and reply
//! structs vecio reads and writes, their opcodes and flags. Structs are `repr(C)` with the
//! kernel's explicit padding; zerocopy checks at compile time that they have no hidden padding,
//! so a request can be read from, and a reply written to, plain bytes without `unsafe`.

pub(crate) mod ext;
pub(crate) mod request;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Major protocol version vecio speaks.
pub const KERNEL_VERSION: u32 = 7;
/// Highest minor protocol version vecio knows.
pub const KERNEL_MINOR_VERSION: u32 = 45;
/// Node id of the root directory.
pub const ROOT_ID: u64 = 1;
/// The smallest read buffer the kernel accepts on `/dev/fuse`.
pub const MIN_READ_BUFFER: usize = 8192;

/// Request opcodes (`enum fuse_opcode`), typed: a request whose opcode vecio does not know
/// is answered `ENOSYS` before any operation sees it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
#[allow(missing_docs)]
pub enum Opcode {
    Lookup = 1,
    Forget = 2,
    Getattr = 3,
    Setattr = 4,
    Readlink = 5,
    Symlink = 6,
    Mknod = 8,
    Mkdir = 9,
    Unlink = 10,
    Rmdir = 11,
    Rename = 12,
    Link = 13,
    Open = 14,
    Read = 15,
    Write = 16,
    Statfs = 17,
    Release = 18,
    Fsync = 20,
    Setxattr = 21,
    Getxattr = 22,
    Listxattr = 23,
    Removexattr = 24,
    Flush = 25,
    Init = 26,
    Opendir = 27,
    Readdir = 28,
    Releasedir = 29,
    Fsyncdir = 30,
    Getlk = 31,
    Setlk = 32,
    Setlkw = 33,
    Access = 34,
    Create = 35,
    Interrupt = 36,
    Bmap = 37,
    Destroy = 38,
    Ioctl = 39,
    Poll = 40,
    NotifyReply = 41,
    BatchForget = 42,
    Fallocate = 43,
    Readdirplus = 44,
    Rename2 = 45,
    Lseek = 46,
    CopyFileRange = 47,
    Syncfs = 50,
    Tmpfile = 51,
    Statx = 52,
}

impl Opcode {
    /// The opcode numbered `n` by the kernel, if vecio knows it.
    pub fn from_raw(n: u32) -> Option<Opcode> {
        Some(match n {
            1 => Opcode::Lookup,
            2 => Opcode::Forget,
            3 => Opcode::Getattr,
            4 => Opcode::Setattr,
            5 => Opcode::Readlink,
            6 => Opcode::Symlink,
            8 => Opcode::Mknod,
            9 => Opcode::Mkdir,
            10 => Opcode::Unlink,
            11 => Opcode::Rmdir,
            12 => Opcode::Rename,
            13 => Opcode::Link,
            14 => Opcode::Open,
            15 => Opcode::Read,
            16 => Opcode::Write,
            17 => Opcode::Statfs,
            18 => Opcode::Release,
            20 => Opcode::Fsync,
            21 => Opcode::Setxattr,
            22 => Opcode::Getxattr,
            23 => Opcode::Listxattr,
            24 => Opcode::Removexattr,
            25 => Opcode::Flush,
            26 => Opcode::Init,
            27 => Opcode::Opendir,
            28 => Opcode::Readdir,
            29 => Opcode::Releasedir,
            30 => Opcode::Fsyncdir,
            31 => Opcode::Getlk,
            32 => Opcode::Setlk,
            33 => Opcode::Setlkw,
            34 => Opcode::Access,
            35 => Opcode::Create,
            36 => Opcode::Interrupt,
            37 => Opcode::Bmap,
            38 => Opcode::Destroy,
            39 => Opcode::Ioctl,
            40 => Opcode::Poll,
            41 => Opcode::NotifyReply,
            42 => Opcode::BatchForget,
            43 => Opcode::Fallocate,
            44 => Opcode::Readdirplus,
            45 => Opcode::Rename2,
            46 => Opcode::Lseek,
            47 => Opcode::CopyFileRange,
            50 => Opcode::Syncfs,
            51 => Opcode::Tmpfile,
            52 => Opcode::Statx,
            _ => return None,
        })
    }
}

bitflags::bitflags! {
    /// `FUSE_INIT` flags (`flags` holds bits 0-31, `flags2` bits 32-63).
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
    pub struct InitFlags: u64 {
        #[allow(missing_docs)]
        const ASYNC_READ = 1 << 0;
        #[allow(missing_docs)]
        const POSIX_LOCKS = 1 << 1;
        #[allow(missing_docs)]
        const ATOMIC_O_TRUNC = 1 << 3;
        #[allow(missing_docs)]
        const EXPORT_SUPPORT = 1 << 4;
        #[allow(missing_docs)]
        const BIG_WRITES = 1 << 5;
        #[allow(missing_docs)]
        const DONT_MASK = 1 << 6;
        #[allow(missing_docs)]
        const FLOCK_LOCKS = 1 << 10;
        #[allow(missing_docs)]
        const AUTO_INVAL_DATA = 1 << 12;
        #[allow(missing_docs)]
        const DO_READDIRPLUS = 1 << 13;
        #[allow(missing_docs)]
        const READDIRPLUS_AUTO = 1 << 14;
        #[allow(missing_docs)]
        const ASYNC_DIO = 1 << 15;
        #[allow(missing_docs)]
        const WRITEBACK_CACHE = 1 << 16;
        #[allow(missing_docs)]
        const PARALLEL_DIROPS = 1 << 18;
        #[allow(missing_docs)]
        const HANDLE_KILLPRIV = 1 << 19;
        #[allow(missing_docs)]
        const POSIX_ACL = 1 << 20;
        #[allow(missing_docs)]
        const ABORT_ERROR = 1 << 21;
        #[allow(missing_docs)]
        const MAX_PAGES = 1 << 22;
        #[allow(missing_docs)]
        const CACHE_SYMLINKS = 1 << 23;
        #[allow(missing_docs)]
        const HANDLE_KILLPRIV_V2 = 1 << 28;
        /// `fuse_setxattr_in` carries `setxattr_flags` (`FUSE_SETXATTR_ACL_KILL_SGID`).
        const SETXATTR_EXT = 1 << 29;
        #[allow(missing_docs)]
        const INIT_EXT = 1 << 30;
        /// Security labels (LSM contexts) come with the requests that create inodes.
        const SECURITY_CTX = 1 << 32;
        /// The caller's supplementary group matching the parent comes with creates.
        const CREATE_SUPP_GROUP = 1 << 34;
        #[allow(missing_docs)]
        const DIRECT_IO_ALLOW_MMAP = 1 << 36;
        #[allow(missing_docs)]
        const PASSTHROUGH = 1 << 37;
        #[allow(missing_docs)]
        const NO_EXPORT_SUPPORT = 1 << 38;
        /// Idmapped mounts of this file system may be made.
        const ALLOW_IDMAP = 1 << 40;
        #[allow(missing_docs)]
        const OVER_IO_URING = 1 << 41;
        /// The kernel aborts the connection when a request waits longer than
        /// `fuse_init_out.request_timeout` seconds.
        const REQUEST_TIMEOUT = 1 << 42;
    }
}

bitflags::bitflags! {
    /// Flags of an `OPEN`/`CREATE` reply (`FOPEN_*`).
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
    pub struct FopenFlags: u32 {
        #[allow(missing_docs)]
        const DIRECT_IO = 1 << 0;
        #[allow(missing_docs)]
        const KEEP_CACHE = 1 << 1;
        #[allow(missing_docs)]
        const NOFLUSH = 1 << 5;
        #[allow(missing_docs)]
        const PARALLEL_DIRECT_WRITES = 1 << 6;
        #[allow(missing_docs)]
        const PASSTHROUGH = 1 << 7;
    }
}

bitflags::bitflags! {
    /// `fuse_setattr_in.valid` bits (`FATTR_*`).
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
    pub struct FattrFlags: u32 {
        #[allow(missing_docs)]
        const MODE = 1 << 0;
        #[allow(missing_docs)]
        const UID = 1 << 1;
        #[allow(missing_docs)]
        const GID = 1 << 2;
        #[allow(missing_docs)]
        const SIZE = 1 << 3;
        #[allow(missing_docs)]
        const ATIME = 1 << 4;
        #[allow(missing_docs)]
        const MTIME = 1 << 5;
        #[allow(missing_docs)]
        const FH = 1 << 6;
        #[allow(missing_docs)]
        const ATIME_NOW = 1 << 7;
        #[allow(missing_docs)]
        const MTIME_NOW = 1 << 8;
        #[allow(missing_docs)]
        const LOCKOWNER = 1 << 9;
        #[allow(missing_docs)]
        const CTIME = 1 << 10;
        #[allow(missing_docs)]
        const KILL_SUIDGID = 1 << 11;
    }
}

bitflags::bitflags! {
    /// `fuse_write_in.write_flags` bits (`FUSE_WRITE_*`).
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
    pub struct WriteFlags: u32 {
        #[allow(missing_docs)]
        const CACHE = 1 << 0;
        #[allow(missing_docs)]
        const LOCKOWNER = 1 << 1;
        /// Clear setuid, and setgid when group-executable (`FUSE_HANDLE_KILLPRIV_V2`).
        const KILL_SUIDGID = 1 << 2;
    }
}

/// `fuse_open_in.flags`: the kernel's `__FMODE_EXEC`, set when the file is opened to be
/// executed (`execve`, `uselib`): the caller needs execute permission, not read.
pub const OPEN_FOR_EXEC: u32 = 1 << 5;
/// `fuse_open_in.open_flags`: clear setuid/setgid (an `O_TRUNC` open by a non-owner under
/// `FUSE_HANDLE_KILLPRIV_V2`).
pub const OPEN_KILL_SUIDGID: u32 = 1 << 0;
/// `fuse_lk_in.lk_flags`: the lock is a `flock(2)` lock, not a POSIX record lock.
pub const LK_FLOCK: u32 = 1 << 0;
/// `fuse_release_in.release_flags`: also drop the `flock(2)` lock of this open.
pub const RELEASE_FLOCK_UNLOCK: u32 = 1 << 1;

/// `fuse_setxattr_in.setxattr_flags`: clear setgid when `system.posix_acl_access` is set (the
/// caller is not in the file's group and lacks `CAP_FSETID`).
pub const SETXATTR_ACL_KILL_SGID: u32 = 1 << 0;
/// `fuse_in_header.uid`/`gid` when the kernel cannot map the caller's ids through an idmapped
/// mount (`FUSE_ALLOW_IDMAP`).
pub const INVALID_UIDGID: u32 = u32::MAX;

/// `fuse_getattr_in.getattr_flags`: `fh` is valid.
pub const GETATTR_FH: u32 = 1 << 0;
/// `fuse_fsync_in.fsync_flags`: data only.
pub const FSYNC_FDATASYNC: u32 = 1 << 0;

macro_rules! abi_struct {
    ($(#[$doc:meta] $name:ident { $($field:ident : $ty:ty),* $(,)? })*) => {$(
        #[$doc]
        #[allow(missing_docs)]
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
        pub struct $name { $(pub $field: $ty),* }
    )*};
}

abi_struct! {
    /// `struct fuse_in_header`: every request starts with it.
    InHeader { len: u32, opcode: u32, unique: u64, nodeid: u64, uid: u32, gid: u32, pid: u32,
        total_extlen: u16, padding: u16 }
    /// `struct fuse_out_header`: every reply starts with it.
    OutHeader { len: u32, error: i32, unique: u64 }
    /// `struct fuse_init_in`.
    InitIn { major: u32, minor: u32, max_readahead: u32, flags: u32, flags2: u32,
        unused: [u32; 11] }
    /// `struct fuse_init_out` (7.43 and later: 64 bytes).
    InitOut { major: u32, minor: u32, max_readahead: u32, flags: u32, max_background: u16,
        congestion_threshold: u16, max_write: u32, time_gran: u32, max_pages: u16,
        map_alignment: u16, flags2: u32, max_stack_depth: u32, request_timeout: u16,
        unused: [u16; 11] }
    /// `struct fuse_attr`.
    Attr { ino: u64, size: u64, blocks: u64, atime: u64, mtime: u64, ctime: u64,
        atimensec: u32, mtimensec: u32, ctimensec: u32, mode: u32, nlink: u32, uid: u32,
        gid: u32, rdev: u32, blksize: u32, flags: u32 }
    /// `struct fuse_entry_out`.
    EntryOut { nodeid: u64, generation: u64, entry_valid: u64, attr_valid: u64,
        entry_valid_nsec: u32, attr_valid_nsec: u32, attr: Attr }
    /// `struct fuse_attr_out`.
    AttrOut { attr_valid: u64, attr_valid_nsec: u32, dummy: u32, attr: Attr }
    /// `struct fuse_forget_in`.
    ForgetIn { nlookup: u64 }
    /// `struct fuse_forget_one`.
    ForgetOne { nodeid: u64, nlookup: u64 }
    /// `struct fuse_batch_forget_in`.
    BatchForgetIn { count: u32, dummy: u32 }
    /// `struct fuse_getattr_in`.
    GetattrIn { getattr_flags: u32, dummy: u32, fh: u64 }
    /// `struct fuse_setattr_in`.
    SetattrIn { valid: u32, padding: u32, fh: u64, size: u64, lock_owner: u64, atime: u64,
        mtime: u64, ctime: u64, atimensec: u32, mtimensec: u32, ctimensec: u32, mode: u32,
        unused4: u32, uid: u32, gid: u32, unused5: u32 }
    /// `struct fuse_mknod_in`.
    MknodIn { mode: u32, rdev: u32, umask: u32, padding: u32 }
    /// `struct fuse_mkdir_in`.
    MkdirIn { mode: u32, umask: u32 }
    /// `struct fuse_rename_in`.
    RenameIn { newdir: u64 }
    /// `struct fuse_rename2_in`.
    Rename2In { newdir: u64, flags: u32, padding: u32 }
    /// `struct fuse_link_in`.
    LinkIn { oldnodeid: u64 }
    /// `struct fuse_open_in`.
    OpenIn { flags: u32, open_flags: u32 }
    /// `struct fuse_create_in`.
    CreateIn { flags: u32, mode: u32, umask: u32, open_flags: u32 }
    /// `struct fuse_open_out`.
    OpenOut { fh: u64, open_flags: u32, backing_id: i32 }
    /// `struct fuse_release_in`.
    ReleaseIn { fh: u64, flags: u32, release_flags: u32, lock_owner: u64 }
    /// `struct fuse_flush_in`.
    FlushIn { fh: u64, unused: u32, padding: u32, lock_owner: u64 }
    /// `struct fuse_read_in`.
    ReadIn { fh: u64, offset: u64, size: u32, read_flags: u32, lock_owner: u64, flags: u32,
        padding: u32 }
    /// `struct fuse_write_in`.
    WriteIn { fh: u64, offset: u64, size: u32, write_flags: u32, lock_owner: u64, flags: u32,
        padding: u32 }
    /// `struct fuse_write_out`.
    WriteOut { size: u32, padding: u32 }
    /// `struct fuse_kstatfs`.
    Kstatfs { blocks: u64, bfree: u64, bavail: u64, files: u64, ffree: u64, bsize: u32,
        namelen: u32, frsize: u32, padding: u32, spare: [u32; 6] }
    /// `struct fuse_fsync_in`.
    FsyncIn { fh: u64, fsync_flags: u32, padding: u32 }
    /// `struct fuse_setxattr_in` (without `FUSE_SETXATTR_EXT`).
    SetxattrIn { size: u32, flags: u32 }
    /// `struct fuse_setxattr_in` with `FUSE_SETXATTR_EXT`.
    SetxattrInExt { size: u32, flags: u32, setxattr_flags: u32, padding: u32 }
    /// `struct fuse_ext_header`: one record of a request's extensions.
    ExtHeader { size: u32, typ: u32 }
    /// `struct fuse_secctx`: one security context (its name and value follow).
    Secctx { size: u32, padding: u32 }
    /// `struct fuse_getxattr_in`.
    GetxattrIn { size: u32, padding: u32 }
    /// `struct fuse_getxattr_out`.
    GetxattrOut { size: u32, padding: u32 }
    /// `struct fuse_access_in`.
    AccessIn { mask: u32, padding: u32 }
    /// `struct fuse_interrupt_in`.
    InterruptIn { unique: u64 }
    /// `struct fuse_fallocate_in`.
    FallocateIn { fh: u64, offset: u64, length: u64, mode: u32, padding: u32 }
    /// `struct fuse_lseek_in`.
    LseekIn { fh: u64, offset: u64, whence: u32, padding: u32 }
    /// `struct fuse_lseek_out`.
    LseekOut { offset: u64 }
    /// `struct fuse_copy_file_range_in`.
    CopyFileRangeIn { fh_in: u64, off_in: u64, nodeid_out: u64, fh_out: u64, off_out: u64,
        len: u64, flags: u64 }
    /// `struct fuse_file_lock`.
    FileLock { start: u64, end: u64, typ: u32, pid: u32 }
    /// `struct fuse_lk_in` (`GETLK`, `SETLK`, `SETLKW`).
    LkIn { fh: u64, owner: u64, lk: FileLock, lk_flags: u32, padding: u32 }
    /// `struct fuse_lk_out`.
    LkOut { lk: FileLock }
    /// `struct fuse_statx_in`.
    StatxIn { getattr_flags: u32, reserved: u32, fh: u64, sx_flags: u32, sx_mask: u32 }
    /// `struct fuse_sx_time`.
    SxTime { tv_sec: i64, tv_nsec: u32, reserved: i32 }
    /// `struct fuse_statx` (the layout of `struct statx`).
    Statx { mask: u32, blksize: u32, attributes: u64, nlink: u32, uid: u32, gid: u32, mode: u16,
        spare0: u16, ino: u64, size: u64, blocks: u64, attributes_mask: u64, atime: SxTime,
        btime: SxTime, ctime: SxTime, mtime: SxTime, rdev_major: u32, rdev_minor: u32,
        dev_major: u32, dev_minor: u32, spare2: [u64; 14] }
    /// `struct fuse_statx_out`.
    StatxOut { attr_valid: u64, attr_valid_nsec: u32, flags: u32, spare: [u64; 2], stat: Statx }
    /// `struct fuse_dirent` without its name.
    Dirent { ino: u64, off: u64, namelen: u32, typ: u32 }
    /// `struct fuse_notify_inval_inode_out`.
    NotifyInvalInodeOut { ino: u64, off: i64, len: i64 }
    /// `struct fuse_backing_map` (`FUSE_DEV_IOC_BACKING_OPEN`).
    BackingMap { fd: i32, flags: u32, padding: u64 }
    /// `struct fuse_uring_ent_in_out`.
    UringEntInOut { flags: u64, commit_id: u64, payload_sz: u32, padding: u32, reserved: u64 }
    /// `struct fuse_uring_cmd_req`: the command area of a `FUSE_IO_URING_CMD_*` SQE.
    UringCmdReq { flags: u64, commit_id: u64, qid: u16, padding: [u8; 6] }
}

/// Size of the in/out header area of a FUSE-over-io_uring entry.
pub const URING_IN_OUT_HEADER_SZ: usize = 128;
/// Size of the per-opcode header area of a FUSE-over-io_uring entry.
pub const URING_OP_IN_OUT_SZ: usize = 128;
/// `FUSE_IO_URING_CMD_REGISTER`: register an entry's buffers and fetch a request.
pub const URING_CMD_REGISTER: u32 = 1;
/// `FUSE_IO_URING_CMD_COMMIT_AND_FETCH`: reply to a request and fetch the next.
pub const URING_CMD_COMMIT_AND_FETCH: u32 = 2;

/// `struct fuse_uring_req_header`: the header buffer of a FUSE-over-io_uring entry.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct UringReqHeader {
    /// `struct fuse_in_header` on the way in, `struct fuse_out_header` on the way out.
    pub in_out: [u8; URING_IN_OUT_HEADER_SZ],
    /// The opcode's own header (for example `fuse_read_in`).
    pub op_in: [u8; URING_OP_IN_OUT_SZ],
    /// Commit id and payload size.
    pub ring_ent_in_out: UringEntInOut,
}

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
