//! The protocol with a raw socket, command by command: reads and writes with simple and
//! structured replies, maximum-size payloads, pipelined requests answered by cookie, trim,
//! write zeroes, cache and block status, and an export whose size is not a multiple of the
//! block size.

use crate::common;

use std::collections::HashMap;

use common::{random_bytes, start, Opts, Raw};
use vecio_nbd::proto::{CmdFlags, Command, Errno, TransmissionFlags};

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
        assert_eq!(r.error, None);
        assert!(r.data == orig[4096..12288]);
        // Unaligned both ways.
        let r = c.read(4095, 3);
        assert!(r.data == orig[4095..4098]);
        assert_eq!(c.write(100_001, b"hello", FUA), Ok(()));
        let r = c.read(100_000, 7);
        assert_eq!(&r.data[1..6], b"hello");
        assert_eq!(r.data[0], orig[100_000]);
        assert_eq!(r.data[6], orig[100_006]);
        // Zero-length read and write succeed and do nothing.
        assert_eq!(c.read(0, 0).error, None);
        assert_eq!(c.write(0, b"", 0), Ok(()));
        assert_eq!(c.command(Command::Flush, 0, 0, 0), Ok(()));
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
        assert_eq!(c.write(at, &data, 0), Ok(()));
        let r = c.read(at, 32 << 20);
        assert_eq!(r.error, None);
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
            Command::Write,
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
        assert_eq!(r.error, None);
        assert!(seen.insert(r.cookie, ()).is_none(), "cookie twice");
    }
    assert!((1000..1064).all(|k| seen.contains_key(&k)));
    for i in 0..64u64 {
        c.send(Command::Read, 0, 2000 + i, i * 131072, 131072, &[]);
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
    assert_eq!(c.write(0, &ones, 0), Ok(()));
    // Block status: 1 MiB of data, then holes to the end.
    c.send(Command::BlockStatus, 0, 5, 0, 4 << 20, &[]);
    let r = c.reply(None).unwrap();
    assert_eq!(r.error, None);
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
        Command::BlockStatus,
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
    assert_eq!(c.command(Command::WriteZeroes, 0, 0, 65536), Ok(()));
    let nh = CmdFlags::NO_HOLE.bits() | CmdFlags::FAST_ZERO.bits() | FUA;
    assert_eq!(c.command(Command::WriteZeroes, nh, 65536, 65536), Ok(()));
    assert_eq!(c.command(Command::WriteZeroes, 0, 200_001, 999), Ok(()));
    let r = c.read(0, 300_000);
    assert!(r.data[..131072].iter().all(|&b| b == 0));
    assert!(r.data[131072..200_001].iter().all(|&b| b == 1));
    assert!(r.data[200_001..201_000].iter().all(|&b| b == 0));
    assert!(r.data[201_000..].iter().all(|&b| b == 1));
    // Trim is advisory; it succeeds. Cache succeeds.
    assert_eq!(c.command(Command::Trim, FUA, 1 << 20, 1 << 20), Ok(()));
    assert_eq!(c.command(Command::Cache, 0, 0, 1 << 20), Ok(()));
    c.disconnect();
    srv.stop().unwrap();
    assert_eq!(std::fs::metadata(&srv.image).unwrap().len(), 4 << 20);
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
    assert_eq!(c.write(size - 700, &tail, FUA), Ok(()));
    expect[(size - 700) as usize..].fill(0x5a);
    assert!(c.read(size - 1000, 1000).data == expect[(size - 1000) as usize..]);
    assert_eq!(c.command(Command::WriteZeroes, 0, size - 10, 10), Ok(()));
    expect[(size - 10) as usize..].fill(0);
    assert_eq!(c.write(size - 1, b"xy", 0), Err(Errno::ENOSPC));
    c.disconnect();
    srv.stop().unwrap();
    assert_eq!(std::fs::metadata(&srv.image).unwrap().len(), size);
    assert!(std::fs::read(&srv.image).unwrap() == expect);
}
