//! Test helpers: an in-process server on a Unix socket in a temporary directory or on
//! 127.0.0.1 with a free port (stopped when dropped), random images, client lookup, and a
//! minimal raw NBD client for malformed-input tests.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::JoinHandle;

use rand::{RngCore, SeedableRng};
use vecio_nbd::proto::{self, opt, rep, Command as Cmd, Errno, OptionHeader, ReplyType, Request};
use vecio_nbd::{Cache, Export, ExportOptions, Server, ServerOptions, ShutdownHandle};

/// A running server; dropping it shuts it down and waits for it.
pub struct Running {
    pub dir: tempfile::TempDir,
    pub image: PathBuf,
    pub socket: PathBuf,
    pub tcp: Option<std::net::SocketAddr>,
    stop: ShutdownHandle,
    thread: Option<JoinHandle<vecio_nbd::Result<()>>>,
}

impl Running {
    /// `nbd+unix:///?socket=...`.
    pub fn unix_uri(&self) -> String {
        format!("nbd+unix:///?socket={}", self.socket.display())
    }

    /// `nbd://127.0.0.1:PORT/`.
    pub fn tcp_uri(&self) -> String {
        let a = self.tcp.expect("server listens on TCP");
        format!("nbd://{}:{}/", a.ip(), a.port())
    }

    /// Stops the server and returns what `run` returned.
    pub fn stop(&mut self) -> vecio_nbd::Result<()> {
        self.stop.trigger();
        match self.thread.take() {
            Some(t) => t.join().expect("server thread panicked"),
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.trigger();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Options of a test server.
pub struct Opts {
    pub size: u64,
    pub cache: Cache,
    pub read_only: bool,
    pub tcp: bool,
    pub shared: usize,
    pub aio: vecio::EngineKind,
    pub name: &'static str,
    pub description: &'static str,
    /// Fill the image with random bytes from this seed (zeroes otherwise, sparse).
    pub random: Option<u64>,
    /// TLS offered or required.
    pub tls: Option<vecio_nbd::Tls>,
    /// `--allow`/`--deny`.
    pub access: vecio_nbd::IpFilter,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            size: 16 << 20,
            cache: Cache::None,
            read_only: false,
            tcp: false,
            shared: 16,
            aio: vecio::EngineKind::Uring,
            name: "",
            description: "",
            random: None,
            tls: None,
            access: Default::default(),
        }
    }
}

/// A temporary directory on a file system with O_DIRECT (not tmpfs).
pub fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("vecio-nbd-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temporary directory")
}

/// What chroot peers must see at the same path: the target directory's scratch space, where
/// [`scratch`] makes every test directory (sockets, images, certificates, keys).
pub fn share() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

/// `len` random bytes from `seed`.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rand::rngs::SmallRng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

/// Starts a server on a fresh image.
pub fn start(o: Opts) -> Running {
    let dir = scratch();
    let image = dir.path().join("disk.img");
    match o.random {
        Some(seed) => std::fs::write(&image, random_bytes(o.size as usize, seed)).unwrap(),
        None => {
            let f = std::fs::File::create(&image).unwrap();
            f.set_len(o.size).unwrap();
        }
    }
    start_on(dir, image, o)
}

/// Starts a server on an existing image in `dir`.
pub fn start_on(dir: tempfile::TempDir, image: PathBuf, o: Opts) -> Running {
    let export = Export::open(
        &image,
        ExportOptions {
            name: o.name.into(),
            description: o.description.into(),
            read_only: o.read_only,
            cache: o.cache,
        },
    )
    .expect("open export");
    let server = Server::new(export, server_options(&o)).unwrap();
    serve(dir, image, server, o.tcp)
}

