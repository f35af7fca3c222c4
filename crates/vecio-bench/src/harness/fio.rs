//! fio as a peer: detect it, run one job as a child process, parse its JSON report; MB/s is
//! 10^6 bytes/s (docs/report.md, "The harness").

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The I/O pattern of a job: fio's `--rw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FioRw {
    /// Sequential reads (`read`).
    Read,
    /// Sequential writes (`write`).
    Write,
    /// Random reads (`randread`).
    RandRead,
    /// Random writes (`randwrite`).
    RandWrite,
    /// Mixed sequential reads and writes (`rw`); see [`FioJob::rwmixread`].
    ReadWrite,
    /// Mixed random reads and writes (`randrw`); see [`FioJob::rwmixread`].
    RandReadWrite,
}

impl FioRw {
    /// The value fio expects after `--rw=`.
    pub fn as_str(self) -> &'static str {
        ["read", "write", "randread", "randwrite", "rw", "randrw"][self as usize]
    }
}

/// The fio I/O engine: fio's `--ioengine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FioEngine {
    /// `psync`: one pread/pwrite per I/O.
    Psync,
    /// `io_uring`: fio's io_uring engine.
    IoUring,
    /// `nbd`: fio's NBD client (libnbd); the server is named by `--uri` (see [`FioJob::nbd`]).
    Nbd,
}

impl FioEngine {
    /// The value fio expects after `--ioengine=`.
    pub fn as_str(self) -> &'static str {
        ["psync", "io_uring", "nbd"][self as usize]
    }
}

/// One fio job, described by the options vecio's experiments vary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FioJob {
    /// File or block device to run on (`--filename`). Colons are escaped for fio.
    pub filename: PathBuf,
    /// I/O pattern (`--rw`).
    pub rw: FioRw,
    /// Block size in bytes (`--bs`).
    pub bs: u64,
    /// Bytes of the file the job covers (`--size`).
    pub size: u64,
    /// Run time in seconds (`--runtime`, with `--time_based`); fractions become milliseconds.
    pub runtime_s: f64,
    /// I/O engine (`--ioengine`).
    pub ioengine: FioEngine,
    /// Requests kept in flight (`--iodepth`); only async engines use more than 1.
    pub iodepth: u32,
    /// O_DIRECT (`--direct=1`) or buffered (`--direct=0`).
    pub direct: bool,
    /// Percentage of reads in a mixed workload (`--rwmixread`).
    pub rwmixread: Option<u32>,
    /// For random patterns: a new random offset only every N I/Os, the I/Os between going
    /// sequentially on from it (`--rw=randwrite:N --rw_sequencer=sequential`). With N = 8 and
    /// bs=4k this is eight 4 KiB calls per random 32 KiB block: one vectored request's
    /// segments issued one by one.
    pub ios_per_offset: Option<u32>,
    /// More fio options, passed verbatim after the others, e.g. `--fsync=1`.
    pub extra: Vec<String>,
}

impl FioJob {
    /// A job on `filename` with defaults: 5 s, `psync`, iodepth 1, direct, no extra options.
    pub fn new(filename: impl Into<PathBuf>, rw: FioRw, bs: u64, size: u64) -> FioJob {
        FioJob {
            filename: filename.into(),
            rw,
            bs,
            size,
            runtime_s: 5.0,
            ioengine: FioEngine::Psync,
            iodepth: 1,
            direct: true,
            rwmixread: None,
            ios_per_offset: None,
            extra: Vec::new(),
        }
    }

    /// A job through fio's `nbd` engine against the NBD server at `uri` (e.g.
    /// `nbd+unix:///?socket=/run/s.sock`), on the export's first `size` bytes. The file name is
    /// only a label: the engine never opens a file. Not `--direct`: the engine has no page
    /// cache of its own to bypass.
    pub fn nbd(uri: &str, rw: FioRw, bs: u64, size: u64) -> FioJob {
        let mut job = FioJob::new("nbd", rw, bs, size);
        job.ioengine = FioEngine::Nbd;
        job.direct = false;
        job.extra.push(format!("--uri={uri}"));
        job
    }

