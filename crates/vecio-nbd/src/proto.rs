//! The NBD wire format (the NBD project's `doc/proto.md`): magic numbers, option, reply,
//! command and flag values, and pure encode/decode functions. No I/O happens here; every
//! decoder takes bytes and returns a value or a [`Malformed`] reason, never panics.
//!
//! All integers on the wire are big-endian; the fixed-size parts of messages are zerocopy
//! structs (`wire.rs`). Commands are a [`Command`], errors an [`Errno`].
//!
//! Two framings of transmission: compact (28-byte requests; simple replies, or structured
//! ones after `NBD_OPT_STRUCTURED_REPLY`) and extended (after `NBD_OPT_EXTENDED_HEADERS`:
//! 32-byte requests and replies, 64-bit lengths), chosen per session ([`Framing`]).

use bitflags::bitflags;

/// `NBDMAGIC`, the first 8 bytes the server sends.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: the newstyle magic, sent by the server after `NBDMAGIC` and by the client
/// before every option.
pub const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
/// Magic of every option reply (fixed newstyle).
pub const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// `NBD_REQUEST_MAGIC`: the first 4 bytes of every transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// `NBD_SIMPLE_REPLY_MAGIC`.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// `NBD_STRUCTURED_REPLY_MAGIC`.
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;
/// `NBD_EXTENDED_REQUEST_MAGIC`: the first 4 bytes of every request once extended headers
/// are negotiated.
pub const EXTENDED_REQUEST_MAGIC: u32 = 0x21e4_1c71;
/// `NBD_EXTENDED_REPLY_MAGIC`: the first 4 bytes of every reply chunk once extended headers
/// are negotiated.
pub const EXTENDED_REPLY_MAGIC: u32 = 0x6e8a_278c;

/// Length of a compact transmission request header.
pub const REQUEST_LEN: usize = 28;
/// Length of an extended transmission request header.
pub const EXTENDED_REQUEST_LEN: usize = 32;
/// Length of an option header (magic, option, length).
pub const OPTION_HEADER_LEN: usize = 16;
/// Length of a simple reply header.
pub const SIMPLE_REPLY_LEN: usize = 16;
/// Length of a structured reply chunk header.
pub const STRUCTURED_HEADER_LEN: usize = 20;
/// Length of an extended reply chunk header.
pub const EXTENDED_HEADER_LEN: usize = 32;
/// Longest string the protocol allows (names, messages).
pub const MAX_STRING: usize = 4096;

