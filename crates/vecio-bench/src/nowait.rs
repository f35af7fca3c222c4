//! The fast-read experiment: the table of the preadv2/RWF_NONBLOCK patch set
//! (`seeds/002_830b7ce2b4df9caf.txt`), re-measured.
//!
//! Three files and 16 KiB buffered reads, as in the seed: f1 random (Zipf) over a medium file
//! that is mostly cached, f2 uniform random over a large uncached file, f3 sequential over a
//! large file; alone and mixed 73/18/9 by request count. One thread keeps `depth` reads in
//! flight through a [`Queue`], the way an event-loop server does, over: the thread pool alone
//! (the seed's "before"), fast read always tried, fast read tracked per file, and io_uring.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use vecio::engine::{PoolEngine, PoolOptions, UringEngine, UringOptions};
use vecio::{
    Completion, Direct, Engine, FastReadMode, FastReadPolicy, FastReadStats, File, OwnedBuf, Queue,
    RwFlags,
};

use crate::meta::RunMeta;
use crate::progress::Phase;
use crate::scratch::ScratchFile;
use crate::stats::Summary;
use crate::zipf::Zipf;
use crate::{cache, table::Table};

/// Bytes per read.
pub const READ: usize = 16 * 1024;

/// Options of `vecio bench nowait`.
#[derive(Debug, Clone)]
pub struct NowaitOptions {
    /// Directory for the three scratch files (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Size of the medium, mostly cached file (f1).
    pub medium: u64,
    /// Size of each large file (f2, f3).
    pub large: u64,
    /// Time per measurement.
    pub runtime: Duration,
    /// Repetitions.
    pub repeat: u32,
    /// Reads kept in flight by the event loop.
    pub depth: usize,
    /// Worker threads of the pool.
    pub threads: usize,
}

impl Default for NowaitOptions {
    fn default() -> Self {
        NowaitOptions {
            dir: None,
            medium: 256 << 20,
            large: 2 << 30,
            runtime: Duration::from_secs(5),
            repeat: 3,
            depth: 32,
            threads: 4,
        }
    }
}

/// How reads reach the kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
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
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
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

    fn pick(self, rng: &mut SmallRng) -> usize {
        match self {
            Workload::F1Cached => 0,
            Workload::F2Uncached => 1,
            Workload::F3Sequential => 2,
            Workload::Mix => match rng.gen_range(0..100) {
                0..=72 => 0,
                73..=90 => 1,
                _ => 2,
            },
        }
    }
}

/// Latency distribution of one measurement, microseconds.
#[derive(Debug, Clone, Default, Serialize)]
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
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Latency {
            count: h.len(),
            mean_us: h.mean() / 1000.0,
            p50_us: us(h.value_at_quantile(0.50)),
            p90_us: us(h.value_at_quantile(0.90)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
            under_2us: h.count_between(0, 2_000) as f64 / h.len() as f64,
            under_10us: h.count_between(0, 10_000) as f64 / h.len() as f64,
        }
    }
}

/// One configuration on one workload, over the repetitions.
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Copy, Default, Serialize)]
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
    fn add(&mut self, s: &FastReadStats) {
        self.add_counters(&FastReadCounters {
            attempts: s.attempts,
            hits: s.hits,
            partials: s.partials,
            misses: s.misses,
            offloads: s.offloads,
            skipped: s.skipped,
        });
    }

    fn add_counters(&mut self, o: &FastReadCounters) {
        self.attempts += o.attempts;
        self.hits += o.hits;
        self.partials += o.partials;
        self.misses += o.misses;
        self.offloads += o.offloads;
        self.skipped += o.skipped;
    }
}

/// One workload's row of cells.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadFigures {
    /// Workload.
    pub workload: Workload,
    /// Its name.
    pub name: String,
    /// One cell per configuration.
    pub cells: Vec<Cell>,
}

/// Everything `vecio bench nowait` measured.
#[derive(Debug, Clone, Serialize)]
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

