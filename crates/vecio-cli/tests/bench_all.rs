//! `vecio bench all --quick` on small files runs every experiment (or says why one cannot run)
//! and exits 0 with its summary, JSON and report; `vecio bench compare` flags exactly the
//! changes beyond the noise; `vecio bench report` renders a recorded run.

mod common;

use std::path::{Path, PathBuf};

use common::{scratch_dir, vecio};
use serde_json::Value;

/// The recorded run the report tests use.
fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../vecio-bench/tests/fixtures/results.json")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("reading JSON");
    serde_json::from_str(&text).expect("parsing JSON")
}

#[test]
fn bench_all_quick_measures_everything_and_writes_the_report() {
    let dir = scratch_dir("vecio-all-");
    let out = vecio(
        dir.path(),
        &[
            "bench",
            "all",
            "--quick",
            "--size",
            "16M",
            "--runtime",
            "0.1",
            "--repeat",
            "1",
            "--no-callgrind",
            "--json",
            "all.json",
            "--report",
            "report",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(stdout.contains("Summary: each seed's result"), "{stdout}");
    for step in ["[1/6] writev", "[3/6] tokio", "[5/6] loop", "[6/6] fuse"] {
        assert!(
            stderr.contains(step),
            "progress line {step} missing: {stderr}"
        );
    }
    let j = read_json(&dir.path().join("all.json"));
    for key in ["writev", "nowait", "tokio", "callcost"] {
        assert!(
            j[key].is_object(),
            "{key} not measured: {}",
            j["not_measured"]
        );
    }
    let not_measured = j["not_measured"].as_array().cloned().unwrap_or_default();
    let listed = |k: &str| not_measured.iter().any(|n| n["experiment"] == k);
    assert!(
        j["loop"].is_object() || listed("loop"),
        "loop neither measured nor explained"
    );
    if j["loop"].is_object() {
        let tls = &j["loop"]["tls"];
        let measured = tls["cells"].as_array().is_some_and(|c| c.len() == 8);
        assert!(
            measured || tls["skipped"].is_string(),
            "loop's TLS rows neither measured nor explained: {tls}"
        );
    }
    // Where it can mount (root, /dev/fuse: CI) the FUSE experiment runs; elsewhere it says why.
    if vecio_bench::experiments::fuse::cannot_run().is_none() {
        let cells = j["fuse"]["cells"].as_array().cloned().unwrap_or_default();
        assert!(
            !cells.is_empty(),
            "fuse not measured: {}",
            j["not_measured"]
        );
        let vecio = cells
            .iter()
            .find(|c| c["subject"] == "vecio fuse" && c["direct"] == true)
            .expect("a vecio fuse cell");
        assert!(vecio["mb_s"]["median"].as_f64().is_some_and(|v| v > 0.0));
        let html =
            std::fs::read_to_string(dir.path().join("report/index.html")).expect("index.html");
        assert!(html.contains("id=\"s004-direct\""), "the fuse plot");
    } else {
        assert!(listed("fuse"), "fuse neither measured nor explained");
    }
    assert!(
        not_measured.iter().all(|n| n["failed"] == false),
        "{not_measured:?}"
    );
    assert_eq!(j["elapsed"].as_array().map(Vec::len), Some(6));
    assert!(j["setup"]["scratch"]["capabilities"]["o_direct"].is_object());
    // Recorded from `vecio info --json`, run by the bench as a process.
    assert_eq!(j["setup"]["scratch"]["kind"], "directory");
    let mb = j["writev"]["rows"][0]["engines"][0]["mb_s"]["median"].as_f64();
    assert!(mb.is_some_and(|v| v > 0.0), "a real figure: {mb:?}");
    for f in ["index.html", "report.md", "results.json"] {
        assert!(dir.path().join("report").join(f).is_file(), "{f} missing");
    }
    assert_eq!(read_json(&dir.path().join("report/results.json")), j);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("listing the directory")
        .flatten()
        .filter(|e| e.path().is_dir() && e.file_name() != "report")
        .collect();
    assert!(left.is_empty(), "scratch directories left behind: {left:?}");
}

#[test]
fn bench_compare_flags_changes_beyond_the_noise() {
    let dir = scratch_dir("vecio-compare-");
    let a = fixture();
    let mut j = read_json(&a);
    let cell = &mut j["writev"]["rows"][0]["engines"][2]["mb_s"]["median"];
    let halved = cell.as_f64().expect("a figure") / 2.0;
    *cell = halved.into();
    let b = dir.path().join("b.json");
    std::fs::write(&b, j.to_string()).expect("writing b.json");
    let (a_s, b_s) = (a.to_string_lossy(), b.to_string_lossy());
    let out = vecio(dir.path(), &["bench", "compare", &a_s, &b_s]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let worse: Vec<&str> = text.lines().filter(|l| l.contains(">> WORSE")).collect();
    assert_eq!(worse.len(), 1, "{text}");
    assert!(worse[0].contains("random writev / uring MB/s"), "{text}");
    assert!(text.contains("0 better, 1 worse"), "{text}");

    let same = vecio(dir.path(), &["bench", "compare", &a_s, &a_s]);
    let same = String::from_utf8_lossy(&same.stdout);
    assert!(same.contains("0 better, 0 worse"), "{same}");

    // One experiment's own --json compares with the writev part of a full run.
    let w = dir.path().join("w.json");
    std::fs::write(&w, read_json(&a)["writev"].to_string()).expect("writing w.json");
    let one = vecio(
        dir.path(),
        &["bench", "compare", &w.to_string_lossy(), &a_s],
    );
    let one = String::from_utf8_lossy(&one.stdout);
    assert!(
        one.contains("random readv / sync MB/s") && !one.contains("nowait "),
        "{one}"
    );
    // So does `vecio bench fuse --json` with the fuse part.
    let f = dir.path().join("f.json");
    std::fs::write(&f, read_json(&a)["fuse"].to_string()).expect("writing f.json");
    let one = vecio(
        dir.path(),
        &["bench", "compare", &f.to_string_lossy(), &a_s],
    );
    let one = String::from_utf8_lossy(&one.stdout);
    assert!(
        one.contains("vecio fuse / writev O_DIRECT MB/s")
            && !one.lines().any(|l| l.starts_with("writev ")),
        "{one}"
    );

    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"x\": 1}").expect("writing junk");
    let bad = vecio(
        dir.path(),
        &["bench", "compare", &junk.to_string_lossy(), &a_s],
    );
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

#[test]
fn bench_report_renders_a_recorded_run() {
    let dir = scratch_dir("vecio-report-cli-");
    let out = vecio(
        dir.path(),
        &[
            "bench",
            "report",
            &fixture().to_string_lossy(),
            "--out",
            "r",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Summary:"));
    let html = std::fs::read_to_string(dir.path().join("r/index.html")).expect("index.html");
    assert_eq!(html.matches("<figure class=\"plot\"").count(), 15);
}

/// One experiment's own `--json` file (what `vecio bench callcost --json` writes) renders as a
/// report of that experiment alone; a JSON file of no vecio figures is refused in one line.
#[test]
fn bench_report_renders_one_experiments_own_json() {
    let dir = scratch_dir("vecio-report-own-");
    let all: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture()).expect("fixture")).expect("fixture");
    let own = dir.path().join("callcost.json");
    std::fs::write(&own, all["callcost"].to_string()).expect("writing callcost.json");
    let out = vecio(
        dir.path(),
        &["bench", "report", &own.to_string_lossy(), "--out", "r"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let md = std::fs::read_to_string(dir.path().join("r/report.md")).expect("report.md");
    assert!(md.contains("## Seed 003"), "{md}");
    assert!(
        !md.contains("## Seed 000") && !md.contains("not in this results file"),
        "{md}"
    );
    assert!(md.contains("read_at instructions/raw pread"), "{md}");

    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"x\": 1}").expect("writing junk");
    let bad = vecio(
        dir.path(),
        &["bench", "report", &junk.to_string_lossy(), "--out", "j"],
    );
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("no vecio figures"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        !dir.path().join("j").exists(),
        "nothing written for a refused file"
    );
}
