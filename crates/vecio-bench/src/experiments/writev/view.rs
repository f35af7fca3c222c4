//! Seed 000, the readv/writev rework: its entry, section, targets, summary rows and figures.

use vecio::EngineKind::{self, Serial, Sync, Uring};

use super::Row::{RandomMixed, RandomReadv, RandomWritev, SequentialMixed, SequentialWritev};
use super::{FioFigures, RowFigures, Writev, WritevReport};
use crate::experiment::chart::{BarGroup, BarValue, Bars, Chart};
use crate::experiment::section::{at_least, div, Plot, PAIRED};
use crate::experiment::seed::claim;
use crate::experiment::table::{num, At, Cell, DataTable};
use crate::experiment::{Experiment, Metric, Section, Seed, SummaryRow, Target, View};
use crate::harness::setup::{lines, Setup};

/// Seed 000, as this experiment re-measures it.
pub(super) const SEED: Seed = Seed {
    id: "000",
    title: "readv/writev rework (2002): submit every segment, then wait on the lot",
    file: "000_7dcf0df396dbfddb.txt",
    date: "2002-09-11",
    author: "Andrew Morton, linux-kernel: \"[patch] readv/writev rework\"",
    headline: "O_DIRECT writev of 8 x 4 KiB segments, all submitted before waiting: random \
               8.7x, sequential 6.6x faster; readv sys time 5x lower",
    method: "32 KiB requests as 8 x 4 KiB O_DIRECT segments, one request at a time: vecio's \
             serial engine (one call per segment, waited on: the seed's before) against sync \
             (preadv2/pwritev2) and uring (one io_uring_enter), beside fio bs=4k and bs=32k psync.",
    claims: &[
        claim("Random writev 8.7 times faster", "8.7x"),
        claim("Sequential writev 6.6 times faster", "6.6x"),
        claim(
            "Random readv not faster, but sys time improves 5x",
            "sys 5.2x",
        ),
        claim("Random mixed I/O 5 times faster", "5.1x"),
        claim("Sequential mixed I/O 6.6 times faster", "6.6x"),
        claim(
            "Each raw readv or writev was for 32K (4k x 8).",
            "32 KiB = 8 x 4 KiB",
        ),
    ],
};

impl View for WritevReport {
    fn section(&self, setup: Option<&Setup>, s: &mut Section) {
        let workload = format!(
            "{} MiB covered, {:.1} s per measurement, {} repetition(s)",
            self.size >> 20,
            self.runtime_s,
            self.repeat
        );
        s.setup = lines(setup, &self.meta, vec![("workload", workload)], &["fio"]);
        s.tables = vec![throughput(self), cpu(self)];
        s.plots.push(Plot::new(
            "s000-throughput",
            "Throughput per engine, 32 KiB = 8 x 4 KiB O_DIRECT",
            "Bars: median MB/s, whiskers: lowest and highest repetition. Dark dashes: the serial \
             engine's figure times the seed's speedup, where the seed puts the batched engines.",
            Chart::Bars(bars(self)),
        ));
        s.targets = targets(self);
        s.notes.push(PAIRED.into());
    }

    /// The seed's results beside vecio's.
    fn summary(w: Option<&Self>) -> Vec<SummaryRow> {
        let seed = "000";
        let Some(w) = w else {
            let result = "random writev: uring/serial";
            return vec![SummaryRow::missing(seed, result, "x", "8.8")];
        };
        let rows = [RandomWritev, SequentialWritev, RandomMixed, SequentialMixed];
        let found = rows.into_iter().filter_map(|x| Some((x, w.row(x)?)));
        let mut out: Vec<SummaryRow> = found
            .map(|(x, f)| {
                let v = f.ratio(Uring, Serial);
                // fio's 32k/4k ratio is fio's own ratio, not a program measured beside vecio:
                // it stays in the section's table, not in the summary's peer column.
                let target = at_least(v, 4.0, "x").filter(|_| x == RandomWritev);
                let result = format!("{}: uring/serial", x.name());
                let seed_figure = format!("{:.1}", x.seed_speedup());
                SummaryRow::own(seed, result, "x", seed_figure, num(v, 2), target)
            })
            .collect();
        if let Some(f) = w.row(RandomReadv) {
            let v = div(f.sys_us(Serial), f.sys_us(Uring));
            let result = "random readv sys time: serial/uring".into();
            let seed_figure = format!("{:.1}", RandomReadv.seed_sys_ratio().unwrap_or(0.0));
            out.push(SummaryRow::own(
                seed,
                result,
                "x",
                seed_figure,
                num(v, 2),
                None,
            ));
        }
        out.extend(w.row(RandomWritev).map(|f| fio_row(f, seed)));
        out
    }

    /// writev's figures: MB/s per row and engine, and fio's.
    fn metrics(&self) -> Vec<Metric> {
        let mut out = Vec::new();
        for row in &self.rows {
            let fio = [("fio 4k", &row.fio_4k), ("fio 32k", &row.fio_32k)];
            let fio = fio
                .into_iter()
                .filter_map(|(job, f)| Some((job, &f.as_ref()?.mb_s)));
            let engines = row.engines.iter().map(|e| (e.engine.as_str(), &e.mb_s));
            for (who, mb_s) in engines.chain(fio) {
                let name = format!("{} / {who} MB/s", row.name);
                out.push(Metric::of(Writev::KEY, name, mb_s, true));
            }
        }
        out
    }
}

