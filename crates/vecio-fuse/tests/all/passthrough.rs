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

/// A direct write vecio serves keeps the kernel's inode in "uncached" mode while it runs,
/// and with it whatever backing file a passthrough open attached meanwhile, after that open
/// is closed. A passthrough open then has to name the same backing file: one that registered
/// a new one got `EIO` (xfstests' generic/247: O_DIRECT writes racing mmap writers).
#[test]
fn buffered_opens_beside_served_direct_writes() {
    let mut cfg = common::config();
    cfg.fs.passthrough = true;
    let Some(fx) = common::mount("pt-dio-race", cfg) else {
        return;
    };
    let path = fx.m("f");
    fs::write(&path, vec![0u8; 8 << 20]).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (writes, opens) = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let f = fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_DIRECT)
                .open(&path)
                .unwrap();
            let buf = vecio::AlignedBuf::page_aligned(1 << 20);
            let mut n = 0u64;
            while !stop.load(Relaxed) {
                f.write_all_at(&buf, (n % 8) << 20).unwrap();
                n += 1;
            }
            n
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let mut opens = 0u64;
        let mut failure = None;
        while std::time::Instant::now() < deadline {
            match fs::OpenOptions::new().read(true).write(true).open(&path) {
                Ok(f) => {
                    f.write_all_at(b"x", opens % (8 << 20)).unwrap();
                    opens += 1;
                }
                Err(e) => {
                    failure = Some(format!("open {opens} failed: {e}"));
                    break;
                }
            }
        }
        stop.store(true, Relaxed);
        let writes = writer.join().unwrap();
        if let Some(f) = failure {
            panic!("{f} (after {writes} direct writes)");
        }
        (writes, opens)
    });
    assert!(
        writes > 0 && opens > 0,
        "{writes} direct writes, {opens} opens"
    );
    eprintln!("{writes} direct writes of 1 MiB beside {opens} buffered opens");
    let s = fx.finish();
    if granted(&s) {
        // The direct writes were vecio's to serve, the buffered ones the kernel's.
        let served = s.stats.write_bytes.load(Relaxed);
        assert!(
            served >= writes << 20 && served < (writes + 1) << 20,
            "{:?}",
            s.stats
        );
    }
}
