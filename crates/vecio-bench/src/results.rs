//! `results.json`: everything one `vecio bench all` run measured; an experiment that did not
//! run is named in [`AllResults::not_measured`] with the reason.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::experiment::Entry;
use crate::harness::setup::Setup;

/// The document's format; bumped when a field changes meaning.
pub const FORMAT: u32 = 1;

/// An experiment that did not run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotMeasured {
    /// The experiment's key (`writev`, `loop`, `fuse`, ...).
    pub experiment: String,
    /// Why: the missing tool, the error, or "not built yet".
    pub reason: String,
    /// True when it ran and failed; false when it was left out (a missing tool).
    #[serde(default)]
    pub failed: bool,
}

/// How long an experiment took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Elapsed {
    /// The experiment's key.
    pub experiment: String,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Everything a `vecio bench all` run measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AllResults {
    /// [`FORMAT`].
    #[serde(default)]
    pub format: u32,
    /// True for a `--quick` run (short measurements, small files: a smoke test, not a result).
    #[serde(default)]
    pub quick: bool,
    /// Where and with what it ran.
    #[serde(default)]
    pub setup: Option<Setup>,
    /// Each experiment's figures, under its key (`writev`, `loop`, ...): what its `--json`
    /// would hold.
    #[serde(flatten)]
    pub reports: BTreeMap<String, Value>,
    /// Experiments that did not run, with the reason.
    #[serde(default)]
    pub not_measured: Vec<NotMeasured>,
    /// Time each experiment took.
    #[serde(default)]
    pub elapsed: Vec<Elapsed>,
}

impl AllResults {
    /// The figures of experiment `key`, if it was measured.
    pub fn report(&self, key: &str) -> Option<&Value> {
        self.reports.get(key).filter(|v| !v.is_null())
    }

    /// Why `experiment` was not measured, if it is listed.
    pub fn why_not(&self, experiment: &str) -> Option<&str> {
        self.not_measured
            .iter()
            .find(|n| n.experiment == experiment)
            .map(|n| n.reason.as_str())
    }

    /// Reads a results file: `bench all`'s `--json` (or a report's `results.json`), or one
    /// experiment's `--json` output, recognised by its fields (the most specific match of
    /// `experiments`), whose key is then returned beside it.
    pub fn read(
        path: &Path,
        experiments: &[&dyn Entry],
    ) -> Result<(AllResults, Option<&'static str>)> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let v: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let owners = experiments.iter().filter_map(|e| Some((e, e.owns(&v)?)));
        Ok(match owners.max_by_key(|(_, fields)| *fields) {
            Some((e, _)) => {
                let reports = [(e.key().to_string(), v)].into();
                (
                    AllResults {
                        reports,
                        ..AllResults::default()
                    },
                    Some(e.key()),
                )
            }
            None => {
                let r = serde_json::from_value(v)
                    .with_context(|| format!("{}: not a vecio results file", path.display()))?;
                (r, None)
            }
        })
    }

    /// Writes it as pretty JSON.
    pub fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_document_reads_as_nothing_measured() -> Result<()> {
        let r: AllResults = serde_json::from_str("{}")?;
        assert!(r.report("writev").is_none() && r.reports.is_empty());
        let r: AllResults = serde_json::from_str(
            r#"{"not_measured":[{"experiment":"loop","reason":"fio is not installed"}]}"#,
        )?;
        assert_eq!(r.why_not("loop"), Some("fio is not installed"));
        assert_eq!(r.why_not("fuse"), None);
        let r: AllResults =
            serde_json::from_str(r#"{"quick":true,"tokio":null,"fuse":{"cells":[]}}"#)?;
        assert!(r.quick && r.report("tokio").is_none() && r.report("fuse").is_some());
        Ok(())
    }
}
