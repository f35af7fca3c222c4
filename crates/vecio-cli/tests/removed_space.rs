//! A removed file gives its space back, through every `vecio fuse` mode: on a small ext4 of the
//! test's own (a loop device), a 30 MiB file written through the mount and removed is free
//! again within a second, and a churn of 2,000 create / write 64 KiB / close / remove leaves
//! the used space, the server's descriptors and its resident memory at their baseline.
//! Root only (loop devices and mounts); skips saying why otherwise.

mod fuse_server;

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

use fuse_server::FuseServer;
use vecio_testkit::{descriptors, rss_kib, wait_until, SmallFs};

const MIB: u64 = 1 << 20;

/// Used space may differ from the baseline by this much (directory blocks, the journal).
const SLACK: u64 = MIB;

fn write_file(path: &std::path::Path, chunks: usize, chunk: usize) {
    let mut f = std::fs::File::create(path).unwrap();
    let data = vec![0xa5u8; chunk];
    for _ in 0..chunks {
        f.write_all(&data).unwrap();
    }
    f.sync_all().unwrap();
}

fn space_comes_back(mode: &[&str]) {
    if let Some(why) = FuseServer::skip_reason() {
        eprintln!("SKIP {mode:?}: {why}");
        return;
    }
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let fs = SmallFs::ext4(scratch.path(), 64).expect("a 64 MiB ext4 on a loop device");
    let src = fs.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let server = FuseServer::mount(&src, &scratch.path().join("mnt"), mode);
    let mnt = server.mountpoint().to_path_buf();
    let pid = server.pid();
    let used = fs.used_bytes();

    // One large file.
    write_file(&mnt.join("big"), 30, MIB as usize);
    assert!(
        fs.used_bytes() >= used + 28 * MIB,
        "{mode:?}: the 30 MiB file is not on the backing file system"
    );
    std::fs::remove_file(mnt.join("big")).unwrap();
    let back = wait_until(Duration::from_secs(1), || fs.used_bytes() <= used + SLACK);
    assert!(
        back.is_some(),
        "{mode:?}: 30 MiB removed through the mount still in use after a second ({} MiB used, {} MiB before)",
        fs.used_bytes() / MIB,
        used / MIB
    );

    // A churn: the baseline of descriptors and memory is taken after a warm-up.
    let churn = |n: usize| {
        for i in 0..n {
            let p = mnt.join(format!("f{i}"));
            write_file(&p, 1, 64 << 10);
            std::fs::remove_file(&p).unwrap();
        }
    };
    churn(200);
    let settled = |fds: usize| {
        wait_until(Duration::from_secs(2), || {
            fs.used_bytes() <= used + SLACK && descriptors(pid) <= fds
        })
    };
    settled(usize::MAX);
    let (fds, rss) = (descriptors(pid), rss_kib(pid));
    churn(2000);
    let ok = settled(fds);
    assert!(
        ok.is_some(),
        "{mode:?}: after the churn: {} MiB used (baseline {} MiB), {} descriptors (baseline {fds})",
        fs.used_bytes() / MIB,
        used / MIB,
        descriptors(pid)
    );
    let grown = rss_kib(pid).saturating_sub(rss);
    assert!(
        grown < 8 << 10,
        "{mode:?}: the server's resident memory grew by {grown} KiB over 2,000 files"
    );
    eprintln!(
        "{mode:?}: space back in {:?}; after the churn {} descriptors (baseline {fds}), RSS +{grown} KiB",
        back.unwrap_or_default(),
        descriptors(pid)
    );
    drop(server);
}

#[test]
fn plain() {
    space_comes_back(&[]);
}

#[test]
fn uring() {
    space_comes_back(&["--uring"]);
}

#[test]
fn passthrough() {
    space_comes_back(&["--passthrough"]);
}

#[test]
fn passthrough_direct() {
    space_comes_back(&["--passthrough", "--passthrough-direct"]);
}

#[test]
fn writeback_cache() {
    space_comes_back(&["-o", "writeback_cache"]);
}

#[test]
fn engine_sync() {
    space_comes_back(&["--engine", "sync"]);
}

#[test]
fn engine_pool() {
    space_comes_back(&["--engine", "pool"]);
}

#[test]
fn engine_serial() {
    space_comes_back(&["--engine", "serial"]);
}

/// `kill -USR1` makes the server say what it holds: an open file is a handle, an open
/// `vecio::File` and a ring slot once written through the engine (an `O_DIRECT` write: a
/// buffered one is a `pwrite` on the serving thread); closed and removed, none.
#[test]
fn the_server_says_what_it_holds() {
    if let Some(why) = FuseServer::skip_reason() {
        eprintln!("SKIP: {why}");
        return;
    }
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let src = scratch.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let server = FuseServer::mount(&src, &scratch.path().join("mnt"), &[]);
    let mnt = server.mountpoint().to_path_buf();
    let idle = server.held();
    assert!(idle.contains("handles 0 files"), "{idle}");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(mnt.join("f"))
        .unwrap();
    f.write_all(&[7u8; 4096]).unwrap();
    let open = server.held();
    assert!(
        open.contains("handles 1 files")
            && open.contains("open files 1")
            && open.contains("ring slots 1"),
        "{open}"
    );
    drop(f);
    std::fs::remove_file(mnt.join("f")).unwrap();
    let mut last = String::new();
    let gone = wait_until(Duration::from_secs(2), || {
        last = server.held();
        last.contains("handles 0 files")
            && last.contains("open files 0")
            && last.contains("ring slots 0")
    });
    assert!(gone.is_some(), "{last}");
}
