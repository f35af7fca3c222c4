//! fio as a peer: detect it, run one job as a child process, parse its JSON report.
//!
//! Every job runs `time_based` for its runtime, as one job with `group_reporting`, and never
//! recreates an existing file (`--allow_file_create=0`), so fio and vecio measure the same bytes
//! on disk. Throughput is reported in MB/s, where **1 MB = 10^6 bytes** (fio's `bw_bytes` divided
//! by 10^6), not MiB.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;

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
        match self {
            FioRw::Read => "read",
            FioRw::Write => "write",
            FioRw::RandRead => "randread",
            FioRw::RandWrite => "randwrite",
            FioRw::ReadWrite => "rw",
            FioRw::RandReadWrite => "randrw",
        }
    }
}

/// The fio I/O engine: fio's `--ioengine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FioEngine {
    /// `psync`: one pread/pwrite per I/O.
    Psync,
    /// `pvsync2`: one preadv2/pwritev2 per I/O.
    Pvsync2,
    /// `io_uring`: fio's io_uring engine.
    IoUring,
    /// `libaio`: Linux native AIO (io_submit).
    Libaio,
    /// `nbd`: fio's NBD client (libnbd); the server is named by `--uri` (see [`FioJob::nbd`]).
    Nbd,
}

impl FioEngine {
    /// The value fio expects after `--ioengine=`.
    pub fn as_str(self) -> &'static str {
        match self {
            FioEngine::Psync => "psync",
            FioEngine::Pvsync2 => "pvsync2",
            FioEngine::IoUring => "io_uring",
            FioEngine::Libaio => "libaio",
            FioEngine::Nbd => "nbd",
        }
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
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            bail!(
                "`{cmdline}` failed ({}): {}",
                out.status,
                first_lines(&stderr, &stdout)
            );
        }
        parse_output(&stdout)
            .with_context(|| format!("`{cmdline}`: {}", first_lines(&stderr, &stdout)))
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
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(8)
        .collect();
    if lines.is_empty() {
        "fio printed nothing".to_string()
    } else {
        lines.join(" | ")
    }
}

/// The installed fio's version string (`fio --version`, e.g. `fio-3.33`); `None` when fio is
/// absent or does not answer.
pub fn fio_version() -> Option<String> {
    let out = Command::new("fio").arg("--version").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!v.is_empty()).then_some(v)
}

/// True when the installed fio has the `nbd` engine (`fio --enghelp=nbd` succeeds).
pub fn has_nbd_engine() -> bool {
    Command::new("fio")
        .arg("--enghelp=nbd")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Latency of one direction of a job, in microseconds. Percentiles are of completion latency
/// (`clat`, submission to completion), the only one fio reports percentiles for by default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FioLatency {
    /// Mean total latency (`lat_ns.mean`: submission plus completion).
    pub mean_us: f64,
    /// Median completion latency.
    pub p50_us: Option<f64>,
    /// 99th percentile completion latency.
    pub p99_us: Option<f64>,
    /// 99.9th percentile completion latency.
    pub p999_us: Option<f64>,
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
    /// Read latency, when the job read anything.
    pub read_lat: Option<FioLatency>,
    /// Write latency, when the job wrote anything.
    pub write_lat: Option<FioLatency>,
    /// Utilisation of the first disk fio reports, in percent, when it reports one.
    pub disk_util_pct: Option<f64>,
    /// fio's version, from the report.
    pub fio_version: Option<String>,
}