struct Files {
    paths: [PathBuf; 3],
    _scratch: Vec<ScratchFile>,
}

fn prepare(opts: &NowaitOptions) -> Result<Files> {
    let total = opts.medium + 2 * opts.large;
    let phase = Phase::bytes("preparing nowait files", total);
    let mut scratch = Vec::new();
    let mut base = 0;
    for size in [opts.medium, opts.large, opts.large] {
        let s = ScratchFile::prepare_with_progress(opts.dir.as_deref(), None, size, &mut |d| {
            phase.set_position(base + d)
        })?;
        base += size;
        scratch.push(s);
    }
    phase.finish();
    let paths = [
        scratch[0].path().to_path_buf(),
        scratch[1].path().to_path_buf(),
        scratch[2].path().to_path_buf(),
    ];
    Ok(Files {
        paths,
        _scratch: scratch,
    })
}

/// Warms f1 and leaves one MiB in eight of it out ("mostly cached"); evicts f2 and f3.
fn set_cache(files: &Files) -> Result<()> {
    cache::warm(&files.paths[0])?;
    let len = std::fs::metadata(&files.paths[0])?.len();
    let mut off = 0;
    while off < len {
        cache::evict_range(&files.paths[0], off, 1 << 20)?;
        off += 8 << 20;
    }
    cache::evict(&files.paths[1])?;
    cache::evict(&files.paths[2])
}

/// Runs the experiment.
pub fn run(opts: &NowaitOptions) -> Result<NowaitReport> {
    if opts.medium < 64 * READ as u64 || opts.large < 64 * READ as u64 {
        bail!("file sizes must be at least {} bytes", 64 * READ);
    }
    let files = prepare(opts)?;
    let steps = Config::ALL.len() * Workload::ALL.len() * opts.repeat as usize + 1;
    let phase = Phase::timed("bench nowait", opts.runtime * steps as u32);
    let mut rng = SmallRng::seed_from_u64(0x0002_0015);
    let blocks = |size: u64| size / READ as u64;
    let zipf = Zipf::new(blocks(opts.medium), 1.1, &mut rng);

    set_cache(&files)?;
    let raw_preadv2 = raw_baseline(&files.paths[0], &zipf, opts.runtime, &mut rng)?;

    let mut cells: Vec<Vec<Vec<Run>>> =
        vec![vec![Vec::new(); Config::ALL.len()]; Workload::ALL.len()];
    for _ in 0..opts.repeat {
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
        .enumerate()
        .map(|(wi, &w)| WorkloadFigures {
            workload: w,
            name: w.name().to_string(),
            cells: Config::ALL
                .iter()
                .enumerate()
                .map(|(ci, &c)| merge(c, &cells[wi][ci]))
                .collect(),
        })
        .collect();
    Ok(NowaitReport {
        meta: RunMeta::collect(&files.paths[0]),
        medium: opts.medium,
        large: opts.large,
        depth: opts.depth,
        threads: opts.threads,
        runtime_s: opts.runtime.as_secs_f64(),
        repeat: opts.repeat,
        raw_preadv2,
        workloads,
    })
}

#[derive(Clone)]
struct Run {
    mb_s: f64,
    all: Histogram<u64>,
    per_file: [Histogram<u64>; 3],
    fast: FastReadCounters,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("constant histogram bounds are valid")
}

fn merge(config: Config, runs: &[Run]) -> Cell {
    let mut all = histogram();
    let mut per = [histogram(), histogram(), histogram()];
    let mut fast = FastReadCounters::default();
    for r in runs {
        let _ = all.add(&r.all);
        for i in 0..3 {
            let _ = per[i].add(&r.per_file[i]);
        }
        fast.add_counters(&r.fast);
    }
    let mb: Vec<f64> = runs.iter().map(|r| r.mb_s).collect();
    Cell {
        config,
        mb_s: Summary::of(&mb).unwrap_or_default(),
        latency: Latency::of(&all),
        per_file: ["f1", "f2", "f3"]
            .iter()
            .zip(&per)
            .filter(|(_, h)| !h.is_empty())
            .map(|(n, h)| (n.to_string(), Latency::of(h)))
            .collect(),
        fast_read: fast,
    }
}

/// `preadv2` on f1, one call at a time, Zipf offsets: what a cached 16 KiB read costs.
fn raw_baseline(
    path: &Path,
    zipf: &Zipf,
    runtime: Duration,
    rng: &mut SmallRng,
) -> Result<Latency> {
    let file = File::options().direct(Direct::Off).open(path)?;
    let mut h = histogram();
    let mut buf = vec![0u8; READ];
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    let t0 = Instant::now();
    while t0.elapsed() < runtime.min(Duration::from_secs(2)) {
        let off = zipf.sample(rng) * READ as u64;
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: READ,
        };
        let t = Instant::now();
        // SAFETY: iov points at buf, valid for READ bytes for the call.
        let r = unsafe { libc::preadv2(fd, &iov, 1, off as i64, 0) };
        let ns = t.elapsed().as_nanos() as u64;
        if r < 0 {
            return Err(std::io::Error::last_os_error()).context("preadv2");
        }
        let _ = h.record(ns.max(1));
    }
    Ok(Latency::of(&h))
}

