//! The protocol with a raw socket, bad input and bad clients: requests past the end, over the
//! maximum, with unknown commands or flags, writes to a read-only export, wrong magic,
//! truncated requests, clients that vanish mid-request, never read their replies or
//! half-close: each gets the documented error reply or a closed connection, and the server
//! keeps serving everyone else.

use crate::common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use common::{start, Opts, Raw};
use vecio_nbd::proto::{self, CmdFlags, Command, Errno, TransmissionFlags};

#[test]
fn bad_requests_get_errors_and_the_connection_goes_on() {
    let mut srv = start(Opts {
        size: 1 << 20,
        random: Some(4),
        ..Default::default()
    });
    let orig = std::fs::read(&srv.image).unwrap();
    for structured in [false, true] {
        let mut c = Raw::connect(&srv.socket, structured);
        // Past the end.
        assert_eq!(c.read((1 << 20) - 1, 2).error, Some(Errno::EINVAL));
        assert_eq!(c.read(u64::MAX - 1, 4).error, Some(Errno::EINVAL));
        assert_eq!(c.write((1 << 20) - 1, b"xy", 0), Err(Errno::ENOSPC));
        assert_eq!(
            c.command(Command::WriteZeroes, 0, 1 << 20, 1),
            Err(Errno::ENOSPC)
        );
        assert_eq!(c.command(Command::Trim, 0, 1 << 20, 1), Err(Errno::EINVAL));
        // Over the maximum payload: the write's payload is skipped, the stream stays in step.
        // A read over it: NBD_EOVERFLOW with structured replies, NBD_EINVAL with simple ones.
        let over = if structured {
            Some(Errno::EOVERFLOW)
        } else {
            Some(Errno::EINVAL)
        };
        assert_eq!(c.read(0, (32 << 20) + 1).error, over);
        let big = vec![7u8; (32 << 20) + 1];
        assert_eq!(c.write(0, &big, 0), Err(Errno::EINVAL));
        // Unknown command, unknown flags, flags of another command.
        assert_eq!(c.command(42u16, 0, 0, 0), Err(Errno::EINVAL));
        assert_eq!(c.command(Command::Read, 0x4000, 0, 1), Err(Errno::EINVAL));
        assert_eq!(
            c.write(0, b"z", CmdFlags::NO_HOLE.bits()),
            Err(Errno::EINVAL)
        );
        assert_eq!(c.command(Command::Flush, 0, 5, 0), Err(Errno::EINVAL));
        if !structured {
            // No metadata context negotiated, no DF.
            assert_eq!(
                c.command(Command::BlockStatus, 0, 0, 512),
                Err(Errno::EINVAL)
            );
            assert_eq!(
                c.command(Command::Read, CmdFlags::DF.bits(), 0, 1),
                Err(Errno::EINVAL)
            );
        }
        // Still serving.
        let r = c.read(0, 4096);
        assert_eq!(r.error, None);
        assert!(r.data == orig[..4096]);
        c.disconnect();
    }
    srv.stop().unwrap();
    let now = std::fs::read(&srv.image).unwrap();
    assert!(now == orig, "a refused request changed the image");
}

#[test]
fn read_only_export_refuses_writes_with_eperm() {
    let mut srv = start(Opts {
        read_only: true,
        random: Some(5),
        size: 1 << 20,
        ..Default::default()
    });
    let orig = std::fs::read(&srv.image).unwrap();
    let mut c = Raw::connect(&srv.socket, true);
    assert!(c.flags & TransmissionFlags::READ_ONLY.bits() != 0);
    assert_eq!(c.write(0, b"no", 0), Err(Errno::EPERM));
    assert_eq!(c.command(Command::Trim, 0, 0, 4096), Err(Errno::EPERM));
    assert_eq!(
        c.command(Command::WriteZeroes, 0, 0, 4096),
        Err(Errno::EPERM)
    );
    assert!(c.read(0, 16).data == orig[..16]);
    c.disconnect();
    srv.stop().unwrap();
    assert!(std::fs::read(&srv.image).unwrap() == orig);
}