/// Starts a server of every regular file in `served` (`vecio nbd --dir`), a directory in
/// `dir` or `dir` itself, where the socket goes: `exports` as
/// [`ExportDir::open`](vecio_nbd::ExportDir::open) takes it (a name: the default export),
/// `o` for the rest (its size, name, description and image options are not used).
/// `Running::image` is `served`.
pub fn start_dir(
    dir: tempfile::TempDir,
    served: PathBuf,
    exports: ExportOptions,
    o: Opts,
) -> Running {
    let exports = vecio_nbd::ExportDir::open(&served, exports).expect("open the directory");
    let server = Server::with_dir(exports, server_options(&o)).unwrap();
    serve(dir, served, server, o.tcp)
}

fn server_options(o: &Opts) -> ServerOptions {
    ServerOptions {
        aio: o.aio,
        shared: o.shared,
        tls: o.tls.clone(),
        oneshot: false,
        access: o.access.clone(),
    }
}

fn serve(dir: tempfile::TempDir, image: PathBuf, mut server: Server, tcp: bool) -> Running {
    let socket = dir.path().join("nbd.sock");
    server.listen_unix(&socket).unwrap();
    let tcp = tcp.then(|| server.listen_tcp("127.0.0.1:0".parse().unwrap()).unwrap());
    let stop = server.shutdown_handle();
    let thread = Some(std::thread::spawn(move || server.run()));
    Running {
        dir,
        image,
        socket,
        tcp,
        stop,
        thread,
    }
}

/// True when `prog` runs; prints why the test is skipped otherwise.
pub fn have(prog: &str) -> bool {
    let ok = Command::new(prog)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: {prog} is not installed (scripts/setup installs it)");
    }
    ok
}

/// Runs a command, asserting success; returns stdout.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A minimal NBD client speaking raw bytes, for malformed-input tests.
pub struct Raw {
    pub s: UnixStream,
    pub structured: bool,
    /// Extended headers negotiated (32-byte requests and replies).
    pub extended: bool,
    pub size: u64,
    pub flags: u16,
}

/// A reply as the raw client reads it.
#[derive(Debug, PartialEq, Eq)]
pub struct Reply {
    pub cookie: u64,
    pub error: Option<Errno>,
    pub data: Vec<u8>,
}

impl Raw {
    /// Connects, negotiates (structured replies and base:allocation if `structured`), GO.
    pub fn connect(socket: &Path, structured: bool) -> Raw {
        Self::negotiate(socket, structured, false)
    }

    /// Connects with extended headers and base:allocation, then GO.
    pub fn connect_extended(socket: &Path) -> Raw {
        Self::negotiate(socket, true, true)
    }

    /// Connects and sends the client flags; options are the caller's.
    pub fn negotiating(socket: &Path) -> Raw {
        let mut s = UnixStream::connect(socket).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut g = [0u8; 18];
        s.read_exact(&mut g).unwrap();
        assert_eq!(&g[..16], b"NBDMAGICIHAVEOPT");
        s.write_all(&3u32.to_be_bytes()).unwrap();
        Raw {
            s,
            structured: false,
            extended: false,
            size: 0,
            flags: 0,
        }
    }

    fn negotiate(socket: &Path, structured: bool, extended: bool) -> Raw {
        let mut s = UnixStream::connect(socket).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut g = [0u8; 18];
        s.read_exact(&mut g).unwrap();
        assert_eq!(&g[..16], b"NBDMAGICIHAVEOPT");
        s.write_all(&3u32.to_be_bytes()).unwrap();
        let mut raw = Raw {
            s,
            structured,
            extended,
            size: 0,
            flags: 0,
        };
        if extended {
            raw.option(opt::EXTENDED_HEADERS, &[]);
            assert_eq!(raw.option_reply().1, rep::ACK);
        }
        if structured {
            if !extended {
                raw.option(opt::STRUCTURED_REPLY, &[]);
                assert_eq!(raw.option_reply().1, rep::ACK);
            }
            let d = proto::encode_meta_request("", &["base:allocation"]);
            raw.option(opt::SET_META_CONTEXT, &d);
            assert_eq!(raw.option_reply().1, rep::META_CONTEXT);
            assert_eq!(raw.option_reply().1, rep::ACK);
        }
        raw.option(opt::GO, &proto::encode_info_request("", &[]));
        loop {
            let (_, kind, data) = raw.option_reply();
            if kind == rep::ACK {
                break;
            }
            assert_eq!(kind, rep::INFO, "GO failed");
            if u16::from_be_bytes([data[0], data[1]]) == proto::info::EXPORT {
                raw.size = u64::from_be_bytes(data[2..10].try_into().unwrap());
                raw.flags = u16::from_be_bytes([data[10], data[11]]);
            }
        }
        raw
    }