struct Inflight {
    start: Instant,
    file: usize,
}

fn engine_for(config: Config, opts: &NowaitOptions) -> Result<Box<dyn Engine>> {
    Ok(match config {
        Config::Uring => Box::new(UringEngine::new(UringOptions {
            entries: (opts.depth.next_power_of_two() as u32).max(8),
            ..UringOptions::default()
        })?),
        _ => Box::new(PoolEngine::new(PoolOptions {
            threads: opts.threads,
            depth: opts.depth * 4,
            fast_read: config.policy(),
            ..PoolOptions::default()
        })?),
    })
}

/// One workload through one configuration for `opts.runtime`.
fn measure(
    files: &Files,
    w: Workload,
    c: Config,
    opts: &NowaitOptions,
    zipf: &Zipf,
    rng: &mut SmallRng,
) -> Result<Run> {
    let open = |p: &Path| -> Result<Arc<File>> {
        Ok(Arc::new(File::options().direct(Direct::Off).open(p)?))
    };
    let handles = [
        open(&files.paths[0])?,
        open(&files.paths[1])?,
        open(&files.paths[2])?,
    ];
    let large_blocks = opts.large / READ as u64;
    let mut seq = 0u64;
    let mut q = Queue::new(engine_for(c, opts)?);

    // Keep f2 uncached for the whole run: the kernel would otherwise cache what it reads.
    let stop = Arc::new(AtomicBool::new(false));
    let evictor = {
        let (stop, path) = (stop.clone(), files.paths[1].clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = cache::evict(&path);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };

    let mut tally = Tally::new(opts.depth);
    let mut done: Vec<Completion> = Vec::new();
    let mut to_issue: Vec<usize> = (0..opts.depth).collect();
    let t0 = Instant::now();
    let mut issued = 0u64;
    'run: loop {
        while let Some(slot) = to_issue.pop() {
            // Reads served inline complete at once and come straight back here: look at the
            // clock now and then, not only when waiting.
            issued += 1;
            if issued % 64 == 0 && t0.elapsed() >= opts.runtime {
                break 'run;
            }
            let file = w.pick(rng);
            let block = match file {
                0 => zipf.sample(rng),
                1 => rng.gen_range(0..large_blocks),
                _ => {
                    seq = (seq + 1) % large_blocks;
                    seq
                }
            };
            let bufs = tally
                .spare
                .pop()
                .unwrap_or_else(|| vec![OwnedBuf::Vec(vec![0u8; READ])]);
            tally.inflight[slot] = Some(Inflight {
                start: Instant::now(),
                file,
            });
            if let Err((e, b)) = q.push_read(
                &handles[file],
                block * READ as u64,
                bufs,
                RwFlags::empty(),
                slot as u64,
            ) {
                tally.spare.push(b);
                tally.result = Err(e.into());
                break 'run;
            }
            q.reap(&mut done);
            tally.take(&mut done, &mut to_issue);
        }
        if t0.elapsed() >= opts.runtime || tally.result.is_err() {
            break;
        }
        if let Err(e) = q.submit_and_wait(1) {
            tally.result = Err(e.into());
            break;
        }
        q.reap(&mut done);
        tally.take(&mut done, &mut to_issue);
    }
    let wall = t0.elapsed().as_secs_f64();
    let _ = q.submit_and_wait(q.len());
    q.reap(&mut done);
    drop(q);
    stop.store(true, Ordering::Relaxed);
    let _ = evictor.join();
    tally.result?;
    let mut fast = FastReadCounters::default();
    for h in &handles {
        fast.add(&h.fast_read_stats(&c.policy()));
    }
    Ok(Run {
        mb_s: tally.bytes as f64 / wall / 1e6,
        all: tally.all,
        per_file: tally.per,
        fast,
    })
}

