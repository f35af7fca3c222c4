//! Bounded descriptors: `vecio fuse` run under `prlimit --nofile=256` serves a tree several
//! times larger than its descriptor limit, whose every entry the kernel holds at once, and new
//! files can still be made; its open descriptors stay under the limit.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

const LIMIT: usize = 256;
const FILES: usize = 3000;

fn skip() -> Option<&'static str> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root: mount(2) of a FUSE file system needs CAP_SYS_ADMIN");
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing");
    }
    if Command::new("prlimit").arg("--version").output().is_err() {
        return Some("prlimit (util-linux) is missing");
    }
    None
}

#[test]
fn a_tree_larger_than_the_descriptor_limit_stays_reachable() {
    if let Some(why) = skip() {
        eprintln!("skipping: {why}");
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (src, mnt) = (dir.path().join("src"), dir.path().join("mnt"));
    fs::create_dir_all(src.join("a/b")).unwrap();
    fs::create_dir(&mnt).unwrap();
    for i in 0..FILES {
        fs::write(src.join(format!("a/b/f{i}")), format!("{i}\n")).unwrap();
    }
    let mut child = Command::new("prlimit")
        .arg(format!("--nofile={LIMIT}:{LIMIT}"))
        .arg(env!("CARGO_BIN_EXE_vecio"))
        .args([
            "fuse",
            src.to_str().unwrap(),
            mnt.to_str().unwrap(),
            "--timeout",
            "3600",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("mounted"), "{line:?}");
    let result = std::panic::catch_unwind(|| {
        // Hold files open while walking: every lookup is a node the kernel keeps.
        let held: Vec<fs::File> = (0..20)
            .map(|i| fs::File::open(mnt.join(format!("a/b/f{i}"))).unwrap())
            .collect();
        // An open file that is unlinked stays usable (its node keeps its descriptor while
        // open), however many other nodes come and go.
        fs::remove_file(mnt.join("a/b/f0")).unwrap();
        for i in 1..FILES {
            let p = mnt.join(format!("a/b/f{i}"));
            assert_eq!(fs::read_to_string(&p).unwrap(), format!("{i}\n"), "{p:?}");
        }
        for i in 0..500 {
            fs::write(mnt.join(format!("a/new{i}")), "new").unwrap();
        }
        // Everything is still reachable, the first files too (their descriptors were let go
        // and are reopened from their handles).
        for i in (1..FILES).step_by(97) {
            let st = fs::metadata(mnt.join(format!("a/b/f{i}"))).unwrap();
            assert_eq!(st.len(), format!("{i}\n").len() as u64);
        }
        assert_eq!(fs::read_dir(mnt.join("a")).unwrap().count(), 501);
        use std::os::unix::fs::PermissionsExt;
        held[0]
            .set_permissions(fs::Permissions::from_mode(0o600))
            .expect("fchmod of an open, unlinked file after the cache turned over");
        assert_eq!(
            held[0].metadata().unwrap().permissions().mode() & 0o777,
            0o600
        );
        let fds = fs::read_dir(format!("/proc/{}/fd", child.id()))
            .map(|d| d.count())
            .unwrap_or(0);
        assert!(
            fds < LIMIT,
            "the server holds {fds} descriptors (limit {LIMIT})"
        );
        drop(held);
    });
    let _ = Command::new("umount").arg(&mnt).status();
    let _ = child.wait();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