    /// Sends an option.
    pub fn option(&mut self, option: u32, data: &[u8]) {
        let h = OptionHeader {
            option,
            len: data.len() as u32,
        };
        self.s.write_all(&h.encode()).unwrap();
        self.s.write_all(data).unwrap();
    }

    /// Reads one option reply: (option, reply type, data).
    pub fn option_reply(&mut self) -> (u32, u32, Vec<u8>) {
        let mut h = [0u8; 20];
        self.s.read_exact(&mut h).unwrap();
        assert_eq!(
            u64::from_be_bytes(h[..8].try_into().unwrap()),
            proto::OPT_REPLY_MAGIC
        );
        let option = u32::from_be_bytes(h[8..12].try_into().unwrap());
        let kind = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let len = u32::from_be_bytes(h[16..20].try_into().unwrap());
        let mut data = vec![0u8; len as usize];
        self.s.read_exact(&mut data).unwrap();
        (option, kind, data)
    }

    /// Sends a request (and `payload` after it), in the negotiated framing; with extended
    /// headers a write gets `NBD_CMD_FLAG_PAYLOAD_LEN`.
    pub fn send(
        &mut self,
        kind: impl Into<u16>,
        flags: u16,
        cookie: u64,
        offset: u64,
        len: u32,
        payload: &[u8],
    ) {
        let kind = kind.into();
        let mut flags = flags;
        if self.extended && kind == u16::from(Cmd::Write) {
            flags |= proto::CmdFlags::PAYLOAD_LEN.bits();
        }
        self.send_long(kind, flags, cookie, offset, len.into(), payload);
    }

    /// Sends a request with a 64-bit length as it is (extended headers only past 32 bits).
    pub fn send_long(
        &mut self,
        kind: impl Into<u16>,
        flags: u16,
        cookie: u64,
        offset: u64,
        len: u64,
        payload: &[u8],
    ) {
        let r = Request {
            flags,
            kind: kind.into(),
            cookie,
            offset,
            len,
        };
        if self.extended {
            self.s.write_all(&r.encode_extended()).unwrap();
        } else {
            self.s
                .write_all(&r.encode().expect("32-bit length"))
                .unwrap();
        }
        self.s.write_all(payload).unwrap();
    }

    /// Reads one complete reply (every chunk of a structured one). `read_len` is the length
    /// of the read this reply answers, for simple replies (which do not say).
    pub fn reply(&mut self, read_len: Option<u32>) -> std::io::Result<Reply> {
        let mut m = [0u8; 4];
        self.s.read_exact(&mut m)?;
        let magic = u32::from_be_bytes(m);
        if magic == proto::SIMPLE_REPLY_MAGIC {
            assert!(!self.extended, "a simple reply under extended headers");
            let mut h = [0u8; 12];
            self.s.read_exact(&mut h)?;
            let error = Errno::from_raw(u32::from_be_bytes(h[..4].try_into().unwrap()));
            let cookie = u64::from_be_bytes(h[4..].try_into().unwrap());
            let mut data = Vec::new();
            if let (None, Some(n)) = (error, read_len) {
                data.resize(n as usize, 0);
                self.s.read_exact(&mut data)?;
            }
            return Ok(Reply {
                cookie,
                error,
                data,
            });
        }
        let mut reply = Reply {
            cookie: 0,
            error: None,
            data: Vec::new(),
        };
        let mut first = true;
        loop {
            if !first {
                self.s.read_exact(&mut m)?;
            }
            first = false;
            let (flags, kind, payload) = self.chunk(u32::from_be_bytes(m), &mut reply)?;
            match ReplyType::from_raw(kind) {
                Some(ReplyType::OffsetData) => reply.data.extend_from_slice(&payload[8..]),
                // A hole (vecio sends a sparse read's chunks in order): zeroes.
                Some(ReplyType::OffsetHole) => {
                    let n = u32::from_be_bytes(payload[8..12].try_into().unwrap());
                    reply.data.resize(reply.data.len() + n as usize, 0);
                }
                Some(ReplyType::BlockStatus | ReplyType::BlockStatusExt) => reply.data = payload,
                Some(ReplyType::None) => {}
                _ if kind & 0x8000 != 0 => {
                    reply.error =
                        Errno::from_raw(u32::from_be_bytes(payload[..4].try_into().unwrap()));
                }
                _ => panic!("unexpected chunk type {kind}"),
            }
            if flags & 1 != 0 {
                return Ok(reply);
            }
        }
    }

