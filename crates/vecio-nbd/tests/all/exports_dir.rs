//! Several exports from one server (`vecio nbd --dir`), seen by real clients: nbdinfo lists
//! every regular file and nothing else, nbdcopy reads each export's own bytes and writes
//! through four connections, names that try to leave the directory (`../x`, `/etc/passwd`,
//! a link to a file outside, a subdirectory) are refused with `NBD_REP_ERR_UNKNOWN` (libnbd's
//! `ENOENT`) or, for `NBD_OPT_EXPORT_NAME`, a closed connection; files added after start are
//! served and removed ones vanish; read-only, buffered, every engine, sparse reads and TLS
//! work per export. Every client runs from the host (libnbd 1.14) and from the trixie chroot
//! (libnbd 1.22) where it exists.

use crate::common;

use std::io::{Read, Write};
use std::os::unix::fs::symlink;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{libnbd_python, random_bytes, run, scratch, share, start_dir, Opts, Running};
use vecio_nbd::proto::{self, opt, rep, OptionHeader};
use vecio_nbd::{Cache, ExportOptions};
use vecio_testkit::Peers;

const MIB: usize = 1 << 20;

/// A scratch directory holding `exports/` with `a.img` (1 MiB, seed 1) and `b.img`
/// (2 MiB, seed 2), a symbolic link to /etc/passwd, one to a file outside `exports/`, one to
/// `a.img`, a subdirectory with a file in it, and a FIFO.
fn exports_dir() -> (tempfile::TempDir, PathBuf) {
    let root = scratch();
    let dir = root.path().join("exports");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("a.img"), random_bytes(MIB, 1)).unwrap();
    std::fs::write(dir.join("b.img"), random_bytes(2 * MIB, 2)).unwrap();
    std::fs::write(root.path().join("secret"), random_bytes(4096, 3)).unwrap();
    symlink("/etc/passwd", dir.join("passwd")).unwrap();
    symlink("../secret", dir.join("escape")).unwrap();
    symlink("a.img", dir.join("alias")).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/x"), random_bytes(4096, 4)).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        dir.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    (root, dir)
}

fn serve(default: &str, description: &str, o: Opts) -> Running {
    let (root, dir) = exports_dir();
    let exports = ExportOptions {
        name: default.into(),
        description: description.into(),
        read_only: o.read_only,
        cache: o.cache,
    };
    start_dir(root, dir, exports, o)
}

/// `nbd+unix:///NAME?socket=...`.
fn uri(srv: &Running, name: &str) -> String {
    format!("nbd+unix:///{name}?socket={}", srv.socket.display())
}

/// `prog` of `peers`, seeing the test directories at their own paths.
fn client(peers: &Peers, prog: &str) -> Command {
    peers.command(prog, share())
}

/// The peer sets that have every program of `progs`.
fn with(progs: &[&str]) -> Vec<Peers> {
    let all = Peers::all().into_iter();
    all.filter(|p| progs.iter().all(|prog| p.has(prog)))
        .collect()
}

/// The exports `nbdinfo --list --json` shows: (name, description, size).
fn listed(peers: &Peers, srv: &Running) -> Vec<(String, String, u64)> {
    let out = run(client(peers, "nbdinfo").args(["--list", "--json", &uri(srv, "")]));
    let v: serde_json::Value = serde_json::from_str(&out).expect("nbdinfo --json");
    let exports = v["exports"].as_array().expect("exports").iter();
    exports
        .map(|e| {
            let name = e["export-name"].as_str().unwrap_or_default().to_string();
            let desc = e["description"].as_str().unwrap_or_default().to_string();
            (name, desc, e["export-size"].as_u64().unwrap_or(0))
        })
        .collect()
}

/// The bytes of export `name`, copied out by nbdcopy.
fn copy_out(peers: &Peers, srv: &Running, name: &str) -> Vec<u8> {
    let out = srv.dir.path().join(format!("copy-{name}"));
    let _ = std::fs::remove_file(&out);
    run(client(peers, "nbdcopy").arg(uri(srv, name)).arg(&out));
    std::fs::read(&out).unwrap()
}

