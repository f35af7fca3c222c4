//! Sparse reads on the wire, seen by libnbd (python3-libnbd, as nbdsh uses it): holes come
//! back as `NBD_REPLY_TYPE_OFFSET_HOLE` chunks, `NBD_CMD_FLAG_DF` still gets one data chunk,
//! a simple-reply client still gets zeroes, and a read over the advertised maximum is
//! `EOVERFLOW` (structured or extended) or `EINVAL` (simple). With the host's libnbd 1.14
//! (structured replies) and the trixie chroot's 1.22 (extended headers), where it exists.

use crate::common;

use std::io::{Seek, SeekFrom, Write};

use common::{libnbd_python, random_bytes, scratch, start_on, Opts};
use vecio_testkit::Peers;

const KIB: u64 = 1024;

const SCRIPT: &str = r#"
import errno, sys, nbd
uri, path = sys.argv[1], sys.argv[2]
want = open(path, "rb").read(256 * 1024)

def chunks_of(h, count, offset, flags=0):
    seen = []
    def cb(sub, off, status, err):
        seen.append((off, len(sub), status))
        return 0
    buf = h.pread_structured(count, offset, cb, flags)
    return bytes(buf), sorted(seen)

h = nbd.NBD()
h.connect_uri(uri)
assert h.get_structured_replies_negotiated(), "structured replies"
K = 1024
data, seen = chunks_of(h, 256 * K, 0)
assert data == want, "mixed read bytes"
assert seen == [(0, 64 * K, nbd.READ_DATA), (64 * K, 128 * K, nbd.READ_HOLE),
                (192 * K, 64 * K, nbd.READ_DATA)], seen
data, seen = chunks_of(h, 64 * K, 1024 * K)
assert data == bytes(64 * K), "hole bytes"
assert seen == [(1024 * K, 64 * K, nbd.READ_HOLE)], seen
data, seen = chunks_of(h, 256 * K, 0, nbd.CMD_FLAG_DF)
assert data == want, "DF bytes"
assert seen == [(0, 256 * K, nbd.READ_DATA)], seen
maximum = h.get_block_size(nbd.SIZE_MAXIMUM)
h.set_strict_mode(0)
try:
    h.pread(maximum + 4096, 0)
    raise SystemExit("a read over the maximum succeeded")
except nbd.Error as e:
    assert e.errnum == errno.EOVERFLOW, e
assert h.pread(4096, 0) == want[:4096], "connection still serves"

s = nbd.NBD()
s.set_request_structured_replies(False)
if hasattr(s, "set_request_extended_headers"):
    s.set_request_extended_headers(False)  # libnbd 1.18 on: extended headers imply chunks
s.connect_uri(uri)
assert not s.get_structured_replies_negotiated()
assert s.pread(256 * K, 0) == want, "simple reply bytes"
s.set_strict_mode(0)
try:
    s.pread(maximum + 4096, 0)
    raise SystemExit("a simple read over the maximum succeeded")
except nbd.Error as e:
    assert e.errnum == errno.EINVAL, e
print("ok")
"#;

/// Runs `script` with libnbd's Python from every peer set, with `args`; asserts it succeeds.
fn run_script(script: &str, args: &[&str]) {
    for peers in Peers::all() {
        let Some(mut py) = libnbd_python(&peers) else {
            continue;
        };
        let out = py.args(["-c", script]).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}{}",
            peers.name(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn holes_are_hole_chunks_df_is_one_chunk_and_oversized_reads_overflow() {
    let dir = scratch();
    let image = dir.path().join("sparse.img");
    let mut f = std::fs::File::create(&image).unwrap();
    f.set_len(64 << 20).unwrap();
    for (at, seed) in [(0, 1), (192 * KIB, 2)] {
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(&random_bytes(64 * KIB as usize, seed)).unwrap();
    }
    f.sync_all().unwrap();
    drop(f);
    let srv = start_on(dir, image.clone(), Opts::default());
    run_script(SCRIPT, &[&srv.unix_uri(), image.to_str().unwrap()]);
}

const TRIM_SCRIPT: &str = r#"
import sys, nbd
uri = sys.argv[1]
K = 1024
def chunks_of(h, count, offset):
    seen = []
    def cb(sub, off, status, err):
        seen.append((off, len(sub), status))
        return 0
    buf = h.pread_structured(count, offset, cb)
    return bytes(buf), sorted(seen)
h = nbd.NBD()
h.connect_uri(uri)
data, seen = chunks_of(h, 256 * K, 0)
assert seen == [(0, 256 * K, nbd.READ_DATA)], seen
h.trim(64 * K, 128 * K)  # count, offset
data, seen = chunks_of(h, 256 * K, 0)
assert data[64 * K:128 * K] != bytes(64 * K), ("data before the hole", seen)
assert data[128 * K:192 * K] == bytes(64 * K), "the trimmed range reads as zeroes"
assert seen == [(0, 128 * K, nbd.READ_DATA), (128 * K, 64 * K, nbd.READ_HOLE),
                (192 * K, 64 * K, nbd.READ_DATA)], seen
print("ok")
"#;

/// A fully written file skips the hole walk (its reads are one data chunk), and a trim through
/// the server makes the next read walk again and answer the new hole as a hole chunk.
#[test]
fn a_full_file_reads_as_data_until_a_trim_makes_a_hole() {
    for peers in Peers::all() {
        let Some(mut py) = libnbd_python(&peers) else {
            continue;
        };
        // A fresh full image per client: the trim makes a hole the next client would see.
        let dir = scratch();
        let image = dir.path().join("full.img");
        std::fs::write(&image, random_bytes(1 << 20, 9)).unwrap();
        std::fs::File::open(&image).unwrap().sync_all().unwrap();
        let srv = start_on(dir, image.clone(), Opts::default());
        let out = py
            .args(["-c", TRIM_SCRIPT, &srv.unix_uri()])
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
