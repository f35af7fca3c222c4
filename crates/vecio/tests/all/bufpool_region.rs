//! A `BufPool` with a registrable region: its buffers move the right bytes through a `Queue`
//! on every engine, io_uring runs them as registered-buffer ops once the region is
//! registered (and only then), and requests larger than what is left of the region fall back
//! to heap buffers that still work.

use crate::common;

use std::sync::Arc;

use common::*;
use vecio::{BufPool, BufPoolOptions, EngineKind, OwnedBuf, Queue, RwFlags};

const REGION: usize = 256 << 10;

/// Writes `sizes` back to back through `queue` with buffers from `pool`, all in flight at
/// once, then reads them back the same way; returns how many of the buffers were carved from
/// the region.
fn round_trip(
    queue: &mut Queue,
    pool: &mut BufPool,
    file: &Arc<vecio::File>,
    sizes: &[usize],
    seed: u16,
) -> usize {
    let mut carved = 0;
    let mut off = 0u64;
    for (i, &len) in sizes.iter().enumerate() {
        let mut buf = pool.get(len);
        carved += buf.region_id().is_some() as usize;
        fill(&mut buf, seed, off);
        queue
            .push_write(
                file,
                off,
                vec![OwnedBuf::Aligned(buf)],
                RwFlags::empty(),
                i as u64,
            )
            .map_err(|e| e.error)
            .unwrap();
        off += len as u64;
    }
    for c in collect(queue, sizes.len()) {
        assert_eq!(c.result.unwrap(), sizes[c.user_data as usize]);
        c.bufs.into_iter().for_each(|b| match b {
            OwnedBuf::Aligned(b) => pool.put(b),
            _ => unreachable!("the queue hands back what it was given"),
        });
    }
    assert_eq!(pool.held(), 0);
    let mut off = 0u64;
    let mut starts = Vec::new();
    for (i, &len) in sizes.iter().enumerate() {
        let mut buf = pool.get(len);
        buf.fill(0xee);
        queue
            .push_read(
                file,
                off,
                vec![OwnedBuf::Aligned(buf)],
                RwFlags::empty(),
                i as u64,
            )
            .map_err(|e| e.error)
            .unwrap();
        starts.push(off);
        off += len as u64;
    }
    for c in collect(queue, sizes.len()) {
        let i = c.user_data as usize;
        assert_eq!(c.result.unwrap(), sizes[i]);
        assert_pattern(
            c.bufs[0].as_slice(),
            seed,
            starts[i],
            &format!("request {i}"),
        );
    }
    carved
}

fn collect(queue: &mut Queue, n: usize) -> Vec<vecio::Completion> {
    let mut done = Vec::new();
    while done.len() < n {
        queue.submit_and_wait(1).unwrap();
        queue.reap(&mut done);
    }
    done
}

#[test]
fn region_buffers_move_the_right_bytes_on_every_engine_and_are_fixed_on_uring() {
    // 128 + 64 + 4 + 4 KiB fit the region together; the second 128 KiB does not and takes the
    // heap; 512 KiB is larger than the region.
    let sizes = [128 << 10, 64 << 10, 4096, 4096, 128 << 10, 512 << 10];
    for kind in EngineKind::ALL {
        for register in [false, true] {
            let what = format!("{kind:?}, registered: {register}");
            let dir = tempdir();
            let file = Arc::new(open_direct(&dir.path().join("data")));
            let mut pool = BufPool::new(BufPoolOptions::aligned(4096).with_region(REGION));
            let mut queue = Queue::new(kind.build().unwrap());
            if register {
                let region = pool.region().unwrap().clone();
                queue.engine_mut().register_region(&region).unwrap();
            }
            let carved = round_trip(&mut queue, &mut pool, &file, &sizes, 7);
            assert_eq!(carved, 4, "{what}: four of six carved from the region");
            let fixed = queue.engine_mut().counters().fixed_buffer_ops;
            if register && kind == EngineKind::Uring {
                // Four carved writes and four carved reads; the rest used heap buffers.
                assert_eq!(fixed, 8, "{what}");
            } else {
                assert_eq!(fixed, 0, "{what}");
            }
        }
    }
}

/// Buffers from the region and from the heap in one request: the op cannot be a fixed one,
/// and still moves the right bytes.
#[test]
fn a_request_mixing_region_and_heap_buffers_is_not_fixed() {
    let dir = tempdir();
    let file = Arc::new(open_direct(&dir.path().join("data")));
    let mut pool = BufPool::new(BufPoolOptions::aligned(4096).with_region(8192));
    let mut queue = Queue::new(EngineKind::Uring.build().unwrap());
    let region = pool.region().unwrap().clone();
    queue.engine_mut().register_region(&region).unwrap();
    let mut a = pool.get(8192);
    let mut b = pool.get(8192);
    assert_eq!((a.region_id(), b.region_id()), (Some(region.id()), None));
    fill(&mut a, 3, 0);
    fill(&mut b, 3, 8192);
    let bufs = vec![OwnedBuf::Aligned(a), OwnedBuf::Aligned(b)];
    queue
        .push_write(&file, 0, bufs, RwFlags::empty(), 1)
        .map_err(|e| e.error)
        .unwrap();
    let done = collect(&mut queue, 1);
    assert_eq!(done[0].result.as_ref().ok(), Some(&16384));
    assert_eq!(queue.engine_mut().counters().fixed_buffer_ops, 0);
    assert_pattern(&read_all(&dir.path().join("data")), 3, 0, "mixed request");
}
