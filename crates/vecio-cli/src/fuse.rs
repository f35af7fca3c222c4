//! `vecio fuse`: mounts a passthrough view of a directory and serves it in the foreground
//! until it is unmounted (`fusermount3 -u`, `umount`) or signalled (SIGINT/SIGTERM unmount
//! it cleanly). Once mounted, one line goes to standard output (`mounted SOURCE on MOUNTPOINT`)
//! after the pid file is written: either tells a script the mount is ready.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use vecio_fuse::{Config, MountOptions, Server};

/// Options of `vecio fuse`.
#[derive(Args, Debug, Clone)]
pub struct FuseArgs {
    /// Directory to serve.
    pub source: PathBuf,
    /// Where to mount it.
    pub mountpoint: PathBuf,
    /// Mount options, comma-separated: allow_other, default_permissions, ro, direct_io,
    /// writeback_cache, nosuid, nodev, noexec, noatime, fsname=NAME, subtype=NAME (repeatable).
    #[arg(short = 'o', value_name = "OPTIONS")]
    pub options: Vec<String>,
    /// Worker threads, each with its own /dev/fuse clone and ring (default: one per CPU).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Pages per FUSE request (1 = one request per 4 KiB segment, the behaviour before
    /// scatter-gather packing; default: the kernel's limit, 256 = 1 MiB).
    #[arg(long)]
    pub max_pages: Option<u16>,
    /// Engine each worker submits READ and WRITE with: uring, sync, serial.
    #[arg(long, default_value = "uring")]
    pub engine: vecio::EngineKind,
    /// Hand files opened without O_DIRECT to the kernel (FUSE_PASSTHROUGH): their reads and
    /// writes go straight to the backing file.
    #[arg(long)]
    pub passthrough: bool,
    /// With --passthrough, hand O_DIRECT opens to the kernel too (their buffers must then be
    /// aligned as on the backing file system; without it vecio serves any alignment).
    #[arg(long, requires = "passthrough")]
    pub passthrough_direct: bool,
    /// Take requests through FUSE over io_uring (one ring per CPU) instead of /dev/fuse reads.
    /// Needs the fuse module's enable_uring parameter; as root, vecio turns it on (and says so).
    #[arg(long)]
    pub uring: bool,
    /// Seconds the kernel may cache names and attributes.
    #[arg(long, default_value_t = 1.0)]
    pub timeout: f64,
    /// Write the process id to this file once mounted.
    #[arg(long)]
    pub pid_file: Option<PathBuf>,
}

/// Runs `vecio fuse`.
pub fn run(a: FuseArgs) -> Result<()> {
    let mut mount = MountOptions::default();
    for o in &a.options {
        mount.parse_into(o)?;
    }
    let timeout = std::time::Duration::try_from_secs_f64(a.timeout)
        .ok()
        .with_context(|| format!("--timeout {}: want a number of seconds", a.timeout))?;
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
    cfg.fs.passthrough_direct = a.passthrough_direct;
    cfg.uring = a.uring;
    if a.uring && !vecio_fuse::uring_enabled() {
        let knob = "/sys/module/fuse/parameters/enable_uring";
        match std::fs::write(knob, "Y") {
            Ok(()) => eprintln!("vecio: turned on FUSE over io_uring ({knob} = Y)"),
            Err(e) => eprintln!("vecio: cannot turn on {knob} ({e}); serving /dev/fuse"),
        }
    }
    if let Some(t) = a.threads {
        cfg.threads = t;
    }
    if let Some(p) = a.max_pages {
        anyhow::ensure!(p >= 1, "--max-pages must be at least 1");
        cfg.max_pages = p;
    }
    let server = Server::mount(&a.source, &a.mountpoint, cfg)?;
    let unmounter = server.unmounter();
    crate::signals::on_stop(move |sig| {
        tracing::info!(signal = sig, "unmounting");
        if let Err(e) = unmounter.unmount() {
            eprintln!("vecio: unmount: {e}");
        }
    })?;
    if let Some(p) = &a.pid_file {
        std::fs::write(p, format!("{}\n", std::process::id()))
            .with_context(|| format!("{}: cannot write the pid file", p.display()))?;
    }
    {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "mounted {} on {}",
            a.source.display(),
            a.mountpoint.display()
        )?;
        out.flush()?;
    }
    let result = server.run();
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
        "unmounted"
    );
    Ok(())
}
