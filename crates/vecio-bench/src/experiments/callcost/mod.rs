//! The call-cost experiment: the "expense of read_iter" thread (`seeds/003_f92c9aae2b9a0629.txt`),
//! re-measured. The same cached 4 KiB page is read over and over, through the raw system call
//! and through each vecio path; the cost per call is reported in nanoseconds and, when valgrind
//! is installed, in instructions from callgrind.
//!
//! Callgrind counts instructions executed in user space only: the kernel's share of a call is
//! invisible to it. Its figures say exactly what vecio adds on top of the system call, and
//! they repeat run after run where times do not. Times include the kernel.

pub mod section;

use std::io::IoSliceMut;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use vecio::engine::{PoolEngine, PoolOptions};
use vecio::{Batch, Direct, Engine, EngineKind, FastReadPolicy, File, IoIter, RwFlags};
use vecio::fast_read::FastReadMode;

use crate::harness::meta::RunMeta;
use crate::harness::progress::Phase;
use crate::harness::stats::Summary;
use crate::harness::table::Table;

/// Bytes per call.
pub const CALL: usize = 4096;

/// One way of reading the page.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Variant {
    /// `pread(2)` in a loop: the floor.
    RawPread,
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
    pub const ALL: [Variant; 10] = [
        Variant::RawPread,
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
#[derive(Debug, Clone)]
pub struct CallcostOptions {
    /// Directory for the scratch file (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Time per measurement.
    pub runtime: Duration,
    /// Repetitions.
    pub repeat: u32,
    /// Count instructions with callgrind when valgrind is installed.
    pub callgrind: bool,
}

impl Default for CallcostOptions {
    fn default() -> Self {
        CallcostOptions {
            dir: None,
            runtime: Duration::from_secs(1),
            repeat: 5,
            callgrind: true,
        }
    }
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

/// Reads the page `calls` times through `variant`. This is also what the callgrind worker runs.
pub fn run_calls(variant: Variant, path: &Path, calls: u64) -> Result<()> {
    let file = File::options().read(true).direct(Direct::Off).open(path)?;
    let mut buf = vec![0u8; CALL];
    match variant {
        Variant::RawPread => {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
            for _ in 0..calls {
                // SAFETY: buf is valid for CALL bytes for the call.
                let r = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), CALL, 0) };
                if r != CALL as isize {
                    bail!("pread returned {r}");
                }
            }
        }
        Variant::RawPreadv2 => {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
            for _ in 0..calls {
                let iov = libc::iovec {
                    iov_base: buf.as_mut_ptr().cast(),
                    iov_len: CALL,
                };
                // SAFETY: iov points at buf, valid for CALL bytes for the call.
                let r = unsafe { libc::preadv2(fd, &iov, 1, 0, 0) };
                if r != CALL as isize {
                    bail!("preadv2 returned {r}");
                }
            }
        }
        Variant::ReadAt => {
            for _ in 0..calls {
                if file.read_at(&mut buf, 0)? != CALL {
                    bail!("short read_at");
                }
            }
        }
        Variant::ReadvAt1 => {
            for _ in 0..calls {
                let mut segs = [IoSliceMut::new(&mut buf)];
                if file.readv_at(&mut segs, 0, RwFlags::empty())? != CALL {
                    bail!("short readv_at");
                }
            }
        }
        Variant::ReadvAt8 => {
            for _ in 0..calls {
                let mut rest: &mut [u8] = &mut buf;
                let mut segs: [IoSliceMut<'_>; 8] = std::array::from_fn(|_| {
                    let (a, b) = std::mem::take(&mut rest).split_at_mut(CALL / 8);
                    rest = b;
                    IoSliceMut::new(a)
                });
                if file.readv_at(&mut segs, 0, RwFlags::empty())? != CALL {
                    bail!("short readv_at");
                }
            }
        }
        Variant::Batch(e) => batch_calls(&file, &mut buf, e, calls)?,
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
    let out = Command::new("valgrind").arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// User-space instructions per call of `variant`: callgrind totals of the worker at two call
/// counts, differenced, so start-up and set-up cancel out.
fn instructions(exe: &Path, variant: Variant, path: &Path) -> Result<f64> {
    let (small, large) = (1_000u64, 21_000u64);
    let count = |calls: u64| -> Result<f64> {
        let out = Command::new("valgrind")
            .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
            .arg(exe)
            .args([
                "bench",
                "callcost-worker",
                "--variant",
                variant.name(),
                "--calls",
                &calls.to_string(),
            ])
            .arg(path)
            .output()
            .context("running valgrind")?;
        let err = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            bail!(
                "callgrind worker failed: {}",
                err.lines().rev().take(3).collect::<Vec<_>>().join(" | ")
            );
        }
        err.lines()
            .find_map(|l| l.split("Collected :").nth(1))
            .and_then(|n| n.trim().parse::<f64>().ok())
            .context("no 'Collected' line in callgrind's output")
    };
    Ok((count(large)? - count(small)?) / (large - small) as f64)
}