    /// The rest of a chunk whose magic was read: (flags, type, payload). The cookie goes to
    /// `reply`; an extended chunk's offset is not kept.
    fn chunk(&mut self, magic: u32, reply: &mut Reply) -> std::io::Result<(u16, u16, Vec<u8>)> {
        let extended = magic == proto::EXTENDED_REPLY_MAGIC;
        assert_eq!(extended, self.extended, "reply magic {magic:#x}");
        if !extended {
            assert_eq!(magic, proto::STRUCTURED_REPLY_MAGIC, "bad reply magic");
        }
        let mut h = [0u8; 28];
        let h = &mut h[..if extended { 28 } else { 16 }];
        self.s.read_exact(h)?;
        let flags = u16::from_be_bytes([h[0], h[1]]);
        let kind = u16::from_be_bytes([h[2], h[3]]);
        reply.cookie = u64::from_be_bytes(h[4..12].try_into().unwrap());
        let len = if extended {
            u64::from_be_bytes(h[20..28].try_into().unwrap())
        } else {
            u32::from_be_bytes(h[12..16].try_into().unwrap()).into()
        };
        let mut payload = vec![0u8; len as usize];
        self.s.read_exact(&mut payload)?;
        Ok((flags, kind, payload))
    }

    /// A write, waited on.
    pub fn write(&mut self, offset: u64, data: &[u8], flags: u16) -> Result<(), Errno> {
        self.send(Cmd::Write, flags, 77, offset, data.len() as u32, data);
        let r = self.reply(None).unwrap();
        assert_eq!(r.cookie, 77);
        r.error.map_or(Ok(()), Err)
    }

    /// A read, waited on.
    pub fn read(&mut self, offset: u64, len: u32) -> Reply {
        self.send(Cmd::Read, 0, 78, offset, len, &[]);
        self.reply(Some(len)).unwrap()
    }

    /// A command without payload, waited on.
    pub fn command(
        &mut self,
        kind: impl Into<u16>,
        flags: u16,
        offset: u64,
        len: u32,
    ) -> Result<(), Errno> {
        self.send(kind, flags, 79, offset, len, &[]);
        self.reply(None).unwrap().error.map_or(Ok(()), Err)
    }

    /// Sends NBD_CMD_DISC and waits for the server to close.
    pub fn disconnect(mut self) {
        self.send(Cmd::Disc, 0, 0, 0, 0, &[]);
        let mut b = [0u8; 1];
        assert_eq!(self.s.read(&mut b).unwrap_or(0), 0);
    }
}

/// python3 with libnbd's binding from `peers`, ready for its arguments (seeing the test
/// directories at their own paths); `None`, printing why, where it is missing.
pub fn libnbd_python(peers: &vecio_testkit::Peers) -> Option<Command> {
    if !peers.is_chroot() {
        return vecio_testkit::python_with_libnbd().map(Command::new);
    }
    let mut probe = peers.command("python3", share());
    let ok = probe
        .args(["-c", "import nbd"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP python3-libnbd ({}): not installed", peers.name());
        return None;
    }
    Some(peers.command("python3", share()))
}