/// True when nbdinfo can open export `name`.
fn nbdinfo_opens(peers: &Peers, srv: &Running, name: &str) -> bool {
    let out = client(peers, "nbdinfo")
        .arg(uri(srv, name))
        .output()
        .unwrap();
    out.status.success()
}

#[test]
fn nbdinfo_lists_every_regular_file_and_nothing_else() {
    for peers in with(&["nbdinfo"]) {
        lists_every_regular_file(&peers);
    }
}

fn lists_every_regular_file(peers: &Peers) {
    let srv = serve("b.img", "the b disk", Opts::default());
    let want = [
        ("a.img".to_string(), String::new(), MIB as u64),
        (
            "b.img".to_string(),
            "the b disk".to_string(),
            2 * MIB as u64,
        ),
    ];
    assert_eq!(listed(peers, &srv), want, "{}", peers.name());
    // The default export is b.img.
    let out = run(client(peers, "nbdinfo").args(["--size", &uri(&srv, "")]));
    assert_eq!(out.trim(), (2 * MIB).to_string());
}

#[test]
fn two_exports_read_their_own_bytes_and_take_writes_from_four_connections() {
    for peers in with(&["nbdinfo", "nbdcopy"]) {
        two_exports(&peers);
    }
}

fn two_exports(peers: &Peers) {
    let srv = serve("", "", Opts::default());
    assert_eq!(copy_out(peers, &srv, "a.img"), random_bytes(MIB, 1));
    assert_eq!(copy_out(peers, &srv, "b.img"), random_bytes(2 * MIB, 2));
    // Four connections to b.img share its one file; a.img is untouched.
    let src = srv.dir.path().join("new-b");
    std::fs::write(&src, random_bytes(2 * MIB, 9)).unwrap();
    run(client(peers, "nbdcopy")
        .args(["--connections=4", "--request-size=65536"])
        .arg(&src)
        .arg(uri(&srv, "b.img")));
    assert_eq!(copy_out(peers, &srv, "b.img"), random_bytes(2 * MIB, 9));
    assert_eq!(copy_out(peers, &srv, "a.img"), random_bytes(MIB, 1));
    let on_disk = std::fs::read(srv.image.join("b.img")).unwrap();
    assert_eq!(on_disk, random_bytes(2 * MIB, 9));
}

/// Each refused name through `NBD_OPT_INFO`, `NBD_OPT_GO` and (handshake flags 0: libnbd
/// then speaks plain newstyle) `NBD_OPT_EXPORT_NAME`; a good name through all three.
const REFUSALS: &str = r#"
import errno, sys, nbd
sock = sys.argv[1]
refused = sys.argv[2:]

def info(name):
    h = nbd.NBD()
    h.set_opt_mode(True)
    h.connect_unix(sock)
    h.set_export_name(name)
    try:
        h.opt_info()
        return h.get_size()
    except nbd.Error as e:
        assert e.errnum == errno.ENOENT, (name, e)
        return None
    finally:
        h.opt_abort()

def go(name, flags=None):
    h = nbd.NBD()
    if flags is not None:
        h.set_handshake_flags(flags)
    h.set_export_name(name)
    try:
        h.connect_unix(sock)
        return h.get_size()
    except nbd.Error as e:
        if flags is None:
            assert e.errnum == errno.ENOENT, (name, e)
        return None

for name in refused:
    assert info(name) is None, ("INFO", name)
    assert go(name) is None, ("GO", name)
    assert go(name, 0) is None, ("EXPORT_NAME", name)
assert info("a.img") == go("a.img") == go("a.img", 0) == 1 << 20
print("ok")
"#;

#[test]
fn names_that_try_to_leave_the_directory_are_refused() {
    for peers in with(&["nbdinfo"]) {
        names_refused(&peers);
    }
}

