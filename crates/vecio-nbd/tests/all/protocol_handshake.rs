//! The handshake with a raw socket: options answered and refused (unknown, STARTTLS, bad
//! data, unknown export, too long), LIST, INFO, meta contexts, EXPORT_NAME, unknown client
//! flags and ABORT.

use crate::common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use common::{start, Opts, Raw};
use vecio_nbd::proto::{self, opt, rep};

#[test]
fn handshake_options_and_refusals() {
    let mut srv = start(Opts {
        name: "disk",
        description: "desc",
        ..Default::default()
    });
    let mut s = UnixStream::connect(&srv.socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut g = [0u8; 18];
    s.read_exact(&mut g).unwrap();
    assert_eq!(&g[16..], &[0, 3]);
    s.write_all(&1u32.to_be_bytes()).unwrap();
    let mut c = Raw {
        s,
        structured: false,
        extended: false,
        size: 0,
        flags: 0,
    };
    let expect = |c: &mut Raw, option: u32, kind: u32| {
        let (o, k, d) = c.option_reply();
        assert_eq!((o, k), (option, kind), "data {d:?}");
        d
    };
    c.option(99, b"whatever");
    expect(&mut c, 99, rep::ERR_UNSUP);
    c.option(opt::STARTTLS, &[]);
    expect(&mut c, opt::STARTTLS, rep::ERR_POLICY);
    c.option(opt::LIST, b"x");
    expect(&mut c, opt::LIST, rep::ERR_INVALID);
    c.option(opt::LIST, &[]);
    let d = expect(&mut c, opt::LIST, rep::SERVER);
    assert_eq!(&d[4..8], b"disk");
    assert_eq!(&d[8..], b"desc");
    expect(&mut c, opt::LIST, rep::ACK);
    // Meta contexts need structured replies first.
    let m = proto::encode_meta_request("disk", &["base:allocation"]);
    c.option(opt::SET_META_CONTEXT, &m);
    expect(&mut c, opt::SET_META_CONTEXT, rep::ERR_INVALID);
    c.option(
        opt::LIST_META_CONTEXT,
        &proto::encode_meta_request("disk", &["base:"]),
    );
    let d = expect(&mut c, opt::LIST_META_CONTEXT, rep::META_CONTEXT);
    assert_eq!(&d[4..], b"base:allocation");
    expect(&mut c, opt::LIST_META_CONTEXT, rep::ACK);
    // Garbage option data, unknown export, too long.
    c.option(opt::INFO, &[0, 0, 0, 9, b'a']);
    expect(&mut c, opt::INFO, rep::ERR_INVALID);
    c.option(opt::INFO, &proto::encode_info_request("nope", &[]));
    expect(&mut c, opt::INFO, rep::ERR_UNKNOWN);
    c.option(opt::INFO, &vec![0u8; 100_000]);
    expect(&mut c, opt::INFO, rep::ERR_TOO_BIG);
    // INFO with name and description asked for.
    c.option(
        opt::INFO,
        &proto::encode_info_request("disk", &[proto::info::NAME, proto::info::DESCRIPTION]),
    );
    let mut infos = Vec::new();
    loop {
        let (_, k, d) = c.option_reply();
        if k == rep::ACK {
            break;
        }
        assert_eq!(k, rep::INFO);
        infos.push(d);
    }
    assert!(infos.iter().any(|d| d[..2] == [0, 1] && &d[2..] == b"disk"));
    assert!(infos.iter().any(|d| d[..2] == [0, 2] && &d[2..] == b"desc"));
    assert!(infos.iter().any(|d| d[..2] == [0, 3] && d.len() == 14));
    // EXPORT_NAME enters transmission with the old reply (no zeroes: none were asked off).
    c.option(opt::EXPORT_NAME, b"disk");
    let mut r = [0u8; 134];
    c.s.read_exact(&mut r).unwrap();
    assert_eq!(u64::from_be_bytes(r[..8].try_into().unwrap()), 16 << 20);
    assert!(r[10..].iter().all(|&b| b == 0));
    let read = c.read(0, 512);
    assert_eq!(read.error, None);
    c.disconnect();

    // Unknown client flags: dropped. ABORT: acknowledged.
    let mut s = UnixStream::connect(&srv.socket).unwrap();
    s.read_exact(&mut g).unwrap();
    s.write_all(&0x80u32.to_be_bytes()).unwrap();
    let mut b = [0u8; 1];
    assert_eq!(s.read(&mut b).unwrap_or(0), 0);
    let mut s = UnixStream::connect(&srv.socket).unwrap();
    s.read_exact(&mut g).unwrap();
    s.write_all(&3u32.to_be_bytes()).unwrap();
    let mut c = Raw {
        s,
        structured: false,
        extended: false,
        size: 0,
        flags: 0,
    };
    c.option(opt::ABORT, &[]);
    expect(&mut c, opt::ABORT, rep::ACK);
    srv.stop().unwrap();
}
