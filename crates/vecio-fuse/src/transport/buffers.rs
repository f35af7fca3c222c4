//! A serving thread's buffers: carved from one region of a vecio [`BufPool`], registered with
//! the thread's own engine, so `READ` data lands in the reply buffer by `READ_FIXED` and
//! `WRITE` payloads go to the file by `WRITE_FIXED`, with no per-request page pinning.

use vecio::{AlignedBuf, BufPool, BufPoolOptions, Engine, Region, PAGE_SIZE};

/// Buffers of `sizes` bytes each, page-aligned, carved from one region registered with
/// `engine`, and the region. When the engine refuses the registration (`RLIMIT_MEMLOCK` for a
/// user without `CAP_IPC_LOCK`, or an engine without a ring), the buffers work the same, as
/// ordinary memory, and `None` comes back.
pub(crate) fn registered(
    engine: &mut dyn Engine,
    sizes: &[usize],
) -> (Vec<AlignedBuf>, Option<Region>) {
    // Each buffer takes a power-of-two block; the region holds them all.
    let need: usize = sizes
        .iter()
        .map(|s| s.max(&PAGE_SIZE).next_power_of_two())
        .sum();
    let mut pool =
        BufPool::new(BufPoolOptions::aligned(PAGE_SIZE).with_region(need.next_power_of_two()));
    let bufs = sizes.iter().map(|&s| pool.get(s)).collect();
    let region = pool.region().cloned();
    let region = region.filter(|r| match engine.register_region(r) {
        Ok(registered) => registered,
        Err(e) => {
            tracing::debug!("buffers not registered: {e}");
            false
        }
    });
    // Dropping the pool keeps the buffers: each holds its block of the region.
    (bufs, region)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffers_lie_in_the_registered_region() {
        let mut engine = vecio::EngineKind::Uring.build().unwrap();
        let (bufs, region) = registered(engine.as_mut(), &[(1 << 20) + 8192, 1 << 20]);
        let region = region.expect("root registers any size");
        assert_eq!(region.len(), 4 << 20);
        for b in &bufs {
            assert_eq!(b.region_id(), Some(region.id()));
            assert_eq!(b.as_ptr() as usize % PAGE_SIZE, 0);
        }
        assert_eq!(bufs[0].len(), (1 << 20) + 8192);
        let mut sync = vecio::EngineKind::Sync.build().unwrap();
        assert!(
            registered(sync.as_mut(), &[4096]).1.is_none(),
            "no ring, no fixed ops"
        );
    }
}
