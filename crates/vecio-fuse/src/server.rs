//! The server: mount, negotiate, start one worker per thread (each with its own `/dev/fuse`
//! clone and ring), serve until unmounted, unmount on request.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use vecio::EngineKind;

use crate::error::{Error, Result};
use crate::fs::{Fs, FsConfig};
use crate::mount::session::{self, InitWants, Negotiated};
use crate::mount::{Mount, MountOptions};
use crate::stats::WorkerStats;
use crate::transport::dev::Channel;
use crate::transport::worker::Worker;

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
    /// Ask for FUSE over io_uring (the fuse module's `enable_uring` must be on); requests then
    /// arrive through one ring per CPU instead of `/dev/fuse` reads.
    pub uring: bool,
    /// How the serving threads are confined (`crate::sandbox`).
    pub sandbox: crate::sandbox::Sandbox,
    /// What a system call off the serving threads' allow-list gets (`crate::sandbox::seccomp`).
    pub seccomp: crate::sandbox::seccomp::Seccomp,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            fs: FsConfig::default(),
            mount: MountOptions::default(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_pages: session::max_pages_limit(),
            engine: EngineKind::Uring,
            uring: false,
            sandbox: Default::default(),
            seccomp: Default::default(),
        }
    }
}

/// What [`Server::on_ready`] keeps until the server serves.
type OnReady = Box<dyn FnOnce(&Serving) + Send>;

/// A mounted, not yet serving, file server.
pub struct Server {
    fs: Arc<Fs>,
    chan: Channel,
    mount: Mount,
    cfg: Config,
    on_ready: Option<OnReady>,
    stats: Arc<WorkerStats>,
}

/// Unmounts a running server from another thread (a signal handler's thread).
#[derive(Clone, Debug)]
pub struct Unmounter {
    mountpoint: PathBuf,
    via: crate::mount::Via,
}

impl Unmounter {
    /// Detaches the mount; the server's workers return once the kernel ends the connection.
    pub fn unmount(&self) -> std::io::Result<()> {
        crate::mount::unmount(&self.mountpoint, self.via)
    }
}

/// How a server that is ready serves (given to [`Server::on_ready`]'s callback).
#[derive(Copy, Clone, Debug)]
pub struct Serving {
    /// Rings of FUSE over io_uring serving requests (0: `/dev/fuse` alone).
    pub uring_queues: usize,
    /// `/dev/fuse` worker threads (with rings, they serve forgets and interrupts).
    pub threads: usize,
    /// The kernel granted `FUSE_PASSTHROUGH`.
    pub passthrough: bool,
    /// How the serving threads are confined.
    pub confinement: Confinement,
}

/// How the serving threads are confined (`--sandbox`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Confinement {
    /// Not at all (`--sandbox none`).
    None,
    /// The system-call filter alone: the namespaces need root (a private clone of the source).
    Filter,
    /// Their own namespaces, pivoted into the source, and the system-call filter.
    Namespaces,
}

impl std::fmt::Display for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.uring_queues {
            0 => write!(f, "/dev/fuse ({} threads)", self.threads)?,
            n => write!(f, "FUSE over io_uring ({n} queues)")?,
        }
        if self.passthrough {
            write!(f, ", passthrough")?;
        }
        if self.confinement == Confinement::Filter {
            write!(f, ", no namespace sandbox (it needs root; system calls filtered)")?;
        }
        Ok(())
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

/// True when this thread may register backing files with the kernel (`CAP_SYS_ADMIN` in its
/// effective set), which `FUSE_PASSTHROUGH` needs.
fn may_pass_through() -> bool {
    rustix::thread::capabilities(None)
        .is_ok_and(|c| c.effective.contains(rustix::thread::CapabilitySet::SYS_ADMIN))
}

impl Server {
    /// Opens `source` and mounts it on `mountpoint`. Passthrough (`FsConfig::passthrough`,
    /// `passthrough_reads`) is not asked for without `CAP_SYS_ADMIN`.
    pub fn mount(source: &Path, mountpoint: &Path, mut cfg: Config) -> Result<Server> {
        if cfg.threads == 0 {
            return Err(Error::Option("--threads must be at least 1".into()));
        }
        cfg.fs.read_only |= cfg.mount.read_only;
        cfg.mount.read_only |= cfg.fs.read_only;
        cfg.fs.direct_io |= cfg.mount.direct_io;
        cfg.fs.writeback_cache |= cfg.mount.writeback_cache;
        cfg.fs.noatime |= cfg.mount.flags.contains(rustix::mount::MountFlags::NOATIME);
        cfg.fs.strictatime |= cfg.mount.flags.contains(rustix::mount::MountFlags::STRICTATIME);
        if cfg.mount.allow_root {
            cfg.fs.only_owner_and_root = Some(rustix::process::getuid().as_raw());
        }
        if (cfg.fs.passthrough || cfg.fs.passthrough_reads) && !may_pass_through() {
            // FUSE_DEV_IOC_BACKING_OPEN wants CAP_SYS_ADMIN: without it every open would
            // open a second descriptor and fail the registration before being served.
            if cfg.fs.passthrough {
                tracing::warn!(
                    "passthrough needs CAP_SYS_ADMIN (FUSE_DEV_IOC_BACKING_OPEN); serving every read and write"
                );
            }
            cfg.fs.passthrough = false;
            cfg.fs.passthrough_reads = false;
            cfg.fs.passthrough_direct = false;
        }
        let fs = Fs::new(source, cfg.fs.clone())?;
        let private = fs.tree.lock().unwrap_or_else(|p| p.into_inner()).is_some();
        if let Some(point) = (!private).then(|| inside(mountpoint, source)).flatten() {
            // A private clone would show the directory beneath the mount; without one, the
            // lookup of its name is answered with it (`Covered`), opened before mounting.
            let covered = covered(&point).map_err(|e| Error::Mount {
                mountpoint: mountpoint.to_path_buf(),
                reason: format!("inside the source: {e}"),
            })?;
            let _ = fs.inodes.covered.set(covered);
        }
        let (chan, mount) = Mount::attach(source, mountpoint, &cfg.mount)?;
        Ok(Server {
            fs: Arc::new(fs),
            chan,
            mount,
            cfg,
            on_ready: None,
            stats: Arc::default(),
        })
    }

