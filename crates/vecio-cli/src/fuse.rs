//! `vecio fuse`: mounts a passthrough view of a directory and serves it in the foreground
//! until it is unmounted (`fusermount3 -u`, `umount`) or signalled (SIGINT/SIGTERM unmount
//! it cleanly). Once mounted, one line goes to standard output (`mounted SOURCE on MOUNTPOINT`)
//! after the pid file is written: either tells a script the mount is ready.
//!
//! libfuse's common options are understood: `-f` (vecio always stays in the foreground),
//! `-d` (debug log), `-s` (one worker thread) and `-o` lists.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use vecio_fuse::{Config, MountOptions, Server};

/// The `-o` options `vecio fuse` understands, as `--help` lists them.
const MOUNT_OPTIONS_HELP: &str = "Mount options, comma-separated (repeatable):
  allow_other            let other users in (root, or user_allow_other in /etc/fuse.conf)
  allow_root             let root in besides the user who mounted (the same rule)
  default_permissions    the kernel checks permissions from the file modes
  ro, rw                 read-only / read-write mount
  direct_io              every open bypasses the page cache
  writeback_cache        the kernel caches writes (no_writeback_cache: off)
  nosuid, suid           ignore / honour set-user-id bits
  nodev, dev             ignore / honour device files
  noexec, exec           forbid / allow running programs
  noatime, atime, relatime, strictatime, nodiratime, lazytime   access-time updates
  sync, async, dirsync   synchronous writes / directory changes
  fsname=NAME            the source column of the mount table
  subtype=NAME           the type shown as fuse.NAME (subtype=: plain fuse)
  timeout_s=N            the kernel aborts the connection when a request waits N s
  auto_unmount           unmount when the server ends, killed too (through fusermount3)";

/// Checks one `-o` list while the command line is parsed, so a typo is a usage error.
fn parse_mount_options(list: &str) -> Result<String, String> {
    MountOptions::default()
        .parse_into(list)
        .map(|()| list.to_string())
        .map_err(|e| e.to_string())
}

/// Options of `vecio fuse`.
#[derive(Args, Debug, Clone)]
pub struct FuseArgs {
    /// Directory to serve.
    pub source: PathBuf,
    /// Where to mount it.
    pub mountpoint: PathBuf,
    #[arg(short = 'o', value_name = "OPTIONS", value_parser = parse_mount_options,
          help = "Mount options, comma-separated (repeatable); see --help",
          long_help = MOUNT_OPTIONS_HELP)]
    pub options: Vec<String>,
    /// Stay in the foreground (libfuse's -f): vecio fuse always does; accepted for scripts.
    #[arg(short = 'f')]
    pub foreground: bool,
    /// Debug log on standard error (libfuse's -d; the same as VECIO_LOG=debug).
    #[arg(short = 'd')]
    pub debug: bool,
    /// One worker thread (libfuse's -s): the same as --threads 1.
    #[arg(short = 's', conflicts_with = "threads")]
    pub single_thread: bool,
    /// Worker threads, each with its own /dev/fuse clone and ring (default: one per CPU).
    #[arg(long, value_parser = vecio_host::args::parse_count)]
    pub threads: Option<usize>,
    /// Pages per FUSE request (1 = one request per 4 KiB segment, the behaviour before
    /// scatter-gather packing; default: the kernel's limit, 256 = 1 MiB).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_pages: Option<u16>,
    /// Engine each worker submits READ and WRITE with: uring, sync, serial.
    #[arg(long, default_value = "uring")]
    pub engine: vecio::EngineKind,
    /// Hand every file opened without O_DIRECT to the kernel (FUSE_PASSTHROUGH): their reads
    /// and writes go straight to the backing file. Without it, files opened read-only are
    /// handed over while no open of theirs is served (writes stay with vecio).
    #[arg(long, conflicts_with = "no_passthrough")]
    pub passthrough: bool,
    /// Serve every read and write (no FUSE_PASSTHROUGH, not even for read-only opens).
    #[arg(long)]
    pub no_passthrough: bool,
    /// With --passthrough, hand O_DIRECT opens to the kernel too (their buffers must then be
    /// aligned as on the backing file system; without it vecio serves any alignment).
    #[arg(long, requires = "passthrough")]
    pub passthrough_direct: bool,
    /// Take requests through FUSE over io_uring (one ring per CPU) instead of /dev/fuse reads:
    /// the default where the fuse module's enable_uring parameter is on. With --uring, root
    /// turns the parameter on (and says so); otherwise vecio serves /dev/fuse and says why.
    #[arg(long, conflicts_with = "no_uring")]
    pub uring: bool,
    /// Serve /dev/fuse, not FUSE over io_uring (file locks are then taken in the backing file
    /// system, where the host sees them; over io_uring the kernel keeps them).
    #[arg(long)]
    pub no_uring: bool,
    /// Seconds the kernel may cache names and attributes (0: none).
    #[arg(long, default_value = "1", value_parser = parse_timeout)]
    pub timeout: std::time::Duration,
    /// Write the process id to this file once mounted.
    #[arg(long)]
    pub pid_file: Option<PathBuf>,
    /// Go to the background once mounted (as libfuse servers without -f): the parent prints
    /// the `mounted` line and exits 0, the server serves on in a session of its own.
    #[arg(long)]
    pub fork: bool,
    /// With --fork, append the server's log (standard error) to this file.
    #[arg(long, requires = "fork", value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Print nothing once mounted (mount(8)'s helper stays quiet).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Confinement of the serving threads: namespace (new mount, IPC, UTS and network
    /// namespaces, a pivot into SOURCE, capabilities dropped, no_new_privs; where the kernel
    /// allows) or none.
    #[arg(
        long,
        default_value = "namespace",
        value_name = "namespace|none",
        env = "VECIO_FUSE_SANDBOX"
    )]
    pub sandbox: vecio_fuse::Sandbox,
    /// What a system call off the serving threads' allow-list gets: kill (the process), trap
    /// (SIGSYS), log (allowed, named in the kernel's audit log) or none (no filter).
    #[arg(
        long,
        default_value = "kill",
        value_name = "kill|trap|log|none",
        env = "VECIO_FUSE_SECCOMP"
    )]
    pub seccomp: vecio_fuse::Seccomp,
}

