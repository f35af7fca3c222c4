//! Request opcodes (`enum fuse_opcode`): each name and number is written once, in the list at
//! the end; `opcodes!` makes the enum and its conversion from the kernel's `u32` out of it.

/// Declares [`Opcode`] from a list of `Name = number` with a doc line each, and the conversions
/// from the raw number ([`Opcode::from_raw`], `TryFrom<u32>`), so no number is spelled twice.
macro_rules! opcodes {
    ($($(#[doc = $doc:literal])+ $name:ident = $n:literal,)+) => {
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
    Lookup = 1,
    /// `FUSE_FORGET`: the kernel drops lookups of a node (no reply).
    Forget = 2,
    /// `FUSE_GETATTR`: a node's attributes.
    Getattr = 3,
    /// `FUSE_SETATTR`: change mode, owner, size or times.
    Setattr = 4,
    /// `FUSE_READLINK`: a symlink's target.
    Readlink = 5,
    /// `FUSE_SYMLINK`: make a symlink.
    Symlink = 6,
    /// `FUSE_MKNOD`: make a file, device, FIFO or socket.
    Mknod = 8,
    /// `FUSE_MKDIR`: make a directory.
    Mkdir = 9,
    /// `FUSE_UNLINK`: remove a name that is not a directory.
    Unlink = 10,
    /// `FUSE_RMDIR`: remove a directory.
    Rmdir = 11,
    /// `FUSE_RENAME`: rename, without flags.
    Rename = 12,
    /// `FUSE_LINK`: a new hard link.
    Link = 13,
    /// `FUSE_OPEN`: open a file.
    Open = 14,
    /// `FUSE_READ`: read from an open file.
    Read = 15,
    /// `FUSE_WRITE`: write to an open file.
    Write = 16,
    /// `FUSE_STATFS`: the file system's counts.
    Statfs = 17,
    /// `FUSE_RELEASE`: the last close of an open file.
    Release = 18,
    /// `FUSE_FSYNC`: flush a file to stable storage.
    Fsync = 20,
    /// `FUSE_SETXATTR`: set an extended attribute.
    Setxattr = 21,
    /// `FUSE_GETXATTR`: read an extended attribute.
    Getxattr = 22,
    /// `FUSE_LISTXATTR`: list extended attribute names.
    Listxattr = 23,
    /// `FUSE_REMOVEXATTR`: remove an extended attribute.
    Removexattr = 24,
    /// `FUSE_FLUSH`: a `close` of an open file (one of possibly many).
    Flush = 25,
    /// `FUSE_INIT`: the connection's first request, the protocol's agreement.
    Init = 26,
    /// `FUSE_OPENDIR`: open a directory.
    Opendir = 27,
    /// `FUSE_READDIR`: directory entries.
    Readdir = 28,
    /// `FUSE_RELEASEDIR`: the last close of an open directory.
    Releasedir = 29,
    /// `FUSE_FSYNCDIR`: flush a directory.
    Fsyncdir = 30,
    /// `FUSE_GETLK`: test for a conflicting lock.
    Getlk = 31,
    /// `FUSE_SETLK`: take or drop a lock, without waiting.
    Setlk = 32,
    /// `FUSE_SETLKW`: take a lock, waiting for it.
    Setlkw = 33,
    /// `FUSE_ACCESS`: check access (`access(2)`).
    Access = 34,
    /// `FUSE_CREATE`: make and open a file.
    Create = 35,
    /// `FUSE_INTERRUPT`: the caller of an earlier request got a signal (no reply).
    Interrupt = 36,
    /// `FUSE_BMAP`: a block's place on a block device (fuseblk only).
    Bmap = 37,
    /// `FUSE_DESTROY`: the connection ends.
    Destroy = 38,
    /// `FUSE_IOCTL`: an `ioctl` on an open file.
    Ioctl = 39,
    /// `FUSE_POLL`: poll an open file.
    Poll = 40,
    /// `FUSE_NOTIFY_REPLY`: the answer to a retrieve notification.
    NotifyReply = 41,
    /// `FUSE_BATCH_FORGET`: many forgets at once (no reply).
    BatchForget = 42,
    /// `FUSE_FALLOCATE`: allocate or punch space.
    Fallocate = 43,
    /// `FUSE_READDIRPLUS`: directory entries with their attributes (lookups).
    Readdirplus = 44,
    /// `FUSE_RENAME2`: rename with `RENAME_*` flags.
    Rename2 = 45,
    /// `FUSE_LSEEK`: `SEEK_DATA` and `SEEK_HOLE`.
    Lseek = 46,
    /// `FUSE_COPY_FILE_RANGE`: copy between two open files.
    CopyFileRange = 47,
    /// `FUSE_SYNCFS`: flush the whole file system.
    Syncfs = 50,
    /// `FUSE_TMPFILE`: make an unnamed file (`O_TMPFILE`).
    Tmpfile = 51,
    /// `FUSE_STATX`: extended attributes of a node (`statx(2)`).
    Statx = 52,
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
    }
}
