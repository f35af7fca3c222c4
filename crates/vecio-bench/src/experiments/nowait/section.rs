//! Seed 002, preadv2 and RWF_NOWAIT fast reads: its section and summary rows.

use anyhow::Result;

use crate::experiments::nowait::{
    self, Cell as NowaitCell, Config, Latency, NowaitReport, Workload,
};
use crate::experiments::results::AllResults;
use crate::experiments::tokio_reads::{self, TokioReport};
use crate::report::fmt::{change_num, num, share_cell, summary_cell};
use crate::report::plot::{self, BarGroup, BarValue, Bars, Line, Lines};
use crate::report::summary::{at_least, at_most, div, SummaryRow, Verdict};
use crate::report::{seeds, setup, why_missing, Cell, DataTable, Plot, Section};

/// The seed's total bandwidth after / before fast reads (177339 / 174669 KB/s).
const SEED_BANDWIDTH: f64 = 177_339.0 / 174_669.0;

/// The section.
pub(crate) fn section(r: &AllResults) -> Result<Section> {
    let seed = seeds::seed("nowait");
    let Some(n) = &r.nowait else {
        return Ok(Section::not_measured(seed, why_missing(r, "nowait")));
    };
    let extra = vec![(
        "workload".to_string(),
        format!(
            "16 KiB buffered reads, {} in flight, pool of {} threads; f1 {} MiB mostly cached, \
             f2 and f3 {} MiB; {:.1} s x {} per cell",
            n.depth,
            n.threads,
            n.medium >> 20,
            n.large >> 20,
            n.runtime_s,
            n.repeat
        ),
    )];
    let mut s = Section::measured(seed, setup::lines(r, &n.meta, extra, &[]));
    s.tables.push(raw(n));
    s.tables.push(cells(n));
    s.plots.push(Plot {
        id: "s002-throughput".into(),
        title: "MB/s per workload and configuration".into(),
        caption: "Bars: median MB/s, whiskers: lowest and highest repetition. Dark dashes: pool \
                  only times the seed's bandwidth ratio (1.02x: fast reads left bandwidth as it \
                  was)."
            .into(),
        svg: plot::bars(&bars(n))?,
    });
    for (wi, w) in n.workloads.iter().enumerate() {
        s.plots.push(Plot {
            id: format!("s002-latency-{wi}"),
            title: format!("Latency percentiles: {}", w.name),
            caption: "Latency of every request from issue to completion, by percentile (log \
                      scale); the rightmost point is the slowest request."
                .into(),
            svg: plot::lines(&curves(w.name.as_str(), &w.cells))?,
        });
    }
    s.targets = nowait::targets(n);
    if let Some(t) = &r.tokio {
        s.tables.push(tokio_table(t));
        s.targets.extend(tokio_reads::targets(t));
    }
    Ok(s)
}

/// The same reads from tokio tasks: tokio::fs (spawn_blocking) against vecio-tokio.
fn tokio_table(r: &TokioReport) -> DataTable {
    let mut t = DataTable::new(
        "From an async service: 16 KiB reads by 32 tokio tasks, tokio::fs (every read through \
         spawn_blocking) against vecio-tokio (cached reads inline with RWF_NOWAIT, the rest \
         through io_uring); MiB/s median of the repetitions, latency in µs of the median run",
        &["file", "path", "MiB/s", "mean", "p50", "p99", "p99.9"],
    );
    for (i, c) in r.cells.iter().enumerate() {
        let at = |field: &str| format!("/tokio/cells/{i}/{field}");
        let med = c.mib_s.get(c.mib_s.len() / 2).copied().unwrap_or(0.0);
        t.rows.push(vec![
            Cell::text(c.scenario.clone()),
            Cell::text(c.path.clone()),
            Cell::derived(med, format!("{med:.0}")),
            Cell::json(c.mean_us, 1, at("mean_us")),
            Cell::json(c.p50_us, 1, at("p50_us")),
            Cell::json(c.p99_us, 1, at("p99_us")),
            Cell::json(c.p999_us, 1, at("p999_us")),
        ]);
    }
    t
}

