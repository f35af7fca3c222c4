//! Extended headers with a raw client: 32-byte requests and replies, 64-bit effect lengths,
//! the payload flag, block status with a filter, and what the server refuses.

use crate::common;

use std::io::Read;

use common::{start, Opts, Raw};
use vecio_nbd::proto::{opt, rep, BlockStatusFilter, CmdFlags, Command, Errno, TransmissionFlags};

const GIB: u64 = 1 << 30;

#[test]
fn extended_requests_carry_64_bit_lengths_and_the_payload_flag() {
    let mut srv = start(Opts {
        size: 8 * GIB,
        ..Default::default()
    });
    let mut c = Raw::connect_extended(&srv.socket);
    let f = TransmissionFlags::from_bits_truncate(c.flags);
    assert!(f.contains(TransmissionFlags::BLOCK_STATUS_PAYLOAD | TransmissionFlags::SEND_DF));
    // Write (with PAYLOAD_LEN, added by the client) and read back across 4 GiB.
    let at = 4 * GIB - 100;
    assert_eq!(c.write(at, &[7u8; 300], 0), Ok(()));
    let r = c.read(at - 4, 308);
    assert_eq!(r.error, None);
    assert_eq!(&r.data[4..304], &[7u8; 300][..]);
    // One trim and one write-zeroes of 5 GiB each.
    c.send_long(Command::Trim, 0, 1, 0, 5 * GIB, &[]);
    assert_eq!(c.reply(None).unwrap().error, None);
    c.send_long(Command::WriteZeroes, 0, 2, GIB, 5 * GIB, &[]);
    assert_eq!(c.reply(None).unwrap().error, None);
    // Block status over the whole export: one 64-bit descriptor for 8 GiB of hole.
    c.send_long(Command::BlockStatus, 0, 3, 0, 8 * GIB, &[]);
    let r = c.reply(None).unwrap();
    assert_eq!(r.error, None);
    assert_eq!(&r.data[..8], &[0, 0, 0, 1, 0, 0, 0, 1]); // context 1, one descriptor
    assert_eq!(&r.data[8..16], &(8 * GIB).to_be_bytes());
    assert_eq!(&r.data[16..24], &3u64.to_be_bytes());
    // The same through the payload filter.
    let pl = CmdFlags::PAYLOAD_LEN.bits();
    let filter = BlockStatusFilter {
        len: 8 * GIB,
        ids: vec![1],
    };
    let d = filter.encode();
    c.send_long(Command::BlockStatus, pl, 4, 0, d.len() as u64, &d);
    let f = c.reply(None).unwrap();
    assert_eq!((f.error, &f.data), (None, &r.data));
    srv.stop().unwrap();
}

#[test]
fn extended_refusals_keep_the_stream_in_step() {
    let mut srv = start(Opts {
        size: 16 << 20,
        ..Default::default()
    });
    let mut c = Raw::connect_extended(&srv.socket);
    let pl = CmdFlags::PAYLOAD_LEN.bits();
    // A write without the payload flag still has its payload (as qemu 10 sends them, and
    // qemu-nbd serves them).
    c.send_long(Command::Write, 0, 1, 8, 4, b"qemu");
    assert_eq!(c.reply(None).unwrap().error, None);
    assert_eq!(&c.read(8, 4).data, b"qemu");
    // Unknown and repeated context ids, a malformed filter, a payload on a trim: the
    // payload is consumed and the request refused.
    let bad: [&[u8]; 3] = [
        &BlockStatusFilter {
            len: 4096,
            ids: vec![9],
        }
        .encode(),
        &BlockStatusFilter {
            len: 4096,
            ids: vec![1, 1],
        }
        .encode(),
        &[0u8; 10],
    ];
    for d in bad {
        c.send_long(Command::BlockStatus, pl, 2, 0, d.len() as u64, d);
        assert_eq!(c.reply(None).unwrap().error, Some(Errno::EINVAL));
    }
    c.send_long(Command::Trim, pl, 3, 0, 5, b"12345");
    assert_eq!(c.reply(None).unwrap().error, Some(Errno::EINVAL));
    // A filter whose effect length runs past the end.
    let d = BlockStatusFilter {
        len: 32 << 20,
        ids: vec![1],
    }
    .encode();
    c.send_long(Command::BlockStatus, pl, 4, 0, d.len() as u64, &d);
    assert_eq!(c.reply(None).unwrap().error, Some(Errno::EINVAL));
    // Still in step.
    assert_eq!(c.write(0, b"fine", 0), Ok(()));
    assert_eq!(&c.read(0, 4).data, b"fine");
    // A payload over 32 MiB: the server hangs up rather than read it.
    c.send_long(Command::Write, pl, 5, 0, (32 << 20) + 1, &[]);
    let mut b = [0u8; 1];
    assert_eq!(c.s.read(&mut b).unwrap_or(0), 0);
    srv.stop().unwrap();
}

#[test]
fn structured_replies_after_extended_headers_are_refused() {
    let mut srv = start(Opts::default());
    let mut c = Raw::connect(&srv.socket, false);
    // A fresh connection, still negotiating: compare the two options' answers.
    let mut n = Raw::negotiating(&srv.socket);
    n.option(opt::EXTENDED_HEADERS, b"x");
    assert_eq!(n.option_reply().1, rep::ERR_INVALID);
    n.option(opt::EXTENDED_HEADERS, &[]);
    assert_eq!(n.option_reply().1, rep::ACK);
    n.option(opt::STRUCTURED_REPLY, &[]);
    assert_eq!(n.option_reply().1, rep::ERR_EXT_HEADER_REQD);
    n.option(opt::ABORT, &[]);
    assert_eq!(n.option_reply().1, rep::ACK);
    // A compact client is served as before.
    assert_eq!(c.write(0, b"compact", 0), Ok(()));
    c.disconnect();
    srv.stop().unwrap();
}
