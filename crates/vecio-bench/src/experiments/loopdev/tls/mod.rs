//! The loop experiment's TLS rows (issue 12): vecio nbd and qemu-nbd, each plain and over TLS
//! in the same run, read by libnbd's clients (docs/nbd.md, "What TLS costs").

#[cfg(test)]
pub(crate) mod fixture {
    //! Made-up TLS rows for the tests of their text, targets and report section.

    use super::{TlsCell, TlsReport, TlsSample, JOBS};
    use crate::experiments::loopdev::{Job, Subject};
    use crate::harness::stats::Summary;

    fn cell(subject: Subject, tls: bool, job: Job, figure: f64) -> TlsCell {
        let s = TlsSample {
            iops: figure,
            mb_s: figure,
            requests: 1000.0,
            bytes: 4096e3,
            seconds: 1.0,
            client_cpu_pct: 40.0,
            cpu_us_per_req: 12.0,
        };
        let summary = Summary::of(&[figure]).unwrap_or_default();
        TlsCell {
            subject,
            name: subject.name().into(),
            tls,
            job,
            job_name: job.name().into(),
            client: super::client_name(job).into(),
            iops: summary,
            mb_s: summary,
            samples: vec![s],
        }
    }

    /// vecio plain and TLS, qemu-nbd plain and TLS, the same on both jobs.
    pub(crate) fn report(vecio: [f64; 2], qemu: [f64; 2]) -> TlsReport {
        let mut cells = Vec::new();
        for job in JOBS {
            for (subject, f) in [(Subject::VecioDirect, vecio), (Subject::QemuNbd, qemu)] {
                cells.push(cell(subject, false, job, f[0]));
                cells.push(cell(subject, true, job, f[1]));
            }
        }
        TlsReport {
            skipped: None,
            image_size: 256 << 20,
            depth: 32,
            runtime_s: 1.0,
            clients: vec!["nbdcopy 1.14.2".into()],
            cells,
        }
    }
}

pub(crate) mod view;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::{Job, Lab, LoopOptions, Subject, DEPTH};
use crate::harness::certs::{self, Certificates};
use crate::harness::libnbd::{self, ClientRun, Endpoint};
use crate::harness::progress::Phase;
use crate::harness::rusage::Usage;
use crate::harness::scratch::ScratchFile;
use crate::harness::stats::{median, paired_median, per, Summary};
use vecio_host::pagecache;
use vecio_host::peers::Peers;

/// Largest image the TLS rows read: the reference figures are of a 256 MiB image.
pub const TLS_IMAGE: u64 = 256 << 20;

/// The servers of the TLS rows.
pub const SUBJECTS: [Subject; 2] = [Subject::VecioDirect, Subject::QemuNbd];

/// The jobs of the TLS rows: 128 KiB sequential reads (nbdcopy), 4 KiB random reads (the
/// libnbd driver).
pub const JOBS: [Job; 2] = [Job::Read128k, Job::RandRead4k];

/// One measurement of one server, plain or over TLS, on one job.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct TlsSample {
    /// Requests per second.
    pub iops: f64,
    /// Throughput, MB/s (10^6 bytes per second).
    pub mb_s: f64,
    /// Requests completed.
    pub requests: f64,
    /// Bytes read.
    pub bytes: f64,
    /// Seconds the client took (nbdcopy: its whole run, handshake included; the driver: first
    /// read to last completion).
    pub seconds: f64,
    /// The client's CPU (user + system), percent of one CPU.
    pub client_cpu_pct: f64,
    /// The server's CPU time (every thread, idle start and stop subtracted) per request, µs.
    pub cpu_us_per_req: f64,
}

impl TlsSample {
    /// The sample of a client run and the server's usage over it.
    fn of(run: &ClientRun, server: Usage) -> TlsSample {
        let (requests, bytes) = (run.requests as f64, run.bytes as f64);
        TlsSample {
            iops: per(requests, run.seconds),
            mb_s: per(bytes, run.seconds) / 1e6,
            requests,
            bytes,
            seconds: run.seconds,
            client_cpu_pct: 100.0 * per(run.cpu_s, run.seconds),
            cpu_us_per_req: per(server.cpu_s() * 1e6, requests),
        }
    }

    /// The job's headline figure: IOPS for 4 KiB reads, MB/s for 128 KiB ones.
    pub fn figure(&self, job: Job) -> f64 {
        job.pick(self.iops, self.mb_s)
    }
}

