//! Fuzzes vecio fuse's request decoder: a request's header and arguments (`wire::Request`,
//! `wire::Body`), its extensions (security contexts, supplementary groups), and the argument
//! structs of INIT, SETATTR, WRITE and the name-carrying operations, as the dispatcher reads
//! them. None may panic on any input; a header that parses must lie within the input and
//! encode back to the same bytes, and INIT's agreement must be a subset of the offer.

#![no_main]

use libfuzzer_sys::fuzz_target;
use vecio_fuse::abi::{
    FattrFlags, InHeader, InitIn, MkdirIn, Opcode, Rename2In, SetattrIn, SetxattrInExt, WriteIn,
};
use vecio_fuse::wire::{self, Extensions, Request};
use zerocopy::IntoBytes;

fuzz_target!(|data: &[u8]| {
    let _ = Extensions::parse(data);
    let Ok(req) = Request::parse(data) else {
        return;
    };
    let h: InHeader = req.header;
    assert!(h.len as usize <= data.len(), "a request longer than its bytes");
    assert_eq!(h.as_bytes(), &data[..std::mem::size_of::<InHeader>()]);
    let _ = Extensions::parse(req.ext);
    let mut body = req.body;
    match Opcode::from_raw(h.opcode) {
        Some(Opcode::Init) => {
            if let Ok(init) = body.arg::<InitIn>() {
                let offered = wire::offered(&init);
                assert!(offered.contains(wire::agreed(offered)), "agreed to more than offered");
            }
        }
        Some(Opcode::Setattr) => {
            if let Ok(a) = body.arg::<SetattrIn>() {
                let _ = FattrFlags::from_bits_retain(a.valid);
            }
        }
        Some(Opcode::Write) => {
            if let Ok(w) = body.arg::<WriteIn>() {
                if let Ok(payload) = body.bytes(w.size as usize) {
                    assert_eq!(payload.len(), w.size as usize);
                }
            }
        }
        Some(Opcode::Mkdir) => {
            if body.arg::<MkdirIn>().is_ok() {
                if let Ok(name) = body.name() {
                    assert!(!name.to_bytes().contains(&b'/') && !name.to_bytes().is_empty());
                }
            }
        }
        Some(Opcode::Rename2) => {
            if body.arg::<Rename2In>().is_ok() {
                let _ = body.name().and_then(|_| body.name());
            }
        }
        Some(Opcode::Setxattr) => {
            if let Ok(a) = body.arg::<SetxattrInExt>() {
                let _ = body.string().and_then(|_| body.bytes(a.size as usize));
            }
        }
        _ => {
            let _ = body.name();
            let _ = body.string();
        }
    }
});
