//! The harness on real files, processes and tools: scratch files filled and removed, fio run
//! and its failures reported, servers started and stopped with their CPU read, the clean-up's
//! sweep of dead runs, certificates openssl makes, the page cache followed over time, the
//! machine's facts, the disk's counters and a thread's CPU time.

use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use vecio_bench::experiments::loopdev::cachecurve::CacheSampler;
use vecio_bench::harness::certs::{openssl_missing, Certificates};
use vecio_bench::harness::cleanup::{sweep_stale, ScratchDir};
use vecio_bench::harness::diskstat::DiskProbe;
use vecio_bench::harness::fio::{fio_version, FioJob, FioRw};
use vecio_bench::harness::rusage::Usage;
use vecio_bench::harness::scratch::{Origin, ScratchFile, FILL_ALIGN, FILL_CHUNK};
use vecio_bench::harness::server::{find_program, ServerProcess};
use vecio_bench::harness::setup::Setup;
use vecio_host::{pagecache, system};

/// A minimal listener: python3 accepting and closing connections (`None` without python3).
fn listener(socket: &Path) -> Option<Command> {
    if let Some(py) = find_program("python3") {
        let mut c = Command::new(py);
        c.args([
            "-c",
            "import socket,sys,time\n\
             s=socket.socket(socket.AF_UNIX)\n\
             s.bind(sys.argv[1]); s.listen(8)\n\
             while True: s.accept()[0].close()",
        ])
        .arg(socket);
        return Some(c);
    }
    None
}

#[test]
fn creates_fills_and_removes() -> Result<()> {
    let parent = tempfile::tempdir_in(".")?;
    let mut seen = Vec::new();
    let size = 3 * FILL_CHUNK as u64 + 100;
    let s =
        ScratchFile::prepare_with_progress(Some(parent.path()), None, size, &mut |b| seen.push(b))?;
    let path = s.path().to_path_buf();
    assert_eq!(s.origin(), Origin::Created);
    assert_eq!(s.len(), 3 * FILL_CHUNK as u64 + FILL_ALIGN as u64);
    assert_eq!(fs::metadata(&path)?.len(), s.len());
    assert_eq!(seen.last().copied(), Some(s.len()));
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    // Every block is allocated and written: no holes, no unwritten extents read as zeros.
    assert!(fs::metadata(&path)?.blocks() * 512 >= s.len());
    let mut head = vec![0u8; 1 << 16];
    File::open(&path)?.read_exact(&mut head)?;
    assert!(head.chunks(FILL_ALIGN).all(|b| b.iter().any(|&x| x != 0)));
    drop(s);
    assert!(!path.exists());
    assert_eq!(
        fs::read_dir(parent.path())?.count(),
        0,
        "temp dir must be gone"
    );
    Ok(())
}

#[test]
fn creates_at_missing_path_and_removes() -> Result<()> {
    let parent = tempfile::tempdir_in(".")?;
    let path = parent.path().join("new.dat");
    let s = ScratchFile::prepare(None, Some(path.clone()), 8192)?;
    assert_eq!((s.origin(), s.len()), (Origin::Created, 8192));
    drop(s);
    assert!(!path.exists());
    Ok(())
}

#[test]
fn uses_user_file_as_is() -> Result<()> {
    let parent = tempfile::tempdir_in(".")?;
    let path = parent.path().join("mine.dat");
    fs::write(&path, vec![7u8; 10_000])?;
    let s = ScratchFile::prepare(None, Some(path.clone()), 5000)?;
    assert_eq!((s.origin(), s.len()), (Origin::UserFile, 10_000));
    drop(s);
    assert_eq!(
        fs::read(&path)?,
        vec![7u8; 10_000],
        "user file must be untouched"
    );

    let err = ScratchFile::prepare(None, Some(path.clone()), 20_000).err();
    assert!(err.is_some_and(|e| e.to_string().contains("never extends")));
    assert_eq!(fs::metadata(&path)?.len(), 10_000);
    assert!(ScratchFile::prepare(None, Some(parent.path().to_path_buf()), 1).is_err());
    assert!(ScratchFile::prepare(None, None, 0).is_err());
    Ok(())
}

