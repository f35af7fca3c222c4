//! The writev experiment's report: its tables as text and its targets checked.

use super::*;
pub use crate::harness::target::Target;

fn fmt_mb(s: &Summary) -> String {
    if s.n > 1 {
        format!("{:.1} ±{:.0}%", s.median, s.relative_spread() * 100.0)
    } else {
        format!("{:.1}", s.median)
    }
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.2}x"))
}

/// The report as text: the throughput table, the CPU table and the targets.
pub fn render(report: &WritevReport) -> String {
    let mut out = String::new();
    let m = &report.meta;
    out += &format!(
        "readv/writev rework (seed 000): 32 KiB requests as 8 x 4 KiB segments, O_DIRECT, one at a time\n\
         {} on {} ({}), {} MiB covered, {:.1} s per measurement, {} repetition(s); {} UTC\n\
         MB/s = 10^6 bytes/s, median of the repetitions, ± relative standard deviation;\n\
         ratios are medians of per-repetition ratios (both sides measured back to back)\n\n",
        m.file, m.fs, m.device, report.size >> 20, report.runtime_s, report.repeat, m.date_utc
    );
    out += &throughput_table(report);
    out += "\nCPU per request (median): system µs, user µs, context switches; sys serial/uring beside the seed's sys ratio\n";
    out += &cpu_table(report);
    out += "\nTargets\n";
    for t in targets(report) {
        out += &format!("  [{}] {}\n", if t.met { " ok " } else { "MISS" }, t.text);
    }
    out
}

/// CPU per request per row: system and user µs, context switches, sys serial/uring.
fn cpu_table(report: &WritevReport) -> String {
    use EngineKind::*;
    let mut out = String::new();
    let mut c = Table::new([
        "row",
        "serial sys",
        "sync sys",
        "uring sys",
        "fio 4k sys",
        "serial user",
        "uring user",
        "serial ctx",
        "uring ctx",
        "sys serial/uring",
        "seed sys",
    ]);
    for r in &report.rows {
        let med = |k, f: &dyn Fn(&Sample) -> f64| r.engine(k).map(|e| e.median_of(f));
        let f1 = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
        let f2 = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        let sys_ratio = match (
            med(Serial, &|s| s.sys_us_per_req),
            med(Uring, &|s| s.sys_us_per_req),
        ) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        c.row([
            r.name.clone(),
            f1(med(Serial, &|s| s.sys_us_per_req)),
            f1(med(Sync, &|s| s.sys_us_per_req)),
            f1(med(Uring, &|s| s.sys_us_per_req)),
            f1(r.fio_4k.as_ref().map(|f| f.sys_us_per_req)),
            f1(med(Serial, &|s| s.user_us_per_req)),
            f1(med(Uring, &|s| s.user_us_per_req)),
            f2(med(Serial, &|s| s.ctx_per_req)),
            f2(med(Uring, &|s| s.ctx_per_req)),
            fmt_ratio(sys_ratio),
            r.seed_sys_ratio.map_or("-".into(), |v| format!("{v:.1}x")),
        ]);
    }
    out += &c.to_string();
    out
}

/// MB/s per row and engine beside fio, with the ratios and the seed's speed-up.
fn throughput_table(report: &WritevReport) -> String {
    use EngineKind::*;
    let mut out = String::new();
    let mut t = Table::new([
        "row",
        "serial",
        "sync",
        "uring",
        "fio 4k psync",
        "fio 32k psync",
        "uring/serial",
        "sync/serial",
        "seed",
        "uring/fio32k",
        "serial/fio4k",
    ]);
    for r in &report.rows {
        let eng = |k| r.engine(k).map_or("-".into(), |e| fmt_mb(&e.mb_s));
        let fio = |f: &Option<FioFigures>| f.as_ref().map_or("-".into(), |f| fmt_mb(&f.mb_s));
        let vs_fio = |k: EngineKind, f: &Option<FioFigures>| r.ratio_to_fio(k, f);
        t.row([
            r.name.clone(),
            eng(Serial),
            eng(Sync),
            eng(Uring),
            fio(&r.fio_4k),
            fio(&r.fio_32k),
            fmt_ratio(r.ratio(Uring, Serial)),
            fmt_ratio(r.ratio(Sync, Serial)),
            format!("{:.1}x", r.seed_speedup),
            fmt_ratio(vs_fio(Uring, &r.fio_32k)),
            fmt_ratio(vs_fio(Serial, &r.fio_4k)),
        ]);
    }
    out += &t.to_string();
    out
}

/// The targets, checked against a report. Targets needing fio are left out without it.
pub fn targets(report: &WritevReport) -> Vec<Target> {
    use EngineKind::*;
    let mut out = Vec::new();
    let row = |r: Row| report.rows.iter().find(|x| x.row == r);
    for r in [Row::RandomWritev, Row::RandomReadv] {
        let Some(f) = row(r) else { continue };
        let Some(fio) = f.fio_32k.as_ref().map(|x| x.mb_s.median) else {
            continue;
        };
        for k in [Uring, Sync] {
            if let Some(e) = f.engine(k) {
                let ratio = e.mb_s.median / fio;
                out.push(Target {
                    text: format!(
                        "{} {}: {:.2}x fio bs=32k psync (want >= 0.95x)",
                        r.name(),
                        k.name(),
                        ratio
                    ),
                    met: ratio >= 0.95,
                });
            }
        }
    }
    if let Some(f) = row(Row::RandomWritev) {
        if let Some(ratio) = f.ratio_to_fio(Serial, &f.fio_4k) {
            out.push(Target {
                text: format!(
                    "random writev serial: {ratio:.2}x fio bs=4k psync (want within 10%)"
                ),
                met: (ratio - 1.0).abs() <= 0.10,
            });
        }
        if let Some(ratio) = f.ratio(Uring, Serial) {
            out.push(Target {
                text: format!("random writev uring/serial: {ratio:.2}x (want >= 4x; seed 8.7x)"),
                met: ratio >= 4.0,
            });
        }
    }
    out
}
