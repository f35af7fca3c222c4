//! A request as the kernel sent it: the header and a cursor over the opcode's arguments.

use std::ffi::CStr;

use zerocopy::FromBytes;

use super::errno::{Errno, OpResult};
use crate::abi::InHeader;

/// One request: its header and the bytes after it.
pub struct Request<'a> {
    /// `fuse_in_header`.
    pub header: InHeader,
    /// The opcode's arguments (the header's `len` minus the header and the extensions).
    pub body: Body<'a>,
    /// The extensions after the arguments (`total_extlen` 8-byte units; see `crate::abi::ext`).
    pub ext: &'a [u8],
}

impl<'a> Request<'a> {
    /// Splits `bytes` (one whole request as read from `/dev/fuse`) into header and body.
    /// Fails with `EINVAL` when the header is short or its length disagrees with `bytes`.
    pub fn parse(bytes: &'a [u8]) -> OpResult<Request<'a>> {
        let (header, _) = InHeader::read_from_prefix(bytes).map_err(|_| Errno::INVAL)?;
        let len = header.len as usize;
        if len < std::mem::size_of::<InHeader>() || len > bytes.len() {
            return Err(Errno::INVAL);
        }
        let ext = header.total_extlen as usize * 8;
        let end = len.checked_sub(ext).ok_or(Errno::INVAL)?;
        let start = std::mem::size_of::<InHeader>();
        if end < start {
            return Err(Errno::INVAL);
        }
        Ok(Request {
            header,
            body: Body {
                bytes: &bytes[start..end],
            },
            ext: &bytes[end..len],
        })
    }
}

/// A cursor over a request's arguments.
pub struct Body<'a> {
    bytes: &'a [u8],
}

impl<'a> Body<'a> {
    /// A cursor over `bytes` (arguments a transport keeps apart from the header).
    pub fn over(bytes: &'a [u8]) -> Self {
        Body { bytes }
    }

    /// Splits the last `total_extlen` 8-byte units off `bytes` (arguments that still hold
    /// their extensions): the arguments and the extensions (`EINVAL` when too short).
    pub fn split_ext(bytes: &'a [u8], total_extlen: u16) -> OpResult<(Body<'a>, &'a [u8])> {
        let at = bytes
            .len()
            .checked_sub(total_extlen as usize * 8)
            .ok_or(Errno::INVAL)?;
        let (args, ext) = bytes.split_at(at);
        Ok((Body { bytes: args }, ext))
    }

    /// Takes the next fixed-size argument struct (`EINVAL` when the request is short).
    pub fn arg<T: FromBytes>(&mut self) -> OpResult<T> {
        let (value, rest) = T::read_from_prefix(self.bytes).map_err(|_| Errno::INVAL)?;
        self.bytes = rest;
        Ok(value)
    }

    /// Takes the next NUL-terminated name. A name holding `/`, or empty, is `EINVAL`: every
    /// name the kernel sends is one path component.
    pub fn name(&mut self) -> OpResult<&'a CStr> {
        let name = CStr::from_bytes_until_nul(self.bytes).map_err(|_| Errno::INVAL)?;
        let n = name.to_bytes();
        if n.is_empty() || n.contains(&b'/') {
            return Err(Errno::INVAL);
        }
        self.bytes = &self.bytes[n.len() + 1..];
        Ok(name)
    }

    /// Takes the next NUL-terminated string with no component rule (a symlink target, an
    /// xattr name).
    pub fn string(&mut self) -> OpResult<&'a CStr> {
        let s = CStr::from_bytes_until_nul(self.bytes).map_err(|_| Errno::INVAL)?;
        self.bytes = &self.bytes[s.to_bytes().len() + 1..];
        Ok(s)
    }

    /// Takes exactly `n` bytes.
    pub fn bytes(&mut self, n: usize) -> OpResult<&'a [u8]> {
        if n > self.bytes.len() {
            return Err(Errno::INVAL);
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    /// Everything left.
    #[cfg(test)]
    pub fn rest(&self) -> &'a [u8] {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{MkdirIn, Opcode};
    use zerocopy::IntoBytes;

    fn request(opcode: u32, body: &[u8]) -> Vec<u8> {
        let header = InHeader {
            len: (40 + body.len()) as u32,
            opcode,
            unique: 7,
            nodeid: 1,
            ..Default::default()
        };
        let mut v = header.as_bytes().to_vec();
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn parses_args_and_names() {
        let mut body = MkdirIn {
            mode: 0o755,
            umask: 0o22,
        }
        .as_bytes()
        .to_vec();
        body.extend_from_slice(b"dir\0");
        let bytes = request(Opcode::Mkdir as u32, &body);
        let mut req = Request::parse(&bytes).unwrap();
        assert_eq!(req.header.unique, 7);
        let arg: MkdirIn = req.body.arg().unwrap();
        assert_eq!(arg.mode, 0o755);
        assert_eq!(req.body.name().unwrap().to_bytes(), b"dir");
        assert!(req.body.rest().is_empty());
    }

    #[test]
    fn refuses_short_and_lying_requests() {
        assert_eq!(Request::parse(&[0u8; 10]).err(), Some(Errno::INVAL));
        let mut bytes = request(Opcode::Lookup as u32, b"x\0");
        bytes[0] = 200; // len beyond what was read
        assert_eq!(Request::parse(&bytes).err(), Some(Errno::INVAL));
        let bytes = request(Opcode::Mkdir as u32, &[1, 2]);
        let mut req = Request::parse(&bytes).unwrap();
        assert_eq!(req.body.arg::<MkdirIn>().err(), Some(Errno::INVAL));
    }

    #[test]
    fn names_are_single_components() {
        let mut b = Body::over(b"a/b\0");
        assert_eq!(b.name().err(), Some(Errno::INVAL));
        let mut b = Body::over(b"\0");
        assert_eq!(b.name().err(), Some(Errno::INVAL));
        let mut b = Body::over(b"noterm");
        assert_eq!(b.name().err(), Some(Errno::INVAL));
    }
}
