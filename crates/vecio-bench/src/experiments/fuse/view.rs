//! Seed 004, FUSE scatter-gather direct I/O: its entry, section, summary rows and figures
//! (its targets are judged at run time: [`super::Goal`]).

use super::workload::Op;
use super::{
    ratio, Cell as FuseCell, Fuse, FuseReport, Goal, NATIVE, SEED_READV, SEED_WRITEV, VECIO,
    VECIO_DEV, VECIO_PER_SEGMENT,
};
use crate::experiment::chart::{BarGroup, BarValue, Bars, Chart};
use crate::experiment::section::{Plot, Verdict, PAIRED};
use crate::experiment::seed::claim;
use crate::experiment::table::{num, Cell, DataTable};
use crate::experiment::{Experiment, Metric, Section, Seed, SummaryRow, View};
use crate::harness::setup::{lines, Setup};
use crate::harness::stats::Summary;

/// Seed 004, as this experiment re-measures it.
pub(super) const SEED: Seed = Seed {
    id: "004",
    title: "FUSE scatter-gather direct I/O (2012): many segments per request",
    file: "004_79c7fe0e9c79c24f.txt",
    date: "2012-07-20",
    author: "Maxim Patlasov, fuse-devel: \"[PATCH 0/4] fuse: optimize scatter-gather direct IO\"",
    headline: "32 x 4 KiB O_DIRECT writev through FUSE 107 -> 480 MB/s, readv 114 -> 569 \
                   MB/s when many segments go in one request",
    method: "A file opened O_DIRECT on a FUSE passthrough mount, readv/writev of 32 x 4 KiB \
                 in a loop: vecio fuse against libfuse's passthrough.",
    claims: &[
        claim(
            "An iovec[] for readv/writev consisted of 32 segments of 4K each.",
            "32 x 4 KiB",
        ),
        claim("writev: ~107 / ~480", "107 -> 480 MB/s (4.5x)"),
        claim("readv: ~114 / ~569", "114 -> 569 MB/s (5.0x)"),
    ],
};

impl View for FuseReport {
    fn section(&self, setup: Option<&Setup>, s: &mut Section) {
        let f = self;
        let workload = format!(
            "{} MiB file, 32 x 4 KiB per call, one thread, {:.1} s per measurement, {} \
             repetition(s)",
            f.size >> 20,
            f.runtime_s,
            f.repeat
        );
        let limit = f.max_pages_limit;
        let fuse = format!("the kernel allows {limit} pages per request (max_pages_limit)");
        let mut extra = vec![("workload", workload), ("FUSE", fuse)];
        if let Err(why) = &f.libfuse {
            extra.push(("libfuse examples", format!("not measured: {why}")));
        }
        s.setup = lines(setup, &f.meta, extra, &["libfuse"]);
        s.tables = vec![direct(f), packing(f)];
        if f.cells.iter().any(|c| !c.direct) {
            s.tables.push(buffered(f));
        }
        s.plots.push(Plot::new(
            "s004-direct",
            "32 x 4 KiB O_DIRECT readv/writev through FUSE, MB/s",
            format!(
                "Bars: median MB/s, whiskers: lowest and highest repetition; a subject whose calls \
                 failed (EINVAL) has no bar. per-segment: {VECIO_PER_SEGMENT}; vecio --uring: vecio fuse \
                 --uring; passthrough*: the libfuse examples. Dark dashes: the per-segment figure \
                 times the seed's gain ({:.1}x readv, {:.1}x writev), where the seed puts {VECIO}.",
                SEED_READV.1 / SEED_READV.0,
                SEED_WRITEV.1 / SEED_WRITEV.0
            ),
            Chart::Bars(bars(f)),
        ));
        for t in &f.targets {
            let Some(target) = t.target() else {
                let note = format!("not judged (not measured): {}", t.what);
                s.notes.push(note);
                continue;
            };
            s.targets.push(target);
        }
        s.notes.push(PAIRED.into());
    }

