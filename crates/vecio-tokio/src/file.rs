//! [`File`]: positional async reads and writes with owned buffers.

use std::io::{self, IoSliceMut};
use std::path::Path;
use std::sync::Arc;

use vecio::fast_read::Attempt;
use vecio::{AlignedBuf, Dir, IoIter, OwnedBuf, RwFlags};

use crate::Driver;

/// A buffer an async call owns while the kernel uses it, handed back with the result (the
/// owned-buffer style of tokio-uring: a future dropped mid-flight cannot leave the kernel
/// writing into freed memory, because the buffer is the queue's until the kernel is done).
///
/// Implemented for `Vec<u8>` (its length is the request's length), [`AlignedBuf`] (ready for
/// direct I/O without a bounce) and [`OwnedBuf`].
pub trait IoBuf: Send + 'static {
    /// Into the queue's owned form.
    fn into_owned(self) -> OwnedBuf;
    /// Back from the form [`into_owned`](Self::into_owned) made.
    fn from_owned(buf: OwnedBuf) -> Self;
}

impl IoBuf for Vec<u8> {
    fn into_owned(self) -> OwnedBuf {
        OwnedBuf::Vec(self)
    }
    fn from_owned(buf: OwnedBuf) -> Self {
        match buf {
            OwnedBuf::Vec(v) => v,
            other => other.as_slice().to_vec(),
        }
    }
}

impl IoBuf for AlignedBuf {
    fn into_owned(self) -> OwnedBuf {
        OwnedBuf::Aligned(self)
    }
    fn from_owned(buf: OwnedBuf) -> Self {
        match buf {
            OwnedBuf::Aligned(b) => b,
            other => {
                let mut b = AlignedBuf::page_aligned(other.len());
                b.copy_from_slice(other.as_slice());
                b
            }
        }
    }
}

impl IoBuf for OwnedBuf {
    fn into_owned(self) -> OwnedBuf {
        self
    }
    fn from_owned(buf: OwnedBuf) -> Self {
        buf
    }
}

/// What one request came to: the bytes moved, the error that stopped it short (if one did),
/// and its buffers.
struct Outcome {
    result: io::Result<usize>,
    stopped_by: Option<io::Error>,
    bufs: Vec<OwnedBuf>,
}

/// A file for async positional I/O through a [`Driver`]. Every call takes its buffers by value
/// and hands them back with the result.
///
/// - Buffered reads are tried inline first with `RWF_NOWAIT` (vecio's fast-read policy, per
///   file): a read the page cache holds costs one system call on the calling task, no hop to
///   another thread; only what would block goes to the driver's engine.
/// - Direct I/O works at any offset, length and buffer alignment: the queue reads through an
///   aligned bounce window or read-modify-writes the edge blocks, asynchronously.
/// - Short transfers are resumed inside the queue; a read returns fewer bytes only at end of
///   file (or when an error stopped it after some bytes: the next call meets the error).
///
/// Cloning is cheap (two `Arc`s); clones share the file and the driver.
#[derive(Clone)]
pub struct File {
    file: Arc<vecio::File>,
    driver: Driver,
}

impl Driver {
    /// Opens `path` with `options` (on a blocking thread: `open(2)` and `statx(2)`) as a
    /// [`File`] served by this driver.
    pub async fn open(
        &self,
        path: impl AsRef<Path>,
        options: vecio::OpenOptions,
    ) -> io::Result<File> {
        let path = path.as_ref().to_owned();
        let file = tokio::task::spawn_blocking(move || options.open(path))
            .await
            .map_err(io::Error::other)??;
        Ok(File::from_vecio(Arc::new(file), self.clone()))
    }
}

impl File {
    /// Opens `path` with `options`, served by the process's shared driver
    /// ([`Driver::shared`]: one io_uring engine and its thread for every file opened this way).
    pub async fn open(path: impl AsRef<Path>, options: vecio::OpenOptions) -> io::Result<File> {
        Driver::shared()?.open(path, options).await
    }

    /// A file already open in vecio, served by `driver`.
    pub fn from_vecio(file: Arc<vecio::File>, driver: Driver) -> File {
        File { file, driver }
    }

    /// The vecio file underneath (alignment, direct mode, fast-read statistics).
    pub fn vecio(&self) -> &Arc<vecio::File> {
        &self.file
    }

    /// The driver serving this file.
    pub fn driver(&self) -> &Driver {
        &self.driver
    }

    /// Reads into `buf` at `offset` (`preadv2(2)`); returns the bytes read (fewer than
    /// `buf`'s length only at end of file) and the buffer.
    pub async fn read_at<B: IoBuf>(&self, buf: B, offset: u64) -> (io::Result<usize>, B) {
        let (result, mut bufs) = self.readv_at(vec![buf], offset).await;
        (result, take_one(&mut bufs))
    }

    /// Writes `buf` at `offset` (`pwritev2(2)`); returns the bytes written and the buffer.
    pub async fn write_at<B: IoBuf>(&self, buf: B, offset: u64) -> (io::Result<usize>, B) {
        let (result, mut bufs) = self.writev_at(vec![buf], offset).await;
        (result, take_one(&mut bufs))
    }

    /// Reads into `bufs` in order at `offset`, as one request.
    pub async fn readv_at<B: IoBuf>(
        &self,
        bufs: Vec<B>,
        offset: u64,
    ) -> (io::Result<usize>, Vec<B>) {
        let out = self.io(bufs, offset, Dir::Dest, RwFlags::empty()).await;
        (out.result, back(out.bufs))
    }

