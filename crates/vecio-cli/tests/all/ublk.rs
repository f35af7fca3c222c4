//! `vecio ublk` and `vecio info`'s kernel section on the host. The host kernel may have no ublk
//! driver: the block device itself is tested in the lab (`make lab`, scripts/lab.d/tests), on
//! Debian's kernels under qemu; here the command line, the refusal without a driver, `list` and
//! the kernel report are checked.

use std::path::Path;
use std::process::Command;

fn vecio(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_vecio"))
        .args(args)
        .output()
        .expect("vecio runs")
}

#[test]
fn without_a_file_or_action_it_is_a_usage_error() {
    let out = vecio(&["ublk"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("FILE, `list` or `del N` is required"), "{err}");
}

/// ublksrv's and rublk's `add -t loop -f FILE` gets the spelling vecio uses, not a confusing
/// parse of "add" as the file.
#[test]
fn ublksrv_add_is_answered_with_vecio_spelling() {
    for args in [
        &["ublk", "add", "-t", "loop", "-f", "x.img"][..],
        &["ublk", "add", "x.img"],
    ] {
        let out = vecio(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("`vecio ublk FILE` serves FILE"),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn options_out_of_range_are_usage_errors() {
    for args in [
        &["ublk", "f", "--queues", "0"][..],
        &["ublk", "f", "--depth", "5000"],
        &["ublk", "f", "--io-size", "1000"],
        &["ublk", "f", "--id", "1", "--recover", "1"],
    ] {
        let out = vecio(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    }
}

#[test]
fn without_the_driver_serving_fails_saying_so() {
    if Path::new("/dev/ublk-control").exists() {
        eprintln!("skipped: this kernel has a ublk driver (the lab tests serving)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("disk.img");
    std::fs::write(&file, vec![0u8; 1 << 20]).unwrap();
    let out = vecio(&["ublk", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no ublk driver"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line per error: {err}");
}

/// `del N` and the stop of a device that is not there say why in one line: no driver, or no
/// device of that number (libublk alone printed its own hint and "other failure").
#[test]
fn deleting_a_device_that_is_not_there_says_why() {
    // A number no device has on any machine this runs on.
    let out = vecio(&["ublk", "del", "4000"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let why = if Path::new("/dev/ublk-control").exists() {
        "no ublk device 4000"
    } else {
        "no ublk driver"
    };
    assert!(err.contains(why), "{err}");
    assert!(!err.contains("other failure"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line per error: {err}");
    assert!(out.stdout.is_empty(), "nothing on stdout: {out:?}");
}

/// A missing backing file is what the user hears about, with or without a ublk driver.
#[test]
fn a_missing_file_is_named_first() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("no-such.img");
    let out = vecio(&["ublk", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no-such.img: cannot open") && !err.contains("no ublk driver"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line per error: {err}");
}

#[test]
fn list_prints_a_header_and_one_row_per_device() {
    let out = vecio(&["ublk", "list"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("DEV  STATE"), "{text}");
    let devices = std::fs::read_dir("/sys/class/ublk-char").map_or(0, |d| d.count());
    assert_eq!(text.lines().count(), 1 + devices, "{text}");
    let json = vecio(&["ublk", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(v.as_array().map(Vec::len), Some(devices));
}

#[test]
fn info_names_the_kernel_and_its_block_drivers() {
    let out = vecio(&["info", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(v["release"], release.trim());
    let state = |m: &str| {
        v["drivers"]
            .as_array()
            .and_then(|d| d.iter().find(|d| d["module"] == m))
            .map(|d| d["state"].as_str().unwrap_or("").to_string())
    };
    let ublk = state("ublk_drv").expect("ublk_drv is reported");
    assert_eq!(
        ublk != "missing" && ublk != "module",
        Path::new("/dev/ublk-control").exists(),
        "ublk_drv is {ublk}"
    );
    if Path::new("/dev/loop-control").exists() {
        assert!(matches!(
            state("loop").as_deref(),
            Some("loaded" | "built in")
        ));
    }
    let text = String::from_utf8_lossy(&vecio(&["info"]).stdout).to_string();
    assert!(
        text.starts_with(&format!("kernel {}", release.trim())),
        "{text}"
    );
    for m in ["ublk_drv", "nbd", "loop", "dm_mod", "dm_flakey"] {
        assert!(text.contains(m), "{m} not named: {text}");
    }
}

/// A qcow2 image is refused before any device is made, naming -f raw.
#[test]
fn a_qcow2_image_is_refused_unless_declared_raw() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("disk.qcow2");
    let mut head = b"QFI\xfb\0\0\0\x03".to_vec();
    head.resize(1 << 16, 0);
    std::fs::write(&image, &head).unwrap();
    let out = vecio(&["ublk", image.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("qcow2") && err.contains("-f raw"), "{err}");
}