    /// A handle that unmounts this server from any thread.
    pub fn unmounter(&self) -> Unmounter {
        Unmounter {
            mountpoint: self.mount.mountpoint().to_path_buf(),
            via: self.mount.via(),
        }
    }

    /// Reads what the server holds (nodes, handles, open files, ring slots) and the requests
    /// it served, from any thread, while it runs.
    pub fn held(&self) -> crate::HeldCounter {
        crate::HeldCounter(self.fs.clone(), self.stats.clone())
    }

    /// Answers `FUSE_INIT` and keeps a descriptor of the connection (passthrough registration,
    /// notifications and the io_uring commands name the connection through it).
    fn negotiate(&self) -> Result<(Negotiated, Arc<std::os::fd::OwnedFd>)> {
        let wants = InitWants {
            max_pages: self.cfg.max_pages,
            passthrough: self.cfg.fs.passthrough,
            passthrough_reads: self.cfg.fs.passthrough_reads,
            uring: self.cfg.uring,
            posix_acl: self.cfg.mount.default_permissions && self.cfg.mount.acl,
            writeback_cache: self.cfg.fs.writeback_cache,
            export: self.fs.inodes.exports(),
            request_timeout: self.cfg.mount.request_timeout,
            idmap: self.cfg.mount.default_permissions,
        };
        let mut buf = vec![0u8; crate::abi::MIN_READ_BUFFER * 2];
        let negotiated = session::negotiate(&self.chan, &mut buf, wants)?;
        let dup = |fd: &dyn std::os::fd::AsFd| {
            rustix::io::fcntl_dupfd_cloexec(fd, 0).map_err(|e| Error::Device {
                what: "dup",
                source: e.into(),
            })
        };
        let dev = Arc::new(dup(&self.chan)?);
        self.fs.notify.connect(dev.clone());
        let _ = self.fs.granted.set(negotiated.flags);
        if negotiated.has(crate::abi::InitFlags::PASSTHROUGH) {
            if let Ok(d) = dup(&*dev) {
                let _ = self.fs.dev.set(Arc::new(d));
            }
        }
        Ok((negotiated, dev))
    }

    /// Enters the sandbox on this thread and installs its system-call filter (the workers
    /// started after inherit both); `--sandbox none` does neither.
    fn confine(&self) -> Result<Confinement> {
        if self.cfg.sandbox != crate::sandbox::Sandbox::Namespace {
            return Ok(Confinement::None);
        }
        let entered = self.enter_sandbox()?;
        crate::sandbox::seccomp::install(self.cfg.seccomp).map_err(|e| Error::Device {
            what: "installing the system-call filter",
            source: e,
        })?;
        Ok(match entered {
            true => Confinement::Namespaces,
            false => Confinement::Filter,
        })
    }

    /// Enters the namespaces; false where they could not be made (not root).
    fn enter_sandbox(&self) -> Result<bool> {
        let tree = self
            .fs
            .tree
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        crate::sandbox::enter(tree, self.fs.source()).map_err(|e| Error::Device {
            what: "entering the sandbox",
            source: e,
        })
    }

    /// Calls `ready` once the server serves: `FUSE_INIT` answered, the sandbox entered, the
    /// workers and rings started. Whatever tells others the mount is ready (a pid file, the
    /// parent of a forked server) waits for it: while the serving thread enters its sandbox
    /// it holds a copy of the mount table, and an unmount at that moment fails as busy.
    /// `ready` runs on the serving thread, inside the sandbox: it should only signal.
    /// It is told how the server serves ([`Serving`]: io_uring or `/dev/fuse`).
    pub fn on_ready(&mut self, ready: impl FnOnce(&Serving) + Send + 'static) {
        self.on_ready = Some(Box::new(ready));
    }

