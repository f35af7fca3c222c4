//! The crate's one error type; [`Malformed`], the reasons a peer's bytes are refused, lives
//! with the decoders in [`proto`](crate::proto).

use std::io;
use std::path::PathBuf;

pub use crate::proto::Malformed;

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
    /// The file starts like a disk-image container (qcow2, VMDK...) and was not declared raw
    /// ([`image_format`](crate::image_format)); the text says which and what to do.
    #[error("{0}")]
    ImageFormat(String),
    /// Another process holds the image under qemu's locks in a way this server cannot share
    /// ([`image_lock`](crate::image_lock)); the text says who might and what to do.
    #[error("{0}")]
    ImageInUse(String),
    /// qemu's image locks could not be taken or tested.
    #[error("{path}: image locks: {source}", path = path.display())]
    Lock {
        /// The image.
        path: PathBuf,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
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

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
