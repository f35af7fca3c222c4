//! Encoders and decoders of the NBD wire format: pure functions over bytes.

use super::{
    info, reply_type, ClientFlags, CmdFlags, HandshakeFlags, ReplyFlags, TransmissionFlags,
    IHAVEOPT, MAX_STRING, NBDMAGIC, OFFSET_DATA_HEADER_LEN, OPTION_HEADER_LEN, OPT_REPLY_MAGIC,
    REQUEST_LEN, REQUEST_MAGIC, SIMPLE_REPLY_LEN, SIMPLE_REPLY_MAGIC, STRUCTURED_HEADER_LEN,
    STRUCTURED_REPLY_MAGIC,
};
use crate::error::Malformed;

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

/// The server's first message of the newstyle handshake: `NBDMAGIC`, `IHAVEOPT`, flags.
pub fn greeting(flags: HandshakeFlags) -> [u8; 18] {
    let mut g = [0u8; 18];
    g[..8].copy_from_slice(&NBDMAGIC.to_be_bytes());
    g[8..16].copy_from_slice(&IHAVEOPT.to_be_bytes());
    g[16..].copy_from_slice(&flags.bits().to_be_bytes());
    g
}

/// Decodes the client's flags; unknown bits are a protocol violation (the server must then
/// drop the connection).
pub fn decode_client_flags(b: [u8; 4]) -> Result<ClientFlags, Malformed> {
    let raw = u32::from_be_bytes(b);
    ClientFlags::from_bits(raw).ok_or(Malformed::ClientFlags(raw))
}

/// The header of one client option.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct OptionHeader {
    /// The option code (`NBD_OPT_*`).
    pub option: u32,
    /// Bytes of option data that follow.
    pub len: u32,
}

impl OptionHeader {
    /// Decodes an option header, checking its `IHAVEOPT` magic.
    pub fn decode(b: &[u8; OPTION_HEADER_LEN]) -> Result<Self, Malformed> {
        let magic = be64(b, 0);
        if magic != IHAVEOPT {
            return Err(Malformed::OptionMagic(magic));
        }
        Ok(OptionHeader {
            option: be32(b, 8),
            len: be32(b, 12),
        })
    }

    /// Encodes the header (the client's side; for tests and tools).
    pub fn encode(&self) -> [u8; OPTION_HEADER_LEN] {
        let mut b = [0u8; OPTION_HEADER_LEN];
        b[..8].copy_from_slice(&IHAVEOPT.to_be_bytes());
        b[8..12].copy_from_slice(&self.option.to_be_bytes());
        b[12..].copy_from_slice(&self.len.to_be_bytes());
        b
    }
}

/// Appends an option reply (fixed newstyle) to `out`.
pub fn encode_option_reply(out: &mut Vec<u8>, option: u32, reply: u32, data: &[u8]) {
    out.extend_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&option.to_be_bytes());
    out.extend_from_slice(&reply.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
}

/// The reply to `NBD_OPT_EXPORT_NAME`: size, transmission flags, and 124 zero bytes unless
/// the client negotiated `NO_ZEROES`.
pub fn encode_export_name_reply(size: u64, flags: TransmissionFlags, no_zeroes: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(10 + 124);
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(&flags.bits().to_be_bytes());
    if !no_zeroes {
        out.resize(out.len() + 124, 0);
    }
    out
}

/// Data of an `NBD_REP_INFO` reply of type `NBD_INFO_EXPORT`.
pub fn info_export(size: u64, flags: TransmissionFlags) -> Vec<u8> {
    let mut d = Vec::with_capacity(12);
    d.extend_from_slice(&info::EXPORT.to_be_bytes());
    d.extend_from_slice(&size.to_be_bytes());
    d.extend_from_slice(&flags.bits().to_be_bytes());
    d
}

