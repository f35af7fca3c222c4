//! A full file system under the servers, as a user meets it: on a small ext4 of the test's own
//! (a loop device) with a filler file, a client writes and syncs MiB after MiB until the file
//! system is full. The client gets ENOSPC (at the write, or at fsync/flush where the kernel's
//! writeback cache defers it), the server serves on, every acknowledged and synced MiB reads
//! back (through the server and in the backing file), and once the filler is removed, writes
//! succeed again. Through `vecio fuse` in every mode and `vecio nbd` with every `--aio` and both
//! `--cache` (a real NBD client: libnbd's Python binding). Root only; skips saying why otherwise.

use crate::fuse_server;

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use fuse_server::FuseServer;
use vecio_testkit::SmallFs;

const MIB: usize = 1 << 20;
const ENOSPC: i32 = 28;

fn chunk(i: usize) -> Vec<u8> {
    vec![(i as u8) ^ 0x5a; MIB]
}

/// A 48 MiB ext4 with a 16 MiB filler at its root; `None` (said) where it cannot be made.
fn full_soon(scratch: &Path) -> Option<SmallFs> {
    if let Some(why) = FuseServer::skip_reason() {
        eprintln!("SKIP: {why}");
        return None;
    }
    let fs = SmallFs::ext4(scratch, 48).expect("a 48 MiB ext4 on a loop device");
    std::fs::write(fs.path().join("filler"), vec![1u8; 16 * MIB]).unwrap();
    Some(fs)
}

/// Writes and syncs `file` MiB by MiB until an error; the MiBs acknowledged and the error.
fn fill(file: &mut std::fs::File) -> (usize, std::io::Error) {
    for i in 0..64 {
        let r = file
            .write_all_at(&chunk(i), (i * MIB) as u64)
            .and_then(|()| file.sync_data());
        if let Err(e) = r {
            return (i, e);
        }
    }
    panic!("64 MiB fit on a 48 MiB file system");
}

fn fuse_fills_and_recovers(mode: &[&str]) {
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let Some(fs) = full_soon(scratch.path()) else {
        return;
    };
    let src = fs.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let server = FuseServer::mount(&src, &scratch.path().join("mnt"), mode);
    let mnt = server.mountpoint().to_path_buf();

    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(mnt.join("data"))
        .unwrap();
    let (acked, err) = fill(&mut file);
    assert_eq!(err.raw_os_error(), Some(ENOSPC), "{mode:?}: got {err}");
    assert!(acked >= 10, "{mode:?}: only {acked} MiB before ENOSPC");
    // The server serves on, and every acknowledged MiB is there, through it and underneath.
    let backing = std::fs::File::open(src.join("data")).unwrap();
    let mut buf = vec![0u8; MIB];
    for i in 0..acked {
        file.read_exact_at(&mut buf, (i * MIB) as u64).unwrap();
        assert!(buf == chunk(i), "{mode:?}: MiB {i} through the mount");
        backing.read_exact_at(&mut buf, (i * MIB) as u64).unwrap();
        assert!(buf == chunk(i), "{mode:?}: MiB {i} in the backing file");
    }
    // Space freed: writes succeed again, a synced one and a small one only closed.
    std::fs::remove_file(fs.path().join("filler")).unwrap();
    file.write_all_at(&chunk(99), (acked * MIB) as u64)
        .and_then(|()| file.sync_data())
        .unwrap_or_else(|e| panic!("{mode:?}: a write after space was freed: {e}"));
    drop(file);
    std::fs::write(mnt.join("small"), b"after\n").unwrap();
    assert_eq!(std::fs::read(mnt.join("small")).unwrap(), b"after\n");
    drop(server); // unmount: every cached write reaches the backing file
    assert_eq!(
        std::fs::read(src.join("small")).unwrap(),
        b"after\n",
        "{mode:?}"
    );
    let mut backing = backing;
    backing.seek(SeekFrom::Start((acked * MIB) as u64)).unwrap();
    backing.read_exact(&mut buf).unwrap();
    assert!(buf == chunk(99), "{mode:?}: the write after freeing space");
}

#[test]
fn fuse_plain() {
    fuse_fills_and_recovers(&[]);
}

#[test]
fn fuse_uring() {
    fuse_fills_and_recovers(&["--uring"]);
}

#[test]
fn fuse_passthrough() {
    fuse_fills_and_recovers(&["--passthrough"]);
}

#[test]
fn fuse_writeback_cache() {
    fuse_fills_and_recovers(&["-o", "writeback_cache"]);
}