/// The engines in table order.
const ENGINES: [EngineKind; 3] = [Serial, Sync, Uring];
/// fio's jobs, in table order.
const FIO_SERIES: [&str; 2] = ["fio bs=4k psync", "fio bs=32k psync"];

fn throughput(w: &WritevReport) -> DataTable {
    let title = "Throughput, MB/s (10^6 bytes/s; median ± relative std dev of the repetitions)";
    let mut t = DataTable::over(title, "/writev/rows", &w.rows).col("row", |_, r| &r.name);
    for k in ENGINES {
        t = t.col(k.name(), move |at, r| {
            let ei = r.engines.iter().position(|e| e.engine == k.name())?;
            Some(at.summary(&r.engines[ei].mb_s, 1, &format!("engines/{ei}/mb_s")))
        });
    }
    let fio = |f: &Option<FioFigures>, at: &At, name: &str| {
        f.as_ref()
            .map(|f| at.summary(&f.mb_s, 1, &format!("{name}/mb_s")))
    };
    t.col(FIO_SERIES[0], |at, r| fio(&r.fio_4k, at, "fio_4k"))
        .col(FIO_SERIES[1], |at, r| fio(&r.fio_32k, at, "fio_32k"))
        .col("uring/serial", |_, r| Cell::ratio(r.ratio(Uring, Serial)))
        .col("sync/serial", |_, r| Cell::ratio(r.ratio(Sync, Serial)))
        .col("seed", |at, r| at.json(r.seed_speedup, 1, "seed_speedup"))
        .col("uring/fio 32k", |_, r| {
            Cell::ratio(r.ratio_to_fio(Uring, &r.fio_32k))
        })
        .done()
}

fn cpu(w: &WritevReport) -> DataTable {
    let title = "System CPU per request, µs (median), and the seed's system-time ratio";
    let mut t = DataTable::over(title, "/writev/rows", &w.rows).col("row", |_, r| &r.name);
    for k in ENGINES {
        t = t.col(k.name(), move |_, r| Cell::maybe(r.sys_us(k), 1));
    }
    t.col("fio bs=32k", |at, r| {
        let f = r.fio_32k.as_ref()?;
        Some(at.json(f.sys_us_per_req, 1, "fio_32k/sys_us_per_req"))
    })
    .col("serial/uring", |_, r| {
        Cell::ratio(div(r.sys_us(Serial), r.sys_us(Uring)))
    })
    .col("seed", |at, r| {
        Some(at.json(r.seed_sys_ratio?, 1, "seed_sys_ratio"))
    })
    .done()
}

fn bars(w: &WritevReport) -> Bars {
    let groups = w.rows.iter().map(|row| {
        let mark = row.mb(Serial).map(|s| s * row.seed_speedup);
        let engines = ENGINES.iter().map(|&k| {
            let v = BarValue::of(&row.engine(k)?.mb_s);
            Some(if k == Serial { v } else { v.marked(mark) })
        });
        let fio = [&row.fio_4k, &row.fio_32k].map(|f| f.as_ref().map(|f| BarValue::of(&f.mb_s)));
        BarGroup {
            label: row.name.clone(),
            values: engines.chain(fio).collect(),
        }
    });
    Bars {
        title: "readv/writev: MB/s per engine (seed 000)".into(),
        y_label: "MB/s".into(),
        series: ENGINES
            .iter()
            .map(|k| k.name().to_string())
            .chain(FIO_SERIES.map(String::from))
            .collect(),
        groups: groups.collect(),
        mark_label: "serial x the seed's speedup".into(),
    }
}

/// Random writev's MB/s through vecio's io_uring engine beside fio's 32k psync on the same file.
fn fio_row(f: &RowFigures, seed: &'static str) -> SummaryRow {
    let (v, peer) = (f.mb(Uring), f.fio_32k.as_ref().map(|x| x.mb_s.median));
    let r = div(v, peer);
    SummaryRow {
        seed,
        result: "random writev: uring vs fio 32k".into(),
        unit: "MB/s",
        seed_figure: "-".into(),
        vecio: num(v, 1),
        peer: peer.map_or("-".into(), |p| format!("{p:.1} fio 32k")),
        ratio: r,
        target: at_least(r, 0.95, "x"),
    }
}

/// The targets, checked against a report. Targets needing fio are left out without it.
pub(super) fn targets(report: &WritevReport) -> Vec<Target> {
    let mut out = Vec::new();
    for r in [RandomWritev, RandomReadv] {
        let Some(f) = report.row(r) else { continue };
        let Some(fio) = f.fio_32k.as_ref().map(|x| x.mb_s.median) else {
            continue;
        };
        for k in [Uring, Sync] {
            let Some(e) = f.engine(k) else { continue };
            let (ratio, row, engine) = (e.mb_s.median / fio, r.name(), k.name());
            let text = format!("{row} {engine}: {ratio:.2}x fio bs=32k psync (want >= 0.95x)");
            out.push(Target::new(text, ratio >= 0.95));
        }
    }
    let Some(f) = report.row(RandomWritev) else {
        return out;
    };
    if let Some(ratio) = f.ratio_to_fio(Serial, &f.fio_4k) {
        let text = format!("random writev serial: {ratio:.2}x fio bs=4k psync (want within 10%)");
        out.push(Target::new(text, (ratio - 1.0).abs() <= 0.10));
    }
    if let Some(ratio) = f.ratio(Uring, Serial) {
        let text = format!("random writev uring/serial: {ratio:.2}x (want >= 4x; seed 8.7x)");
        out.push(Target::new(text, ratio >= 4.0));
    }
    out
}
