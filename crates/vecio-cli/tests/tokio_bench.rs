//! `vecio bench tokio --http` as a user runs it, shortened: both servers (the example through
//! vecio_tokio::fs and through ServeDir) have figures for every workload with requests served,
//! the HTTP targets are judged from them, the fourth path (tokio::fs on tokio's io_uring) has
//! figures or says why not, and neither the servers nor the served tree outlive the run. Skips,
//! saying why, without wrk or without the built example server.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{scratch_dir, vecio};

/// The example server where the bench looks for it: `examples/serve` beside the binaries.
fn serve_example() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_vecio")).with_file_name("examples/serve")
}

/// Processes whose command line mentions `dir`.
fn processes_under(dir: &Path) -> Vec<String> {
    let d = dir.to_string_lossy().to_string();
    let Ok(list) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    list.flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&d))
        .collect()
}

#[test]
fn bench_tokio_http_measures_both_servers_and_cleans_up() {
    if Command::new("wrk").arg("--version").output().is_err() {
        eprintln!("skipped: wrk is not installed (scripts/setup installs it)");
        return;
    }
    if !serve_example().is_file() {
        eprintln!(
            "skipped: the example server is not built at {} (the test build, `cargo test \
             --workspace --no-run` with its profile, builds it; or `cargo build --release -p \
             vecio-tokio --example serve`)",
            serve_example().display()
        );
        return;
    }
    let dir = scratch_dir("vecio-tokio-bench-test-");
    let json = dir.path().join("tokio.json");
    let out = vecio(
        dir.path(),
        &[
            "bench",
            "tokio",
            "--http",
            "--runtime",
            "0.5",
            "--repeat",
            "1",
            "--medium",
            "8M",
            "--size",
            "32M",
            "--http-uncached",
            "8M",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();

    // Both servers, every workload, requests served.
    let http = &v["http"];
    let cells = http["cells"].as_array().expect("http cells");
    for workload in ["small", "large", "uncached"] {
        for server in ["vecio", "servedir"] {
            let c = cells
                .iter()
                .find(|c| c["workload"] == workload && c["server"] == server)
                .unwrap_or_else(|| panic!("no cell {workload} / {server}"));
            let rps = c["rps"][0].as_f64().unwrap_or(0.0);
            assert!(rps > 0.0, "{workload} / {server}: no requests/s: {c}");
            assert!(c["p99_us"][0].as_f64().unwrap_or(0.0) > 0.0, "{c}");
        }
    }
    assert_eq!(http["wrk_threads"], 1);

    // The targets are judged from the figures, not written down: each says its ratio.
    let targets: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("tokio --http:"))
        .collect();
    assert_eq!(targets.len(), 6, "{stdout}");
    for t in &targets {
        assert!(t.contains("[ ok ]") || t.contains("[MISS]"), "{t}");
    }
    assert!(
        targets
            .iter()
            .any(|t| t.contains("small cached files, requests/s") && t.ends_with('x')),
        "{stdout}"
    );

    // The fourth path: figures, or the reason there are none.
    let paths = v["cells"].as_array().expect("cells");
    for scenario in ["cached", "direct", "mix"] {
        let c = paths
            .iter()
            .find(|c| c["scenario"] == scenario && c["path"] == "tokio::fs+io_uring")
            .unwrap_or_else(|| panic!("no tokio::fs+io_uring cell for {scenario}"));
        let measured = c["mib_s"].as_array().is_some_and(|m| !m.is_empty());
        let why = c["note"].as_str().unwrap_or("");
        assert!(
            measured || !why.is_empty(),
            "{scenario}: neither figures nor a reason: {c}"
        );
        if !measured {
            assert!(stdout.contains(why), "the reason is in the report: {why}");
        }
    }

    // Nothing left behind: no server, no served tree.
    assert!(
        processes_under(dir.path()).is_empty(),
        "still running: {:?}",
        processes_under(dir.path())
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("vecio-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