    /// The fio command-line arguments for this job (without the `fio` program name).
    pub fn args(&self) -> Vec<String> {
        let runtime_ms = (self.runtime_s * 1000.0).round().max(1.0) as u64;
        let mut args = vec![
            "--output-format=json".to_string(),
            "--name=vecio".to_string(),
            format!("--filename={}", escape_filename(&self.filename)),
            match self.ios_per_offset {
                Some(n) => format!("--rw={}:{n}", self.rw.as_str()),
                None => format!("--rw={}", self.rw.as_str()),
            },
            format!("--bs={}", self.bs),
            format!("--size={}", self.size),
            format!("--runtime={runtime_ms}ms"),
            "--time_based".to_string(),
            "--group_reporting".to_string(),
            "--numjobs=1".to_string(),
            format!("--ioengine={}", self.ioengine.as_str()),
            format!("--iodepth={}", self.iodepth),
            format!("--direct={}", u8::from(self.direct)),
        ];
        if self.ios_per_offset.is_some() {
            args.push("--rw_sequencer=sequential".to_string());
        }
        if let Some(mix) = self.rwmixread {
            args.push(format!("--rwmixread={mix}"));
        }
        if self.filename.exists() {
            args.push("--allow_file_create=0".to_string());
        }
        args.extend(self.extra.iter().cloned());
        args
    }