/// Parses a number of seconds, zero allowed.
fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .and_then(|f| std::time::Duration::try_from_secs_f64(f).ok())
        .ok_or_else(|| format!("{s:?} is not a number of seconds"))
}

/// The mount at `path`, if something is mounted there: its source and type, from
/// /proc/self/mountinfo.
fn mounted_at(path: &std::path::Path) -> Option<String> {
    // A dead FUSE mount (its server killed) fails every lookup with ENOTCONN: fall back to
    // the absolute path so it is still found.
    let path = std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let fields: Vec<&str> = l.split(' ').collect();
        let point = vecio_host::system::unescape(fields.get(4)?);
        if std::path::Path::new(&point) != path {
            return None;
        }
        // After the optional fields' "-" separator: type, source.
        let dash = fields.iter().position(|f| *f == "-")?;
        Some(format!(
            "{} ({})",
            fields.get(dash + 2).unwrap_or(&"?"),
            fields.get(dash + 1).unwrap_or(&"?")
        ))
    })
}

/// Runs `vecio fuse`.
pub fn run(mut a: FuseArgs) -> Result<()> {
    // A forked server leaves this directory: its pid file is named from the root.
    a.pid_file = a.pid_file.map(|p| std::path::absolute(&p).unwrap_or(p));
    if let Some(what) = mounted_at(&a.mountpoint) {
        // A FUSE mount whose server was killed answers every lookup with ENOTCONN, or, while
        // the kernel tears down a connection that served FUSE over io_uring, ECONNABORTED.
        let gone = std::fs::metadata(&a.mountpoint)
            .is_err_and(|e| matches!(e.raw_os_error(), Some(libc::ENOTCONN | libc::ECONNABORTED)));
        let (whose, hint) = match gone {
            true => (
                ", whose server is gone",
                "; -o auto_unmount takes a mount away with its server",
            ),
            false => ("", ""),
        };
        anyhow::bail!(
            "{}: already a mount point of {what}{whose}; unmount it first (fusermount3 -u {}){hint}",
            a.mountpoint.display(),
            a.mountpoint.display()
        );
    }
    let cfg = config(&a)?;
    tracing::debug!(
        source = %a.source.display(),
        mountpoint = %a.mountpoint.display(),
        threads = cfg.threads,
        max_pages = cfg.max_pages,
        engine = cfg.engine.name(),
        uring = cfg.uring,
        passthrough = a.passthrough,
        "mounting"
    );
    let server = Server::mount(&a.source, &a.mountpoint, cfg)?;
    if a.fork {
        // The child says on this pipe when it serves; the parent announces the mount then.
        let (from_child, to_parent) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).context("pipe(2)")?;
        // No thread runs yet (the signal thread comes in `serve`).
        if let crate::daemon::Forked::Parent(pid) =
            crate::daemon::fork_detached(a.log.as_deref(), true)?
        {
            drop(to_parent);
            let mut byte = [0u8; 1];
            if !matches!(rustix::io::read(&from_child, &mut byte), Ok(1)) {
                bail!(
                    "the server (pid {pid}) ended before it served{}",
                    a.log
                        .as_ref()
                        .map(|l| format!("; see {}", l.display()))
                        .unwrap_or_default()
                );
            }
            announce(&a, pid)?;
            // The mount and its connection are the child's: no destructor may unmount it.
            std::process::exit(0);
        }
        drop(from_child);
        return serve(server, &a, Some(to_parent));
    }
    serve(server, &a, None)
}

