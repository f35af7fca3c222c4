//! `Server`: listening sockets (Unix and TCP), a thread per connection (each with its own
//! engine, so its own io_uring), the connection limit, and the clean shutdown: stop
//! accepting, let every connection finish and answer what it has in flight, then flush the
//! file once more.
//!
//! ```no_run
//! use vecio_nbd::{Export, ExportOptions, Server, ServerOptions};
//! # fn main() -> vecio_nbd::Result<()> {
//! let export = Export::open("disk.img", ExportOptions::default())?;
//! let mut server = Server::new(export, ServerOptions::default())?;
//! server.listen_unix("disk.sock")?;
//! let stop = server.shutdown_handle();
//! let t = std::thread::spawn(move || server.run());
//! // ... clients connect to nbd+unix:///?socket=disk.sock ...
//! stop.trigger();
//! t.join().expect("server thread")?;
//! # Ok(()) }
//! ```

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};

use crate::access::{IpFilter, Peer};
use crate::conn::Conn;
use crate::dir::ExportDir;
use crate::error::{Error, Result};
use crate::export::Export;
use crate::exports::Exports;
use crate::handshake::{self, Outcome, Stop, Wire};
use crate::stream::{ShutdownHandle, Sock, Stream};
use crate::tls::Tls;

/// How a [`Server`] serves.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// The engine each connection builds for its I/O (`--aio`).
    pub aio: vecio::EngineKind,
    /// Connections served at once (`--shared`); further clients wait in the listen backlog
    /// until one leaves. 0: no limit.
    pub shared: usize,
    /// TLS offered or required (`--tls`), with its certificates; `None`: no TLS.
    pub tls: Option<Tls>,
    /// Stop once the first client has come and every connection has gone (`--oneshot`,
    /// qemu-nbd's default); false: serve until shut down (`-t/--persistent`).
    pub oneshot: bool,
    /// Which clients may connect (`--allow`, `--deny`); empty: all.
    pub access: IpFilter,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            aio: vecio::EngineKind::Uring,
            shared: 16,
            tls: None,
            oneshot: false,
            access: IpFilter::default(),
        }
    }
}

enum Listener {
    /// `path`: the socket file to remove at the end (`None`: not ours, e.g. systemd's).
    Unix {
        l: UnixListener,
        path: Option<PathBuf>,
    },
    Tcp(TcpListener),
}

impl Listener {
    /// The next client and who it is.
    fn accept(&self) -> io::Result<(Stream, Peer)> {
        match self {
            Listener::Unix { l, .. } => l.accept().map(|(s, _)| {
                let peer = Peer::unix(&s);
                (Stream::from(Sock::Unix(s)), peer)
            }),
            Listener::Tcp(l) => l.accept().map(|(s, addr)| {
                let _ = s.set_nodelay(true);
                (Stream::from(Sock::Tcp(s)), Peer::tcp(addr))
            }),
        }
    }

    fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match self {
            Listener::Unix { l, .. } => l.as_fd(),
            Listener::Tcp(l) => l.as_fd(),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix {
            path: Some(path), ..
        } = self
        {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Where a passed socket listens ([`Server::listen_fd`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAddr {
    /// A Unix socket, with its path (`None`: abstract or unnamed).
    Unix(Option<PathBuf>),
    /// A TCP socket.
    Tcp(SocketAddr),
}

/// An NBD server of one [`Export`], or of an [`ExportDir`]'s (see the crate documentation).
pub struct Server {
    exports: Arc<Exports>,
    connections: Arc<std::sync::atomic::AtomicUsize>,
    opts: ServerOptions,
    listeners: Vec<Listener>,
    shutdown: ShutdownHandle,
}

impl Server {
    /// A server of `export`, listening nowhere yet.
    pub fn new(export: Export, opts: ServerOptions) -> Result<Self> {
        Self::serving(Exports::One(Arc::new(export)), opts)
    }

    /// A server of every regular file in `dir`, each under its file name, listening nowhere
    /// yet.
    pub fn with_dir(dir: ExportDir, opts: ServerOptions) -> Result<Self> {
        Self::serving(Exports::Dir(dir), opts)
    }

    fn serving(exports: Exports, opts: ServerOptions) -> Result<Self> {
        let shutdown = ShutdownHandle::new().map_err(Error::Thread)?;
        Ok(Server {
            exports: Arc::new(exports),
            connections: Default::default(),
            opts,
            listeners: Vec::new(),
            shutdown,
        })
    }

    /// The export of a single-export server (`None` for a directory's).
    pub fn export(&self) -> Option<&Arc<Export>> {
        match &*self.exports {
            Exports::One(e) => Some(e),
            Exports::Dir(_) => None,
        }
    }

    /// Reads what the server holds (connections, open exports, files, ring slots), from any
    /// thread, while it runs.
    pub fn held(&self) -> crate::HeldCounter {
        crate::HeldCounter {
            exports: self.exports.clone(),
            connections: self.connections.clone(),
        }
    }

    /// A handle that stops [`run`](Self::run) from any thread (or a signal handler thread).
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.shutdown.clone()
    }

    /// Listens on the Unix socket `path` (`bind(2)`, `listen(2)`). A stale socket left by a
    /// server that is gone is replaced; a live one is [`Error::SocketInUse`], and a path
    /// that is not a socket is [`Error::NotASocket`]. The socket file is removed when the server stops.
    pub fn listen_unix(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_socket() {
                return Err(Error::NotASocket {
                    path: path.to_path_buf(),
                });
            }
            let stale = UnixStream::connect(path).is_err();
            if !stale {
                return Err(Error::SocketInUse {
                    path: path.to_path_buf(),
                });
            }
            let _ = std::fs::remove_file(path);
        }
        let listen_err = |source| Error::Listen {
            addr: path.display().to_string(),
            source,
        };
        let l = UnixListener::bind(path).map_err(listen_err)?;
        l.set_nonblocking(true).map_err(listen_err)?;
        self.listeners.push(Listener::Unix {
            l,
            path: Some(path.to_path_buf()),
        });
        Ok(())
    }

    /// Listens on a socket already bound and listening, such as one passed by systemd socket
    /// activation ([`crate::listen_fds`]): a Unix or TCP stream socket. Returns where it
    /// listens: the socket path, or the TCP address. The socket file of a Unix socket is
    /// left in place at the end (whoever bound it owns it).
    pub fn listen_fd(&mut self, fd: std::os::fd::OwnedFd) -> Result<ListenAddr> {
        let listen_err = |source| Error::Listen {
            addr: "passed socket".into(),
            source,
        };
        let addr = rustix::net::getsockname(&fd).map_err(|e| listen_err(e.into()))?;
        use rustix::net::AddressFamily;
        let (listener, at) = match addr.address_family() {
            AddressFamily::UNIX => {
                let l = UnixListener::from(fd);
                let path = l.local_addr().map_err(listen_err)?;
                let path = path.as_pathname().map(Path::to_path_buf);
                (Listener::Unix { l, path: None }, ListenAddr::Unix(path))
            }
            AddressFamily::INET | AddressFamily::INET6 => {
                let l = TcpListener::from(fd);
                let local = l.local_addr().map_err(listen_err)?;
                (Listener::Tcp(l), ListenAddr::Tcp(local))
            }
            _ => {
                let e = io::Error::new(io::ErrorKind::InvalidInput, "not a Unix or TCP socket");
                return Err(listen_err(e));
            }
        };
        match &listener {
            Listener::Unix { l, .. } => l.set_nonblocking(true),
            Listener::Tcp(l) => l.set_nonblocking(true),
        }
        .map_err(listen_err)?;
        self.listeners.push(listener);
        Ok(at)
    }

    /// Listens on TCP `addr`; returns the address bound (with the port chosen when `addr`
    /// has port 0).
    pub fn listen_tcp(&mut self, addr: SocketAddr) -> Result<SocketAddr> {
        let listen_err = |source| Error::Listen {
            addr: addr.to_string(),
            source,
        };
        let l = TcpListener::bind(addr).map_err(listen_err)?;
        l.set_nonblocking(true).map_err(listen_err)?;
        let local = l.local_addr().map_err(listen_err)?;
        self.listeners.push(Listener::Tcp(l));
        Ok(local)
    }

    /// Serves until the shutdown handle is triggered, then waits for every connection to
    /// finish its requests in flight and flushes the files open for writing (`fdatasync`).
    pub fn run(mut self) -> Result<()> {
        if self.listeners.is_empty() {
            return Err(Error::Config("no socket to listen on".into()));
        }
        let mut conns: Vec<JoinHandle<()>> = Vec::new();
        let mut next_id = 0u64;
        while !self.shutdown.is_triggered() {
            conns.retain(|h| !h.is_finished());
            let served = self.opts.oneshot && next_id > 0;
            if served && conns.is_empty() {
                tracing::info!("the client left: one-shot server stopping");
                break;
            }
            let full = self.opts.shared > 0 && conns.len() >= self.opts.shared;
            // A one-shot server that has served wakes now and then to see its clients go.
            let ready = self.poll_listeners(full || served)?;
            for i in ready {
                loop {
                    if self.opts.shared > 0 && conns.len() >= self.opts.shared {
                        break;
                    }
                    let (stream, peer) = match self.listeners[i].accept() {
                        Ok(s) => s,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => {
                            // EMFILE, ECONNABORTED...: keep serving the others.
                            tracing::warn!("accept: {e}");
                            break;
                        }
                    };
                    if !self.opts.access.permits(&peer) {
                        tracing::warn!(%peer, "refused: the client is not allowed (--allow/--deny)");
                        drop(stream);
                        continue;
                    }
                    next_id += 1;
                    conns.push(self.spawn(next_id, stream, peer)?);
                }
            }
        }
        tracing::info!(connections = conns.len(), "shutting down");
        // Stop accepting (and remove socket files) before waiting for the connections.
        self.listeners.clear();
        for h in conns {
            let _ = h.join();
        }
        self.exports.flush()
    }

    /// Indices of listeners with a client waiting; when `full`, waits only for shutdown or a
    /// short while (a connection may end meanwhile).
    fn poll_listeners(&self, full: bool) -> Result<Vec<usize>> {
        let sd = self.shutdown.fd();
        let mut fds: Vec<PollFd<'_>> = vec![PollFd::from_borrowed_fd(sd, PollFlags::IN)];
        if !full {
            for l in &self.listeners {
                fds.push(PollFd::from_borrowed_fd(l.fd(), PollFlags::IN));
            }
        }
        // With a limit reached, or to notice finished connections, wake now and then.
        let ts = Timespec {
            tv_sec: 0,
            tv_nsec: 100_000_000,
        };
        let timeout = if full { Some(&ts) } else { None };
        match rustix::event::poll(&mut fds, timeout) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => {
                return Err(Error::Listen {
                    addr: "poll".into(),
                    source: e.into(),
                })
            }
        }
        Ok(fds
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, f)| !f.revents().is_empty())
            .map(|(i, _)| i - 1)
            .collect())
    }

