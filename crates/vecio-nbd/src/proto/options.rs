//! Encoders and decoders of the handshake: greeting, options and their replies. Pure
//! functions over bytes.

use zerocopy::{FromBytes, IntoBytes};

use super::wire;
use super::Malformed;
use super::{info, ClientFlags, HandshakeFlags, TransmissionFlags};
use super::{IHAVEOPT, MAX_STRING, NBDMAGIC, OPTION_HEADER_LEN, OPT_REPLY_MAGIC};

/// The server's first message of the newstyle handshake: `NBDMAGIC`, `IHAVEOPT`, flags.
pub fn greeting(flags: HandshakeFlags) -> [u8; 18] {
    let g = wire::Greeting {
        nbdmagic: NBDMAGIC.into(),
        ihaveopt: IHAVEOPT.into(),
        flags: flags.bits().into(),
    };
    let mut b = [0u8; 18];
    b.copy_from_slice(g.as_bytes());
    b
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
        let h = wire::OptionHeader::ref_from_bytes(b).map_err(|_| Malformed::Truncated)?;
        if h.magic.get() != IHAVEOPT {
            return Err(Malformed::OptionMagic(h.magic.get()));
        }
        Ok(OptionHeader {
            option: h.option.get(),
            len: h.len.get(),
        })
    }

    /// Encodes the header (the client's side; for tests and tools).
    pub fn encode(&self) -> [u8; OPTION_HEADER_LEN] {
        let h = wire::OptionHeader {
            magic: IHAVEOPT.into(),
            option: self.option.into(),
            len: self.len.into(),
        };
        let mut b = [0u8; OPTION_HEADER_LEN];
        b.copy_from_slice(h.as_bytes());
        b
    }
}

/// Appends an option reply (fixed newstyle) to `out`.
pub fn encode_option_reply(out: &mut Vec<u8>, option: u32, reply: u32, data: &[u8]) {
    let h = wire::OptionReply {
        magic: OPT_REPLY_MAGIC.into(),
        option: option.into(),
        reply: reply.into(),
        len: (data.len() as u32).into(),
    };
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
}

/// The reply to `NBD_OPT_EXPORT_NAME`: size, transmission flags, and 124 zero bytes unless
/// the client negotiated `NO_ZEROES`.
pub fn encode_export_name_reply(size: u64, flags: TransmissionFlags, no_zeroes: bool) -> Vec<u8> {
    let r = wire::ExportNameReply {
        size: size.into(),
        flags: flags.bits().into(),
    };
    let mut out = Vec::with_capacity(10 + 124);
    out.extend_from_slice(r.as_bytes());
    if !no_zeroes {
        out.resize(out.len() + 124, 0);
    }
    out
}

/// Data of an `NBD_REP_INFO` reply of type `NBD_INFO_EXPORT`.
pub fn info_export(size: u64, flags: TransmissionFlags) -> Vec<u8> {
    let i = wire::InfoExport {
        info: info::EXPORT.into(),
        size: size.into(),
        flags: flags.bits().into(),
    };
    i.as_bytes().to_vec()
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
    let i = wire::InfoBlockSize {
        info: info::BLOCK_SIZE.into(),
        minimum: minimum.into(),
        preferred: preferred.into(),
        maximum: maximum.into(),
    };
    i.as_bytes().to_vec()
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
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    fn u32(&mut self) -> Result<u32, Malformed> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
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