bitflags! {
    /// Handshake flags, sent by the server after `IHAVEOPT`.
    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    pub struct HandshakeFlags: u16 {
        /// `NBD_FLAG_FIXED_NEWSTYLE`.
        const FIXED_NEWSTYLE = 1 << 0;
        /// `NBD_FLAG_NO_ZEROES`.
        const NO_ZEROES = 1 << 1;
    }

    /// Client flags, the client's answer to the handshake flags.
    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    pub struct ClientFlags: u32 {
        /// `NBD_FLAG_C_FIXED_NEWSTYLE`.
        const FIXED_NEWSTYLE = 1 << 0;
        /// `NBD_FLAG_C_NO_ZEROES`.
        const NO_ZEROES = 1 << 1;
    }

    /// Transmission flags: what the export can do, sent with its size.
    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    pub struct TransmissionFlags: u16 {
        /// `NBD_FLAG_HAS_FLAGS`: always set.
        const HAS_FLAGS = 1 << 0;
        /// `NBD_FLAG_READ_ONLY`.
        const READ_ONLY = 1 << 1;
        /// `NBD_FLAG_SEND_FLUSH`: `NBD_CMD_FLUSH` is understood.
        const SEND_FLUSH = 1 << 2;
        /// `NBD_FLAG_SEND_FUA`: `NBD_CMD_FLAG_FUA` is understood.
        const SEND_FUA = 1 << 3;
        /// `NBD_FLAG_ROTATIONAL`.
        const ROTATIONAL = 1 << 4;
        /// `NBD_FLAG_SEND_TRIM`: `NBD_CMD_TRIM` is understood.
        const SEND_TRIM = 1 << 5;
        /// `NBD_FLAG_SEND_WRITE_ZEROES`: `NBD_CMD_WRITE_ZEROES` and `NO_HOLE` are understood.
        const SEND_WRITE_ZEROES = 1 << 6;
        /// `NBD_FLAG_SEND_DF`: reads honour `NBD_CMD_FLAG_DF` (structured replies only).
        const SEND_DF = 1 << 7;
        /// `NBD_FLAG_CAN_MULTI_CONN`: flush and FUA are visible across connections.
        const CAN_MULTI_CONN = 1 << 8;
        /// `NBD_FLAG_SEND_CACHE`: `NBD_CMD_CACHE` is understood.
        const SEND_CACHE = 1 << 10;
        /// `NBD_FLAG_SEND_FAST_ZERO`: `NBD_CMD_FLAG_FAST_ZERO` is understood.
        const SEND_FAST_ZERO = 1 << 11;
        /// `NBD_FLAG_BLOCK_STATUS_PAYLOAD`: `NBD_CMD_BLOCK_STATUS` takes a payload that
        /// names the contexts to answer for (extended headers only).
        const BLOCK_STATUS_PAYLOAD = 1 << 12;
    }

    /// Command flags of a transmission request.
    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    pub struct CmdFlags: u16 {
        /// `NBD_CMD_FLAG_FUA`: reply only once the data is on stable storage.
        const FUA = 1 << 0;
        /// `NBD_CMD_FLAG_NO_HOLE`: write zeroes without punching a hole.
        const NO_HOLE = 1 << 1;
        /// `NBD_CMD_FLAG_DF`: at most one content chunk in the read reply.
        const DF = 1 << 2;
        /// `NBD_CMD_FLAG_REQ_ONE`: one extent per block-status chunk.
        const REQ_ONE = 1 << 3;
        /// `NBD_CMD_FLAG_FAST_ZERO`: fail with `NBD_ENOTSUP` unless zeroing is fast.
        const FAST_ZERO = 1 << 4;
        /// `NBD_CMD_FLAG_PAYLOAD_LEN`: the length is of a payload that follows the header
        /// (extended headers only; without it, the length is the command's effect length).
        const PAYLOAD_LEN = 1 << 5;
    }

    /// Flags of a structured reply chunk.
    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    pub struct ReplyFlags: u16 {
        /// `NBD_REPLY_FLAG_DONE`: the last chunk of the reply.
        const DONE = 1 << 0;
    }

    /// Status flags of the `base:allocation` metadata context.
    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    pub struct AllocFlags: u32 {
        /// `NBD_STATE_HOLE`: not allocated.
        const HOLE = 1 << 0;
        /// `NBD_STATE_ZERO`: reads as zeroes.
        const ZERO = 1 << 1;
    }
}

/// Option codes (`NBD_OPT_*`).
pub mod opt {
    /// `NBD_OPT_EXPORT_NAME`: choose an export and enter transmission (no error possible).
    pub const EXPORT_NAME: u32 = 1;
    /// `NBD_OPT_ABORT`: end negotiation.
    pub const ABORT: u32 = 2;
    /// `NBD_OPT_LIST`: list the exports.
    pub const LIST: u32 = 3;
    /// `NBD_OPT_STARTTLS`: upgrade to TLS.
    pub const STARTTLS: u32 = 5;
    /// `NBD_OPT_INFO`: describe an export.
    pub const INFO: u32 = 6;
    /// `NBD_OPT_GO`: describe an export and enter transmission.
    pub const GO: u32 = 7;
    /// `NBD_OPT_STRUCTURED_REPLY`: use structured replies.
    pub const STRUCTURED_REPLY: u32 = 8;
    /// `NBD_OPT_LIST_META_CONTEXT`: list metadata contexts.
    pub const LIST_META_CONTEXT: u32 = 9;
    /// `NBD_OPT_SET_META_CONTEXT`: select metadata contexts.
    pub const SET_META_CONTEXT: u32 = 10;
    /// `NBD_OPT_EXTENDED_HEADERS`: use 32-byte request and reply headers with 64-bit lengths.
    pub const EXTENDED_HEADERS: u32 = 11;
}

