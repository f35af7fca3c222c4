//! The data path: `O_DIRECT` scatter-gather through the mount gives the backing file's bytes;
//! unaligned direct calls are refused or exact; `-o direct_io` serves small unaligned writes;
//! the kernel packs 32 x 4 KiB segments into one request unless `max_pages` is 1; every
//! engine, and passthrough, serve the same bytes.

use crate::common;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use common::{errno, pattern};
use vecio::AlignedBuf;

const SEG: usize = 4096;

fn open_direct(p: &Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_DIRECT)
        .open(p)
        .unwrap_or_else(|e| panic!("open O_DIRECT {}: {e}", p.display()))
}

fn iovecs(parts: &[&[u8]]) -> Vec<libc::iovec> {
    parts
        .iter()
        .map(|p| libc::iovec {
            iov_base: p.as_ptr() as *mut _,
            iov_len: p.len(),
        })
        .collect()
}

fn pwritev(f: &File, parts: &[&[u8]], off: u64) -> Result<usize, i32> {
    let iov = iovecs(parts);
    // SAFETY: every iovec points into a live slice of its length, not written by pwritev.
    let n = unsafe { libc::pwritev(f.as_raw_fd(), iov.as_ptr(), iov.len() as i32, off as i64) };
    if n < 0 {
        Err(errno())
    } else {
        Ok(n as usize)
    }
}

/// `preadv` into `segs` segments of `SEG` bytes taken from every other page of a fresh
/// aligned buffer (so they are not one contiguous range); returns the bytes read, in order.
fn preadv_scattered(f: &File, segs: usize, off: u64) -> Result<Vec<u8>, i32> {
    let mut buf = AlignedBuf::page_aligned(2 * segs * SEG);
    buf.fill(0xee);
    let iov: Vec<libc::iovec> = (0..segs)
        .map(|i| libc::iovec {
            iov_base: buf[2 * i * SEG..].as_mut_ptr().cast(),
            iov_len: SEG,
        })
        .collect();
    // SAFETY: every iovec points into `buf`, live and not otherwise used during the call.
    let n = unsafe { libc::preadv(f.as_raw_fd(), iov.as_ptr(), iov.len() as i32, off as i64) };
    if n < 0 {
        return Err(errno());
    }
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..segs {
        let take = (n as usize - out.len()).min(SEG);
        out.extend_from_slice(&buf[2 * i * SEG..2 * i * SEG + take]);
    }
    Ok(out)
}

/// Writes 32 x 4 KiB scattered segments (`pattern(seed)`) at `off`; returns the bytes.
fn pwritev_scattered(f: &File, seed: u64, off: u64) -> Vec<u8> {
    let data = pattern(seed, 32 * SEG);
    let mut buf = AlignedBuf::page_aligned(64 * SEG);
    for i in 0..32 {
        buf[2 * i * SEG..(2 * i + 1) * SEG].copy_from_slice(&data[i * SEG..(i + 1) * SEG]);
    }
    let parts: Vec<&[u8]> = (0..32)
        .map(|i| &buf[2 * i * SEG..(2 * i + 1) * SEG])
        .collect();
    assert_eq!(pwritev(f, &parts, off), Ok(32 * SEG));
    data
}

