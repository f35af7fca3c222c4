//! The protocol with a raw socket: every command, simple and structured replies, pipelined
//! requests answered by cookie, and bad input (wrong magic, unknown commands and flags,
//! lengths over the maximum, requests past the end, truncated requests, clients that vanish
//! mid-request or never read): each gets the documented error reply or a closed connection,
//! and the server keeps serving everyone else.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use common::{random_bytes, start, Opts, Raw};
use vecio_nbd::proto::{self, cmd, errno, opt, rep, CmdFlags, TransmissionFlags};

const FUA: u16 = CmdFlags::FUA.bits();

#[test]
fn reads_and_writes_with_both_reply_kinds() {
    let mut srv = start(Opts {
        size: 1 << 20,
        random: Some(1),
        ..Default::default()
    });
    let orig = std::fs::read(&srv.image).unwrap();
    for structured in [false, true] {
        let mut c = Raw::connect(&srv.socket, structured);
        assert_eq!(c.size, 1 << 20);
        let f = TransmissionFlags::from_bits_truncate(c.flags);
        assert!(f.contains(TransmissionFlags::CAN_MULTI_CONN | TransmissionFlags::SEND_FUA));
        assert_eq!(f.contains(TransmissionFlags::SEND_DF), structured);
        let r = c.read(4096, 8192);
        assert_eq!(r.error, 0);
        assert!(r.data == orig[4096..12288]);
        // Unaligned both ways.
        let r = c.read(4095, 3);
        assert!(r.data == orig[4095..4098]);
        assert_eq!(c.write(100_001, b"hello", FUA), 0);
        let r = c.read(100_000, 7);
        assert_eq!(&r.data[1..6], b"hello");
        assert_eq!(r.data[0], orig[100_000]);
        assert_eq!(r.data[6], orig[100_006]);
        // Zero-length read and write succeed and do nothing.
        assert_eq!(c.read(0, 0).error, 0);
        assert_eq!(c.write(0, b"", 0), 0);
        assert_eq!(c.command(cmd::FLUSH, 0, 0, 0), 0);
        c.disconnect();
    }
    srv.stop().unwrap();
}

#[test]
fn maximum_payload_writes_and_reads() {
    let mut srv = start(Opts {
        size: 80 << 20,
        ..Default::default()
    });
    let data = random_bytes(32 << 20, 12);
    for structured in [false, true] {
        let mut c = Raw::connect(&srv.socket, structured);
        let at = if structured { 40 << 20 } else { 3 };
        assert_eq!(c.write(at, &data, 0), 0);
        let r = c.read(at, 32 << 20);
        assert_eq!(r.error, 0);
        assert!(r.data == data, "32 MiB read back differs");
        c.disconnect();
    }
    srv.stop().unwrap();
}

#[test]
fn pipelined_requests_are_answered_by_cookie() {
    for aio in vecio::EngineKind::ALL {
        for cache in [vecio_nbd::Cache::None, vecio_nbd::Cache::Writeback] {
            pipelined(aio, cache);
        }
    }
}

fn pipelined(aio: vecio::EngineKind, cache: vecio_nbd::Cache) {
    let mut srv = start(Opts {
        size: 8 << 20,
        aio,
        cache,
        ..Default::default()
    });
    let mut c = Raw::connect(&srv.socket, true);
    let data = random_bytes(8 << 20, 9);
    // 64 writes of 128 KiB, none waited on, then 64 reads of the same ranges.
    for i in 0..64u64 {
        let at = (i * 131072) as usize;
        c.send(
            cmd::WRITE,
            0,
            1000 + i,
            at as u64,
            131072,
            &data[at..at + 131072],
        );
    }
    let mut seen = HashMap::new();
    for _ in 0..64 {
        let r = c.reply(None).unwrap();
        assert_eq!(r.error, 0);
        assert!(seen.insert(r.cookie, ()).is_none(), "cookie twice");
    }
    assert!((1000..1064).all(|k| seen.contains_key(&k)));
    for i in 0..64u64 {
        c.send(cmd::READ, 0, 2000 + i, i * 131072, 131072, &[]);
    }
    for _ in 0..64 {
        let r = c.reply(None).unwrap();
        let i = (r.cookie - 2000) as usize;
        assert!(
            r.data == data[i * 131072..(i + 1) * 131072],
            "read {i} differs"
        );
    }
    c.disconnect();
    srv.stop().unwrap();
    assert!(std::fs::read(&srv.image).unwrap() == data);
}

