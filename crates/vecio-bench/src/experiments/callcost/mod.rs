//! The call-cost experiment: seed 003 (`seeds/003_f92c9aae2b9a0629.txt`) re-measured. One cached
//! 4 KiB page read over and over, raw and through each vecio path: nanoseconds per call, and
//! user-space instructions from callgrind, which repeat where times do not (docs/results.md).

mod view;

use std::io::IoSliceMut;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{ArgMatches, Args, FromArgMatches};
use serde::{Deserialize, Serialize};
use vecio::engine::{PoolEngine, PoolOptions};
use vecio::fast_read::FastReadMode;
use vecio::{Batch, Direct, Engine, EngineKind, FastReadPolicy, File, IoIter, RwFlags};

use crate::experiment::options::Common;
use crate::experiment::{Env, Experiment, Helper, Preset, Seed};
use crate::harness::meta::RunMeta;
use crate::harness::progress::Phase;
use crate::harness::server::{diagnostics, first_line};
use crate::harness::stats::Summary;

/// Bytes per call.
pub const CALL: usize = 4096;

/// The relative spread `vecio bench compare` gives callgrind's instruction counts:
/// single-threaded variants repeat exactly, the thread-pool ones vary by about 1% between runs.
pub const INSTRUCTION_SPREAD: f64 = 0.005;

/// One way of reading the page.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Variant {
    /// `pread(2)` in a loop, through libc: the floor a C program sees.
    RawPread,
    /// `pread(2)` as an inline system call (rustix), no libc wrapper: the floor of the call.
    RawSyscall,
    /// `preadv2(2)` with one iovec and no flags.
    RawPreadv2,
    /// `File::read_at` (`IoIter::Ubuf`).
    ReadAt,
    /// `File::readv_at` with one segment.
    ReadvAt1,
    /// `File::readv_at` with 8 segments of 512 bytes.
    ReadvAt8,
    /// A one-request `Batch` through an engine.
    Batch(BatchEngine),
}

/// The engines the batch variants go through.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BatchEngine {
    /// Serial engine.
    Serial,
    /// Sync engine.
    Sync,
    /// io_uring engine.
    Uring,
    /// Pool engine with fast read (served inline: the page is cached).
    Pool,
    /// Pool engine with fast read off: every read handed to a worker and back (the hand-off).
    PoolOffload,
}

impl Variant {
    /// Every variant, floor first.
    pub const ALL: [Variant; 11] = [
        Variant::RawPread,
        Variant::RawSyscall,
        Variant::RawPreadv2,
        Variant::ReadAt,
        Variant::ReadvAt1,
        Variant::ReadvAt8,
        Variant::Batch(BatchEngine::Serial),
        Variant::Batch(BatchEngine::Sync),
        Variant::Batch(BatchEngine::Uring),
        Variant::Batch(BatchEngine::Pool),
        Variant::Batch(BatchEngine::PoolOffload),
    ];

    /// Its name, on command lines and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Variant::RawPread => "raw pread",
            Variant::RawSyscall => "raw syscall",
            Variant::RawPreadv2 => "raw preadv2",
            Variant::ReadAt => "read_at",
            Variant::ReadvAt1 => "readv_at x1",
            Variant::ReadvAt8 => "readv_at x8",
            Variant::Batch(BatchEngine::Serial) => "batch serial",
            Variant::Batch(BatchEngine::Sync) => "batch sync",
            Variant::Batch(BatchEngine::Uring) => "batch uring",
            Variant::Batch(BatchEngine::Pool) => "batch pool+fast read",
            Variant::Batch(BatchEngine::PoolOffload) => "batch pool hand-off",
        }
    }

    /// The variant of a name.
    pub fn from_name(s: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == s)
    }
}

/// Options of `vecio bench callcost`.
#[derive(Args, Debug, Clone)]
pub struct CallcostOptions {
    /// Where, how long, how often.
    #[command(flatten)]
    pub common: Common,
    /// Do not count instructions with callgrind.
    #[arg(long)]
    pub no_callgrind: bool,
}

/// The experiment.
pub struct Callcost;

