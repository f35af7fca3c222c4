//! Seed 003, the expense of read_iter: its entry, section, targets, summary rows and figures.

use super::{Callcost, CallcostReport, Variant, VariantFigures, INSTRUCTION_SPREAD};
use crate::experiment::chart::{BarGroup, BarValue, Bars, Chart};
use crate::experiment::section::{at_most, div, Plot};
use crate::experiment::seed::claim;
use crate::experiment::table::{num, Cell, DataTable};
use crate::experiment::{Experiment, Metric, Section, Seed, SummaryRow, Target, View};
use crate::harness::setup::{lines, Setup};
use crate::harness::stats::paired_median;

/// Seed 003, as this experiment re-measures it.
pub(super) const SEED: Seed = Seed {
    id: "003",
    title: "the expense of read_iter (2021): a single buffer should not pay for an iterator",
    file: "003_f92c9aae2b9a0629.txt",
    date: "2021-01-07",
    author: "Mikulas Patocka and others, linux-fsdevel: \"Expense of read_iter\"",
    headline: "building an iterator for a single buffer costs the read path ~10% (12% of \
               cycles against 2.7% for the plain path)",
    method: "The same cached 4 KiB page read over and over: raw pread and preadv2 through libc, \
             pread as an inline system call (no libc wrapper), then each \
             vecio path (read_at, readv_at, one-request batches per engine); time per call, \
             and user-space instructions per call from callgrind.",
    claims: &[
        claim("reading a file with the read method has 10% better performance than the read_iter method", "1.10x"),
        claim("we get 12.01%. On the other hand, in the second trace, nvfs_read consumes just 2.71%", "12.0% vs 2.7% of cycles"),
    ],
};

impl View for CallcostReport {
    fn section(&self, setup: Option<&Setup>, s: &mut Section) {
        let c = self;
        let instructions = match &c.valgrind {
            Some(v) => format!("user space only, from callgrind ({v})"),
            None => "not counted (no valgrind)".into(),
        };
        let workload = format!(
            "the same cached 4 KiB page, buffered; {:.2} s x {} per variant; instructions: \
             {instructions}",
            c.runtime_s, c.repeat
        );
        // The workload line names valgrind's version (the one that counted), so no tool line.
        s.setup = lines(setup, &c.meta, vec![("workload", workload)], &[]);
        s.tables.push(table(c));
        let caption = "Dark dashes: the raw pread loop's figure times 1.10, the seed's cost of \
                       the iterator path; vecio's single-buffer paths should stay under them.";
        s.plots.push(Plot::new(
            "s003-ns",
            "Nanoseconds per call",
            format!("Bars: median ns per call, whiskers: lowest and highest repetition. {caption}"),
            Chart::Bars(bars(c, false)),
        ));
        if c.variants.iter().any(|v| v.instructions.is_some()) {
            s.plots.push(Plot::new(
                "s003-instructions",
                "User-space instructions per call (callgrind)",
                caption,
                Chart::Bars(bars(c, true)),
            ));
        }
        s.targets = targets(c);
    }

    /// The seed's results beside vecio's (the peer: raw preadv2, the kernel's own vectored call).
    fn summary(c: Option<&Self>) -> Vec<SummaryRow> {
        let seed = "003";
        let Some(c) = c else {
            let result = "read_at cost/raw pread";
            return vec![SummaryRow::missing(seed, result, "x", "1.10")];
        };
        let mut out = Vec::new();
        for (x, limit) in LIMITS {
            let Some(v) = c.variant(x) else { continue };
            let (what, mine) = match v.instructions {
                Some(_) => ("instructions", instr_vs_raw(c, v)),
                None => ("time", time_vs_raw(c, v)),
            };
            // Raw preadv2's ratio is a system call's, not another program's: it stays in the
            // section's table.
            let result = format!("{} {what}/raw pread", x.name());
            let (seed_figure, target) = (format!("{SEED_OVERHEAD:.2}"), at_most(mine, limit, "x"));
            let row = SummaryRow::own(seed, result, "x", seed_figure, num(mine, 2), target);
            out.push(row);
        }
        out
    }

    /// callcost's figures: ns per call and, when counted, instructions per variant.
    fn metrics(&self) -> Vec<Metric> {
        let mut out = Vec::new();
        for v in &self.variants {
            let ns = Metric::of(Callcost::KEY, format!("{} ns", v.name), &v.ns, false);
            let instructions = v.instructions.map(|value| Metric {
                name: format!("{} instructions", v.name),
                value,
                spread: Some(INSTRUCTION_SPREAD),
                ..ns.clone()
            });
            out.extend([Some(ns), instructions].into_iter().flatten());
        }
        out
    }
}

