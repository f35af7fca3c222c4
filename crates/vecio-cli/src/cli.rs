//! The command line: `vecio bench ...`, `vecio nbd ...`, `vecio fuse ...`, `vecio info ...`,
//! and the hidden `vecio man` and `vecio completions` that write its manual pages and shell
//! completions.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::size::{parse_count, parse_seconds, parse_size};

/// An error in what the user asked for, found after the command line was parsed: vecio exits
/// with status 2 for it, as for a parse error.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// vecio: the Linux vectored-I/O design in user space, and the measurements that prove it.
#[derive(Parser, Debug)]
#[command(
    name = "vecio",
    version,
    propagate_version = true,
    about = "Vectored I/O for user space: the vecio nbd and vecio fuse servers, \
             vecio bench and vecio info",
    long_about = "vecio brings the Linux kernel's vectored-I/O design to user space. \
                  `vecio nbd` serves a file or block device (or each file of a directory) over \
                  NBD (the loop device in user space); `vecio fuse` mounts a passthrough view of a directory over FUSE with \
                  large scatter-gather direct I/O; `vecio bench` re-measures the five source \
                  documents' results beside fio, qemu-nbd, nbdkit and libfuse; `vecio info` \
                  says what the kernel allows on a file or device."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// vecio's commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Re-measure the source documents' tables on this machine.
    #[command(subcommand)]
    Bench(Bench),
    /// Serve a file or block device, or each file of a directory, over NBD (the user-space
    /// loop device).
    Nbd(crate::nbd::NbdArgs),
    /// Mount a passthrough view of a directory over FUSE (large scatter-gather direct I/O).
    Fuse(crate::fuse::FuseArgs),
    /// Serve a file or block device as the block device /dev/ublkbN (the loop device through
    /// the kernel's ublk driver); `list` and `del N` manage the machine's ublk devices.
    Ublk(crate::ublk::UblkArgs),
    /// What vecio learns about a file, directory or block device: filesystem, direct-I/O
    /// alignment, which flags (O_DIRECT, RWF_NOWAIT, RWF_DSYNC, RWF_DONTCACHE) and io_uring work,
    /// page-cache residency, the block queue behind it.
    Info(crate::info::InfoArgs),
    /// Writes vecio's manual pages (vecio.1, vecio-nbd.1, ...) into a directory.
    #[command(hide = true)]
    Man(crate::docs::ManArgs),
    /// Prints a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(hide = true)]
    Completions(crate::docs::CompletionsArgs),
}

/// The experiments.
#[derive(Subcommand, Debug)]
pub enum Bench {
    /// readv/writev rework (2002): 32 KiB = 8 x 4 KiB O_DIRECT requests, serial vs batched.
    Writev(WritevArgs),
    /// preadv2 + RWF_NOWAIT (2015): cached reads served inline, the rest on a thread pool.
    Nowait(NowaitArgs),
    /// tokio::fs (spawn_blocking) against vecio-tokio: cached, O_DIRECT, 73/18/9 mix (seed 002).
    Tokio(TokioArgs),
    /// Expense of read_iter (2021): cost per call of a cached 4 KiB read, raw and through vecio.
    Callcost(CallcostArgs),
    /// Runs N calls of one callcost variant (what callgrind counts); not for direct use.
    #[command(hide = true)]
    CallcostWorker(CallcostWorkerArgs),
    /// Loop device with direct and async I/O (2015): one image over NBD, vecio nbd direct and
    /// buffered, qemu-nbd and nbdkit, driven by fio's nbd engine; then vecio nbd and qemu-nbd
    /// plain and over TLS, read by nbdcopy and a libnbd driver.
    Loop(LoopArgs),
    /// FUSE scatter-gather direct I/O (2012): 32 x 4 KiB O_DIRECT preadv/pwritev through vecio
    /// fuse, its per-segment mode, the libfuse examples, and natively.
    Fuse(crate::bench_fuse::FuseBenchArgs),
    /// Every experiment, one summary; --report DIR writes the HTML/Markdown/JSON report.
    All(AllArgs),
    /// Two runs' figures side by side, changes beyond the run-to-run noise flagged.
    Compare(crate::report::CompareArgs),
    /// The report (index.html, report.md, results.json) of a recorded results.json.
    Report(crate::report::ReportArgs),
}

/// Options every experiment takes.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// File or block device to measure on (its data is overwritten by write rows unless
    /// --read-only). Default: a scratch file in a temporary directory.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Create --file when it does not exist (filled, then removed when the run ends).
    #[arg(long, requires = "file")]
    pub create: bool,
    /// Directory for the scratch file (default: the current directory; tmpfs is no good for
    /// direct I/O).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Seconds per measurement.
    #[arg(long, default_value = "5", value_parser = parse_seconds)]
    pub runtime: std::time::Duration,
    /// Repetitions (the spread in the tables comes from these).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Write every figure to this JSON file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Do not run fio beside vecio.
    #[arg(long)]
    pub no_fio: bool,
}