/// A client that breaks the stream is dropped; one already connected keeps working.
#[test]
fn wrong_magic_truncation_and_vanishing_clients_affect_no_one_else() {
    let mut srv = start(Opts {
        size: 1 << 20,
        random: Some(6),
        ..Default::default()
    });
    let orig = std::fs::read(&srv.image).unwrap();
    let mut good = Raw::connect(&srv.socket, true);

    // Wrong request magic: the connection is closed.
    let mut bad = Raw::connect(&srv.socket, true);
    let mut req = proto::Request {
        flags: 0,
        kind: Command::Read.into(),
        cookie: 1,
        offset: 0,
        len: 512,
    }
    .encode()
    .unwrap();
    req[0] = 0x12;
    bad.s.write_all(&req).unwrap();
    let mut b = [0u8; 1];
    assert_eq!(
        bad.s.read(&mut b).unwrap_or(0),
        0,
        "server kept a bad stream"
    );

    // Truncated header, then gone.
    let mut t = Raw::connect(&srv.socket, false);
    t.s.write_all(
        &proto::Request {
            flags: 0,
            kind: Command::Write.into(),
            cookie: 2,
            offset: 0,
            len: 4096,
        }
        .encode()
        .unwrap()[..10],
    )
    .unwrap();
    drop(t);

    // A write whose payload stops half way: nothing may be written.
    let mut h = Raw::connect(&srv.socket, false);
    h.send(Command::Write, 0, 3, 0, 1 << 20, &[0xee; 1000]);
    drop(h);

    // A client that dies in the handshake.
    let mut hs = UnixStream::connect(&srv.socket).unwrap();
    let mut g = [0u8; 18];
    hs.read_exact(&mut g).unwrap();
    hs.write_all(&[0, 0]).unwrap();
    drop(hs);

    std::thread::sleep(Duration::from_millis(100));
    let r = good.read(0, 65536);
    assert_eq!(r.error, None);
    assert!(r.data == orig[..65536]);
    assert_eq!(good.write(512, b"still here", 0), Ok(()));
    good.disconnect();
    srv.stop().unwrap();
    let now = std::fs::read(&srv.image).unwrap();
    assert!(now[..512] == orig[..512] && now[522..] == orig[522..]);
}

/// A client that sends reads and never reads the replies holds only its own connection.
#[test]
fn a_client_that_does_not_read_does_not_stall_others() {
    let mut srv = start(Opts {
        size: 16 << 20,
        ..Default::default()
    });
    let mut greedy = Raw::connect(&srv.socket, true);
    greedy.s.set_nonblocking(true).unwrap();
    let mut sent = 0u64;
    // Requests for 256 MiB of replies; the reply side of the socket fills long before, and the
    // requests the server cannot take yet wait in its read buffer.
    for i in 0..256u64 {
        let r = proto::Request {
            flags: 0,
            kind: Command::Read.into(),
            cookie: i,
            offset: (i % 16) << 20,
            len: 1 << 20,
        };
        let wire = r.encode().unwrap();
        match greedy.s.write(&wire) {
            Ok(28) => sent += 1,
            Ok(n) => {
                // A partial write on a full socket: finish the request, blocking.
                greedy.s.set_nonblocking(false).unwrap();
                greedy.s.write_all(&wire[n..]).unwrap();
                sent += 1;
                break;
            }
            Err(_) => break,
        }
    }
    assert!(sent > 16);
    let mut other = Raw::connect(&srv.socket, true);
    for i in 0..32u64 {
        assert_eq!(other.write(i * 4097, &[i as u8; 5000], 0), Ok(()));
        assert_eq!(other.read(i * 4097, 5000).data, vec![i as u8; 5000]);
    }
    other.disconnect();
    // The greedy client can still collect every reply.
    greedy.s.set_nonblocking(false).unwrap();
    for _ in 0..sent {
        let r = greedy.reply(None).unwrap();
        assert_eq!(r.error, None);
        assert_eq!(r.data.len(), 1 << 20);
    }
    greedy.disconnect();
    srv.stop().unwrap();
}

/// A client that shuts down its writing side after its requests still gets every reply.
#[test]
fn replies_reach_a_client_that_half_closed() {
    let mut srv = start(Opts {
        size: 4 << 20,
        random: Some(15),
        ..Default::default()
    });
    let orig = std::fs::read(&srv.image).unwrap();
    let mut c = Raw::connect(&srv.socket, true);
    for i in 0..16u64 {
        c.send(Command::Read, 0, i, i * 65536, 65536, &[]);
    }
    c.s.shutdown(std::net::Shutdown::Write).unwrap();
    for _ in 0..16 {
        let r = c.reply(None).unwrap();
        let at = r.cookie as usize * 65536;
        assert!(r.data == orig[at..at + 65536]);
    }
    let mut b = [0u8; 1];
    assert_eq!(c.s.read(&mut b).unwrap(), 0);
    srv.stop().unwrap();
}