/// The seed's cost of the iterator path over the plain one (read was 10% faster).
const SEED_OVERHEAD: f64 = 1.10;

/// The single-buffer paths and the most they may cost over the raw pread loop.
const LIMITS: [(Variant, f64); 2] = [(Variant::ReadAt, 1.05), (Variant::ReadvAt1, 1.10)];

fn time_vs_raw(c: &CallcostReport, v: &VariantFigures) -> Option<f64> {
    paired_median(&v.ns_samples, &c.variant(Variant::RawPread)?.ns_samples)
}

fn instr_vs_raw(c: &CallcostReport, v: &VariantFigures) -> Option<f64> {
    div(v.instructions, c.variant(Variant::RawPread)?.instructions)
}

/// Instructions a call adds to the bare system call (no libc wrapper): what vecio itself costs.
fn instr_over_syscall(c: &CallcostReport, v: &VariantFigures) -> Option<f64> {
    Some(v.instructions? - c.variant(Variant::RawSyscall)?.instructions?)
}

fn table(c: &CallcostReport) -> DataTable {
    let title = "Cost per call: ns (median ± relative std dev) and user-space instructions";
    DataTable::over(title, "/callcost/variants", &c.variants)
        .col("variant", |_, v| &v.name)
        .col("ns/call", |at, v| at.summary(&v.ns, 0, "ns"))
        .col("vs raw pread", |_, v| Cell::ratio(time_vs_raw(c, v)))
        .col("instructions/call", |at, v| {
            v.instructions.map(|n| at.json(n, 1, "instructions"))
        })
        .col("vs raw pread", |_, v| Cell::ratio(instr_vs_raw(c, v)))
        .col("over raw syscall", |_, v| {
            Cell::maybe(instr_over_syscall(c, v), 1)
        })
        .done()
}

/// A variant's name short enough to sit under its bar.
fn short(name: &str) -> String {
    name.trim_start_matches("raw ")
        .trim_start_matches("batch ")
        .replace("readv_at", "readv")
        .replace("fast read", "fast")
}

fn bars(c: &CallcostReport, instructions: bool) -> Bars {
    let figure = |v: &VariantFigures| match instructions {
        true => v.instructions.map(BarValue::plain),
        false => Some(BarValue::of(&v.ns)),
    };
    let raw = c.variant(Variant::RawPread).and_then(figure);
    let groups = c.variants.iter().map(|v| {
        let mark = (v.variant != Variant::RawPread).then(|| raw.map(|x| x.value * SEED_OVERHEAD));
        BarGroup {
            label: short(&v.name),
            values: vec![figure(v).map(|b| b.marked(mark.flatten()))],
        }
    });
    let (title, y_label, series) = match instructions {
        true => (
            "user-space instructions per call",
            "instructions",
            "instructions",
        ),
        false => ("ns per call", "ns", "ns/call"),
    };
    Bars {
        title: format!("A cached 4 KiB read: {title} (seed 003)"),
        y_label: y_label.into(),
        series: vec![series.into()],
        groups: groups.collect(),
        mark_label: "raw pread x 1.10 (the seed's read_iter cost)".into(),
    }
}

/// The targets: instructions where counted, else time.
fn targets(r: &CallcostReport) -> Vec<Target> {
    let mut out = Vec::new();
    for (v, limit) in LIMITS {
        let Some(f) = r.variant(v) else { continue };
        let measures = [
            ("instructions", instr_vs_raw(r, f)),
            ("time", time_vs_raw(r, f)),
        ];
        for (what, x) in measures.into_iter().filter_map(|(w, x)| Some((w, x?))) {
            let text = format!(
                "{}: {x:.3}x the {what} of the raw pread loop (want <= {limit:.2}x)",
                v.name()
            );
            out.push(Target::new(text, x <= limit));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names() {
        let names: Vec<String> = Variant::ALL.iter().map(|v| short(v.name())).collect();
        assert_eq!(names[0], "pread");
        assert_eq!(names[1], "syscall");
        assert_eq!(names[4], "readv x1");
        assert_eq!(names[9], "pool+fast");
        assert!(names.iter().all(|n| n.len() <= 14), "{names:?}");
    }
}
