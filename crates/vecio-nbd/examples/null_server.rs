//! A null NBD server: the socket round trip's own limit, with no disk and no server work.
//!
//! It answers every read with zeroes from memory and every other request with success, in
//! simple replies (it refuses structured replies and extended headers, which clients accept),
//! one thread per connection: a blocking `read(2)` takes whatever requests have arrived, one
//! `writev(2)` sends all their replies. That is the least a server can do per request, so what
//! a client (fio's nbd engine, say) gets from it is the ceiling any server on this machine and
//! socket type can reach with that client: `scripts/nbd-cpu --server null`.
//!
//! ```text
//! cargo build --release -p vecio-nbd --example null_server
//! target/release/examples/null_server --unix /tmp/null.sock     # or --tcp 127.0.0.1:10809
//! ```

use std::io::{IoSlice, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;

use vecio_nbd::proto::{self, opt, rep, HandshakeFlags, OptionHeader, Request, TransmissionFlags};

/// The size the export claims.
const SIZE: u64 = 1 << 30;
/// The largest read answered (the protocol's usual 32 MiB maximum).
const MAX_READ: usize = 32 << 20;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match (args.get(1).map(String::as_str), args.get(2)) {
        (Some("--unix"), Some(path)) => {
            let _ = std::fs::remove_file(path);
            let l = UnixListener::bind(path)?;
            for s in l.incoming() {
                let s = s?;
                std::thread::spawn(move || serve(s));
            }
        }
        (Some("--tcp"), Some(addr)) => {
            let l = TcpListener::bind(addr)?;
            for s in l.incoming() {
                let s = s?;
                s.set_nodelay(true)?;
                std::thread::spawn(move || serve(s));
            }
        }
        _ => eprintln!("usage: null_server --unix PATH | --tcp ADDR:PORT"),
    }
    Ok(())
}

/// One connection: handshake, then requests until the client leaves.
fn serve<S: Read + Write>(mut s: S) -> std::io::Result<()> {
    if !handshake(&mut s)? {
        return Ok(());
    }
    let zeroes = vec![0u8; MAX_READ];
    let mut buf = vec![0u8; 1 << 20];
    let (mut start, mut end) = (0usize, 0usize);
    let mut heads: Vec<[u8; proto::SIMPLE_REPLY_LEN]> = Vec::with_capacity(256);
    let mut lens: Vec<usize> = Vec::with_capacity(256);
    loop {
        if start == end {
            (start, end) = (0, 0);
        } else if buf.len() - end < proto::REQUEST_LEN {
            buf.copy_within(start..end, 0);
            (start, end) = (0, end - start);
        }
        let n = s.read(&mut buf[end..])?;
        if n == 0 {
            return Ok(());
        }
        end += n;
        heads.clear();
        lens.clear();
        while end - start >= proto::REQUEST_LEN {
            let mut h = [0u8; proto::REQUEST_LEN];
            h.copy_from_slice(&buf[start..start + proto::REQUEST_LEN]);
            let Ok(req) = Request::decode(&h) else {
                return Ok(());
            };
            let cmd = req.command();
            let payload = match cmd {
                Ok(proto::Command::Write) => req.len as usize,
                _ => 0,
            };
            if end - start < proto::REQUEST_LEN + payload {
                break; // the rest of a write's payload has not arrived yet
            }
            start += proto::REQUEST_LEN + payload;
            match cmd {
                Ok(proto::Command::Disc) => return Ok(()),
                Ok(proto::Command::Read) => lens.push((req.len as usize).min(MAX_READ)),
                _ => lens.push(0),
            }
            heads.push(proto::simple_reply(None, req.cookie));
        }
        let mut slices = Vec::with_capacity(2 * heads.len());
        for (h, &len) in heads.iter().zip(&lens) {
            slices.push(IoSlice::new(h));
            if len > 0 {
                slices.push(IoSlice::new(&zeroes[..len]));
            }
        }
        write_all_vectored(&mut s, &mut slices)?;
    }
}

fn write_all_vectored<S: Write>(s: &mut S, mut slices: &mut [IoSlice<'_>]) -> std::io::Result<()> {
    while !slices.is_empty() {
        let n = s.write_vectored(slices)?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}

/// Fixed newstyle: GO (or EXPORT_NAME) gets a 1 GiB export, everything else NBD_REP_ERR_UNSUP.
/// False when the client left.
fn handshake<S: Read + Write>(s: &mut S) -> std::io::Result<bool> {
    let hs = HandshakeFlags::FIXED_NEWSTYLE | HandshakeFlags::NO_ZEROES;
    s.write_all(&proto::greeting(hs))?;
    let mut cf = [0u8; 4];
    s.read_exact(&mut cf)?;
    let no_zeroes = u32::from_be_bytes(cf) & 2 != 0;
    let flags = TransmissionFlags::HAS_FLAGS | TransmissionFlags::SEND_FLUSH;
    loop {
        let mut h = [0u8; proto::OPTION_HEADER_LEN];
        s.read_exact(&mut h)?;
        let Ok(h) = OptionHeader::decode(&h) else {
            return Ok(false);
        };
        let mut data = vec![0u8; h.len as usize];
        s.read_exact(&mut data)?;
        let mut out = Vec::new();
        match h.option {
            opt::EXPORT_NAME => {
                s.write_all(&proto::encode_export_name_reply(SIZE, flags, no_zeroes))?;
                return Ok(true);
            }
            opt::GO => {
                let info = proto::info_export(SIZE, flags);
                proto::encode_option_reply(&mut out, h.option, rep::INFO, &info);
                proto::encode_option_reply(&mut out, h.option, rep::ACK, &[]);
                s.write_all(&out)?;
                return Ok(true);
            }
            opt::ABORT => return Ok(false),
            _ => proto::encode_option_reply(&mut out, h.option, rep::ERR_UNSUP, &[]),
        }
        s.write_all(&out)?;
    }
}