#[test]
fn trim_zeroes_and_block_status() {
    let mut srv = start(Opts {
        size: 4 << 20,
        ..Default::default()
    });
    let mut c = Raw::connect(&srv.socket, true);
    let ones = vec![1u8; 1 << 20];
    assert_eq!(c.write(0, &ones, 0), 0);
    // Block status: 1 MiB of data, then holes to the end.
    c.send(cmd::BLOCK_STATUS, 0, 5, 0, 4 << 20, &[]);
    let r = c.reply(None).unwrap();
    assert_eq!(r.error, 0);
    let ext: Vec<(u32, u32)> = r.data[4..]
        .chunks(8)
        .map(|e| {
            (
                u32::from_be_bytes(e[..4].try_into().unwrap()),
                u32::from_be_bytes(e[4..].try_into().unwrap()),
            )
        })
        .collect();
    assert_eq!(ext, vec![(1 << 20, 0), (3 << 20, 3)]);
    // REQ_ONE: exactly one extent, no longer than asked.
    c.send(
        cmd::BLOCK_STATUS,
        CmdFlags::REQ_ONE.bits(),
        6,
        4096,
        8192,
        &[],
    );
    let r = c.reply(None).unwrap();
    assert_eq!(r.data.len(), 4 + 8);
    assert_eq!(u32::from_be_bytes(r.data[4..8].try_into().unwrap()), 8192);

    // Write zeroes, punching and not, with FAST_ZERO; unaligned too.
    assert_eq!(c.command(cmd::WRITE_ZEROES, 0, 0, 65536), 0);
    let nh = CmdFlags::NO_HOLE.bits() | CmdFlags::FAST_ZERO.bits() | FUA;
    assert_eq!(c.command(cmd::WRITE_ZEROES, nh, 65536, 65536), 0);
    assert_eq!(c.command(cmd::WRITE_ZEROES, 0, 200_001, 999), 0);
    let r = c.read(0, 300_000);
    assert!(r.data[..131072].iter().all(|&b| b == 0));
    assert!(r.data[131072..200_001].iter().all(|&b| b == 1));
    assert!(r.data[200_001..201_000].iter().all(|&b| b == 0));
    assert!(r.data[201_000..].iter().all(|&b| b == 1));
    // Trim is advisory; it succeeds. Cache succeeds.
    assert_eq!(c.command(cmd::TRIM, FUA, 1 << 20, 1 << 20), 0);
    assert_eq!(c.command(cmd::CACHE, 0, 0, 1 << 20), 0);
    c.disconnect();
    srv.stop().unwrap();
    assert_eq!(std::fs::metadata(&srv.image).unwrap().len(), 4 << 20);
}

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
        assert_eq!(c.read((1 << 20) - 1, 2).error, errno::EINVAL);
        assert_eq!(c.read(u64::MAX - 1, 4).error, errno::EINVAL);
        assert_eq!(c.write((1 << 20) - 1, b"xy", 0), errno::ENOSPC);
        assert_eq!(c.command(cmd::WRITE_ZEROES, 0, 1 << 20, 1), errno::ENOSPC);
        assert_eq!(c.command(cmd::TRIM, 0, 1 << 20, 1), errno::EINVAL);
        // Over the maximum payload: the write's payload is skipped, the stream stays in step.
        assert_eq!(c.read(0, (32 << 20) + 1).error, errno::EINVAL);
        let big = vec![7u8; (32 << 20) + 1];
        assert_eq!(c.write(0, &big, 0), errno::EINVAL);
        // Unknown command, unknown flags, flags of another command.
        assert_eq!(c.command(42, 0, 0, 0), errno::EINVAL);
        assert_eq!(c.command(cmd::READ, 0x4000, 0, 1), errno::EINVAL);
        assert_eq!(c.write(0, b"z", CmdFlags::NO_HOLE.bits()), errno::EINVAL);
        assert_eq!(c.command(cmd::FLUSH, 0, 5, 0), errno::EINVAL);
        if !structured {
            // No metadata context negotiated, no DF.
            assert_eq!(c.command(cmd::BLOCK_STATUS, 0, 0, 512), errno::EINVAL);
            assert_eq!(
                c.command(cmd::READ, CmdFlags::DF.bits(), 0, 1),
                errno::EINVAL
            );
        }
        // Still serving.
        let r = c.read(0, 4096);
        assert_eq!(r.error, 0);
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
    assert_eq!(c.write(0, b"no", 0), errno::EPERM);
    assert_eq!(c.command(cmd::TRIM, 0, 0, 4096), errno::EPERM);
    assert_eq!(c.command(cmd::WRITE_ZEROES, 0, 0, 4096), errno::EPERM);
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
        kind: cmd::READ,
        cookie: 1,
        offset: 0,
        len: 512,
    }
    .encode();
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
            kind: cmd::WRITE,
            cookie: 2,
            offset: 0,
            len: 4096,
        }
        .encode()[..10],
    )
    .unwrap();
    drop(t);

    // A write whose payload stops half way: nothing may be written.
    let mut h = Raw::connect(&srv.socket, false);
    h.send(cmd::WRITE, 0, 3, 0, 1 << 20, &[0xee; 1000]);
    drop(h);

    // A client that dies in the handshake.
    let mut hs = UnixStream::connect(&srv.socket).unwrap();
    let mut g = [0u8; 18];
    hs.read_exact(&mut g).unwrap();
    hs.write_all(&[0, 0]).unwrap();
    drop(hs);

    std::thread::sleep(Duration::from_millis(100));
    let r = good.read(0, 65536);
    assert_eq!(r.error, 0);
    assert!(r.data == orig[..65536]);
    assert_eq!(good.write(512, b"still here", 0), 0);
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
    // Requests for 256 MiB of replies; the socket fills long before.
    for i in 0..256u64 {
        let r = proto::Request {
            flags: 0,
            kind: cmd::READ,
            cookie: i,
            offset: (i % 16) << 20,
            len: 1 << 20,
        };
        match greedy.s.write(&r.encode()) {
            Ok(28) => sent += 1,
            _ => break,
        }
    }
    assert!(sent > 16);
    let mut other = Raw::connect(&srv.socket, true);
    for i in 0..32u64 {
        assert_eq!(other.write(i * 4097, &[i as u8; 5000], 0), 0);
        assert_eq!(other.read(i * 4097, 5000).data, vec![i as u8; 5000]);
    }
    other.disconnect();
    // The greedy client can still collect every reply.
    greedy.s.set_nonblocking(false).unwrap();
    for _ in 0..sent {
        let r = greedy.reply(None).unwrap();
        assert_eq!(r.error, 0);
        assert_eq!(r.data.len(), 1 << 20);
    }
    greedy.disconnect();
    srv.stop().unwrap();
}

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
    assert_eq!(read.error, 0);
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
        size: 0,
        flags: 0,
    };
    c.option(opt::ABORT, &[]);
    expect(&mut c, opt::ABORT, rep::ACK);
    srv.stop().unwrap();
}

