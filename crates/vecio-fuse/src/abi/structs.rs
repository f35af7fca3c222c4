//! The request and reply structs of the FUSE ABI, as `include/uapi/linux/fuse.h` lays them
//! out (explicit padding included): zerocopy checks at compile time that none has hidden
//! padding, so each can be read from and written to plain bytes without `unsafe`.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Declares the ABI structs: `Name = c_name { field: type, ... }` after a doc line, each
/// `repr(C)` with zerocopy's derives, each field documented by the kernel's name for it
/// (`c_name.field`), so the list reads like `fuse.h`.
macro_rules! abi_struct {
    ($(#[$doc:meta] $name:ident = $c:ident { $($field:ident : $ty:ty),* $(,)? })*) => {$(
        #[$doc]
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
        pub struct $name {
            $(
                #[doc = concat!("`", stringify!($c), ".", stringify!($field), "`.")]
                pub $field: $ty,
            )*
        }
    )*};
}

abi_struct! {
    /// `struct fuse_in_header`: every request starts with it.
    InHeader = fuse_in_header { len: u32, opcode: u32, unique: u64, nodeid: u64, uid: u32, gid: u32,
        pid: u32, total_extlen: u16, padding: u16 }
    /// `struct fuse_out_header`: every reply starts with it.
    OutHeader = fuse_out_header { len: u32, error: i32, unique: u64 }
    /// `struct fuse_init_in`.
    InitIn = fuse_init_in { major: u32, minor: u32, max_readahead: u32, flags: u32, flags2: u32,
        unused: [u32; 11] }
    /// `struct fuse_init_out` (7.43 and later: 64 bytes).
    InitOut = fuse_init_out { major: u32, minor: u32, max_readahead: u32, flags: u32,
        max_background: u16, congestion_threshold: u16, max_write: u32, time_gran: u32,
        max_pages: u16, map_alignment: u16, flags2: u32, max_stack_depth: u32, request_timeout: u16,
        unused: [u16; 11] }
    /// `struct fuse_attr`.
    Attr = fuse_attr { ino: u64, size: u64, blocks: u64, atime: u64, mtime: u64, ctime: u64,
        atimensec: u32, mtimensec: u32, ctimensec: u32, mode: u32, nlink: u32, uid: u32, gid: u32,
        rdev: u32, blksize: u32, flags: u32 }
    /// `struct fuse_entry_out`.
    EntryOut = fuse_entry_out { nodeid: u64, generation: u64, entry_valid: u64, attr_valid: u64,
        entry_valid_nsec: u32, attr_valid_nsec: u32, attr: Attr }
    /// `struct fuse_attr_out`.
    AttrOut = fuse_attr_out { attr_valid: u64, attr_valid_nsec: u32, dummy: u32, attr: Attr }
    /// `struct fuse_forget_in`.
    ForgetIn = fuse_forget_in { nlookup: u64 }
    /// `struct fuse_forget_one`.
    ForgetOne = fuse_forget_one { nodeid: u64, nlookup: u64 }
    /// `struct fuse_batch_forget_in`.
    BatchForgetIn = fuse_batch_forget_in { count: u32, dummy: u32 }
    /// `struct fuse_getattr_in`.
    GetattrIn = fuse_getattr_in { getattr_flags: u32, dummy: u32, fh: u64 }
    /// `struct fuse_setattr_in`.
    SetattrIn = fuse_setattr_in { valid: u32, padding: u32, fh: u64, size: u64, lock_owner: u64,
        atime: u64, mtime: u64, ctime: u64, atimensec: u32, mtimensec: u32, ctimensec: u32,
        mode: u32, unused4: u32, uid: u32, gid: u32, unused5: u32 }
    /// `struct fuse_mknod_in`.
    MknodIn = fuse_mknod_in { mode: u32, rdev: u32, umask: u32, padding: u32 }
    /// `struct fuse_mkdir_in`.
    MkdirIn = fuse_mkdir_in { mode: u32, umask: u32 }
    /// `struct fuse_rename_in`.
    RenameIn = fuse_rename_in { newdir: u64 }
    /// `struct fuse_rename2_in`.
    Rename2In = fuse_rename2_in { newdir: u64, flags: u32, padding: u32 }
    /// `struct fuse_link_in`.
    LinkIn = fuse_link_in { oldnodeid: u64 }
    /// `struct fuse_open_in`.
    OpenIn = fuse_open_in { flags: u32, open_flags: u32 }
    /// `struct fuse_create_in`.
    CreateIn = fuse_create_in { flags: u32, mode: u32, umask: u32, open_flags: u32 }
    /// `struct fuse_open_out`.
    OpenOut = fuse_open_out { fh: u64, open_flags: u32, backing_id: i32 }
    /// `struct fuse_release_in`.
    ReleaseIn = fuse_release_in { fh: u64, flags: u32, release_flags: u32, lock_owner: u64 }
    /// `struct fuse_flush_in`.
    FlushIn = fuse_flush_in { fh: u64, unused: u32, padding: u32, lock_owner: u64 }
    /// `struct fuse_read_in`.
    ReadIn = fuse_read_in { fh: u64, offset: u64, size: u32, read_flags: u32, lock_owner: u64,
        flags: u32, padding: u32 }
    /// `struct fuse_write_in`.
    WriteIn = fuse_write_in { fh: u64, offset: u64, size: u32, write_flags: u32, lock_owner: u64,
        flags: u32, padding: u32 }
    /// `struct fuse_write_out`.
    WriteOut = fuse_write_out { size: u32, padding: u32 }
    /// `struct fuse_kstatfs`.
    Kstatfs = fuse_kstatfs { blocks: u64, bfree: u64, bavail: u64, files: u64, ffree: u64,
        bsize: u32, namelen: u32, frsize: u32, padding: u32, spare: [u32; 6] }
    /// `struct fuse_fsync_in`.
    FsyncIn = fuse_fsync_in { fh: u64, fsync_flags: u32, padding: u32 }
    /// `struct fuse_setxattr_in` (without `FUSE_SETXATTR_EXT`).
    SetxattrIn = fuse_setxattr_in { size: u32, flags: u32 }
    /// `struct fuse_setxattr_in` with `FUSE_SETXATTR_EXT`.
    SetxattrInExt = fuse_setxattr_in { size: u32, flags: u32, setxattr_flags: u32, padding: u32 }
    /// `struct fuse_ext_header`: one record of a request's extensions.
    ExtHeader = fuse_ext_header { size: u32, typ: u32 }
    /// `struct fuse_secctx`: one security context (its name and value follow).
    Secctx = fuse_secctx { size: u32, padding: u32 }
    /// `struct fuse_getxattr_in`.
    GetxattrIn = fuse_getxattr_in { size: u32, padding: u32 }
    /// `struct fuse_getxattr_out`.
    GetxattrOut = fuse_getxattr_out { size: u32, padding: u32 }
    /// `struct fuse_access_in`.
    AccessIn = fuse_access_in { mask: u32, padding: u32 }
    /// `struct fuse_interrupt_in`.
    InterruptIn = fuse_interrupt_in { unique: u64 }
    /// `struct fuse_fallocate_in`.
    FallocateIn = fuse_fallocate_in { fh: u64, offset: u64, length: u64, mode: u32, padding: u32 }
    /// `struct fuse_lseek_in`.
    LseekIn = fuse_lseek_in { fh: u64, offset: u64, whence: u32, padding: u32 }
    /// `struct fuse_lseek_out`.
    LseekOut = fuse_lseek_out { offset: u64 }
    /// `struct fuse_copy_file_range_in`.
    CopyFileRangeIn = fuse_copy_file_range_in { fh_in: u64, off_in: u64, nodeid_out: u64,
        fh_out: u64, off_out: u64, len: u64, flags: u64 }
    /// `struct fuse_file_lock`.
    FileLock = fuse_file_lock { start: u64, end: u64, typ: u32, pid: u32 }
    /// `struct fuse_lk_in` (`GETLK`, `SETLK`, `SETLKW`).
    LkIn = fuse_lk_in { fh: u64, owner: u64, lk: FileLock, lk_flags: u32, padding: u32 }
    /// `struct fuse_lk_out`.
    LkOut = fuse_lk_out { lk: FileLock }
    /// `struct fuse_statx_in`.
    StatxIn = fuse_statx_in { getattr_flags: u32, reserved: u32, fh: u64, sx_flags: u32,
        sx_mask: u32 }
    /// `struct fuse_sx_time`.
    SxTime = fuse_sx_time { tv_sec: i64, tv_nsec: u32, reserved: i32 }
    /// `struct fuse_statx` (the layout of `struct statx`).
    Statx = fuse_statx { mask: u32, blksize: u32, attributes: u64, nlink: u32, uid: u32, gid: u32,
        mode: u16, spare0: u16, ino: u64, size: u64, blocks: u64, attributes_mask: u64,
        atime: SxTime, btime: SxTime, ctime: SxTime, mtime: SxTime, rdev_major: u32,
        rdev_minor: u32, dev_major: u32, dev_minor: u32, spare2: [u64; 14] }
    /// `struct fuse_statx_out`.
    StatxOut = fuse_statx_out { attr_valid: u64, attr_valid_nsec: u32, flags: u32, spare: [u64; 2],
        stat: Statx }
    /// `struct fuse_dirent` without its name.
    Dirent = fuse_dirent { ino: u64, off: u64, namelen: u32, typ: u32 }
    /// `struct fuse_notify_inval_inode_out`.
    NotifyInvalInodeOut = fuse_notify_inval_inode_out { ino: u64, off: i64, len: i64 }
    /// `struct fuse_backing_map` (`FUSE_DEV_IOC_BACKING_OPEN`).
    BackingMap = fuse_backing_map { fd: i32, flags: u32, padding: u64 }
    /// `struct fuse_uring_ent_in_out`.
    UringEntInOut = fuse_uring_ent_in_out { flags: u64, commit_id: u64, payload_sz: u32,
        padding: u32, reserved: u64 }
    /// `struct fuse_uring_cmd_req`: the command area of a `FUSE_IO_URING_CMD_*` SQE.
    UringCmdReq = fuse_uring_cmd_req { flags: u64, commit_id: u64, qid: u16, padding: [u8; 6] }
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
