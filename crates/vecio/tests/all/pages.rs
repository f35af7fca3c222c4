//! Buffers of a registered region (`IoIter::pages_into` / `pages_from` over a `BufPool`'s
//! region) move the right bytes on every engine, and on io_uring after `register_region`
//! (registered buffers: READ_FIXED,
//! WRITE_FIXED and their vectored forms), including requests that are not aligned and so go
//! through the bounce buffer or read-modify-write.

use crate::common;

use std::io::{IoSlice, IoSliceMut};

use common::*;
use vecio::{AlignedBuf, Batch, BufPool, BufPoolOptions, EngineKind, IoIter, Region, RwFlags};

const CHUNK: usize = 64 * 1024;

/// `count` chunks of `CHUNK` bytes carved from one region: the pool that hands them out and
/// the region they lie in.
fn chunks(count: usize) -> (BufPool, Region) {
    let pool = BufPool::new(BufPoolOptions::aligned(4096).with_region(CHUNK * count));
    let region = pool.region().expect("a region").clone();
    (pool, region)
}

fn engines_with_pool(pool: &Region) -> Vec<(String, Box<dyn vecio::Engine>)> {
    let mut out: Vec<(String, Box<dyn vecio::Engine>)> = vec![(
        "Uring unregistered".into(),
        EngineKind::Uring.build().unwrap(),
    )];
    for kind in EngineKind::ALL {
        let mut e = kind.build().unwrap();
        e.register_region(pool).unwrap();
        out.push((format!("{kind:?}+registered"), e));
    }
    out
}

fn take(pool: &mut BufPool, n: usize) -> Vec<AlignedBuf> {
    (0..n)
        .map(|_| {
            let b = pool.get(CHUNK);
            assert!(b.region_id().is_some(), "a chunk of the region");
            b
        })
        .collect()
}

/// Single-chunk and multi-chunk requests, aligned, in one batch each way.
#[test]
fn pool_buffers_aligned_single_and_vectored() {
    let (mut chunks, pool) = chunks(16);
    for (name, mut engine) in engines_with_pool(&pool) {
        let dir = tempdir();
        let path = dir.path().join("data");
        let file = open_direct(&path);
        let mut src = take(&mut chunks, 4);
        for (i, b) in src.iter_mut().enumerate() {
            fill(b, 1, (i * CHUNK) as u64);
        }
        // Request 0: chunk 0 alone at 0 (WRITE_FIXED); request 1: chunks 1..4 at CHUNK
        // (WRITEV_FIXED).
        let one = [IoSlice::new(&src[0])];
        let three: Vec<IoSlice<'_>> = src[1..].iter().map(|b| IoSlice::new(b)).collect();
        let mut batch = Batch::new();
        batch.push(
            &file,
            0,
            IoIter::pages_from(&pool, &one).unwrap(),
            RwFlags::empty(),
        );
        batch.push(
            &file,
            CHUNK as u64,
            IoIter::pages_from(&pool, &three).unwrap(),
            RwFlags::empty(),
        );
        let res = batch.run(engine.as_mut());
        assert_eq!(res[0].as_ref().ok(), Some(&CHUNK), "{name}: {res:?}");
        assert_eq!(res[1].as_ref().ok(), Some(&(3 * CHUNK)), "{name}: {res:?}");
        assert_pattern(&read_all(&path), 1, 0, &format!("{name}: file"));

        // Read back in a different arrangement: request 0 reads chunks 0..2 into two pool
        // buffers in reverse memory order, request 1 reads chunks 2..4 half-chunk-wise.
        let mut dst = take(&mut chunks, 4);
        {
            let (a, b) = dst.split_at_mut(2);
            let (a0, a1) = a.split_at_mut(1);
            let mut r0 = [IoSliceMut::new(&mut a1[0]), IoSliceMut::new(&mut a0[0])];
            let (b0, b1) = b.split_at_mut(1);
            let (h0, h1) = b0[0].split_at_mut(CHUNK / 2);
            let (h2, h3) = b1[0].split_at_mut(CHUNK / 2);
            let mut r1 = [
                IoSliceMut::new(h0),
                IoSliceMut::new(h1),
                IoSliceMut::new(h2),
                IoSliceMut::new(h3),
            ];
            let mut batch = Batch::new();
            batch.push(
                &file,
                0,
                IoIter::pages_into(&pool, &mut r0).unwrap(),
                RwFlags::empty(),
            );
            batch.push(
                &file,
                2 * CHUNK as u64,
                IoIter::pages_into(&pool, &mut r1).unwrap(),
                RwFlags::empty(),
            );
            let res = batch.run(engine.as_mut());
            assert_eq!(res[0].as_ref().ok(), Some(&(2 * CHUNK)), "{name}: {res:?}");
            assert_eq!(res[1].as_ref().ok(), Some(&(2 * CHUNK)), "{name}: {res:?}");
        }
        assert_pattern(&dst[1], 1, 0, &format!("{name}: chunk 0"));
        assert_pattern(&dst[0], 1, CHUNK as u64, &format!("{name}: chunk 1"));
        assert_pattern(&dst[2], 1, 2 * CHUNK as u64, &format!("{name}: chunk 2"));
        assert_pattern(&dst[3], 1, 3 * CHUNK as u64, &format!("{name}: chunk 3"));

        // A single-chunk read (READ_FIXED).
        let mut one = take(&mut chunks, 1);
        {
            let mut seg = [IoSliceMut::new(&mut one[0][..4096])];
            let mut batch = Batch::new();
            batch.push(
                &file,
                8192,
                IoIter::pages_into(&pool, &mut seg).unwrap(),
                RwFlags::empty(),
            );
            let res = batch.run(engine.as_mut());
            assert_eq!(res[0].as_ref().ok(), Some(&4096), "{name}: {res:?}");
        }
        assert_pattern(&one[0][..4096], 1, 8192, &format!("{name}: READ_FIXED"));
    }
}