impl Experiment for Callcost {
    const KEY: &'static str = "callcost";
    const ABOUT: &'static str =
        "Expense of read_iter (2021): cost per call of a cached 4 KiB read, raw and through vecio";
    const FIELDS: &'static [&'static str] = &["variants"];
    const SEED: &'static Seed = &view::SEED;
    type Options = CallcostOptions;
    type Report = CallcostReport;

    fn command(cmd: clap::Command) -> clap::Command {
        cmd.mut_arg("runtime", |a| a.default_value("1"))
            .mut_arg("repeat", |a| a.default_value("5"))
    }

    fn preset(o: &mut CallcostOptions, p: &Preset) {
        o.common.dir = p.dir.clone();
        o.common.runtime = p.runtime(0.2, 1.0).min(Duration::from_secs(1));
        o.common.repeat = p.repeat(3, 5);
        o.no_callgrind = p.no_callgrind;
    }

    /// Eleven variants per repetition, 2.2 times the runtime each (calibration and timing), and
    /// about 10 s of callgrind.
    fn estimate(o: &CallcostOptions) -> Duration {
        let grind = (!o.no_callgrind && valgrind_version().is_some()).then_some(10.0);
        let calls = Variant::ALL.len() as f64
            * o.common.repeat as f64
            * o.common.runtime.as_secs_f64()
            * 2.2;
        Duration::from_secs_f64(calls + grind.unwrap_or(0.0))
    }

    fn run(opts: &CallcostOptions, env: &Env) -> Result<CallcostReport> {
        run(opts, &env.exe)
    }

    fn helper() -> Option<Helper> {
        let about =
            "Runs N calls of one callcost variant (what callgrind counts); not for direct use";
        let command = WorkerArgs::augment_args(clap::Command::new("callcost-worker"));
        let command = command.about(about).hide(true);
        Some(Helper {
            command,
            run: worker,
        })
    }
}

/// The callgrind worker's command line.
#[derive(Args)]
struct WorkerArgs {
    /// Variant name, as `callcost` prints it
    #[arg(long, value_name = "variant")]
    variant: String,
    /// Number of calls
    #[arg(long, value_name = "calls")]
    calls: u64,
    /// The page file
    #[arg(value_name = "file")]
    file: PathBuf,
}

/// The callgrind worker: `--calls` reads of the page file through `--variant`.
fn worker(m: &ArgMatches) -> Result<()> {
    let a = WorkerArgs::from_arg_matches(m)?;
    let v = Variant::from_name(&a.variant);
    let v = v.with_context(|| format!("unknown variant {:?}", a.variant))?;
    run_calls(v, &a.file, a.calls)
}

/// One variant's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantFigures {
    /// Which variant.
    pub variant: Variant,
    /// Its name.
    pub name: String,
    /// Nanoseconds per call over the repetitions.
    pub ns: Summary,
    /// Per-repetition nanoseconds (paired with the raw pread's by index).
    pub ns_samples: Vec<f64>,
    /// User-space instructions per call (callgrind), if counted.
    pub instructions: Option<f64>,
}

/// Everything `vecio bench callcost` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallcostReport {
    /// The run's set-up.
    pub meta: RunMeta,
    /// Seconds per measurement.
    pub runtime_s: f64,
    /// Repetitions.
    pub repeat: u32,
    /// valgrind's version when instructions were counted.
    pub valgrind: Option<String>,
    /// Per variant.
    pub variants: Vec<VariantFigures>,
}

impl CallcostReport {
    /// The figures of variant `v`, if measured.
    pub fn variant(&self, v: Variant) -> Option<&VariantFigures> {
        self.variants.iter().find(|x| x.variant == v)
    }
}

/// Reads the page `calls` times through `variant`. This is also what the callgrind worker runs.
pub fn run_calls(variant: Variant, path: &Path, calls: u64) -> Result<()> {
    let file = File::options().read(true).direct(Direct::Off).open(path)?;
    let mut buf = vec![0u8; CALL];
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    let buf = &mut buf[..];
    match variant {
        Variant::RawPread => each(calls, "pread", || {
            // SAFETY: buf is valid for CALL bytes for the call.
            Ok(unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), CALL, 0) })
        }),
        Variant::RawSyscall => each(calls, "pread syscall", || {
            // SAFETY: fd is file's, open for the loop.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            match rustix::io::pread(fd, &mut *buf, 0) {
                Ok(CALL) => Ok(CALL as isize),
                _ => Ok(-1),
            }
        }),
        Variant::RawPreadv2 => each(calls, "preadv2", || {
            let iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: CALL,
            };
            // SAFETY: iov points at buf, valid for CALL bytes for the call.
            Ok(unsafe { libc::preadv2(fd, &iov, 1, 0, 0) })
        }),
        Variant::ReadAt => each(calls, "read_at", || Ok(file.read_at(buf, 0)? as isize)),
        Variant::ReadvAt1 => each(calls, "readv_at", || {
            let mut segs = [IoSliceMut::new(buf)];
            Ok(file.readv_at(&mut segs, 0, RwFlags::empty())? as isize)
        }),
        // A loop of its own: through `each` it cost two instructions more a call (463 -> 465).
        Variant::ReadvAt8 => {
            for _ in 0..calls {
                let mut rest: &mut [u8] = buf;
                let mut segs: [IoSliceMut<'_>; 8] = std::array::from_fn(|_| {
                    let (a, b) = std::mem::take(&mut rest).split_at_mut(CALL / 8);
                    rest = b;
                    IoSliceMut::new(a)
                });
                if file.readv_at(&mut segs, 0, RwFlags::empty())? != CALL {
                    bail!("short readv_at");
                }
            }
            Ok(())
        }
        Variant::Batch(e) => batch_calls(&file, buf, e, calls),
    }
}