    /// Runs the job and parses its report. Fails, with fio's stderr in the message, when fio
    /// is missing, exits non-zero, reports a job error, or prints no parsable JSON.
    pub fn run(&self) -> Result<FioResult> {
        let args = self.args();
        let cmdline = format!("fio {}", args.join(" "));
        let mut cmd = Command::new("fio");
        // fio writes to the scratch file: it must not outlive a stopped bench.
        crate::harness::cleanup::die_with_parent(&mut cmd);
        let out = cmd
            .args(&args)
            .output()
            .with_context(|| format!("cannot start `{cmdline}` (is fio installed?)"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let why = || first_lines(&String::from_utf8_lossy(&out.stderr), &stdout);
        if !out.status.success() {
            bail!("`{cmdline}` failed ({}): {}", out.status, why());
        }
        parse_output(&stdout).with_context(|| format!("`{cmdline}`: {}", why()))
    }
}

/// fio treats `:` in a file name as a separator between files; a literal one is `\:`.
fn escape_filename(path: &std::path::Path) -> String {
    path.to_string_lossy().replace(':', "\\:")
}

/// The start of fio's diagnostics for an error message: stderr, or stdout when stderr is empty.
fn first_lines(stderr: &str, stdout: &str) -> String {
    let text = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    };
    let lines = crate::harness::server::diagnostics(text, 8, false);
    if lines.is_empty() {
        "fio printed nothing".to_string()
    } else {
        lines
    }
}

/// The installed fio's version string (`fio --version`, e.g. `fio-3.33`); `None` when fio is
/// absent or does not answer.
pub fn fio_version() -> Option<String> {
    crate::harness::server::first_line("fio", &["--version"])
}

/// True when the installed fio has the `nbd` engine (`fio --enghelp=nbd` succeeds).
pub fn has_nbd_engine() -> bool {
    Command::new("fio")
        .arg("--enghelp=nbd")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What fio measured for one job. MB/s is 10^6 bytes per second.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FioResult {
    /// Read throughput in MB/s (10^6 bytes/s).
    pub read_mb_s: f64,
    /// Write throughput in MB/s (10^6 bytes/s).
    pub write_mb_s: f64,
    /// Read plus write throughput in MB/s (10^6 bytes/s).
    pub total_mb_s: f64,
    /// Read operations per second.
    pub read_iops: f64,
    /// Write operations per second.
    pub write_iops: f64,
    /// User CPU of the job, percent of one CPU over its runtime.
    pub usr_cpu_pct: f64,
    /// System CPU of the job, percent of one CPU over its runtime.
    pub sys_cpu_pct: f64,
    /// Context switches of the job.
    pub ctx: u64,
    /// How long the job ran, in milliseconds (`job_runtime`).
    pub runtime_ms: u64,
}

impl FioResult {
    /// Reads and writes per second.
    pub fn iops(&self) -> f64 {
        self.read_iops + self.write_iops
    }

    /// Seconds the job ran.
    pub fn secs(&self) -> f64 {
        self.runtime_ms as f64 / 1000.0
    }

    /// Requests completed.
    pub fn requests(&self) -> f64 {
        self.iops() * self.secs()
    }

    /// Bytes moved.
    pub fn bytes(&self) -> f64 {
        self.total_mb_s * 1e6 * self.secs()
    }
}

/// The fields of fio's JSON report vecio reads; missing ones count as zero.
#[derive(Deserialize)]
struct Report {
    jobs: Vec<Job>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Job {
    error: f64,
    job_runtime: f64,
    usr_cpu: f64,
    sys_cpu: f64,
    ctx: f64,
    read: Direction,
    write: Direction,
}

/// One direction of a job: throughput in `bw_bytes`, or `bw` (KiB/s) in older fio.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Direction {
    bw_bytes: Option<f64>,
    bw: f64,
    iops: f64,
}

impl Direction {
    fn mb_s(&self) -> f64 {
        self.bw_bytes.unwrap_or(self.bw * 1024.0) / 1e6
    }
}

/// Parses fio's `--output-format=json` report (the first job). Text before the JSON object,
/// such as warnings fio prints on stdout, is skipped.
pub fn parse_output(stdout: &str) -> Result<FioResult> {
    let start = stdout.find('{').context("fio printed no JSON report")?;
    let mut stream = serde_json::Deserializer::from_str(&stdout[start..]).into_iter::<Report>();
    let report = (stream.next().context("fio printed no JSON report")?)
        .context("fio's JSON report does not parse")?;
    let job = report
        .jobs
        .first()
        .context("fio's JSON report has no jobs")?;
    if job.error != 0.0 {
        bail!("fio job failed with error {}", job.error);
    }
    let (read, write) = (job.read.mb_s(), job.write.mb_s());
    Ok(FioResult {
        read_mb_s: read,
        write_mb_s: write,
        total_mb_s: read + write,
        read_iops: job.read.iops,
        write_iops: job.write.iops,
        usr_cpu_pct: job.usr_cpu,
        sys_cpu_pct: job.sys_cpu,
        ctx: job.ctx as u64,
        runtime_ms: job.job_runtime as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = r#"fio: some warning
{
  "fio version" : "fio-3.33",
  "jobs" : [ {
      "jobname" : "vecio", "error" : 0, "job_runtime" : 500,
      "usr_cpu" : 6.0, "sys_cpu" : 30.4, "ctx" : 5007,
      "read" : { "bw_bytes" : 20414594, "iops" : 4984.03, "total_ios" : 2492,
                 "lat_ns" : { "mean" : 80000.0 },
                 "clat_ns" : { "percentile" : { "50.000000" : 78336, "99.000000" : 181248,
                                                "99.900000" : 1028096 } } },
      "write" : { "bw" : 1000, "iops" : 250.0, "total_ios" : 0 }
  } ],
  "disk_util" : [ { "name" : "vda", "util" : 65.85 } ]
}"#;

    #[test]
    fn parses_report_with_leading_text() -> Result<()> {
        let r = parse_output(REPORT)?;
        assert!((r.read_mb_s - 20.414594).abs() < 1e-9);
        assert!(
            (r.write_mb_s - 1.024).abs() < 1e-9,
            "bw is KiB/s: {}",
            r.write_mb_s
        );
        assert!((r.total_mb_s - r.read_mb_s - r.write_mb_s).abs() < 1e-9);
        assert_eq!((r.ctx, r.runtime_ms), (5007, 500));
        assert_eq!((r.read_iops, r.write_iops), (4984.03, 250.0));
        Ok(())
    }

    #[test]
    fn rejects_bad_reports() {
        assert!(parse_output("no json here").is_err());
        assert!(parse_output("{\"jobs\": []}").is_err());
        assert!(parse_output("{\"jobs\": [{\"error\": 5}]}").is_err());
    }

    #[test]
    fn args_describe_the_job() {
        let mut job = FioJob::new("/tmp/a:b", FioRw::RandReadWrite, 4096, 1 << 20);
        job.runtime_s = 0.25;
        job.ioengine = FioEngine::IoUring;
        job.iodepth = 8;
        job.rwmixread = Some(70);
        job.extra = vec!["--fsync=1".into()];
        let args = job.args();
        for want in [
            "--filename=/tmp/a\\:b",
            "--rw=randrw",
            "--bs=4096",
            "--runtime=250ms",
            "--time_based",
            "--group_reporting",
            "--ioengine=io_uring",
            "--iodepth=8",
            "--direct=1",
            "--rwmixread=70",
        ] {
            assert!(
                args.iter().any(|a| a == want),
                "{want} missing from {args:?}"
            );
        }
        assert_eq!(args.last().map(String::as_str), Some("--fsync=1"));
        assert!(!args.iter().any(|a| a.starts_with("--allow_file_create")));
    }

    #[test]
    fn nbd_job_names_the_server() {
        let job = FioJob::nbd(
            "nbd+unix:///?socket=/t/s.sock",
            FioRw::RandRead,
            4096,
            1 << 20,
        );
        let args = job.args();
        for want in [
            "--ioengine=nbd",
            "--direct=0",
            "--uri=nbd+unix:///?socket=/t/s.sock",
        ] {
            assert!(
                args.iter().any(|a| a == want),
                "{want} missing from {args:?}"
            );
        }
    }
}
