//! qemu's image locks, against real qemu processes: a virtual machine (qemu-system, paused
//! before its guest runs, holding its disk as any VM does) keeps `vecio nbd` and `vecio ublk`
//! from writing the image, and an image `vecio nbd` serves keeps a VM and `qemu-img resize`
//! off it, as qemu-nbd does; `-r` serves beside a VM, and everything is let go at exit.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::common::{scratch_dir, vecio};

/// Whether a qemu lock is held on byte `byte` of `image` (`/proc/locks`).
fn locked(image: &Path, byte: u64) -> bool {
    let ino = std::fs::metadata(image).unwrap().ino();
    let locks = std::fs::read_to_string("/proc/locks").unwrap();
    locks.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        l.contains(&format!(":{ino} ")) && f[f.len() - 2] == byte.to_string()
    })
}

/// A VM with `image` as its virtio disk, stopped before its first instruction (`-S`).
fn vm(image: &Path) -> Command {
    let mut c = Command::new("qemu-system-x86_64");
    c.args(["-accel", "tcg", "-S", "-display", "none", "-nodefaults"])
        .args(["-monitor", "none", "-serial", "none", "-drive"])
        .arg(format!("file={},format=raw,if=virtio", image.display()));
    c
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn have(program: &str) -> bool {
    let found = Command::new(program).arg("--version").output().is_ok();
    if !found {
        eprintln!("SKIP: {program} is not installed (scripts/setup installs it)");
    }
    found
}

#[test]
fn an_image_a_vm_writes_is_not_served_writable_nor_one_served_given_to_a_vm() {
    if !have("qemu-system-x86_64") || !have("qemu-img") {
        return;
    }
    let dir = scratch_dir("image-lock");
    let image = dir.path().join("disk.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let img = image.to_str().unwrap();

    let guest = Killed(vm(&image).stderr(Stdio::null()).spawn().unwrap());
    let up = vecio_testkit::wait_until(Duration::from_secs(20), || locked(&image, 201));
    assert!(up.is_some(), "the VM never locked its disk");
    for args in [&["nbd", img, "-U", "x.sock"][..], &["ublk", img]] {
        let out = vecio(dir.path(), args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("another process is using the image") && err.contains("-r serves"),
            "{args:?}: {err}"
        );
    }
    let out = vecio(dir.path(), &["info", img]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("do not share write") && said.contains("only read-only (-r)"),
        "{said}"
    );
    // Read-only beside the VM, as qemu-nbd -r.
    let out = vecio(dir.path(), &["nbd", "-r", img, "--run", "true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    drop(guest);

    let mut server = Killed(
        Command::new(env!("CARGO_BIN_EXE_vecio"))
            .args(["nbd", img, "-U"])
            .arg(dir.path().join("s.sock"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let up = vecio_testkit::wait_until(Duration::from_secs(10), || locked(&image, 203));
    assert!(up.is_some(), "vecio nbd took no lock");
    let out = vm(&image).output().unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "a VM started on a served image");
    assert!(err.contains("\"write\" lock"), "{err}");
    let resize = || {
        Command::new("qemu-img")
            .args(["resize", "-f", "raw", img, "+1M"])
            .output()
            .unwrap()
    };
    let out = resize();
    assert!(!out.status.success(), "qemu-img resized a served image");
    assert!(stderr(&out).contains("\"resize\" lock"), "{}", stderr(&out));

    // Stopped, it lets everything go.
    let pid = rustix::process::Pid::from_child(&server.0);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    assert!(server.0.wait().unwrap().success());
    let out = resize();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::metadata(&image).unwrap().len(), 65 << 20);
}

#[test]
fn force_share_needs_read_only() {
    let dir = scratch_dir("image-lock-usage");
    let out = vecio(dir.path(), &["nbd", "--force-share", "disk.img"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--read-only"), "{}", stderr(&out));
}