#[test]
fn o_direct_preadv_pwritev_give_the_backing_files_bytes() {
    let Some(fx) = common::mount("direct", common::config()) else {
        return;
    };
    let f = open_direct(&fx.m("d"));
    let mut expected = vec![0u8; 2 << 20];
    let segs = pwritev_scattered(&f, 10, 0);
    expected[..segs.len()].copy_from_slice(&segs);
    let mut big = AlignedBuf::page_aligned(1 << 20);
    big.copy_from_slice(&pattern(11, 1 << 20));
    assert_eq!(pwritev(&f, &[&big], 1 << 20), Ok(1 << 20));
    expected[1 << 20..].copy_from_slice(&big);

    assert!(
        fs::read(fx.s("d")).unwrap() == expected,
        "backing file differs"
    );
    let native = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(fx.s("d"))
        .unwrap();
    for (segs, off) in [
        (32, 0),
        (32, (1 << 20) - (64 << 10)),
        (256, 1 << 20),
        (32, (2 << 20) - 8192),
    ] {
        let got = preadv_scattered(&f, segs, off as u64).unwrap();
        let want = &expected[off..(off + segs * SEG).min(expected.len())];
        assert!(got == want, "{segs} x 4 KiB at {off}: differs");
        assert!(preadv_scattered(&native, segs, off as u64).unwrap() == want);
    }
    // One 1 MiB segment.
    let mut one = AlignedBuf::page_aligned(1 << 20);
    assert_eq!(f.read_at(&mut one, 1 << 20).unwrap(), 1 << 20);
    assert!(one[..] == expected[1 << 20..]);
    drop(f);
    fx.finish();
}

fn pread(f: &File, buf: &mut [u8], off: u64) -> Result<usize, i32> {
    f.read_at(buf, off)
        .map_err(|e| e.raw_os_error().unwrap_or(0))
}

fn pwrite(f: &File, buf: &[u8], off: u64) -> Result<usize, i32> {
    f.write_at(buf, off)
        .map_err(|e| e.raw_os_error().unwrap_or(0))
}

#[test]
fn unaligned_o_direct_is_refused_or_exact() {
    let Some(d) = common::dirs("unaligned") else {
        return;
    };
    let content = pattern(20, 64 << 10);
    fs::write(d.src.join("u"), &content).unwrap();
    fs::write(d.src.join("native"), &content).unwrap();
    let fx = d.mount(common::config());
    let native = open_direct(&fx.s("native"));
    let f = open_direct(&fx.m("u"));
    let mut expected = content.clone();
    let mut abuf = AlignedBuf::page_aligned(3 * SEG);

    // Reads: an unaligned offset; an unaligned buffer; a 512-byte sector.
    for (off, start, len) in [
        (1u64, 0usize, SEG),
        (0, 1, SEG),
        (512, 0, 512),
        (4095, 7, 5000),
    ] {
        let n = pread(&native, &mut abuf[start..start + len], off);
        let m = pread(&f, &mut abuf[start..start + len], off);
        eprintln!("O_DIRECT read of {len} at {off}, buffer +{start}: native {n:?}, mount {m:?}");
        match m {
            Ok(k) => {
                assert_eq!(k, len);
                let o = off as usize;
                assert!(abuf[start..start + k] == content[o..o + k], "read at {off}");
            }
            Err(e) => assert_eq!(e, libc::EINVAL, "read at {off}"),
        }
    }
    // Writes: an unaligned offset and length; an unaligned buffer; a 512-byte sector.
    for (i, (off, start, len)) in [(100u64, 0usize, 10usize), (8192, 3, SEG), (1024, 0, 512)]
        .into_iter()
        .enumerate()
    {
        let data = pattern(30 + i as u64, len);
        abuf[start..start + len].copy_from_slice(&data);
        let n = pwrite(&native, &abuf[start..start + len], off);
        let m = pwrite(&f, &abuf[start..start + len], off);
        eprintln!("O_DIRECT write of {len} at {off}, buffer +{start}: native {n:?}, mount {m:?}");
        match m {
            Ok(k) => {
                assert_eq!(k, len);
                expected[off as usize..off as usize + len].copy_from_slice(&data);
            }
            Err(e) => assert_eq!(e, libc::EINVAL, "write at {off}"),
        }
        assert!(fs::read(fx.s("u")).unwrap() == expected, "write at {off}");
    }
    // Past the end of file: the size grows to exactly the end of the write (no block
    // padding left behind), and a read at the end returns exactly what is left.
    let data = pattern(39, 10);
    abuf[..10].copy_from_slice(&data);
    match pwrite(&f, &abuf[..10], 70_000) {
        Ok(n) => {
            assert_eq!(n, 10);
            expected.resize(70_000, 0);
            expected.extend_from_slice(&data);
        }
        Err(e) => assert_eq!(e, libc::EINVAL),
    }
    assert!(
        fs::read(fx.s("u")).unwrap() == expected,
        "write past the end"
    );
    drop((f, native));
    let f = open_direct(&fx.m("u"));
    let mut whole = AlignedBuf::page_aligned(128 << 10);
    let n = pread(&f, &mut whole, 0).unwrap();
    assert_eq!(n, expected.len());
    assert!(whole[..n] == expected[..]);
    assert_eq!(
        pread(&f, &mut whole[..SEG], 69_632),
        Ok(expected.len() - 69_632)
    );
    assert!(whole[..expected.len() - 69_632] == expected[69_632..]);
    assert_eq!(pread(&f, &mut whole[..SEG], 1 << 20), Ok(0));
    drop(f);
    fx.finish();
}

