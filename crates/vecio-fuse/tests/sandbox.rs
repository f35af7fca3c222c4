//! The sandbox, on by default: the serving threads live in their own mount, network, IPC and UTS
//! namespaces, with the source as their root, no capability beyond those they serve with, and
//! `no_new_privs`; `Sandbox::None` leaves them as they are. A file handle forged from the
//! mount's own (any node id) opens nothing outside the source. (The symlink-swap race of
//! `confinement.rs` runs under the sandbox too, as every test here does by default.)

mod common;

use std::collections::HashSet;
use std::fs;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use common::{cpath, errno};

/// The task directories of this process's threads named `vecio-fuse-N` (the workers).
fn workers() -> Vec<PathBuf> {
    fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|t| {
            fs::read_to_string(t.join("comm"))
                .is_ok_and(|c| c.trim().starts_with("vecio-fuse-") && !c.contains("ring"))
        })
        .collect()
}

fn status_field(task: &Path, key: &str) -> String {
    fs::read_to_string(task.join("status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
        .unwrap_or_default()
}

fn caps(task: &Path, key: &str) -> u64 {
    u64::from_str_radix(&status_field(task, key), 16).unwrap()
}

/// One test, so that no other mount's workers run beside the ones looked at.
#[test]
fn the_sandbox() {
    serving_threads_are_confined_and_none_leaves_them_be();
    a_forged_file_handle_opens_nothing_outside_the_source();
}

fn serving_threads_are_confined_and_none_leaves_them_be() {
    for sandbox in [vecio_fuse::Sandbox::Namespace, vecio_fuse::Sandbox::None] {
        let mut cfg = common::config();
        cfg.sandbox = sandbox;
        let Some(fx) = common::mount(&format!("sandbox-{sandbox:?}"), cfg) else {
            return;
        };
        fs::write(fx.m("f"), "served").unwrap();
        let tasks = workers();
        assert!(!tasks.is_empty(), "no worker threads found");
        let confined = sandbox == vecio_fuse::Sandbox::Namespace;
        for task in &tasks {
            for ns in ["mnt", "net", "ipc", "uts"] {
                let theirs = fs::read_link(task.join("ns").join(ns)).unwrap();
                let ours = fs::read_link(format!("/proc/thread-self/ns/{ns}")).unwrap();
                assert_eq!(
                    theirs != ours,
                    confined,
                    "{sandbox:?}: {ns} namespace of {task:?}"
                );
            }
            assert_eq!(
                status_field(task, "NoNewPrivs:"),
                if confined { "1" } else { "0" }
            );
            // A seccomp filter (mode 2) on every serving thread, the default's (kill).
            assert_eq!(
                status_field(task, "Seccomp:"),
                if confined { "2" } else { "0" },
                "{sandbox:?}: seccomp of {task:?}"
            );
            let (eff, bnd) = (caps(task, "CapEff:"), caps(task, "CapBnd:"));
            for (cap, name) in [
                (19, "CAP_SYS_PTRACE"),
                (5, "CAP_KILL"),
                (16, "CAP_SYS_MODULE"),
            ] {
                assert_eq!(
                    eff & (1 << cap) == 0,
                    confined,
                    "{sandbox:?}: {name} effective"
                );
                assert_eq!(
                    bnd & (1 << cap) == 0,
                    confined,
                    "{sandbox:?}: {name} bounding"
                );
            }
            assert_ne!(
                eff & (1 << 21),
                0,
                "CAP_SYS_ADMIN is kept (passthrough, trusted.*)"
            );
            // The thread's root is the source itself.
            let root = fs::metadata(task.join("root")).unwrap();
            let src = fs::metadata(&fx.src).unwrap();
            assert_eq!(
                (root.dev(), root.ino()) == (src.dev(), src.ino()),
                confined,
                "{sandbox:?}: root of {task:?}"
            );
        }
        assert_eq!(fs::read_to_string(fx.s("f")).unwrap(), "served");
        fx.finish();
    }
}

/// A `struct file_handle` with room for the largest handle.
#[repr(C)]
struct Handle {
    bytes: u32,
    kind: i32,
    f: [u8; 128],
}

fn a_forged_file_handle_opens_nothing_outside_the_source() {
    let Some(d) = common::dirs("forged-handle") else {
        return;
    };
    let outside = d.base.join("outside");
    fs::write(&outside, "secret").unwrap();
    let fx = d.mount(common::config());
    fs::create_dir(fx.m("d")).unwrap();
    for i in 0..20 {
        fs::write(fx.m(&format!("d/f{i}")), "inside").unwrap();
    }
    let mut h = Handle {
        bytes: 128,
        kind: 0,
        f: [0; 128],
    };
    let mut mount_id = 0;
    // SAFETY: a file_handle with 128 bytes of room; a valid C path.
    let r = unsafe {
        libc::name_to_handle_at(
            libc::AT_FDCWD,
            cpath(&fx.m("d/f0")).as_ptr(),
            (&mut h as *mut Handle).cast(),
            &mut mount_id,
            0,
        )
    };
    assert_eq!(r, 0, "name_to_handle_at: errno {}", errno());
    let inside: HashSet<u64> = walk(&fx.src);
    let secret = fs::metadata(&outside).unwrap();
    let mount = fs::File::open(&fx.mnt).unwrap();
    let mut opened = 0;
    // Node ids are the first 8 bytes of the kernel's handle (high word first), the generation
    // the next 4: try every small id and some large ones, with generation 0.
    for id in (0u64..400).chain([1 << 20, 1 << 32, u64::MAX - 1]) {
        h.f[..4].copy_from_slice(&((id >> 32) as u32).to_ne_bytes());
        h.f[4..8].copy_from_slice(&(id as u32).to_ne_bytes());
        // SAFETY: `h` is a complete file_handle; a non-negative return is a new descriptor.
        let fd = unsafe {
            libc::open_by_handle_at(
                mount.as_raw_fd(),
                (&mut h as *mut Handle).cast(),
                libc::O_PATH,
            )
        };
        if fd < 0 {
            continue;
        }
        // SAFETY: the call just opened it for us.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // The mount shows the backing inode numbers: each one opened is the source's.
        let st = fs::metadata(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
        assert_ne!(
            st.ino(),
            secret.ino(),
            "node {id} opened the file outside the source"
        );
        assert!(
            inside.contains(&st.ino()),
            "node {id} opened inode {}",
            st.ino()
        );
        opened += 1;
    }
    assert!(opened > 0, "no forged id named a node of the mount");
}

/// The inode numbers of everything under `dir`.
fn walk(dir: &Path) -> HashSet<u64> {
    let mut seen = HashSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let m = fs::symlink_metadata(&d).unwrap();
        seen.insert(m.ino());
        if m.is_dir() {
            todo.extend(fs::read_dir(&d).unwrap().map(|e| e.unwrap().path()));
        }
    }
    seen
}
