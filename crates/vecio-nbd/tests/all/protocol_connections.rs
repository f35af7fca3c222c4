//! Connections side by side and over time, with a raw socket: shutdown with requests in
//! flight, four clients writing and zeroing interleaved unaligned ranges of the same blocks,
//! and the connection limit holding further clients back.

use crate::common;

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use common::{random_bytes, start, Opts, Raw};
use vecio_nbd::proto::{CmdFlags, Command};

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
        c.send(Command::Write, 0, i, i << 20, 1 << 20, &data);
    }
    // Every write was received once its reply arrives; stop after the first.
    let first = c.reply(None).unwrap();
    assert_eq!(first.error, None);
    srv.stop().unwrap();
    let mut done = vec![first.cookie as usize];
    while let Ok(r) = c.reply(None) {
        assert_eq!(r.error, None);
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
                            c.send(Command::WriteZeroes, flags, cookie, at, len as u32, &[]);
                            mine[at as usize..at as usize + len].fill(0);
                        } else {
                            let v = (rng.gen::<u8>() | 1).wrapping_add(t as u8);
                            let payload = vec![v; len];
                            c.send(Command::Write, 0, cookie, at, len as u32, &payload);
                            mine[at as usize..at as usize + len].fill(v);
                        }
                        sent += 1;
                    }
                    for _ in 0..sent {
                        assert_eq!(c.reply(None).unwrap().error, None);
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
