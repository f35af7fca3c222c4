//! `vecio ublk FILE`: serves FILE as the block device /dev/ublkbN through the kernel's ublk
//! driver until SIGINT or SIGTERM (or `vecio ublk del N`), then deletes the device. Once the
//! device exists its path goes to standard output, which tells a script it is ready.
//! `vecio ublk list` shows the machine's ublk devices; `vecio ublk del N` stops and deletes
//! one; `--recover N` resumes device N after its server was killed (SIGKILL, a crash).
//! Option names follow rublk's loop target and `vecio nbd` (`--queues`, `--depth`, `--cache`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use vecio_ublk::{Cache, Device, Listed, Options};

use crate::cli::UsageError;
use vecio_host::args::parse_size;

/// Options of `vecio ublk`.
#[derive(Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true)]
pub struct UblkArgs {
    /// `list` or `del N`; without one, FILE is served.
    #[command(subcommand)]
    pub action: Option<UblkAction>,
    /// File or block device to serve as /dev/ublkbN.
    pub file: Option<PathBuf>,
    /// The file's format: raw only, its bytes being the disk (qemu-nbd's -f raw). Without it,
    /// a file that starts with a qcow2, QED, VMDK, VHD(X), VDI or LUKS signature is refused.
    #[arg(short = 'f', long, value_enum)]
    pub format: Option<crate::image_format::Format>,
    /// none: direct I/O (O_DIRECT) on FILE, no page cache (the default, the seed's design);
    /// writeback: buffered I/O.
    #[arg(long, default_value = "none")]
    pub cache: Cache,
    /// Hardware queues, each served by a thread with its own io_uring.
    #[arg(short = 'q', long, default_value_t = 1)]
    pub queues: u16,
    /// Requests in flight per queue.
    #[arg(short = 'd', long, default_value_t = 128)]
    pub depth: u16,
    /// Largest request (a multiple of 4 KiB): the device's max_sectors.
    #[arg(long, default_value = "512K", value_parser = parse_size)]
    pub io_size: u64,
    /// A read-only device; FILE is opened without write access.
    #[arg(short = 'r', long)]
    pub read_only: bool,
    /// With -r: serve FILE even while another process holds it under qemu's image locks.
    /// Without it, FILE is locked as qemu-nbd locks it, and an image a virtual machine is
    /// writing is refused.
    #[arg(long, requires = "read_only")]
    pub force_share: bool,
    /// Ask for device number N (/dev/ublkbN); the kernel picks one by default.
    #[arg(long, value_name = "N")]
    pub id: Option<u32>,
    /// Resume device N, whose server was killed, serving FILE again: requests the old server
    /// had taken are reissued, so no acknowledged write is lost.
    #[arg(long, value_name = "N")]
    pub recover: Option<u32>,
}

/// `vecio ublk`'s commands on devices.
#[derive(Subcommand, Debug, Clone)]
pub enum UblkAction {
    /// The ublk devices on this machine: number, state, server, queues, backing file.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Stop and delete device N (served, or left by a killed server).
    Del {
        /// The device number.
        n: u32,
    },
    /// ublksrv's and rublk's `add -t loop -f FILE`, which vecio spells `vecio ublk FILE`:
    /// refused with that hint rather than taken for a file named "add".
    #[command(hide = true)]
    Add {
        /// Whatever followed `add`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        rest: Vec<String>,
    },
}

/// Runs `vecio ublk`.
pub fn run(a: UblkArgs) -> Result<()> {
    match a.action {
        Some(UblkAction::List { json }) => list(json),
        Some(UblkAction::Del { n }) => {
            vecio_ublk::delete(n).with_context(|| format!("deleting /dev/ublkb{n}"))
        }
        Some(UblkAction::Add { .. }) => Err(UsageError(
            "there is no `vecio ublk add`: `vecio ublk FILE` serves FILE as /dev/ublkbN \
             (ublksrv's `ublk add -t loop -f FILE`)"
                .into(),
        )
        .into()),
        None => serve(a),
    }
}

fn serve(a: UblkArgs) -> Result<()> {
    let file = a
        .file
        .clone()
        .ok_or_else(|| UsageError("FILE, `list` or `del N` is required".into()))?;
    let io_size = u32::try_from(a.io_size)
        .map_err(|_| UsageError(format!("--io-size {} is too large", a.io_size)))?;
    let opts = Options {
        cache: a.cache,
        queues: a.queues,
        depth: a.depth,
        io_size,
        read_only: a.read_only,
        id: a.id,
        recover: a.recover,
        ..Options::new(file)
    };
    opts.check().map_err(|e| UsageError(e.to_string()))?;
    crate::image_format::check(&opts.file, a.format)?;
    let access = vecio_nbd::image_lock::Access::of(a.read_only, a.force_share);
    let _image_lock = vecio_nbd::image_lock::lock(&opts.file, access)?;
    // The device's number once it exists, for the signal thread; -1 before.
    let id = Arc::new(AtomicI64::new(-1));
    let for_signal = id.clone();
    crate::signals::on_stop(move |sig| match for_signal.load(Ordering::SeqCst) {
        n if n >= 0 => {
            if let Err(e) = vecio_ublk::stop(n as u32) {
                eprintln!("vecio: {e}");
            }
        }
        _ => std::process::exit(128 + sig),
    })?;
    vecio_ublk::serve(&opts, move |dev| {
        id.store(dev.id as i64, Ordering::SeqCst);
        announce(dev);
    })
    .with_context(|| format!("serving {} over ublk", opts.file.display()))
}

/// The ready line: the device's path, then what it is on standard error.
fn announce(dev: &Device) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", dev.path.display());
    let _ = out.flush();
    let g = &dev.geometry;
    eprintln!(
        "vecio: {} {}: {} bytes, {}-byte blocks, {} queue(s) of depth {}, features {}",
        if dev.recovered {
            "recovered"
        } else {
            "serving"
        },
        dev.path.display(),
        g.size,
        g.logical,
        dev.queues,
        dev.depth,
        vecio_ublk::feature_names(dev.flags).join(",")
    );
}

fn list(json: bool) -> Result<()> {
    if !std::path::Path::new(vecio_ublk::CONTROL).exists() {
        eprintln!("vecio: no ublk driver in this kernel (try `modprobe ublk_drv`): no devices");
    }
    let devices = vecio_ublk::list().context("listing ublk devices")?;
    if json {
        println!("{}", serde_json::to_string_pretty(&devices)?);
        return Ok(());
    }
    println!(
        "{:<4} {:<9} {:>8} {:>6} {:>5}  FILE",
        "DEV", "STATE", "PID", "QUEUES", "DEPTH"
    );
    for d in &devices {
        println!("{}", row(d));
    }
    Ok(())
}

fn row(d: &Listed) -> String {
    let file = d
        .file
        .as_ref()
        .map_or_else(|| "-".to_string(), |f| f.display().to_string());
    format!(
        "{:<4} {:<9} {:>8} {:>6} {:>5}  {file}",
        d.id, d.state, d.pid, d.queues, d.depth
    )
}
