//! `--passthrough`: one backing registration per inode, shared by every open of it (a second
//! open while the first is held used to fail with `EIO`), released with the last; and
//! `--passthrough-direct`, which hands `O_DIRECT` opens to the kernel as well.

use crate::common;

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::atomic::Ordering::Relaxed;

use common::pattern;

fn granted(s: &vecio_fuse::Summary) -> bool {
    let yes = s.negotiated.has(vecio_fuse::abi::InitFlags::PASSTHROUGH);
    if !yes {
        eprintln!("the kernel did not grant FUSE_PASSTHROUGH: only the data was checked");
    }
    yes
}

#[test]
fn simultaneous_opens_share_one_backing_file() {
    let mut cfg = common::config();
    cfg.fs.passthrough = true;
    let Some(fx) = common::mount("pt-shared", cfg) else {
        return;
    };
    fs::write(fx.m("f"), pattern(1, 64 << 10)).unwrap();
    let reader = fs::File::open(fx.m("f")).unwrap();
    let writer = fs::OpenOptions::new().write(true).open(fx.m("f")).unwrap();
    let mut third = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(fx.m("f"))
        .unwrap();
    writer
        .write_all_at(b"written by the second open", 100)
        .unwrap();
    let mut back = vec![0u8; 26];
    reader.read_exact_at(&mut back, 100).unwrap();
    assert_eq!(&back, b"written by the second open");
    third.write_all(b"third").unwrap();
    drop((reader, writer));
    let mut all = Vec::new();
    third.read_to_end(&mut all).unwrap();
    drop(third);
    // Released with the last open: a new open registers again and works.
    let again = fs::read(fx.m("f")).unwrap();
    assert_eq!(&again[..5], b"third");
    assert_eq!(&again[100..126], b"written by the second open");
    let s = fx.finish();
    if granted(&s) {
        assert_eq!(s.stats.write_bytes.load(Relaxed), 0, "{:?}", s.stats);
        assert_eq!(s.stats.read_bytes.load(Relaxed), 0, "{:?}", s.stats);
    }
}

#[test]
fn passthrough_direct_hands_o_direct_to_the_kernel() {
    let mut cfg = common::config();
    cfg.fs.passthrough = true;
    cfg.fs.passthrough_direct = true;
    let Some(fx) = common::mount("pt-direct", cfg) else {
        return;
    };
    let data = pattern(2, 1 << 20);
    fs::write(fx.m("d"), &data).unwrap();
    let f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(fx.m("d"))
        .unwrap();
    let mut buf = vecio::AlignedBuf::page_aligned(128 << 10);
    f.read_exact_at(&mut buf, 4096).unwrap();
    assert!(buf[..] == data[4096..4096 + (128 << 10)]);
    buf.fill(7);
    f.write_all_at(&buf, 8192).unwrap();
    // A buffered open at the same time shares the registration.
    let plain = fs::File::open(fx.m("d")).unwrap();
    let mut back = vec![0u8; 4096];
    plain.read_exact_at(&mut back, 8192).unwrap();
    assert!(back.iter().all(|&b| b == 7));
    drop((f, plain));
    let s = fx.finish();
    if granted(&s) {
        assert_eq!(s.stats.read_bytes.load(Relaxed), 0, "{:?}", s.stats);
        assert_eq!(s.stats.write_bytes.load(Relaxed), 0, "{:?}", s.stats);
    }
}
