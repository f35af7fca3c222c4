//! `vecio nbd` against today's peers and the host's: libnbd (its Python binding) and
//! qemu-img/qemu-io, from the host (Debian 12: libnbd 1.14, qemu 7.2, compact headers) and,
//! where `scripts/peers build` made it, from the trixie chroot (libnbd 1.22, qemu 10, which
//! ask for extended headers). Over an 8 GiB sparse image: a trim and a write-zeroes of 5 GiB
//! in one request each, block status over the whole image (64-bit extents), block status
//! with a payload filter, and qemu-img's map. The server's own log says which framing each
//! client got and how long its requests were.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use vecio_testkit::Peers;

const GIB: u64 = 1 << 30;
/// Where the image's one data block is.
const DATA_AT: u64 = 7 * GIB;

/// A `vecio nbd` process logging its sessions and requests to `log`.
struct Server {
    child: Child,
    socket: PathBuf,
    log: PathBuf,
}

impl Server {
    fn start(dir: &Path, image: &Path) -> Server {
        let socket = dir.join("nbd.sock");
        let log = dir.join("server.log");
        let mut child = Command::new(env!("CARGO_BIN_EXE_vecio"))
            .arg("nbd")
            .arg(image)
            .arg("-U")
            .arg(&socket)
            .env("VECIO_LOG", "vecio_nbd=debug,vecio_nbd::conn=trace")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("vecio nbd");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("nbd+unix"), "{line:?}");
        Server { child, socket, log }
    }

    fn uri(&self) -> String {
        format!("nbd+unix:///?socket={}", self.socket.display())
    }

    /// Stops the server (SIGTERM) and returns its log.
    fn stop(mut self) -> String {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "server exit: {status}");
        std::fs::read_to_string(&self.log).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An 8 GiB sparse image with 4 KiB of data at 7 GiB.
