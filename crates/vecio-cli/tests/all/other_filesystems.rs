//! `vecio nbd` and `vecio fuse` on XFS and btrfs, where users keep their images and trees
//! besides ext4. XFS tells its direct-I/O alignment through statx; btrfs does not (vecio then
//! assumes 4096 bytes) and checksums its data, so what each server does with unaligned and
//! direct requests is worth seeing there. Each file system is a small one of the test's own on
//! a loop device. Root only; skips saying why otherwise.

use crate::full_disk::ServerProcess;
use crate::fuse_server::FuseServer;

use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::process::Command;

use vecio_testkit::SmallFs;

/// Makes and mounts a small file system of some kind: `SmallFs::xfs` or `SmallFs::btrfs`.
type MakeFs = fn(&Path, u64) -> Result<SmallFs, String>;

/// The file systems, each with the smallest size its mkfs takes.
const KINDS: [(&str, MakeFs, u64); 2] =
    [("xfs", SmallFs::xfs, 300), ("btrfs", SmallFs::btrfs, 160)];

/// A small file system of `kind`, or `None` saying why not (not root, or its mkfs missing).
fn small_fs(scratch: &Path, kind: &str, make: MakeFs, mib: u64) -> Option<SmallFs> {
    if vecio_testkit::skip_unless_root(kind).is_some() {
        return None;
    }
    match make(scratch, mib) {
        Ok(fs) => Some(fs),
        Err(e) if e.contains("No such file") => {
            eprintln!("SKIP {kind}: mkfs.{kind} is not installed (scripts/setup installs it): {e}");
            None
        }
        Err(e) => panic!("a {mib} MiB {kind} on a loop device: {e}"),
    }
}

/// The client: 400 writes, write-zeroes and reads of sizes from 1 byte to 200001 bytes, half
/// at 4 KiB-aligned offsets and half anywhere, each read checked against a model of the
/// export; a flush, the whole export read back, and the model written to argv[2].
const ROUND_TRIP: &str = r#"
import nbd, random, sys
h = nbd.NBD()
h.connect_uri(sys.argv[1])
size = h.get_size()
model = bytearray(size)
rng = random.Random(7)
for i in range(400):
    off = rng.randrange(0, size - 300000)
    n = rng.choice([1, 511, 4096, 5000, 65536, 131072, 200001])
    if rng.random() < 0.5:
        off -= off % 4096
    op = rng.random()
    if op < 0.7:
        data = rng.randbytes(n)
        h.pwrite(data, off, nbd.CMD_FLAG_FUA if rng.random() < 0.1 else 0)
        model[off:off + n] = data
    elif op < 0.85:
        h.zero(n, off)
        model[off:off + n] = bytes(n)
    else:
        assert h.pread(n, off) == model[off:off + n], ("read", i, off, n)
h.flush()
step = 4 << 20
for off in range(0, size, step):
    assert h.pread(step, off) == model[off:off + step], ("read back", off)
h.shutdown()
open(sys.argv[2], "wb").write(model)
"#;

#[test]
fn nbd_serves_unaligned_and_aligned_requests_on_xfs_and_btrfs() {
    let Some(python) = vecio_testkit::python_with_libnbd() else {
        return;
    };
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for (kind, make, mib) in KINDS {
        let Some(fs) = small_fs(scratch.path(), kind, make, mib) else {
            return;
        };
        for cache in ["none", "writeback"] {
            let image = fs.path().join("disk.img");
            let _ = std::fs::remove_file(&image);
            std::fs::File::create(&image)
                .unwrap()
                .set_len(32 << 20)
                .unwrap();
            let socket = scratch.path().join("nbd.sock");
            let mut server = ServerProcess::start(&image, &socket, "uring", cache);
            let model = scratch.path().join("model.bin");
            let out = Command::new(python)
                .args(["-c", ROUND_TRIP])
                .arg(format!("nbd+unix:///?socket={}", socket.display()))
                .arg(&model)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{kind} --cache={cache}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            server.stop();
            let written = std::fs::read(&image).unwrap();
            assert!(
                written == std::fs::read(&model).unwrap(),
                "{kind} --cache={cache}: the image differs from what the client wrote"
            );
        }
    }
}

#[test]
fn fuse_serves_buffered_and_direct_io_on_xfs_and_btrfs() {
    if let Some(why) = FuseServer::skip_reason() {
        eprintln!("SKIP: {why}");
        return;
    }
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for (kind, make, mib) in KINDS {
        let Some(fs) = small_fs(scratch.path(), kind, make, mib) else {
            return;
        };
        let src = fs.path().join("src");
        std::fs::create_dir(&src).unwrap();
        let server = FuseServer::mount(&src, &scratch.path().join(format!("mnt-{kind}")), &[]);
        let mnt = server.mountpoint().to_path_buf();

        // Buffered writes at odd offsets, then direct 64 KiB writes and reads over them.
        let data = vecio_testkit::pattern(3, 300_001);
        let file = std::fs::File::create(mnt.join("f")).unwrap();
        file.write_all_at(&data, 777).unwrap();
        file.sync_all().unwrap();
        drop(file);
        let direct = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(mnt.join("f"))
            .unwrap();
        let mut buf = vecio::AlignedBuf::page_aligned(65536);
        buf.fill(0xa5);
        direct.write_all_at(&buf, 131072).unwrap();
        buf.fill(0);
        direct.read_exact_at(&mut buf, 131072).unwrap();
        assert!(buf.iter().all(|&b| b == 0xa5), "{kind}: O_DIRECT read back");
        drop(direct);

        let mut want = vec![0u8; 777];
        want.extend_from_slice(&data);
        want[131072..196608].fill(0xa5);
        for (how, path) in [
            ("through the mount", mnt.join("f")),
            ("in the source", src.join("f")),
        ] {
            let mut got = Vec::new();
            std::fs::File::open(&path)
                .unwrap()
                .read_to_end(&mut got)
                .unwrap();
            assert!(
                got == want,
                "{kind}: the file {how} differs ({} bytes, want {})",
                got.len(),
                want.len()
            );
        }
        std::fs::rename(mnt.join("f"), mnt.join("g")).unwrap();
        std::fs::remove_file(mnt.join("g")).unwrap();
        assert_eq!(
            std::fs::read_dir(&src).unwrap().count(),
            0,
            "{kind}: removed"
        );
        drop(server);
    }
}
