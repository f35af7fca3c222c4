//! The loop-device experiment: seed 001's table (`seeds/001_bce926be3a1aae53.txt`) re-measured
//! through a real NBD client. One image is served in turn by `vecio nbd` (direct and buffered),
//! qemu-nbd and nbdkit, each a fresh process per measurement on a Unix socket, and read and
//! written by fio's `nbd` engine; fio's own io_uring on the file is the device's limit. Method,
//! figures and what is subtracted: docs/results.md ("loop").

pub mod cachecurve;
pub mod lab;
mod peers;
mod subjects;
pub mod tls;
mod view;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::experiment::options::{parse_size, Common, Source};
use crate::experiment::{Env, Experiment, Preset, Seed};
use crate::experiments::loopdev::cachecurve::{CachePoint, CacheSampler};
use crate::harness::diskstat::DiskProbe;
use crate::harness::fio::{FioEngine, FioJob, FioResult};
use crate::harness::meta::RunMeta;
use crate::harness::progress::Phase;
use crate::harness::rusage::Usage;
use crate::harness::scratch::ScratchFile;
use crate::harness::server::ServerProcess;
use crate::harness::stats::{median, paired_median, per, Summary};
use vecio_host::pagecache::{self, CacheSnapshot};
use vecio_host::peers::Peers;

pub use peers::peer_set;
pub use subjects::{Job, Subject};

/// Requests fio keeps in flight in every job.
pub const DEPTH: u32 = 32;

/// Smallest image the experiment accepts.
pub const MIN_SIZE: u64 = 8 << 20;

/// Options of `vecio bench loop`. The image's resident pages are counted for regular files
/// only (a block device shows 0).
#[derive(Args, Debug, Clone)]
pub struct LoopOptions {
    /// Where, how long, how often.
    #[command(flatten)]
    pub common: Common,
    /// The image to serve, if not a scratch file (its data is overwritten by the write jobs).
    #[command(flatten)]
    pub source: Source,
    /// Bytes of the image the jobs cover (k, M, G suffixes).
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    pub size: u64,
    /// Leave the experiment out (`bench all --no-fio`: fio is its client).
    #[arg(skip)]
    pub no_fio: bool,
    /// Also measure on real block devices in a guest kernel (scripts/lab, Debian's 6.12 under
    /// qemu): the kernel's loop device without and with direct I/O, vecio ublk, rublk's loop
    /// target and vecio nbd through nbd-client. Needs the source checkout (or VECIO_CHECKOUT)
    /// and qemu.
    #[arg(long)]
    pub lab: bool,
    /// Where qemu-nbd and nbdkit come from: DIR, a Debian trixie chroot built by
    /// `scripts/peers build` (today's qemu-nbd 10 and nbdkit 1.42), or `host` for the host's
    /// own. Default: $VECIO_PEERS_ROOT or /var/cache/vecio-peers/trixie when it is built
    /// (and the bench is root), else the host's, saying why.
    #[arg(long, value_name = "DIR|host")]
    pub peers_root: Option<PathBuf>,
}

/// The experiment.
pub struct Loop;

impl Experiment for Loop {
    const KEY: &'static str = "loop";
    const ABOUT: &'static str =
        "Loop device with direct and async I/O (2015): one image over NBD, \
        vecio nbd direct and buffered, qemu-nbd and nbdkit, driven by fio's nbd engine; then \
        vecio nbd and qemu-nbd plain and over TLS, read by nbdcopy and a libnbd driver";
    const FIELDS: &'static [&'static str] = &["cells", "servers"];
    const SEED: &'static Seed = &view::SEED;
    type Options = LoopOptions;
    type Report = LoopReport;

    fn command(cmd: clap::Command) -> clap::Command {
        cmd.mut_arg("file", |a| a.conflicts_with("dir"))
    }

    fn preset(o: &mut LoopOptions, p: &Preset) {
        o.common.dir = p.dir.clone();
        o.size = p.size(256 << 20, 1 << 30);
        o.common.runtime = p.runtime(0.7, 5.0);
        o.common.repeat = p.repeat(1, 3);
        o.no_fio = p.no_fio;
        o.lab = p.lab;
    }

    /// Five subjects on four jobs per repetition, 0.25 s each to start and stop a server, 3 s
    /// of idle starts, the fill, and the TLS rows.
    fn estimate(o: &LoopOptions) -> Duration {
        let steps = (o.common.repeat * 5 * 4) as f64;
        let secs = steps * (o.common.runtime.as_secs_f64() + 0.25) + 3.0 + o.size as f64 / 400e6;
        Duration::from_secs_f64(secs) + tls::estimate(o) + lab::estimate(o)
    }

    fn cannot_run(o: &LoopOptions) -> Option<String> {
        if o.no_fio {
            return Some("--no-fio was given and fio is its NBD client".into());
        }
        client_missing()
    }

    fn run(opts: &LoopOptions, env: &Env) -> Result<LoopReport> {
        run(opts, &env.vecio)
    }
}

