//! `NBD_E*`: the error values of replies, as a type.

use std::fmt;

/// An NBD error value (`NBD_E*`), as carried by a simple reply's error field or an error
/// chunk. Never zero: success is the absence of an `Errno`.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Errno(u32);

impl Errno {
    /// `NBD_EPERM`: operation not permitted (a write to a read-only export).
    pub const EPERM: Errno = Errno(1);
    /// `NBD_EIO`: input/output error.
    pub const EIO: Errno = Errno(5);
    /// `NBD_ENOMEM`: out of memory.
    pub const ENOMEM: Errno = Errno(12);
    /// `NBD_EINVAL`: invalid request.
    pub const EINVAL: Errno = Errno(22);
    /// `NBD_ENOSPC`: no space left (or past the end of the export, for writes).
    pub const ENOSPC: Errno = Errno(28);
    /// `NBD_EOVERFLOW`: the request is too large for the reply.
    pub const EOVERFLOW: Errno = Errno(75);
    /// `NBD_ENOTSUP`: not supported (a `FAST_ZERO` write that would not be fast).
    pub const ENOTSUP: Errno = Errno(95);
    /// `NBD_ESHUTDOWN`: the server is shutting down.
    pub const ESHUTDOWN: Errno = Errno(108);

    /// The error a peer sent: `None` for zero (success).
    pub const fn from_raw(raw: u32) -> Option<Errno> {
        if raw == 0 {
            None
        } else {
            Some(Errno(raw))
        }
    }

    /// The value on the wire.
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// The NBD error for a Linux `errno`, as the protocol's error section asks: quota and
    /// size limits become `NBD_ENOSPC`, a read-only file `NBD_EPERM`, anything unknown
    /// `NBD_EIO`.
    pub fn from_os(os: i32) -> Errno {
        match os {
            libc::EPERM | libc::EACCES | libc::EROFS => Errno::EPERM,
            libc::ENOMEM => Errno::ENOMEM,
            libc::EINVAL => Errno::EINVAL,
            libc::ENOSPC | libc::EDQUOT | libc::EFBIG => Errno::ENOSPC,
            libc::EOVERFLOW => Errno::EOVERFLOW,
            libc::ESHUTDOWN => Errno::ESHUTDOWN,
            _ => Errno::EIO,
        }
    }

    /// The NBD error for an I/O error (`NBD_EIO` when it carries no `errno`).
    pub fn from_io(e: &std::io::Error) -> Errno {
        Errno::from_os(e.raw_os_error().unwrap_or(libc::EIO))
    }

    /// The protocol's name ("NBD_EINVAL"), or "NBD_E?" for a value it does not define.
    pub fn name(self) -> &'static str {
        match self {
            Errno::EPERM => "NBD_EPERM",
            Errno::EIO => "NBD_EIO",
            Errno::ENOMEM => "NBD_ENOMEM",
            Errno::EINVAL => "NBD_EINVAL",
            Errno::ENOSPC => "NBD_ENOSPC",
            Errno::EOVERFLOW => "NBD_EOVERFLOW",
            Errno::ENOTSUP => "NBD_ENOTSUP",
            Errno::ESHUTDOWN => "NBD_ESHUTDOWN",
            _ => "NBD_E?",
        }
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_map_as_the_protocol_asks() {
        assert_eq!(Errno::from_os(libc::EDQUOT), Errno::ENOSPC);
        assert_eq!(Errno::from_os(libc::EFBIG), Errno::ENOSPC);
        assert_eq!(Errno::from_os(libc::EROFS), Errno::EPERM);
        assert_eq!(Errno::from_os(libc::EBADF), Errno::EIO);
        assert_eq!(Errno::from_os(libc::EOPNOTSUPP), Errno::EIO);
        assert_eq!(Errno::from_raw(0), None);
        assert_eq!(Errno::from_raw(22), Some(Errno::EINVAL));
        assert_eq!(Errno::EINVAL.to_string(), "NBD_EINVAL(22)");
    }
}
