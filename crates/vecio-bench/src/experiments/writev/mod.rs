//! The readv/writev experiment: seed 000's table (`seeds/000_7dcf0df396dbfddb.txt`) re-measured.
//! Each request is 32 KiB as 8 x 4 KiB O_DIRECT segments, one at a time: the serial engine
//! waits on each segment (the seed's "before"), sync and uring hand the kernel the whole vector
//! (its "after"); fio runs bs=4k psync (eight calls per random 32 KiB block, as serial does) and
//! bs=32k psync (the limit).

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use vecio::{BufPool, BufPoolOptions, Direct, Engine, EngineKind, File, PAGE_SIZE};

use crate::experiment::options::{parse_size, Common, Source};
use crate::experiment::{Env, Experiment, Preset, Seed};
use crate::harness::fio::{FioJob, FioResult, FioRw};
use crate::harness::meta::RunMeta;
use crate::harness::progress::Phase;
use crate::harness::scratch::ScratchFile;
use crate::harness::stats::{median, paired_median, per, Summary};
use measure::measure;

/// Segments per request.
pub const SEGMENTS: usize = 8;
/// Bytes per segment.
pub const SEGMENT: usize = 4096;
/// Bytes per request.
pub const REQUEST: usize = SEGMENTS * SEGMENT;

/// Options of `vecio bench writev`.
#[derive(Args, Debug, Clone)]
pub struct WritevOptions {
    /// Where, how long, how often.
    #[command(flatten)]
    pub common: Common,
    /// The user's file, if any.
    #[command(flatten)]
    pub source: Source,
    /// Bytes of the file the requests cover (k, M, G suffixes).
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    pub size: u64,
    /// Skip the rows that write.
    #[arg(long)]
    pub read_only: bool,
    /// Do not run fio beside vecio.
    #[arg(long)]
    pub no_fio: bool,
    /// Engines to measure, comma-separated (serial, sync, uring).
    #[arg(long, value_delimiter = ',', default_value = "serial,sync,uring")]
    pub engines: Vec<EngineKind>,
}

/// The experiment.
pub struct Writev;

impl Experiment for Writev {
    const KEY: &'static str = "writev";
    const ABOUT: &'static str =
        "readv/writev rework (2002): 32 KiB = 8 x 4 KiB O_DIRECT requests, serial vs batched";
    const FIELDS: &'static [&'static str] = &["rows", "meta"];
    const SEED: &'static Seed = &view::SEED;
    type Options = WritevOptions;
    type Report = WritevReport;

    fn preset(o: &mut WritevOptions, p: &Preset) {
        o.common.dir = p.dir.clone();
        o.no_fio = p.no_fio;
        o.size = p.size(256 << 20, 1 << 30);
        o.common.runtime = p.runtime(0.5, 5.0);
        o.common.repeat = p.repeat(2, 3);
    }

    /// Six rows per engine and fio job and repetition, 0.1 s each to set up, and the fill.
    fn estimate(o: &WritevOptions) -> Duration {
        let fio = if o.no_fio { 0 } else { 2 };
        let steps = (6 * (o.engines.len() + fio) * o.common.repeat as usize) as f64;
        let secs = steps * (o.common.runtime.as_secs_f64() + 0.1) + o.size as f64 / 400e6;
        Duration::from_secs_f64(secs)
    }

    fn run(opts: &WritevOptions, _env: &Env) -> Result<WritevReport> {
        run(opts)
    }
}

/// One row of the seed's table.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Row {
    /// Random 32 KiB writev.
    RandomWritev,
    /// Sequential 32 KiB writev.
    SequentialWritev,
    /// Random 32 KiB readv.
    RandomReadv,
    /// Sequential 32 KiB readv.
    SequentialReadv,
    /// Random, half reads and half writes.
    RandomMixed,
    /// Sequential, half reads and half writes.
    SequentialMixed,
}

impl Row {
    /// Every row, in the seed's order.
    pub const ALL: [Row; 6] = [
        Row::RandomWritev,
        Row::SequentialWritev,
        Row::RandomReadv,
        Row::SequentialReadv,
        Row::RandomMixed,
        Row::SequentialMixed,
    ];

    /// Its name as the seed writes it, the seed's speedup (before / after wall time of its
    /// test loop), its system-time ratio where it reports one that matters, and fio's `--rw`.
    fn spec(self) -> (&'static str, f64, Option<f64>, FioRw) {
        use FioRw::*;
        match self {
            Row::RandomWritev => ("random writev", 14.254 / 1.628, None, RandWrite),
            Row::SequentialWritev => ("sequential writev", 14.853 / 2.238, None, Write),
            Row::RandomReadv => ("random readv", 4.760 / 4.510, Some(0.651 / 0.125), RandRead),
            Row::SequentialReadv => ("sequential readv", 4.797 / 4.545, Some(0.684 / 0.119), Read),
            Row::RandomMixed => ("random mixed", 16.237 / 3.193, None, RandReadWrite),
            Row::SequentialMixed => ("sequential mixed", 14.863 / 2.256, None, ReadWrite),
        }
    }