/// One measurement of one subject on one job.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Sample {
    /// Requests per second.
    pub iops: f64,
    /// Throughput, MB/s (10^6 bytes per second).
    pub mb_s: f64,
    /// Requests completed.
    pub requests: f64,
    /// Bytes fio moved.
    pub bytes: f64,
    /// fio's CPU (user + system), percent of one CPU: the client's share of the machine.
    pub client_cpu_pct: f64,
    /// Mean requests in flight at the block device under the image (all I/O to it), where
    /// the device's statistics are readable.
    pub disk_queue: Option<f64>,
    /// The server's context switches (voluntary + involuntary, every thread), idle cost
    /// subtracted; `None` for fio on the file.
    pub server_ctx: Option<u64>,
    /// Server context switches per request.
    pub ctx_per_req: Option<f64>,
    /// Server CPU time (user + system) per request, microseconds.
    pub cpu_us_per_req: Option<f64>,
    /// Growth of the image's resident bytes in the page cache.
    pub image_growth: i64,
    /// Growth of the system's `Cached:`.
    pub cached_growth: i64,
    /// `image_growth` as a percentage of the bytes moved.
    pub image_growth_pct: f64,
    /// `cached_growth` as a percentage of the bytes moved.
    pub cached_growth_pct: f64,
}

impl Sample {
    /// The job's headline figure: IOPS for 4 KiB jobs, MB/s for 128 KiB ones.
    pub fn figure(&self, job: Job) -> f64 {
        job.pick(self.iops, self.mb_s)
    }
}

/// A subject's figures for one job over all repetitions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    /// Who served.
    pub subject: Subject,
    /// The subject's name.
    pub name: String,
    /// Which job.
    pub job: Job,
    /// The job's name.
    pub job_name: String,
    /// IOPS over the repetitions.
    pub iops: Summary,
    /// MB/s over the repetitions.
    pub mb_s: Summary,
    /// Every sample, one per repetition.
    pub samples: Vec<Sample>,
    /// The page cache over the last repetition's measurement, sampled while fio ran.
    #[serde(default)]
    pub cache_curve: Vec<CachePoint>,
}

impl Cell {
    /// The headline figure's summary (IOPS or MB/s).
    pub fn figure(&self) -> &Summary {
        self.job.pick(&self.iops, &self.mb_s)
    }

    /// Median over the samples of `f`, where it is defined.
    pub fn median_of(&self, f: impl Fn(&Sample) -> Option<f64>) -> Option<f64> {
        median(&self.samples.iter().filter_map(f).collect::<Vec<_>>())
    }
}

/// A subject left out, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Skipped {
    /// Who.
    pub subject: Subject,
    /// Why.
    pub reason: String,
}

/// A server's version and the cost of starting and stopping it idle.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerInfo {
    /// Which server.
    pub subject: Subject,
    /// Its `--version` line.
    pub version: String,
    /// What starting it, one probe connection and stopping it cost (subtracted from samples).
    pub idle: Usage,
}

