//! The reproduction report: one section per source document (seed 000 to 004), each with what
//! the seed claimed, the set-up here, the measured tables and SVG plots, written as a
//! self-contained `index.html` (no network needed: plots are inline SVG, styles and the one
//! script are inline), `report.md` (plots beside it in `plots/`) and `results.json`.
//!
//! Everything is built from an [`AllResults`], so a recorded `results.json` renders again
//! without running anything. Numeric table cells carry the JSON pointer of the figure they
//! show, and the HTML repeats it (`data-json`, `data-value`) so the numbers can be checked
//! against the JSON mechanically.

pub mod compare;
pub(crate) mod fmt;
pub mod html;
pub mod markdown;
pub mod plot;
pub(crate) mod seeds;
pub(crate) mod setup;
pub mod summary;
pub mod verdict;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::experiments::results::AllResults;
use crate::experiments::{callcost, fuse, loopdev, nowait, writev};
use crate::harness::target::Target;

pub use seeds::{Claim, Seed, SEEDS};
pub use summary::{summary_rows, SummaryRow};

/// One cell of a table: text, or a number with where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Plain text.
    Text(String),
    /// A figure: shown as `text`, exactly `value`; `json` is its JSON pointer in
    /// `results.json`, `None` for figures derived from several (ratios, sums).
    Num {
        /// As shown.
        text: String,
        /// The exact value.
        value: f64,
        /// Where it is in `results.json`.
        json: Option<String>,
    },
}

impl Cell {
    /// A text cell.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    /// A figure read from `results.json` at `pointer`, shown with `prec` decimals.
    pub fn json(value: f64, prec: usize, pointer: String) -> Cell {
        Cell::Num {
            text: format!("{value:.prec$}"),
            value,
            json: Some(pointer),
        }
    }

    /// A derived figure shown as `text`.
    pub fn derived(value: f64, text: String) -> Cell {
        Cell::Num {
            text,
            value,
            json: None,
        }
    }

    /// What the cell shows.
    pub fn shown(&self) -> &str {
        match self {
            Cell::Text(s) => s,
            Cell::Num { text, .. } => text,
        }
    }
}

/// A table of a section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataTable {
    /// What it shows.
    pub title: String,
    /// Column headers.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<Cell>>,
}

impl DataTable {
    /// An empty table with these headers.
    pub fn new(title: impl Into<String>, header: &[&str]) -> DataTable {
        DataTable {
            title: title.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }
}

/// A plot of a section, as SVG text.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// Its id, unique in the report (also its file name in `plots/`).
    pub id: String,
    /// Title.
    pub title: String,
    /// What to read in it.
    pub caption: String,
    /// The SVG document.
    pub svg: String,
}

/// One section of the report: one source document.
#[derive(Debug, Clone)]
pub struct Section {
    /// The seed it reproduces.
    pub seed: &'static Seed,
    /// `Some(why)` when nothing was measured for it.
    pub not_measured: Option<String>,
    /// The set-up here, as `(what, value)` lines.
    pub setup: Vec<(String, String)>,
    /// Measured tables.
    pub tables: Vec<DataTable>,
    /// Plots.
    pub plots: Vec<Plot>,
    /// The experiment's targets and whether they were met.
    pub targets: Vec<Target>,
    /// Notes under the tables.
    pub notes: Vec<String>,
}

impl Section {
    /// A section for `seed` saying it was not measured and why.
    pub fn not_measured(seed: &'static Seed, why: impl Into<String>) -> Section {
        Section {
            seed,
            not_measured: Some(why.into()),
            setup: Vec::new(),
            tables: Vec::new(),
            plots: Vec::new(),
            targets: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// An empty measured section for `seed` with its set-up lines.
    pub(crate) fn measured(seed: &'static Seed, setup: Vec<(String, String)>) -> Section {
        Section {
            setup,
            not_measured: None,
            ..Section::not_measured(seed, "")
        }
    }
}

/// Why a seed's experiment has no data in `r`.
pub(crate) fn why_missing(r: &AllResults, key: &str) -> String {
    r.why_not(key)
        .map(str::to_string)
        .unwrap_or_else(|| "not in this results file".to_string())
}

/// Every section, seed 000 to 004.
pub fn sections(r: &AllResults) -> Result<Vec<Section>> {
    Ok(vec![
        writev::section::section(r)?,
        loopdev::section::section(r)?,
        nowait::section::section(r)?,
        callcost::section::section(r)?,
        fuse::section::section(r)?,
    ])
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
pub fn write(dir: &Path, r: &AllResults) -> Result<ReportFiles> {
    std::fs::create_dir_all(dir.join("plots"))
        .with_context(|| format!("creating {}", dir.display()))?;
    let sections = sections(r)?;
    let summary = summary_rows(r);
    let json = dir.join("results.json");
    r.save(&json)?;
    let mut plots = 0;
    for p in sections.iter().flat_map(|s| &s.plots) {
        let path = dir.join("plots").join(format!("{}.svg", p.id));
        std::fs::write(&path, &p.svg).with_context(|| format!("writing {}", path.display()))?;
        plots += 1;
    }
    let html = dir.join("index.html");
    std::fs::write(&html, html::render(r, &summary, &sections))
        .with_context(|| format!("writing {}", html.display()))?;
    let markdown = dir.join("report.md");
    std::fs::write(&markdown, markdown::render(r, &summary, &sections))
        .with_context(|| format!("writing {}", markdown.display()))?;
    Ok(ReportFiles {
        html,
        markdown,
        json,
        plots,
    })
}