#[test]
fn direct_io_mount_serves_unaligned_appends_and_patches() {
    let Some(d) = common::dirs("dio-mount") else {
        return;
    };
    let mut cfg = common::config();
    cfg.mount.direct_io = true;
    let fx = d.mount(cfg);
    common::sh(&format!(
        "echo first > '{0}' && echo second >> '{0}' && printf 'x' >> '{0}'",
        fx.m("log").display()
    ));
    let mut expected = b"first\nsecond\nx".to_vec();
    for i in 0..50 {
        let line = format!("line {i} {}\n", "y".repeat(i * 37 % 100));
        let mut a = OpenOptions::new().append(true).open(fx.m("log")).unwrap();
        a.write_all(line.as_bytes()).unwrap();
        expected.extend_from_slice(line.as_bytes());
    }
    assert_eq!(fs::read(fx.s("log")).unwrap(), expected);
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(fx.m("log"))
        .unwrap();
    f.write_all_at(b"PATCH", 3).unwrap();
    expected[3..8].copy_from_slice(b"PATCH");
    let tail = pattern(40, 5000);
    f.write_all_at(&tail, 4093).unwrap();
    expected.resize(expected.len().max(4093 + 5000), 0);
    expected[4093..4093 + 5000].copy_from_slice(&tail);
    let mut back = vec![0u8; 77];
    f.read_exact_at(&mut back, 4000).unwrap();
    assert_eq!(back, expected[4000..4077]);
    drop(f);
    assert_eq!(fs::read(fx.s("log")).unwrap(), expected);
    assert_eq!(fs::read(fx.m("log")).unwrap(), expected);
    // Executing a program maps it: direct I/O files allow mmap (FUSE_DIRECT_IO_ALLOW_MMAP).
    let prog = fx.m("true");
    fs::copy("/bin/true", &prog).unwrap();
    let out = std::process::Command::new(&prog).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let s = fx.finish();
    assert!(s.stats.writes.load(Relaxed) >= 54);
}

/// Reads and writes 32 x 4 KiB with `O_DIRECT` through a mount with `max_pages`; returns the
/// server's summary.
fn pack(name: &str, max_pages: Option<u16>) -> Option<vecio_fuse::Summary> {
    let d = common::dirs(name)?;
    let content = pattern(50, 256 << 10);
    fs::write(d.src.join("p"), &content).unwrap();
    let mut cfg = common::config();
    if let Some(p) = max_pages {
        cfg.max_pages = p;
    }
    let fx = d.mount(cfg);
    let f = open_direct(&fx.m("p"));
    assert!(preadv_scattered(&f, 32, 0).unwrap() == content[..128 << 10]);
    let written = pwritev_scattered(&f, 51, 128 << 10);
    drop(f);
    assert!(fs::read(fx.s("p")).unwrap()[128 << 10..] == written[..]);
    Some(fx.finish())
}

