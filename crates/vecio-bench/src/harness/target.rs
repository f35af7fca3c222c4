//! A target of an experiment (what the source document's claim asks of vecio) and whether a
//! run met it: the one type every experiment's targets, the report's sections and its verdict
//! count share.

use serde::{Deserialize, Serialize};

/// One target of the experiment and whether this run met it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Target {
    /// What the target asks and what was measured.
    pub text: String,
    /// Whether it was met.
    pub met: bool,
}