/// Runs the experiment. `exe` is the vecio binary, run under callgrind for instruction counts.
pub fn run(opts: &CallcostOptions, exe: Option<&Path>) -> Result<CallcostReport> {
    let dir = match &opts.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    let tmp = crate::harness::cleanup::ScratchDir::new_in("callcost", &dir)?;
    let path = tmp.path().join("page.dat");
    std::fs::write(&path, vec![0x5a_u8; 64 * 1024]).context("writing the page file")?;
    let valgrind = if opts.callgrind {
        valgrind_version()
    } else {
        None
    };
    let steps = Variant::ALL.len() as u32 * opts.repeat;
    let phase = Phase::timed("bench callcost", opts.runtime * steps);
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); Variant::ALL.len()];
    for _ in 0..opts.repeat {
        for (i, &v) in Variant::ALL.iter().enumerate() {
            crate::harness::pagecache::warm(&path)?;
            ns[i].push(time_variant(v, &path, opts.runtime).with_context(|| v.name())?);
        }
    }
    phase.finish();
    let mut variants = Vec::new();
    for (i, &v) in Variant::ALL.iter().enumerate() {
        let instructions = match (&valgrind, exe) {
            (Some(_), Some(exe)) => match instructions(exe, v, &path) {
                Ok(n) => Some(n),
                Err(e) => {
                    eprintln!("callcost: no instruction count for {}: {e:#}", v.name());
                    None
                }
            },
            _ => None,
        };
        variants.push(VariantFigures {
            variant: v,
            name: v.name().to_string(),
            ns: Summary::of(&ns[i]).unwrap_or_default(),
            ns_samples: ns[i].clone(),
            instructions,
        });
    }
    Ok(CallcostReport {
        meta: RunMeta::collect(&path),
        runtime_s: opts.runtime.as_secs_f64(),
        repeat: opts.repeat,
        valgrind,
        variants,
    })
}

fn ratio_to_raw(r: &CallcostReport, v: &VariantFigures) -> Option<f64> {
    let raw = r.variants.iter().find(|x| x.variant == Variant::RawPread)?;
    crate::harness::stats::paired_median(&v.ns_samples, &raw.ns_samples)
}

fn instr_ratio(r: &CallcostReport, v: &VariantFigures) -> Option<f64> {
    let raw = r
        .variants
        .iter()
        .find(|x| x.variant == Variant::RawPread)?
        .instructions?;
    Some(v.instructions? / raw)
}

/// The report as text.
pub fn render(r: &CallcostReport) -> String {
    let mut out = format!(
        "expense of read_iter (seed 003): the same cached 4 KiB page read over and over, buffered\n\
         {} ({}); {:.1} s x {} per variant; {} UTC\n\
         ns/call: median ± relative std dev; vs raw: median of per-repetition ratios to raw pread\n\
         instructions: user space only, from callgrind ({}); the kernel's share is not counted\n\n",
        r.meta.fs,
        r.meta.kernel,
        r.runtime_s,
        r.repeat,
        r.meta.date_utc,
        r.valgrind.as_deref().unwrap_or("valgrind not installed: no counts"),
    );
    let mut t = Table::new([
        "variant",
        "ns/call",
        "vs raw",
        "instructions/call",
        "vs raw",
        "added",
    ]);
    let raw_instr = r
        .variants
        .iter()
        .find(|x| x.variant == Variant::RawPread)
        .and_then(|x| x.instructions);
    for v in &r.variants {
        t.row([
            v.name.clone(),
            format!("{:.0} ±{:.0}%", v.ns.median, v.ns.relative_spread() * 100.0),
            ratio_to_raw(r, v).map_or("-".into(), |x| format!("{x:.3}x")),
            v.instructions.map_or("-".into(), |x| format!("{x:.1}")),
            instr_ratio(r, v).map_or("-".into(), |x| format!("{x:.3}x")),
            match (v.instructions, raw_instr) {
                (Some(a), Some(b)) => format!("{:+.1}", a - b),
                _ => "-".into(),
            },
        ]);
    }
    out += &t.to_string();
    out += "\nThe seed (NVFS, perf): the read_iter path took 12% of cycles against 2.7% for the plain read path;\n\
            reading through ->read was about 10% faster than through ->read_iter for one 4 KiB buffer.\n";
    out += "\nTargets\n";
    for t in targets(r) {
        out += &format!("  [{}] {}\n", if t.met { " ok " } else { "MISS" }, t.text);
    }
    out
}

/// The targets: instructions where counted, else time.
pub fn targets(r: &CallcostReport) -> Vec<crate::harness::target::Target> {
    let mut out = Vec::new();
    for (v, limit) in [(Variant::ReadAt, 1.05), (Variant::ReadvAt1, 1.10)] {
        let Some(f) = r.variants.iter().find(|x| x.variant == v) else {
            continue;
        };
        if let Some(x) = instr_ratio(r, f) {
            out.push(crate::harness::target::Target {
                text: format!(
                    "{}: {x:.3}x the instructions of the raw pread loop (want <= {limit:.2}x)",
                    v.name()
                ),
                met: x <= limit,
            });
        }
        if let Some(x) = ratio_to_raw(r, f) {
            out.push(crate::harness::target::Target {
                text: format!(
                    "{}: {x:.3}x the time of the raw pread loop (want <= {limit:.2}x)",
                    v.name()
                ),
                met: x <= limit,
            });
        }
    }
    out
}
