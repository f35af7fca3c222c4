//! Client sockets (Unix or TCP behind one type), the shutdown signal every thread can wait on,
//! and `poll(2)` over the two.

use std::io::{self, IoSlice, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};

/// A connected client socket.
#[derive(Debug)]
pub(crate) enum Stream {
    /// A Unix-domain stream socket.
    Unix(UnixStream),
    /// A TCP connection.
    Tcp(TcpStream),
}

impl Stream {
    /// `O_NONBLOCK` on or off.
    pub(crate) fn set_nonblocking(&self, yes: bool) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(yes),
            Stream::Tcp(s) => s.set_nonblocking(yes),
        }
    }

    /// `SO_SNDTIMEO`: a blocking write gives up after `t`.
    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(t),
            Stream::Tcp(s) => s.set_write_timeout(t),
        }
    }

    /// Closes both directions (`shutdown(2)`), so the peer sees the end at once.
    pub(crate) fn close(&self) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Both),
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }

    /// The peer, for logs.
    pub(crate) fn peer(&self) -> String {
        match self {
            Stream::Unix(_) => "unix".to_string(),
            Stream::Tcp(s) => s
                .peer_addr()
                .map(|a| a.to_string())
                .unwrap_or_else(|_| "tcp".to_string()),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write_vectored(bufs),
            Stream::Tcp(s) => s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsFd for Stream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Stream::Unix(s) => s.as_fd(),
            Stream::Tcp(s) => s.as_fd(),
        }
    }
}

struct ShutdownInner {
    flag: AtomicBool,
    /// Written once on shutdown; `rx` then stays readable for every poller.
    tx: UnixStream,
    rx: UnixStream,
}

/// Asks a running [`Server`](crate::Server) to stop: it stops accepting, lets every
/// connection finish the requests in flight, flushes the file and returns. Cheap to clone;
/// safe to trigger from any thread, any number of times.
#[derive(Clone)]
pub struct ShutdownHandle {
    inner: Arc<ShutdownInner>,
}

impl std::fmt::Debug for ShutdownHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShutdownHandle")
            .field("triggered", &self.is_triggered())
            .finish()
    }
}

impl ShutdownHandle {
    /// A new, untriggered handle (a socket pair, so that `poll(2)` can wait on it).
    pub fn new() -> io::Result<Self> {
        let (tx, rx) = UnixStream::pair()?;
        tx.set_nonblocking(true)?;
        Ok(ShutdownHandle {
            inner: Arc::new(ShutdownInner {
                flag: AtomicBool::new(false),
                tx,
                rx,
            }),
        })
    }

    /// Starts the shutdown.
    pub fn trigger(&self) {
        if !self.inner.flag.swap(true, Ordering::SeqCst) {
            // One byte, never read: the receiving end stays readable for every poller.
            let _ = (&self.inner.tx).write(&[1]);
        }
    }

    /// True once [`trigger`](Self::trigger) was called.
    pub fn is_triggered(&self) -> bool {
        self.inner.flag.load(Ordering::SeqCst)
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.inner.rx.as_fd()
    }
}

/// What [`wait`] saw.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Ready {
    /// The socket can be read (or has reached its end, or failed).
    pub(crate) readable: bool,
    /// Shutdown was triggered.
    pub(crate) shutdown: bool,
}

/// Waits (`poll(2)`) until `fd` is readable (if `read`), writable (if `write`), shutdown is
/// triggered, or `timeout` passes.
pub(crate) fn wait(
    fd: BorrowedFd<'_>,
    read: bool,
    write: bool,
    shutdown: &ShutdownHandle,
    timeout: Option<Duration>,
) -> io::Result<Ready> {
    let mut ev = PollFlags::empty();
    if read {
        ev |= PollFlags::IN;
    }
    if write {
        ev |= PollFlags::OUT;
    }
    let mut fds = [
        PollFd::from_borrowed_fd(fd, ev),
        PollFd::from_borrowed_fd(shutdown.fd(), PollFlags::IN),
    ];
    let ts = timeout.map(|t| Timespec {
        tv_sec: t.as_secs() as i64,
        tv_nsec: t.subsec_nanos() as i64,
    });
    match rustix::event::poll(&mut fds, ts.as_ref()) {
        Ok(_) => {}
        Err(rustix::io::Errno::INTR) => return Ok(Ready::default()),
        Err(e) => return Err(e.into()),
    }
    let got = fds[0].revents();
    let broken = got.intersects(PollFlags::ERR | PollFlags::HUP | PollFlags::NVAL);
    Ok(Ready {
        readable: read && (got.contains(PollFlags::IN) || broken),
        shutdown: !fds[1].revents().is_empty() || shutdown.is_triggered(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_wakes_every_waiter() {
        let h = ShutdownHandle::new().unwrap();
        let (a, _b) = UnixStream::pair().unwrap();
        let r = wait(a.as_fd(), true, false, &h, Some(Duration::from_millis(10))).unwrap();
        assert!(!r.shutdown && !r.readable);
        h.trigger();
        h.trigger();
        for _ in 0..2 {
            let r = wait(a.as_fd(), true, false, &h, None).unwrap();
            assert!(r.shutdown);
        }
    }
}
