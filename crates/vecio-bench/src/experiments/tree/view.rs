//! A tree's life through FUSE: its entry (seed 004's, the FUSE document, with issue 27's
//! workload), section, targets, summary rows (shown only in a report of its own `--json` file:
//! `bench all` does not run it) and figures.

use super::phases::{Phase, PHASES};
use super::{native_limit, ratio, SubjectResult, Tree, TreeReport, NATIVE};
use crate::experiment::chart::{BarGroup, BarValue, Bars, Chart};
use crate::experiment::section::{at_most, Plot};
use crate::experiment::table::{num, Cell, DataTable};
use crate::experiment::{Experiment, Metric, Section, Seed, SummaryRow, View};
use crate::experiments::fuse::subjects::Counts;
use crate::experiments::fuse::VECIO;
use crate::harness::setup::{lines, Setup};
use crate::harness::stats::median;

/// Seed 004's document, met by issue 27's workload: a source tree's life rather than one file's
/// scatter-gather calls.
pub(super) const SEED: Seed = Seed {
    id: "004",
    title: "FUSE (issue 27): a source tree's life through vecio fuse: tar -x, cold walk, \
            read all, rm -rf",
    file: "004_79c7fe0e9c79c24f.txt",
    date: "2012-07-20",
    author: "Maxim Patlasov, fuse-devel: \"[PATCH 0/4] fuse: optimize scatter-gather direct IO\"",
    headline: "issue 27: a tree's whole life through vecio fuse within 2x native, its \
               extraction within 3x, no phase slower than libfuse's passthrough_hp",
    method: "A tarball extracted into a mount of one ext4 directory, walked after the caches \
             are dropped, every file read, the tree removed; natively, through vecio fuse \
             (default, --passthrough, --no-uring) and libfuse's passthrough_hp when given.",
    claims: &[],
};

impl View for TreeReport {
    fn section(&self, setup: Option<&Setup>, s: &mut Section) {
        let t = &self.tree;
        let tree = format!(
            "{}: {} files in {} directories, {:.1} MiB; {} round(s), subjects alternating order",
            t.source,
            t.files,
            t.dirs,
            t.bytes as f64 / f64::from(1 << 20),
            self.rounds
        );
        let cold = self
            .caches_not_dropped
            .as_ref()
            .map(|why| ("cold walk", format!("warm: {why}")));
        let extra = [("tree", tree)].into_iter().chain(cold).collect();
        s.setup = lines(setup, &self.meta, extra, &[]);
        s.tables = vec![seconds(self), server_cpu(self), requests(self)];
        s.plots.push(Plot::new(
            "s004-tree",
            "Seconds per phase of a tree's life",
            "Bars: median seconds, whiskers: the fastest and slowest round. Dark dashes on vecio \
             fuse's bars: native's figure times the target's limit (3x for the extraction, 2x for \
             the whole life).",
            Chart::Bars(bars(self)),
        ));
        s.targets.extend(self.targets.iter().cloned());
        let notes = &mut s.notes;
        notes.extend(self.not_judged.iter().map(|n| format!("not judged: {n}")));
        for r in &self.results {
            if let Some(e) = &r.error {
                notes.push(format!("{} failed: {e}", r.subject));
            }
        }
        notes.push(format!("FUSE requests per file: {}.", self.requests));
        notes.extend(breakdown(self));
        notes.push(
            "Ratios are medians of per-round ratios to native. Times are wall-clock seconds \
             (medians of the rounds); extract is tar -x, remove is rm -rf, both as processes."
                .into(),
        );
    }

    /// vecio fuse's whole life and extraction over native, with their targets (only in a
    /// report of this experiment's own `--json` file: `bench all` does not run it).
    fn summary(r: Option<&Self>) -> Vec<SummaryRow> {
        let rows = [("whole life", None), ("extract", Some(Phase::Extract))];
        rows.into_iter()
            .map(|(what, phase)| {
                let result = format!("{what}: vecio fuse/native");
                let Some(r) = r else {
                    return SummaryRow::missing(SEED.id, &result, "x", "-");
                };
                let v = ratio(r.result(VECIO), r.result(NATIVE), phase);
                let target = native_limit(phase).and_then(|want| at_most(v, want, "x"));
                SummaryRow::own(SEED.id, result, "x", "-".into(), num(v, 2), target)
            })
            .collect()
    }

    /// Seconds per subject and phase, and the whole life (less is better).
    fn metrics(&self) -> Vec<Metric> {
        let mut out = Vec::new();
        for r in &self.results {
            let phases = r.phases.iter().map(|p| (p.phase.name(), &p.seconds));
            for (what, s) in phases.chain([("whole life", &r.total)]) {
                let name = format!("{} / {what} s", r.subject);
                out.extend(s.as_ref().map(|s| Metric::of(Tree::KEY, name, s, false)));
            }
        }
        out
    }
}

