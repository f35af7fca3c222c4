//! Encoders and decoders of the transmission phase: request headers (compact and extended),
//! simple replies, and reply chunks in the structured or extended framing. Pure functions
//! over bytes.

use std::ops::Deref;

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::wire;
use super::Malformed;
use super::STRUCTURED_REPLY_MAGIC;
use super::{CmdFlags, Command, Errno, Framing, ReplyFlags, ReplyType, UnknownCommand};
use super::{EXTENDED_REPLY_MAGIC, EXTENDED_REQUEST_LEN, EXTENDED_REQUEST_MAGIC, MAX_STRING};
use super::{REQUEST_LEN, REQUEST_MAGIC, SIMPLE_REPLY_LEN, SIMPLE_REPLY_MAGIC};

/// One transmission request header, compact or extended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Command flags, as sent (unknown bits kept, so they can be refused).
    pub flags: u16,
    /// Command type, as sent (see [`Request::command`]).
    pub kind: u16,
    /// The client's opaque cookie, echoed in the reply.
    pub cookie: u64,
    /// Export offset.
    pub offset: u64,
    /// The length field: of the payload that follows (a write; with extended headers, any
    /// command with `NBD_CMD_FLAG_PAYLOAD_LEN`), else the command's effect length.
    pub len: u64,
}

impl Request {
    /// Decodes a compact request header, checking its magic.
    pub fn decode(b: &[u8; REQUEST_LEN]) -> Result<Self, Malformed> {
        let h = wire::CompactRequest::ref_from_bytes(b).map_err(|_| Malformed::Truncated)?;
        if h.magic.get() != REQUEST_MAGIC {
            return Err(Malformed::RequestMagic(h.magic.get()));
        }
        Ok(Request {
            flags: h.flags.get(),
            kind: h.kind.get(),
            cookie: h.cookie.get(),
            offset: h.offset.get(),
            len: h.len.get().into(),
        })
    }

    /// Decodes an extended request header, checking its magic.
    pub fn decode_extended(b: &[u8; EXTENDED_REQUEST_LEN]) -> Result<Self, Malformed> {
        let h = wire::ExtendedRequest::ref_from_bytes(b).map_err(|_| Malformed::Truncated)?;
        if h.magic.get() != EXTENDED_REQUEST_MAGIC {
            return Err(Malformed::RequestMagic(h.magic.get()));
        }
        Ok(Request {
            flags: h.flags.get(),
            kind: h.kind.get(),
            cookie: h.cookie.get(),
            offset: h.offset.get(),
            len: h.len.get(),
        })
    }

    /// Encodes a compact header (the client's side; for tests and tools); `None` when the
    /// length needs more than 32 bits.
    pub fn encode(&self) -> Option<[u8; REQUEST_LEN]> {
        let h = wire::CompactRequest {
            magic: REQUEST_MAGIC.into(),
            flags: self.flags.into(),
            kind: self.kind.into(),
            cookie: self.cookie.into(),
            offset: self.offset.into(),
            len: u32::try_from(self.len).ok()?.into(),
        };
        Some(copy(&h))
    }

    /// Encodes an extended header (the client's side; for tests and tools).
    pub fn encode_extended(&self) -> [u8; EXTENDED_REQUEST_LEN] {
        let h = wire::ExtendedRequest {
            magic: EXTENDED_REQUEST_MAGIC.into(),
            flags: self.flags.into(),
            kind: self.kind.into(),
            cookie: self.cookie.into(),
            offset: self.offset.into(),
            len: self.len.into(),
        };
        copy(&h)
    }

    /// The command, if this server knows it.
    pub fn command(&self) -> Result<Command, UnknownCommand> {
        Command::try_from(self.kind)
    }

    /// The command flags as a typed set, unknown bits dropped.
    pub fn cmd_flags(&self) -> CmdFlags {
        CmdFlags::from_bits_truncate(self.flags)
    }

