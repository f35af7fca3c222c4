//! The FUSE experiment's goals, recorded as measured and judged into [`Target`]s.

use serde::{Deserialize, Serialize};

use super::workload::Op;
use super::{
    cell, ratio, subjects, Cell, NATIVE, VECIO, VECIO_NO_SANDBOX, VECIO_PASSTHROUGH_DIRECT,
    VECIO_PER_SEGMENT,
};
use crate::experiment::Target;

/// A ratio the issue asks of vecio fuse against a peer, as measured; [`Goal::target`] judges it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Goal {
    /// What is compared.
    pub what: String,
    /// The ratio wanted (at least).
    pub want: f64,
    /// The ratio measured (median of per-repetition ratios).
    pub got: Option<f64>,
    /// Every peer failed where vecio served (no ratio exists; vecio meets the target).
    pub only_vecio_works: bool,
}

impl Goal {
    /// True when measured and at least the wanted ratio.
    pub fn met(&self) -> Option<bool> {
        if self.only_vecio_works {
            return Some(true);
        }
        self.got.map(|g| g >= self.want)
    }

    /// The goal as a judged target, or `None` when it was not measured.
    pub fn target(&self) -> Option<Target> {
        let got = if self.only_vecio_works {
            "only vecio works".to_string()
        } else {
            crate::experiment::table::ratio(self.got)
        };
        Some(Target {
            text: format!("{}: {got} (want >= {:.2}x)", self.what, self.want),
            met: self.met()?,
        })
    }
}

/// The ratio `a / b` of `op`'s O_DIRECT cells of subjects `a` and `b`, wanted at least `want`.
fn goal(cells: &[Cell], op: Op, what: String, want: f64, (a, b): (&str, &str)) -> Goal {
    let got = ratio(cell(cells, a, op, true), cell(cells, b, op, true));
    let only_vecio_works = false;
    Goal {
        what,
        want,
        got,
        only_vecio_works,
    }
}

pub(super) fn targets(cells: &[Cell]) -> Vec<Goal> {
    let mut t = Vec::new();
    for op in [Op::Readv, Op::Writev] {
        packed_goals(cells, op, &mut t);
    }
    // The kernel serving O_DIRECT opens on the backing file (FUSE_PASSTHROUGH), when measured.
    let hp = format!("libfuse {}", subjects::HP_PASSTHROUGH);
    for op in [Op::Readv, Op::Writev] {
        let name = op.name();
        let pt = VECIO_PASSTHROUGH_DIRECT;
        if cell(cells, pt, op, true).is_some() {
            let what = format!("{name} --passthrough-direct vs native");
            t.push(goal(cells, op, what, 0.95, (pt, NATIVE)));
            if cell(cells, &hp, op, true).is_some() {
                let what = format!("{name} --passthrough-direct vs {hp}");
                t.push(goal(cells, op, what, 1.0, (pt, &hp)));
            }
        }
    }
    // The sandbox's cost: the default (sandboxed) server against the same server with
    // `--sandbox none --seccomp none`, paired per repetition; "within the noise" is taken as at
    // least 0.95x, the spread repetitions of one subject show on this machine.
    for op in [Op::Readv, Op::Writev] {
        if cell(cells, VECIO_NO_SANDBOX, op, true).is_some() {
            let what = format!("{} sandboxed vs --sandbox none", op.name());
            t.push(goal(cells, op, what, 0.95, (VECIO, VECIO_NO_SANDBOX)));
        }
    }
    t
}

/// The packed path's goals for `op`: against one request per segment, the best libfuse
/// example and the native file.
fn packed_goals(cells: &[Cell], op: Op, t: &mut Vec<Goal>) {
    let name = op.name();
    let what = format!("{name} packed / per-segment");
    t.push(goal(cells, op, what, 4.5, (VECIO, VECIO_PER_SEGMENT)));
    // Peers of the packed path: libfuse servers whose requests reach them (not the kernel
    // passthrough of passthrough_hp, which is --passthrough-direct's peer).
    let hp_pt = format!("libfuse {}", subjects::HP_PASSTHROUGH);
    let example = |c: &&Cell| c.subject.starts_with("libfuse") && c.op == op && c.direct;
    let best = cells
        .iter()
        .filter(example)
        .filter(|c| c.subject != hp_pt && c.error.is_none())
        .max_by(|a, b| {
            let m = |c: &Cell| c.mb_s.map_or(0.0, |s| s.median);
            m(a).total_cmp(&m(b))
        });
    let failed = cells
        .iter()
        .filter(example)
        .find_map(|c| c.error.as_deref());
    let v = cell(cells, VECIO, op, true);
    let vecio_works = v.is_some_and(|c| c.error.is_none() && !c.samples.is_empty());
    t.push(Goal {
        what: match (best, failed) {
            (Some(b), _) => format!("{name} vs best working libfuse example ({})", b.subject),
            (None, Some(e)) => format!("{name} vs libfuse examples: none works ({e})"),
            (None, None) => format!("{name} vs best working libfuse example"),
        },
        want: 1.0,
        got: ratio(v, best),
        // Every example fails where vecio serves: vecio meets the target, said as such.
        only_vecio_works: best.is_none() && failed.is_some() && vecio_works,
    });
    let what = format!("{name} vs native");
    t.push(goal(cells, op, what, 0.6, (VECIO, NATIVE)));
}
