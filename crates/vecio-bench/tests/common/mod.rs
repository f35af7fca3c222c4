//! Shared by the report tests: the recorded fixture and the report built from it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use vecio_bench::experiments::results::AllResults;
use vecio_bench::report::{self, ReportFiles};

/// A recorded `vecio bench all --quick` run (`--size 32M --runtime 0.25 --repeat 2`).
pub fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results.json")
}

/// The fixture, parsed.
pub fn fixture() -> AllResults {
    AllResults::load(&fixture_path()).expect("the fixture parses")
}

/// The fixture as untyped JSON.
pub fn fixture_json() -> serde_json::Value {
    let text = std::fs::read_to_string(fixture_path()).expect("reading the fixture");
    serde_json::from_str(&text).expect("the fixture is JSON")
}

/// The report of `r`, written into a fresh directory under the target directory.
pub fn write_report(r: &AllResults) -> (tempfile::TempDir, ReportFiles) {
    let dir = tempfile::Builder::new()
        .prefix("vecio-report-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("a scratch directory");
    let files = report::write(&dir.path().join("report"), r).expect("the report builds");
    (dir, files)
}

/// Every value of attribute `name` in `html`, in order.
pub fn attr_values<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let pat = format!("{name}=\"");
    html.match_indices(&pat)
        .filter_map(|(i, _)| {
            let rest = &html[i + pat.len()..];
            rest.find('"').map(|end| &rest[..end])
        })
        .collect()
}
