//! `vecio bench fuse` as a user runs it, shortened: every vecio subject measures both
//! operations with a real figure, the per-segment mode is slower than the packed one, libfuse
//! examples that fail say with which error, the JSON holds every cell, and nothing stays
//! mounted. Skips, saying why, when not root or without /dev/fuse.

mod common;

use common::{scratch_dir, vecio};

fn mounted_under(dir: &std::path::Path) -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let d = dir.to_string_lossy();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|m| m.starts_with(d.as_ref()))
        .map(String::from)
        .collect()
}

#[test]
fn bench_fuse_measures_every_subject_and_cleans_up() {
    if !rustix::process::geteuid().is_root() || !std::path::Path::new("/dev/fuse").exists() {
        eprintln!("skipped: vecio bench fuse mounts file systems and needs root and /dev/fuse");
        return;
    }
    let dir = scratch_dir("vecio-fuse-bench-test-");
    let json = dir.path().join("fuse.json");
    let out = vecio(
        dir.path(),
        &[
            "bench",
            "fuse",
            "--size",
            "16M",
            "--runtime",
            "0.3",
            "--repeat",
            "1",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        mounted_under(dir.path()).is_empty(),
        "left mounted: {:?}",
        mounted_under(dir.path())
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let cells = v["cells"].as_array().expect("cells");
    let cell = |subject: &str, op: &str, direct: bool| {
        cells
            .iter()
            .find(|c| c["subject"] == subject && c["op"] == op && c["direct"] == direct)
            .unwrap_or_else(|| panic!("no cell {subject} {op} {direct}"))
    };
    let mb = |c: &serde_json::Value| c["mb_s"]["median"].as_f64().unwrap_or(0.0);
    for subject in ["native", "vecio fuse", "vecio fuse --max-pages 1"] {
        for op in ["Readv", "Writev"] {
            let c = cell(subject, op, true);
            assert!(c["error"].is_null(), "{subject} {op}: {}", c["error"]);
            assert!(mb(c) > 0.0, "{subject} {op}: no figure");
        }
    }
    for op in ["Readv", "Writev"] {
        let packed = mb(cell("vecio fuse", op, true));
        let per_segment = mb(cell("vecio fuse --max-pages 1", op, true));
        assert!(
            packed > per_segment,
            "{op}: packed {packed} MB/s <= per-segment {per_segment}"
        );
    }
    // A libfuse example that fails says how (the Debian examples refuse O_DIRECT writes).
    for c in cells
        .iter()
        .filter(|c| c["subject"].as_str().unwrap_or("").starts_with("libfuse"))
    {
        assert!(
            c["error"].is_null() || c["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{c}"
        );
    }
    assert!(stdout.contains("targets"), "{stdout}");
}
