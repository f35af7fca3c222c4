//! The reproduction report, built from an [`AllResults`] and the experiments' [`Entry`]s alone:
//! `index.html`, `report.md` and `results.json`, and the same tables on the terminal ([`text`]).
//! What it shows: docs/report.md.

pub mod compare;
pub mod html;
pub mod markdown;
pub mod plot;
pub mod summary;
pub mod text;
pub mod verdict;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::experiment::{Entry, Section, SummaryRow};
use crate::results::AllResults;

/// Every experiment's section with its summary rows, in seed order (experiments of one seed
/// in registry order); plots not drawn yet ([`draw`]). A peer of a summary row that is one of
/// vecio's own engines (its io_uring or preadv2 path) or a ratio is no peer: such a cell
/// shows `-` and no ratio.
pub fn sections(r: &AllResults, experiments: &[&dyn Entry]) -> Result<Vec<Section>> {
    let mut out = Vec::new();
    for e in experiments {
        let mut s = match r.report(e.key()) {
            Some(v) => e.section(v, r.setup.as_ref())?,
            None => {
                let why = r.why_not(e.key()).unwrap_or("not in this results file");
                Section::not_measured(e.key(), e.seed(), why)
            }
        };
        s.summary = e.summary(r.report(e.key()));
        for row in &mut s.summary {
            let failed_peers = row.peer.starts_with("none works");
            if row.peer != "-" && !failed_peers && !verdict::is_real_peer(&row.peer) {
                row.peer = "-".into();
                row.ratio = None;
            }
        }
        out.push(s);
    }
    out.sort_by_key(|s| s.seed.id);
    for i in 1..out.len() {
        if out[i - 1].seed.id == out[i].seed.id {
            out[i].anchor = format!("seed-{}-{}", out[i].seed.id, out[i].key);
        }
    }
    Ok(out)
}

/// Every section's summary rows, in order.
pub fn summary_rows(sections: &[Section]) -> Vec<&SummaryRow> {
    sections.iter().flat_map(|s| &s.summary).collect()
}

/// Draws every plot of `sections` as SVG.
pub fn draw(sections: &mut [Section]) -> Result<()> {
    for p in sections.iter_mut().flat_map(|s| s.plots.iter_mut()) {
        p.svg = plot::draw(&p.chart).with_context(|| format!("plot {}", p.id))?;
    }
    Ok(())
}

/// The files a report consists of.
#[derive(Debug, Clone)]
pub struct ReportFiles {
    /// `index.html`.
    pub html: PathBuf,
    /// `report.md`.
    pub markdown: PathBuf,
    /// `results.json`.
    pub json: PathBuf,
    /// Plots written.
    pub plots: usize,
}

/// Writes the report for `r` into `dir` (created if needed).
pub fn write(dir: &Path, r: &AllResults, experiments: &[&dyn Entry]) -> Result<ReportFiles> {
    std::fs::create_dir_all(dir.join("plots"))
        .with_context(|| format!("creating {}", dir.display()))?;
    let mut sections = sections(r, experiments)?;
    draw(&mut sections)?;
    let json = dir.join("results.json");
    r.save(&json)?;
    let put = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        anyhow::Ok(path)
    };
    let mut plots = 0;
    for p in sections.iter().flat_map(|s| &s.plots) {
        put(&format!("plots/{}.svg", p.id), &p.svg)?;
        plots += 1;
    }
    let html = put("index.html", &html::render(r, &sections))?;
    let markdown = put("report.md", &markdown::render(r, &sections))?;
    Ok(ReportFiles {
        html,
        markdown,
        json,
        plots,
    })
}
