//! Reads the guest's `loop-lab.jsonl` (written by `scripts/lab.d/bench/loop.sh`, one JSON object
//! a line, told apart by `kind`) into a [`LabReport`].

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use serde_json::Value;

use super::{Device, DeviceInfo, LabCell, LabReport, LabSample, LabSkip, JOBS};
use crate::experiments::loopdev::Job;
use crate::harness::fio;
use crate::harness::stats::{per, Summary};

/// One line of the guest's file.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    /// The guest and the run's sizes.
    Setup(Box<SetupLine>),
    /// A device as it was set up.
    Device(DeviceInfo),
    /// A device that could not be set up.
    Skipped(LabSkip),
    /// One measurement, with fio's JSON report.
    Sample(Box<SampleLine>),
    /// A measurement fio failed.
    Failed {
        device: Device,
        rw: String,
        bs: u64,
        reason: String,
    },
}

#[derive(Deserialize)]
struct SetupLine {
    kernel: String,
    cpus: u32,
    mem_kib: u64,
    size_mib: u64,
    runtime_s: f64,
    repeat: u32,
    depth: u32,
    fio: String,
    vecio: String,
    rublk: String,
}

#[derive(Deserialize)]
struct SampleLine {
    device: Device,
    rw: String,
    bs: u64,
    rep: u32,
    cached_kib_before: i64,
    cached_kib_after: i64,
    ctxt_before: u64,
    ctxt_after: u64,
    fio: Value,
}

/// The job fio ran with `--rw=rw --bs=bs`.
fn job(rw: &str, bs: u64) -> Result<Job> {
    JOBS.into_iter()
        .find(|j| j.rw().as_str() == rw && j.bs() == bs)
        .with_context(|| format!("no job of the lab rows is --rw={rw} --bs={bs}"))
}

impl SampleLine {
    fn sample(&self) -> Result<LabSample> {
        let r = fio::parse_output(&self.fio.to_string())?;
        let secs = r.runtime_ms as f64 / 1000.0;
        let requests = (r.read_iops + r.write_iops) * secs;
        let bytes = r.total_mb_s * 1e6 * secs;
        let cached_growth = (self.cached_kib_after - self.cached_kib_before) * 1024;
        let ctx = self.ctxt_after.saturating_sub(self.ctxt_before);
        Ok(LabSample {
            rep: self.rep,
            iops: r.read_iops + r.write_iops,
            mb_s: r.total_mb_s,
            requests,
            bytes,
            cached_growth,
            cached_growth_pct: 100.0 * per(cached_growth as f64, bytes),
            ctx,
            ctx_per_req: per(ctx as f64, requests),
            fio_ctx: r.ctx,
        })
    }
}