/// Everything `vecio bench loop` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoopReport {
    /// The run's set-up.
    pub meta: RunMeta,
    /// Bytes of the image the jobs cover.
    pub size: u64,
    /// Seconds per measurement.
    pub runtime_s: f64,
    /// Repetitions.
    pub repeat: u32,
    /// Requests in flight in every job.
    pub depth: u32,
    /// The machine's memory (`MemTotal:`), bytes.
    pub mem_total: u64,
    /// Where the peer servers came from ("host", or "chroot DIR"), and why.
    #[serde(default)]
    pub peers: String,
    /// The servers measured.
    pub servers: Vec<ServerInfo>,
    /// Subjects left out.
    pub skipped: Vec<Skipped>,
    /// Every subject on every job.
    pub cells: Vec<Cell>,
    /// The TLS rows (vecio nbd and qemu-nbd, plain and over TLS, through libnbd's clients);
    /// absent from runs recorded before they existed.
    #[serde(default)]
    pub tls: tls::TlsReport,
    /// The rows measured on real block devices in the lab (`--lab`); absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<lab::LabReport>,
}

impl LoopReport {
    /// The cell of `subject` on `job`, if measured.
    pub fn cell(&self, subject: Subject, job: Job) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.subject == subject && c.job == job)
    }

    /// Median over the repetitions of `a`'s headline figure over `b`'s in the same repetition
    /// (both measured back to back).
    pub fn ratio(&self, job: Job, a: Subject, b: Subject) -> Option<f64> {
        let figures = |c: &Cell| c.samples.iter().map(|s| s.figure(job)).collect::<Vec<_>>();
        paired_median(&figures(self.cell(a, job)?), &figures(self.cell(b, job)?))
    }
}

/// Why the experiment cannot run here, if it cannot: fio with its `nbd` engine is the client.
pub fn client_missing() -> Option<String> {
    if crate::harness::fio::fio_version().is_none() {
        return Some("fio is not installed (it is the NBD client of this experiment)".into());
    }
    if !crate::harness::fio::has_nbd_engine() {
        return Some("the installed fio has no nbd engine (built without libnbd)".into());
    }
    None
}

/// Runs the experiment; `vecio` is the `vecio` binary whose `nbd` command is measured.
pub fn run(opts: &LoopOptions, vecio: &Path) -> Result<LoopReport> {
    if let Some(why) = client_missing() {
        bail!("{why}");
    }
    opts.source.check()?;
    if opts.size < MIN_SIZE {
        bail!("--size must be at least {} MiB", MIN_SIZE >> 20);
    }
    let checkout = opts.lab.then(lab::prepare).transpose()?;
    let (peers, peers_note) = peer_set(opts)?;
    let (dir, file) = (opts.common.dir.as_deref(), opts.source.file.clone());
    let scratch = ScratchFile::prepare_with_bar("preparing image", dir, file, opts.size)?;
    let image = scratch.path().to_path_buf();
    let size = opts.size.min(scratch.len()) / (1 << 20) * (1 << 20);
    // Unix socket paths are limited to 108 bytes: the sockets live in the system's temp dir.
    let sockets = crate::harness::cleanup::ScratchDir::new_in("loop", &std::env::temp_dir())
        .context("creating a temporary directory for the sockets")?;
    let mut lab = Lab {
        vecio,
        peers: &peers,
        image: &image,
        dir: sockets.path(),
        disk: DiskProbe::for_path(&image),
        started: 0,
    };
    let (servers, skipped) = lab.check_servers()?;
    let cells = lab.measure_table(&servers, size, opts)?;
    let tls = tls::run(opts, vecio, &peers, &scratch, sockets.path())?;
    let lab = checkout.map(|c| lab::run(&c, opts)).transpose()?;
    Ok(LoopReport {
        meta: RunMeta::collect(&image),
        size,
        runtime_s: opts.common.runtime.as_secs_f64(),
        repeat: opts.common.repeat,
        depth: DEPTH,
        mem_total: pagecache::meminfo_bytes("MemTotal").unwrap_or(0),
        peers: peers_note,
        servers,
        skipped,
        cells,
        tls,
        lab,
    })
}