/// One server, plain or over TLS, on one job, over all repetitions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TlsCell {
    /// Who served.
    pub subject: Subject,
    /// The subject's name.
    pub name: String,
    /// Over TLS (else plain NBD).
    pub tls: bool,
    /// Which job.
    pub job: Job,
    /// The job's name.
    pub job_name: String,
    /// The client that read (`nbdcopy` or the libnbd driver).
    pub client: String,
    /// IOPS over the repetitions.
    pub iops: Summary,
    /// MB/s over the repetitions.
    pub mb_s: Summary,
    /// Every sample, one per repetition.
    pub samples: Vec<TlsSample>,
}

impl TlsCell {
    /// The headline figure's summary (IOPS or MB/s).
    pub fn figure(&self) -> &Summary {
        self.job.pick(&self.iops, &self.mb_s)
    }

    /// Median over the samples of `f`.
    pub fn median_of(&self, f: impl Fn(&TlsSample) -> f64) -> Option<f64> {
        median(&self.samples.iter().map(f).collect::<Vec<_>>())
    }
}

/// The TLS rows of `vecio bench loop`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TlsReport {
    /// Why the rows were not measured, if they were not.
    pub skipped: Option<String>,
    /// Bytes of the image read.
    pub image_size: u64,
    /// Requests in flight.
    pub depth: u32,
    /// Seconds per random-read measurement.
    pub runtime_s: f64,
    /// The clients' versions.
    pub clients: Vec<String>,
    /// Every server, plain and over TLS, on every job.
    pub cells: Vec<TlsCell>,
}

impl TlsReport {
    /// Rows left out, and why.
    fn skipped(why: impl Into<String>) -> TlsReport {
        TlsReport {
            skipped: Some(why.into()),
            ..TlsReport::default()
        }
    }

    /// The cell of `subject` (over TLS or not) on `job`, if measured.
    pub fn cell(&self, subject: Subject, tls: bool, job: Job) -> Option<&TlsCell> {
        self.cells
            .iter()
            .find(|c| c.subject == subject && c.tls == tls && c.job == job)
    }

    /// Median over the repetitions of `a`'s figure over `b`'s in the same repetition; each
    /// side is a server and whether it ran over TLS.
    pub fn ratio(&self, job: Job, a: (Subject, bool), b: (Subject, bool)) -> Option<f64> {
        let figures = |(s, tls)| -> Option<Vec<f64>> {
            let c = self.cell(s, tls, job)?;
            Some(c.samples.iter().map(|x| x.figure(job)).collect())
        };
        paired_median(&figures(a)?, &figures(b)?)
    }

    /// `subject`'s figure over TLS as a share of its plain figure (paired by repetition).
    pub fn tls_over_plain(&self, job: Job, subject: Subject) -> Option<f64> {
        self.ratio(job, (subject, true), (subject, false))
    }
}

/// Why the TLS rows cannot run here, if they cannot: qemu-nbd, openssl, nbdcopy or libnbd's
/// Python binding is missing.
pub fn tools_missing(peers: &Peers) -> Option<String> {
    if !peers.installed("qemu-nbd") {
        return Some(format!(
            "qemu-nbd is not installed in the {} peers (scripts/setup or scripts/peers installs it)",
            peers.name()
        ));
    }
    certs::openssl_missing().or_else(libnbd::clients_missing)
}

/// How long the TLS rows should take with `opts`: the measurements, the TLS image's fill
/// where the table's image is larger, and about 1.5 s for the certificates and the idle
/// starts. Zero when the rows cannot run here.
pub fn estimate(opts: &LoopOptions) -> Duration {
    let Ok((peers, _)) = super::peer_set(opts) else {
        return Duration::ZERO;
    };
    if tools_missing(&peers).is_some() {
        return Duration::ZERO;
    }
    let image = opts.size.min(TLS_IMAGE);
    let fill = if opts.size > TLS_IMAGE {
        TLS_IMAGE as f64 / 400e6
    } else {
        0.0
    };
    let setup = Duration::from_secs_f64(fill + 1.5);
    measure_estimate(opts.common.runtime, image, opts.common.repeat) + setup
}

/// How long the measurements should take: four random-read cells of `runtime`, four
/// sequential reads of the image at about 300 MB/s, and 0.3 s per cell to evict, start a
/// server and a client, and stop them; `repeat` times.
fn measure_estimate(runtime: Duration, image_len: u64, repeat: u32) -> Duration {
    let per = 4.0 * (runtime.as_secs_f64() + image_len as f64 / 300e6) + 8.0 * 0.3;
    Duration::from_secs_f64(per * f64::from(repeat))
}