/// Pool buffers used for requests that are not aligned: odd offsets and lengths and slices
/// starting inside a chunk. The bounce read and the read-modify-write use their own memory,
/// which is not part of the registered pool.
#[test]
fn pool_buffers_unaligned() {
    let (mut chunks, pool) = chunks(8);
    for (name, mut engine) in engines_with_pool(&pool) {
        let dir = tempdir();
        let path = dir.path().join("data");
        let mut model = pattern(2, 0, 4 * CHUNK);
        std::fs::write(&path, &model).unwrap();
        let file = open_direct(&path);

        // Unaligned write from a pool slice starting 1 byte into a chunk.
        let mut src = take(&mut chunks, 1);
        fill(&mut src[0][1..1001], 3, 777);
        let segs = [IoSlice::new(&src[0][1..1001])];
        let mut batch = Batch::new();
        batch.push(
            &file,
            777,
            IoIter::pages_from(&pool, &segs).unwrap(),
            RwFlags::empty(),
        );
        let res = batch.run(engine.as_mut());
        assert_eq!(
            res[0].as_ref().ok(),
            Some(&1000),
            "{name}: unaligned write {res:?}"
        );
        model[777..1777].copy_from_slice(&src[0][1..1001]);
        assert_same(
            &read_all(&path),
            &model,
            0,
            &format!("{name}: after unaligned write"),
        );

        // Unaligned read into a pool slice; then an aligned-offset read into an unaligned
        // slice of the pool.
        let mut dst = take(&mut chunks, 1);
        {
            let mut segs = [IoSliceMut::new(&mut dst[0][3..3003])];
            let mut batch = Batch::new();
            batch.push(
                &file,
                500,
                IoIter::pages_into(&pool, &mut segs).unwrap(),
                RwFlags::empty(),
            );
            let res = batch.run(engine.as_mut());
            assert_eq!(
                res[0].as_ref().ok(),
                Some(&3000),
                "{name}: unaligned read {res:?}"
            );
        }
        assert_same(
            &dst[0][3..3003],
            &model[500..3500],
            500,
            &format!("{name}: unaligned read"),
        );
        {
            let mut segs = [IoSliceMut::new(&mut dst[0][1..4097])];
            let mut batch = Batch::new();
            batch.push(
                &file,
                4096,
                IoIter::pages_into(&pool, &mut segs).unwrap(),
                RwFlags::empty(),
            );
            let res = batch.run(engine.as_mut());
            assert_eq!(
                res[0].as_ref().ok(),
                Some(&4096),
                "{name}: misaligned memory {res:?}"
            );
        }
        assert_same(
            &dst[0][1..4097],
            &model[4096..8192],
            4096,
            &format!("{name}: misaligned memory"),
        );
    }
}

/// Two regions registered on one engine both work; registering one again is a no-op.
#[test]
fn two_pools_on_one_uring_engine() {
    let mut pool1 = BufPool::new(BufPoolOptions::aligned(4096).with_region(4 * 4096));
    let mut pool2 = BufPool::new(BufPoolOptions::aligned(4096).with_region(4 * 8192));
    let (p1, p2) = (
        pool1.region().unwrap().clone(),
        pool2.region().unwrap().clone(),
    );
    let mut engine = EngineKind::Uring.build().unwrap();
    engine.register_region(&p1).unwrap();
    engine.register_region(&p2).unwrap();
    engine.register_region(&p1).unwrap(); // again: no-op
    let dir = tempdir();
    let path = dir.path().join("data");
    let file = open_direct(&path);
    let mut a = pool1.get(4096);
    let mut b = pool2.get(8192);
    fill(&mut a, 9, 0);
    fill(&mut b, 9, 4096);
    let sa = [IoSlice::new(&a)];
    let sb = [IoSlice::new(&b)];
    let mut batch = Batch::new();
    batch.push(
        &file,
        0,
        IoIter::pages_from(&p1, &sa).unwrap(),
        RwFlags::empty(),
    );
    batch.push(
        &file,
        4096,
        IoIter::pages_from(&p2, &sb).unwrap(),
        RwFlags::empty(),
    );
    let res = batch.run(engine.as_mut());
    assert_eq!(res[0].as_ref().ok(), Some(&4096), "{res:?}");
    assert_eq!(res[1].as_ref().ok(), Some(&8192), "{res:?}");
    assert_pattern(&read_all(&path), 9, 0, "two pools");
}
