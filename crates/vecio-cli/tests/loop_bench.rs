//! `vecio bench loop` as a user runs it: every server that is installed serves every fio job
//! with a real figure, the direct server leaves nothing of the image in the page cache while
//! the buffered one does, peers that are missing are named with the reason, the TLS rows
//! measure vecio nbd and qemu-nbd plain and over TLS (or say which tool is missing), and no
//! server process outlives the command. Skips, saying why, where fio or its nbd engine is
//! missing.

mod common;

use common::{scratch_dir, vecio};

use std::process::Command;

use vecio_testkit::Peers;

/// Why fio cannot be the NBD client here, if it cannot.
fn fio_missing() -> Option<&'static str> {
    match Command::new("fio").arg("--enghelp=nbd").output() {
        Err(_) => Some("fio is not installed (run scripts/setup)"),
        Ok(o) if !o.status.success() => Some("fio has no nbd engine (built without libnbd)"),
        Ok(_) => None,
    }
}

/// The peers the bench runs by default: the chroot's where it is built, else the host's.
fn default_peers() -> Peers {
    Peers::chroot().unwrap_or_else(Peers::host)
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

#[test]
fn bench_loop_measures_every_server_and_job() {
    if let Some(why) = fio_missing() {
        println!("skipped: {why}");
        return;
    }
    let dir = scratch_dir("vecio-loop-cli-");
    let out = vecio(
        dir.path(),
        &[
            "bench",
            "loop",
            "--size",
            "32M",
            "--runtime",
            "0.3",
            "--repeat",
            "1",
            "--json",
            "l.json",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{stdout}");
    for want in ["4k randread", "128k write", "The seed", "Targets"] {
        assert!(stdout.contains(want), "{want} missing from:\n{stdout}");
    }
    let leftover = processes_mentioning(&dir.path().display().to_string());
    assert!(leftover.is_empty(), "servers left running: {leftover:?}");

    let text = std::fs::read_to_string(dir.path().join("l.json")).unwrap();
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    let skipped = j["skipped"].as_array().unwrap();
    let peers = default_peers();
    // The report says where the peer servers came from, and their versions say so too.
    let named = j["peers"].as_str().unwrap();
    assert!(
        named.starts_with(&peers.name()),
        "{named} vs {}",
        peers.name()
    );
    assert!(stdout.contains("peer servers: "), "{stdout}");
    let mut subjects = vec!["VecioDirect", "VecioBuffered", "FioDirect"];
    for (subject, program) in [("QemuNbd", "qemu-nbd"), ("Nbdkit", "nbdkit")] {
        match skipped.iter().find(|s| s["subject"] == subject) {
            Some(s) => {
                assert!(
                    !peers.installed(program),
                    "{program} is installed ({}) but skipped: {s}",
                    peers.name()
                );
                println!("skipped {program}: {}", s["reason"]);
            }
            None => {
                let server = j["servers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|s| s["subject"] == subject)
                    .unwrap();
                let version = server["version"].as_str().unwrap();
                assert_eq!(
                    version.ends_with("(chroot)"),
                    peers.is_chroot(),
                    "{version}"
                );
                subjects.push(subject)
            }
        }
    }
    check_tls_rows(&j["tls"], &stdout);
    let cells = j["cells"].as_array().unwrap();
    assert_eq!(cells.len(), subjects.len() * 4, "{subjects:?}");
    for subject in &subjects {
        for job in ["RandRead4k", "RandWrite4k", "Read128k", "Write128k"] {
            let c = cells
                .iter()
                .find(|c| c["subject"] == *subject && c["job"] == job)
                .unwrap_or_else(|| panic!("{subject} {job} not measured"));
            let samples = c["samples"].as_array().unwrap();
            assert_eq!(samples.len(), 1);
            let s = &samples[0];
            for field in ["iops", "mb_s", "requests", "bytes"] {
                let v = s[field].as_f64().unwrap();
                assert!(v > 0.0, "{subject} {job}: {field} = {v}");
            }
            if *subject != "FioDirect" {
                let ctx = s["ctx_per_req"].as_f64();
                assert!(ctx.is_some_and(|v| v >= 0.0), "{subject} {job}: {s}");
                let cpu = s["cpu_us_per_req"].as_f64();
                assert!(cpu.is_some_and(|v| v > 0.0), "{subject} {job}: {s}");
            }
            let growth = s["image_growth"].as_i64().unwrap();
            if *subject == "VecioDirect" {
                assert!(growth <= 0, "direct I/O cached the image: {s}");
            }
            if *subject == "VecioBuffered" && job == "Read128k" {
                assert!(growth > 0, "buffered reads must fill the cache: {s}");
            }
        }
    }
}

/// The TLS rows: eight cells with real figures and the server's CPU, or a reason naming a
/// tool that is indeed missing.
fn check_tls_rows(tls: &serde_json::Value, stdout: &str) {
    if let Some(why) = tls["skipped"].as_str() {
        let tools = [
            ("qemu-nbd", "qemu-nbd"),
            ("openssl", "openssl"),
            ("nbdcopy", "nbdcopy"),
            ("python3", "python3-libnbd"),
        ];
        let named = tools.iter().find(|(t, _)| why.starts_with(t));
        assert!(
            named.is_some(),
            "TLS rows skipped for no missing tool: {why}"
        );
        assert!(stdout.contains("TLS rows: not measured"), "{stdout}");
        println!("TLS rows skipped: {why}");
        return;
    }
    assert!(stdout.contains("TLS (issue 12)"), "{stdout}");
    let cells = tls["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 8, "{tls}");
    for subject in ["VecioDirect", "QemuNbd"] {
        for job in ["Read128k", "RandRead4k"] {
            for over_tls in [false, true] {
                let c = cells
                    .iter()
                    .find(|c| c["subject"] == subject && c["job"] == job && c["tls"] == over_tls)
                    .unwrap_or_else(|| panic!("{subject} {job} tls={over_tls} not measured"));
                let s = &c["samples"][0];
                for field in ["iops", "mb_s", "requests", "bytes"] {
                    let v = s[field].as_f64().unwrap();
                    assert!(v > 0.0, "{subject} {job} tls={over_tls}: {field} = {v}");
                }
                // The server's CPU is its usage less its idle start and stop: in a run this
                // short it can be within a clock tick of the idle cost, so 0 is possible here,
                // but not a negative or missing figure, and not 0 everywhere (below).
                let cpu = s["cpu_us_per_req"].as_f64().unwrap();
                assert!(
                    cpu >= 0.0,
                    "{subject} {job} tls={over_tls}: cpu_us_per_req = {cpu}"
                );
            }
        }
    }
    let counted = cells
        .iter()
        .filter(|c| c["samples"][0]["cpu_us_per_req"].as_f64().unwrap() > 0.0)
        .count();
    assert!(counted > 0, "no server CPU counted in any TLS cell: {tls}");
}

#[test]
fn bench_loop_refuses_a_tiny_image() {
    let dir = scratch_dir("vecio-loop-cli-");
    let out = vecio(dir.path(), &["bench", "loop", "--size", "1M"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--size") || stderr.contains("fio"),
        "{stderr}"
    );
}

/// A `--peers-root` that is no built chroot fails at once, naming it and what to run.
#[test]
fn bench_loop_names_a_peers_root_that_is_not_built() {
    let dir = scratch_dir("vecio-loop-peers-");
    let missing = dir.path().join("no-chroot-here");
    let out = vecio(
        dir.path(),
        &[
            "bench",
            "loop",
            "--size",
            "8M",
            "--peers-root",
            missing.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    if fio_missing().is_some() {
        // The check for fio comes first; either way nothing runs.
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains("--peers-root") && stderr.contains("scripts/peers build"),
        "{stderr}"
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing measured, nothing left"
    );
}

/// `--lab` outside a checkout fails at once, before measuring, naming what is missing.
#[test]
fn bench_loop_lab_names_a_missing_checkout() {
    if let Some(why) = fio_missing() {
        println!("skipped: {why}");
        return;
    }
    let dir = scratch_dir("vecio-loop-lab-");
    let out = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .args(["bench", "loop", "--lab", "--size", "8M", "--runtime", "0.1"])
        .current_dir(dir.path())
        .env("VECIO_NO_PROGRESS", "1")
        .env("VECIO_CHECKOUT", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains("VECIO_CHECKOUT") && stderr.contains("scripts/lab"),
        "{stderr}"
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing measured, nothing left"
    );
}