#[test]
fn uses_block_device_as_is() -> Result<()> {
    let Some(dev) = system::block_device(Path::new("."))? else {
        println!("skipped: no block device behind the current directory");
        return Ok(());
    };
    let node = PathBuf::from("/dev").join(&dev.name);
    if !fs::metadata(&node).is_ok_and(|m| m.file_type().is_block_device()) {
        println!("skipped: {} is not a device node here", node.display());
        return Ok(());
    }
    if let Err(e) = File::open(&node) {
        println!("skipped: cannot open {} here: {e}", node.display());
        return Ok(());
    }
    let s = ScratchFile::prepare(None, Some(node.clone()), 1)?;
    assert_eq!(s.origin(), Origin::BlockDevice);
    assert!(!s.is_empty());
    println!("{} holds {} bytes", node.display(), s.len());
    drop(s);
    assert!(node.exists(), "a device is never removed");
    Ok(())
}

#[test]
fn runs_fio_for_real() -> Result<()> {
    if fio_version().is_none() {
        println!("skipped: fio is not installed (run scripts/setup)");
        return Ok(());
    }
    let scratch = ScratchFile::prepare(None, None, 8 << 20)?;
    let mut job = FioJob::new(scratch.path(), FioRw::RandReadWrite, 4096, 8 << 20);
    job.runtime_s = 0.3;
    job.rwmixread = Some(50);
    assert!(job.args().iter().any(|a| a == "--allow_file_create=0"));
    let r = job.run()?;
    assert!(r.read_mb_s > 0.0 && r.write_mb_s > 0.0, "{r:?}");
    assert!(r.read_iops > 0.0 && r.write_iops > 0.0, "{r:?}");
    assert_eq!(std::fs::metadata(scratch.path())?.len(), scratch.len());
    Ok(())
}

#[test]
fn fio_failure_carries_stderr() -> Result<()> {
    if fio_version().is_none() {
        println!("skipped: fio is not installed (run scripts/setup)");
        return Ok(());
    }
    // fio creates missing directories, but cannot create one below a regular file.
    let dir = tempfile::tempdir_in(".")?;
    let not_a_dir = dir.path().join("plain");
    std::fs::write(&not_a_dir, b"x")?;
    let mut job = FioJob::new(not_a_dir.join("x"), FioRw::Read, 4096, 1 << 20);
    job.runtime_s = 0.1;
    let err = match job.run() {
        Ok(r) => panic!("fio on a missing directory should fail, got {r:?}"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("fio"), "{err}");
    assert!(
        err.contains("Not a directory"),
        "error should carry fio's stderr: {err}"
    );
    Ok(())
}

/// A listener started as a server process in a scratch directory; `None` without python3.
fn started_listener() -> Result<Option<(tempfile::TempDir, ServerProcess, u32)>> {
    let dir = tempfile::tempdir()?;
    let socket = dir.path().join("s.sock");
    let Some(cmd) = listener(&socket) else {
        println!("skipped: python3 is not installed");
        return Ok(None);
    };
    let server = ServerProcess::start(cmd, &socket, &dir.path().join("log"))?;
    let pid = server.pid().context("pid")?;
    Ok(Some((dir, server, pid)))
}

#[test]
fn starts_waits_and_reaps_with_usage() -> Result<()> {
    let Some((_dir, server, pid)) = started_listener()? else {
        return Ok(());
    };
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    assert!(server.nbd_uri().ends_with("s.sock"));
    let usage = server.stop()?;
    assert!(usage.cpu_s() > 0.0, "python used some CPU: {usage:?}");
    assert!(!Path::new(&format!("/proc/{pid}/status")).exists());
    Ok(())
}

#[test]
fn drop_stops_the_server() -> Result<()> {
    let Some((_dir, server, pid)) = started_listener()? else {
        return Ok(());
    };
    drop(server);
    assert!(!Path::new(&format!("/proc/{pid}/status")).exists());
    Ok(())
}

#[test]
fn a_server_that_exits_is_reported_with_its_output() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "echo cannot open the image >&2; exit 3"]);
    let err = ServerProcess::start(cmd, &dir.path().join("s"), &dir.path().join("log"))
        .err()
        .context("a server that exits must fail to start")?;
    let text = format!("{err:#}");
    assert!(text.contains("cannot open the image"), "{text}");
    Ok(())
}

#[test]
fn finds_programs_in_path() {
    assert!(find_program("sh").is_some());
    assert!(find_program("no-such-program-vecio").is_none());
}

