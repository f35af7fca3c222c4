//! The server: mount, negotiate, start one worker per thread (each with its own `/dev/fuse`
//! clone and ring), serve until unmounted, unmount on request.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use vecio::EngineKind;

use crate::dev::Channel;
use crate::error::{Error, Result};
use crate::fs::{Fs, FsConfig};
use crate::mount::{Mount, MountOptions};
use crate::session::{self, InitWants, Negotiated};
use crate::worker::{Worker, WorkerStats};

/// Everything `vecio fuse` can be told.
#[derive(Clone, Debug)]
pub struct Config {
    /// The file system's settings.
    pub fs: FsConfig,
    /// Mount options.
    pub mount: MountOptions,
    /// Worker threads (default: one per CPU).
    pub threads: usize,
    /// Pages per request: 256 packs up to 1 MiB into one request; 1 is the per-segment mode.
    pub max_pages: u16,
    /// The engine each worker submits with.
    pub engine: EngineKind,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            fs: FsConfig::default(),
            mount: MountOptions::default(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_pages: session::max_pages_limit(),
            engine: EngineKind::Uring,
        }
    }
}

/// A mounted, not yet serving, file server.
pub struct Server {
    fs: Arc<Fs>,
    chan: Channel,
    mount: Mount,
    cfg: Config,
}

/// Unmounts a running server from another thread (a signal handler's thread).
#[derive(Clone, Debug)]
pub struct Unmounter {
    mountpoint: PathBuf,
}

impl Unmounter {
    /// Detaches the mount; the server's workers return once the kernel ends the connection.
    pub fn unmount(&self) -> std::io::Result<()> {
        match rustix::mount::unmount(&self.mountpoint, rustix::mount::UnmountFlags::DETACH) {
            Ok(()) => Ok(()),
            Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOENT => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// What a finished server did.
#[derive(Debug)]
pub struct Summary {
    /// What `FUSE_INIT` agreed.
    pub negotiated: Negotiated,
    /// Request counters.
    pub stats: Arc<WorkerStats>,
}

impl Server {
    /// Opens `source` and mounts it on `mountpoint`.
    pub fn mount(source: &Path, mountpoint: &Path, mut cfg: Config) -> Result<Server> {
        if cfg.threads == 0 {
            return Err(Error::Option("--threads must be at least 1".into()));
        }
        cfg.fs.read_only |= cfg.mount.read_only;
        cfg.mount.read_only |= cfg.fs.read_only;
        cfg.fs.direct_io |= cfg.mount.direct_io;
        let fs = Fs::new(source, cfg.fs.clone())?;
        // Modes arrive with the caller's umask applied; the server's own must not apply twice.
        rustix::process::umask(rustix::fs::Mode::empty());
        let chan = Channel::open()?;
        let mount = Mount::new(&chan, source, mountpoint, &cfg.mount)?;
        Ok(Server {
            fs: Arc::new(fs),
            chan,
            mount,
            cfg,
        })
    }

    /// A handle that unmounts this server from any thread.
    pub fn unmounter(&self) -> Unmounter {
        Unmounter {
            mountpoint: self.mount.mountpoint().to_path_buf(),
        }
    }

    /// Serves until the file system is unmounted; then returns what was agreed and counted.
    pub fn run(mut self) -> Result<Summary> {
        let wants = InitWants {
            max_pages: self.cfg.max_pages,
            passthrough: self.cfg.fs.passthrough,
            uring: false,
        };
        let mut buf = vec![0u8; crate::abi::MIN_READ_BUFFER * 2];
        let negotiated = session::negotiate(&self.chan, &mut buf, wants)?;
        if negotiated.has(crate::abi::init_flags::PASSTHROUGH) {
            let dup =
                rustix::io::fcntl_dupfd_cloexec(&self.chan, 0).map_err(|e| Error::Device {
                    what: "dup",
                    source: e.into(),
                })?;
            let _ = self.fs.dev.set(dup);
        }
        let stats = Arc::new(WorkerStats::default());
        let mut chans = Vec::with_capacity(self.cfg.threads);
        for _ in 1..self.cfg.threads {
            chans.push(self.chan.clone_channel()?);
        }
        let first = std::mem::replace(&mut self.chan, Channel::open()?);
        chans.insert(0, first);
        let mut threads = Vec::new();
        for (i, chan) in chans.into_iter().enumerate() {
            let engine = match self.cfg.engine.build() {
                Ok(e) => e,
                Err(e) => {
                    tracing::info!("engine {}: {e}; using sync", self.cfg.engine.name());
                    EngineKind::Sync
                        .build()
                        .map_err(|e| Error::Init(e.to_string()))?
                }
            };
            let worker = Worker::new(
                chan,
                self.fs.clone(),
                engine,
                negotiated.max_write as usize,
                stats.clone(),
            );
            let t = std::thread::Builder::new()
                .name(format!("vecio-fuse-{i}"))
                .spawn(move || worker.run())
                .map_err(|e| Error::Device {
                    what: "spawning a worker",
                    source: e,
                })?;
            threads.push(t);
        }
        let mut first_err = None;
        for t in threads {
            match t.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert(Error::Init("a worker panicked".into()));
                }
            }
        }
        self.mount.forget();
        match first_err {
            Some(e) => Err(e),
            None => Ok(Summary { negotiated, stats }),
        }
    }
}