/// Parses the guest's lines. Every sample must parse; the cells come in job order, then
/// device order.
pub fn parse(text: &str) -> Result<LabReport> {
    let mut r = LabReport::default();
    let mut samples: Vec<(Device, Job, LabSample)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(raw)
            .with_context(|| format!("line {} of the guest's results does not parse", i + 1))?;
        match line {
            Line::Setup(g) => {
                (r.kernel, r.cpus, r.mem_kib) = (g.kernel, g.cpus, g.mem_kib);
                (r.size_mib, r.runtime_s) = (g.size_mib, g.runtime_s);
                (r.repeat, r.depth) = (g.repeat, g.depth);
                r.versions = [g.fio, g.vecio, g.rublk]
                    .into_iter()
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
                    .collect();
            }
            Line::Device(d) => r.devices.push(DeviceInfo {
                detail: d.detail.trim().to_string(),
                ..d
            }),
            Line::Skipped(skip) => r.skipped.push(skip),
            Line::Failed {
                device,
                rw,
                bs,
                reason,
            } => r.skipped.push(LabSkip {
                device,
                reason: format!("--rw={rw} --bs={bs}: {reason}"),
            }),
            Line::Sample(s) => {
                let sample = s
                    .sample()
                    .with_context(|| format!("line {} of the guest's results", i + 1))?;
                samples.push((s.device, job(&s.rw, s.bs)?, sample));
            }
        }
    }
    if r.kernel.is_empty() {
        bail!("the guest's results have no setup line");
    }
    for job in JOBS {
        for device in Device::ALL {
            let s: Vec<LabSample> = samples
                .iter()
                .filter(|(d, j, _)| *d == device && *j == job)
                .map(|(_, _, s)| *s)
                .collect();
            if s.is_empty() {
                continue;
            }
            r.cells.push(LabCell {
                device,
                name: device.name().to_string(),
                job,
                job_name: job.name().to_string(),
                iops: Summary::over(s.iter().map(|x| x.iops)),
                mb_s: Summary::over(s.iter().map(|x| x.mb_s)),
                samples: s,
            });
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guest's file from a real run (`vecio bench loop --lab`, see docs/results.md).
    const FIXTURE: &str = include_str!("../../../../tests/fixtures/loop-lab.jsonl");

    #[test]
    fn reads_a_real_guest_run() {
        let r = parse(FIXTURE).expect("the fixture parses");
        assert!(r.kernel.starts_with("6.12"), "{}", r.kernel);
        assert_eq!((r.depth, r.repeat), (32, 2));
        assert!(r.cells.iter().all(|c| c.samples.len() == 2));
        assert!(r.versions.iter().any(|v| v.starts_with("fio-")));
        for job in JOBS {
            for d in [Device::LoopBuffered, Device::LoopDio, Device::VecioUblk] {
                let c = r.cell(d, job).unwrap_or_else(|| panic!("{d:?} {job:?}"));
                let s = &c.samples[0];
                assert!(c.figure().median > 0.0 && s.requests > 0.0, "{d:?} {job:?}");
                assert!(
                    s.bytes >= s.requests * job.bs() as f64 * 0.99,
                    "{d:?} {job:?}"
                );
                assert!(s.ctx > 0 && s.ctx_per_req > 0.0, "{d:?} {job:?}");
            }
            assert_eq!(r.ratio(job, Device::LoopDio, Device::LoopDio), Some(1.0));
        }
        // Reads through the buffered loop device fill the page cache; direct I/O does not.
        let growth = |d| {
            r.cell(d, Job::Read128k)
                .map(|c| c.samples[0].cached_growth_pct)
        };
        assert!(growth(Device::LoopBuffered).is_some_and(|g| g > 50.0));
        assert!(growth(Device::LoopDio).is_some_and(|g| g < 10.0));
        let listed = r.devices.len() + r.skipped.len();
        assert!(listed >= Device::ALL.len(), "{listed}");
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert!(parse("").is_err(), "no setup line");
        assert!(parse("{\"kind\":\"sample\"}").is_err());
        let setup = r#"{"kind":"setup","kernel":"6.12.9","cpus":2,"mem_kib":1,"size_mib":8,"runtime_s":1,"repeat":1,"depth":32,"fio":"fio-3.33","vecio":"vecio 0.1","rublk":""}"#;
        let r = parse(setup).expect("a setup line alone");
        assert!(r.cells.is_empty() && r.versions.len() == 2);
        let failed = r#"{"kind":"failed","device":"rublk-loop","rw":"read","bs":131072,"reason":"fio exited 1: EIO"}"#;
        let r = parse(&format!("{setup}\n{failed}\n")).expect("a failed line");
        assert_eq!(r.skipped[0].device, Device::RublkLoop);
        assert!(r.skipped[0].reason.contains("EIO"));
        let odd = r#"{"kind":"sample","device":"loop-dio","rw":"trim","bs":4096,"rep":1,"cached_kib_before":0,"cached_kib_after":0,"ctxt_before":0,"ctxt_after":1,"fio":{"jobs":[{"read":{"iops":1.0,"bw_bytes":4096}}]}}"#;
        assert!(parse(&format!("{setup}\n{odd}\n")).is_err());
    }
}
