//! The fast-read experiment: seed 002's table (`seeds/002_830b7ce2b4df9caf.txt`) re-measured.
//! 16 KiB buffered reads over three files as in the seed (f1 Zipf over a mostly cached medium
//! file, f2 uniform over a large uncached one, f3 sequential), alone and mixed 73/18/9; one
//! thread keeps `depth` reads in flight through a [`Queue`], as an event loop does, over the
//! thread pool alone (the seed's "before"), fast read always tried or tracked per file, and
//! io_uring.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use vecio::engine::{PoolEngine, PoolOptions, UringEngine, UringOptions};
use vecio::fast_read::{FastReadMode, FastReadStats};
use vecio::{Completion, Direct, Engine, FastReadPolicy, File, OwnedBuf, Queue, RwFlags};

use crate::experiment::options::{parse_count, parse_size, Common};
use crate::experiment::{Env, Experiment, Preset, Seed};
use crate::experiments::nowait::zipf::Zipf;
use crate::harness::meta::RunMeta;
use crate::harness::progress::{Phase, Ticker};
use crate::harness::scratch::ScratchFile;
use crate::harness::stats::Summary;
use vecio_host::pagecache;

/// Bytes per read.
pub const READ: usize = 16 * 1024;

/// Options of `vecio bench nowait`.
#[derive(Args, Debug, Clone)]
pub struct NowaitOptions {
    /// Where, how long, how often.
    #[command(flatten)]
    pub common: Common,
    /// Size of the medium, mostly cached file (f1).
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    pub medium: u64,
    /// Size of each large file (f2 random uncached, f3 sequential).
    #[arg(long = "size", default_value = "2G", value_parser = parse_size)]
    pub large: u64,
    /// Reads the event loop keeps in flight.
    #[arg(long, default_value_t = 32, value_parser = parse_count)]
    pub depth: usize,
    /// Worker threads of the pool.
    #[arg(long, default_value_t = 4, value_parser = parse_count)]
    pub threads: usize,
}

/// The experiment.
pub struct Nowait;

impl Experiment for Nowait {
    const KEY: &'static str = "nowait";
    const ABOUT: &'static str =
        "preadv2 + RWF_NOWAIT (2015): cached reads served inline, the rest on a thread pool";
    const FIELDS: &'static [&'static str] = &["workloads"];
    const SEED: &'static Seed = &view::SEED;
    type Options = NowaitOptions;
    type Report = NowaitReport;

    fn preset(o: &mut NowaitOptions, p: &Preset) {
        o.common.dir = p.dir.clone();
        o.medium = p.medium();
        o.large = p.size(256 << 20, 2 << 30);
        o.common.runtime = p.runtime(0.5, 5.0);
        o.common.repeat = p.repeat(2, 3);
    }

    /// Sixteen cells per repetition and the raw baseline, 50 ms each to set the cache, and
    /// the fill of the three files.
    fn estimate(o: &NowaitOptions) -> Duration {
        let steps = (16 * o.common.repeat + 1) as f64;
        let fill = (o.medium + 2 * o.large) as f64 / 400e6;
        Duration::from_secs_f64(steps * (o.common.runtime.as_secs_f64() + 0.05) + fill)
    }

    fn run(opts: &NowaitOptions, _env: &Env) -> Result<NowaitReport> {
        run(opts)
    }
}

/// How reads reach the kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Config {
    /// Every read queued to the thread pool (the seed's "before").
    PoolOnly,
    /// Fast read tried on every read, then the pool (a fixed policy).
    FastAlways,
    /// Fast read with per-file hit tracking, then the pool.
    FastTracked,
    /// io_uring (buffered reads: the kernel tries inline, then its own workers).
    Uring,
}

impl Config {
    /// Every configuration.
    pub const ALL: [Config; 4] = [
        Config::PoolOnly,
        Config::FastAlways,
        Config::FastTracked,
        Config::Uring,
    ];

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Config::PoolOnly => "pool only",
            Config::FastAlways => "fast read, always",
            Config::FastTracked => "fast read, tracked",
            Config::Uring => "io_uring",
        }
    }

    fn policy(self) -> FastReadPolicy {
        FastReadPolicy::with_mode(match self {
            Config::PoolOnly | Config::Uring => FastReadMode::Off,
            Config::FastAlways => FastReadMode::Always,
            Config::FastTracked => FastReadMode::Tracked,
        })
    }
}

/// Which files a workload reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Workload {
    /// f1 alone: Zipf random over the mostly cached medium file.
    F1Cached,
    /// f2 alone: uniform random over the large uncached file.
    F2Uncached,
    /// f3 alone: sequential over a large file.
    F3Sequential,
    /// The seed's mix: 73% f1, 18% f2, 9% f3 by request count.
    Mix,
}

