//! Shared set-up of the integration tests: a source directory and a mount point on a disk file
//! system (the target's tmp directory, not tmpfs), a server mounted in-process and served on its
//! own thread, and a guard that unmounts it (and, if it hangs, aborts the connection) however
//! the test ends.
//!
//! Layout of every test's scratch directory `BASE`:
//! - `BASE/src`: the served source directory;
//! - `BASE/m/mnt`: the mount point, whose parent is not the source's parent, so that a name
//!   resolved against the wrong one is visible.

#![allow(dead_code)]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use vecio_fuse::{Config, Server, Summary, Unmounter};

/// Why these tests cannot run here, if they cannot.
pub fn skip_reason() -> Option<&'static str> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root: mount(2) of a FUSE file system needs CAP_SYS_ADMIN");
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing (no fuse module?)");
    }
    None
}

/// The configuration the tests start from: two workers, everything else default.
pub fn config() -> Config {
    Config {
        threads: 2,
        ..Config::default()
    }
}

/// The scratch directories of one test, not yet mounted.
pub struct Dirs {
    dir: tempfile::TempDir,
    /// The scratch directory.
    pub base: PathBuf,
    /// The source directory.
    pub src: PathBuf,
    /// The mount point.
    pub mnt: PathBuf,
}

/// Scratch directories for test `name`, or `None` (with the reason printed) when FUSE tests
/// cannot run on this machine.
pub fn dirs(name: &str) -> Option<Dirs> {
    if let Some(why) = skip_reason() {
        eprintln!("skipping {name}: {why}");
        return None;
    }
    let dir = tempfile::Builder::new()
        .prefix(&format!("vecio-fuse-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("scratch directory");
    let base = dir.path().to_path_buf();
    let src = base.join("src");
    let mnt = base.join("m").join("mnt");
    std::fs::create_dir(&src).unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    // Other users (the permission tests run a child as nobody) must be able to reach the mount.
    for d in [&base, &src, &base.join("m"), &mnt] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    Some(Dirs {
        dir,
        base,
        src,
        mnt,
    })
}

impl Dirs {
    /// Mounts `src` on `mnt` with `cfg` and starts serving.
    pub fn mount(self, cfg: Config) -> Fixture {
        let server = Server::mount(&self.src, &self.mnt, cfg).expect("mounting");
        let unmounter = server.unmounter();
        // Found before anything touches the mount: the kernel holds every request until the
        // server answers INIT.
        let conn = connection_of(&self.mnt);
        let thread = std::thread::Builder::new()
            .name("test-server".into())
            .spawn(move || server.run())
            .unwrap();
        Fixture {
            base: self.base,
            src: self.src,
            mnt: self.mnt,
            unmounter,
            conn,
            server: Some(thread),
            _dir: self.dir,
        }
    }
}

/// A mounted, serving file system; unmounted when dropped.
pub struct Fixture {
    /// The scratch directory.
    pub base: PathBuf,
    /// The source directory.
    pub src: PathBuf,
    /// The mount point.
    pub mnt: PathBuf,
    unmounter: Unmounter,
    conn: Option<u32>,
    server: Option<JoinHandle<vecio_fuse::Result<Summary>>>,
    // Last: removed only once the mount is gone.
    _dir: tempfile::TempDir,
}

/// Mounts a fresh source for test `name` with `cfg`; `None` when FUSE tests cannot run here.
pub fn mount(name: &str, cfg: Config) -> Option<Fixture> {
    dirs(name).map(|d| d.mount(cfg))
}

impl Fixture {
    /// `mnt/rel`.
    pub fn m(&self, rel: &str) -> PathBuf {
        self.mnt.join(rel)
    }

    /// `src/rel`.
    pub fn s(&self, rel: &str) -> PathBuf {
        self.src.join(rel)
    }

    /// Unmounts and returns what the server counted; panics if the server failed, or did
    /// not stop by itself once unmounted.
    pub fn finish(mut self) -> Summary {
        match self.stop() {
            Some((Ok(s), false)) => s,
            Some((Ok(_), true)) => {
                panic!("the server stopped only once its connection was aborted")
            }
            Some((Err(e), _)) => panic!("the server failed: {e}"),
            None => panic!("the server did not stop, even with its connection aborted"),
        }
    }

    /// Unmounts (lazily) and waits for the workers, aborting the connection if they hang;
    /// returns what the server returned and whether it took an abort.
    fn stop(&mut self) -> Option<(vecio_fuse::Result<Summary>, bool)> {
        let thread = self.server.take()?;
        if let Err(e) = self.unmounter.unmount() {
            eprintln!("unmounting {}: {e}", self.mnt.display());
        }
        let mut aborted = false;
        if !wait_finished(&thread, Duration::from_secs(10)) {
            eprintln!(
                "the server of {} did not stop within 10 s: aborting the connection",
                self.mnt.display()
            );
            aborted = true;
            if let Some(c) = self.conn {
                abort_connection(c);
            }
            if !wait_finished(&thread, Duration::from_secs(5)) {
                return None;
            }
        }
        let r = thread
            .join()
            .unwrap_or_else(|_| Err(vecio_fuse::Error::Init("server thread panicked".into())));
        Some((r, aborted))
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some((Err(e), _)) = self.stop() {
            eprintln!("the server of {} failed: {e}", self.mnt.display());
        }
    }
}

/// Aborts FUSE connection `c` through fusectl, mounting fusectl first if nobody has.
fn abort_connection(c: u32) {
    let dir = Path::new("/sys/fs/fuse/connections");
    if !dir.join(c.to_string()).exists() {
        let _ = Command::new("mount")
            .args(["-t", "fusectl", "fusectl"])
            .arg(dir)
            .status();
    }
    if let Err(e) = std::fs::write(dir.join(format!("{c}/abort")), "1") {
        eprintln!("aborting FUSE connection {c}: {e}");
    }
}

fn wait_finished<T>(t: &JoinHandle<T>, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while !t.is_finished() {
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// The FUSE connection number of the mount on `mnt` (its device minor, from mountinfo, which
/// does not touch the mount itself).
pub fn connection_of(mnt: &Path) -> Option<u32> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let want = mnt.to_str()?;
    info.lines().rev().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        if f.get(4) != Some(&want) {
            return None;
        }
        f.get(2)?.split(':').nth(1)?.parse().ok()
    })
}

/// True while something is mounted on `mnt`.
pub fn is_mounted(mnt: &Path) -> bool {
    connection_of(mnt).is_some()
}

/// `path` as a C string for libc calls.
pub fn cpath(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).unwrap()
}

/// The errno of the last failed libc call.
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Runs `args` as uid/gid 65534 with no supplementary groups.
pub fn as_nobody(args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(args)
        .output()
        .expect("running setpriv")
}

// Not every test binary that includes this module writes patterns.
#[allow(unused_imports)]
pub use vecio_testkit::pattern;

/// Runs a shell command line, panicking with its output unless it succeeds.
pub fn sh(cmd: &str) -> Output {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(
        out.status.success(),
        "`{cmd}` failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The sorted names in `dir`.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// Mounts a fresh source for a test, or returns from the test (the reason is printed).
#[allow(unused_macros)]
macro_rules! mount_or_skip {
    ($name:expr, $cfg:expr) => {
        match common::mount($name, $cfg) {
            Some(f) => f,
            None => return,
        }
    };
}
#[allow(unused_imports)]
pub(crate) use mount_or_skip;

/// Permission bits of `p` (not following a symlink).
pub fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// The errno of an I/O error (0 when it has none).
pub fn raw(e: std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}
