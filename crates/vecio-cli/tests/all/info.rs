//! `vecio info` on ext4, tmpfs and a loop device reports what the kernel actually does: each
//! answer is checked against the same call made here directly (open O_DIRECT, preadv2 and
//! pwritev2 with each flag, an io_uring read, statx, mincore through eviction and warming,
//! sysfs). Set-ups that need root or a missing tool skip, saying why.

use crate::common;
use crate::kernel;

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use common::{scratch_dir, vecio};
use kernel::{accepted, LoopDevice, Mount};
use serde_json::Value;

fn info(path: &Path, extra: &[&str]) -> Value {
    let p = path.to_string_lossy().to_string();
    let mut args = vec!["info", "--json", p.as_str()];
    args.extend_from_slice(extra);
    let out = vecio(Path::new("."), &args);
    assert!(
        out.status.success(),
        "vecio info {}: {}",
        p,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("vecio info --json prints JSON")
}

/// What `vecio info` says of a probe: accepted, refused, or neither.
fn said(info: &Value, probe: &str) -> Option<bool> {
    match info["capabilities"][probe]["outcome"].as_str() {
        Some("works") | Some("would_block") => Some(true),
        Some("refused") => Some(false),
        _ => None,
    }
}

/// Checks every capability against direct calls: reads on `reads`, writes of `data` at 0 on
/// `writes` (opened read-write).
fn check_capabilities(i: &Value, reads: &Path, writes: &Path, data: &[u8]) {
    assert_eq!(
        said(i, "o_direct"),
        Some(kernel::o_direct(reads)),
        "O_DIRECT: {i}"
    );
    let r = File::open(reads).expect("opening for reads");
    for (probe, flag) in [
        ("nowait_read", libc::RWF_NOWAIT),
        ("dontcache_read", libc::RWF_DONTCACHE),
    ] {
        let direct = accepted(kernel::preadv2(&r, flag));
        assert!(direct.is_some(), "{probe}: the direct call failed");
        assert_eq!(
            said(i, probe),
            direct,
            "{probe}: {}",
            i["capabilities"][probe]
        );
    }
    let w = OpenOptions::new()
        .read(true)
        .write(true)
        .open(writes)
        .expect("opening for writes");
    for (probe, flag) in [
        ("nowait_write", libc::RWF_NOWAIT),
        ("dsync_write", libc::RWF_DSYNC),
        ("dontcache_write", libc::RWF_DONTCACHE),
    ] {
        let direct = accepted(kernel::pwritev2(&w, flag, data));
        assert_eq!(
            said(i, probe),
            direct,
            "{probe}: {}",
            i["capabilities"][probe]
        );
    }
    let uring = i["capabilities"]["io_uring"]["outcome"].as_str() == Some("works");
    assert_eq!(uring, kernel::uring_read(reads), "io_uring: {i}");
}

fn check_alignment(i: &Value, path: &Path) {
    if let Some((mem, offset)) = kernel::dio_align(path) {
        assert_eq!(i["dio_align"]["mem"].as_u64(), Some(u64::from(mem)));
        assert_eq!(i["dio_align"]["offset"].as_u64(), Some(u64::from(offset)));
        assert_eq!(i["dio_align"]["source"], "statx");
    }
}

/// A 1 MiB file in `dir`, and a sibling for the direct write probes.
fn files_in(dir: &Path) -> (PathBuf, PathBuf) {
    let (f, w) = (dir.join("data"), dir.join("write-probe"));
    std::fs::write(&f, vec![7u8; 1 << 20]).expect("writing the data file");
    std::fs::write(&w, vec![0u8; 4096]).expect("writing the probe file");
    (f, w)
}

/// An ext4 directory: the target directory's when it is ext4, else a fresh ext4 image mounted
/// on a loop device (root only).
fn ext4_dir() -> Result<(tempfile::TempDir, Vec<Box<dyn std::any::Any>>), String> {
    let dir = scratch_dir("vecio-info-ext4-");
    if vecio_host::fs::fs_name(dir.path()).ok().as_deref() == Some("ext4") {
        return Ok((dir, Vec::new()));
    }
    if !kernel::is_root() {
        return Err("the target directory is not on ext4 and making one needs root".into());
    }
    let image = dir.path().join("ext4.img");
    File::create(&image)
        .and_then(|f| f.set_len(64 << 20))
        .map_err(|e| e.to_string())?;
    kernel::run(
        std::process::Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(&image),
    )?;
    let dev = LoopDevice::attach(&image)?;
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
    let m = Mount::new(&[], &dev.0, &mnt)?;
    Ok((dir, vec![Box::new(dev), Box::new(m)]))
}

#[test]
fn info_on_ext4_reports_what_the_kernel_does() {
    let (dir, _held) = match ext4_dir() {
        Ok(d) => d,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    let base = if dir.path().join("mnt").exists() {
        dir.path().join("mnt")
    } else {
        dir.path().to_path_buf()
    };
    let (data, writes) = files_in(&base);
    kernel::evict(&data);
    let cold = info(&data, &[]);
    assert_eq!(
        (cold["kind"].as_str(), cold["fs"].as_str()),
        (Some("regular"), Some("ext4"))
    );
    assert_eq!(cold["size"].as_u64(), Some(1 << 20));
    assert_eq!(
        cold["page_cache"]["resident"].as_u64(),
        Some(0),
        "evicted: {cold}"
    );
    vecio_host::pagecache::warm(&data).expect("warming");
    let warm = info(&data, &[]);
    assert_eq!(
        warm["page_cache"]["resident"].as_u64(),
        Some(1 << 20),
        "warm: {warm}"
    );
    check_alignment(&warm, &data);
    check_capabilities(&warm, &data, &writes, &[1u8; 4096]);
    assert_eq!(
        std::fs::read(&data).ok(),
        Some(vec![7u8; 1 << 20]),
        "the file is untouched"
    );
    // The device behind the filesystem, as sysfs names it.
    let st = rustix::fs::stat(&data).expect("stat");
    let link = format!(
        "/sys/dev/block/{}:{}",
        rustix::fs::major(st.st_dev),
        rustix::fs::minor(st.st_dev)
    );
    match std::fs::canonicalize(&link) {
        Ok(sys) => {
            let name = sys.file_name().map(|n| n.to_string_lossy().to_string());
            assert_eq!(warm["device"]["name"].as_str(), name.as_deref(), "{warm}");
            assert!(warm["device"]["queue"]["logical_block_size"].is_string());
        }
        Err(_) => println!("device check skipped: no {link}"),
    }
    let d = info(&base, &[]);
    assert_eq!(d["kind"], "directory");
    check_capabilities(&d, &data, &writes, &[2u8; 4096]);
}

#[test]
fn info_on_tmpfs_reports_what_the_kernel_does() {
    let shm = Path::new("/dev/shm");
    let on_shm = vecio_host::fs::fs_name(shm).ok().as_deref() == Some("tmpfs");
    let holder = scratch_dir("vecio-info-tmpfs-");
    let _mount = if on_shm {
        None
    } else if kernel::is_root() {
        match Mount::new(&["-t", "tmpfs"], Path::new("tmpfs"), holder.path()) {
            Ok(m) => Some(m),
            Err(why) => return println!("skipped: mounting a tmpfs: {why}"),
        }
    } else {
        return println!("skipped: /dev/shm is not tmpfs and mounting one needs root");
    };
    let dir = tempfile::tempdir_in(if on_shm { shm } else { holder.path() }).expect("dir");
    let (data, writes) = files_in(dir.path());
    let i = info(&data, &[]);
    assert_eq!(
        (i["kind"].as_str(), i["fs"].as_str()),
        (Some("regular"), Some("tmpfs"))
    );
    assert!(i["device"].is_null(), "no block device behind tmpfs: {i}");
    assert_eq!(
        i["page_cache"]["resident"].as_u64(),
        Some(1 << 20),
        "tmpfs lives in memory"
    );
    check_alignment(&i, &data);
    check_capabilities(&i, &data, &writes, &[1u8; 4096]);
}

#[test]
fn info_on_a_loop_device_reports_what_the_kernel_does() {
    if !kernel::is_root() {
        return println!("skipped: setting up a loop device needs root");
    }
    let dir = scratch_dir("vecio-info-loop-");
    let image = dir.path().join("disk.img");
    let content: Vec<u8> = (0..16u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(&image, &content).expect("writing the image");
    let dev = match LoopDevice::attach(&image) {
        Ok(d) => d,
        Err(why) => return println!("skipped: losetup: {why}"),
    };
    let read_only = info(&dev.0, &[]);
    assert_eq!(
        read_only["capabilities"]["nowait_write"]["outcome"],
        "not_probed"
    );
    assert!(read_only["probed_on"]["writes"].is_null());
    let i = info(&dev.0, &["--write"]);
    assert_eq!(i["kind"], "block");
    assert!(i["fs"].is_null());
    assert_eq!(i["size"].as_u64(), Some(16 << 20));
    let name = dev.0.file_name().map(|n| n.to_string_lossy().to_string());
    assert_eq!(i["device"]["name"].as_str(), name.as_deref(), "{i}");
    let backing = std::fs::canonicalize(&image).expect("image path");
    assert_eq!(
        i["device"]["loop_backing"]["file"].as_str(),
        Some(backing.to_string_lossy().as_ref())
    );
    assert_eq!(i["device"]["loop_backing"]["direct_io"], false);
    let f = File::open(&dev.0).expect("opening the device");
    let lbs = kernel::logical_block_size(&f).to_string();
    assert_eq!(
        i["device"]["queue"]["logical_block_size"].as_str(),
        Some(lbs.as_str())
    );
    check_alignment(&i, &dev.0);
    // The device's first block, rewritten with its own bytes as vecio info --write does.
    check_capabilities(&i, &dev.0, &dev.0, &content[..4096]);
    drop(f);
    drop(dev);
    assert!(
        std::fs::read(&image).ok() == Some(content),
        "the image is unchanged"
    );
}
