//! `AsyncRead`, `AsyncWrite` and `AsyncSeek` for [`File`], with a position of its own.
//!
//! - **Reads.** Bytes read ahead are served first. A buffered file is then read on the calling
//!   task with `RWF_NOWAIT` (vecio's per-file fast-read policy), straight into the caller's
//!   buffer: a read the page cache holds costs one system call and no hop to another thread.
//!   What would block goes to the driver, for at least what was asked; reads that follow each
//!   other double that size up to the largest buffer (read-ahead), and the surplus is kept.
//! - **Writes.** As tokio's file: `poll_write` copies the bytes (up to the largest buffer),
//!   starts the write in the driver and returns; the next operation waits for it, and its
//!   error, if any, is met by the next write, flush or seek.
//! - **Seeks** move the position only (no system call), after the operation in flight;
//!   `SeekFrom::End` reads the size.

use std::future::Future;
use std::io::{self, IoSlice, SeekFrom};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
use vecio::fast_read::Attempt;
use vecio::IoIter;

use super::file::{take_error, Core, Done, Inner};
use super::File;

impl Core {
    /// Takes a finished background operation into the file's state.
    pub(super) fn finish(&self, inner: &mut Inner, done: Done) {
        match done {
            Done::Read { result, buf, at } => match result {
                Ok(_) => {
                    inner.spare = std::mem::replace(&mut inner.ahead, buf);
                    inner.ahead_at = at;
                }
                Err(e) => {
                    // Met by the read that started it, which is the one polling now (a read is
                    // only left in flight by a read).
                    inner.write_error.get_or_insert(e);
                }
            },
            Done::Write { result, mut buf } => {
                if let Err(e) = result {
                    inner.write_error.get_or_insert(e);
                }
                if self.append {
                    if let Ok(size) = self.positional().and_then(|f| f.vecio().size()) {
                        self.pos.store(size, Ordering::Relaxed);
                    }
                }
                buf.clear();
                inner.spare = buf;
            }
        }
    }

    /// Polls the operation in flight to its end (if there is one).
    fn poll_settle(&self, inner: &mut Inner, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(op) = inner.in_flight.as_mut() {
            let done = ready!(op.as_mut().poll(cx));
            inner.in_flight = None;
            self.finish(inner, done);
        }
        Poll::Ready(())
    }

    /// Copies read-ahead bytes at the position into `dst`; how many.
    fn serve_ahead(&self, inner: &mut Inner, dst: &mut ReadBuf<'_>) -> usize {
        let pos = self.pos.load(Ordering::Relaxed);
        let end = inner.ahead_at + inner.ahead.len() as u64;
        if pos < inner.ahead_at || pos >= end {
            return 0;
        }
        let from = (pos - inner.ahead_at) as usize;
        let n = dst.remaining().min(inner.ahead.len() - from);
        dst.put_slice(&inner.ahead[from..from + n]);
        self.advance(inner, n);
        n
    }

    fn advance(&self, inner: &mut Inner, n: usize) {
        let end = self.pos.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        inner.last_read_end = end;
    }

    /// The read on this task with `RWF_NOWAIT`: `Some(n)` when the page cache served `n`
    /// bytes (0 at end of file), `None` when the driver must read.
    fn read_inline(&self, inner: &mut Inner, dst: &mut ReadBuf<'_>) -> io::Result<Option<usize>> {
        let file = self.positional()?;
        if file.vecio().is_direct() {
            return Ok(None);
        }
        let pos = self.pos.load(Ordering::Relaxed);
        let want = dst.remaining().min(self.max_buf_size);
        let slot = &mut dst.initialize_unfilled_to(want)[..want];
        let n = match file.vecio().try_read_inline(
            IoIter::read_into(slot),
            pos,
            file.driver().policy(),
        )? {
            Attempt::Done(n) => n,
            Attempt::Partial(n) if n > 0 => n,
            _ => return Ok(None),
        };
        dst.advance(n);
        self.advance(inner, n);
        Ok(Some(n))
    }

    /// Starts a driver read at the position: what was asked, or more when reads follow each
    /// other.
    fn start_read(&self, inner: &mut Inner, asked: usize) -> io::Result<()> {
        let file = self.positional()?.clone();
        let pos = self.pos.load(Ordering::Relaxed);
        inner.window = if pos == inner.last_read_end {
            (inner.window * 2).max(asked)
        } else {
            asked
        }
        .clamp(1, self.max_buf_size);
        let mut buf = std::mem::take(&mut inner.spare);
        buf.clear();
        buf.resize(inner.window, 0);
        inner.in_flight = Some(Box::pin(async move {
            let (result, mut buf) = file.read_at(buf, pos).await;
            buf.truncate(*result.as_ref().unwrap_or(&0));
            Done::Read {
                result,
                buf,
                at: pos,
            }
        }));
        Ok(())
    }