fn seconds(f: &TreeReport) -> DataTable {
    let title = "Seconds per phase (median of the rounds ± relative std dev), and each subject \
                 over native";
    let native = f.result(NATIVE);
    let mut t =
        DataTable::over(title, "/tree/results", &f.results).col("subject", |_, r| &r.subject);
    for (pi, p) in PHASES.iter().enumerate() {
        t = t.col(p.name(), move |at, r| {
            let s = r.phases.get(pi)?.seconds.as_ref()?;
            Some(at.summary(s, 3, &format!("phases/{pi}/seconds")))
        });
    }
    t.col("whole life", |at, r| {
        Some(at.summary(r.total.as_ref()?, 3, "total"))
    })
    .col("life vs native", |_, r| {
        Cell::ratio(ratio(Some(r), native, None))
    })
    .col("extract vs native", |_, r| {
        Cell::ratio(ratio(Some(r), native, Some(Phase::Extract)))
    })
    .done()
}

fn server_cpu(f: &TreeReport) -> DataTable {
    let title = "The server's CPU time (user + system, from /proc/PID/stat around each phase; \
                 median of the rounds), per file of the tree";
    let files = f.tree.files.max(1) as f64;
    let served = f.results.iter().filter(|r| r.subject != NATIVE);
    let mut t = DataTable::over(title, "", served).col("subject", |_, r| &r.subject);
    for (pi, p) in PHASES.iter().enumerate() {
        t = t.col(&format!("{} CPU µs/file", p.name()), move |_, r| {
            let m = median(&r.phases.get(pi)?.server_cpu_s);
            Some(Cell::maybe(m.map(|m| m * 1e6 / files), 1))
        });
    }
    t.col("whole life CPU s", |_, r| {
        let cpu = r.phases.iter().map(|p| median(&p.server_cpu_s));
        let total = cpu.fold(0.0, |a, b| a + b.unwrap_or(0.0));
        Cell::maybe(Some(total), 3)
    })
    .done()
}

/// The median over the rounds of `phase`'s requests under `key` (`"total"` or an opcode) per
/// file of the tree.
fn per_file(f: &TreeReport, p: &super::PhaseResult, key: &str) -> Option<f64> {
    let count = |r: &Counts| *r.get(key).unwrap_or(&0) as f64;
    let counts: Vec<f64> = p.requests.iter().map(count).collect();
    median(&counts).map(|m| m / f.tree.files.max(1) as f64)
}

fn requests(f: &TreeReport) -> DataTable {
    let title = "FUSE requests the server served per file of the tree (median of the rounds; \
                 vecio fuse's SIGUSR1 counts)";
    let served = f.results.iter().filter(|r| r.subject != NATIVE);
    let mut t = DataTable::over(title, "", served).col("subject", |_, r| &r.subject);
    for (pi, p) in PHASES.iter().enumerate() {
        t = t.col(&format!("{} req/file", p.name()), move |_, r| {
            Some(Cell::maybe(per_file(f, r.phases.get(pi)?, "total"), 2))
        });
    }
    t.done()
}

/// One note per subject and phase: its requests per file by opcode (the ten most frequent).
fn breakdown(f: &TreeReport) -> Vec<String> {
    let mut notes = Vec::new();
    for r in &f.results {
        for p in &r.phases {
            let Some(last) = p.requests.last() else {
                continue;
            };
            let mut ops: Vec<(&String, f64)> = last
                .keys()
                .filter(|k| *k != "total")
                .filter_map(|k| Some((k, per_file(f, p, k)?)))
                .collect();
            ops.sort_by(|a, b| b.1.total_cmp(&a.1));
            let list: Vec<String> = ops
                .iter()
                .take(10)
                .map(|(k, n)| format!("{k} {n:.2}"))
                .collect();
            let (subject, phase, list) = (&r.subject, p.phase.name(), list.join(", "));
            notes.push(format!("{subject} {phase} requests per file: {list}"));
        }
    }
    notes
}

/// Seconds per phase and for the whole life, one bar per subject; vecio fuse's marked where a
/// target puts its limit.
fn bars(f: &TreeReport) -> Bars {
    let native = f.result(NATIVE);
    let phases = PHASES.iter().map(|&p| (p.name(), Some(p)));
    let groups = phases.chain([("whole life", None)]).map(|(label, phase)| {
        let secs = |r: &SubjectResult| match phase {
            Some(p) => r.phase(p)?.seconds,
            None => r.total,
        };
        let mark = native.and_then(secs).zip(native_limit(phase));
        let mark = mark.map(|(s, x)| s.median * x);
        let values = f.results.iter().map(|r| {
            let v = BarValue::of(&secs(r)?);
            Some(if r.subject == VECIO {
                v.marked(mark)
            } else {
                v
            })
        });
        BarGroup {
            label: label.to_string(),
            values: values.collect(),
        }
    });
    Bars {
        title: "A tree's life: seconds per phase (issue 27)".into(),
        y_label: "seconds".into(),
        series: f.results.iter().map(|r| r.subject.clone()).collect(),
        groups: groups.collect(),
        mark_label: "native x the target's limit".into(),
    }
}
