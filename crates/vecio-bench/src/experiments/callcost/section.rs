//! Seed 003, the expense of read_iter: its section and summary rows.

use anyhow::Result;

use crate::experiments::callcost::{self, CallcostReport, Variant, VariantFigures};
use crate::experiments::results::AllResults;
use crate::harness::stats::paired_median;
use crate::report::fmt::{num, ratio_cell, summary_cell};
use crate::report::plot::{self, BarGroup, BarValue, Bars};
use crate::report::summary::{at_most, div, SummaryRow};
use crate::report::{seeds, setup, why_missing, Cell, DataTable, Plot, Section};

/// The seed's cost of the iterator path over the plain one (read was 10% faster).
const SEED_OVERHEAD: f64 = 1.10;

/// The section.
pub(crate) fn section(r: &AllResults) -> Result<Section> {
    let seed = seeds::seed("callcost");
    let Some(c) = &r.callcost else {
        return Ok(Section::not_measured(seed, why_missing(r, "callcost")));
    };
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
    let mut s = Section::measured(seed, setup::lines(r, &c.meta, extra, &["valgrind"]));
    s.tables.push(table(c));
    let caption = "Dark dashes: the raw pread loop's figure times 1.10, the seed's cost of the \
                   iterator path; vecio's single-buffer paths should stay under them.";
    s.plots.push(Plot {
        id: "s003-ns".into(),
        title: "Nanoseconds per call".into(),
        caption: format!(
            "Bars: median ns per call, whiskers: lowest and highest repetition. {caption}"
        ),
        svg: plot::bars(&bars(c, false))?,
    });
    if c.variants.iter().any(|v| v.instructions.is_some()) {
        s.plots.push(Plot {
            id: "s003-instructions".into(),
            title: "User-space instructions per call (callgrind)".into(),
            caption: caption.into(),
            svg: plot::bars(&bars(c, true))?,
        });
    }
    s.targets = callcost::targets(c);
    Ok(s)
}

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
            summary_cell(&v.ns, 0, format!("/callcost/variants/{i}/ns")),
            ratio_cell(time_vs_raw(c, v)),
            match v.instructions {
                Some(n) => Cell::json(n, 1, format!("/callcost/variants/{i}/instructions")),
                None => Cell::text("-"),
            },
            ratio_cell(instr_vs_raw(c, v)),
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

/// The seed's results beside vecio's (the peer: raw preadv2, the kernel's own vectored call).
pub(crate) fn summary(r: &AllResults) -> Vec<SummaryRow> {
    let seed = "003";
    let Some(c) = &r.callcost else {
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