    /// Starts a write of `bufs` (as much as fits in the largest buffer) at the position.
    fn start_write(&self, inner: &mut Inner, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let file = self.positional()?.clone();
        let mut buf = std::mem::take(&mut inner.spare);
        buf.clear();
        for b in bufs {
            let room = self.max_buf_size - buf.len();
            buf.extend_from_slice(&b[..b.len().min(room)]);
            if buf.len() == self.max_buf_size {
                break;
            }
        }
        let n = buf.len();
        inner.ahead.clear();
        let at = self.pos.fetch_add(n as u64, Ordering::Relaxed);
        inner.in_flight = Some(Box::pin(async move {
            let (result, buf) = file.write_all_at(buf, at).await;
            Done::Write { result, buf }
        }));
        Ok(n)
    }

    fn poll_write_bufs(
        &self,
        inner: &mut Inner,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_settle(inner, cx));
        take_error(inner)?;
        if bufs.iter().all(|b| b.is_empty()) {
            return Poll::Ready(Ok(0));
        }
        let n = self.start_write(inner, bufs)?;
        // Started: the write goes on in the driver; the next operation waits for it.
        let _ = self.poll_settle(inner, cx);
        Poll::Ready(Ok(n))
    }
}

impl AsyncRead for File {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let File { core, inner } = self.get_mut();
        core.poll_read(inner.get_mut(), cx, dst)
    }
}

impl Core {
    fn poll_read(
        &self,
        inner: &mut Inner,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut started = false;
        loop {
            ready!(self.poll_settle(inner, cx));
            if started {
                // The read this call started has finished: its bytes, end of file, or error.
                take_error(inner)?;
                self.serve_ahead(inner, dst);
                return Poll::Ready(Ok(()));
            }
            if dst.remaining() == 0 || self.serve_ahead(inner, dst) > 0 {
                return Poll::Ready(Ok(()));
            }
            if !self.positional()?.vecio().is_direct() {
                // A read served here counts against the task's cooperative budget, as tokio's
                // own resources do, so a task whose reads all hit the cache still yields.
                ready!(std::pin::pin!(tokio::task::coop::consume_budget()).poll(cx));
                if self.read_inline(inner, dst)?.is_some() {
                    return Poll::Ready(Ok(()));
                }
            }
            self.start_read(inner, dst.remaining())?;
            started = true;
        }
    }
}

impl AsyncWrite for File {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        src: &[u8],
    ) -> Poll<io::Result<usize>> {
        let File { core, inner } = self.get_mut();
        core.poll_write_bufs(inner.get_mut(), cx, &[IoSlice::new(src)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let File { core, inner } = self.get_mut();
        core.poll_write_bufs(inner.get_mut(), cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let File { core, inner } = self.get_mut();
        let inner = inner.get_mut();
        ready!(core.poll_settle(inner, cx));
        Poll::Ready(take_error(inner))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}

impl AsyncSeek for File {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        let inner = self.get_mut().inner.get_mut();
        if inner.in_flight.is_some() {
            return Err(io::Error::other(
                "other file operation is pending, call poll_complete before start_seek",
            ));
        }
        inner.seek = Some(position);
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let File { core, inner } = self.get_mut();
        let inner = inner.get_mut();
        ready!(core.poll_settle(inner, cx));
        Poll::Ready(core.complete_seek(inner))
    }
}

impl Core {
    fn complete_seek(&self, inner: &mut Inner) -> io::Result<u64> {
        take_error(inner)?;
        let Some(target) = inner.seek.take() else {
            return Ok(self.pos.load(Ordering::Relaxed));
        };
        let pos = self.pos.load(Ordering::Relaxed) as i128;
        let new = match target {
            SeekFrom::Start(n) => n as i128,
            SeekFrom::Current(d) => pos + d as i128,
            SeekFrom::End(d) => self.positional()?.vecio().size()? as i128 + d as i128,
        };
        if !(0..=i64::MAX as i128).contains(&new) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "invalid seek to a negative or overflowing position",
            ));
        }
        self.pos.store(new as u64, Ordering::Relaxed);
        Ok(new as u64)
    }
}
