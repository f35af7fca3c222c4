//! File handles through the mount (`name_to_handle_at`, `open_by_handle_at`), as NFS re-export
//! and CRIU use them: a handle keeps working after the kernel dropped its dentries and inodes
//! (the server then finds the node again from its id: `LOOKUP` of `.`, and of `..` to reconnect
//! a directory), survives a rename, and goes stale (`ESTALE`) once the file is removed.

use crate::common;

use std::fs;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use common::{cpath, errno};

/// A `struct file_handle` with room for the largest handle.
#[repr(C)]
struct Handle {
    bytes: u32,
    kind: i32,
    f: [u8; 128],
}

fn handle_of(p: &Path) -> Handle {
    let mut h = Handle {
        bytes: 128,
        kind: 0,
        f: [0; 128],
    };
    let mut mount_id = 0;
    // SAFETY: `h` is a file_handle with 128 bytes of room after its header; the path is a
    // valid C string.
    let r = unsafe {
        libc::name_to_handle_at(
            libc::AT_FDCWD,
            cpath(p).as_ptr(),
            (&mut h as *mut Handle).cast(),
            &mut mount_id,
            0,
        )
    };
    assert_eq!(r, 0, "name_to_handle_at {}: errno {}", p.display(), errno());
    h
}

fn open_by_handle(mount: &fs::File, h: &mut Handle, flags: i32) -> Result<OwnedFd, i32> {
    // SAFETY: `h` is a complete file_handle; a non-negative return is a new descriptor.
    let fd =
        unsafe { libc::open_by_handle_at(mount.as_raw_fd(), (h as *mut Handle).cast(), flags) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: the call just opened it for us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Makes the kernel drop unused dentries and inodes (and so forget the mount's nodes).
fn drop_caches() {
    fs::write("/proc/sys/vm/drop_caches", "2").unwrap();
}

#[test]
fn handles_outlive_the_dentry_cache_and_go_stale_with_the_file() {
    let Some(fx) = common::mount("export", common::config()) else {
        return;
    };
    fs::create_dir_all(fx.m("a/b")).unwrap();
    fs::write(fx.m("a/b/f"), "by handle\n").unwrap();
    fs::write(fx.m("gone"), "soon removed\n").unwrap();
    let mut file = handle_of(&fx.m("a/b/f"));
    let mut dir = handle_of(&fx.m("a/b"));
    let mut gone = handle_of(&fx.m("gone"));
    let mount = fs::File::open(&fx.mnt).unwrap();
    drop_caches();

    let fd = open_by_handle(&mount, &mut file, libc::O_RDONLY).expect("file by handle");
    let mut text = String::new();
    fs::File::from(fd).read_to_string(&mut text).unwrap();
    assert_eq!(text, "by handle\n");

    // A directory comes back connected: its path is known again and names resolve in it.
    drop_caches();
    let d = open_by_handle(&mount, &mut dir, libc::O_RDONLY | libc::O_DIRECTORY)
        .expect("directory by handle");
    let link = fs::read_link(format!("/proc/self/fd/{}", d.as_raw_fd())).unwrap();
    assert_eq!(link, fx.m("a/b"));
    // SAFETY: fstatat of a name in a live directory descriptor into a zeroed stat.
    let st = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstatat(d.as_raw_fd(), c"f".as_ptr(), &mut st, 0) == 0).then_some(st)
    };
    assert!(st.is_some(), "fstatat in the directory: errno {}", errno());

    // A rename does not change a handle.
    fs::rename(fx.m("a/b/f"), fx.m("a/moved")).unwrap();
    drop_caches();
    let fd = open_by_handle(&mount, &mut file, libc::O_RDONLY).expect("renamed file");
    let mut text = String::new();
    fs::File::from(fd).read_to_string(&mut text).unwrap();
    assert_eq!(text, "by handle\n");

    // A removed file's handle is stale once the kernel lets go of the inode. The `RELEASE` of
    // its last open goes in the background and holds the kernel's inode until answered, and
    // until then the kernel opens the cached inode itself, as ext4 opens a removed file still
    // held: so the handle is tried again after each cache drop, for up to 5 s (it failed
    // once under CI's load when tried once).
    fs::remove_file(fx.m("gone")).unwrap();
    let mut last = None;
    for _ in 0..100 {
        drop_caches();
        last = open_by_handle(&mount, &mut gone, libc::O_RDONLY).err();
        if last.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(last, Some(libc::ESTALE));
}