    /// Bytes of payload that follow this header on the wire: a write's length; with extended
    /// headers, also the length of any request with `NBD_CMD_FLAG_PAYLOAD_LEN`.
    ///
    /// The protocol asks extended-header clients to flag every write, but qemu 10's client
    /// does not, and qemu-nbd serves its writes all the same (it traces them as
    /// noncompliant): a write's length is its payload's whatever the flag says.
    pub fn payload_len(&self, framing: Framing) -> u64 {
        let flagged = self.cmd_flags().contains(CmdFlags::PAYLOAD_LEN);
        match framing {
            _ if self.kind == Command::Write as u16 => self.len,
            Framing::Extended if flagged => self.len,
            _ => 0,
        }
    }
}

fn copy<T: IntoBytes + Immutable, const N: usize>(v: &T) -> [u8; N] {
    let mut b = [0u8; N];
    b.copy_from_slice(v.as_bytes());
    b
}

/// The fixed part of a reply, built on the stack: a simple reply, or a chunk header with
/// the fixed fields of its payload (an offset, a hole's length).
#[derive(Copy, Clone)]
pub struct ReplyHead {
    bytes: [u8; ReplyHead::MAX],
    len: u8,
}

impl ReplyHead {
    /// The longest: an extended header, an offset and a hole length.
    pub const MAX: usize = 48;

    fn new() -> Self {
        ReplyHead {
            bytes: [0; Self::MAX],
            len: 0,
        }
    }

    fn put(&mut self, b: &[u8]) {
        let at = self.len as usize;
        self.bytes[at..at + b.len()].copy_from_slice(b);
        self.len += b.len() as u8;
    }
}

impl Deref for ReplyHead {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl std::fmt::Debug for ReplyHead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReplyHead({:02x?})", &**self)
    }
}

/// A simple reply header (`error` `None` for success).
pub fn simple_reply(error: Option<Errno>, cookie: u64) -> [u8; SIMPLE_REPLY_LEN] {
    let h = wire::SimpleReply {
        magic: SIMPLE_REPLY_MAGIC.into(),
        error: error.map_or(0, Errno::raw).into(),
        cookie: cookie.into(),
    };
    copy(&h)
}

/// The request a reply chunk answers: its cookie, and its offset (which the extended
/// header repeats).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReplyTo {
    /// The request's cookie.
    pub cookie: u64,
    /// The request's offset.
    pub offset: u64,
}

impl From<&Request> for ReplyTo {
    fn from(r: &Request) -> Self {
        ReplyTo {
            cookie: r.cookie,
            offset: r.offset,
        }
    }
}

/// A chunk header for a payload of `len` bytes: structured (20 bytes; `len` must fit 32
/// bits) or, under [`Framing::Extended`], extended (32 bytes).
pub fn chunk_header(
    framing: Framing,
    flags: ReplyFlags,
    kind: ReplyType,
    to: ReplyTo,
    len: u64,
) -> ReplyHead {
    let mut h = ReplyHead::new();
    if framing == Framing::Extended {
        h.put(
            wire::ExtendedReply {
                magic: EXTENDED_REPLY_MAGIC.into(),
                flags: flags.bits().into(),
                kind: (kind as u16).into(),
                cookie: to.cookie.into(),
                offset: to.offset.into(),
                len: len.into(),
            }
            .as_bytes(),
        );
    } else {
        h.put(
            wire::StructuredReply {
                magic: STRUCTURED_REPLY_MAGIC.into(),
                flags: flags.bits().into(),
                kind: (kind as u16).into(),
                cookie: to.cookie.into(),
                len: (len as u32).into(),
            }
            .as_bytes(),
        );
    }
    h
}

fn done_if(done: bool) -> ReplyFlags {
    if done {
        ReplyFlags::DONE
    } else {
        ReplyFlags::empty()
    }
}

/// The header (and offset field) of an `NBD_REPLY_TYPE_OFFSET_DATA` chunk carrying `len`
/// bytes read at `offset`, the last of its reply when `done`; the data follows it.
pub fn offset_data_header(
    framing: Framing,
    to: ReplyTo,
    offset: u64,
    len: u32,
    done: bool,
) -> ReplyHead {
    let kind = ReplyType::OffsetData;
    let mut h = chunk_header(framing, done_if(done), kind, to, u64::from(len) + 8);
    h.put(&offset.to_be_bytes());
    h
}

