//! The crate's one error type, and [`Malformed`], the reasons a peer's bytes are refused.

use std::io;
use std::path::PathBuf;

/// Errors of the NBD server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The backing file could not be opened or inspected.
    #[error(transparent)]
    File(#[from] vecio::Error),
    /// The backing file's size could not be read.
    #[error("{path}: cannot read the size: {source}", path = path.display())]
    Size {
        /// The file.
        path: PathBuf,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
    /// The directory of an [`ExportDir`](crate::ExportDir) could not be opened or read.
    #[error("{path}: {source}", path = path.display())]
    Dir {
        /// The directory.
        path: PathBuf,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
    /// A listening socket could not be set up.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The socket path or address.
        addr: String,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
    /// A Unix socket path is taken by a live server.
    #[error("{path}: already in use", path = path.display())]
    SocketInUse {
        /// The socket path.
        path: PathBuf,
    },
    /// A Unix socket path names something that is not a socket (a file, a directory...),
    /// which the server will not replace.
    #[error("{path}: exists and is not a socket", path = path.display())]
    NotASocket {
        /// The path given for the socket.
        path: PathBuf,
    },
    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Socket I/O with a client failed.
    #[error("connection {conn}: {source}")]
    Socket {
        /// The connection's number.
        conn: u64,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
    /// The client broke the protocol (the connection is dropped).
    #[error("connection {conn}: protocol violation: {reason}")]
    Protocol {
        /// The connection's number.
        conn: u64,
        /// What was wrong.
        reason: Malformed,
    },
    /// The final flush at shutdown failed.
    #[error("{path}: final flush failed: {source}", path = path.display())]
    Flush {
        /// The file.
        path: PathBuf,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
    /// A thread could not be started.
    #[error("cannot start a thread: {0}")]
    Thread(#[source] io::Error),
}

/// Why bytes from a client were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// An option did not start with `IHAVEOPT`.
    #[error("option magic {0:#x} is not IHAVEOPT")]
    OptionMagic(u64),
    /// A request did not start with `NBD_REQUEST_MAGIC`.
    #[error("request magic {0:#x} is not NBD_REQUEST_MAGIC")]
    RequestMagic(u32),
    /// The client set flags the server does not know.
    #[error("unknown client flags {0:#x}")]
    ClientFlags(u32),
    /// Option data ended before a field it announced.
    #[error("option data ends early")]
    Truncated,
    /// Option data went on after its last field.
    #[error("option data has trailing bytes")]
    TrailingBytes,
    /// A string longer than the protocol's 4096 bytes.
    #[error("string of {0} bytes (at most 4096)")]
    StringTooLong(u32),
    /// A string that is not UTF-8.
    #[error("string is not UTF-8")]
    NotUtf8,
    /// A string with a NUL character.
    #[error("string contains NUL")]
    Nul,
    /// More metadata queries than the server takes in one option.
    #[error("{0} metadata queries")]
    TooManyQueries(u32),
    /// A request's payload is longer than the server takes (extended headers: the protocol
    /// lets the server disconnect rather than read it).
    #[error("request payload of {0} bytes (at most 32 MiB)")]
    PayloadTooLong(u64),
    /// The peer closed the connection in the middle of a message.
    #[error("connection closed mid-message")]
    Eof,
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
