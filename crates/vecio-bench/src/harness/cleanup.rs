//! What a run leaves on the machine (scratch files, mounts, child servers) and how it goes away
//! when the run is stopped: docs/report.md, "The harness".

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// One thing to undo.
#[derive(Debug)]
enum Entry {
    /// A file or a directory (removed with everything in it, mounts detached first).
    Path(PathBuf),
    /// A child process to stop.
    Child(u32),
}

/// What is registered now, in registration order.
#[derive(Debug, Default)]
struct Registry {
    next: u64,
    entries: Vec<(u64, Entry)>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next: 0,
    entries: Vec::new(),
});

fn registry() -> MutexGuard<'static, Registry> {
    // A panic while the lock was held leaves the list itself intact: keep using it.
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Keeps an entry registered; dropping it unregisters the entry (the owner has undone it).
#[derive(Debug)]
#[must_use = "the entry is unregistered when this guard is dropped"]
pub struct Tracked(u64);

impl Drop for Tracked {
    fn drop(&mut self) {
        registry().entries.retain(|(id, _)| *id != self.0);
    }
}

fn track(entry: Entry) -> Tracked {
    let mut r = registry();
    r.next += 1;
    let id = r.next;
    r.entries.push((id, entry));
    Tracked(id)
}

/// Registers a file or directory to remove if the run is stopped.
pub fn track_path(path: &Path) -> Tracked {
    track(Entry::Path(path.to_path_buf()))
}

/// Registers a child process to stop if the run is stopped.
pub fn track_child(pid: u32) -> Tracked {
    track(Entry::Child(pid))
}

/// Undoes everything still registered: detaches mounts under registered directories, stops
/// child processes (SIGTERM, then SIGKILL after two seconds), detaches again what they mounted
/// meanwhile, removes files and directories (never through a mount: [`remove_tree`]), newest
/// first. Returns how many entries it undid. Holds the registry while it works, so
/// owners dropping their entries meanwhile wait until it is done.
pub fn remove_all() -> usize {
    let mut r = registry();
    let entries = std::mem::take(&mut r.entries);
    let (mut paths, mut children) = (Vec::new(), Vec::new());
    for (_, e) in entries.iter().rev() {
        match e {
            Entry::Path(p) => paths.push(p),
            Entry::Child(pid) => children.push(*pid),
        }
    }
    for p in &paths {
        detach_mounts_under(p);
    }
    stop_children(&children);
    // Once the children are gone no mount can appear any more: a server that was still
    // mounting when the first pass ran may have mounted since.
    for p in &paths {
        detach_mounts_under(p);
    }
    for p in &paths {
        remove_path(p);
    }
    entries.len()
}

/// SIGTERM to every child, SIGKILL to those still there after two seconds, then reaps them.
fn stop_children(pids: &[u32]) {
    use rustix::process::{kill_process, Pid, Signal};
    let pids: Vec<Pid> = pids
        .iter()
        .filter_map(|&p| Pid::from_raw(p as i32))
        .collect();
    for &pid in &pids {
        let _ = kill_process(pid, Signal::TERM);
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left: Vec<Pid> = pids;
    while !left.is_empty() && Instant::now() < deadline {
        left.retain(|&pid| !reaped(pid, true));
        std::thread::sleep(Duration::from_millis(10));
    }
    for &pid in &left {
        let _ = kill_process(pid, Signal::KILL);
        reaped(pid, false);
    }
}

/// Reaps `pid` if it has exited (waits for it unless `nohang`); true when it is gone.
fn reaped(pid: rustix::process::Pid, nohang: bool) -> bool {
    use rustix::process::{waitpid, WaitOptions};
    let opts = if nohang {
        WaitOptions::NOHANG
    } else {
        WaitOptions::empty()
    };
    match waitpid(Some(pid), opts) {
        Ok(None) => false,
        // Reaped now; or ECHILD: already reaped by its owner, or not our child.
        Ok(Some(_)) | Err(_) => true,
    }
}

/// Removes a file, or a directory and everything in it on its own file system; a missing one
/// is fine.
fn remove_path(p: &Path) {
    let r = match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => remove_tree(p),
        Ok(_) => std::fs::remove_file(p),
        Err(_) => return,
    };
    if let Err(e) = r {
        eprintln!("vecio: cannot remove {}: {e}", p.display());
    }
}