/// Data of an `NBD_REP_INFO` reply carrying a string (`NBD_INFO_NAME`, `NBD_INFO_DESCRIPTION`).
pub fn info_string(kind: u16, s: &str) -> Vec<u8> {
    let mut d = Vec::with_capacity(2 + s.len());
    d.extend_from_slice(&kind.to_be_bytes());
    d.extend_from_slice(s.as_bytes());
    d
}

/// Data of an `NBD_REP_INFO` reply of type `NBD_INFO_BLOCK_SIZE`.
pub fn info_block_size(minimum: u32, preferred: u32, maximum: u32) -> Vec<u8> {
    let mut d = Vec::with_capacity(14);
    d.extend_from_slice(&info::BLOCK_SIZE.to_be_bytes());
    d.extend_from_slice(&minimum.to_be_bytes());
    d.extend_from_slice(&preferred.to_be_bytes());
    d.extend_from_slice(&maximum.to_be_bytes());
    d
}

/// Data of an `NBD_REP_SERVER` reply: the export's name, then its description.
pub fn rep_server(name: &str, description: &str) -> Vec<u8> {
    let mut d = Vec::with_capacity(4 + name.len() + description.len());
    d.extend_from_slice(&(name.len() as u32).to_be_bytes());
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(description.as_bytes());
    d
}

/// Data of an `NBD_REP_META_CONTEXT` reply.
pub fn rep_meta_context(id: u32, name: &str) -> Vec<u8> {
    let mut d = Vec::with_capacity(4 + name.len());
    d.extend_from_slice(&id.to_be_bytes());
    d.extend_from_slice(name.as_bytes());
    d
}

/// A cursor over option data that refuses to read past the end.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        let end = self.at.checked_add(n).ok_or(Malformed::Truncated)?;
        let s = self.b.get(self.at..end).ok_or(Malformed::Truncated)?;
        self.at = end;
        Ok(s)
    }
    fn u16(&mut self) -> Result<u16, Malformed> {
        self.take(2).map(|s| be16(s, 0))
    }
    fn u32(&mut self) -> Result<u32, Malformed> {
        self.take(4).map(|s| be32(s, 0))
    }
    fn string(&mut self, len: u32) -> Result<String, Malformed> {
        if len as usize > MAX_STRING {
            return Err(Malformed::StringTooLong(len));
        }
        let s = self.take(len as usize)?;
        let s = std::str::from_utf8(s).map_err(|_| Malformed::NotUtf8)?;
        if s.contains('\0') {
            return Err(Malformed::Nul);
        }
        Ok(s.to_owned())
    }
    fn done(&self) -> Result<(), Malformed> {
        if self.at == self.b.len() {
            Ok(())
        } else {
            Err(Malformed::TrailingBytes)
        }
    }
}

/// The data of `NBD_OPT_INFO` and `NBD_OPT_GO`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InfoRequest {
    /// The export name ("" for the default export).
    pub name: String,
    /// The information types asked for.
    pub infos: Vec<u16>,
}

/// Decodes the data of `NBD_OPT_INFO` / `NBD_OPT_GO`.
pub fn decode_info_request(data: &[u8]) -> Result<InfoRequest, Malformed> {
    let mut c = Cursor { b: data, at: 0 };
    let len = c.u32()?;
    let name = c.string(len)?;
    let n = c.u16()?;
    let mut infos = Vec::with_capacity(n as usize);
    for _ in 0..n {
        infos.push(c.u16()?);
    }
    c.done()?;
    Ok(InfoRequest { name, infos })
}

/// Encodes the data of `NBD_OPT_INFO` / `NBD_OPT_GO` (the client's side; for tests and tools).
pub fn encode_info_request(name: &str, infos: &[u16]) -> Vec<u8> {
    let mut d = Vec::new();
    d.extend_from_slice(&(name.len() as u32).to_be_bytes());
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&(infos.len() as u16).to_be_bytes());
    for i in infos {
        d.extend_from_slice(&i.to_be_bytes());
    }
    d
}

