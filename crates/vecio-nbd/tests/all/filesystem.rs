//! A file system made and checked on the export, then read back after the server restarts.
//! The kernel here has no nbd driver, so the export is seen as a file through nbdfuse;
//! mkfs.ext4, debugfs and e2fsck work on that file. Skips, saying why, without nbdfuse, FUSE
//! or e2fsprogs.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{have, run, start, start_on, Opts};

/// An nbdfuse mount, unmounted when dropped.
struct Fuse {
    dir: PathBuf,
    child: Option<Child>,
}

impl Fuse {
    /// Mounts the export at `dir`/nbd; None (with the reason printed) when it cannot.
    fn mount(dir: &Path, socket: &Path) -> Option<Fuse> {
        std::fs::create_dir_all(dir).ok()?;
        let pid = dir.with_extension("pid");
        let child = Command::new("nbdfuse")
            .arg("-P")
            .arg(&pid)
            .arg(dir)
            .arg("--unix")
            .arg(socket)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .ok()?;
        let mut fuse = Fuse {
            dir: dir.to_path_buf(),
            child: Some(child),
        };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if std::fs::metadata(&pid).is_ok_and(|m| m.len() > 0) {
                return Some(fuse);
            }
            if let Some(c) = &mut fuse.child {
                if let Ok(Some(status)) = c.try_wait() {
                    eprintln!("SKIP: nbdfuse could not mount ({status})");
                    fuse.child = None;
                    return None;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("SKIP: nbdfuse did not become ready");
        None
    }

    fn file(&self) -> PathBuf {
        self.dir.join("nbd")
    }
}

impl Drop for Fuse {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("fusermount3")
                .arg("-u")
                .arg(&self.dir)
                .status();
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(10) {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn ext4_made_on_the_export_survives_a_restart() {
    if !have("nbdfuse") || !have("fusermount3") || !Path::new("/dev/fuse").exists() {
        return;
    }
    for tool in ["mkfs.ext4", "e2fsck", "debugfs"] {
        if !Command::new(tool)
            .arg("-V")
            .output()
            .is_ok_and(|o| !o.stdout.is_empty() || !o.stderr.is_empty())
        {
            eprintln!("SKIP: {tool} is not installed");
            return;
        }
    }
    let mut srv = start(Opts {
        size: 64 << 20,
        ..Default::default()
    });
    let content = common::random_bytes(300_000, 21);
    let src = srv.dir.path().join("payload.bin");
    std::fs::write(&src, &content).unwrap();
    {
        let Some(fuse) = Fuse::mount(&srv.dir.path().join("mnt"), &srv.socket) else {
            return;
        };
        let dev = fuse.file();
        run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&dev));
        run(Command::new("debugfs")
            .arg("-w")
            .arg("-R")
            .arg(format!("write {} payload.bin", src.display()))
            .arg(&dev));
        run(Command::new("e2fsck").arg("-fn").arg(&dev));
    }
    srv.stop().unwrap();

    // A new server on the same image.
    let dir = std::mem::replace(&mut srv.dir, common::scratch());
    let image = srv.image.clone();
    drop(srv);
    let _ = std::fs::remove_file(dir.path().join("mnt.pid"));
    let mut srv = start_on(dir, image, Opts::default());
    {
        let Some(fuse) = Fuse::mount(&srv.dir.path().join("mnt"), &srv.socket) else {
            return;
        };
        let dev = fuse.file();
        run(Command::new("e2fsck").arg("-fn").arg(&dev));
        let out = srv.dir.path().join("back.bin");
        run(Command::new("debugfs")
            .arg("-R")
            .arg(format!("dump payload.bin {}", out.display()))
            .arg(&dev));
        assert!(std::fs::read(&out).unwrap() == content);
    }
    srv.stop().unwrap();
}