/// Removes the directory `dir` and everything under it, never crossing into a mount: a mount
/// point met on the way (a FUSE server's mount that appeared after the mounts were detached,
/// say) is detached, and if something is still mounted there it is left in place with its
/// parents, and the removal fails naming it. `std::fs::remove_dir_all` descends into mounts,
/// and would remove whatever a mount left in a scratch directory serves.
pub fn remove_tree(dir: &Path) -> io::Result<()> {
    let root = rustix::fs::open(dir, DIR, rustix::fs::Mode::empty())?;
    let dev = rustix::fs::fstat(&root)?.st_dev;
    let mut kept = Vec::new();
    empty_on(&root, dev, dir, &mut kept)?;
    if let Some(m) = kept.first() {
        return Err(io::Error::other(format!(
            "{} is a mount point still; left in place",
            m.display()
        )));
    }
    std::fs::remove_dir(dir)
}

/// How a directory is opened to be emptied: never through a symbolic link.
const DIR: rustix::fs::OFlags = rustix::fs::OFlags::RDONLY
    .union(rustix::fs::OFlags::DIRECTORY)
    .union(rustix::fs::OFlags::NOFOLLOW)
    .union(rustix::fs::OFlags::CLOEXEC);

/// Empties the directory `fd` (at `path`, on device `dev`) of everything on `dev`; what is
/// kept because a mount covers it goes to `kept`.
fn empty_on(
    fd: &std::os::fd::OwnedFd,
    dev: u64,
    path: &Path,
    kept: &mut Vec<PathBuf>,
) -> io::Result<()> {
    use rustix::fs::{AtFlags, FileType, Mode};
    use std::os::unix::ffi::OsStrExt;
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(fd)? {
        let name = entry?.file_name().to_owned();
        if name.as_bytes() != b"." && name.as_bytes() != b".." {
            names.push(name);
        }
    }
    for name in names {
        let at = path.join(std::ffi::OsStr::from_bytes(name.as_bytes()));
        let named =
            |e: rustix::io::Errno| io::Error::new(e.kind(), format!("{}: {e}", at.display()));
        let unlink = |flags| match rustix::fs::unlinkat(fd, name.as_c_str(), flags) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(named(e)),
        };
        let st = match rustix::fs::statat(fd, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(rustix::io::Errno::NOENT) => continue,
            // A dead FUSE mount answers ENOTCONN: a mount point, never entered.
            Err(_) => {
                let _ = rustix::mount::unmount(&at, rustix::mount::UnmountFlags::DETACH);
                kept.push(at);
                continue;
            }
        };
        if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
            // unlink(2) never crosses a mount (a mounted-over file fails with EBUSY).
            unlink(AtFlags::empty())?;
            continue;
        }
        if st.st_dev != dev {
            let _ = rustix::mount::unmount(&at, rustix::mount::UnmountFlags::DETACH);
        }
        let sub = match rustix::fs::openat(fd, name.as_c_str(), DIR, Mode::empty()) {
            Ok(sub) => sub,
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(named(e)),
        };
        // Looked at through the open descriptor: a mount that appeared after the stat is seen.
        if rustix::fs::fstat(&sub)?.st_dev != dev {
            kept.push(at);
            continue;
        }
        let before = kept.len();
        empty_on(&sub, dev, &at, kept)?;
        if kept.len() == before {
            unlink(AtFlags::REMOVEDIR)?;
        }
    }
    Ok(())
}

/// Mount points at or under `dir`, deepest first, from `/proc/self/mountinfo`.
pub fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut found: Vec<PathBuf> = vecio_host::system::parse_mountinfo(&info)
        .into_iter()
        .map(|m| m.mount_point)
        .filter(|m| m.starts_with(dir))
        .collect();
    found.sort_by_key(|m| std::cmp::Reverse(m.components().count()));
    found
}

/// Lazily unmounts every mount at or under `dir` (`umount2(MNT_DETACH)`).
pub fn detach_mounts_under(dir: &Path) {
    for m in mounts_under(dir) {
        if let Err(e) = rustix::mount::unmount(&m, rustix::mount::UnmountFlags::DETACH) {
            eprintln!("vecio: cannot unmount {}: {e}", m.display());
        }
    }
}

