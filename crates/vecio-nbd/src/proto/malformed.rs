//! Why bytes from a peer were refused: what every decoder of [`proto`](super) returns instead
//! of a value.

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