fn raw(n: &NowaitReport) -> DataTable {
    let mut t = DataTable::new(
        "The floor: raw preadv2 on f1, one call at a time, µs",
        &["call", "p50", "p99", "under 2 µs"],
    );
    let l = &n.raw_preadv2;
    t.rows.push(vec![
        Cell::text("preadv2, 16 KiB"),
        Cell::json(l.p50_us, 1, "/nowait/raw_preadv2/p50_us".into()),
        Cell::json(l.p99_us, 1, "/nowait/raw_preadv2/p99_us".into()),
        share_cell(l.under_2us, "/nowait/raw_preadv2/under_2us".into()),
    ]);
    t
}

fn cells(n: &NowaitReport) -> DataTable {
    let mut t = DataTable::new(
        "Per workload and configuration: MB/s (median ± relative std dev); latency in µs over \
         every request of every repetition",
        &[
            "workload",
            "config",
            "MB/s",
            "mean",
            "p50",
            "p99",
            "p99.9",
            "under 2 µs",
            "fast reads tried",
            "offloaded",
        ],
    );
    for (wi, w) in n.workloads.iter().enumerate() {
        for (ci, c) in w.cells.iter().enumerate() {
            let base = format!("/nowait/workloads/{wi}/cells/{ci}");
            let lat = |field: &str, v: f64| Cell::json(v, 1, format!("{base}/latency/{field}"));
            let l = &c.latency;
            t.rows.push(vec![
                Cell::text(&w.name),
                Cell::text(c.config.name()),
                summary_cell(&c.mb_s, 1, format!("{base}/mb_s")),
                lat("mean_us", l.mean_us),
                lat("p50_us", l.p50_us),
                lat("p99_us", l.p99_us),
                lat("p999_us", l.p999_us),
                share_cell(l.under_2us, format!("{base}/latency/under_2us")),
                Cell::json(
                    c.fast_read.attempts as f64,
                    0,
                    format!("{base}/fast_read/attempts"),
                ),
                Cell::json(
                    c.fast_read.offloads as f64,
                    0,
                    format!("{base}/fast_read/offloads"),
                ),
            ]);
        }
    }
    t
}

fn bars(n: &NowaitReport) -> Bars {
    let groups = n
        .workloads
        .iter()
        .map(|w| {
            let pool = w
                .cells
                .iter()
                .find(|c| c.config == Config::PoolOnly)
                .map(|c| c.mb_s.median);
            BarGroup {
                label: w.name.split(':').next().unwrap_or(&w.name).to_string(),
                values: Config::ALL
                    .iter()
                    .map(|&k| {
                        let c = w.cells.iter().find(|c| c.config == k)?;
                        let fast = matches!(k, Config::FastAlways | Config::FastTracked);
                        let mark = fast.then(|| pool.map(|p| p * SEED_BANDWIDTH)).flatten();
                        Some(BarValue::of(&c.mb_s).marked(mark))
                    })
                    .collect(),
            }
        })
        .collect();
    Bars {
        title: format!(
            "16 KiB buffered reads, {} in flight: MB/s (seed 002)",
            n.depth
        ),
        y_label: "MB/s".into(),
        series: Config::ALL.iter().map(|c| c.name().to_string()).collect(),
        groups,
        mark_label: "pool only x the seed's bandwidth ratio".into(),
    }
}

/// Percentile `q` as "nines": 0.9 is 1, 0.99 is 2; the maximum (1.0) is drawn at 4.5.
fn nines(q: f64) -> f64 {
    if q >= 1.0 {
        4.5
    } else {
        -(1.0 - q).log10()
    }
}

/// The axis label of a "nines" position: 1 is `90`, 3 is `99.9`.
fn percentile_label(x: &f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let digits = (x.ceil() as i32 - 2).clamp(0, 3) as usize;
    format!("{p:.digits$}")
}

fn curves(name: &str, cells: &[NowaitCell]) -> Lines<'static> {
    let lines = cells
        .iter()
        .filter(|c| !c.latency.percentiles.is_empty())
        .map(|c| Line {
            name: c.config.name().to_string(),
            points: c
                .latency
                .percentiles
                .iter()
                .map(|p| (nines(p.q), p.us.max(0.01)))
                .collect(),
        })
        .collect();
    Lines {
        title: name.to_string(),
        x_label: "percentile".into(),
        y_label: "µs".into(),
        lines,
        log_y: true,
        x_fmt: &percentile_label,
    }
}