/// Makes a child started by `cmd` receive SIGKILL when the thread that started it exits
/// (`prctl(PR_SET_PDEATHSIG)`), so it never outlives the benchmark.
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: the closure runs in the child between fork and exec and only calls prctl(2),
    // which is async-signal-safe; it allocates nothing and touches no lock.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(io::Error::from)
        });
    }
}

/// A temporary directory named `vecio-KIND-PID-XXXXXX`, registered for removal if the run is
/// stopped and removed (mounts under it detached first) when dropped.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
    _tracked: Tracked,
}

impl ScratchDir {
    /// Creates `vecio-KIND-PID-XXXXXX` in `parent`, after removing the leftovers of runs
    /// whose process is gone ([`sweep_stale`]).
    pub fn new_in(kind: &str, parent: &Path) -> Result<ScratchDir> {
        sweep_stale(parent);
        let dir = tempfile::Builder::new()
            .prefix(&format!("vecio-{kind}-{}-", std::process::id()))
            .tempdir_in(parent)
            .with_context(|| {
                format!(
                    "cannot create a temporary directory in {}",
                    parent.display()
                )
            })?;
        let path = dir.keep();
        let tracked = track_path(&path);
        Ok(ScratchDir {
            path,
            _tracked: tracked,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        detach_mounts_under(&self.path);
        remove_path(&self.path);
    }
}

/// Removes, from `parent`, the `vecio-KIND-PID-*` directories of processes that no longer
/// run, detaching any mount left under them. Returns the directories removed.
pub fn sweep_stale(parent: &Path) -> Vec<PathBuf> {
    let Ok(list) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in list.flatten() {
        let name = entry.file_name();
        let Some(pid) = stale_owner(&name.to_string_lossy()) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let path = entry.path();
        let mine = std::fs::symlink_metadata(&path).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.uid() == rustix::process::geteuid().as_raw()
        });
        if !mine {
            continue;
        }
        detach_mounts_under(&path);
        if remove_tree(&path).is_ok() {
            eprintln!(
                "vecio: removed {} (left by an earlier run, process {pid})",
                path.display()
            );
            removed.push(path);
        }
    }
    removed
}

/// The kinds of directory vecio's benchmarks create; only these are ever swept.
pub const KINDS: [&str; 5] = ["scratch", "fuse", "callcost", "loop", "tree"];

/// The process id in a `vecio-KIND-PID-XXXXXX` name: KIND one of [`KINDS`], XXXXXX the six
/// letters and digits `tempfile` adds. Anything else is not vecio's and is never touched.
fn stale_owner(name: &str) -> Option<u32> {
    let mut parts = name.strip_prefix("vecio-")?.rsplitn(3, '-');
    let (random, pid, kind) = (parts.next()?, parts.next()?, parts.next()?);
    let random_ok = random.len() == 6 && random.chars().all(|c| c.is_ascii_alphanumeric());
    // Digits only (parse alone takes `+7`); an empty pid does not parse.
    let pid_ok = pid.chars().all(|c| c.is_ascii_digit());
    (random_ok && pid_ok && KINDS.contains(&kind)).then(|| pid.parse().ok())?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_owner() {
        assert_eq!(stale_owner("vecio-fuse-1234-AbC123"), Some(1234));
        assert_eq!(stale_owner("vecio-loop-7-x1y2z3"), Some(7));
        assert_eq!(stale_owner("vecio-scratch-77-x-y"), None);
        assert_eq!(stale_owner("vecio-fuse-AbC123"), None);
        assert_eq!(stale_owner("other-fuse-1-abcdef"), None);
        // A user's own directory that merely looks alike is never vecio's.
        assert_eq!(stale_owner("vecio-backup-2024-final"), None);
        assert_eq!(stale_owner("vecio-notes-12-abcdef"), None);
    }

    #[test]
    fn tracked_entries_leave_the_registry_when_dropped() {
        let t = track_path(Path::new("/nonexistent/vecio-test"));
        let id = t.0;
        assert!(registry().entries.iter().any(|(i, _)| *i == id));
        drop(t);
        assert!(!registry().entries.iter().any(|(i, _)| *i == id));
    }
}