/// Measures the TLS rows. `main` is the table's image, `dir` the run's socket directory;
/// qemu-nbd comes from `peers`.
pub(super) fn run(
    opts: &LoopOptions,
    vecio: &Path,
    peers: &Peers,
    main: &ScratchFile,
    dir: &Path,
) -> Result<TlsReport> {
    if let Some(why) = tools_missing(peers) {
        return Ok(TlsReport::skipped(why));
    }
    let python = libnbd::python_with_nbd().context("python3 with libnbd's binding")?;
    let (odir, bar) = (opts.common.dir.as_deref(), "preparing TLS image");
    let own = (main.len() > TLS_IMAGE)
        .then(|| ScratchFile::prepare_with_bar(bar, odir, None, TLS_IMAGE))
        .transpose()?;
    let image = own.as_ref().unwrap_or(main);
    let dir = dir.join("tls");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let certs = Certificates::make(&dir.join("certs")).context("making TLS certificates")?;
    let mut lab = Lab {
        vecio,
        peers,
        image: image.path(),
        dir: &dir,
        disk: None,
        started: 0,
    };
    // Every server, plain and over TLS, started and stopped once: the idle costs subtracted
    // from the samples. The rows are skipped when qemu-nbd does not start; vecio nbd must.
    let mut servers = Vec::new();
    for subject in SUBJECTS {
        for tls in [false, true] {
            let how = if tls { "over TLS" } else { "plain" };
            match lab.idle(subject, tls.then(|| certs.server_dir())) {
                Ok(idle) => servers.push((subject, tls, idle)),
                Err(e) if subject == Subject::QemuNbd => {
                    let why = format!("qemu-nbd does not start {how}: {e:#}");
                    return Ok(TlsReport::skipped(why));
                }
                Err(e) => return Err(e.context(format!("starting vecio nbd {how}"))),
            }
        }
    }
    // The cells in table order: job, server, plain before TLS.
    let mut cells: Vec<_> = JOBS
        .iter()
        .flat_map(|&job| {
            servers
                .iter()
                .map(move |&(s, tls, idle)| (s, tls, job, idle, Vec::new()))
        })
        .collect();
    let (runtime, repeat) = (opts.common.runtime, opts.common.repeat);
    let phase = Phase::timed(
        "bench loop TLS",
        measure_estimate(runtime, image.len(), repeat),
    );
    for _ in 0..repeat {
        for (subject, tls, job, idle, samples) in cells.iter_mut() {
            let how = if *tls { "over TLS" } else { "plain" };
            let to = tls.then_some(&certs);
            let sample = measure(
                &mut lab,
                image.len(),
                to,
                &python,
                (*subject, *job),
                *idle,
                runtime,
            )
            .with_context(|| format!("{} {how} through {}", job.name(), subject.name()))?;
            samples.push(sample);
        }
    }
    phase.finish();
    let cells = cells.into_iter().map(|(subject, tls, job, _, s)| TlsCell {
        subject,
        name: subject.name().to_string(),
        tls,
        job,
        job_name: job.name().to_string(),
        client: client_name(job).to_string(),
        iops: Summary::over(s.iter().map(|x| x.iops)),
        mb_s: Summary::over(s.iter().map(|x| x.mb_s)),
        samples: s,
    });
    Ok(TlsReport {
        skipped: None,
        image_size: image.len(),
        depth: DEPTH,
        runtime_s: runtime.as_secs_f64(),
        clients: libnbd::versions(&python),
        cells: cells.collect(),
    })
}

/// The client that reads for `job`.
pub fn client_name(job: Job) -> &'static str {
    job.pick("libnbd driver (python3)", "nbdcopy")
}

/// One measurement: evict the image, start the server (TLS required with `tls`), read with
/// the job's client, stop the server and read its usage.
fn measure(
    lab: &mut Lab,
    image_len: u64,
    tls: Option<&Certificates>,
    python: &Path,
    (subject, job): (Subject, Job),
    idle: Usage,
    runtime: Duration,
) -> Result<TlsSample> {
    pagecache::flush_and_evict(lab.image)?;
    let server = lab.start(subject, tls.map(|c| c.server_dir()))?;
    let server = server.context("no server process")?;
    let to = Endpoint {
        socket: server.socket(),
        tls: tls.map(|c| c.client_dir()),
    };
    let run = if job.in_iops() {
        libnbd::random_reads(python, to, job.bs(), DEPTH, runtime.as_secs_f64())?
    } else {
        libnbd::nbdcopy_read(to, image_len, job.bs(), DEPTH)?
    };
    let usage = server.stop()?.delta(&idle);
    Ok(TlsSample::of(&run, usage))
}