fn names_refused(peers: &Peers) {
    let srv = serve("", "", Opts::default());
    // nbdinfo, as a user would try: the URI's path is the name.
    for name in [
        "..%2Fsecret",
        "%2Fetc%2Fpasswd",
        "/etc/passwd",
        "escape",
        "passwd",
        "sub",
    ] {
        assert!(!nbdinfo_opens(peers, &srv, name), "nbdinfo opened {name:?}");
    }
    assert!(nbdinfo_opens(peers, &srv, "a.img"));
    let Some(mut py) = libnbd_python(peers) else {
        return;
    };
    let refused = [
        "../secret",
        "/etc/passwd",
        "escape",
        "passwd",
        "alias",
        "sub",
        "sub/x",
        "fifo",
        ".",
        "..",
        "",
        "nothing",
        "nbd.sock",
    ];
    let out = py
        .args(["-c", REFUSALS])
        .arg(&srv.socket)
        .args(refused)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}{}",
        peers.name(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Opens a fixed-newstyle handshake on `socket`.
fn handshake(socket: &Path) -> UnixStream {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut g = [0u8; 18];
    s.read_exact(&mut g).unwrap();
    s.write_all(&3u32.to_be_bytes()).unwrap();
    s
}

fn send_option(s: &mut UnixStream, option: u32, data: &[u8]) {
    let h = OptionHeader {
        option,
        len: data.len() as u32,
    };
    s.write_all(&h.encode()).unwrap();
    s.write_all(data).unwrap();
}

/// The reply type of the first reply to an option.
fn reply_type(s: &mut UnixStream) -> u32 {
    let mut h = [0u8; 20];
    s.read_exact(&mut h).unwrap();
    let len = u32::from_be_bytes(h[16..20].try_into().unwrap());
    let mut data = vec![0u8; len as usize];
    s.read_exact(&mut data).unwrap();
    u32::from_be_bytes(h[12..16].try_into().unwrap())
}

#[test]
fn names_libnbd_cannot_send_are_refused_too() {
    // NUL and over 4096 bytes: libnbd refuses to send them, a hostile client does not.
    let srv = serve("", "", Opts::default());
    let long = "a".repeat(4097);
    for name in ["a.img\0", "\0", long.as_str(), "a.img/", "./a.img"] {
        let mut s = handshake(&srv.socket);
        let mut data = Vec::new();
        data.extend_from_slice(&(name.len() as u32).to_be_bytes());
        data.extend_from_slice(name.as_bytes());
        data.extend_from_slice(&0u16.to_be_bytes());
        send_option(&mut s, opt::INFO, &data);
        let kind = reply_type(&mut s);
        assert!(
            kind == rep::ERR_UNKNOWN || kind == rep::ERR_INVALID,
            "{name:?}: {kind:#x}"
        );
        send_option(&mut s, opt::EXPORT_NAME, name.as_bytes());
        let mut b = [0u8; 1];
        assert_eq!(s.read(&mut b).unwrap_or(0), 0, "{name:?}: served");
    }
    let mut s = handshake(&srv.socket);
    send_option(&mut s, opt::INFO, &proto::encode_info_request("a.img", &[]));
    assert_eq!(reply_type(&mut s), rep::INFO);
}

#[test]
fn files_added_after_start_are_served_and_removed_ones_vanish() {
    for peers in with(&["nbdinfo", "nbdcopy"]) {
        added_and_removed(&peers);
    }
}

fn added_and_removed(peers: &Peers) {
    let srv = serve("", "", Opts::default());
    let names = |srv: &Running| -> Vec<String> {
        listed(peers, srv).into_iter().map(|(n, _, _)| n).collect()
    };
    assert!(nbdinfo_opens(peers, &srv, "a.img"));
    std::fs::write(srv.image.join("c.img"), random_bytes(MIB / 2, 5)).unwrap();
    assert_eq!(names(&srv), ["a.img", "b.img", "c.img"]);
    assert_eq!(copy_out(peers, &srv, "c.img"), random_bytes(MIB / 2, 5));
    std::fs::remove_file(srv.image.join("a.img")).unwrap();
    assert_eq!(names(&srv), ["b.img", "c.img"]);
    assert!(!nbdinfo_opens(peers, &srv, "a.img"));
    // Replaced under the same name: the new file is served.
    let tmp = srv.image.join("sub/new");
    std::fs::write(&tmp, random_bytes(MIB, 6)).unwrap();
    std::fs::rename(&tmp, srv.image.join("c.img")).unwrap();
    assert_eq!(copy_out(peers, &srv, "c.img"), random_bytes(MIB, 6));
}

#[test]
fn read_only_buffered_and_every_engine_per_export() {
    for peers in with(&["nbdinfo", "nbdcopy"]) {
        read_only_buffered(&peers);
    }
}

fn read_only_buffered(peers: &Peers) {
    for aio in [
        vecio::EngineKind::Uring,
        vecio::EngineKind::Sync,
        vecio::EngineKind::Pool,
    ] {
        let o = Opts {
            read_only: true,
            cache: Cache::Writeback,
            aio,
            ..Opts::default()
        };
        let srv = serve("", "", o);
        assert_eq!(
            copy_out(peers, &srv, "b.img"),
            random_bytes(2 * MIB, 2),
            "{aio:?}"
        );
        run(client(peers, "nbdinfo").args(["--is", "read-only", &uri(&srv, "a.img")]));
        let src = srv.dir.path().join("src");
        std::fs::write(&src, random_bytes(MIB, 7)).unwrap();
        let write = client(peers, "nbdcopy")
            .arg(&src)
            .arg(uri(&srv, "a.img"))
            .output()
            .unwrap();
        assert!(
            !write.status.success(),
            "{aio:?}: wrote to a read-only export"
        );
        assert_eq!(
            std::fs::read(srv.image.join("a.img")).unwrap(),
            random_bytes(MIB, 1)
        );
    }
}

/// Sparse reads of a file created after start: a hole is one `OFFSET_HOLE` chunk.
const SPARSE: &str = r#"
import sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
seen = []
def cb(sub, off, status, err):
    seen.append((off, len(sub), status))
    return 0
data = h.pread_structured(65536, 1 << 20, cb)
assert bytes(data) == bytes(65536), "hole bytes"
assert seen == [(1 << 20, 65536, nbd.READ_HOLE)], seen
print("ok")
"#;

#[test]
fn sparse_reads_per_export() {
    let srv = serve("", "", Opts::default());
    let f = std::fs::File::create(srv.image.join("sparse.img")).unwrap();
    f.set_len(4 << 20).unwrap();
    drop(f);
    for peers in Peers::all() {
        let Some(mut py) = libnbd_python(&peers) else {
            continue;
        };
        let out = py
            .args(["-c", SPARSE, &uri(&srv, "sparse.img")])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}{}",
            peers.name(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A self-signed server certificate in `dir` (server-cert.pem, server-key.pem), which is
/// also the client's ca-cert.pem; false (saying why) when openssl is missing.
fn self_signed(dir: &Path) -> bool {
    let key = dir.join("server-key.pem");
    let cert = dir.join("server-cert.pem");
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args([
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .is_ok_and(|o| o.status.success());
    if !made {
        eprintln!("SKIP: openssl cannot make a certificate (scripts/setup installs it)");
        return false;
    }
    std::fs::copy(&cert, dir.join("ca-cert.pem")).unwrap();
    true
}

#[test]
fn tls_required_per_export() {
    for peers in with(&["nbdinfo", "nbdcopy"]) {
        tls_per_export(&peers);
    }
}

fn tls_per_export(peers: &Peers) {
    let certs = scratch();
    if !self_signed(certs.path()) {
        return;
    }
    let tls = vecio_nbd::Tls::from_dir(vecio_nbd::TlsMode::Require, certs.path(), false).unwrap();
    let srv = serve(
        "",
        "",
        Opts {
            tls: Some(tls),
            ..Opts::default()
        },
    );
    let tls_uri = |name: &str| {
        format!(
            "nbds+unix:///{name}?socket={}&tls-certificates={}",
            srv.socket.display(),
            certs.path().display()
        )
    };
    let out = run(client(peers, "nbdinfo").args(["--list", "--json", &tls_uri("")]));
    assert!(
        out.contains("\"a.img\"") && out.contains("\"b.img\""),
        "{out}"
    );
    let copy = srv.dir.path().join("copy-b");
    run(client(peers, "nbdcopy").arg(tls_uri("b.img")).arg(&copy));
    assert_eq!(std::fs::read(&copy).unwrap(), random_bytes(2 * MIB, 2));
    // Without TLS, even the list is refused.
    assert!(!nbdinfo_opens(peers, &srv, "b.img"));
    let plain = client(peers, "nbdinfo")
        .args(["--list", &uri(&srv, "")])
        .output()
        .unwrap();
    assert!(!plain.status.success());
}