    /// The seed's results beside vecio's.
    fn summary(f: Option<&Self>) -> Vec<SummaryRow> {
        let seed = "004";
        let Some(f) = f else {
            return vec![
                SummaryRow::missing(seed, "32 x 4 KiB O_DIRECT writev", "MB/s", "107 -> 480"),
                SummaryRow::missing(seed, "32 x 4 KiB O_DIRECT readv", "MB/s", "114 -> 569"),
            ];
        };
        let mut out = Vec::new();
        for op in [Op::Writev, Op::Readv] {
            let (name, (before, after)) = (op.name(), seed_figures(op));
            let mb_row = |result, seed_figure, peer, (ratio, target)| SummaryRow {
                seed,
                result,
                unit: "MB/s",
                seed_figure,
                vecio: vecio_mb(f, op),
                peer,
                ratio,
                target,
            };
            let result = format!("32 x 4 KiB O_DIRECT {name}");
            let seed_figure = format!("{before:.0} -> {after:.0}");
            let peer_verdict = verdict(f, op, "libfuse");
            out.push(mb_row(result, seed_figure, best_peer(f, op), peer_verdict));
            let (_, target) = verdict(f, op, "packed / per-segment");
            let result = format!("{name}: packed/per-segment");
            let (gain, seed_gain) = (num(packed_gain(f, op), 2), format!("{:.1}", after / before));
            out.push(SummaryRow::own(seed, result, "x", seed_gain, gain, target));
            let native = f.cell(NATIVE, op, true).and_then(|c| c.mb_s);
            let native = native.map_or("-".into(), |s| format!("{:.0} native", s.median));
            let result = format!("{name}: vecio fuse vs native");
            let native_verdict = verdict(f, op, "vs native");
            out.push(mb_row(result, "-".into(), native, native_verdict));
        }
        out
    }

    /// Its figures: MB/s per subject, operation, O_DIRECT or buffered.
    fn metrics(&self) -> Vec<Metric> {
        // A failed cell (EINVAL from a libfuse example) has no figure to compare.
        let measured = self
            .cells
            .iter()
            .filter_map(|c| Some((c, c.mb_s.as_ref()?)));
        let metric = |(c, s): (&FuseCell, &Summary)| {
            let how = if c.direct { "O_DIRECT" } else { "buffered" };
            let name = format!("{} / {} {how} MB/s", c.subject, c.op.name());
            Metric::of(Fuse::KEY, name, s, true)
        };
        measured.map(metric).collect()
    }
}

/// Both operations, in table order.
const OPS: [Op; 2] = [Op::Readv, Op::Writev];

/// The seed's figures for `op`: before (one request per segment) and after (packed), MB/s.
fn seed_figures(op: Op) -> (f64, f64) {
    match op {
        Op::Readv => SEED_READV,
        Op::Writev => SEED_WRITEV,
    }
}

/// The cell of `subject`, `op`, direct or not, as a table cell: its MB/s with its JSON pointer,
/// the error that stopped it, or `-`.
fn mb_cell(f: &FuseReport, subject: &str, op: Op, direct: bool) -> Cell {
    let mine = |c: &&FuseCell| c.subject == subject && c.op == op && c.direct == direct;
    match f.cells.iter().enumerate().find(|(_, c)| mine(c)) {
        Some((_, FuseCell { error: Some(e), .. })) => Cell::text(format!("error: {e}")),
        Some((ci, FuseCell { mb_s: Some(s), .. })) => {
            Cell::summary(s, 1, format!("/fuse/cells/{ci}/mb_s"))
        }
        _ => Cell::text("-"),
    }
}

/// `subject`'s ratio to vecio fuse for `op` (`subject` / vecio fuse), direct.
fn vs_vecio(f: &FuseReport, subject: &str, op: Op) -> Cell {
    Cell::ratio(ratio(f.cell(subject, op, true), f.cell(VECIO, op, true)))
}

/// The subjects measured with `direct` set as given, in table order.
fn subjects_of(f: &FuseReport, direct: bool) -> Vec<&str> {
    let measured = |n: &&str| {
        f.cells
            .iter()
            .any(|c| c.subject == *n && c.direct == direct)
    };
    let names = f.subjects.iter().map(|s| s.name.as_str());
    names.filter(measured).collect()
}

fn direct(f: &FuseReport) -> DataTable {
    let title = "O_DIRECT, 32 x 4 KiB per call: MB/s (10^6 bytes/s; median ± relative std dev \
                 of the repetitions), and each subject over vecio fuse";
    DataTable::over(title, "", subjects_of(f, true))
        .col("subject", |_, name| name)
        .col("readv MB/s", |_, name| mb_cell(f, name, Op::Readv, true))
        .col("writev MB/s", |_, name| mb_cell(f, name, Op::Writev, true))
        .col("readv vs vecio fuse", |_, n| vs_vecio(f, n, Op::Readv))
        .col("writev vs vecio fuse", |_, n| vs_vecio(f, n, Op::Writev))
        .done()
}

