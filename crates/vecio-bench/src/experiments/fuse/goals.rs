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

pub(super) fn targets(cells: &[Cell]) -> Vec<Goal> {
    let mut t = Vec::new();
    for op in [Op::Readv, Op::Writev] {
        packed_goals(cells, op, &mut t);
    }
    // The kernel serving O_DIRECT opens on the backing file (FUSE_PASSTHROUGH), when measured.
    for op in [Op::Readv, Op::Writev] {
        passthrough_goals(cells, op, &mut t);
    }
    for op in [Op::Readv, Op::Writev] {
        sandbox_goal(cells, op, &mut t);
    }
    t
}

/// The sandbox's cost for `op`: the default (sandboxed) server against the same server with
/// `--sandbox none --seccomp none`, paired per repetition; "within the noise" is taken as at
/// least 0.95x, the spread repetitions of one subject show on this machine.
fn sandbox_goal(cells: &[Cell], op: Op, t: &mut Vec<Goal>) {
    if let Some(off) = cell(cells, VECIO_NO_SANDBOX, op, true) {
        t.push(Goal {
            what: format!("{} sandboxed vs --sandbox none", op.name()),
            want: 0.95,
            got: ratio(cell(cells, VECIO, op, true), Some(off)),
            only_vecio_works: false,
        });
    }
}

/// The packed path's goals for `op`: against one request per segment, the best libfuse
/// example and the native file.
fn packed_goals(cells: &[Cell], op: Op, t: &mut Vec<Goal>) {
    let v = cell(cells, VECIO, op, true);
    t.push(Goal {
        what: format!("{} packed / per-segment", op.name()),
        want: 4.5,
        got: ratio(v, cell(cells, VECIO_PER_SEGMENT, op, true)),
        only_vecio_works: false,
    });
    // Peers of the packed path: libfuse servers whose requests reach them (not the kernel
    // passthrough of passthrough_hp, which is --passthrough-direct's peer below).
    let hp_pt = format!("libfuse {}", subjects::HP_PASSTHROUGH);
    let best = cells
        .iter()
        .filter(|c| {
            c.subject.starts_with("libfuse")
                && c.subject != hp_pt
                && c.op == op
                && c.direct
                && c.error.is_none()
        })
        .max_by(|a, b| {
            let m = |c: &Cell| c.mb_s.map_or(0.0, |s| s.median);
            m(a).total_cmp(&m(b))
        });
    let failed: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.subject.starts_with("libfuse") && c.op == op && c.direct && c.error.is_some())
        .collect();
    let vecio_works = v.is_some_and(|c| c.error.is_none() && !c.samples.is_empty());
    t.push(Goal {
        what: match best {
            Some(b) => format!(
                "{} vs best working libfuse example ({})",
                op.name(),
                b.subject
            ),
            None if !failed.is_empty() => format!(
                "{} vs libfuse examples: none works ({})",
                op.name(),
                failed[0].error.as_deref().unwrap_or("error")
            ),
            None => format!("{} vs best working libfuse example", op.name()),
        },
        want: 1.0,
        got: ratio(v, best),
        // Every example fails where vecio serves: vecio meets the target, said as such.
        only_vecio_works: best.is_none() && !failed.is_empty() && vecio_works,
    });
    t.push(Goal {
        what: format!("{} vs native", op.name()),
        want: 0.6,
        got: ratio(v, cell(cells, NATIVE, op, true)),
        only_vecio_works: false,
    });
}

/// `--passthrough-direct`'s goals for `op`, when it was measured: against the native file and
/// libfuse's passthrough_hp with passthrough.
fn passthrough_goals(cells: &[Cell], op: Op, t: &mut Vec<Goal>) {
    if let Some(pt) = cell(cells, VECIO_PASSTHROUGH_DIRECT, op, true) {
        t.push(Goal {
            what: format!("{} --passthrough-direct vs native", op.name()),
            want: 0.95,
            got: ratio(Some(pt), cell(cells, NATIVE, op, true)),
            only_vecio_works: false,
        });
        let hp = format!("libfuse {}", subjects::HP_PASSTHROUGH);
        if let Some(hp) = cell(cells, &hp, op, true) {
            t.push(Goal {
                what: format!("{} --passthrough-direct vs {}", op.name(), hp.subject),
                want: 1.0,
                got: ratio(Some(pt), Some(hp)),
                only_vecio_works: false,
            });
        }
    }
}