/// The pid file (with `pid`) and the `mounted ...` line: the mount is ready.
fn announce(a: &FuseArgs, pid: u32) -> Result<()> {
    if let Some(p) = &a.pid_file {
        crate::daemon::write_pid_file(p, pid)?;
    }
    if a.quiet {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "mounted {} on {}",
        a.source.display(),
        a.mountpoint.display()
    )?;
    out.flush()?;
    Ok(())
}

/// The server's configuration from the command line.
fn config(a: &FuseArgs) -> Result<Config> {
    let mut mount = MountOptions::default();
    for o in &a.options {
        mount.parse_into(o)?;
    }
    let timeout = a.timeout;
    let mut cfg = Config {
        mount,
        engine: a.engine,
        ..Config::default()
    };
    cfg.fs.timeouts = vecio_fuse::Timeouts {
        entry: timeout,
        attr: timeout,
    };
    cfg.fs.passthrough = a.passthrough;
    cfg.fs.passthrough_reads = !a.passthrough && !a.no_passthrough;
    cfg.fs.passthrough_direct = a.passthrough_direct;
    // The kernel does not time out requests it handed to FUSE-over-io_uring queues (a stopped
    // server's callers wait on), so -o timeout_s= keeps /dev/fuse unless --uring is asked for.
    let timed = cfg.mount.request_timeout.is_some() && !a.uring;
    if timed && !a.no_uring && !a.quiet {
        eprintln!(
            "vecio: -o timeout_s: serving /dev/fuse (requests on FUSE over io_uring are not timed)"
        );
    }
    cfg.uring = !a.no_uring && !timed && uring_available(a.uring, a.quiet);
    cfg.sandbox = a.sandbox;
    cfg.seccomp = a.seccomp;
    if let Some(t) = a.threads {
        cfg.threads = t;
    }
    if a.single_thread {
        cfg.threads = 1;
    }
    if let Some(p) = a.max_pages {
        cfg.max_pages = p;
    }
    Ok(cfg)
}

/// Whether FUSE over io_uring can be asked for, from the fuse module's `enable_uring`
/// parameter (`vecio_fuse::URING_KNOB`). `asked`: `--uring` was given (a refusal is then said
/// even under `-q`). The mount says which transport it serves once it serves.
fn uring_available(asked: bool, quiet: bool) -> bool {
    let (granted, said) = uring_policy(std::path::Path::new(vecio_fuse::URING_KNOB), asked);
    if let Some(said) = said {
        if asked || !quiet {
            eprintln!("vecio: {said}");
        }
    }
    granted
}

/// The transport decision behind [`uring_available`], on the parameter's file `knob`: on, it
/// is used; off, it is used only when asked for (`--uring`), which turns it on where the
/// caller may (root) — a server never changes a module parameter of the whole machine
/// unasked. Returns whether io_uring may be asked of the kernel, and what to tell the user.
fn uring_policy(knob: &std::path::Path, asked: bool) -> (bool, Option<String>) {
    let shown = knob.display();
    match std::fs::read_to_string(knob) {
        Err(_) => (
            false,
            Some(format!(
                "this kernel has no FUSE over io_uring ({shown}); serving /dev/fuse"
            )),
        ),
        Ok(v) if v.trim() == "Y" => (true, None),
        Ok(_) if !asked => (
            false,
            Some(format!(
                "FUSE over io_uring is off in this kernel ({shown} = N; --uring as root turns it on); serving /dev/fuse"
            )),
        ),
        Ok(_) => match std::fs::write(knob, "Y") {
            Ok(()) => (
                true,
                Some(format!("turned on FUSE over io_uring ({shown} = Y)")),
            ),
            Err(e) => (
                false,
                Some(format!("cannot turn on {shown} ({e}); serving /dev/fuse")),
            ),
        },
    }
}