    /// The row's name as the seed writes it.
    pub fn name(self) -> &'static str {
        self.spec().0
    }

    /// The seed's speedup (before / after wall time of its test loop).
    pub fn seed_speedup(self) -> f64 {
        self.spec().1
    }

    /// The seed's system-time ratio (before / after), where it reports one that matters.
    pub fn seed_sys_ratio(self) -> Option<f64> {
        self.spec().2
    }

    fn random(self) -> bool {
        self.spec().3.as_str().starts_with("rand")
    }

    fn mixed(self) -> bool {
        matches!(self, Row::RandomMixed | Row::SequentialMixed)
    }

    fn writes(self) -> bool {
        !matches!(self.spec().3, FioRw::Read | FioRw::RandRead)
    }
}

/// One timed measurement of one engine on one row.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Sample {
    /// Throughput, MB/s (10^6 bytes per second).
    pub mb_s: f64,
    /// Requests completed.
    pub requests: u64,
    /// User CPU per request, microseconds.
    pub user_us_per_req: f64,
    /// System CPU per request, microseconds.
    pub sys_us_per_req: f64,
    /// Context switches per request (voluntary + involuntary).
    pub ctx_per_req: f64,
    /// System calls the engine made per request.
    pub syscalls_per_req: f64,
}

/// An engine's figures for one row, over all repetitions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineFigures {
    /// Engine name.
    pub engine: String,
    /// Throughput over the repetitions, MB/s.
    pub mb_s: Summary,
    /// Every sample.
    pub samples: Vec<Sample>,
}

/// fio's figures for one job over the repetitions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FioFigures {
    /// The job's description (`bs=4k psync`).
    pub job: String,
    /// Throughput, MB/s.
    pub mb_s: Summary,
    /// System CPU per request, microseconds (from fio's sys_cpu and IOPS).
    pub sys_us_per_req: f64,
    /// Context switches per request.
    pub ctx_per_req: f64,
    /// Throughput of each repetition, MB/s (paired with the engines' samples by index).
    pub samples: Vec<f64>,
}

/// One row of the measured table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RowFigures {
    /// Which row.
    pub row: Row,
    /// Its name.
    pub name: String,
    /// The seed's speedup for it.
    pub seed_speedup: f64,
    /// The seed's system-time ratio, where it gives one.
    pub seed_sys_ratio: Option<f64>,
    /// vecio's engines.
    pub engines: Vec<EngineFigures>,
    /// fio bs=4k psync (per-segment reference).
    pub fio_4k: Option<FioFigures>,
    /// fio bs=32k psync QD1 (the limit).
    pub fio_32k: Option<FioFigures>,
}

impl RowFigures {
    /// The engine's figures, if measured.
    pub fn engine(&self, kind: EngineKind) -> Option<&EngineFigures> {
        self.engines.iter().find(|e| e.engine == kind.name())
    }

    fn samples(&self, kind: EngineKind, of: fn(&Sample) -> f64) -> Option<Vec<f64>> {
        Some(self.engine(kind)?.samples.iter().map(of).collect())
    }

    /// Median over the repetitions of `a`'s MB/s over `b`'s in the same repetition (paired
    /// ratios cancel the drift of a shared machine between repetitions).
    pub fn ratio(&self, a: EngineKind, b: EngineKind) -> Option<f64> {
        let mb = |k| self.samples(k, |s| s.mb_s);
        paired_median(&mb(a)?, &mb(b)?)
    }

    /// The engine's median MB/s, if measured.
    pub fn mb(&self, kind: EngineKind) -> Option<f64> {
        Some(self.engine(kind)?.mb_s.median)
    }

    /// The engine's median system CPU per request, µs, if measured.
    pub fn sys_us(&self, kind: EngineKind) -> Option<f64> {
        median(&self.samples(kind, |s| s.sys_us_per_req)?)
    }

    /// As [`ratio`](Self::ratio), an engine against a fio job.
    pub fn ratio_to_fio(&self, a: EngineKind, fio: &Option<FioFigures>) -> Option<f64> {
        paired_median(&self.samples(a, |s| s.mb_s)?, &fio.as_ref()?.samples)
    }
}

/// Everything `vecio bench writev` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WritevReport {
    /// The run's set-up.
    pub meta: RunMeta,
    /// Bytes of the file covered.
    pub size: u64,
    /// Seconds per measurement.
    pub runtime_s: f64,
    /// Repetitions.
    pub repeat: u32,
    /// The measured rows.
    pub rows: Vec<RowFigures>,
}

impl WritevReport {
    /// The figures of row `r`, if it was measured.
    pub fn row(&self, r: Row) -> Option<&RowFigures> {
        self.rows.iter().find(|f| f.row == r)
    }
}