fn image(dir: &Path) -> PathBuf {
    use std::os::unix::fs::FileExt;
    let p = dir.join("sparse.img");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(8 * GIB).unwrap();
    f.write_all_at(&[0xa5; 4096], DATA_AT).unwrap();
    p
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("vecio-nbd-peers-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// Lengths of the requests of command `cmd` ("TRIM") in a server log.
fn request_lens(log: &str, cmd: &str) -> Vec<u64> {
    let tag = format!("cmd=\"{cmd}\"");
    log.lines()
        .filter(|l| l.contains(&tag) && l.contains(" request"))
        .filter_map(|l| {
            l.split(" len=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// Sessions the server saw with extended headers, and without.
fn framings(log: &str) -> (usize, usize) {
    let sessions = log.lines().filter(|l| l.contains("transmission"));
    let (ext, other): (Vec<_>, Vec<_>) = sessions.partition(|l| l.contains("Extended"));
    (ext.len(), other.len())
}

/// libnbd's Python binding: prints one JSON line of what it saw.
const LIBNBD: &str = r#"
import json, sys, nbd
h = nbd.NBD()
h.add_meta_context("base:allocation")
h.connect_uri(sys.argv[1])
G = 1 << 30
ext = h.get_extended_headers_negotiated() if hasattr(h, "get_extended_headers_negotiated") else False
out = {"version": h.get_version(), "extended": ext}
def try_(f):
    try:
        f()
        return True
    except nbd.Error as e:
        return str(e)
# One request each of 5 GiB (libnbd does not split; without extended headers it refuses).
out["trim"] = try_(lambda: h.trim(5 * G, 0))
out["zero"] = try_(lambda: h.zero(5 * G, G))
if not ext:
    for off in range(0, 6 * G, G):
        h.zero(G, off)
def flat(entries):
    # 32-bit callbacks get [len, flags, ...]; 64-bit ones may get (len, flags) pairs.
    return [x for e in entries for x in (e if isinstance(e, tuple) else (e,))]
extents = []
def cb(meta, offset, entries, err):
    extents.extend(flat(entries))
    return 0
off = 0
while off < 8 * G:
    n = len(extents)
    if ext:
        h.block_status_64(8 * G - off, off, cb)
    else:
        h.block_status(min(8 * G - off, 4 * G - 4096), off, cb)
    off += sum(extents[n::2])
out["extents"] = extents
out["payload"] = h.can_block_status_payload() if hasattr(h, "can_block_status_payload") else False
if out["payload"]:
    filtered = []
    def cb2(meta, offset, entries, err):
        filtered.append(meta)
        filtered.extend(flat(entries))
        return 0
    h.block_status_filter(8 * G, 0, ["base:allocation"], cb2)
    out["filtered"] = filtered
print(json.dumps(out))
h.shutdown()
"#;

fn libnbd_against(peers: &Peers) {
    if !peers.has("/usr/bin/python3") || !peers.has("nbdinfo") {
        return;
    }
    let dir = scratch();
    let img = image(dir.path());
    let srv = Server::start(dir.path(), &img);
    let out = peers
        .command("/usr/bin/python3", dir.path())
        .args(["-c", LIBNBD, &srv.uri()])
        .output()
        .unwrap();
    let log = srv.stop();
    assert!(
        out.status.success(),
        "{}: {}\n{log}",
        peers.name(),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("{}: {v}", peers.name());
    let ext = v["extended"] == true;
    // What the client says matches what the server saw.
    assert_eq!(framings(&log), if ext { (1, 0) } else { (0, 1) }, "{log}");
    let hole = 3; // NBD_STATE_HOLE | NBD_STATE_ZERO
    let want = [DATA_AT, hole, 4096, 0, 8 * GIB - DATA_AT - 4096, hole];
    let got: Vec<u64> = v["extents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    if ext {
        // 64-bit lengths: the 7 GiB hole is one descriptor.
        assert_eq!(got, want, "{v}");
        assert_eq!(v["trim"], true, "{v}");
        assert_eq!(v["zero"], true, "{v}");
        assert_eq!(request_lens(&log, "TRIM"), [5 * GIB]);
        assert_eq!(request_lens(&log, "WRITE_ZEROES"), [5 * GIB]);
        assert_eq!(v["payload"], true, "{v}");
        let f = v["filtered"].as_array().unwrap();
        assert_eq!(f[0], "base:allocation", "{v}");
        assert_eq!(f[1].as_u64(), Some(DATA_AT), "{v}");
    } else {
        // Compact headers: the client refuses 5 GiB itself; 32-bit extents.
        assert_ne!(v["trim"], true, "{v}");
        assert!(request_lens(&log, "TRIM").is_empty());
        assert!(request_lens(&log, "WRITE_ZEROES").iter().all(|&n| n <= GIB));
        let total: u64 = got.iter().step_by(2).sum();
        assert_eq!(total, 8 * GIB, "{v}");
        assert!(got.iter().step_by(2).all(|&n| n < 4 * GIB), "{v}");
    }
    // The data block survived every trim and zeroing around it.
    let f = std::fs::File::open(&img).unwrap();
    let mut b = [0u8; 4096];
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut b, DATA_AT).unwrap();
    assert!(b.iter().all(|&x| x == 0xa5));
}

#[test]
fn libnbd_speaks_the_framing_it_asks_for() {
    for peers in Peers::all() {
        libnbd_against(&peers);
    }
}

/// qemu-io discards and zeroes 5 GiB, qemu-img maps the image: the same result whatever the
/// framing. qemu's block layer cuts its own requests at 2 GiB - 512, with extended headers
/// too, so one request of more than 4 GiB comes only from libnbd (the log says how long
/// qemu's were).
fn qemu_against(peers: &Peers) {
    if !peers.has("qemu-img") || !peers.has("qemu-io") {
        return;
    }
    let dir = scratch();
    let img = image(dir.path());
    let srv = Server::start(dir.path(), &img);
    let uri = srv.uri();
    // qemu-io takes at most 2 GiB - 512 per command: 5 GiB is five commands.
    let mut io = peers.command("qemu-io", dir.path());
    io.args(["-f", "raw", &uri]);
    for g in 0..5 {
        io.arg("-c").arg(format!("discard {g}G 1G"));
        io.arg("-c").arg(format!("write -z -u {}G 1G", g + 1));
    }
    let io = io
        .args(["-c", "read -P 0xa5 7G 4k", "-c", "read -P 0 6G 1M"])
        .output()
        .unwrap();
    let map = peers
        .command("qemu-img", dir.path())
        .args(["map", "--output=json", "-f", "raw", &uri])
        .output()
        .unwrap();
    let log = srv.stop();
    let io_out = String::from_utf8_lossy(&io.stdout);
    assert!(io.status.success(), "{}: {io_out}", peers.name());
    assert!(!io_out.contains("Pattern verification failed"), "{io_out}");
    assert!(
        map.status.success(),
        "{}",
        String::from_utf8_lossy(&map.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&map.stdout).unwrap();
    let data: Vec<(u64, u64)> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["data"] == true)
        .map(|e| (e["start"].as_u64().unwrap(), e["length"].as_u64().unwrap()))
        .collect();
    assert_eq!(data, [(DATA_AT, 4096)], "{v}");
    let trims = request_lens(&log, "TRIM");
    let zeroes = request_lens(&log, "WRITE_ZEROES");
    eprintln!(
        "{}: sessions (extended, compact) {:?}; trims {trims:?}; zeroes {zeroes:?}",
        peers.name(),
        framings(&log)
    );
    assert_eq!(trims.iter().sum::<u64>(), 5 * GIB, "{log}");
    assert_eq!(zeroes.iter().sum::<u64>(), 5 * GIB, "{log}");
}

#[test]
fn qemu_discards_zeroes_and_maps_a_sparse_8_gib_image() {
    for peers in Peers::all() {
        qemu_against(&peers);
    }
}
