//! Every engine moves aligned direct I/O correctly: vectored requests, many per batch, many
//! segments per request (past IOV_MAX, never clamped), batches larger than the io_uring queues,
//! and the io_uring engine enters the kernel once per batch.

use crate::common;

use std::io::{IoSlice, IoSliceMut};

use common::*;
use vecio::engine::IOV_MAX;
use vecio::{AlignedBuf, Batch, EngineKind, IoIter, RwFlags};

const SEG: usize = 4096;
const NSEG: usize = 8;
const REQ: usize = SEG * NSEG;

/// 8 x 4 KiB writev then readv, 24 requests per batch in scrambled order; the read segments
/// sit scattered in memory, so a segment landing in the wrong place is caught.
#[test]
fn aligned_direct_writev_readv_many_requests_per_batch() {
    const REQS: usize = 24;
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();
        let seed = 11;
        let mut rng = Rng::new(1);

        let mut src = AlignedBuf::new(REQS * REQ, 4096);
        fill(&mut src, seed, 0);
        let write_segs: Vec<Vec<IoSlice<'_>>> = (0..REQS)
            .map(|r| {
                split(&src[r * REQ..(r + 1) * REQ], &[SEG; NSEG])
                    .into_iter()
                    .map(IoSlice::new)
                    .collect()
            })
            .collect();
        let before = engine.counters();
        let mut batch = Batch::new();
        let order = rng.permutation(REQS);
        for &r in &order {
            let i = batch.push(
                &file,
                (r * REQ) as u64,
                IoIter::writev_from(&write_segs[r]),
                RwFlags::empty(),
            );
            assert_eq!(i, batch.len() - 1);
        }
        let res = batch.run(engine.as_mut());
        assert!(batch.is_empty());
        for (i, r) in res.iter().enumerate() {
            assert_eq!(r.as_ref().ok(), Some(&REQ), "{kind:?}: write {i}: {r:?}");
        }
        let c = engine.counters();
        match kind {
            EngineKind::Serial => assert_eq!(c.syscalls - before.syscalls, (REQS * NSEG) as u64),
            EngineKind::Sync => assert_eq!(c.syscalls - before.syscalls, REQS as u64),
            EngineKind::Uring => assert_eq!(c.syscalls - before.syscalls, 1),
            EngineKind::Pool => assert_eq!(c.syscalls - before.syscalls, REQS as u64),
        }
        assert_eq!(c.ops - before.ops, REQS as u64, "{kind:?}: ops");
        assert_eq!(file.size().unwrap(), (REQS * REQ) as u64);

        // Read back: segment k of request r lands in slot place[r * NSEG + k] of `dst`.
        let mut dst = AlignedBuf::new(REQS * REQ, 4096);
        dst.fill(0xEE);
        let place = rng.permutation(REQS * NSEG);
        {
            let mut slots: Vec<Option<&mut [u8]>> = dst.chunks_mut(SEG).map(Some).collect();
            let mut read_segs: Vec<Vec<IoSliceMut<'_>>> = (0..REQS)
                .map(|r| {
                    (0..NSEG)
                        .map(|k| IoSliceMut::new(slots[place[r * NSEG + k]].take().unwrap()))
                        .collect()
                })
                .collect();
            let mut batch = Batch::new();
            let order = rng.permutation(REQS);
            let mut by_req: Vec<(usize, &mut Vec<IoSliceMut<'_>>)> =
                read_segs.iter_mut().enumerate().collect();
            by_req.sort_by_key(|(r, _)| order[*r]);
            for (r, segs) in by_req {
                batch.push(
                    &file,
                    (r * REQ) as u64,
                    IoIter::readv_into(segs),
                    RwFlags::empty(),
                );
            }
            for (i, r) in batch.run(engine.as_mut()).iter().enumerate() {
                assert_eq!(r.as_ref().ok(), Some(&REQ), "{kind:?}: read {i}: {r:?}");
            }
        }
        for r in 0..REQS {
            for k in 0..NSEG {
                let p = place[r * NSEG + k];
                let off = (r * REQ + k * SEG) as u64;
                assert_pattern(
                    &dst[p * SEG..(p + 1) * SEG],
                    seed,
                    off,
                    &format!("{kind:?}: read request {r} segment {k}"),
                );
            }
        }
        assert_pattern(&read_all(&path), seed, 0, &format!("{kind:?}: file"));
    }
}