fn cell(n: &NowaitReport, w: Workload, c: Config) -> Option<&NowaitCell> {
    n.workloads
        .iter()
        .find(|x| x.workload == w)?
        .cells
        .iter()
        .find(|x| x.config == c)
}

fn lat(n: &NowaitReport, w: Workload, c: Config) -> Option<&Latency> {
    cell(n, w, c).map(|x| &x.latency)
}

/// The seed's results beside vecio's (the peer: io_uring, the kernel's own async reads).
pub(crate) fn summary(r: &AllResults) -> Vec<SummaryRow> {
    let seed = "002";
    let Some(n) = &r.nowait else {
        return vec![SummaryRow::missing(
            seed,
            "f1 reads under 2 µs: fast read",
            "%",
            "70.6",
        )];
    };
    let fast = Config::FastTracked;
    let pct = |v: Option<f64>| num(v.map(|v| v * 100.0), 1);
    let mut out = Vec::new();
    for (w, figure) in [
        (Workload::F1Cached, "70.6"),
        (Workload::F3Sequential, "64.0"),
    ] {
        let v = lat(n, w, fast).map(|l| l.under_2us);
        // vecio's own io_uring engine is no peer; no other program runs this workload.
        out.push(SummaryRow::own(
            seed,
            format!(
                "{} reads under 2 µs: fast read",
                w.name().split(':').next().unwrap_or("")
            ),
            "%",
            figure.into(),
            pct(v),
            None,
        ));
    }
    out.extend(latency_rows(n, seed));
    out
}

/// The latency and bandwidth rows: fast read's p50 against raw preadv2, the mix's mean latency
/// against the pool, and uncached bandwidth against the pool.
fn latency_rows(n: &NowaitReport, seed: &'static str) -> Vec<SummaryRow> {
    let (fast, pool) = (Config::FastTracked, Config::PoolOnly);
    let mut out = Vec::new();
    let raw = n.raw_preadv2.p50_us;
    let p50 = |c| lat(n, Workload::F1Cached, c).map(|l| l.p50_us);
    let vs_raw = div(p50(fast), Some(raw));
    out.push(SummaryRow::own(
        seed,
        format!(
            "f1 p50: fast read {:.1} µs/raw preadv2 {raw:.1} µs (seed: ~2 µs)",
            p50(fast).unwrap_or(0.0)
        ),
        "x",
        "-".into(),
        num(vs_raw, 2),
        at_most(vs_raw, 1.3, "x raw"),
    ));
    let mean = |c| lat(n, Workload::Mix, c).map(|l| l.mean_us);
    let drop = |c| div(mean(c), mean(pool)).map(|x| 1.0 - x);
    out.push(SummaryRow::own(
        seed,
        "mix mean latency: fast read vs pool".into(),
        "% change",
        "-20..-30".into(),
        drop(fast).map_or("-".into(), |d| change_num(-d)),
        drop(fast).map(|d| Verdict {
            want: ">= 20% lower".into(),
            met: d >= 0.2,
        }),
    ));
    let mb = |c| cell(n, Workload::F2Uncached, c).map(|x| x.mb_s.median);
    let v = div(mb(fast), mb(pool));
    out.push(SummaryRow::own(
        seed,
        "f2 uncached MB/s: fast read/pool (seed: total)".into(),
        "x",
        format!("{SEED_BANDWIDTH:.2}"),
        num(v, 2),
        at_least(v, 0.97, "x"),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_axis() {
        assert!((nines(0.99) - 2.0).abs() < 1e-9);
        assert_eq!(nines(1.0), 4.5);
        assert_eq!(percentile_label(&1.0), "90");
        assert_eq!(percentile_label(&2.0), "99");
        assert_eq!(percentile_label(&3.0), "99.9");
        assert_eq!(percentile_label(&0.0), "0");
    }
}