/// What the event loop has seen: latencies, bytes, and the slots and buffers to reuse.
struct Tally {
    all: Histogram<u64>,
    per: [Histogram<u64>; 3],
    bytes: u64,
    inflight: Vec<Option<Inflight>>,
    spare: Vec<Vec<OwnedBuf>>,
    result: Result<()>,
}

impl Tally {
    fn new(depth: usize) -> Tally {
        Tally {
            all: histogram(),
            per: [histogram(), histogram(), histogram()],
            bytes: 0,
            inflight: (0..depth).map(|_| None).collect(),
            spare: (0..depth)
                .map(|_| vec![OwnedBuf::Vec(vec![0u8; READ])])
                .collect(),
            result: Ok(()),
        }
    }

    /// Records each completion's latency and bytes; its slot goes back to `to_issue`.
    fn take(&mut self, done: &mut Vec<Completion>, to_issue: &mut Vec<usize>) {
        let now = Instant::now();
        for c in done.drain(..) {
            let slot = c.user_data as usize;
            if let Some(f) = self.inflight.get_mut(slot).and_then(Option::take) {
                let ns = ((now - f.start).as_nanos() as u64).max(1);
                let _ = self.all.record(ns);
                let _ = self.per[f.file].record(ns);
            }
            match c.result {
                Ok(n) => self.bytes += n as u64,
                Err(e) => self.result = Err(e.into()),
            }
            self.spare.push(c.bufs);
            to_issue.push(slot);
        }
    }
}

