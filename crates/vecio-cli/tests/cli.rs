//! The `vecio` command as a user runs it: each experiment on a small scratch file exits 0,
//! prints its table, and writes JSON whose figures are real measurements; bad input exits 2
//! (usage) or 1 (failure) with one line.

mod common;

use common::{scratch_dir, vecio};

use std::path::Path;
use std::process::Command;

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn bench_writev_measures_every_row_and_engine() {
    let dir = scratch_dir("vecio-cli-");
    let out = vecio(
        dir.path(),
        &[
            "bench",
            "writev",
            "--size",
            "16M",
            "--runtime",
            "0.2",
            "--repeat",
            "2",
            "--json",
            "w.json",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for row in [
        "random writev",
        "sequential writev",
        "random readv",
        "sequential readv",
        "random mixed",
        "sequential mixed",
    ] {
        assert!(stdout.contains(row), "row {row} missing from:\n{stdout}");
    }
    let j = json(&dir.path().join("w.json"));
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    for r in rows {
        for e in r["engines"].as_array().unwrap() {
            let mb = e["mb_s"]["median"].as_f64().unwrap();
            assert!(mb > 0.0, "{}: {} measured {mb}", r["name"], e["engine"]);
            assert_eq!(e["samples"].as_array().unwrap().len(), 2);
        }
        let serial = &r["engines"][0]["samples"][0];
        assert!(
            serial["syscalls_per_req"].as_f64().unwrap() >= 7.9,
            "serial makes one call per segment"
        );
        let uring = &r["engines"][2]["samples"][0];
        assert!(
            uring["syscalls_per_req"].as_f64().unwrap() <= 1.01,
            "uring enters once per request"
        );
    }
    // The scratch file is gone afterwards.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert!(left.is_empty(), "scratch directories left behind: {left:?}");
}

#[test]
fn bench_nowait_reports_every_workload_and_config() {
    let dir = scratch_dir("vecio-cli-");
    let out = vecio(
        dir.path(),
        &[
            "bench",
            "nowait",
            "--medium",
            "4M",
            "--size",
            "16M",
            "--runtime",
            "0.2",
            "--repeat",
            "1",
            "--json",
            "n.json",
        ],
    );
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = json(&dir.path().join("n.json"));
    let w = j["workloads"].as_array().unwrap();
    assert_eq!(w.len(), 4);
    for wl in w {
        let cells = wl["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 4);
        for c in cells {
            assert!(
                c["latency"]["count"].as_u64().unwrap() > 0,
                "{} {}",
                wl["name"],
                c["config"]
            );
        }
        // Pool only never tries inline; fast read always does.
        assert_eq!(cells[0]["fast_read"]["attempts"].as_u64(), Some(0));
        assert!(cells[1]["fast_read"]["attempts"].as_u64().unwrap() > 0);
    }
    assert!(j["raw_preadv2"]["p50_us"].as_f64().unwrap() > 0.0);
}

#[test]
fn bench_callcost_times_every_variant() {
    let dir = scratch_dir("vecio-cli-");
    let out = vecio(
        dir.path(),
        &[
            "bench",
            "callcost",
            "--runtime",
            "0.05",
            "--repeat",
            "2",
            "--no-callgrind",
            "--json",
            "c.json",
        ],
    );
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = json(&dir.path().join("c.json"));
    let v = j["variants"].as_array().unwrap();
    assert!(v.len() >= 9);
    for x in v {
        assert!(x["ns"]["median"].as_f64().unwrap() > 10.0, "{}", x["name"]);
    }
}

#[test]
fn callgrind_counts_are_repeatable_when_valgrind_is_installed() {
    if Command::new("valgrind").arg("--version").output().is_err() {
        println!("skipped: valgrind is not installed (scripts/setup installs it)");
        return;
    }
    let dir = scratch_dir("vecio-cli-");
    let page = dir.path().join("page");
    std::fs::write(&page, vec![1u8; 8192]).unwrap();
    let count = || {
        let out = Command::new("valgrind")
            .args([
                "--tool=callgrind",
                "--callgrind-out-file=/dev/null",
                env!("CARGO_BIN_EXE_vecio-bench"),
            ])
            .args(["callcost-worker", "--variant", "read_at", "--calls", "3000"])
            .arg(&page)
            .output()
            .unwrap();
        assert!(out.status.success());
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        err.lines()
            .find_map(|l| l.split("Collected :").nth(1))
            .unwrap()
            .trim()
            .parse::<u64>()
            .unwrap()
    };
    let (a, b) = (count(), count());
    let diff = a.abs_diff(b) as f64 / a as f64;
    assert!(diff < 0.001, "callgrind counts differ: {a} vs {b}");
}

#[test]
fn bad_arguments_exit_2_and_failures_exit_1_with_one_line() {
    let dir = scratch_dir("vecio-cli-");
    let out = vecio(dir.path(), &["bench", "writev", "--size", "12Q"]);
    assert_eq!(out.status.code(), Some(2));
    let out = vecio(dir.path(), &["bench", "writev", "--engines", "warp"]);
    assert_eq!(out.status.code(), Some(2));
    let out = vecio(
        dir.path(),
        &[
            "bench",
            "writev",
            "--dir",
            "/nonexistent/dir/x",
            "--size",
            "16M",
            "--runtime",
            "0.1",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("vecio: "), "{err}");
    let out = vecio(
        dir.path(),
        &["bench", "writev", "--size", "1k", "--runtime", "0.1"],
    );
    assert_eq!(out.status.code(), Some(1), "a size too small is refused");
}