/// A uring batch of 32 aligned requests enters the kernel exactly once, for overwrites, for
/// reads, and for writes that extend the file.
#[test]
fn uring_batch_of_32_is_one_io_uring_enter() {
    let dir = tempdir();
    let file = open_direct(&dir.path().join("data"));
    let mut engine = EngineKind::Uring.build().unwrap();
    let mut src = AlignedBuf::new(N32 * SEG, 4096);
    let mut dst = AlignedBuf::new(N32 * SEG, 4096);
    fill(&mut src, 1, 0);
    one_enter(
        engine.as_mut(),
        &file,
        "extending writes",
        Io32::Write(&src),
        0,
    );
    one_enter(engine.as_mut(), &file, "overwrites", Io32::Write(&src), 0);
    one_enter(engine.as_mut(), &file, "reads", Io32::Read(&mut dst), 0);
    assert_pattern(&dst, 1, 0, "uring read-back");
    let far = (4 * N32 * SEG) as u64;
    fill(&mut src, 2, far);
    one_enter(
        engine.as_mut(),
        &file,
        "writes past a hole",
        Io32::Write(&src),
        far,
    );
    one_enter(
        engine.as_mut(),
        &file,
        "reads past a hole",
        Io32::Read(&mut dst),
        far,
    );
    assert_pattern(&dst, 2, far, "uring read-back past the hole");
}

const N32: usize = 32;

enum Io32<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
}

fn one_enter(
    engine: &mut dyn vecio::Engine,
    file: &vecio::File,
    what: &str,
    io: Io32<'_>,
    base: u64,
) {
    let before = engine.counters();
    let mut batch = Batch::new();
    match io {
        Io32::Read(dst) => {
            for (i, chunk) in dst.chunks_mut(SEG).enumerate() {
                batch.push(
                    file,
                    base + (i * SEG) as u64,
                    IoIter::read_into(chunk),
                    RwFlags::empty(),
                );
            }
        }
        Io32::Write(src) => {
            for (i, chunk) in src.chunks(SEG).enumerate() {
                batch.push(
                    file,
                    base + (i * SEG) as u64,
                    IoIter::write_from(chunk),
                    RwFlags::empty(),
                );
            }
        }
    }
    assert_eq!(batch.len(), N32);
    let res = batch.run(engine);
    assert!(
        res.iter().all(|r| r.as_ref().ok() == Some(&SEG)),
        "{what}: {res:?}"
    );
    let after = engine.counters();
    assert_eq!(
        after.syscalls - before.syscalls,
        1,
        "{what}: io_uring_enter calls for a batch of {N32} (counters {before:?} -> {after:?})"
    );
    assert_eq!(after.ops - before.ops, N32 as u64, "{what}: ops");
}