/// Option reply types (`NBD_REP_*`).
pub mod rep {
    /// `NBD_REP_ACK`.
    pub const ACK: u32 = 1;
    /// `NBD_REP_SERVER`: one export of a list.
    pub const SERVER: u32 = 2;
    /// `NBD_REP_INFO`: one piece of information about an export.
    pub const INFO: u32 = 3;
    /// `NBD_REP_META_CONTEXT`: one metadata context.
    pub const META_CONTEXT: u32 = 4;
    /// `NBD_REP_ERR_UNSUP`: unknown option.
    pub const ERR_UNSUP: u32 = (1 << 31) + 1;
    /// `NBD_REP_ERR_POLICY`: known option, forbidden by policy.
    pub const ERR_POLICY: u32 = (1 << 31) + 2;
    /// `NBD_REP_ERR_INVALID`: known option, invalid request.
    pub const ERR_INVALID: u32 = (1 << 31) + 3;
    /// `NBD_REP_ERR_PLATFORM`.
    pub const ERR_PLATFORM: u32 = (1 << 31) + 4;
    /// `NBD_REP_ERR_TLS_REQD`.
    pub const ERR_TLS_REQD: u32 = (1 << 31) + 5;
    /// `NBD_REP_ERR_UNKNOWN`: no such export.
    pub const ERR_UNKNOWN: u32 = (1 << 31) + 6;
    /// `NBD_REP_ERR_SHUTDOWN`: the server is shutting down.
    pub const ERR_SHUTDOWN: u32 = (1 << 31) + 7;
    /// `NBD_REP_ERR_BLOCK_SIZE_REQD`.
    pub const ERR_BLOCK_SIZE_REQD: u32 = (1 << 31) + 8;
    /// `NBD_REP_ERR_TOO_BIG`: the request or reply is too large.
    pub const ERR_TOO_BIG: u32 = (1 << 31) + 9;
    /// `NBD_REP_ERR_EXT_HEADER_REQD`: extended headers are negotiated, so structured
    /// replies cannot be.
    pub const ERR_EXT_HEADER_REQD: u32 = (1 << 31) + 10;
}

/// Information types of `NBD_OPT_INFO`/`NBD_OPT_GO` (`NBD_INFO_*`).
pub mod info {
    /// `NBD_INFO_EXPORT`: size and transmission flags.
    pub const EXPORT: u16 = 0;
    /// `NBD_INFO_NAME`: canonical export name.
    pub const NAME: u16 = 1;
    /// `NBD_INFO_DESCRIPTION`: human-readable description.
    pub const DESCRIPTION: u16 = 2;
    /// `NBD_INFO_BLOCK_SIZE`: minimum, preferred and maximum block sizes.
    pub const BLOCK_SIZE: u16 = 3;
}

/// Structured and extended reply chunk types (`NBD_REPLY_TYPE_*`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum ReplyType {
    /// `NBD_REPLY_TYPE_NONE`: the reply ends, successfully unless an error chunk came.
    None = 0,
    /// `NBD_REPLY_TYPE_OFFSET_DATA`: bytes read at an offset.
    OffsetData = 1,
    /// `NBD_REPLY_TYPE_OFFSET_HOLE`: a range that reads as zeroes.
    OffsetHole = 2,
    /// `NBD_REPLY_TYPE_BLOCK_STATUS`: extents with 32-bit lengths (compact framing).
    BlockStatus = 5,
    /// `NBD_REPLY_TYPE_BLOCK_STATUS_EXT`: extents with 64-bit lengths (extended framing).
    BlockStatusExt = 6,
    /// `NBD_REPLY_TYPE_ERROR`.
    Error = (1 << 15) + 1,
    /// `NBD_REPLY_TYPE_ERROR_OFFSET`.
    ErrorOffset = (1 << 15) + 2,
}

impl ReplyType {
    /// The type a peer sent, if this crate knows it.
    pub fn from_raw(raw: u16) -> Option<ReplyType> {
        Some(match raw {
            0 => ReplyType::None,
            1 => ReplyType::OffsetData,
            2 => ReplyType::OffsetHole,
            5 => ReplyType::BlockStatus,
            6 => ReplyType::BlockStatusExt,
            0x8001 => ReplyType::Error,
            0x8002 => ReplyType::ErrorOffset,
            _ => return None,
        })
    }
}

/// How a session frames its transmission messages, as negotiated.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Framing {
    /// Compact requests, simple replies only.
    #[default]
    Simple,
    /// Compact requests; structured reply chunks (`NBD_OPT_STRUCTURED_REPLY`).
    Structured,
    /// Extended requests and reply chunks (`NBD_OPT_EXTENDED_HEADERS`).
    Extended,
}

impl Framing {
    /// True when replies are chunks (structured or extended), never simple for reads.
    pub fn chunks(self) -> bool {
        self != Framing::Simple
    }

    /// Length of a request header in this framing.
    pub fn request_len(self) -> usize {
        match self {
            Framing::Extended => EXTENDED_REQUEST_LEN,
            _ => REQUEST_LEN,
        }
    }
}

mod command;
mod errno;
mod malformed;
mod options;
#[cfg(test)]
mod tests;
mod transmission;
pub(crate) mod wire;

pub use command::{cmd_name, Command, UnknownCommand};
pub use errno::Errno;
pub use malformed::Malformed;
pub use options::*;
pub use transmission::*;
