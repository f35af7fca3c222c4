//! The third path of `vecio bench tokio`: tokio-uring, its tasks on its own single-threaded
//! runtime over one ring.

use std::rc::Rc;
use std::time::Instant;

use anyhow::{Context, Result};
use tokio_uring::buf::{IoBuf, IoBufMut};
use vecio::AlignedBuf;

use super::run::{read_loop, Files, TaskOut};
use super::{TokioOptions, READ};

/// A page-aligned buffer tokio-uring can own (O_DIRECT needs the alignment a `Vec` lacks).
struct Aligned(AlignedBuf);

// SAFETY: the AlignedBuf's allocation never moves while the value lives, and every byte of it
// is initialised (AlignedBuf zeroes its memory), so the pointer and both lengths stay valid
// while tokio-uring owns the buffer.
unsafe impl IoBuf for Aligned {
    fn stable_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }

    fn bytes_init(&self) -> usize {
        self.0.len()
    }

    fn bytes_total(&self) -> usize {
        self.0.len()
    }
}

// SAFETY: as for IoBuf; the whole buffer is initialised, so set_init has nothing to record.
unsafe impl IoBufMut for Aligned {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr()
    }

    unsafe fn set_init(&mut self, _pos: usize) {}
}

type Shared = Rc<(Files, tokio_uring::fs::File, tokio_uring::fs::File)>;

async fn task(scenario: &'static str, files: Shared, seed: u64, until: Instant) -> TaskOut {
    let shared = &*files;
    let read = |large: bool, off: u64, buf: Aligned| async move {
        let file = if large { &shared.2 } else { &shared.1 };
        Some(file.read_at(buf, off).await)
    };
    let buf = Aligned(AlignedBuf::page_aligned(READ));
    read_loop(scenario, &files.0, seed, until, buf, read).await
}

async fn open(path: &std::path::Path, direct: bool) -> Result<tokio_uring::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = tokio_uring::fs::OpenOptions::new();
    o.read(true);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
        .await
        .with_context(|| format!("tokio-uring: open {}", path.display()))
}

/// Runs `opts.tasks` tasks on a tokio-uring runtime until `until`; hands the files back.
pub(super) fn measure(
    scenario: &'static str,
    files: Files,
    opts: &TokioOptions,
    until: Instant,
) -> Result<(Vec<TaskOut>, Files)> {
    let tasks = opts.tasks as u64;
    tokio_uring::start(async move {
        let m = open(files.medium.path(), false).await?;
        let l = open(files.large.path(), true).await?;
        let shared: Shared = Rc::new((files, m, l));
        let handles: Vec<_> = (0..tasks)
            .map(|s| tokio_uring::spawn(task(scenario, shared.clone(), s + 1, until)))
            .collect();
        let mut outs = Vec::new();
        for h in handles {
            outs.push(h.await.unwrap_or_default());
        }
        let (files, m, l) = Rc::try_unwrap(shared).ok().context("files still shared")?;
        let _ = m.close().await;
        let _ = l.close().await;
        Ok((outs, files))
    })
}
