//! Round trips the server saves the kernel (issue 27): read-only opens handed to the kernel
//! (`FsConfig::passthrough_reads`) while writers stay served, a missing name's absence cached
//! like a name, and no `FLUSH` at close where the kernel keeps the locks (FUSE over io_uring).
//! Each test counts the requests the server served, by opcode.

use crate::common;

use std::fs;
use std::io::Read;
use std::os::unix::fs::FileExt;

use vecio_fuse::abi::{InitFlags, Opcode};
use vecio_fuse::Summary;

fn count(s: &Summary, op: Opcode) -> u64 {
    s.stats
        .by_opcode()
        .iter()
        .find(|(o, _)| *o == op)
        .map_or(0, |(_, n)| *n)
}

/// Read-only opens go to the kernel: no `READ` reaches the server, and kill-priv v2 is kept for
/// the writes it still serves.
#[test]
fn read_only_opens_go_to_the_kernel() {
    let mut cfg = common::config();
    cfg.fs.passthrough_reads = true;
    let Some(fx) = common::mount("rt-reads", cfg) else {
        return;
    };
    let data = common::pattern(7, 300 << 10);
    fs::write(fx.s("f"), &data).unwrap();
    for _ in 0..3 {
        assert_eq!(fs::read(fx.m("f")).unwrap(), data);
    }
    let s = fx.finish();
    if !s.negotiated.has(InitFlags::PASSTHROUGH) {
        eprintln!("the kernel did not grant FUSE_PASSTHROUGH: only the data was checked");
        return;
    }
    assert!(
        s.negotiated.has(InitFlags::HANDLE_KILLPRIV_V2),
        "writes stay served: kill-priv v2 is kept"
    );
    assert_eq!(count(&s, Opcode::Read), 0, "{}", s.stats.requests_line());
}

/// A reader that comes while a writer is open is served (the kernel would refuse a passthrough
/// open beside the writer's cached one: `EIO`); a writer that comes while a reader is with the
/// kernel joins it there (the kernel refuses any other open of such an inode: `EIO`), and the
/// reader sees its bytes at once.
#[test]
fn readers_and_writers_of_one_file_mix() {
    let mut cfg = common::config();
    cfg.fs.passthrough_reads = true;
    let Some(fx) = common::mount("rt-mix", cfg) else {
        return;
    };
    let data = common::pattern(8, 48 << 10);
    fs::write(fx.m("f"), &data).unwrap();
    let writer = fs::OpenOptions::new().write(true).open(fx.m("f")).unwrap();
    let mut seen = Vec::new();
    fs::File::open(fx.m("f"))
        .unwrap()
        .read_to_end(&mut seen)
        .unwrap();
    assert_eq!(seen, data);
    drop(writer);
    for round in 0..20u8 {
        let reader = fs::File::open(fx.m("f")).unwrap();
        let mut first = [0u8; 16];
        reader.read_exact_at(&mut first, 0).unwrap();
        let writer = fs::OpenOptions::new().write(true).open(fx.m("f")).unwrap();
        let text = [b'a' + round; 23];
        writer.write_all_at(&text, 1000).unwrap();
        let mut back = [0u8; 23];
        reader.read_exact_at(&mut back, 1000).unwrap();
        assert_eq!(back, text, "round {round}");
        // Opened in the other order, right after the others closed.
        let writer2 = fs::OpenOptions::new().write(true).open(fx.m("f")).unwrap();
        drop((reader, writer));
        let reader2 = fs::File::open(fx.m("f")).unwrap();
        writer2.write_all_at(b"second", 2000).unwrap();
        let mut back = [0u8; 6];
        reader2.read_exact_at(&mut back, 2000).unwrap();
        assert_eq!(&back, b"second");
    }
    fx.finish();
}

/// A name that does not exist is looked up once: its absence is cached for the entry timeout.
#[test]
fn a_missing_name_is_looked_up_once() {
    let Some(fx) = common::mount("rt-negative", common::config()) else {
        return;
    };
    for _ in 0..3 {
        assert!(fs::symlink_metadata(fx.m("missing")).is_err());
    }
    // Created through the mount, it is found at once.
    fs::write(fx.m("missing"), b"now here").unwrap();
    assert_eq!(fs::read(fx.m("missing")).unwrap(), b"now here");
    let s = fx.finish();
    assert_eq!(count(&s, Opcode::Lookup), 1, "{}", s.stats.requests_line());
}

/// Over FUSE over io_uring the kernel keeps the locks, so a `close` sends no `FLUSH`; on
/// `/dev/fuse` the server keeps them and each `close` sends one.
#[test]
fn no_flush_where_the_kernel_keeps_the_locks() {
    for uring in [false, true] {
        if uring && !crate::uring::uring_on() {
            return;
        }
        let mut cfg = common::config();
        cfg.uring = uring;
        let Some(fx) = common::mount("rt-flush", cfg) else {
            return;
        };
        for i in 0..5 {
            fs::write(fx.m(&format!("f{i}")), b"x").unwrap();
        }
        let s = fx.finish();
        let flushes = count(&s, Opcode::Flush);
        if s.negotiated.has(InitFlags::POSIX_LOCKS) {
            assert!(flushes >= 5, "{}", s.stats.requests_line());
        } else {
            assert_eq!(flushes, 0, "{}", s.stats.requests_line());
        }
    }
}