/// Options of `vecio bench writev`.
#[derive(Args, Debug, Clone)]
pub struct WritevArgs {
    #[command(flatten)]
    pub common: Common,
    /// Bytes of the file the requests cover (k, M, G suffixes).
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    pub size: u64,
    /// Skip the rows that write.
    #[arg(long)]
    pub read_only: bool,
    /// Engines to measure, comma-separated (serial, sync, uring).
    #[arg(long, value_delimiter = ',', default_value = "serial,sync,uring")]
    pub engines: Vec<vecio::EngineKind>,
}

/// Options of `vecio bench loop`.
#[derive(Args, Debug, Clone)]
pub struct LoopArgs {
    /// Image to serve (its data is overwritten by the write jobs). Default: a scratch file in
    /// a temporary directory.
    #[arg(long, conflicts_with = "dir")]
    pub file: Option<PathBuf>,
    /// Create --file when it does not exist (filled, then removed when the run ends).
    #[arg(long, requires = "file")]
    pub create: bool,
    /// Directory for the scratch image (default: the current directory; tmpfs is no good for
    /// direct I/O).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Bytes of the image the jobs cover (k, M, G suffixes).
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    pub size: u64,
    /// Seconds per measurement.
    #[arg(long, default_value = "5", value_parser = parse_seconds)]
    pub runtime: std::time::Duration,
    /// Repetitions (the spread in the tables comes from these).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Write every figure to this JSON file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Options of `vecio bench all`.
#[derive(Args, Debug, Clone)]
pub struct AllArgs {
    /// A short run (under 3 minutes on 2 cores): small files, half-second measurements.
    #[arg(long)]
    pub quick: bool,
    /// Directory for scratch files (default: the current directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Write every figure to this JSON file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Do not run fio beside vecio.
    #[arg(long)]
    pub no_fio: bool,
    /// Write the report (index.html, report.md, results.json, plots/) into this directory.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Seconds per measurement, overriding the preset (callcost's at most 1 s).
    #[arg(long, value_parser = parse_seconds)]
    pub runtime: Option<std::time::Duration>,
    /// Bytes of each scratch file, overriding the preset (k, M, G suffixes).
    #[arg(long, value_parser = parse_size)]
    pub size: Option<u64>,
    /// Repetitions, overriding the preset.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,
    /// Do not count instructions with callgrind.
    #[arg(long)]
    pub no_callgrind: bool,
}

/// Options of `vecio bench tokio`.
#[derive(Args, Debug, Clone)]
pub struct TokioArgs {
    /// Directory for the scratch files (default: the current directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Size of the large (uncached, O_DIRECT) file.
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    pub size: u64,
    /// Size of the cached file.
    #[arg(long, default_value = "64M", value_parser = parse_size)]
    pub medium: u64,
    /// Seconds per measurement.
    #[arg(long, default_value = "3", value_parser = parse_seconds)]
    pub runtime: std::time::Duration,
    /// Repetitions.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Tasks in flight.
    #[arg(long, default_value_t = 32, value_parser = parse_count)]
    pub tasks: usize,
    /// Run the tokio::fs and vecio-tokio paths on a current-thread runtime instead of the
    /// multi-threaded one (tokio-uring always runs its own single thread).
    #[arg(long)]
    pub current_thread: bool,
    /// Write every figure to this JSON file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Options of `vecio bench nowait`.
#[derive(Args, Debug, Clone)]
pub struct NowaitArgs {
    /// Directory for the three scratch files (default: the current directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Size of each large file (f2 random uncached, f3 sequential).
    #[arg(long, default_value = "2G", value_parser = parse_size)]
    pub size: u64,
    /// Size of the medium, mostly cached file (f1).
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    pub medium: u64,
    /// Seconds per measurement.
    #[arg(long, default_value = "5", value_parser = parse_seconds)]
    pub runtime: std::time::Duration,
    /// Repetitions.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Reads the event loop keeps in flight.
    #[arg(long, default_value_t = 32, value_parser = parse_count)]
    pub depth: usize,
    /// Worker threads of the pool.
    #[arg(long, default_value_t = 4, value_parser = parse_count)]
    pub threads: usize,
    /// Write every figure to this JSON file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Options of `vecio bench callcost`.
#[derive(Args, Debug, Clone)]
pub struct CallcostArgs {
    /// Directory for the scratch file (default: the current directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Seconds per measurement.
    #[arg(long, default_value = "1", value_parser = parse_seconds)]
    pub runtime: std::time::Duration,
    /// Repetitions.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Do not count instructions with callgrind.
    #[arg(long)]
    pub no_callgrind: bool,
    /// Write every figure to this JSON file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Options of the hidden `vecio bench callcost-worker`.
#[derive(Args, Debug, Clone)]
pub struct CallcostWorkerArgs {
    /// Variant name, as `vecio bench callcost` prints it.
    #[arg(long)]
    pub variant: String,
    /// Number of calls.
    #[arg(long)]
    pub calls: u64,
    /// The page file.
    pub file: PathBuf,
}