fn many_segments(kind: EngineKind, nseg: usize, seg: usize, offset: u64, what: &str) {
    let dir = tempdir();
    let path = dir.path().join("data");
    let file = open_direct(&path);
    let mut engine = kind.build().unwrap();
    let total = nseg * seg;
    let seed = 7;
    let mut src = AlignedBuf::new(total, 4096);
    fill(&mut src, seed, offset);
    let before = engine.counters();
    {
        let segs: Vec<IoSlice<'_>> = src.chunks(seg).map(IoSlice::new).collect();
        assert_eq!(segs.len(), nseg);
        let mut batch = Batch::new();
        batch.push(&file, offset, IoIter::writev_from(&segs), RwFlags::empty());
        let res = batch.run(engine.as_mut());
        assert_eq!(
            res[0].as_ref().ok(),
            Some(&total),
            "{kind:?} {what}: write of {nseg} segments: {res:?}"
        );
    }
    let aligned = offset % 512 == 0 && seg % 512 == 0;
    if aligned && kind != EngineKind::Serial {
        // One op per IOV_MAX segments: split, not clamped.
        let ops = engine.counters().ops - before.ops;
        assert_eq!(
            ops,
            nseg.div_ceil(IOV_MAX) as u64,
            "{kind:?} {what}: write ops"
        );
    }
    assert_eq!(
        file.size().unwrap(),
        offset + total as u64,
        "{kind:?} {what}"
    );

    // Read back into segments laid out in reverse order in memory.
    let mut dst = AlignedBuf::new(total, 4096);
    {
        let mut pieces: Vec<&mut [u8]> = dst.chunks_mut(seg).collect();
        pieces.reverse();
        let mut segs: Vec<IoSliceMut<'_>> = pieces.into_iter().map(IoSliceMut::new).collect();
        let mut batch = Batch::new();
        batch.push(
            &file,
            offset,
            IoIter::readv_into(&mut segs),
            RwFlags::empty(),
        );
        let res = batch.run(engine.as_mut());
        assert_eq!(
            res[0].as_ref().ok(),
            Some(&total),
            "{kind:?} {what}: read of {nseg} segments: {res:?}"
        );
    }
    for (i, chunk) in dst.rchunks(seg).enumerate() {
        assert_pattern(
            chunk,
            seed,
            offset + (i * seg) as u64,
            &format!("{kind:?} {what}: segment {i}"),
        );
    }
    let all = read_all(&path);
    assert!(
        all[..offset as usize].iter().all(|&b| b == 0),
        "{kind:?} {what}: hole"
    );
    assert_pattern(
        &all[offset as usize..],
        seed,
        offset,
        &format!("{kind:?} {what}: file"),
    );
}

#[test]
fn segments_300_x_512() {
    for kind in EngineKind::ALL {
        many_segments(kind, 300, 512, 0, "300 x 512");
    }
}

#[test]
fn segments_2500_x_512_more_than_iov_max() {
    assert_eq!(IOV_MAX, 1024);
    for kind in EngineKind::ALL {
        many_segments(kind, 2500, 512, 4096, "2500 x 512");
    }
}

#[test]
fn segments_1500_x_4096_more_than_iov_max() {
    for kind in EngineKind::ALL {
        many_segments(kind, 1500, 4096, 0, "1500 x 4096");
    }
}

/// 1500 segments of odd sizes at an odd offset: the unaligned path (bounce read,
/// read-modify-write) must carry every segment too.
#[test]
fn segments_1500_odd_sizes_unaligned() {
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();
        let sizes: Vec<usize> = (0..1500).map(|i| 1 + (i * 37) % 701).collect();
        let total: usize = sizes.iter().sum();
        let offset = 12_345u64;
        let seed = 3;
        let src = pattern(seed, offset, total + 1);
        let src = &src[1..]; // unaligned in memory too
        let mut expected = pattern(seed, offset, total + 1);
        expected.remove(0);
        {
            let segs: Vec<IoSlice<'_>> = split(src, &sizes).into_iter().map(IoSlice::new).collect();
            let res = file.writev_at(&segs, offset, RwFlags::empty());
            // writev_at takes the sync engine; now the batch path through `kind`:
            assert_eq!(res.ok(), Some(total), "{kind:?}: writev_at");
            let mut batch = Batch::new();
            batch.push(&file, offset, IoIter::writev_from(&segs), RwFlags::empty());
            let res = batch.run(engine.as_mut());
            assert_eq!(res[0].as_ref().ok(), Some(&total), "{kind:?}: {res:?}");
        }
        assert_eq!(file.size().unwrap(), offset + total as u64, "{kind:?}");
        let mut dst = vec![0xEEu8; total + 2];
        {
            let mut segs: Vec<IoSliceMut<'_>> = split_mut(&mut dst[1..], &sizes)
                .into_iter()
                .map(IoSliceMut::new)
                .collect();
            let mut batch = Batch::new();
            batch.push(
                &file,
                offset,
                IoIter::readv_into(&mut segs),
                RwFlags::empty(),
            );
            let res = batch.run(engine.as_mut());
            assert_eq!(res[0].as_ref().ok(), Some(&total), "{kind:?}: {res:?}");
        }
        assert_eq!(dst[0], 0xEE, "{kind:?}: byte before the buffer");
        assert_eq!(dst[total + 1], 0xEE, "{kind:?}: byte after the buffer");
        assert_same(&dst[1..total + 1], &expected, offset, &format!("{kind:?}"));
        let all = read_all(&path);
        assert_same(
            &all[offset as usize..],
            &expected,
            offset,
            &format!("{kind:?}: file"),
        );
    }
}