/// Parses fio's `--output-format=json` report (the first job). Text before the JSON object,
/// such as warnings fio prints on stdout, is skipped; missing fields count as zero.
pub fn parse_output(stdout: &str) -> Result<FioResult> {
    let start = stdout.find('{').context("fio printed no JSON report")?;
    let mut stream = serde_json::Deserializer::from_str(&stdout[start..]).into_iter::<Value>();
    let doc = match stream.next() {
        Some(v) => v.context("fio's JSON report does not parse")?,
        None => bail!("fio printed no JSON report"),
    };
    let job = doc
        .get("jobs")
        .and_then(|j| j.get(0))
        .context("fio's JSON report has no jobs")?;
    let error = num(job, &["error"]);
    if error != 0.0 {
        bail!("fio job failed with error {error}");
    }
    let (read, write) = (direction(job, "read"), direction(job, "write"));
    Ok(FioResult {
        read_mb_s: read.mb_s,
        write_mb_s: write.mb_s,
        total_mb_s: read.mb_s + write.mb_s,
        read_iops: read.iops,
        write_iops: write.iops,
        usr_cpu_pct: num(job, &["usr_cpu"]),
        sys_cpu_pct: num(job, &["sys_cpu"]),
        ctx: num(job, &["ctx"]) as u64,
        runtime_ms: num(job, &["job_runtime"]) as u64,
        read_lat: read.lat,
        write_lat: write.lat,
        disk_util_pct: doc
            .get("disk_util")
            .and_then(|d| d.get(0))
            .and_then(|d| d.get("util"))
            .and_then(Value::as_f64),
        fio_version: doc
            .get("fio version")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// One direction (`read` or `write`) of a job, parsed.
struct Direction {
    mb_s: f64,
    iops: f64,
    lat: Option<FioLatency>,
}

/// Parses `job[name]`; throughput from `bw_bytes`, or from `bw` (KiB/s) in older fio.
fn direction(job: &Value, name: &str) -> Direction {
    let d = job.get(name).unwrap_or(&Value::Null);
    let bytes_s = match d.get("bw_bytes").and_then(Value::as_f64) {
        Some(b) => b,
        None => num(d, &["bw"]) * 1024.0,
    };
    let ios = num(d, &["total_ios"]);
    let lat = (ios > 0.0).then(|| FioLatency {
        mean_us: num(d, &["lat_ns", "mean"]) / 1000.0,
        p50_us: percentile_us(d, "50.000000"),
        p99_us: percentile_us(d, "99.000000"),
        p999_us: percentile_us(d, "99.900000"),
    });
    Direction {
        mb_s: bytes_s / 1e6,
        iops: num(d, &["iops"]),
        lat,
    }
}

/// `clat_ns.percentile[key]` in microseconds, if fio reported it.
fn percentile_us(d: &Value, key: &str) -> Option<f64> {
    d.get("clat_ns")?
        .get("percentile")?
        .get(key)?
        .as_f64()
        .map(|ns| ns / 1000.0)
}

/// The number at `path` under `v`, or 0 when absent or not a number.
fn num(v: &Value, path: &[&str]) -> f64 {
    path.iter()
        .try_fold(v, |v, key| v.get(*key))
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::scratch::ScratchFile;

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
        let lat = r.read_lat.context("read latency")?;
        assert_eq!(lat.p50_us, Some(78.336));
        assert_eq!(lat.p999_us, Some(1028.096));
        assert!((lat.mean_us - 80.0).abs() < 1e-9);
        assert_eq!(r.write_lat, None);
        assert_eq!(r.disk_util_pct, Some(65.85));
        assert_eq!(r.fio_version.as_deref(), Some("fio-3.33"));
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

    #[test]
    fn runs_fio_for_real() -> Result<()> {
        let Some(version) = fio_version() else {
            println!("skipped: fio is not installed (run scripts/setup)");
            return Ok(());
        };
        let scratch = ScratchFile::prepare(None, None, 8 << 20)?;
        let mut job = FioJob::new(scratch.path(), FioRw::RandReadWrite, 4096, 8 << 20);
        job.runtime_s = 0.3;
        job.rwmixread = Some(50);
        assert!(job.args().iter().any(|a| a == "--allow_file_create=0"));
        let r = job.run()?;
        assert!(r.read_mb_s > 0.0 && r.write_mb_s > 0.0, "{r:?}");
        assert!(r.read_iops > 0.0 && r.write_iops > 0.0, "{r:?}");
        assert!(r.read_lat.and_then(|l| l.p50_us).is_some(), "{r:?}");
        assert_eq!(r.fio_version.as_deref(), Some(version.as_str()));
        assert_eq!(std::fs::metadata(scratch.path())?.len(), scratch.len());
        Ok(())
    }

    #[test]
    fn fio_failure_carries_stderr() -> Result<()> {
        if fio_version().is_none() {
            println!("skipped: fio is not installed (run scripts/setup)");
            return Ok(());
        }
        // fio creates missing directories, but cannot create one below a regular file.
        let dir = tempfile::tempdir_in(".")?;
        let not_a_dir = dir.path().join("plain");
        std::fs::write(&not_a_dir, b"x")?;
        let mut job = FioJob::new(not_a_dir.join("x"), FioRw::Read, 4096, 1 << 20);
        job.runtime_s = 0.1;
        let err = match job.run() {
            Ok(r) => panic!("fio on a missing directory should fail, got {r:?}"),
            Err(e) => format!("{e:#}"),
        };
        assert!(err.contains("fio"), "{err}");
        assert!(
            err.contains("Not a directory"),
            "error should carry fio's stderr: {err}"
        );
        Ok(())
    }
}