    /// Writes `bufs` in order at `offset`, as one request.
    pub async fn writev_at<B: IoBuf>(
        &self,
        bufs: Vec<B>,
        offset: u64,
    ) -> (io::Result<usize>, Vec<B>) {
        let out = self.io(bufs, offset, Dir::Source, RwFlags::empty()).await;
        (out.result, back(out.bufs))
    }

    /// Fills `buf` from `offset`; reaching the end of the file first is `UnexpectedEof`.
    pub async fn read_exact_at<B: IoBuf>(&self, buf: B, offset: u64) -> (io::Result<()>, B) {
        let out = self
            .io(vec![buf], offset, Dir::Dest, RwFlags::empty())
            .await;
        let want = out.bufs.first().map_or(0, OwnedBuf::len);
        let result = match (out.result, out.stopped_by) {
            (Ok(n), _) if n == want => Ok(()),
            (Ok(_), Some(e)) | (Err(e), _) => Err(e),
            (Ok(_), None) => Err(io::ErrorKind::UnexpectedEof.into()),
        };
        (result, take_one(&mut back(out.bufs)))
    }

    /// Writes all of `buf` at `offset`.
    pub async fn write_all_at<B: IoBuf>(&self, buf: B, offset: u64) -> (io::Result<()>, B) {
        let out = self
            .io(vec![buf], offset, Dir::Source, RwFlags::empty())
            .await;
        let want = out.bufs.first().map_or(0, OwnedBuf::len);
        let result = match (out.result, out.stopped_by) {
            (Ok(n), _) if n == want => Ok(()),
            (Ok(_), Some(e)) | (Err(e), _) => Err(e),
            (Ok(_), None) => Err(io::ErrorKind::WriteZero.into()),
        };
        (result, take_one(&mut back(out.bufs)))
    }

    /// Flushes written data to stable storage (`fdatasync(2)`, through the engine).
    pub async fn sync_data(&self) -> io::Result<()> {
        self.sync(true).await
    }

    /// Flushes data and metadata to stable storage (`fsync(2)`, through the engine).
    pub async fn sync_all(&self) -> io::Result<()> {
        self.sync(false).await
    }

    async fn sync(&self, data_only: bool) -> io::Result<()> {
        let file = self.file.clone();
        let run = self.driver.run(move |q, tag| {
            q.push_fsync(&file, data_only, tag)
                .map_err(|error| vecio::PushError {
                    error,
                    bufs: Vec::new(),
                })
        });
        match run.await {
            Ok(c) => c.result.map(|_| ()).map_err(io::Error::from),
            Err(e) => Err(e.error.into()),
        }
    }

    /// One request: a buffered read tried inline first, else through the driver.
    async fn io<B: IoBuf>(&self, bufs: Vec<B>, offset: u64, dir: Dir, flags: RwFlags) -> Outcome {
        let mut bufs: Vec<OwnedBuf> = bufs.into_iter().map(IoBuf::into_owned).collect();
        if bufs.iter().all(OwnedBuf::is_empty) {
            return Outcome {
                result: Ok(0),
                stopped_by: None,
                bufs,
            };
        }
        if dir == Dir::Dest && !self.file.is_direct() {
            match self.try_inline(&mut bufs, offset) {
                Ok(Some(n)) => {
                    // Served without waiting: count it against the task's cooperative budget,
                    // so a task whose reads all hit the cache still yields now and then and
                    // the runtime's other tasks, and its I/O driver, get their turn.
                    tokio::task::coop::consume_budget().await;
                    return Outcome {
                        result: Ok(n),
                        stopped_by: None,
                        bufs,
                    };
                }
                Ok(None) => {}
                Err(e) => {
                    return Outcome {
                        result: Err(e),
                        stopped_by: None,
                        bufs,
                    }
                }
            }
        }
        let file = self.file.clone();
        let run = self.driver.run(move |q, tag| match dir {
            Dir::Dest => q.push_read(&file, offset, bufs, flags, tag),
            Dir::Source => q.push_write(&file, offset, bufs, flags, tag),
        });
        match run.await {
            Ok(c) => Outcome {
                result: c.result.map_err(io::Error::from),
                stopped_by: c.stopped_by.map(io::Error::from),
                bufs: c.bufs,
            },
            Err(e) => Outcome {
                result: Err(e.error.into()),
                stopped_by: None,
                bufs: e.bufs,
            },
        }
    }

    /// The read with `RWF_NOWAIT` on this task, when the file's fast-read history says it is
    /// worth trying: `Some(bytes)` when the page cache served all of it (or up to end of
    /// file), `None` when it must go to the engine (a partial hit goes whole: the cached part
    /// is read again from the cache there).
    fn try_inline(&self, bufs: &mut [OwnedBuf], offset: u64) -> io::Result<Option<usize>> {
        let mut slices: Vec<IoSliceMut<'_>> = bufs
            .iter_mut()
            .map(|b| IoSliceMut::new(b.as_mut_slice()))
            .collect();
        let iter = IoIter::readv_into(&mut slices);
        match self
            .file
            .try_read_inline(iter, offset, self.driver.policy())?
        {
            Attempt::Done(n) => Ok(Some(n)),
            Attempt::Partial(_) | Attempt::WouldBlock | Attempt::Skipped => Ok(None),
        }
    }
}

fn back<B: IoBuf>(bufs: Vec<OwnedBuf>) -> Vec<B> {
    bufs.into_iter().map(B::from_owned).collect()
}

/// The single buffer of a one-buffer call (an empty one if the queue somehow lost it).
fn take_one<B: IoBuf>(bufs: &mut Vec<B>) -> B {
    bufs.pop()
        .unwrap_or_else(|| B::from_owned(OwnedBuf::Vec(Vec::new())))
}
