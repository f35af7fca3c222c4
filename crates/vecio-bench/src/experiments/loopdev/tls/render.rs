//! The TLS rows as text, and their targets.

use super::{TlsCell, TlsReport, JOBS};
use crate::experiments::loopdev::{Job, Subject};
use vecio_host::table::Table;
use crate::harness::target::Target;

/// vecio nbd over TLS against qemu-nbd over TLS: at least this ratio on every TLS job.
pub const WANT_VS_QEMU: f64 = 1.3;

/// What TLS may cost vecio nbd: at most this share of its plain figure on every TLS job.
pub const MAX_COST: f64 = 0.25;

/// The TLS rows as text: what ran, the table, or why the rows were skipped. Empty for a
/// report recorded before the rows existed.
pub fn render(r: &TlsReport) -> String {
    if let Some(why) = &r.skipped {
        return format!("\nTLS rows skipped: {why}\n");
    }
    if r.cells.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nTLS (issue 12): vecio nbd direct and qemu-nbd, each plain and over TLS (X.509 \
         certificates made with openssl, TLS required), one connection, {} in flight, {} MiB \
         image on a Unix socket\n\
         128k read: nbdcopy reads the whole image to null: (its time includes connecting and \
         the TLS handshake); 4k randread: a libnbd driver (python3) for {:.1} s\n\
         fio's nbd engine is not the client here: it refuses URIs naming local files such as \
         tls-certificates\n\
         clients: {}\n",
        r.depth,
        r.image_size >> 20,
        r.runtime_s,
        r.clients.join("; ")
    );
    out += &table(r).to_string();
    out
}

fn table(r: &TlsReport) -> Table {
    let mut t = Table::new([
        "job",
        "served by",
        "transport",
        "IOPS or MB/s",
        "TLS/plain",
        "vs qemu-nbd",
        "client CPU",
        "server CPU µs/req",
    ]);
    for c in &r.cells {
        let over_plain = c.tls.then(|| r.tls_over_plain(c.job, c.subject)).flatten();
        let vs_qemu = r.ratio(c.job, (c.subject, c.tls), (Subject::QemuNbd, c.tls));
        t.row([
            format!("{} ({})", c.job.name(), unit(c.job)),
            c.name.clone(),
            transport(c).to_string(),
            figure(c),
            fmt_ratio(over_plain),
            fmt_ratio(vs_qemu),
            format!("{:.0}%", c.median_of(|s| s.client_cpu_pct).unwrap_or(0.0)),
            format!("{:.1}", c.median_of(|s| s.cpu_us_per_req).unwrap_or(0.0)),
        ]);
    }
    t
}

/// `TLS` or `plain`.
pub fn transport(c: &TlsCell) -> &'static str {
    if c.tls {
        "TLS"
    } else {
        "plain"
    }
}

fn unit(job: Job) -> &'static str {
    if job.in_iops() {
        "IOPS"
    } else {
        "MB/s"
    }
}

fn figure(c: &TlsCell) -> String {
    let s = c.figure();
    let prec = if c.job.in_iops() { 0 } else { 1 };
    let v = format!("{:.prec$}", s.median);
    if s.n > 1 {
        format!("{v} ±{:.0}%", s.relative_spread() * 100.0)
    } else {
        v
    }
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.2}x"))
}

/// The TLS targets, for each TLS job: vecio nbd over TLS at least [`WANT_VS_QEMU`] times
/// qemu-nbd over TLS, and TLS costing vecio nbd at most [`MAX_COST`] of its plain figure.
/// None when the rows were not measured.
pub fn targets(r: &TlsReport) -> Vec<Target> {
    let v = Subject::VecioDirect;
    let mut out = Vec::new();
    for job in JOBS {
        let fig = |s, tls| r.cell(s, tls, job).map(|c| c.figure().median);
        let (u, prec) = (unit(job), if job.in_iops() { 0 } else { 1 });
        if let (Some(a), Some(q), Some(ratio)) = (
            fig(v, true),
            fig(Subject::QemuNbd, true),
            r.ratio(job, (v, true), (Subject::QemuNbd, true)),
        ) {
            out.push(Target {
                text: format!(
                    "{} over TLS: vecio nbd direct {a:.prec$} {u} = {ratio:.2}x qemu-nbd's \
                     {q:.prec$} (want >= {WANT_VS_QEMU}x)",
                    job.name()
                ),
                met: ratio >= WANT_VS_QEMU,
            });
        }
    }
    for job in JOBS {
        let fig = |tls| r.cell(v, tls, job).map(|c| c.figure().median);
        let (u, prec) = (unit(job), if job.in_iops() { 0 } else { 1 });
        if let (Some(t), Some(p), Some(share)) = (fig(true), fig(false), r.tls_over_plain(job, v)) {
            let cost = 1.0 - share;
            out.push(Target {
                text: format!(
                    "{}: TLS costs vecio nbd direct {:.0}% of its plain throughput ({t:.prec$} \
                     {u} over TLS, {p:.prec$} plain; want <= {:.0}%)",
                    job.name(),
                    cost * 100.0,
                    MAX_COST * 100.0
                ),
                met: cost <= MAX_COST,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::loopdev::tls::fixture::report;

    fn met(r: &TlsReport) -> Vec<bool> {
        targets(r).iter().map(|t| t.met).collect()
    }

    #[test]
    fn targets_follow_the_figures() {
        // vecio: 80 over TLS of 100 plain (20% cost); qemu-nbd 60 over TLS: 1.33x.
        assert_eq!(met(&report([100.0, 80.0], [90.0, 60.0])), [true; 4]);
        // 1.2x qemu-nbd, and 30% cost.
        assert_eq!(met(&report([100.0, 70.0], [90.0, 58.0])), [false; 4]);
        // A cost of exactly 25% is within the target.
        assert_eq!(met(&report([100.0, 75.0], [90.0, 50.0])), [true; 4]);
        assert!(targets(&TlsReport::skipped("no qemu-nbd")).is_empty());
    }

    #[test]
    fn renders_every_cell_or_the_reason() {
        let text = render(&report([100.0, 80.0], [90.0, 60.0]));
        for want in [
            "128k read (MB/s)",
            "4k randread (IOPS)",
            "TLS",
            "plain",
            "0.80x",
            "1.33x",
        ] {
            assert!(text.contains(want), "{want} missing from:\n{text}");
        }
        assert_eq!(text.matches("qemu-nbd none+io_uring").count(), 4, "{text}");
        let skipped = render(&TlsReport::skipped("nbdcopy is not installed"));
        assert!(skipped.contains("TLS rows skipped: nbdcopy is not installed"));
        assert!(render(&TlsReport::default()).is_empty());
    }
}
