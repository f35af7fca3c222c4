//! Request extensions: what the kernel appends after a request's arguments
//! (`fuse_in_header.total_extlen`, in 8-byte units) when the server asked for it. Each record
//! starts with `struct fuse_ext_header` (`size` including the header, `type`) and is 8-byte
//! aligned. Types 0 to 31 are the security-context record (`FUSE_SECURITY_CTX`, whose
//! header's `type` is the number of contexts); 32 is `FUSE_EXT_GROUPS`
//! (`FUSE_CREATE_SUPP_GROUP`): supplementary groups of the caller.

use std::ffi::CStr;

use zerocopy::FromBytes;

use super::errno::{Errno, OpResult};
use crate::abi::{ExtHeader, Secctx};

/// `FUSE_MAX_NR_SECCTX`: record types up to this are the security-context record.
const MAX_NR_SECCTX: u32 = 31;
/// `FUSE_EXT_GROUPS`.
const EXT_GROUPS: u32 = 32;

/// The extensions of one request.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Extensions<'a> {
    /// Security contexts to apply to a new inode: the xattr name (`security.selinux`...) and
    /// its value.
    pub secctx: Vec<(&'a CStr, &'a [u8])>,
    /// Supplementary groups of the caller that the kernel passes on (`FUSE_EXT_GROUPS`).
    pub groups: Vec<u32>,
}

impl<'a> Extensions<'a> {
    /// Parses the extension area `bytes` (`EINVAL` when a record is malformed; a record of an
    /// unknown type is skipped).
    pub fn parse(mut bytes: &'a [u8]) -> OpResult<Extensions<'a>> {
        let mut ext = Extensions::default();
        while !bytes.is_empty() {
            let (h, _) = ExtHeader::read_from_prefix(bytes).map_err(|_| Errno::INVAL)?;
            let size = h.size as usize;
            if size < std::mem::size_of::<ExtHeader>() || size % 8 != 0 || size > bytes.len() {
                return Err(Errno::INVAL);
            }
            let body = &bytes[std::mem::size_of::<ExtHeader>()..size];
            match h.typ {
                n if n <= MAX_NR_SECCTX => ext.secctx = secctx(body, n)?,
                EXT_GROUPS => ext.groups = groups(body)?,
                _ => {}
            }
            bytes = &bytes[size..];
        }
        Ok(ext)
    }
}

/// `n` security contexts: each a `struct fuse_secctx` (the value's size), the NUL-terminated
/// xattr name, then the value.
fn secctx(mut body: &[u8], n: u32) -> OpResult<Vec<(&CStr, &[u8])>> {
    let mut out = Vec::new();
    for _ in 0..n {
        let (c, rest) = Secctx::read_from_prefix(body).map_err(|_| Errno::INVAL)?;
        let name = CStr::from_bytes_until_nul(rest).map_err(|_| Errno::INVAL)?;
        let rest = &rest[name.to_bytes_with_nul().len()..];
        let value = rest.get(..c.size as usize).ok_or(Errno::INVAL)?;
        if name.to_bytes().is_empty() {
            return Err(Errno::INVAL);
        }
        out.push((name, value));
        body = &rest[value.len()..];
    }
    Ok(out)
}

/// `struct fuse_supp_groups`: a count, then that many group ids.
fn groups(body: &[u8]) -> OpResult<Vec<u32>> {
    let (n, rest) = u32::read_from_prefix(body).map_err(|_| Errno::INVAL)?;
    let bytes = rest
        .get(..(n as usize).checked_mul(4).ok_or(Errno::INVAL)?)
        .ok_or(Errno::INVAL)?;
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(typ: u32, body: &[u8]) -> Vec<u8> {
        let size = (8 + body.len()).div_ceil(8) * 8;
        let mut v = (size as u32).to_ne_bytes().to_vec();
        v.extend_from_slice(&typ.to_ne_bytes());
        v.extend_from_slice(body);
        v.resize(size, 0);
        v
    }

    #[test]
    fn parses_security_contexts_and_groups() {
        let mut ctx = 5u32.to_ne_bytes().to_vec();
        ctx.extend_from_slice(&0u32.to_ne_bytes());
        ctx.extend_from_slice(b"security.selinux\0label");
        let mut groups = 2u32.to_ne_bytes().to_vec();
        groups.extend_from_slice(&100u32.to_ne_bytes());
        groups.extend_from_slice(&200u32.to_ne_bytes());
        let mut bytes = record(1, &ctx);
        bytes.extend(record(EXT_GROUPS, &groups));
        bytes.extend(record(77, b"unknown"));
        let ext = Extensions::parse(&bytes).unwrap();
        assert_eq!(ext.secctx, [(c"security.selinux", &b"label"[..])]);
        assert_eq!(ext.groups, [100, 200]);
        // No context at all (no LSM labels files): an empty list.
        assert!(Extensions::parse(&record(0, &[]))
            .unwrap()
            .secctx
            .is_empty());
    }

    #[test]
    fn refuses_malformed_records() {
        assert!(Extensions::parse(&[1, 2, 3]).is_err());
        let mut short = record(EXT_GROUPS, &9u32.to_ne_bytes());
        assert!(
            Extensions::parse(&short).is_err(),
            "9 groups announced, none there"
        );
        short[0] = 200;
        assert!(Extensions::parse(&short).is_err(), "size past the end");
        assert!(
            Extensions::parse(&record(1, &[0; 8])).is_err(),
            "context without a name"
        );
    }
}
