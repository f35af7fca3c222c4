//! FUSE over io_uring: with `Config::uring`, requests arrive through the per-CPU rings (the
//! server's counters say so), `O_DIRECT` scatter-gather data is byte-identical, metadata
//! operations work through the rings, packing follows `max_pages`, and unmounting ends every
//! ring thread. Skips, saying why, when the kernel's `enable_uring` is off and cannot be set.

use crate::common;

use std::fs::{self, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::Ordering::Relaxed;

use common::{errno, pattern};
use vecio::AlignedBuf;
use vecio_fuse::abi::InitFlags;

const SEG: usize = 4096;

/// Turns on the fuse module's `enable_uring` (root can); `false`, with the reason printed, when
/// it stays off.
pub(crate) fn uring_on() -> bool {
    let knob = "/sys/module/fuse/parameters/enable_uring";
    if vecio_fuse::uring_enabled() {
        return true;
    }
    if let Err(e) = fs::write(knob, "Y") {
        eprintln!("skipping: {knob} is off and cannot be set ({e})");
        return false;
    }
    vecio_fuse::uring_enabled()
}

fn segments(fill: u64) -> Vec<AlignedBuf> {
    (0..32)
        .map(|i| {
            let mut b = AlignedBuf::page_aligned(SEG);
            b.copy_from_slice(&pattern(fill + i, SEG));
            b
        })
        .collect()
}

fn iov(bufs: &mut [AlignedBuf]) -> Vec<libc::iovec> {
    bufs.iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        })
        .collect()
}

#[test]
fn requests_go_through_the_rings_and_data_is_exact() {
    if common::skip_reason().is_none() && !uring_on() {
        return;
    }
    let mut cfg = common::config();
    cfg.uring = true;
    let Some(fx) = common::mount("uring-data", cfg) else {
        return;
    };
    // Metadata through the rings.
    fs::create_dir(fx.m("d")).unwrap();
    fs::write(fx.m("d/small"), b"hello ring").unwrap();
    fs::rename(fx.m("d/small"), fx.m("d/renamed")).unwrap();
    assert_eq!(fs::read(fx.s("d/renamed")).unwrap(), b"hello ring");
    let names: Vec<_> = fs::read_dir(fx.m("d"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["renamed"]);
    // 32 x 4 KiB O_DIRECT, written and read back through the mount, compared with the source.
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .custom_flags(libc::O_DIRECT)
        .open(fx.m("data"))
        .unwrap();
    let mut out = segments(1);
    let v = iov(&mut out);
    // SAFETY: the iovecs point into live buffers of their lengths.
    let n = unsafe { libc::pwritev(f.as_raw_fd(), v.as_ptr(), 32, 8192) };
    assert_eq!(n, (32 * SEG) as isize, "pwritev: errno {}", errno());
    let mut back = segments(100);
    let v = iov(&mut back);
    // SAFETY: as above, buffers owned by `back` for the call.
    let n = unsafe { libc::preadv(f.as_raw_fd(), v.as_ptr(), 32, 8192) };
    assert_eq!(n, (32 * SEG) as isize, "preadv: errno {}", errno());
    let want: Vec<u8> = out.iter().flat_map(|b| b.to_vec()).collect();
    let got: Vec<u8> = back.iter().flat_map(|b| b.to_vec()).collect();
    assert!(got == want, "data read through the ring differs");
    let on_disk = fs::read(fx.s("data")).unwrap();
    assert!(
        on_disk[8192..8192 + 32 * SEG] == want[..],
        "backing file differs"
    );
    drop(f);
    let summary = fx.finish();
    assert!(
        summary.negotiated.has(InitFlags::OVER_IO_URING),
        "io_uring not negotiated"
    );
    let ring = summary.stats.ring_requests.load(Relaxed);
    assert!(ring > 0, "no request came through the rings");
    assert!(summary.stats.largest_io.load(Relaxed) >= (32 * SEG) as u64);
    assert_eq!(
        summary.stats.aligned_payloads.load(Relaxed),
        summary.stats.writes.load(Relaxed),
        "a ring write payload was not page-aligned"
    );
    // The ring's payload buffers are registered with the queue's engine: writes always, and
    // reads that reach the engine, run as WRITE_FIXED / READ_FIXED.
    let fixed = summary.stats.fixed_buffer_ops.load(Relaxed);
    assert!(
        fixed >= summary.stats.writes.load(Relaxed) && fixed > 0,
        "{:?}",
        summary.stats
    );
}

#[test]
fn per_segment_mode_holds_through_the_rings() {
    if common::skip_reason().is_none() && !uring_on() {
        return;
    }
    let mut cfg = common::config();
    cfg.uring = true;
    cfg.max_pages = 1;
    let Some(fx) = common::mount("uring-1page", cfg) else {
        return;
    };
    fs::write(fx.s("data"), pattern(7, 32 * SEG)).unwrap();
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(fx.m("data"))
        .unwrap();
    let mut back = segments(0);
    let v = iov(&mut back);
    // SAFETY: the iovecs point into buffers owned by `back` for the call.
    let n = unsafe { libc::preadv(f.as_raw_fd(), v.as_ptr(), 32, 0) };
    assert_eq!(n, (32 * SEG) as isize, "preadv: errno {}", errno());
    let got: Vec<u8> = back.iter().flat_map(|b| b.to_vec()).collect();
    assert!(got == pattern(7, 32 * SEG), "data differs");
    drop(f);
    let summary = fx.finish();
    assert!(summary.stats.ring_requests.load(Relaxed) > 0);
    assert_eq!(summary.stats.largest_io.load(Relaxed), SEG as u64);
}