impl Workload {
    /// Every workload.
    pub const ALL: [Workload; 4] = [
        Workload::F1Cached,
        Workload::F2Uncached,
        Workload::F3Sequential,
        Workload::Mix,
    ];

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Workload::F1Cached => "f1: zipf random, mostly cached",
            Workload::F2Uncached => "f2: uniform random, uncached",
            Workload::F3Sequential => "f3: sequential",
            Workload::Mix => "mix 73/18/9",
        }
    }

    /// The file (0 to 2) of its next read.
    fn pick(self, rng: &mut SmallRng) -> usize {
        match self {
            Workload::Mix => match rng.gen_range(0..100) {
                0..=72 => 0,
                73..=90 => 1,
                _ => 2,
            },
            // f1, f2 and f3 alone, in their order.
            alone => alone as usize,
        }
    }
}

/// Latency distribution of one measurement, microseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Latency {
    /// Requests measured.
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
    /// Share of requests done within 2 µs (the seed's bucket for reads served inline), 0 to 1.
    pub under_2us: f64,
    /// Share of requests done within 10 µs, 0 to 1.
    pub under_10us: f64,
    /// The distribution as points of its percentile curve, at [`CURVE_QUANTILES`] (for plots).
    #[serde(default)]
    pub percentiles: Vec<Percentile>,
}

/// The quantiles recorded in [`Latency::percentiles`]: from the median out to 99.99 % and the
/// largest request (1.0).
pub const CURVE_QUANTILES: [f64; 15] = [
    0.01, 0.1, 0.25, 0.5, 0.75, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9999, 1.0,
];

/// One point of a latency percentile curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    /// The quantile, 0 to 1 (0.99 is the 99th percentile).
    pub q: f64,
    /// Latency at that quantile, microseconds.
    pub us: f64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let at = |q| h.value_at_quantile(q) as f64 / 1000.0;
        let share = |us: u64| h.count_between(0, us * 1000) as f64 / h.len() as f64;
        let point = |&q: &f64| Percentile { q, us: at(q) };
        Latency {
            count: h.len(),
            mean_us: h.mean() / 1000.0,
            p50_us: at(0.50),
            p90_us: at(0.90),
            p99_us: at(0.99),
            p999_us: at(0.999),
            max_us: h.max() as f64 / 1000.0,
            under_2us: share(2),
            under_10us: share(10),
            percentiles: CURVE_QUANTILES.iter().map(point).collect(),
        }
    }
}

/// One configuration on one workload, over the repetitions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    /// Configuration.
    pub config: Config,
    /// Throughput, MB/s (10^6 bytes/s).
    pub mb_s: Summary,
    /// Latency of every request of every repetition.
    pub latency: Latency,
    /// Latency per file (f1, f2, f3) where the workload read it.
    pub per_file: Vec<(String, Latency)>,
    /// Fast-read counters added up over the files and repetitions.
    pub fast_read: FastReadCounters,
}

/// Fast-read counters (a serialisable copy of [`FastReadStats`]).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct FastReadCounters {
    /// Inline attempts.
    pub attempts: u64,
    /// Served whole.
    pub hits: u64,
    /// Served in part.
    pub partials: u64,
    /// Found nothing.
    pub misses: u64,
    /// Handed to the pool.
    pub offloads: u64,
    /// Not tried (low hit ratio).
    pub skipped: u64,
}

impl FastReadCounters {
    /// Adds `s`'s counts.
    fn add(&mut self, s: &FastReadStats) {
        self.attempts += s.attempts;
        self.hits += s.hits;
        self.partials += s.partials;
        self.misses += s.misses;
        self.offloads += s.offloads;
        self.skipped += s.skipped;
    }
}

/// One workload's row of cells.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadFigures {
    /// Workload.
    pub workload: Workload,
    /// Its name.
    pub name: String,
    /// One cell per configuration.
    pub cells: Vec<Cell>,
}

/// Everything `vecio bench nowait` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NowaitReport {
    /// The run's set-up.
    pub meta: RunMeta,
    /// Medium file size.
    pub medium: u64,
    /// Large file size.
    pub large: u64,
    /// Reads in flight.
    pub depth: usize,
    /// Pool threads.
    pub threads: usize,
    /// Seconds per measurement.
    pub runtime_s: f64,
    /// Repetitions.
    pub repeat: u32,
    /// Raw `preadv2` on f1, one at a time: the floor for a cached read.
    pub raw_preadv2: Latency,
    /// Per workload.
    pub workloads: Vec<WorkloadFigures>,
}

/// The three files, f1 to f3.
type Files = [PathBuf; 3];