#[test]
fn fuse_direct_io() {
    fuse_fills_and_recovers(&["-o", "direct_io"]);
}

#[test]
fn fuse_engines() {
    for engine in ["sync", "pool", "serial"] {
        fuse_fills_and_recovers(&["--engine", engine]);
    }
}

/// The client's side of the NBD test, in libnbd's Python binding: fills the export with
/// flushed MiBs until an error, checks the acknowledged ones, says how far it got, waits for
/// a line on stdin (space freed), writes once more and checks it.
const NBD_CLIENT: &str = r#"
import nbd, sys, errno
MIB = 1 << 20
def chunk(i): return bytes([(i & 0xff) ^ 0x5a]) * MIB
h = nbd.NBD()
h.connect_uri(sys.argv[1])
acked, err = 0, None
while acked < 64:
    try:
        h.pwrite(chunk(acked), acked * MIB)
        h.flush()
    except nbd.Error as e:
        # The errno's name: libnbd's binding gives the name or the number by version.
        err = errno.errorcode.get(e.errno, e.errno)
        break
    acked += 1
for i in range(acked):
    assert h.pread(MIB, i * MIB) == chunk(i), "MiB %d did not read back" % i
print(acked, err, flush=True)
sys.stdin.readline()
h.pwrite(chunk(99), acked * MIB)
h.flush()
assert h.pread(MIB, acked * MIB) == chunk(99)
h.shutdown()
print("ok", flush=True)
"#;

/// `vecio nbd` on a sparse 64 MiB image of a file system with about 30 MiB free.
fn nbd_fills_and_recovers(aio: &str, cache: &str) {
    let Some(python) = vecio_testkit::python_with_libnbd() else {
        return;
    };
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let Some(fs) = full_soon(scratch.path()) else {
        return;
    };
    let image = fs.path().join("disk.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(64 * MIB as u64)
        .unwrap();
    let socket = scratch.path().join("nbd.sock");
    let mut server = ServerProcess::start(&image, &socket, aio, cache);
    let uri = format!("nbd+unix:///?socket={}", socket.display());
    let mut client = Command::new(python)
        .args(["-c", NBD_CLIENT, &uri])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(client.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let mut words = line.split_whitespace();
    let acked: usize = words
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("--aio={aio} --cache={cache}: the client said {line:?}"));
    let err = words.next().unwrap_or("");
    assert_eq!(err, "ENOSPC", "--aio={aio} --cache={cache}: {line:?}");
    assert!(acked >= 10, "--aio={aio} --cache={cache}: only {acked} MiB");
    std::fs::remove_file(fs.path().join("filler")).unwrap();
    client
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"freed\n")
        .unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    let status = client.wait().unwrap();
    assert!(
        status.success() && line.trim() == "ok",
        "--aio={aio} --cache={cache}: {line:?}"
    );
    server.stop();
    // Every acknowledged MiB, and the one after, are in the image.
    let img = std::fs::File::open(&image).unwrap();
    let mut buf = vec![0u8; MIB];
    for i in 0..acked {
        img.read_exact_at(&mut buf, (i * MIB) as u64).unwrap();
        assert!(buf == chunk(i), "--aio={aio} --cache={cache}: MiB {i}");
    }
    img.read_exact_at(&mut buf, (acked * MIB) as u64).unwrap();
    assert!(buf == chunk(99));
}

/// A `vecio nbd` process, stopped with SIGTERM (killed if a test fails first).
pub(crate) struct ServerProcess(Option<Child>);

impl ServerProcess {
    pub(crate) fn start(image: &Path, socket: &Path, aio: &str, cache: &str) -> ServerProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_vecio"))
            .arg("nbd")
            .arg(image)
            .arg("-U")
            .arg(socket)
            .args([format!("--aio={aio}"), format!("--cache={cache}")])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("nbd"), "{line:?}");
        ServerProcess(Some(child))
    }

    pub(crate) fn stop(&mut self) {
        if let Some(mut c) = self.0.take() {
            rustix::process::kill_process(
                rustix::process::Pid::from_child(&c),
                rustix::process::Signal::TERM,
            )
            .unwrap();
            assert!(
                c.wait().unwrap().success(),
                "vecio nbd did not stop cleanly"
            );
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn nbd_every_aio_and_cache() {
    for aio in ["uring", "threads", "sync", "serial"] {
        for cache in ["none", "writeback"] {
            nbd_fills_and_recovers(aio, cache);
        }
    }
}
