//! Flags of the FUSE ABI: `FUSE_INIT`'s capabilities, the flags of open replies, `SETATTR`'s
//! valid bits, `WRITE`'s flags, and the single-bit flags of a few request structs.

use super::InitIn;

bitflags::bitflags! {
    /// `FUSE_INIT` flags (`flags` holds bits 0-31, `flags2` bits 32-63).
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
    pub struct InitFlags: u64 {
        /// Reads may be sent asynchronously, several at a time (`FUSE_ASYNC_READ`).
        const ASYNC_READ = 1 << 0;
        /// The server serves POSIX record locks (`FUSE_POSIX_LOCKS`).
        const POSIX_LOCKS = 1 << 1;
        /// `O_TRUNC` is handled in `OPEN` rather than by a `SETATTR` (`FUSE_ATOMIC_O_TRUNC`).
        const ATOMIC_O_TRUNC = 1 << 3;
        /// The server looks up `.` and `..`, so the mount can be exported (`FUSE_EXPORT_SUPPORT`).
        const EXPORT_SUPPORT = 1 << 4;
        /// Writes may be larger than a page (`FUSE_BIG_WRITES`).
        const BIG_WRITES = 1 << 5;
        /// The kernel does not apply the umask to creates; the server does (`FUSE_DONT_MASK`).
        const DONT_MASK = 1 << 6;
        /// The server serves `flock(2)` locks (`FUSE_FLOCK_LOCKS`).
        const FLOCK_LOCKS = 1 << 10;
        /// Cached data is dropped when the file's mtime or size changes (`FUSE_AUTO_INVAL_DATA`).
        const AUTO_INVAL_DATA = 1 << 12;
        /// The server answers `READDIRPLUS` (`FUSE_DO_READDIRPLUS`).
        const DO_READDIRPLUS = 1 << 13;
        /// The kernel picks `READDIR` or `READDIRPLUS` adaptively (`FUSE_READDIRPLUS_AUTO`).
        const READDIRPLUS_AUTO = 1 << 14;
        /// Direct I/O requests may be split and sent asynchronously (`FUSE_ASYNC_DIO`).
        const ASYNC_DIO = 1 << 15;
        /// The kernel caches writes and sends them later (`FUSE_WRITEBACK_CACHE`).
        const WRITEBACK_CACHE = 1 << 16;
        /// Lookups and readdirs in one directory may run in parallel (`FUSE_PARALLEL_DIROPS`).
        const PARALLEL_DIROPS = 1 << 18;
        /// The server clears setuid/setgid on write, truncate and chown (`FUSE_HANDLE_KILLPRIV`).
        const HANDLE_KILLPRIV = 1 << 19;
        /// The kernel enforces POSIX ACLs (`FUSE_POSIX_ACL`; implies `default_permissions`).
        const POSIX_ACL = 1 << 20;
        /// Reads of an aborted connection fail with `ECONNABORTED` (`FUSE_ABORT_ERROR`).
        const ABORT_ERROR = 1 << 21;
        /// `fuse_init_out.max_pages` is valid (`FUSE_MAX_PAGES`).
        const MAX_PAGES = 1 << 22;
        /// The kernel caches symlink targets (`FUSE_CACHE_SYMLINKS`).
        const CACHE_SYMLINKS = 1 << 23;
        /// The server clears setuid/setgid as each request asks (`FUSE_HANDLE_KILLPRIV_V2`).
        const HANDLE_KILLPRIV_V2 = 1 << 28;
        /// `fuse_setxattr_in` carries `setxattr_flags` (`FUSE_SETXATTR_ACL_KILL_SGID`).
        const SETXATTR_EXT = 1 << 29;
        /// `fuse_init_in.flags2` and `fuse_init_out.flags2` are valid (`FUSE_INIT_EXT`).
        const INIT_EXT = 1 << 30;
        /// Security labels (LSM contexts) come with the requests that create inodes.
        const SECURITY_CTX = 1 << 32;
        /// The caller's supplementary group matching the parent comes with creates.
        const CREATE_SUPP_GROUP = 1 << 34;
        /// Shared `mmap` is allowed on `FOPEN_DIRECT_IO` files (`FUSE_DIRECT_IO_ALLOW_MMAP`).
        const DIRECT_IO_ALLOW_MMAP = 1 << 36;
        /// Opens may pass reads and writes to a backing file in the kernel (`FUSE_PASSTHROUGH`).
        const PASSTHROUGH = 1 << 37;
        /// The kernel refuses to export the mount (`FUSE_NO_EXPORT_SUPPORT`).
        const NO_EXPORT_SUPPORT = 1 << 38;
        /// Idmapped mounts of this file system may be made.
        const ALLOW_IDMAP = 1 << 40;
        /// Requests may be served through io_uring (`FUSE_OVER_IO_URING`).
        const OVER_IO_URING = 1 << 41;
        /// The kernel aborts the connection when a request waits longer than
        /// `fuse_init_out.request_timeout` seconds.
        const REQUEST_TIMEOUT = 1 << 42;
    }
}