    /// Serves until the file system is unmounted; then returns what was agreed and counted.
    pub fn run(self) -> Result<Summary> {
        let (negotiated, dev) = self.negotiate()?;
        let mut chans = Vec::with_capacity(self.cfg.threads);
        for _ in 1..self.cfg.threads {
            chans.push(self.chan.clone_channel()?);
        }
        // Counted, and /dev/fuse opened for each worker, before the sandbox hides /sys and /dev.
        let queues = crate::transport::uring::queue_count();
        let confinement = self.confine()?;
        let Server {
            chan,
            fs,
            mut mount,
            cfg,
            on_ready,
            stats,
        } = self;
        chans.insert(0, chan);
        let mut workers = Vec::new();
        for (i, chan) in chans.into_iter().enumerate() {
            let worker = Worker::new(
                chan,
                fs.clone(),
                build_engine(cfg.engine)?,
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
            workers.push(t);
        }
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let rings = if negotiated.has(crate::abi::InitFlags::OVER_IO_URING) {
            start_rings(&dev, &fs, cfg.engine, &negotiated, &stats, &stop, queues)?
        } else {
            if cfg.uring {
                tracing::warn!(
                    "FUSE over io_uring not granted (is /sys/module/fuse/parameters/enable_uring Y?); serving /dev/fuse"
                );
            }
            Vec::new()
        };
        if let Some(ready) = on_ready {
            ready(&Serving {
                uring_queues: rings.len(),
                threads: workers.len(),
                passthrough: negotiated.has(crate::abi::InitFlags::PASSTHROUGH),
                confinement,
            });
        }
        // The /dev/fuse workers end when the connection does; then the rings are told to stop
        // (their pending commands are cancelled by the kernel, or they time out and look).
        let mut first_err = join(workers);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        fs.locks.shut_down();
        if let Some(e) = join(rings) {
            first_err.get_or_insert(e);
        }
        mount.forget();
        match first_err {
            Some(e) => Err(e),
            None => Ok(Summary { negotiated, stats }),
        }
    }
}

/// The directory `point` (resolved, not mounted yet), its parent's identity and its name.
fn covered(point: &Path) -> std::io::Result<crate::fs::inode::Covered> {
    use std::os::unix::ffi::OsStrExt;
    let (Some(parent), Some(name)) = (point.parent(), point.file_name()) else {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    };
    let flags = rustix::fs::OFlags::PATH
        | rustix::fs::OFlags::DIRECTORY
        | rustix::fs::OFlags::NOFOLLOW
        | rustix::fs::OFlags::CLOEXEC;
    let dir = rustix::fs::open(point, flags, rustix::fs::Mode::empty())?;
    let st = rustix::fs::stat(parent)?;
    Ok(crate::fs::inode::Covered {
        parent: (st.st_dev, st.st_ino),
        name: std::ffi::CString::new(name.as_bytes())?,
        dir,
    })
}

/// `inner` resolved, when it is a directory below `outer` (`None` where either cannot be
/// resolved).
fn inside(inner: &Path, outer: &Path) -> Option<PathBuf> {
    let (i, o) = (std::fs::canonicalize(inner).ok()?, std::fs::canonicalize(outer).ok()?);
    (i != o && i.starts_with(&o)).then_some(i)
}

fn join(threads: Vec<std::thread::JoinHandle<Result<()>>>) -> Option<Error> {
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
    first_err
}

fn build_engine(kind: EngineKind) -> Result<Box<dyn vecio::Engine>> {
    match kind.build() {
        Ok(e) => Ok(e),
        Err(e) => {
            tracing::info!("engine {}: {e}; using sync", kind.name());
            EngineKind::Sync
                .build()
                .map_err(|e| Error::Init(e.to_string()))
        }
    }
}

/// One ring thread per possible CPU, pinned to it.
fn start_rings(
    dev: &Arc<std::os::fd::OwnedFd>,
    fs: &Arc<Fs>,
    engine: EngineKind,
    negotiated: &Negotiated,
    stats: &Arc<WorkerStats>,
    stop: &Arc<std::sync::atomic::AtomicBool>,
    queues: usize,
) -> Result<Vec<std::thread::JoinHandle<Result<()>>>> {
    let payload = (negotiated.max_write as usize).max(crate::abi::MIN_READ_BUFFER);
    let mut threads = Vec::new();
    for qid in 0..queues {
        let (dev, fs, stats, stop) = (dev.clone(), fs.clone(), stats.clone(), stop.clone());
        let engine = build_engine(engine)?;
        // The queue (raw iovec pointers into its own buffers) is built on its thread.
        let t = std::thread::Builder::new()
            .name(format!("vecio-fuse-ring-{qid}"))
            .spawn(move || {
                crate::transport::uring::pin_to(qid);
                crate::fs::creds::serving_thread();
                crate::transport::uring::RingQueue::new(
                    qid as u16, dev, fs, engine, payload, stats,
                )?
                .run(stop)
            })
            .map_err(|e| Error::Device {
                what: "spawning a ring thread",
                source: e,
            })?;
        threads.push(t);
    }
    Ok(threads)
}
