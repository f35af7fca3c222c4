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
    method: "The same cached 4 KiB page read over and over: raw pread and preadv2, then each \
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
        let extra = vec![(
            "workload".to_string(),
            format!(
                "the same cached 4 KiB page, buffered; {:.2} s x {} per variant; instructions: {}",
                c.runtime_s,
                c.repeat,
                c.valgrind
                    .as_deref()
                    .map_or("not counted (no valgrind)".to_string(), |v| format!(
                        "user space only, from callgrind ({v})"
                    ))
            ),
        )];
        s.setup = lines(setup, &c.meta, extra, &["valgrind"]);
        s.tables.push(table(c));
        let caption =
            "Dark dashes: the raw pread loop's figure times 1.10, the seed's cost of the \
                       iterator path; vecio's single-buffer paths should stay under them.";
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
            return vec![SummaryRow::missing(
                seed,
                "read_at cost/raw pread",
                "x",
                "1.10",
            )];
        };
        let find = |x: Variant| c.variants.iter().find(|v| v.variant == x);
        let mut out = Vec::new();
        for (x, limit) in [(Variant::ReadAt, 1.05), (Variant::ReadvAt1, 1.10)] {
            let Some(v) = find(x) else { continue };
            let counted = v.instructions.is_some();
            let (what, mine) = if counted {
                ("instructions", instr_vs_raw(c, v))
            } else {
                ("time", time_vs_raw(c, v))
            };
            out.push(SummaryRow {
                seed,
                result: format!("{} {what}/raw pread", x.name()),
                unit: "x",
                seed_figure: format!("{SEED_OVERHEAD:.2}"),
                vecio: num(mine, 2),
                // Raw preadv2's ratio is a system call's, not another program's: it stays in the
                // section's table.
                peer: "-".into(),
                ratio: None,
                target: at_most(mine, limit, "x"),
            });
        }
        out
    }

    /// callcost's figures: ns per call and, when counted, instructions per variant.
    fn metrics(&self) -> Vec<Metric> {
        let c = self;
        let mut out = Vec::new();
        for v in &c.variants {
            out.push(Metric::of(
                Callcost::KEY,
                format!("{} ns", v.name),
                &v.ns,
                false,
            ));
            if let Some(i) = v.instructions {
                out.push(Metric {
                    experiment: Callcost::KEY,
                    name: format!("{} instructions", v.name),
                    value: i,
                    spread: Some(INSTRUCTION_SPREAD),
                    higher_is_better: false,
                });
            }
        }
        out
    }
}

/// The seed's cost of the iterator path over the plain one (read was 10% faster).
const SEED_OVERHEAD: f64 = 1.10;

fn raw(c: &CallcostReport) -> Option<&VariantFigures> {
    c.variants.iter().find(|v| v.variant == Variant::RawPread)
}

fn time_vs_raw(c: &CallcostReport, v: &VariantFigures) -> Option<f64> {
    paired_median(&v.ns_samples, &raw(c)?.ns_samples)
}

fn instr_vs_raw(c: &CallcostReport, v: &VariantFigures) -> Option<f64> {
    div(v.instructions, raw(c)?.instructions)
}

fn table(c: &CallcostReport) -> DataTable {
    let mut t = DataTable::new(
        "Cost per call: ns (median ± relative std dev) and user-space instructions",
        &[
            "variant",
            "ns/call",
            "vs raw pread",
            "instructions/call",
            "vs raw pread",
        ],
    );
    for (i, v) in c.variants.iter().enumerate() {
        t.rows.push(vec![
            Cell::text(&v.name),
            Cell::summary(&v.ns, 0, format!("/callcost/variants/{i}/ns")),
            Cell::ratio(time_vs_raw(c, v)),
            match v.instructions {
                Some(n) => Cell::json(n, 1, format!("/callcost/variants/{i}/instructions")),
                None => Cell::text("-"),
            },
            Cell::ratio(instr_vs_raw(c, v)),
        ]);
    }
    t
}

/// A variant's name short enough to sit under its bar.
fn short(name: &str) -> String {
    name.trim_start_matches("raw ")
        .trim_start_matches("batch ")
        .replace("readv_at", "readv")
        .replace("fast read", "fast")
}

fn bars(c: &CallcostReport, instructions: bool) -> Bars {
    let raw_figure = raw(c).and_then(|r| {
        if instructions {
            r.instructions
        } else {
            Some(r.ns.median)
        }
    });
    let groups = c
        .variants
        .iter()
        .map(|v| {
            let value = if instructions {
                v.instructions.map(BarValue::plain)
            } else {
                Some(BarValue::of(&v.ns))
            };
            let mark = (v.variant != Variant::RawPread)
                .then(|| raw_figure.map(|x| x * SEED_OVERHEAD))
                .flatten();
            BarGroup {
                label: short(&v.name),
                values: vec![value.map(|b| b.marked(mark))],
            }
        })
        .collect();
    Bars {
        title: if instructions {
            "A cached 4 KiB read: user-space instructions per call (seed 003)".into()
        } else {
            "A cached 4 KiB read: ns per call (seed 003)".into()
        },
        y_label: if instructions {
            "instructions".into()
        } else {
            "ns".into()
        },
        series: vec![if instructions {
            "instructions"
        } else {
            "ns/call"
        }
        .into()],
        groups,
        mark_label: "raw pread x 1.10 (the seed's read_iter cost)".into(),
    }
}

/// The targets: instructions where counted, else time.
fn targets(r: &CallcostReport) -> Vec<Target> {
    let mut out = Vec::new();
    for (v, limit) in [(Variant::ReadAt, 1.05), (Variant::ReadvAt1, 1.10)] {
        let Some(f) = r.variants.iter().find(|x| x.variant == v) else {
            continue;
        };
        if let Some(x) = instr_vs_raw(r, f) {
            out.push(Target {
                text: format!(
                    "{}: {x:.3}x the instructions of the raw pread loop (want <= {limit:.2}x)",
                    v.name()
                ),
                met: x <= limit,
            });
        }
        if let Some(x) = time_vs_raw(r, f) {
            out.push(Target {
                text: format!(
                    "{}: {x:.3}x the time of the raw pread loop (want <= {limit:.2}x)",
                    v.name()
                ),
                met: x <= limit,
            });
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
        assert_eq!(names[3], "readv x1");
        assert_eq!(names[8], "pool+fast");
        assert!(names.iter().all(|n| n.len() <= 14), "{names:?}");
    }
}
