//! Facts about the machine vecio runs on, shared by `vecio info` and the bench: the kernel, the
//! mounts and the filesystem and block device behind a path ([`system`], [`fs`]), the page
//! cache ([`pagecache`]), the NBD and FUSE peers installed on the host or in the trixie chroot
//! ([`peers`]), the plain-text tables both print ([`table`]), the sizes, counts and seconds
//! both take on their command lines ([`args`]), and X.509 certificates for TLS, which the
//! bench and the tests make with openssl ([`certs`]).

#![warn(missing_docs)]

pub mod args;
pub mod certs;
pub mod fs;
pub mod pagecache;
pub mod peers;
pub mod system;
pub mod table;

use std::io;

/// What went wrong, on what.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call failed; `what` names the call and its file.
    #[error("{what}")]
    Io {
        /// The call and the file, e.g. `opening /srv/disk.img`.
        what: String,
        /// The kernel's error.
        #[source]
        source: io::Error,
    },
    /// Anything else: a missing `/proc` field, a file too large to map.
    #[error("{0}")]
    Other(String),
}

/// A result of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Names the call that failed: `File::open(p).ctx(|| format!("opening {}", p.display()))`.
pub(crate) trait Context<T> {
    /// The error, with `what` said.
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: Into<io::Error>> Context<T> for std::result::Result<T, E> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::Io {
            what: what(),
            source: e.into(),
        })
    }
}