/// An `NBD_REPLY_TYPE_OFFSET_HOLE` chunk: `len` bytes at `offset` read as zeroes, the last
/// of its reply when `done`.
pub fn offset_hole_chunk(
    framing: Framing,
    to: ReplyTo,
    offset: u64,
    len: u32,
    done: bool,
) -> ReplyHead {
    let mut h = chunk_header(framing, done_if(done), ReplyType::OffsetHole, to, 12);
    let hole = wire::OffsetHole {
        offset: offset.into(),
        len: len.into(),
    };
    h.put(hole.as_bytes());
    h
}

/// A final `NBD_REPLY_TYPE_NONE` chunk.
pub fn none_chunk(framing: Framing, to: ReplyTo) -> ReplyHead {
    chunk_header(framing, ReplyFlags::DONE, ReplyType::None, to, 0)
}

/// Appends a final `NBD_REPLY_TYPE_ERROR` chunk with `error` and a message (cut at the
/// protocol's string limit, on a character boundary).
pub fn encode_error_chunk(
    out: &mut Vec<u8>,
    framing: Framing,
    to: ReplyTo,
    error: Errno,
    message: &str,
) {
    let mut end = message.len().min(MAX_STRING);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let msg = &message.as_bytes()[..end];
    let len = 6 + msg.len() as u64;
    out.extend_from_slice(&chunk_header(
        framing,
        ReplyFlags::DONE,
        ReplyType::Error,
        to,
        len,
    ));
    let head = wire::ErrorHead {
        error: error.raw().into(),
        message_len: (msg.len() as u16).into(),
    };
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(msg);
}

/// One extent of a block-status reply.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Length in bytes (nonzero; under 2^32 in the compact framing).
    pub len: u64,
    /// Status flags of the context.
    pub flags: u32,
}

/// Appends a final block-status chunk for one metadata context: `NBD_REPLY_TYPE_BLOCK_STATUS`
/// (32-bit lengths; longer extents are cut) or, under [`Framing::Extended`],
/// `NBD_REPLY_TYPE_BLOCK_STATUS_EXT`.
pub fn encode_block_status(
    out: &mut Vec<u8>,
    framing: Framing,
    to: ReplyTo,
    context: u32,
    extents: &[Extent],
) {
    let n = extents.len() as u64;
    let done = ReplyFlags::DONE;
    if framing == Framing::Extended {
        let kind = ReplyType::BlockStatusExt;
        out.extend_from_slice(&chunk_header(framing, done, kind, to, 8 + 16 * n));
        let head = wire::BlockStatusExtHead {
            context: context.into(),
            count: (n as u32).into(),
        };
        out.extend_from_slice(head.as_bytes());
        for e in extents {
            let d = wire::DescriptorExt {
                len: e.len.into(),
                flags: u64::from(e.flags).into(),
            };
            out.extend_from_slice(d.as_bytes());
        }
        return;
    }
    let kind = ReplyType::BlockStatus;
    out.extend_from_slice(&chunk_header(framing, done, kind, to, 4 + 8 * n));
    out.extend_from_slice(&context.to_be_bytes());
    for e in extents {
        let d = wire::Descriptor {
            len: (e.len.min(u64::from(u32::MAX)) as u32).into(),
            flags: e.flags.into(),
        };
        out.extend_from_slice(d.as_bytes());
    }
}

/// The payload of `NBD_CMD_BLOCK_STATUS` with `NBD_CMD_FLAG_PAYLOAD_LEN`: the effect length,
/// then the metadata context ids to answer for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockStatusFilter {
    /// The effect length (what the header's length means without a payload).
    pub len: u64,
    /// The context ids asked for.
    pub ids: Vec<u32>,
}

impl BlockStatusFilter {
    /// Decodes the payload; `None` unless it is 8 + 4n bytes with n >= 1.
    pub fn decode(payload: &[u8]) -> Option<Self> {
        let (len, rest) = <[u8; 8]>::read_from_prefix(payload).ok()?;
        if rest.is_empty() || rest.len() % 4 != 0 {
            return None;
        }
        let ids = rest
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Some(BlockStatusFilter {
            len: u64::from_be_bytes(len),
            ids,
        })
    }

    /// Encodes the payload (the client's side; for tests and tools).
    pub fn encode(&self) -> Vec<u8> {
        let mut d = self.len.to_be_bytes().to_vec();
        for id in &self.ids {
            d.extend_from_slice(&id.to_be_bytes());
        }
        d
    }
}
