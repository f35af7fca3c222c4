//! `vecio bench tree` as a user runs it, on a small tree: every subject has every phase with a
//! positive time, the targets are judged, and no mount, server or scratch directory is left.
//! Skips, saying why, when not root or without /dev/fuse.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{mounts_under, processes_using, scratch_dir, vecio};

#[test]
fn bench_tree_times_every_phase_and_cleans_up() {
    if !rustix::process::geteuid().is_root() || !Path::new("/dev/fuse").exists() {
        eprintln!("skipped: vecio bench tree mounts file systems and needs root and /dev/fuse");
        return;
    }
    let dir = scratch_dir("vecio-tree-bench-test-");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let json = dir.path().join("t.json");
    let out = vecio(
        &work,
        &[
            "bench",
            "tree",
            "--files",
            "300",
            "--repeat",
            "1",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_using(&work).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (mounts, procs) = (mounts_under(&work), processes_using(&work));
    // Detached before asserting: the scratch directory's removal must never walk a mount.
    vecio_bench::harness::cleanup::detach_mounts_under(&work);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(mounts, Vec::<String>::new(), "mounts left");
    assert_eq!(procs, Vec::<String>::new(), "processes left");
    let left: Vec<PathBuf> = std::fs::read_dir(&work)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(left, Vec::<PathBuf>::new(), "files left");

    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["tree"]["files"], 300);
    let results = v["results"].as_array().expect("results");
    let names: Vec<&str> = results
        .iter()
        .filter_map(|r| r["subject"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "native",
            "vecio fuse",
            "vecio fuse --passthrough",
            "vecio fuse --no-uring"
        ]
    );
    for r in results {
        let name = &r["subject"];
        assert!(r["error"].is_null(), "{name}: {}", r["error"]);
        let phases = r["phases"].as_array().expect("phases");
        let got: Vec<&str> = phases.iter().filter_map(|p| p["phase"].as_str()).collect();
        assert_eq!(got, ["Extract", "ColdWalk", "Read", "Remove"], "{name}");
        for p in phases {
            let s = p["seconds"]["median"].as_f64().unwrap_or(0.0);
            assert!(s > 0.0, "{name} {}: {s} s", p["phase"]);
        }
        assert!(r["total"]["median"].as_f64().unwrap_or(0.0) > 0.0, "{name}");
        // The servers' requests per phase, from their SIGUSR1 counts: 300 files extracted are
        // at least 300 creates; native counts none.
        let extract = &phases[0]["requests"];
        if name == "native" {
            assert_eq!(extract.as_array().map(Vec::len), Some(0), "{name}");
        } else {
            let created = extract[0]["CREATE"].as_u64().unwrap_or(0);
            assert!(created >= 300, "{name}: {extract}");
        }
    }
    assert!(stdout.contains("req/file"), "{stdout}");
    // Whole life and extraction against native, judged; passthrough_hp's not measured.
    let targets = v["targets"].as_array().expect("targets");
    assert_eq!(targets.len(), 2, "{targets:?}");
    assert!(targets.iter().all(|t| t["met"].is_boolean()));
    assert!(stdout.contains("Targets:"), "{stdout}");

    // Its own --json renders as a report of this one section, its summary rows judged.
    let out = vecio(
        dir.path(),
        &["bench", "report", json.to_str().unwrap(), "--out", "r"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let md = std::fs::read_to_string(dir.path().join("r/report.md")).expect("report.md");
    assert!(md.contains("a source tree's life"), "{md}");
    assert!(
        md.contains("| 004 | whole life: vecio fuse/native |"),
        "{md}"
    );
    assert!(!md.contains("## Seed 000"), "{md}");
    assert!(md.contains("](plots/s004-tree.svg)"), "{md}");
    let svg = std::fs::read_to_string(dir.path().join("r/plots/s004-tree.svg")).expect("plot");
    assert!(
        svg.contains("vecio fuse --no-uring") && svg.contains("whole life"),
        "{svg}"
    );
    // And compare reads it as the other experiments' files.
    let j = json.to_str().unwrap();
    let out = vecio(dir.path(), &["bench", "compare", j, j]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("vecio fuse / extract s"), "{stdout}");
}