/// More requests in one batch than the io_uring submission (256) and completion (512) queues
/// hold: all complete, none lost, no hang.
#[test]
fn batch_larger_than_the_rings() {
    for kind in EngineKind::ALL {
        with_timeout(
            60,
            &format!("{kind:?}: batch of 1200 requests"),
            move || {
                const N: usize = 1200;
                let dir = tempdir();
                let path = dir.path().join("data");
                let file = open_direct(&path);
                let mut engine = kind.build().unwrap();
                let mut src = AlignedBuf::new(N * 512, 4096);
                fill(&mut src, 5, 0);
                let mut batch = Batch::new();
                for (i, c) in src.chunks(512).enumerate() {
                    batch.push(
                        &file,
                        (i * 512) as u64,
                        IoIter::write_from(c),
                        RwFlags::empty(),
                    );
                }
                let res = batch.run(engine.as_mut());
                assert_eq!(res.len(), N);
                for (i, r) in res.iter().enumerate() {
                    assert_eq!(r.as_ref().ok(), Some(&512), "{kind:?}: write {i}: {r:?}");
                }
                let mut dst = AlignedBuf::new(N * 512, 4096);
                let mut batch = Batch::new();
                for (i, c) in dst.chunks_mut(512).enumerate() {
                    batch.push(
                        &file,
                        (i * 512) as u64,
                        IoIter::read_into(c),
                        RwFlags::empty(),
                    );
                }
                let res = batch.run(engine.as_mut());
                for (i, r) in res.iter().enumerate() {
                    assert_eq!(r.as_ref().ok(), Some(&512), "{kind:?}: read {i}: {r:?}");
                }
                assert_eq!(engine.in_flight(), 0);
                assert_pattern(&dst, 5, 0, &format!("{kind:?}: read-back"));
            },
        );
    }
}

/// The same engine serves several files in one batch (uring: several fixed-file slots).
#[test]
fn one_batch_many_files() {
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let files: Vec<_> = (0..5)
            .map(|i| open_direct(&dir.path().join(format!("f{i}"))))
            .collect();
        let mut engine = kind.build().unwrap();
        let srcs: Vec<AlignedBuf> = (0..5)
            .map(|i| {
                let mut b = AlignedBuf::new(8192, 4096);
                fill(&mut b, 100 + i as u16, 4096);
                b
            })
            .collect();
        let mut batch = Batch::new();
        for (f, s) in files.iter().zip(&srcs) {
            batch.push(f, 4096, IoIter::write_from(s), RwFlags::empty());
        }
        let res = batch.run(engine.as_mut());
        assert!(
            res.iter().all(|r| r.as_ref().ok() == Some(&8192)),
            "{res:?}"
        );
        for (i, f) in files.iter().enumerate() {
            let mut b = AlignedBuf::new(12288, 4096);
            assert_eq!(f.read_at(&mut b, 0).unwrap(), 12288, "{kind:?} file {i}");
            assert!(b[..4096].iter().all(|&x| x == 0));
            assert_pattern(&b[4096..], 100 + i as u16, 4096, &format!("{kind:?} f{i}"));
        }
    }
}