/// The data of `NBD_OPT_LIST_META_CONTEXT` and `NBD_OPT_SET_META_CONTEXT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaRequest {
    /// The export name.
    pub name: String,
    /// The queries (`namespace:leaf`).
    pub queries: Vec<String>,
}

/// Most queries one meta-context option may carry before the server answers
/// `NBD_REP_ERR_TOO_BIG`.
pub const MAX_META_QUERIES: u32 = 128;

/// Decodes the data of the two meta-context options.
pub fn decode_meta_request(data: &[u8]) -> Result<MetaRequest, Malformed> {
    let mut c = Cursor { b: data, at: 0 };
    let len = c.u32()?;
    let name = c.string(len)?;
    let n = c.u32()?;
    if n > MAX_META_QUERIES {
        return Err(Malformed::TooManyQueries(n));
    }
    let mut queries = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let len = c.u32()?;
        queries.push(c.string(len)?);
    }
    c.done()?;
    Ok(MetaRequest { name, queries })
}

/// Encodes the data of the two meta-context options (the client's side; for tests and tools).
pub fn encode_meta_request(name: &str, queries: &[&str]) -> Vec<u8> {
    let mut d = Vec::new();
    d.extend_from_slice(&(name.len() as u32).to_be_bytes());
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&(queries.len() as u32).to_be_bytes());
    for q in queries {
        d.extend_from_slice(&(q.len() as u32).to_be_bytes());
        d.extend_from_slice(q.as_bytes());
    }
    d
}

/// One transmission request header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Command flags, as sent (unknown bits kept, so they can be refused).
    pub flags: u16,
    /// Command type (`NBD_CMD_*`).
    pub kind: u16,
    /// The client's opaque cookie, echoed in the reply.
    pub cookie: u64,
    /// Export offset.
    pub offset: u64,
    /// Length (of the payload that follows, for a write).
    pub len: u32,
}

impl Request {
    /// Decodes a request header, checking its magic.
    pub fn decode(b: &[u8; REQUEST_LEN]) -> Result<Self, Malformed> {
        let magic = be32(b, 0);
        if magic != REQUEST_MAGIC {
            return Err(Malformed::RequestMagic(magic));
        }
        Ok(Request {
            flags: be16(b, 4),
            kind: be16(b, 6),
            cookie: be64(b, 8),
            offset: be64(b, 16),
            len: be32(b, 24),
        })
    }

    /// Encodes the header (the client's side; for tests and tools).
    pub fn encode(&self) -> [u8; REQUEST_LEN] {
        let mut b = [0u8; REQUEST_LEN];
        b[..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&self.flags.to_be_bytes());
        b[6..8].copy_from_slice(&self.kind.to_be_bytes());
        b[8..16].copy_from_slice(&self.cookie.to_be_bytes());
        b[16..24].copy_from_slice(&self.offset.to_be_bytes());
        b[24..].copy_from_slice(&self.len.to_be_bytes());
        b
    }

    /// The command flags as a typed set, unknown bits dropped.
    pub fn cmd_flags(&self) -> CmdFlags {
        CmdFlags::from_bits_truncate(self.flags)
    }
}

/// A simple reply header.
pub fn simple_reply(error: u32, cookie: u64) -> [u8; SIMPLE_REPLY_LEN] {
    let mut b = [0u8; SIMPLE_REPLY_LEN];
    b[..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.to_be_bytes());
    b[8..].copy_from_slice(&cookie.to_be_bytes());
    b
}

/// A structured reply chunk header.
pub fn structured_header(
    flags: ReplyFlags,
    kind: u16,
    cookie: u64,
    len: u32,
) -> [u8; STRUCTURED_HEADER_LEN] {
    let mut b = [0u8; STRUCTURED_HEADER_LEN];
    b[..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&flags.bits().to_be_bytes());
    b[6..8].copy_from_slice(&kind.to_be_bytes());
    b[8..16].copy_from_slice(&cookie.to_be_bytes());
    b[16..].copy_from_slice(&len.to_be_bytes());
    b
}

