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