#[test]
fn default_max_pages_packs_32_segments_into_one_request() {
    let Some(s) = pack("pack256", None) else {
        return;
    };
    let st = &s.stats;
    eprintln!("negotiated {:?}, stats {st:?}", s.negotiated);
    assert!(s.negotiated.max_pages >= 32);
    assert!(st.largest_io.load(Relaxed) >= 128 << 10, "{st:?}");
    assert!(st.writes.load(Relaxed) >= 1);
    assert_eq!(st.aligned_payloads.load(Relaxed), st.writes.load(Relaxed));
    // The worker's request and reply buffers are registered with its engine: every write
    // payload goes to the file as a registered buffer.
    let fixed = st.fixed_buffer_ops.load(Relaxed);
    assert!(fixed >= st.writes.load(Relaxed) && fixed > 0, "{st:?}");
}

#[test]
fn max_pages_one_sends_a_request_per_page() {
    let Some(s) = pack("pack1", Some(1)) else {
        return;
    };
    let st = &s.stats;
    eprintln!("negotiated {:?}, stats {st:?}", s.negotiated);
    assert_eq!(s.negotiated.max_pages, 1);
    assert_eq!(st.largest_io.load(Relaxed), 4096, "{st:?}");
    assert!(st.reads.load(Relaxed) >= 32 && st.writes.load(Relaxed) >= 32);
    assert_eq!(st.aligned_payloads.load(Relaxed), st.writes.load(Relaxed));
}

#[test]
fn every_engine_serves_the_same_bytes() {
    for engine in vecio::EngineKind::ALL {
        let Some(d) = common::dirs(&format!("engine-{}", engine.name())) else {
            return;
        };
        let mut cfg = common::config();
        cfg.engine = engine;
        let fx = d.mount(cfg);
        let data = pattern(60, 300_001);
        fs::write(fx.m("buffered"), &data).unwrap();
        assert!(fs::read(fx.s("buffered")).unwrap() == data, "{engine:?}");
        assert!(fs::read(fx.m("buffered")).unwrap() == data, "{engine:?}");
        let f = open_direct(&fx.m("direct"));
        let w = pwritev_scattered(&f, 61, 4096);
        assert!(preadv_scattered(&f, 32, 4096).unwrap() == w, "{engine:?}");
        drop(f);
        assert!(
            fs::read(fx.s("direct")).unwrap()[4096..] == w[..],
            "{engine:?}"
        );
        let s = fx.finish();
        assert!(s.stats.reads.load(Relaxed) >= 1, "{engine:?}");
    }
}

#[test]
fn passthrough_serves_buffered_files_and_the_server_direct_ones() {
    let Some(d) = common::dirs("passthrough") else {
        return;
    };
    let mut cfg = common::config();
    cfg.fs.passthrough = true;
    let fx = d.mount(cfg);
    let data = pattern(70, 1 << 20);
    fs::write(fx.m("pt"), &data).unwrap();
    assert!(fs::read(fx.s("pt")).unwrap() == data);
    assert!(fs::read(fx.m("pt")).unwrap() == data);
    let f = open_direct(&fx.m("pt"));
    assert!(preadv_scattered(&f, 32, 0).unwrap() == data[..128 << 10]);
    drop(f);
    let s = fx.finish();
    let st = &s.stats;
    eprintln!("negotiated {:?}, stats {st:?}", s.negotiated);
    if s.negotiated.has(vecio_fuse::abi::InitFlags::PASSTHROUGH) {
        // The 1 MiB buffered write and read went to the backing file in the kernel; the
        // server saw the O_DIRECT read only.
        assert!(st.write_bytes.load(Relaxed) < 1 << 20, "{st:?}");
        assert_eq!(st.read_bytes.load(Relaxed), 128 << 10, "{st:?}");
    } else {
        eprintln!("the kernel did not grant FUSE_PASSTHROUGH: only the data was checked");
    }
}
