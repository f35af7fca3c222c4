//! One measurement of the writev experiment: one engine, one row, one 8-segment request at a
//! time for the runtime, with the CPU time and system calls it cost.

use std::io::{IoSlice, IoSliceMut};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rand::rngs::SmallRng;
use rand::Rng;
use vecio::{Batch, BufPool, Engine, File, IoIter, RwFlags};

use super::{Row, Sample, REQUEST, SEGMENT, SEGMENTS};
use crate::harness::rusage::Usage;

/// Runs `row` through `engine` for `runtime`, one 8-segment request at a time.
pub(super) fn measure(
    file: &File,
    engine: &mut dyn Engine,
    pool: &mut BufPool,
    row: Row,
    size: u64,
    runtime: Duration,
    rng: &mut SmallRng,
) -> Result<Sample> {
    let region = pool
        .region()
        .context("the buffer pool has no region")?
        .clone();
    let mut buf = pool.get(REQUEST);
    anyhow::ensure!(
        buf.region_id() == Some(region.id()),
        "the request buffer is not in the region"
    );
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    let blocks = size / REQUEST as u64;
    let (random, mut seq) = (row.random(), 0u64);
    let mut out = Vec::with_capacity(1);
    let calls0 = engine.counters().syscalls;
    let u0 = Usage::thread()?;
    let t0 = Instant::now();
    let mut requests = 0u64;
    // Mixed rows write one request in two, at random.
    let (writes, mixed) = (row.writes(), row.mixed());
    loop {
        let block = if random {
            rng.gen_range(0..blocks)
        } else {
            seq
        };
        seq = (seq + 1) % blocks;
        let offset = block * REQUEST as u64;
        let write = writes && (!mixed || rng.gen_bool(0.5));
        // One 8-segment request: a writev of `buf` or a readv into it, all of it moved.
        out.clear();
        let mut rest: &mut [u8] = &mut buf;
        let mut into: [IoSliceMut<'_>; SEGMENTS] = std::array::from_fn(|_| {
            let (seg, tail) = std::mem::take(&mut rest).split_at_mut(SEGMENT);
            rest = tail;
            IoSliceMut::new(seg)
        });
        let from: [IoSlice<'_>; SEGMENTS];
        let io = if write {
            from = std::array::from_fn(|i| IoSlice::new(&into[i]));
            IoIter::pages_from(&region, &from)?
        } else {
            IoIter::pages_into(&region, &mut into)?
        };
        let mut batch = Batch::new();
        batch.push(file, offset, io, RwFlags::empty());
        batch.run_into(engine, &mut out);
        match out.pop() {
            Some(Ok(n)) if n == REQUEST => {}
            Some(Ok(n)) => bail!("short transfer at offset {offset}: {n} of {REQUEST} bytes"),
            Some(Err(e)) => return Err(e.into()),
            None => bail!("request at offset {offset} produced no result"),
        }
        requests += 1;
        if requests % 4 == 0 && t0.elapsed() >= runtime {
            break;
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    pool.put(buf);
    let u = Usage::thread()?.delta(&u0);
    let calls = engine.counters().syscalls - calls0;
    let per = |x: f64| x / requests as f64;
    Ok(Sample {
        mb_s: (requests * REQUEST as u64) as f64 / wall / 1e6,
        requests,
        user_us_per_req: per(u.user_s * 1e6),
        sys_us_per_req: per(u.sys_s * 1e6),
        ctx_per_req: per(u.ctx() as f64),
        syscalls_per_req: per(calls as f64),
    })
}