/// The report as text.
pub fn render(r: &NowaitReport) -> String {
    let m = &r.meta;
    let mut out = format!(
        "preadv2 + RWF_NOWAIT fast reads (seed 002): 16 KiB buffered reads, {} in flight, pool of {} threads\n\
         files on {} ({}); f1 {} MiB mostly cached, f2/f3 {} MiB; {:.1} s x {} per cell; {} UTC\n\
         latency in µs from issue to completion; MB/s = 10^6 bytes/s (median, ± relative std dev)\n\
         raw preadv2 on f1, one at a time: p50 {:.1} µs, p99 {:.1} µs\n",
        r.depth, r.threads, m.fs, m.device, r.medium >> 20, r.large >> 20, r.runtime_s, r.repeat, m.date_utc,
        r.raw_preadv2.p50_us, r.raw_preadv2.p99_us
    );
    for w in &r.workloads {
        out += &format!("\n{}\n", w.name);
        let mut t = Table::new([
            "config",
            "MB/s",
            "mean",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "max",
            "<2µs",
            "<10µs",
            "tried",
            "hit",
            "offloaded",
        ]);
        for c in &w.cells {
            let l = &c.latency;
            let f = &c.fast_read;
            let hit = if f.attempts > 0 {
                format!(
                    "{:.0}%",
                    100.0 * (f.hits as f64 + f.partials as f64 * 0.5) / f.attempts as f64
                )
            } else {
                "-".into()
            };
            t.row([
                c.config.name().to_string(),
                if c.mb_s.n > 1 {
                    format!(
                        "{:.1} ±{:.0}%",
                        c.mb_s.median,
                        c.mb_s.relative_spread() * 100.0
                    )
                } else {
                    format!("{:.1}", c.mb_s.median)
                },
                format!("{:.1}", l.mean_us),
                format!("{:.1}", l.p50_us),
                format!("{:.1}", l.p90_us),
                format!("{:.1}", l.p99_us),
                format!("{:.1}", l.p999_us),
                format!("{:.0}", l.max_us),
                format!("{:.0}%", l.under_2us * 100.0),
                format!("{:.0}%", l.under_10us * 100.0),
                f.attempts.to_string(),
                hit,
                f.offloads.to_string(),
            ]);
        }
        out += &t.to_string();
    }
    out += "\nThe seed (fio, 16 KiB reads, ext4 on raid0): f1 70.6% of reads under 2 µs with fast read (none under 50 ms before);\n\
            f3 64% under 2 µs; total bandwidth unchanged (174.7 -> 177.3 MB/s); real workload mean response -20 to -30%.\n";
    out += "\nTargets\n";
    for t in targets(r) {
        out += &format!("  [{}] {}\n", if t.met { " ok " } else { "MISS" }, t.text);
    }
    out
}

/// Whether a target was met, and what was measured.
pub use crate::writev::Target;

fn cell(r: &NowaitReport, w: Workload, c: Config) -> Option<&Cell> {
    r.workloads
        .iter()
        .find(|x| x.workload == w)?
        .cells
        .iter()
        .find(|x| x.config == c)
}

/// The issue's targets, checked against a report.
pub fn targets(r: &NowaitReport) -> Vec<Target> {
    let mut out = Vec::new();
    if let (Some(fast), Some(pool)) = (
        cell(r, Workload::F1Cached, Config::FastTracked),
        cell(r, Workload::F1Cached, Config::PoolOnly),
    ) {
        let raw = r.raw_preadv2.p50_us;
        let vs_raw = fast.latency.p50_us / raw;
        out.push(Target {
            text: format!("cached reads, fast read p50 {:.1} µs = {vs_raw:.2}x raw preadv2 ({raw:.1} µs) (want <= 1.3x)", fast.latency.p50_us),
            met: vs_raw <= 1.3,
        });
        let vs_pool = fast.latency.p50_us / pool.latency.p50_us;
        out.push(Target {
            text: format!("cached reads, fast read p50 = {vs_pool:.2}x pool-only p50 {:.1} µs (want <= 0.20x)", pool.latency.p50_us),
            met: vs_pool <= 0.2,
        });
    }
    if let (Some(fast), Some(pool)) = (
        cell(r, Workload::Mix, Config::FastTracked),
        cell(r, Workload::Mix, Config::PoolOnly),
    ) {
        let drop = 1.0 - fast.latency.mean_us / pool.latency.mean_us;
        out.push(Target {
            text: format!(
                "seed mix, mean latency {:.0} µs vs pool only {:.0} µs: {:.0}% lower (want >= 20%)",
                fast.latency.mean_us,
                pool.latency.mean_us,
                drop * 100.0
            ),
            met: drop >= 0.2,
        });
    }
    if let (Some(fast), Some(pool)) = (
        cell(r, Workload::F2Uncached, Config::FastTracked),
        cell(r, Workload::F2Uncached, Config::PoolOnly),
    ) {
        let ratio = fast.mb_s.median / pool.mb_s.median;
        out.push(Target {
            text: format!(
                "uncached only, tracked {:.1} MB/s = {ratio:.3}x pool only (want >= 0.97x)",
                fast.mb_s.median
            ),
            met: ratio >= 0.97,
        });
    }
    out
}
