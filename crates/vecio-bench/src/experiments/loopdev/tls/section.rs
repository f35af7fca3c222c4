//! The TLS rows in seed 001's section of the report: their table, their set-up line, and
//! their rows of the summary.

use super::render::{transport, MAX_COST, WANT_VS_QEMU};
use super::{TlsReport, JOBS};
use crate::experiments::loopdev::Subject;
use crate::report::fmt::{num, ratio_cell, summary_cell};
use crate::report::summary::{at_least, at_most, SummaryRow};
use crate::report::{Cell, DataTable};

/// The table: every server plain and over TLS on both jobs; `None` when nothing was measured.
pub(crate) fn table(t: &TlsReport) -> Option<DataTable> {
    if t.cells.is_empty() {
        return None;
    }
    let mut d = DataTable::new(
        format!(
            "TLS (issue 12): vecio nbd direct and qemu-nbd, plain and over TLS, {} in flight on \
             one connection, {} MiB image; IOPS (4 KiB) or MB/s (128 KiB), median ± relative \
             std dev",
            t.depth,
            t.image_size >> 20
        ),
        &[
            "job",
            "served by",
            "transport",
            "client",
            "figure",
            "TLS/plain",
            "vs qemu-nbd",
            "server CPU µs/req",
        ],
    );
    for (ci, c) in t.cells.iter().enumerate() {
        let (field, prec) = if c.job.in_iops() {
            ("iops", 0)
        } else {
            ("mb_s", 1)
        };
        let over_plain = c.tls.then(|| t.tls_over_plain(c.job, c.subject)).flatten();
        d.rows.push(vec![
            Cell::text(format!("{} ({})", c.job.name(), unit(c.job.in_iops()))),
            Cell::text(&c.name),
            Cell::text(transport(c)),
            Cell::text(&c.client),
            summary_cell(c.figure(), prec, format!("/loop/tls/cells/{ci}/{field}")),
            ratio_cell(over_plain),
            ratio_cell(t.ratio(c.job, (c.subject, c.tls), (Subject::QemuNbd, c.tls))),
            c.median_of(|s| s.cpu_us_per_req)
                .map_or(Cell::text("-"), |v| Cell::derived(v, format!("{v:.1}"))),
        ]);
    }
    Some(d)
}

fn unit(iops: bool) -> &'static str {
    if iops {
        "IOPS"
    } else {
        "MB/s"
    }
}

/// The set-up line of the TLS rows: how they were measured, or why they were not.
pub(crate) fn setup_line(t: &TlsReport) -> Option<(String, String)> {
    let text = match (&t.skipped, t.cells.is_empty()) {
        (Some(why), _) => format!("not measured: {why}"),
        (None, true) => return None,
        (None, false) => format!(
            "X.509 (openssl-made CA and server certificate; vecio nbd --tls=require, qemu-nbd \
             tls-creds-x509), Unix socket; 128k read: nbdcopy, whole {} MiB image to null:, \
             --connections=1 --requests={} --no-extents; 4k randread: libnbd's Python binding, \
             {} in flight, {:.1} s; clients: {}",
            t.image_size >> 20,
            t.depth,
            t.depth,
            t.runtime_s,
            t.clients.join("; ")
        ),
    };
    Some(("TLS rows".to_string(), text))
}

/// The summary rows: per TLS job, vecio over TLS against qemu-nbd over TLS, and what TLS
/// costs vecio beside what it costs qemu-nbd. None when the rows were not measured.
pub(crate) fn summary(t: &TlsReport) -> Vec<SummaryRow> {
    let seed = "001";
    let v = Subject::VecioDirect;
    let mut out = Vec::new();
    for job in JOBS {
        let fig = |s| t.cell(s, true, job).map(|c| c.figure().median);
        let (Some(vecio), Some(qemu)) = (fig(v), fig(Subject::QemuNbd)) else {
            continue;
        };
        let prec = if job.in_iops() { 0 } else { 1 };
        let ratio = t.ratio(job, (v, true), (Subject::QemuNbd, true));
        out.push(SummaryRow {
            seed,
            result: format!("{} over TLS: vecio vs qemu-nbd", job.name()),
            unit: if job.in_iops() { "IOPS" } else { "MB/s" },
            seed_figure: "-".into(),
            vecio: format!("{vecio:.prec$}"),
            peer: format!("{qemu:.prec$} qemu-nbd"),
            ratio,
            target: at_least(ratio, WANT_VS_QEMU, "x"),
        });
    }
    for job in JOBS {
        let cost = |s| t.tls_over_plain(job, s).map(|r| (1.0 - r) * 100.0);
        let Some(vecio) = cost(v) else {
            continue;
        };
        out.push(SummaryRow {
            seed,
            result: format!("{}: TLS cost, % of plain throughput", job.name()),
            unit: "%",
            seed_figure: "-".into(),
            vecio: num(Some(vecio), 0),
            peer: cost(Subject::QemuNbd).map_or("-".into(), |q| format!("{q:.0} qemu-nbd")),
            ratio: None,
            target: at_most(Some(vecio), MAX_COST * 100.0, "%"),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::loopdev::tls::fixture::report;

    #[test]
    fn table_points_into_results_json() {
        let t = report([100.0, 80.0], [90.0, 60.0]);
        let d = table(&t).expect("a table");
        assert_eq!(d.rows.len(), 8);
        let Cell::Num { json, .. } = &d.rows[7][4] else {
            panic!("a figure: {:?}", d.rows[7][4]);
        };
        assert_eq!(json.as_deref(), Some("/loop/tls/cells/7/iops/median"));
        assert!(table(&TlsReport::default()).is_none());
    }

    #[test]
    fn summary_rows_hold_one_unit_and_a_real_peer() {
        let rows = summary(&report([100.0, 80.0], [90.0, 60.0]));
        let units: Vec<&str> = rows.iter().map(|r| r.unit).collect();
        assert_eq!(units, ["MB/s", "IOPS", "%", "%"]);
        assert_eq!(rows[0].peer, "60.0 qemu-nbd");
        assert_eq!(
            (rows[2].vecio.as_str(), rows[2].peer.as_str()),
            ("20", "33 qemu-nbd")
        );
        assert!(rows
            .iter()
            .all(|r| r.target.as_ref().is_some_and(|v| v.met)));
        assert!(summary(&TlsReport::default()).is_empty());
        let setup = setup_line(&TlsReport::default());
        assert!(setup.is_none());
    }
}