/// Shutdown while requests are in flight: they are answered, the server returns cleanly.
#[test]
fn shutdown_answers_requests_in_flight() {
    let mut srv = start(Opts {
        size: 16 << 20,
        ..Default::default()
    });
    let mut c = Raw::connect(&srv.socket, true);
    let data = random_bytes(1 << 20, 11);
    for i in 0..8u64 {
        c.send(cmd::WRITE, 0, i, i << 20, 1 << 20, &data);
    }
    // Every write was received once its reply arrives; stop after the first.
    let first = c.reply(None).unwrap();
    assert_eq!(first.error, 0);
    srv.stop().unwrap();
    let mut done = vec![first.cookie as usize];
    while let Ok(r) = c.reply(None) {
        assert_eq!(r.error, 0);
        done.push(r.cookie as usize);
    }
    let img = std::fs::read(&srv.image).unwrap();
    for i in done {
        assert!(
            img[i << 20..(i + 1) << 20] == data[..],
            "write {i} answered but not in the file"
        );
    }
    assert!(!srv.socket.exists(), "socket file left behind");
}

/// Four connections write and zero interleaved, unaligned 1000-byte ranges of the same
/// blocks at once (read-modify-write beside fallocate beside aligned writes): every byte ends
/// as its owner last wrote it, and nothing deadlocks.
#[test]
fn concurrent_unaligned_writes_and_zeroes_do_not_tear() {
    use rand::{Rng, SeedableRng};
    const SPAN: u64 = 1000;
    const SIZE: u64 = 2 << 20;
    let mut srv = start(Opts {
        size: SIZE,
        random: Some(13),
        ..Default::default()
    });
    let orig = std::fs::read(&srv.image).unwrap();
    let socket = srv.socket.clone();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let socket = socket.clone();
            let mut mine = orig.clone();
            std::thread::spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(100 + t);
                let mut c = Raw::connect(&socket, t % 2 == 0);
                let spans = SIZE / SPAN;
                for round in 0..40u64 {
                    let mut sent = 0;
                    let mut taken = std::collections::HashSet::new();
                    for k in 0..8u64 {
                        // A span this thread owns (index = t mod 4), not already in flight:
                        // overlapping requests in flight have no defined order.
                        let i = (rng.gen_range(0..spans / 4)) * 4 + t;
                        if !taken.insert(i) {
                            continue;
                        }
                        let at = i * SPAN;
                        let len = SPAN.min(SIZE - at) as usize;
                        let cookie = round * 100 + k;
                        if rng.gen_bool(0.25) {
                            let flags = if rng.gen_bool(0.5) {
                                CmdFlags::NO_HOLE.bits()
                            } else {
                                0
                            };
                            c.send(cmd::WRITE_ZEROES, flags, cookie, at, len as u32, &[]);
                            mine[at as usize..at as usize + len].fill(0);
                        } else {
                            let v = (rng.gen::<u8>() | 1).wrapping_add(t as u8);
                            let payload = vec![v; len];
                            c.send(cmd::WRITE, 0, cookie, at, len as u32, &payload);
                            mine[at as usize..at as usize + len].fill(v);
                        }
                        sent += 1;
                    }
                    for _ in 0..sent {
                        assert_eq!(c.reply(None).unwrap().error, 0);
                    }
                }
                c.disconnect();
                mine
            })
        })
        .collect();
    let results: Vec<Vec<u8>> = threads.into_iter().map(|h| h.join().unwrap()).collect();
    srv.stop().unwrap();
    let now = std::fs::read(&srv.image).unwrap();
    for (i, chunk) in now.chunks(SPAN as usize).enumerate() {
        let owner = &results[i % 4];
        let at = i * SPAN as usize;
        assert!(
            chunk == &owner[at..at + chunk.len()],
            "span {i} at {at} torn"
        );
    }
}