impl InitFlags {
    /// The flags the kernel offers in `init` (`flags`, and `flags2` above bit 31 when
    /// `FUSE_INIT_EXT` is set).
    pub fn offered(init: &InitIn) -> InitFlags {
        let mut kernel = InitFlags::from_bits_retain(init.flags as u64);
        if kernel.contains(InitFlags::INIT_EXT) {
            kernel |= InitFlags::from_bits_retain((init.flags2 as u64) << 32);
        }
        kernel
    }
}

bitflags::bitflags! {
    /// Flags of an `OPEN`/`CREATE` reply (`FOPEN_*`).
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
    pub struct FopenFlags: u32 {
        /// Bypass the page cache for this open (`FOPEN_DIRECT_IO`).
        const DIRECT_IO = 1 << 0;
        /// Keep the file's cached pages at open (`FOPEN_KEEP_CACHE`).
        const KEEP_CACHE = 1 << 1;
        /// Send no `FLUSH` at close (`FOPEN_NOFLUSH`).
        const NOFLUSH = 1 << 5;
        /// Direct writes to this open may run in parallel (`FOPEN_PARALLEL_DIRECT_WRITES`).
        const PARALLEL_DIRECT_WRITES = 1 << 6;
        /// Reads and writes go to the backing file named by `backing_id` (`FOPEN_PASSTHROUGH`).
        const PASSTHROUGH = 1 << 7;
    }
}

bitflags::bitflags! {
    /// `fuse_setattr_in.valid` bits (`FATTR_*`).
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
    pub struct FattrFlags: u32 {
        /// `mode` is set (`FATTR_MODE`).
        const MODE = 1 << 0;
        /// `uid` is set (`FATTR_UID`).
        const UID = 1 << 1;
        /// `gid` is set (`FATTR_GID`).
        const GID = 1 << 2;
        /// `size` is set: truncate (`FATTR_SIZE`).
        const SIZE = 1 << 3;
        /// `atime` is set (`FATTR_ATIME`).
        const ATIME = 1 << 4;
        /// `mtime` is set (`FATTR_MTIME`).
        const MTIME = 1 << 5;
        /// `fh` names the open file (`FATTR_FH`).
        const FH = 1 << 6;
        /// Set the access time to now (`FATTR_ATIME_NOW`).
        const ATIME_NOW = 1 << 7;
        /// Set the modification time to now (`FATTR_MTIME_NOW`).
        const MTIME_NOW = 1 << 8;
        /// `lock_owner` is set (`FATTR_LOCKOWNER`).
        const LOCKOWNER = 1 << 9;
        /// `ctime` is set (`FATTR_CTIME`).
        const CTIME = 1 << 10;
        /// Clear setuid, and setgid when group-executable (`FATTR_KILL_SUIDGID`).
        const KILL_SUIDGID = 1 << 11;
    }
}

bitflags::bitflags! {
    /// `fuse_write_in.write_flags` bits (`FUSE_WRITE_*`).
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
    pub struct WriteFlags: u32 {
        /// The write comes from the page cache (delayed write-back; `FUSE_WRITE_CACHE`).
        const CACHE = 1 << 0;
        /// `lock_owner` is set (`FUSE_WRITE_LOCKOWNER`).
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
