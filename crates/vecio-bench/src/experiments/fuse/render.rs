//! The FUSE experiment's tables.

use super::{cell, ratio, Cell, FuseReport, SEED_READV, SEED_WRITEV, VECIO};
use crate::experiments::fuse::workload::Op;
use vecio_host::table::Table;

fn mb(c: Option<&Cell>) -> String {
    match c {
        Some(Cell { error: Some(e), .. }) => format!("error: {e}"),
        Some(Cell { mb_s: Some(s), .. }) => {
            format!("{:.0} ±{:.0}%", s.median, s.relative_spread() * 100.0)
        }
        _ => "-".into(),
    }
}

fn x(r: Option<f64>) -> String {
    match r {
        Some(r) => format!("{r:.2}x"),
        None => "-".into(),
    }
}

/// The report as text tables.
pub fn render(r: &FuseReport) -> String {
    let mut out = format!(
        "FUSE scatter-gather direct I/O (seed 004): 32 x 4 KiB O_DIRECT preadv/pwritev in a loop, one thread\n\
         {} ({}); {} MiB file, {:.1} s x {}; kernel max_pages {}; {} UTC\n\
         MB/s: median ± relative std dev; ratios: median of per-repetition ratios to vecio fuse\n\n",
        r.meta.fs,
        r.meta.kernel,
        r.size >> 20,
        r.runtime_s,
        r.repeat,
        r.max_pages_limit,
        r.meta.date_utc,
    );
    out.push_str(&direct_table(r));
    if let Err(why) = &r.libfuse {
        out.push_str(&format!("libfuse examples not measured: {why}\n"));
    }
    let buffered: Vec<&Cell> = r.cells.iter().filter(|c| !c.direct).collect();
    if !buffered.is_empty() {
        out.push_str("\nbuffered (no O_DIRECT) 32 x 4 KiB preadv/pwritev: FUSE_PASSTHROUGH against the plain path\n");
        let mut t = Table::new(["subject", "readv MB/s", "writev MB/s"]);
        for s in &r.subjects {
            let rv = cell(&r.cells, &s.name, Op::Readv, false);
            if rv.is_none() {
                continue;
            }
            t.row([
                s.name.clone(),
                mb(rv),
                mb(cell(&r.cells, &s.name, Op::Writev, false)),
            ]);
        }
        out.push_str(&t.to_string());
    }
    out.push_str("\ntargets\n");
    for t in &r.targets {
        let mark = match t.met() {
            Some(true) => "ok",
            Some(false) => "MISS",
            None => "not measured",
        };
        let got = if t.only_vecio_works {
            "only vecio works".to_string()
        } else {
            x(t.got)
        };
        out.push_str(&format!(
            "  {:<60} want >= {:.2}x  got {}  {}\n",
            t.what, t.want, got, mark
        ));
    }
    out
}

/// The O_DIRECT table: MB/s per subject and operation, each over vecio fuse, and the seed's
/// before and after.
fn direct_table(r: &FuseReport) -> String {
    let mut t = Table::new([
        "subject",
        "readv MB/s",
        "writev MB/s",
        "readv vs vecio",
        "writev vs vecio",
    ]);
    for s in r
        .subjects
        .iter()
        .filter(|s| cell(&r.cells, &s.name, Op::Readv, true).is_some())
    {
        let rv = cell(&r.cells, &s.name, Op::Readv, true);
        let wv = cell(&r.cells, &s.name, Op::Writev, true);
        t.row([
            s.name.clone(),
            mb(rv),
            mb(wv),
            x(ratio(rv, cell(&r.cells, VECIO, Op::Readv, true))),
            x(ratio(wv, cell(&r.cells, VECIO, Op::Writev, true))),
        ]);
    }
    t.row([
        "seed: before -> after".to_string(),
        format!("{:.0} -> {:.0}", SEED_READV.0, SEED_READV.1),
        format!("{:.0} -> {:.0}", SEED_WRITEV.0, SEED_WRITEV.1),
        format!("{:.2}x gain", SEED_READV.1 / SEED_READV.0),
        format!("{:.2}x gain", SEED_WRITEV.1 / SEED_WRITEV.0),
    ]);
    t.to_string()
}
