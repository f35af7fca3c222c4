//! The seed's workload: 32 page-aligned 4 KiB buffers, `preadv` or `pwritev` in a loop over
//! sequential offsets for a fixed time, `O_DIRECT` or buffered.

use std::io::{IoSlice, IoSliceMut};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use vecio::AlignedBuf;

/// Segments per call.
pub const SEGMENTS: usize = 32;
/// Bytes per segment.
pub const SEGMENT: usize = 4096;

/// Reading or writing.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// `preadv`.
    Readv,
    /// `pwritev`.
    Writev,
}

impl Op {
    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Op::Readv => "readv",
            Op::Writev => "writev",
        }
    }
}

/// Runs `op` on `path` for `runtime`; MB/s (10^6 bytes per second), or the first error.
pub fn measure(
    path: &Path,
    op: Op,
    direct: bool,
    size: u64,
    runtime: Duration,
) -> std::io::Result<f64> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true).write(op == Op::Writev);
    if direct {
        opts.custom_flags(libc::O_DIRECT);
    }
    let file = opts.open(path)?;
    let mut bufs: Vec<AlignedBuf> = (0..SEGMENTS)
        .map(|i| {
            let mut b = AlignedBuf::page_aligned(SEGMENT);
            b.fill(i as u8 ^ 0x5a);
            b
        })
        .collect();
    let call = (SEGMENTS * SEGMENT) as u64;
    let span = (size / call).max(1) * call;
    // The iovec array is built once; each call only moves the offset.
    let mut call_at: Box<dyn FnMut(u64) -> std::io::Result<usize> + '_> = match op {
        Op::Readv => {
            let mut iov: Vec<IoSliceMut<'_>> =
                bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
            Box::new(move |off| Ok(rustix::io::preadv(&file, &mut iov, off)?))
        }
        Op::Writev => {
            let iov: Vec<IoSlice<'_>> = bufs.iter().map(|b| IoSlice::new(b)).collect();
            Box::new(move |off| Ok(rustix::io::pwritev(&file, &iov, off)?))
        }
    };
    let mut one_call = |off: u64| match call_at(off)? {
        0 if op == Op::Readv => Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "read past end of file",
        )),
        n => Ok(n),
    };
    // One untimed call: opens, first faults and a clear error before the clock starts.
    one_call(0)?;
    let start = Instant::now();
    let mut bytes = 0u64;
    let mut offset = call % span;
    while start.elapsed() < runtime {
        for _ in 0..8 {
            bytes += one_call(offset)? as u64;
            offset = (offset + call) % span;
        }
    }
    Ok(bytes as f64 / start.elapsed().as_secs_f64() / 1e6)
}