/// Runs the experiment.
pub fn run(opts: &WritevOptions) -> Result<WritevReport> {
    opts.source.check()?;
    if opts.size < REQUEST as u64 * 16 {
        bail!("--size must be at least {} bytes", REQUEST * 16);
    }
    let (dir, file) = (opts.common.dir.as_deref(), opts.source.file.clone());
    let scratch = ScratchFile::prepare_with_bar("preparing scratch file", dir, file, opts.size)?;
    let path = scratch.path().to_path_buf();
    let rows: Vec<Row> = Row::ALL
        .into_iter()
        .filter(|r| !(opts.read_only && r.writes()))
        .collect();
    let file = File::options()
        .read(true)
        .write(!opts.read_only)
        .direct(Direct::On)
        .open(&path)
        .with_context(|| format!("opening {} for O_DIRECT", path.display()))?;
    let size = opts.size.min(file.size().unwrap_or(opts.size)) / REQUEST as u64 * REQUEST as u64;
    let mut pool = BufPool::new(BufPoolOptions::aligned(PAGE_SIZE).with_region(REQUEST));
    let region = pool.region().context("a request region")?.clone();
    // Each engine with the request buffer's region registered.
    let mut engines = opts
        .engines
        .iter()
        .map(|k| {
            let mut e = k.build()?;
            e.register_region(&region)
                .with_context(|| format!("registering buffers with {}", k.name()))?;
            Ok(e)
        })
        .collect::<Result<Vec<Box<dyn Engine>>>>()?;
    let fio_on = !opts.no_fio && crate::harness::fio::fio_version().is_some();
    let (runtime, repeat) = (opts.common.runtime, opts.common.repeat);
    let steps = rows.len() * (engines.len() + if fio_on { 2 } else { 0 }) * repeat as usize;
    let phase = Phase::timed("bench writev", runtime * steps as u32);

    let mut samples = vec![vec![Vec::new(); engines.len()]; rows.len()];
    let (mut fio4, mut fio32) = (vec![Vec::new(); rows.len()], vec![Vec::new(); rows.len()]);
    let mut rng = SmallRng::seed_from_u64(0x0005_eed0);
    for _rep in 0..repeat {
        for (ri, &row) in rows.iter().enumerate() {
            for (ei, e) in engines.iter_mut().enumerate() {
                let s = measure(&file, e.as_mut(), &mut pool, row, size, runtime, &mut rng)
                    .with_context(|| format!("{} through the {} engine", row.name(), e.name()))?;
                samples[ri][ei].push(s);
            }
            if fio_on {
                fio4[ri].push(fio_job(&path, row, 4096, size, runtime)?);
                fio32[ri].push(fio_job(&path, row, REQUEST as u64, size, runtime)?);
            }
        }
    }
    phase.finish();

    let rows = rows
        .iter()
        .zip(samples)
        .enumerate()
        .map(|(ri, (&row, s))| RowFigures {
            row,
            name: row.name().to_string(),
            seed_speedup: row.seed_speedup(),
            seed_sys_ratio: row.seed_sys_ratio(),
            engines: engines
                .iter()
                .zip(s)
                .map(|(e, samples): (_, Vec<Sample>)| EngineFigures {
                    engine: e.name().to_string(),
                    mb_s: Summary::over(samples.iter().map(|s| s.mb_s)),
                    samples,
                })
                .collect(),
            fio_4k: fio_figures("bs=4k psync, 8 per random offset", &fio4[ri]),
            fio_32k: fio_figures("bs=32k psync", &fio32[ri]),
        });
    Ok(WritevReport {
        meta: RunMeta::collect(&path),
        size,
        runtime_s: runtime.as_secs_f64(),
        repeat,
        rows: rows.collect(),
    })
}

/// fio's run of `row` in `bs`-byte calls, psync, O_DIRECT.
fn fio_job(path: &Path, row: Row, bs: u64, size: u64, runtime: Duration) -> Result<FioResult> {
    let mut job = FioJob::new(path, row.spec().3, bs, size);
    job.runtime_s = runtime.as_secs_f64();
    job.rwmixread = row.mixed().then_some(50);
    if row.random() && bs < REQUEST as u64 {
        // The per-segment reference: the segments of one random request, one call each.
        job.ios_per_offset = Some((REQUEST as u64 / bs) as u32);
    }
    job.run()
        .with_context(|| format!("fio {} bs={bs}", row.name()))
}

fn fio_figures(job: &str, results: &[FioResult]) -> Option<FioFigures> {
    if results.is_empty() {
        return None;
    }
    let per_req = |x: fn(&FioResult) -> f64| -> Vec<f64> {
        results.iter().map(|r| per(x(r), r.requests())).collect()
    };
    let mb: Vec<f64> = results.iter().map(|r| r.total_mb_s).collect();
    Some(FioFigures {
        job: job.to_string(),
        mb_s: Summary::over(mb.iter().copied()),
        sys_us_per_req: median(&per_req(|r| r.sys_cpu_pct / 100.0 * r.secs() * 1e6)).unwrap_or(0.0),
        ctx_per_req: median(&per_req(|r| r.ctx as f64)).unwrap_or(0.0),
        samples: mb,
    })
}

mod measure;
mod view;