fn packing(f: &FuseReport) -> DataTable {
    let title = "The seed's gain: requests packed (vecio fuse) against one request per 4 KiB \
                 segment (vecio fuse --max-pages 1), MB/s";
    DataTable::over(title, "", OPS)
        .col("op", |_, op| op.name())
        .col("seed before", |_, op| format!("~{:.0}", seed_figures(op).0))
        .col("seed after", |_, op| format!("~{:.0}", seed_figures(op).1))
        .col("seed gain", |_, op| {
            let (before, after) = seed_figures(op);
            format!("{:.2}x", after / before)
        })
        .col("per-segment here", |_, op| {
            mb_cell(f, VECIO_PER_SEGMENT, op, true)
        })
        .col("packed here", |_, op| mb_cell(f, VECIO, op, true))
        .col("gain here", |_, op| Cell::ratio(packed_gain(f, op)))
        .done()
}

/// vecio fuse over its per-segment mode for `op`, O_DIRECT.
fn packed_gain(f: &FuseReport, op: Op) -> Option<f64> {
    ratio(f.cell(VECIO, op, true), f.cell(VECIO_PER_SEGMENT, op, true))
}

fn buffered(f: &FuseReport) -> DataTable {
    let title = "Buffered (no O_DIRECT), 32 x 4 KiB per call: FUSE_PASSTHROUGH against the plain \
                 path, MB/s (median ± relative std dev)";
    DataTable::over(title, "", subjects_of(f, false))
        .col("subject", |_, name| name)
        .col("readv MB/s", |_, name| mb_cell(f, name, Op::Readv, false))
        .col("writev MB/s", |_, name| mb_cell(f, name, Op::Writev, false))
        .done()
}

/// A subject's name under its bars: short enough for seven groups side by side.
fn short(name: &str) -> String {
    match name {
        VECIO_PER_SEGMENT => "per-segment".into(),
        super::VECIO_URING => "vecio --uring".into(),
        VECIO_DEV => "vecio --no-uring".into(),
        super::VECIO_NO_SANDBOX => "no sandbox".into(),
        _ => name.strip_prefix("libfuse ").unwrap_or(name).to_string(),
    }
}

fn bars(f: &FuseReport) -> Bars {
    let bar = |name: &str, op: Op| {
        let v = BarValue::of(f.cell(name, op, true)?.mb_s.as_ref()?);
        let (before, after) = seed_figures(op);
        let per_segment = f.cell(VECIO_PER_SEGMENT, op, true).and_then(|c| c.mb_s);
        let mark = per_segment
            .filter(|_| name == VECIO)
            .map(|s| s.median * after / before);
        Some(v.marked(mark))
    };
    let groups = subjects_of(f, true).into_iter().map(|name| BarGroup {
        label: short(name),
        values: OPS.iter().map(|&op| bar(name, op)).collect(),
    });
    Bars {
        title: "FUSE, 32 x 4 KiB O_DIRECT per call: MB/s per subject (seed 004)".into(),
        y_label: "MB/s".into(),
        series: OPS.iter().map(|op| op.name().to_string()).collect(),
        groups: groups.collect(),
        mark_label: "per-segment x the seed's gain".into(),
    }
}

/// vecio's O_DIRECT figure for `op` as text: `593 MB/s`, or its error.
fn vecio_mb(f: &FuseReport, op: Op) -> String {
    match f.cell(VECIO, op, true) {
        Some(FuseCell { error: Some(e), .. }) => format!("error: {e}"),
        Some(FuseCell { mb_s: Some(s), .. }) => format!("{:.0}", s.median),
        _ => "-".into(),
    }
}

/// The best working libfuse example for `op`, O_DIRECT, as text; or why none works.
fn best_peer(f: &FuseReport, op: Op) -> String {
    let examples = || {
        let example = move |c: &&FuseCell| c.subject.starts_with("libfuse") && c.op == op;
        f.cells.iter().filter(example).filter(|c| c.direct)
    };
    let best = examples()
        .filter_map(|c| Some((c, c.mb_s?.median)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    match (best, examples().find_map(|c| c.error.as_deref())) {
        (Some((c, mb)), _) => format!("{mb:.0} {}", c.subject),
        (None, Some(e)) => format!("none works: {e}"),
        (None, None) if f.libfuse.is_err() => "libfuse not measured".into(),
        (None, None) => "-".into(),
    }
}

/// The experiment's target for `op` whose text contains `what`: its measured ratio and its
/// verdict (none when it could not be judged).
fn verdict(f: &FuseReport, op: Op, what: &str) -> (Option<f64>, Option<Verdict>) {
    let mine = |t: &&Goal| t.what.starts_with(op.name()) && t.what.contains(what);
    let Some(t) = f.targets.iter().find(mine) else {
        return (None, None);
    };
    let only = if t.only_vecio_works {
        " (only vecio works)"
    } else {
        ""
    };
    let want = format!(">= {}x{only}", t.want);
    (t.got, t.met().map(|met| Verdict { want, met }))
}