/// `shared: 1`: a second client waits until the first leaves, then is served.
#[test]
fn the_connection_limit_holds_further_clients_back() {
    let mut srv = start(Opts {
        shared: 1,
        ..Default::default()
    });
    let first = Raw::connect(&srv.socket, false);
    let mut second = UnixStream::connect(&srv.socket).unwrap();
    second
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut g = [0u8; 18];
    assert!(second.read_exact(&mut g).is_err(), "served over the limit");
    first.disconnect();
    second
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    second.read_exact(&mut g).unwrap();
    assert_eq!(&g[..8], b"NBDMAGIC");
    drop(second);
    srv.stop().unwrap();
}

/// An export whose size is not a multiple of the block size: its last bytes can be written
/// and read, and the file never grows.
#[test]
fn an_odd_sized_export_keeps_its_size() {
    let size = (1u64 << 20) + 333;
    let mut srv = start(Opts {
        size,
        random: Some(14),
        ..Default::default()
    });
    let mut expect = std::fs::read(&srv.image).unwrap();
    let mut c = Raw::connect(&srv.socket, true);
    assert_eq!(c.size, size);
    let tail = vec![0x5a; 700];
    assert_eq!(c.write(size - 700, &tail, FUA), 0);
    expect[(size - 700) as usize..].fill(0x5a);
    assert!(c.read(size - 1000, 1000).data == expect[(size - 1000) as usize..]);
    assert_eq!(c.command(cmd::WRITE_ZEROES, 0, size - 10, 10), 0);
    expect[(size - 10) as usize..].fill(0);
    assert_eq!(c.write(size - 1, b"xy", 0), errno::ENOSPC);
    c.disconnect();
    srv.stop().unwrap();
    assert_eq!(std::fs::metadata(&srv.image).unwrap().len(), size);
    assert!(std::fs::read(&srv.image).unwrap() == expect);
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
        c.send(cmd::READ, 0, i, i * 65536, 65536, &[]);
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
