//! Seed 004, FUSE scatter-gather direct I/O: its section and summary rows.
//!
//! The FUSE experiment's figures arrive in `AllResults::fuse`. Until this file renders them,
//! the section says "not measured" with the reason. Rendering them takes the same three parts
//! as the other seeds' files: set-up lines (`setup::lines`, tools `["libfuse"]`), a table whose
//! figures carry their JSON pointers (`/fuse/...`), and `plot::bars` with the seed's ratios
//! (writev 480/107 = 4.5x, readv 569/114 = 5.0x) marked on vecio's bars.

use anyhow::Result;

use super::summary::SummaryRow;
use super::{seeds, why_missing, Section};
use crate::results::AllResults;

/// The section.
pub(super) fn section(r: &AllResults) -> Result<Section> {
    let seed = seeds::seed("fuse");
    Ok(Section::not_measured(seed, why(r)))
}

fn why(r: &AllResults) -> String {
    match &r.fuse {
        None => why_missing(r, "fuse"),
        Some(_) => "this report version cannot render the FUSE figures yet (they are in \
                    results.json)"
            .into(),
    }
}

/// The seed's results beside vecio's.
pub(super) fn summary(_r: &AllResults) -> Vec<SummaryRow> {
    vec![
        SummaryRow::missing("004", "32 x 4 KiB O_DIRECT writev MB/s", "107->480"),
        SummaryRow::missing("004", "32 x 4 KiB O_DIRECT readv MB/s", "114->569"),
    ]
}
