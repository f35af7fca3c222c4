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

use crate::tls::{Session, Tls};

/// A connected client socket.
#[derive(Debug)]
pub(crate) enum Sock {
    /// A Unix-domain stream socket.
    Unix(UnixStream),
    /// A TCP connection.
    Tcp(TcpStream),
}

impl Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Unix(s) => s.read(buf),
            Sock::Tcp(s) => s.read(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Sock::Unix(s) => s.write_vectored(bufs),
            Sock::Tcp(s) => s.write_vectored(bufs),
        }
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Sock::read(self, buf)
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        Sock::write_vectored(self, bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A client connection: the socket, and the TLS session once `NBD_OPT_STARTTLS` set one up.
/// Reads and writes go through TLS when it is on; both work on blocking and non-blocking
/// sockets (`WouldBlock` means the socket, not TLS, has to wait).
#[derive(Debug)]
pub(crate) struct Stream {
    sock: Sock,
    tls: Option<Session>,
}

impl From<Sock> for Stream {
    fn from(sock: Sock) -> Self {
        Stream { sock, tls: None }
    }
}

impl Stream {
    /// `O_NONBLOCK` on or off.
    pub(crate) fn set_nonblocking(&self, yes: bool) -> io::Result<()> {
        match &self.sock {
            Sock::Unix(s) => s.set_nonblocking(yes),
            Sock::Tcp(s) => s.set_nonblocking(yes),
        }
    }

    /// `SO_SNDTIMEO` and `SO_RCVTIMEO`: a blocking write or read gives up after `t`.
    pub(crate) fn set_timeouts(&self, t: Option<Duration>) -> io::Result<()> {
        match &self.sock {
            Sock::Unix(s) => s.set_write_timeout(t).and_then(|_| s.set_read_timeout(t)),
            Sock::Tcp(s) => s.set_write_timeout(t).and_then(|_| s.set_read_timeout(t)),
        }
    }

    /// Closes both directions (`shutdown(2)`), so the peer sees the end at once; a TLS
    /// session says `close_notify` first.
    pub(crate) fn close(&mut self) {
        if let Some(tls) = &mut self.tls {
            tls.close_notify();
            let _ = tls.write_tls(&mut self.sock);
        }
        let _ = match &self.sock {
            Sock::Unix(s) => s.shutdown(std::net::Shutdown::Both),
            Sock::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }

    /// Who the client proved to be over TLS (certificate subject DN or PSK user name).
    pub(crate) fn tls_identity(&self) -> Option<String> {
        self.tls.as_ref().and_then(|t| t.identity())
    }

    /// The TLS version and cipher suite in use, for logs.
    pub(crate) fn tls_description(&self) -> Option<String> {
        self.tls.as_ref().map(|t| t.describe())
    }

    /// True once TLS is on.
    pub(crate) fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Runs the TLS handshake as server with `tls`'s credentials (on a blocking socket,
    /// bounded by its timeouts); from then on every read and write is encrypted.
    pub(crate) fn start_tls(&mut self, tls: &Tls) -> io::Result<()> {
        let mut session = tls.session()?;
        session.handshake(&mut self.sock)?;
        self.tls = Some(session);
        Ok(())
    }

    /// Plaintext that TLS has decrypted and not yet handed out: the socket may not be
    /// readable although a read would return data.
    pub(crate) fn buffered(&mut self) -> bool {
        self.tls.as_mut().is_some_and(|t| t.has_plaintext())
    }

    /// Encrypted bytes waiting for the socket to take them.
    pub(crate) fn wants_write(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.wants_write())
    }

    /// Writes what TLS holds for the socket; true when nothing is left.
    pub(crate) fn flush_tls(&mut self) -> io::Result<bool> {
        let Some(tls) = &mut self.tls else {
            return Ok(true);
        };
        while tls.wants_write() {
            match tls.write_tls(&mut self.sock) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

/// Most plaintext one TLS write takes before the socket must drain it.
const TLS_WRITE_CHUNK: usize = 256 << 10;

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(tls) = &mut self.tls else {
            return self.sock.read(buf);
        };
        loop {
            match tls.read_plain(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            match tls.read_tls(&mut self.sock) {
                // The peer closed the socket without close_notify: the end of the stream.
                Ok(0) => return Ok(0),
                Ok(_) => {}
                Err(e) => return Err(e),
            }
            if let Err(e) = tls.process() {
                let _ = tls.write_tls(&mut self.sock);
                return Err(e);
            }
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        if self.tls.is_none() {
            return self.sock.write_vectored(bufs);
        }
        // Earlier records first; take new plaintext only once the socket took them.
        if !self.flush_tls()? {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let Some(tls) = &mut self.tls else {
            return Ok(0);
        };
        let mut n = 0;
        for b in bufs {
            if n >= TLS_WRITE_CHUNK {
                break;
            }
            let take = b.len().min(TLS_WRITE_CHUNK - n);
            n += tls.write_plain(&b[..take])?;
        }
        match self.flush_tls() {
            Ok(_) => Ok(n),
            Err(e) => Err(e),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        while !self.flush_tls()? {
            std::thread::yield_now();
        }
        Ok(())
    }
}

impl AsFd for Stream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.sock {
            Sock::Unix(s) => s.as_fd(),
            Sock::Tcp(s) => s.as_fd(),
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