    fn spawn(&self, id: u64, stream: Stream, peer: Peer) -> Result<JoinHandle<()>> {
        let exports = self.exports.clone();
        let shutdown = self.shutdown.clone();
        let count = crate::held::ConnectionCount::new(&self.connections);
        let held = self.held();
        let aio = self.opts.aio;
        let tls = self.opts.tls.clone();
        std::thread::Builder::new()
            .name(format!("nbd-conn-{id}"))
            .spawn(move || {
                connection(id, stream, peer, exports, aio, tls, shutdown);
                drop(count);
                if tracing::enabled!(tracing::Level::DEBUG) {
                    tracing::debug!(conn = id, "ended; holding {}", held.now());
                }
            })
            .map_err(Error::Thread)
    }
}

/// One connection, from handshake to close. Errors end this connection only.
fn connection(
    id: u64,
    mut stream: Stream,
    peer: Peer,
    exports: Arc<Exports>,
    aio: vecio::EngineKind,
    tls: Option<Tls>,
    shutdown: ShutdownHandle,
) {
    tracing::debug!(conn = id, %peer, "connected");
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_timeouts(Some(Duration::from_secs(30)));
    let outcome = {
        let mut wire = Wire {
            stream: &mut stream,
            shutdown: &shutdown,
            deadline: std::time::Instant::now() + handshake::HANDSHAKE_TIMEOUT,
        };
        handshake::negotiate(&mut wire, &exports, tls.as_ref())
    };
    let (session, export) = match outcome {
        Ok(Outcome::Go(s, e)) => (s, e),
        Ok(Outcome::Closed) | Err(Stop::Closed) => {
            tracing::debug!(conn = id, "left during the handshake");
            stream.close();
            return;
        }
        Err(Stop::Refused(why)) => {
            tracing::warn!(conn = id, %peer, "refused: {why}");
            stream.close();
            return;
        }
        Err(Stop::Protocol(reason)) => {
            tracing::warn!(conn = id, %peer, "handshake: protocol violation: {reason}");
            stream.close();
            return;
        }
        Err(Stop::Io(e)) => {
            tracing::debug!(conn = id, "handshake: {e}");
            stream.close();
            return;
        }
    };
    tracing::debug!(conn = id, ?session, "transmission");
    let result = Conn::new(id, stream, export, session, aio, shutdown).and_then(Conn::serve);
    match result {
        Ok(()) => tracing::debug!(conn = id, "closed"),
        Err(e) => tracing::warn!("{e}"),
    }
}
