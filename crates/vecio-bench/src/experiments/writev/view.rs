//! Seed 000, the readv/writev rework: its entry, section, targets, summary rows and figures.

use vecio::EngineKind;

use super::{FioFigures, Row, RowFigures, Writev, WritevReport};
use crate::experiment::chart::{BarGroup, BarValue, Bars, Chart};
use crate::experiment::section::{at_least, div, Plot};
use crate::experiment::seed::claim;
use crate::experiment::table::{num, Cell, DataTable};
use crate::experiment::{Experiment, Metric, Section, Seed, SummaryRow, Target, View};
use crate::harness::setup::{lines, Setup};
use crate::harness::stats::median;

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
        let w = self;
        let extra = vec![(
            "workload".to_string(),
            format!(
                "{} MiB covered, {:.1} s per measurement, {} repetition(s)",
                w.size >> 20,
                w.runtime_s,
                w.repeat
            ),
        )];
        s.setup = lines(setup, &w.meta, extra, &["fio"]);
        s.tables.push(throughput(w));
        s.tables.push(cpu(w));
        s.plots.push(Plot::new(
            "s000-throughput",
            "Throughput per engine, 32 KiB = 8 x 4 KiB O_DIRECT",
            "Bars: median MB/s, whiskers: lowest and highest repetition. Dark dashes: the serial \
             engine's figure times the seed's speedup, where the seed puts the batched engines.",
            Chart::Bars(bars(w)),
        ));
        s.targets = targets(w);
        s.notes.push(
            "Ratios are medians of per-repetition ratios (both sides measured back to back)."
                .into(),
        );
    }

    /// The seed's results beside vecio's.
    fn summary(w: Option<&Self>) -> Vec<SummaryRow> {
        let seed = "000";
        let Some(w) = w else {
            return vec![SummaryRow::missing(
                seed,
                "random writev: uring/serial",
                "x",
                "8.8",
            )];
        };
        let row = |x: Row| w.rows.iter().find(|f| f.row == x);
        let mut out = Vec::new();
        for x in [
            Row::RandomWritev,
            Row::SequentialWritev,
            Row::RandomMixed,
            Row::SequentialMixed,
        ] {
            let Some(f) = row(x) else { continue };
            let v = f.ratio(EngineKind::Uring, EngineKind::Serial);
            // fio's 32k/4k ratio is fio's own ratio, not a program measured beside vecio: it
            // stays in the section's table, not in the summary's peer column.
            let target = (x == Row::RandomWritev)
                .then(|| at_least(v, 4.0, "x"))
                .flatten();
            out.push(SummaryRow::own(
                seed,
                format!("{}: uring/serial", x.name()),
                "x",
                format!("{:.1}", x.seed_speedup()),
                num(v, 2),
                target,
            ));
        }
        if let Some(f) = row(Row::RandomReadv) {
            let v = div(sys_us(f, EngineKind::Serial), sys_us(f, EngineKind::Uring));
            out.push(SummaryRow::own(
                seed,
                "random readv sys time: serial/uring".into(),
                "x",
                format!("{:.1}", Row::RandomReadv.seed_sys_ratio().unwrap_or(0.0)),
                num(v, 2),
                None,
            ));
        }
        out.extend(row(Row::RandomWritev).map(|f| fio_row(f, seed)));
        out
    }

    /// writev's figures: MB/s per row and engine, and fio's.
    fn metrics(&self) -> Vec<Metric> {
        let w = self;
        let mut out = Vec::new();
        for row in &w.rows {
            for e in &row.engines {
                let name = format!("{} / {} MB/s", row.name, e.engine);
                out.push(Metric::of(Writev::KEY, name, &e.mb_s, true));
            }
            for (job, f) in [("fio 4k", &row.fio_4k), ("fio 32k", &row.fio_32k)] {
                if let Some(f) = f {
                    let name = format!("{} / {job} MB/s", row.name);
                    out.push(Metric::of(Writev::KEY, name, &f.mb_s, true));
                }
            }
        }
        out
    }
}

/// The engines in table order.
const ENGINES: [EngineKind; 3] = [EngineKind::Serial, EngineKind::Sync, EngineKind::Uring];

fn engine_index(row: &RowFigures, k: EngineKind) -> Option<usize> {
    row.engines.iter().position(|e| e.engine == k.name())
}

