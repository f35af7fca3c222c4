//! Request opcodes (`enum fuse_opcode`): each name and number is written once, in the list at
//! the end; `opcodes!` makes the enum and its conversion from the kernel's `u32` out of it.

/// Declares [`Opcode`] from a list of `Name = number` with a doc line each, and the conversions
/// from the raw number ([`Opcode::from_raw`], `TryFrom<u32>`), so no number is spelled twice.
macro_rules! opcodes {
    ($($(#[doc = $doc:literal])+ $name:ident = $n:literal => $kernel:literal,)+) => {
        /// Request opcodes (`enum fuse_opcode`), typed: a request whose opcode vecio does not
        /// know is answered `ENOSYS` before any operation sees it.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum Opcode {
            $($(#[doc = $doc])+ $name = $n,)+
        }

        impl Opcode {
            /// The opcode numbered `n` by the kernel, if vecio knows it.
            pub fn from_raw(n: u32) -> Option<Opcode> {
                match n {
                    $($n => Some(Opcode::$name),)+
                    _ => None,
                }
            }

            /// The kernel's name without `FUSE_` (`LOOKUP`, `BATCH_FORGET`), for counts
            /// and logs.
            pub fn name(self) -> &'static str {
                match self {
                    $(Opcode::$name => $kernel,)+
                }
            }
        }
    };
}

impl TryFrom<u32> for Opcode {
    /// The number itself, when vecio does not know it.
    type Error = u32;

    fn try_from(n: u32) -> Result<Opcode, u32> {
        Opcode::from_raw(n).ok_or(n)
    }
}

opcodes! {
    /// `FUSE_LOOKUP`: a name in a directory.
    Lookup = 1 => "LOOKUP",
    /// `FUSE_FORGET`: the kernel drops lookups of a node (no reply).
    Forget = 2 => "FORGET",
    /// `FUSE_GETATTR`: a node's attributes.
    Getattr = 3 => "GETATTR",
    /// `FUSE_SETATTR`: change mode, owner, size or times.
    Setattr = 4 => "SETATTR",
    /// `FUSE_READLINK`: a symlink's target.
    Readlink = 5 => "READLINK",
    /// `FUSE_SYMLINK`: make a symlink.
    Symlink = 6 => "SYMLINK",
    /// `FUSE_MKNOD`: make a file, device, FIFO or socket.
    Mknod = 8 => "MKNOD",
    /// `FUSE_MKDIR`: make a directory.
    Mkdir = 9 => "MKDIR",
    /// `FUSE_UNLINK`: remove a name that is not a directory.
    Unlink = 10 => "UNLINK",
    /// `FUSE_RMDIR`: remove a directory.
    Rmdir = 11 => "RMDIR",
    /// `FUSE_RENAME`: rename, without flags.
    Rename = 12 => "RENAME",
    /// `FUSE_LINK`: a new hard link.
    Link = 13 => "LINK",
    /// `FUSE_OPEN`: open a file.
    Open = 14 => "OPEN",
    /// `FUSE_READ`: read from an open file.
    Read = 15 => "READ",
    /// `FUSE_WRITE`: write to an open file.
    Write = 16 => "WRITE",
    /// `FUSE_STATFS`: the file system's counts.
    Statfs = 17 => "STATFS",
    /// `FUSE_RELEASE`: the last close of an open file.
    Release = 18 => "RELEASE",
    /// `FUSE_FSYNC`: flush a file to stable storage.
    Fsync = 20 => "FSYNC",
    /// `FUSE_SETXATTR`: set an extended attribute.
    Setxattr = 21 => "SETXATTR",
    /// `FUSE_GETXATTR`: read an extended attribute.
    Getxattr = 22 => "GETXATTR",
    /// `FUSE_LISTXATTR`: list extended attribute names.
    Listxattr = 23 => "LISTXATTR",
    /// `FUSE_REMOVEXATTR`: remove an extended attribute.
    Removexattr = 24 => "REMOVEXATTR",
    /// `FUSE_FLUSH`: a `close` of an open file (one of possibly many).
    Flush = 25 => "FLUSH",
    /// `FUSE_INIT`: the connection's first request, the protocol's agreement.
    Init = 26 => "INIT",
    /// `FUSE_OPENDIR`: open a directory.
    Opendir = 27 => "OPENDIR",
    /// `FUSE_READDIR`: directory entries.
    Readdir = 28 => "READDIR",
    /// `FUSE_RELEASEDIR`: the last close of an open directory.
    Releasedir = 29 => "RELEASEDIR",
    /// `FUSE_FSYNCDIR`: flush a directory.
    Fsyncdir = 30 => "FSYNCDIR",
    /// `FUSE_GETLK`: test for a conflicting lock.
    Getlk = 31 => "GETLK",
    /// `FUSE_SETLK`: take or drop a lock, without waiting.
    Setlk = 32 => "SETLK",
    /// `FUSE_SETLKW`: take a lock, waiting for it.
    Setlkw = 33 => "SETLKW",
    /// `FUSE_ACCESS`: check access (`access(2)`).
    Access = 34 => "ACCESS",
    /// `FUSE_CREATE`: make and open a file.
    Create = 35 => "CREATE",
    /// `FUSE_INTERRUPT`: the caller of an earlier request got a signal (no reply).
    Interrupt = 36 => "INTERRUPT",
    /// `FUSE_BMAP`: a block's place on a block device (fuseblk only).
    Bmap = 37 => "BMAP",
    /// `FUSE_DESTROY`: the connection ends.
    Destroy = 38 => "DESTROY",
    /// `FUSE_IOCTL`: an `ioctl` on an open file.
    Ioctl = 39 => "IOCTL",
    /// `FUSE_POLL`: poll an open file.
    Poll = 40 => "POLL",
    /// `FUSE_NOTIFY_REPLY`: the answer to a retrieve notification.
    NotifyReply = 41 => "NOTIFY_REPLY",
    /// `FUSE_BATCH_FORGET`: many forgets at once (no reply).
    BatchForget = 42 => "BATCH_FORGET",
    /// `FUSE_FALLOCATE`: allocate or punch space.
    Fallocate = 43 => "FALLOCATE",
    /// `FUSE_READDIRPLUS`: directory entries with their attributes (lookups).
    Readdirplus = 44 => "READDIRPLUS",
    /// `FUSE_RENAME2`: rename with `RENAME_*` flags.
    Rename2 = 45 => "RENAME2",
    /// `FUSE_LSEEK`: `SEEK_DATA` and `SEEK_HOLE`.
    Lseek = 46 => "LSEEK",
    /// `FUSE_COPY_FILE_RANGE`: copy between two open files.
    CopyFileRange = 47 => "COPY_FILE_RANGE",
    /// `FUSE_SYNCFS`: flush the whole file system.
    Syncfs = 50 => "SYNCFS",
    /// `FUSE_TMPFILE`: make an unnamed file (`O_TMPFILE`).
    Tmpfile = 51 => "TMPFILE",
    /// `FUSE_STATX`: extended attributes of a node (`statx(2)`).
    Statx = 52 => "STATX",
}

#[cfg(test)]
mod tests {
    use super::Opcode;

    #[test]
    fn numbers_convert_both_ways() {
        for n in 0..64u32 {
            match Opcode::try_from(n) {
                Ok(op) => assert_eq!(op as u32, n),
                Err(back) => assert_eq!(back, n),
            }
        }
        assert_eq!(Opcode::from_raw(15), Some(Opcode::Read));
        assert_eq!(Opcode::from_raw(7), None);
        assert_eq!(Opcode::from_raw(49), None);
        assert_eq!(Opcode::BatchForget.name(), "BATCH_FORGET");
    }
}
