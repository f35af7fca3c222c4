//! Concurrent writers through one mount: to different files, and to disjoint ranges of one
//! file, buffered and `O_DIRECT`, every byte checked in the source afterwards.

use crate::common;

use std::fs::{self, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use common::pattern;
use vecio::AlignedBuf;

const THREADS: usize = 4;
const PER_THREAD: usize = 1 << 20;
const CHUNK: usize = 64 << 10;

#[test]
fn writers_to_different_files_and_to_one_file() {
    let Some(fx) = common::mount("concurrent", common::config()) else {
        return;
    };
    let shared = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(fx.m("shared"))
        .unwrap();
    shared.set_len((THREADS * PER_THREAD) as u64).unwrap();
    drop(shared);

    std::thread::scope(|s| {
        for t in 0..THREADS {
            let fx = &fx;
            s.spawn(move || {
                // Threads 2 and 3 write with O_DIRECT (parallel direct writes), 0 and 1 buffered.
                let direct = t >= 2;
                let flags = if direct { libc::O_DIRECT } else { 0 };
                let own = OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .custom_flags(flags)
                    .open(fx.m(&format!("own-{t}")))
                    .unwrap();
                let shared = OpenOptions::new()
                    .write(true)
                    .custom_flags(flags)
                    .open(fx.m("shared"))
                    .unwrap();
                let data = pattern(100 + t as u64, PER_THREAD);
                let mut buf = AlignedBuf::page_aligned(CHUNK);
                // Interleave the two files so both see concurrent requests all along.
                for (i, chunk) in data.chunks(CHUNK).enumerate() {
                    buf.copy_from_slice(chunk);
                    let off = (i * CHUNK) as u64;
                    own.write_all_at(&buf, off).unwrap();
                    shared
                        .write_all_at(&buf, (t * PER_THREAD) as u64 + off)
                        .unwrap();
                }
                own.sync_all().unwrap();
            });
        }
    });

    let shared = fs::read(fx.s("shared")).unwrap();
    assert_eq!(shared.len(), THREADS * PER_THREAD);
    for t in 0..THREADS {
        let want = pattern(100 + t as u64, PER_THREAD);
        assert!(
            fs::read(fx.s(&format!("own-{t}"))).unwrap() == want,
            "own-{t} differs"
        );
        assert!(
            shared[t * PER_THREAD..(t + 1) * PER_THREAD] == want[..],
            "range {t} of the shared file differs"
        );
    }
    assert!(fs::read(fx.m("shared")).unwrap() == shared);
    fx.finish();
}

/// Four writers, each with its own descriptor, write interleaved 100-byte records (disjoint, but
/// sharing every 4 KiB block) of one file on a `-o direct_io` mount: the server writes the
/// backing file `O_DIRECT`, so each unaligned record is a read-modify-write of its blocks.
#[test]
fn unaligned_direct_writers_sharing_blocks() {
    const RECORD: usize = 100;
    const RECORDS: usize = 4000;
    let Some(d) = common::dirs("concurrent-rmw") else {
        return;
    };
    fs::write(d.src.join("records"), vec![b'.'; RECORD * RECORDS]).unwrap();
    let mut cfg = common::config();
    cfg.mount.direct_io = true;
    let fx = d.mount(cfg);
    let record = |i: usize| {
        let mut r = format!("record {i:05} by {} ", i % 4).into_bytes();
        r.resize(RECORD - 1, b'=');
        r.push(b'\n');
        r
    };
    std::thread::scope(|s| {
        for t in 0..4 {
            let fx = &fx;
            s.spawn(move || {
                let f = OpenOptions::new()
                    .write(true)
                    .open(fx.m("records"))
                    .unwrap();
                for i in (t..RECORDS).step_by(4) {
                    f.write_all_at(&record(i), (i * RECORD) as u64).unwrap();
                }
            });
        }
    });
    let got = fs::read(fx.s("records")).unwrap();
    assert_eq!(got.len(), RECORD * RECORDS);
    let bad: Vec<usize> = (0..RECORDS)
        .filter(|&i| got[i * RECORD..(i + 1) * RECORD] != record(i)[..])
        .collect();
    assert!(
        bad.is_empty(),
        "{} of {RECORDS} records lost or torn, first {:?}: {:?}",
        bad.len(),
        &bad[..bad.len().min(8)],
        String::from_utf8_lossy(&got[bad[0] * RECORD..(bad[0] + 1) * RECORD])
    );
    fx.finish();
}