/// Serves a mounted `server` until it is unmounted or signalled: the pid file, the
/// `mounted ...` line (or, forked, a byte to the waiting parent on `to_parent`) once it
/// serves, and the request counts at the end.
fn serve(mut server: Server, a: &FuseArgs, to_parent: Option<OwnedFd>) -> Result<()> {
    let unmounter = server.unmounter();
    let held = server.held();
    crate::signals::on_usr1(move || held.report())?;
    let served = Arc::new(AtomicBool::new(false));
    let stop = TwoStepStop {
        unmounter,
        mountpoint: a.mountpoint.clone(),
        pid_file: a.pid_file.clone(),
        quiet: a.quiet,
        served: served.clone(),
        signals: AtomicUsize::new(0),
    };
    crate::signals::on_stop(move |sig| stop.signalled(sig))?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    server.on_ready(move |serving| {
        let _ = ready_tx.send(*serving);
    });
    // Served from a thread of its own: the sandbox confines the serving threads, and this one
    // stays outside to announce the mount and remove the pid file by their paths.
    let serving = std::thread::Builder::new()
        .name("vecio-fuse".into())
        .spawn(move || server.run())
        .context("starting the server thread")?;
    // Err: the server ended before it served (its error comes from the join below).
    if let Ok(serving) = ready_rx.recv() {
        if !a.quiet {
            eprintln!("vecio: serving {serving}");
        }
        match to_parent {
            Some(pipe) => {
                let _ = rustix::io::write(&pipe, b"r");
            }
            None => announce(a, std::process::id())?,
        }
    }
    let result = serving
        .join()
        .unwrap_or_else(|_| Err(vecio_fuse::Error::Init("the server thread panicked".into())));
    served.store(true, Ordering::SeqCst);
    if let Some(p) = &a.pid_file {
        let _ = std::fs::remove_file(p);
    }
    let summary = result?;
    tracing::info!(
        max_pages = summary.negotiated.max_pages,
        requests = summary
            .stats
            .requests
            .load(std::sync::atomic::Ordering::Relaxed),
        through_io_uring = summary
            .stats
            .ring_requests
            .load(std::sync::atomic::Ordering::Relaxed),
        "unmounted; served {}",
        summary.stats.requests_line()
    );
    Ok(())
}

/// SIGINT or SIGTERM: the first detaches the mount (lazily, as `fusermount3 -u -z`), and the
/// server goes on serving what is still open under it until the last of it is closed, saying
/// so when that takes a while; the next one stops the server at once, and the kernel then
/// fails what is still open there (`ENOTCONN`; `ECONNABORTED` while it ends the connection:
/// the FUSE device's last descriptor closes with the process).
struct TwoStepStop {
    unmounter: vecio_fuse::Unmounter,
    mountpoint: PathBuf,
    pid_file: Option<PathBuf>,
    quiet: bool,
    /// Set once the server has returned: nothing left to wait for.
    served: Arc<AtomicBool>,
    signals: AtomicUsize,
}

/// How long the first signal's detach may take to end the server before it says why not.
const DETACH_GRACE: Duration = Duration::from_millis(500);

impl TwoStepStop {
    fn signalled(&self, sig: i32) {
        if self.signals.fetch_add(1, Ordering::SeqCst) > 0 {
            eprintln!(
                "vecio: stopping now; what is still open under {} fails from here on",
                self.mountpoint.display()
            );
            if let Some(p) = &self.pid_file {
                let _ = std::fs::remove_file(p);
            }
            std::process::exit(0);
        }
        tracing::info!(signal = sig, "unmounting");
        if let Err(e) = self.unmounter.unmount() {
            eprintln!("vecio: unmount: {e}");
            return;
        }
        let start = std::time::Instant::now();
        while start.elapsed() < DETACH_GRACE {
            if self.served.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if !self.quiet {
            eprintln!(
                "vecio: {} is detached; files and directories still open under it are served \
                 until they are closed (signal again to stop now)",
                self.mountpoint.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::uring_policy;

    fn knob(value: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("enable_uring");
        std::fs::write(&path, value).unwrap();
        (dir, path)
    }

    #[test]
    fn an_enabled_kernel_serves_io_uring_without_a_word() {
        let (_dir, path) = knob("Y\n");
        assert_eq!(uring_policy(&path, false), (true, None));
        assert_eq!(uring_policy(&path, true), (true, None));
    }

    #[test]
    fn the_default_leaves_a_disabled_parameter_alone_and_says_so() {
        let (_dir, path) = knob("N\n");
        let (granted, said) = uring_policy(&path, false);
        assert!(!granted);
        assert!(said.unwrap().contains("--uring as root turns it on"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "N\n");
    }

    #[test]
    fn asking_turns_a_disabled_parameter_on() {
        let (_dir, path) = knob("N\n");
        let (granted, said) = uring_policy(&path, true);
        assert!(granted);
        assert!(said.unwrap().starts_with("turned on"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "Y");
    }

    #[test]
    fn a_kernel_without_the_parameter_serves_dev_fuse() {
        let dir = tempfile::tempdir().unwrap();
        let (granted, said) = uring_policy(&dir.path().join("missing"), true);
        assert!(!granted);
        assert!(said.unwrap().contains("has no FUSE over io_uring"));
    }
}