#[test]
fn sweeps_dead_runs_only() -> Result<()> {
    let parent = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR"))?;
    // Pid 2^22 + 1 is above the kernel's largest pid_max: no process has it.
    let dead = parent.path().join("vecio-scratch-4194305-abcdef");
    std::fs::create_dir(&dead)?;
    std::fs::write(dead.join("scratch.dat"), b"x")?;
    let mine = ScratchDir::new_in("scratch", parent.path())?;
    assert!(!dead.exists(), "a dead run's directory is removed");
    assert!(mine.path().exists());
    let path = mine.path().to_path_buf();
    assert_eq!(sweep_stale(parent.path()), Vec::<PathBuf>::new());
    drop(mine);
    assert!(!path.exists());
    Ok(())
}

#[test]
fn makes_a_ca_and_a_server_certificate_it_signs() -> Result<()> {
    if let Some(why) = openssl_missing() {
        println!("skipped: {why}");
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let c = Certificates::make(dir.path())?;
    for f in ["ca-cert.pem", "server-cert.pem", "server-key.pem"] {
        assert!(c.server_dir().join(f).is_file(), "{f}");
    }
    assert!(c.client_dir().join("ca-cert.pem").is_file());
    assert!(!c.client_dir().join("server-key.pem").exists());
    let out = Command::new("openssl")
        .arg("verify")
        .arg("-CAfile")
        .arg(c.client_dir().join("ca-cert.pem"))
        .arg(c.server_dir().join("server-cert.pem"))
        .output()?;
    assert!(out.status.success(), "{out:?}");
    let text = Command::new("openssl")
        .args(["x509", "-noout", "-ext", "subjectAltName", "-in"])
        .arg(c.server_dir().join("server-cert.pem"))
        .output()?;
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("DNS:localhost") && text.contains("127.0.0.1"),
        "{text}"
    );
    Ok(())
}

#[test]
fn curve_follows_a_file_into_the_cache() -> anyhow::Result<()> {
    // Beside the crate, not in /tmp: tmpfs has no disk to evict to.
    let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR"))?;
    let p = dir.path().join("curve");
    std::fs::write(&p, vec![9u8; 4 << 20])?;
    pagecache::flush_and_evict(&p)?;
    let s = CacheSampler::start(&p, Duration::from_millis(20));
    std::thread::sleep(Duration::from_millis(60));
    pagecache::warm(&p)?;
    std::thread::sleep(Duration::from_millis(60));
    let curve = s.stop();
    assert!(curve.len() >= 3, "{curve:?}");
    assert!(curve.windows(2).all(|w| w[0].t_s <= w[1].t_s));
    let last = curve.last().map_or(0, |p| p.file_resident);
    assert!(last >= 3 << 20, "warm file resident at the end: {curve:?}");
    assert!(curve[0].file_resident < last, "{curve:?}");
    Ok(())
}

#[test]
fn collects_the_machine_and_the_tools() {
    // `vecio info` is the CLI's: without the binary there is no scratch record (the CLI's
    // tests/bench_all.rs checks the record a real run makes).
    let s = Setup::collect(Path::new("."), Path::new("/nonexistent/vecio"));
    assert!(s.cpus >= 1);
    assert_eq!(s.kernel, system::kernel_release().ok());
    let names: Vec<&str> = s.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["fio", "qemu-nbd", "nbdkit", "libnbd", "libfuse", "valgrind"]
    );
    let fio = s.tools[0].version.clone();
    assert_eq!(fio, fio_version(), "fio's version line");
    assert_eq!(s.scratch, None);
}

#[test]
fn probes_the_current_directory() {
    match DiskProbe::for_path(Path::new(".")) {
        Some(p) => {
            let a = p.read().expect("stat readable");
            let b = p.read().expect("stat readable");
            assert!(
                b.queue_ms_since(&a) < 1_000_000,
                "two reads an instant apart"
            );
        }
        None => println!("skipped: no block device behind the current directory"),
    }
}

#[test]
fn thread_usage_counts_sleep_as_voluntary_switch() -> io::Result<()> {
    let before = Usage::thread()?;
    std::thread::sleep(Duration::from_millis(5));
    let after = Usage::thread()?;
    let d = after.delta(&before);
    assert!(d.vol_ctx >= 1, "sleeping must block the thread: {d:?}");
    Ok(())
}

#[test]
fn thread_usage_grows_with_work() -> io::Result<()> {
    let before = Usage::thread()?;
    let mut x = 0u64;
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_millis(30) {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    let d = Usage::thread()?.delta(&before);
    assert!(d.cpu_s() > 0.0, "busy loop must use CPU: {d:?}");
    Ok(())
}