/// The three scratch files, filled; removed when dropped.
fn prepare(opts: &NowaitOptions) -> Result<(Files, Vec<ScratchFile>)> {
    let total = opts.medium + 2 * opts.large;
    crate::harness::scratch::ensure_free(&opts.common.scratch_parent()?, total)?;
    let phase = Phase::bytes("preparing nowait files", total);
    let mut scratch = Vec::new();
    let mut base = 0;
    for size in [opts.medium, opts.large, opts.large] {
        let dir = opts.common.dir.as_deref();
        let s = ScratchFile::prepare_with_progress(dir, None, size, &mut |d| {
            phase.set_position(base + d)
        })?;
        base += size;
        scratch.push(s);
    }
    phase.finish();
    Ok((
        std::array::from_fn(|i| scratch[i].path().to_path_buf()),
        scratch,
    ))
}

/// Warms f1 and leaves one MiB in eight of it out ("mostly cached"); evicts f2 and f3.
fn set_cache(files: &Files) -> Result<()> {
    pagecache::warm(&files[0])?;
    let len = std::fs::metadata(&files[0])?.len();
    for off in (0..len).step_by(8 << 20) {
        pagecache::evict_range(&files[0], off, 1 << 20)?;
    }
    pagecache::evict(&files[1])?;
    Ok(pagecache::evict(&files[2])?)
}

/// Runs the experiment.
pub fn run(opts: &NowaitOptions) -> Result<NowaitReport> {
    if opts.medium < 64 * READ as u64 || opts.large < 64 * READ as u64 {
        bail!("file sizes must be at least {} bytes", 64 * READ);
    }
    let (files, _scratch) = prepare(opts)?;
    let steps = Config::ALL.len() * Workload::ALL.len() * opts.common.repeat as usize + 1;
    let phase = Phase::timed("bench nowait", opts.common.runtime * steps as u32);
    let mut rng = SmallRng::seed_from_u64(0x0002_0015);
    let zipf = Zipf::new(opts.medium / READ as u64, 1.1, &mut rng);
    set_cache(&files)?;
    let raw_preadv2 = raw_baseline(&files[0], &zipf, opts.common.runtime, &mut rng)?;
    let mut cells: Vec<Vec<Vec<Run>>> =
        vec![vec![Vec::new(); Config::ALL.len()]; Workload::ALL.len()];
    for _ in 0..opts.common.repeat {
        for (wi, &w) in Workload::ALL.iter().enumerate() {
            for (ci, &c) in Config::ALL.iter().enumerate() {
                set_cache(&files)?;
                let r = measure(&files, w, c, opts, &zipf, &mut rng)
                    .with_context(|| format!("{} through {}", w.name(), c.name()))?;
                cells[wi][ci].push(r);
            }
        }
    }
    phase.finish();
    let workloads = Workload::ALL
        .iter()
        .zip(&cells)
        .map(|(&w, runs)| WorkloadFigures {
            workload: w,
            name: w.name().to_string(),
            cells: Config::ALL
                .iter()
                .zip(runs)
                .map(|(&c, r)| merge(c, r))
                .collect(),
        });
    Ok(NowaitReport {
        meta: RunMeta::collect(&files[0]),
        medium: opts.medium,
        large: opts.large,
        depth: opts.depth,
        threads: opts.threads,
        runtime_s: opts.common.runtime.as_secs_f64(),
        repeat: opts.common.repeat,
        raw_preadv2,
        workloads: workloads.collect(),
    })
}

/// One measurement: its MB/s, its latencies and the files' fast-read counters.
#[derive(Clone)]
struct Run {
    mb_s: f64,
    latencies: Latencies,
    fast: Vec<FastReadStats>,
}

/// Latencies of every read and of each file's (f1, f2, f3), in nanoseconds.
#[derive(Clone)]
struct Latencies {
    all: Histogram<u64>,
    per_file: [Histogram<u64>; 3],
}

impl Latencies {
    fn new() -> Latencies {
        let h = || Histogram::new_with_bounds(1, 60_000_000_000, 3);
        let h = || h().expect("constant histogram bounds are valid");
        Latencies {
            all: h(),
            per_file: [h(), h(), h()],
        }
    }

    fn record(&mut self, file: usize, ns: u64) {
        let _ = self.all.record(ns);
        let _ = self.per_file[file].record(ns);
    }
}

fn merge(config: Config, runs: &[Run]) -> Cell {
    let mut l = Latencies::new();
    let mut fast = FastReadCounters::default();
    for r in runs {
        let _ = l.all.add(&r.latencies.all);
        for (h, from) in l.per_file.iter_mut().zip(&r.latencies.per_file) {
            let _ = h.add(from);
        }
        r.fast.iter().for_each(|s| fast.add(s));
    }
    Cell {
        config,
        mb_s: Summary::over(runs.iter().map(|r| r.mb_s)),
        latency: Latency::of(&l.all),
        per_file: ["f1", "f2", "f3"]
            .iter()
            .zip(&l.per_file)
            .filter(|(_, h)| !h.is_empty())
            .map(|(n, h)| (n.to_string(), Latency::of(h)))
            .collect(),
        fast_read: fast,
    }
}

mod event_loop;
use event_loop::{measure, raw_baseline};

mod view;
pub use view::SEED;
pub mod zipf;