/// The header (and offset field) of a final `NBD_REPLY_TYPE_OFFSET_DATA` chunk carrying
/// `len` bytes read at `offset`; the data follows it on the wire.
pub fn offset_data_header(cookie: u64, offset: u64, len: u32) -> [u8; OFFSET_DATA_HEADER_LEN] {
    let mut b = [0u8; OFFSET_DATA_HEADER_LEN];
    let h = structured_header(ReplyFlags::DONE, reply_type::OFFSET_DATA, cookie, len + 8);
    b[..STRUCTURED_HEADER_LEN].copy_from_slice(&h);
    b[STRUCTURED_HEADER_LEN..].copy_from_slice(&offset.to_be_bytes());
    b
}

/// The header (and offset field) of an `NBD_REPLY_TYPE_OFFSET_DATA` chunk that is not the
/// last of its reply (a piece of a sparse read); the data follows it on the wire.
pub fn offset_data_piece(cookie: u64, offset: u64, len: u32) -> [u8; OFFSET_DATA_HEADER_LEN] {
    let mut b = offset_data_header(cookie, offset, len);
    b[4..6].copy_from_slice(&ReplyFlags::empty().bits().to_be_bytes());
    b
}

/// An `NBD_REPLY_TYPE_OFFSET_HOLE` chunk: `len` bytes at `offset` read as zeroes. `done`
/// sets `NBD_REPLY_FLAG_DONE` (the hole is the whole reply).
pub fn offset_hole_chunk(cookie: u64, offset: u64, len: u32, done: bool) -> [u8; 32] {
    let flags = if done {
        ReplyFlags::DONE
    } else {
        ReplyFlags::empty()
    };
    let mut b = [0u8; 32];
    let h = structured_header(flags, reply_type::OFFSET_HOLE, cookie, 12);
    b[..STRUCTURED_HEADER_LEN].copy_from_slice(&h);
    b[STRUCTURED_HEADER_LEN..28].copy_from_slice(&offset.to_be_bytes());
    b[28..].copy_from_slice(&len.to_be_bytes());
    b
}

/// A final `NBD_REPLY_TYPE_NONE` chunk.
pub fn none_chunk(cookie: u64) -> [u8; STRUCTURED_HEADER_LEN] {
    structured_header(ReplyFlags::DONE, reply_type::NONE, cookie, 0)
}

/// Appends a final `NBD_REPLY_TYPE_ERROR` chunk with `error` (nonzero) and a message (cut at
/// the protocol's string limit, on a character boundary).
pub fn encode_error_chunk(out: &mut Vec<u8>, cookie: u64, error: u32, message: &str) {
    let mut end = message.len().min(MAX_STRING);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let msg = &message.as_bytes()[..end];
    let h = structured_header(
        ReplyFlags::DONE,
        reply_type::ERROR,
        cookie,
        6 + msg.len() as u32,
    );
    out.extend_from_slice(&h);
    out.extend_from_slice(&error.max(1).to_be_bytes());
    out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    out.extend_from_slice(msg);
}

/// One extent of a block-status reply.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Length in bytes (nonzero).
    pub len: u32,
    /// Status flags of the context.
    pub flags: u32,
}

/// Appends a final `NBD_REPLY_TYPE_BLOCK_STATUS` chunk for one metadata context.
pub fn encode_block_status(out: &mut Vec<u8>, cookie: u64, context: u32, extents: &[Extent]) {
    let len = 4 + 8 * extents.len() as u32;
    out.extend_from_slice(&structured_header(
        ReplyFlags::DONE,
        reply_type::BLOCK_STATUS,
        cookie,
        len,
    ));
    out.extend_from_slice(&context.to_be_bytes());
    for e in extents {
        out.extend_from_slice(&e.len.to_be_bytes());
        out.extend_from_slice(&e.flags.to_be_bytes());
    }
}