/// Where the servers run: the image, the socket directory, the vecio binary, the peers.
struct Lab<'a> {
    vecio: &'a Path,
    peers: &'a Peers,
    image: &'a Path,
    dir: &'a Path,
    /// The block device under the image.
    disk: Option<DiskProbe>,
    /// Servers started so far (each gets a fresh socket name).
    started: u32,
}

impl Lab<'_> {
    /// Starts `subject`'s server on a fresh socket, requiring TLS with the certificates in
    /// `tls` if given; `None` for fio on the file.
    fn start(&mut self, subject: Subject, tls: Option<&Path>) -> Result<Option<ServerProcess>> {
        self.started += 1;
        let socket = self.dir.join(format!("{subject:?}-{}.sock", self.started));
        let Some(cmd) = subject.command(self.vecio, self.peers, self.image, &socket, tls) else {
            return Ok(None);
        };
        let log = self.dir.join(format!("{subject:?}.log"));
        ServerProcess::start(cmd, &socket, &log).map(Some)
    }

    /// What an idle server costs: started as [`Lab::start`] does and stopped at once.
    fn idle(&mut self, subject: Subject, tls: Option<&Path>) -> Result<Usage> {
        let server = self.start(subject, tls)?.context("no server process")?;
        server.stop()
    }

    /// Finds which servers can run: vecio's must; a peer that is not installed or does not
    /// start is skipped with the reason. Each is started and stopped idle once, which gives
    /// the cost subtracted from its samples.
    fn check_servers(&mut self) -> Result<(Vec<ServerInfo>, Vec<Skipped>)> {
        let (mut servers, mut skipped) = (Vec::new(), Vec::new());
        for subject in Subject::ALL
            .into_iter()
            .filter(|&s| s != Subject::FioDirect)
        {
            let peer = subject.peer_program();
            if let Some(p) = peer.filter(|p| !self.peers.installed(p)) {
                let reason = format!(
                    "{p} is not installed in the {} peers (scripts/setup or scripts/peers \
                     installs it)",
                    self.peers.name()
                );
                skipped.push(Skipped { subject, reason });
                continue;
            }
            match (self.idle(subject, None), peer) {
                (Ok(idle), _) => servers.push(ServerInfo {
                    subject,
                    version: self.version(subject),
                    idle,
                }),
                (Err(e), None) => return Err(e.context(format!("starting {}", subject.name()))),
                (Err(e), Some(_)) => {
                    let reason = format!("does not start: {e:#}");
                    skipped.push(Skipped { subject, reason });
                }
            }
        }
        Ok((servers, skipped))
    }

    /// The first line of `subject --version` (a peer's run from its set, named "(chroot)"
    /// when it comes from one).
    fn version(&self, subject: Subject) -> String {
        let peer = subject.peer_program();
        let mut cmd = match peer {
            Some(p) => self.peers.command(p, self.dir),
            None => Command::new(self.vecio),
        };
        let chroot = peer.is_some() && self.peers.is_chroot();
        let from = if chroot { " (chroot)" } else { "" };
        let out = cmd.arg("--version").output().ok();
        let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        let line = text.as_deref().and_then(|t| t.lines().next());
        line.map_or_else(|| "unknown".into(), |l| format!("{}{from}", l.trim()))
    }

    /// The table: every server that runs and fio on the file, on every job, `repeat` times
    /// under one progress bar; one cell per subject and job.
    fn measure_table(
        &mut self,
        servers: &[ServerInfo],
        size: u64,
        opts: &LoopOptions,
    ) -> Result<Vec<Cell>> {
        let mut subjects: Vec<(Subject, Option<Usage>)> =
            servers.iter().map(|s| (s.subject, Some(s.idle))).collect();
        subjects.push((Subject::FioDirect, None));
        let steps = opts.common.repeat as usize * subjects.len() * Job::ALL.len();
        let phase = Phase::timed("bench loop", opts.common.runtime * steps as u32);
        // Cells in table order: job by job, each subject.
        let keys: Vec<(Job, Subject, Option<Usage>)> = Job::ALL
            .iter()
            .flat_map(|&j| subjects.iter().map(move |&(s, idle)| (j, s, idle)))
            .collect();
        let mut samples = vec![Vec::new(); keys.len()];
        let mut curves = vec![Vec::new(); keys.len()];
        for _ in 0..opts.common.repeat {
            for (i, &(job, subject, idle)) in keys.iter().enumerate() {
                let (s, curve) = self
                    .measure(subject, job, size, opts.common.runtime, idle)
                    .with_context(|| format!("{} through {}", job.name(), subject.name()))?;
                samples[i].push(s);
                curves[i] = curve;
            }
        }
        phase.finish();
        let cells = keys.into_iter().zip(samples).zip(curves);
        let cells = cells.map(|(((job, subject, _), s), cache_curve)| Cell {
            subject,
            name: subject.name().to_string(),
            job,
            job_name: job.name().to_string(),
            iops: Summary::over(s.iter().map(|x| x.iops)),
            mb_s: Summary::over(s.iter().map(|x| x.mb_s)),
            samples: s,
            cache_curve,
        });
        Ok(cells.collect())
    }

    /// One measurement: flush and evict the image, start the server, run the fio job (the page
    /// cache sampled meanwhile), read the page cache, stop the server and read its usage.
    fn measure(
        &mut self,
        subject: Subject,
        job: Job,
        size: u64,
        runtime: Duration,
        idle: Option<Usage>,
    ) -> Result<(Sample, Vec<CachePoint>)> {
        pagecache::flush_and_evict(self.image)?;
        let before = CacheSnapshot::take(self.image)?;
        let server = self.start(subject, None)?;
        let mut fio = match &server {
            Some(s) => FioJob::nbd(&s.nbd_uri(), job.rw(), job.bs(), size),
            None => FioJob {
                ioengine: FioEngine::IoUring,
                ..FioJob::new(self.image, job.rw(), job.bs(), size)
            },
        };
        fio.iodepth = DEPTH;
        fio.runtime_s = runtime.as_secs_f64();
        let disk0 = self.disk.as_ref().and_then(DiskProbe::read);
        let sampler = CacheSampler::start(self.image, CacheSampler::interval_for(runtime));
        let result = fio.run();
        let curve = sampler.stop();
        let result = result?;
        let disk_queue = match (disk0, self.disk.as_ref().and_then(DiskProbe::read)) {
            // Over fio's own running time, which leaves out its start-up.
            (Some(a), Some(b)) if result.runtime_ms > 0 => {
                Some(b.queue_ms_since(&a) as f64 / result.runtime_ms as f64)
            }
            _ => None,
        };
        let growth = CacheSnapshot::take(self.image)?.growth_since(&before);
        let usage = server.map(|s| s.stop()).transpose()?;
        let usage = usage.map(|u| u.delta(&idle.unwrap_or_default()));
        Ok((sample(&result, growth, usage, disk_queue), curve))
    }
}

/// A sample from fio's report, the cache growth, the server's usage and the device's queue.
fn sample(
    r: &FioResult,
    growth: pagecache::CacheGrowth,
    usage: Option<Usage>,
    disk_queue: Option<f64>,
) -> Sample {
    let (requests, bytes) = (r.requests(), r.bytes());
    let per_req = |x: f64| per(x, requests);
    let pct = |x: i64| per(100.0 * x as f64, bytes);
    Sample {
        iops: r.iops(),
        mb_s: r.total_mb_s,
        requests,
        bytes,
        client_cpu_pct: r.usr_cpu_pct + r.sys_cpu_pct,
        disk_queue,
        server_ctx: usage.map(|u| u.ctx()),
        ctx_per_req: usage.map(|u| per_req(u.ctx() as f64)),
        cpu_us_per_req: usage.map(|u| per_req(u.cpu_s() * 1e6)),
        image_growth: growth.file_resident,
        cached_growth: growth.system_cached,
        image_growth_pct: pct(growth.file_resident),
        cached_growth_pct: pct(growth.system_cached),
    }
}
