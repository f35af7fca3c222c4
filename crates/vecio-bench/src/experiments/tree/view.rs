//! A tree's life through FUSE: its entry (seed 004's, the FUSE document, with issue 27's
//! workload), section, targets and figures. It has no summary rows: `bench all` does not run it.

use super::phases::{Phase, PHASES};
use super::{ratio, Tree, TreeReport, NATIVE};
use crate::experiment::table::{Cell, DataTable};
use crate::experiment::{Experiment, Metric, Section, Seed, SummaryRow, View};
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
             (default, --passthrough, --uring) and libfuse's passthrough_hp when given.",
    claims: &[],
};

impl View for TreeReport {
    fn section(&self, setup: Option<&Setup>, s: &mut Section) {
        let t = &self.tree;
        let mut extra = vec![(
            "tree".to_string(),
            format!(
                "{}: {} files in {} directories, {:.1} MiB; {} round(s), subjects alternating \
                 order",
                t.source,
                t.files,
                t.dirs,
                t.bytes as f64 / f64::from(1 << 20),
                self.rounds
            ),
        )];
        if let Some(why) = &self.caches_not_dropped {
            extra.push(("cold walk".into(), format!("warm: {why}")));
        }
        s.setup = lines(setup, &self.meta, extra, &[]);
        s.tables.push(seconds(self));
        s.tables.push(server_cpu(self));
        s.targets.extend(self.targets.iter().cloned());
        s.notes
            .extend(self.not_judged.iter().map(|n| format!("not judged: {n}")));
        for r in &self.results {
            if let Some(e) = &r.error {
                s.notes.push(format!("{} failed: {e}", r.subject));
            }
        }
        s.notes
            .push(format!("FUSE requests per file: {}.", self.requests));
        s.notes.push(
            "Ratios are medians of per-round ratios to native. Times are wall-clock seconds \
             (medians of the rounds); extract is tar -x, remove is rm -rf, both as processes."
                .into(),
        );
    }

    /// None: `bench all` does not run this experiment.
    fn summary(_r: Option<&Self>) -> Vec<SummaryRow> {
        Vec::new()
    }

    /// Seconds per subject and phase, and the whole life (less is better).
    fn metrics(&self) -> Vec<Metric> {
        let mut out = Vec::new();
        for r in &self.results {
            for p in &r.phases {
                if let Some(s) = &p.seconds {
                    let name = format!("{} / {} s", r.subject, p.phase.name());
                    out.push(Metric::of(Tree::KEY, name, s, false));
                }
            }
            if let Some(s) = &r.total {
                let name = format!("{} / whole life s", r.subject);
                out.push(Metric::of(Tree::KEY, name, s, false));
            }
        }
        out
    }
}

fn seconds(f: &TreeReport) -> DataTable {
    let mut header = vec!["subject"];
    header.extend(PHASES.iter().map(|p| p.name()));
    header.extend(["whole life", "life vs native", "extract vs native"]);
    let mut t = DataTable::new(
        "Seconds per phase (median of the rounds ± relative std dev), and each subject over \
         native",
        &header,
    );
    let native = f.result(NATIVE);
    for (ri, r) in f.results.iter().enumerate() {
        let mut row = vec![Cell::text(&r.subject)];
        for (pi, p) in r.phases.iter().enumerate() {
            row.push(p.seconds.as_ref().map_or(Cell::text("-"), |s| {
                Cell::summary(s, 3, format!("/tree/results/{ri}/phases/{pi}/seconds"))
            }));
        }
        row.push(r.total.as_ref().map_or(Cell::text("-"), |s| {
            Cell::summary(s, 3, format!("/tree/results/{ri}/total"))
        }));
        row.push(Cell::ratio(ratio(Some(r), native, None)));
        row.push(Cell::ratio(ratio(Some(r), native, Some(Phase::Extract))));
        t.rows.push(row);
    }
    t
}

fn server_cpu(f: &TreeReport) -> DataTable {
    let mut header = vec!["subject"];
    let cols: Vec<String> = PHASES
        .iter()
        .map(|p| format!("{} CPU µs/file", p.name()))
        .collect();
    header.extend(cols.iter().map(String::as_str));
    header.push("whole life CPU s");
    let mut t = DataTable::new(
        "The server's CPU time (user + system, from /proc/PID/stat around each phase; median of \
         the rounds), per file of the tree",
        &header,
    );
    let files = f.tree.files.max(1) as f64;
    for r in f.results.iter().filter(|r| r.subject != NATIVE) {
        let mut row = vec![Cell::text(&r.subject)];
        let mut total = 0.0;
        for p in &r.phases {
            let m = median(&p.server_cpu_s);
            total += m.unwrap_or(0.0);
            row.push(Cell::maybe(m.map(|m| m * 1e6 / files), 1));
        }
        row.push(Cell::maybe(Some(total), 3));
        t.rows.push(row);
    }
    t
}