/// Makes `calls` calls of `call`, each of which must read [`CALL`] bytes.
fn each(calls: u64, what: &str, mut call: impl FnMut() -> Result<isize>) -> Result<()> {
    for _ in 0..calls {
        let r = call()?;
        if r != CALL as isize {
            bail!("{what} returned {r}");
        }
    }
    Ok(())
}

/// `calls` one-read batches of the page through engine `e`.
fn batch_calls(file: &File, buf: &mut [u8], e: BatchEngine, calls: u64) -> Result<()> {
    let mut engine: Box<dyn Engine> = match e {
        BatchEngine::Serial => EngineKind::Serial.build()?,
        BatchEngine::Sync => EngineKind::Sync.build()?,
        BatchEngine::Uring => EngineKind::Uring.build()?,
        BatchEngine::Pool => EngineKind::Pool.build()?,
        BatchEngine::PoolOffload => Box::new(PoolEngine::new(PoolOptions {
            fast_read: FastReadPolicy::with_mode(FastReadMode::Off),
            ..PoolOptions::default()
        })?),
    };
    let mut out = Vec::with_capacity(1);
    for _ in 0..calls {
        out.clear();
        let mut batch = Batch::new();
        batch.push(file, 0, IoIter::read_into(&mut *buf), RwFlags::empty());
        batch.run_into(engine.as_mut(), &mut out);
        match out.pop() {
            Some(Ok(n)) if n == CALL => {}
            other => bail!("batch read: {other:?}"),
        }
    }
    Ok(())
}

fn time_variant(variant: Variant, path: &Path, runtime: Duration) -> Result<f64> {
    // Calibrate a call count that takes about `runtime`, then time it.
    let probe = 2_000u64;
    let t = Instant::now();
    run_calls(variant, path, probe)?;
    let per = t.elapsed().as_secs_f64() / probe as f64;
    let calls = ((runtime.as_secs_f64() / per.max(1e-9)) as u64).clamp(probe, 50_000_000);
    let t = Instant::now();
    run_calls(variant, path, calls)?;
    Ok(t.elapsed().as_secs_f64() * 1e9 / calls as f64)
}

/// valgrind's version, when it is installed.
pub fn valgrind_version() -> Option<String> {
    first_line("valgrind", &["--version"])
}

/// User-space instructions per call of `variant`: callgrind totals of the worker at two call
/// counts, differenced, so start-up and set-up cancel out.
fn instructions(exe: &Path, variant: Variant, path: &Path) -> Result<f64> {
    let (small, large) = (1_000u64, 21_000u64);
    let count = |calls: u64| -> Result<f64> {
        let out = Command::new("valgrind")
            .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
            .arg(exe)
            .args(["callcost-worker", "--variant", variant.name()])
            .args(["--calls", &calls.to_string()])
            .arg(path)
            .output()
            .context("running valgrind")?;
        let err = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            bail!("callgrind worker failed: {}", diagnostics(&err, 3, true));
        }
        err.lines()
            .find_map(|l| l.split("Collected :").nth(1))
            .and_then(|n| n.trim().parse::<f64>().ok())
            .context("no 'Collected' line in callgrind's output")
    };
    Ok((count(large)? - count(small)?) / (large - small) as f64)
}

/// Runs the experiment. `exe` is the vecio binary, run under callgrind for instruction counts.
pub fn run(opts: &CallcostOptions, exe: &Path) -> Result<CallcostReport> {
    let dir = opts.common.scratch_parent()?;
    let tmp = crate::harness::cleanup::ScratchDir::new_in("callcost", &dir)?;
    let path = tmp.path().join("page.dat");
    std::fs::write(&path, vec![0x5a_u8; 64 * 1024]).context("writing the page file")?;
    let valgrind = (!opts.no_callgrind).then(valgrind_version).flatten();
    let steps = Variant::ALL.len() as u32 * opts.common.repeat;
    let phase = Phase::timed("bench callcost", opts.common.runtime * steps);
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); Variant::ALL.len()];
    for _ in 0..opts.common.repeat {
        for (i, &v) in Variant::ALL.iter().enumerate() {
            vecio_host::pagecache::warm(&path)?;
            ns[i].push(time_variant(v, &path, opts.common.runtime).with_context(|| v.name())?);
        }
    }
    phase.finish();
    let exe = valgrind.is_some().then_some(exe);
    let counted = |v: Variant| match instructions(exe?, v, &path) {
        Ok(n) => Some(n),
        Err(e) => {
            eprintln!("callcost: no instruction count for {}: {e:#}", v.name());
            None
        }
    };
    let variants = Variant::ALL.iter().zip(ns).map(|(&v, ns)| VariantFigures {
        variant: v,
        name: v.name().to_string(),
        ns: Summary::over(ns.iter().copied()),
        ns_samples: ns,
        instructions: counted(v),
    });
    Ok(CallcostReport {
        meta: RunMeta::collect(&path),
        runtime_s: opts.common.runtime.as_secs_f64(),
        repeat: opts.common.repeat,
        valgrind,
        variants: variants.collect(),
    })
}
