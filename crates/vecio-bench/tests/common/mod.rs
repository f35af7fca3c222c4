//! Shared by the report tests: the recorded fixture and the report built from it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use vecio_bench::experiment::Section;
use vecio_bench::registry::EXPERIMENTS;
use vecio_bench::report::{self, ReportFiles};
use vecio_bench::results::AllResults;

/// A recorded `vecio bench all --quick` run (`--size 32M --runtime 0.25 --repeat 2`), from
/// before `tokio` had its section.
pub fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results.json")
}

/// A recorded `vecio bench tokio --json` (a one-second smoke run: its figures mean nothing).
pub fn tokio_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokio.json")
}

fn read(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("reading a fixture");
    serde_json::from_str(&text).expect("the fixture is JSON")
}

/// The fixture with the tokio run in it, as untyped JSON.
pub fn fixture_json() -> serde_json::Value {
    let mut all = read(&fixture_path());
    all["tokio"] = read(&tokio_path());
    all
}

/// The fixture with the tokio run in it, parsed.
pub fn fixture() -> AllResults {
    serde_json::from_value(fixture_json()).expect("the fixture parses")
}

/// The report's sections of `r`, every experiment's.
pub fn sections(r: &AllResults) -> Vec<Section> {
    report::sections(r, &EXPERIMENTS).expect("sections")
}

/// The section of experiment `key`.
pub fn section<'a>(sections: &'a [Section], key: &str) -> &'a Section {
    sections
        .iter()
        .find(|s| s.key == key)
        .expect("a section per experiment")
}

/// The report of `r`, written into a fresh directory under the target directory.
pub fn write_report(r: &AllResults) -> (tempfile::TempDir, ReportFiles) {
    let dir = tempfile::Builder::new()
        .prefix("vecio-report-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("a scratch directory");
    let files =
        report::write(&dir.path().join("report"), r, &EXPERIMENTS).expect("the report builds");
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