fn throughput(w: &WritevReport) -> DataTable {
    let mut t = DataTable::new(
        "Throughput, MB/s (10^6 bytes/s; median ± relative std dev of the repetitions)",
        &[
            "row",
            "serial",
            "sync",
            "uring",
            "fio bs=4k psync",
            "fio bs=32k psync",
            "uring/serial",
            "sync/serial",
            "seed",
            "uring/fio 32k",
        ],
    );
    for (ri, row) in w.rows.iter().enumerate() {
        let base = format!("/writev/rows/{ri}");
        let mut cells = vec![Cell::text(&row.name)];
        for k in ENGINES {
            cells.push(match engine_index(row, k) {
                Some(ei) => Cell::summary(
                    &row.engines[ei].mb_s,
                    1,
                    format!("{base}/engines/{ei}/mb_s"),
                ),
                None => Cell::text("-"),
            });
        }
        for (name, f) in [("fio_4k", &row.fio_4k), ("fio_32k", &row.fio_32k)] {
            cells.push(match f {
                Some(f) => Cell::summary(&f.mb_s, 1, format!("{base}/{name}/mb_s")),
                None => Cell::text("-"),
            });
        }
        cells.push(Cell::ratio(
            row.ratio(EngineKind::Uring, EngineKind::Serial),
        ));
        cells.push(Cell::ratio(row.ratio(EngineKind::Sync, EngineKind::Serial)));
        cells.push(Cell::json(
            row.seed_speedup,
            1,
            format!("{base}/seed_speedup"),
        ));
        cells.push(Cell::ratio(
            row.ratio_to_fio(EngineKind::Uring, &row.fio_32k),
        ));
        t.rows.push(cells);
    }
    t
}

/// Median system µs per request of an engine.
fn sys_us(row: &RowFigures, k: EngineKind) -> Option<f64> {
    let e = &row.engines[engine_index(row, k)?];
    median(
        &e.samples
            .iter()
            .map(|s| s.sys_us_per_req)
            .collect::<Vec<_>>(),
    )
}

fn cpu(w: &WritevReport) -> DataTable {
    let mut t = DataTable::new(
        "System CPU per request, µs (median), and the seed's system-time ratio",
        &[
            "row",
            "serial",
            "sync",
            "uring",
            "fio bs=32k",
            "serial/uring",
            "seed",
        ],
    );
    for (ri, row) in w.rows.iter().enumerate() {
        let mut cells = vec![Cell::text(&row.name)];
        for k in ENGINES {
            cells.push(match sys_us(row, k) {
                Some(v) => Cell::derived(v, format!("{v:.1}")),
                None => Cell::text("-"),
            });
        }
        cells.push(match &row.fio_32k {
            Some(f) => Cell::json(
                f.sys_us_per_req,
                1,
                format!("/writev/rows/{ri}/fio_32k/sys_us_per_req"),
            ),
            None => Cell::text("-"),
        });
        cells.push(Cell::ratio(div(
            sys_us(row, EngineKind::Serial),
            sys_us(row, EngineKind::Uring),
        )));
        cells.push(match row.seed_sys_ratio {
            Some(v) => Cell::json(v, 1, format!("/writev/rows/{ri}/seed_sys_ratio")),
            None => Cell::text("-"),
        });
        t.rows.push(cells);
    }
    t
}

fn bars(w: &WritevReport) -> Bars {
    let groups = w
        .rows
        .iter()
        .map(|row| {
            let serial = engine_index(row, EngineKind::Serial).map(|i| row.engines[i].mb_s.median);
            let mark = serial.map(|s| s * row.seed_speedup);
            let mut values: Vec<Option<BarValue>> = ENGINES
                .iter()
                .map(|&k| {
                    let e = &row.engines[engine_index(row, k)?];
                    let v = BarValue::of(&e.mb_s);
                    Some(if k == EngineKind::Serial {
                        v
                    } else {
                        v.marked(mark)
                    })
                })
                .collect();
            let fio = |f: &Option<FioFigures>| f.as_ref().map(|f| BarValue::of(&f.mb_s));
            values.push(fio(&row.fio_4k));
            values.push(fio(&row.fio_32k));
            BarGroup {
                label: row.name.clone(),
                values,
            }
        })
        .collect();
    Bars {
        title: "readv/writev: MB/s per engine (seed 000)".into(),
        y_label: "MB/s".into(),
        series: [
            "serial",
            "sync",
            "uring",
            "fio bs=4k psync",
            "fio bs=32k psync",
        ]
        .map(String::from)
        .to_vec(),
        groups,
        mark_label: "serial x the seed's speedup".into(),
    }
}

/// Random writev's MB/s through vecio's io_uring engine beside fio's 32k psync on the same file.
fn fio_row(f: &RowFigures, seed: &'static str) -> SummaryRow {
    let v = engine_index(f, EngineKind::Uring).map(|i| f.engines[i].mb_s.median);
    let peer = f.fio_32k.as_ref().map(|x| x.mb_s.median);
    let r = div(v, peer);
    SummaryRow {
        seed,
        result: "random writev: uring vs fio 32k".into(),
        unit: "MB/s",
        seed_figure: "-".into(),
        vecio: v.map_or("-".into(), |v| format!("{v:.1}")),
        peer: peer.map_or("-".into(), |p| format!("{p:.1} fio 32k")),
        ratio: r,
        target: at_least(r, 0.95, "x"),
    }
}

/// The targets, checked against a report. Targets needing fio are left out without it.
pub(super) fn targets(report: &WritevReport) -> Vec<Target> {
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
