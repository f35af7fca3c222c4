//! The protocol features of libfuse 3.18 and kernel 6.14+ on this kernel: what `FUSE_INIT`
//! agrees, idmapped mounts (`FUSE_ALLOW_IDMAP`), the access-ACL setgid rule
//! (`FUSE_SETXATTR_EXT`), creates in a directory one may write through a supplementary group
//! (`FUSE_CREATE_SUPP_GROUP`), and creates carrying the security-context extension
//! (`FUSE_SECURITY_CTX`; this kernel's LSMs label nothing, so the extension is empty).

use crate::common;

use std::fs;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Command, Stdio};

use vecio_fuse::abi::InitFlags;

use common::as_nobody;

#[test]
fn init_agrees_on_the_features_this_kernel_offers() {
    let mut cfg = common::config();
    cfg.mount
        .parse_into("allow_other,default_permissions,timeout_s=30")
        .unwrap();
    let Some(fx) = common::mount("init-features", cfg) else {
        return;
    };
    fs::create_dir(fx.m("d")).unwrap();
    fs::write(fx.m("d/f"), "x").unwrap();
    std::os::unix::fs::symlink("f", fx.m("d/l")).unwrap();
    let summary = fx.finish();
    let n = summary.negotiated;
    for (flag, name) in [
        (InitFlags::SECURITY_CTX, "FUSE_SECURITY_CTX"),
        (InitFlags::CREATE_SUPP_GROUP, "FUSE_CREATE_SUPP_GROUP"),
        (InitFlags::SETXATTR_EXT, "FUSE_SETXATTR_EXT"),
        (InitFlags::ALLOW_IDMAP, "FUSE_ALLOW_IDMAP"),
        (InitFlags::REQUEST_TIMEOUT, "FUSE_REQUEST_TIMEOUT"),
        (InitFlags::EXPORT_SUPPORT, "FUSE_EXPORT_SUPPORT"),
    ] {
        assert!(n.has(flag), "{name} not agreed: {:?}", n.flags);
    }
    assert!(!n.has(InitFlags::NO_EXPORT_SUPPORT));
    assert_eq!(n.request_timeout, 30);
    // Without timeout_s or default_permissions, neither is asked for.
    let Some(fx) = common::mount("init-plain", common::config()) else {
        return;
    };
    fs::write(fx.m("f"), "x").unwrap();
    let n = fx.finish().negotiated;
    assert!(!n.has(InitFlags::REQUEST_TIMEOUT) && !n.has(InitFlags::ALLOW_IDMAP));
    assert_eq!(n.request_timeout, 0);
}

/// A user namespace mapping uid and gid 12345 inside to 0 outside, held by a sleeping child.
fn userns() -> (std::process::Child, OwnedFd) {
    let mut child = Command::new("unshare")
        .args(["--user", "sh", "-c", "read x"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("unshare");
    let pid = child.id();
    // The child's namespace exists once /proc shows it differs from ours.
    let ours = fs::read_link("/proc/self/ns/user").unwrap();
    for _ in 0..200 {
        if fs::read_link(format!("/proc/{pid}/ns/user")).is_ok_and(|l| l != ours) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    fs::write(format!("/proc/{pid}/setgroups"), "deny").unwrap();
    fs::write(format!("/proc/{pid}/uid_map"), "12345 0 1").unwrap();
    fs::write(format!("/proc/{pid}/gid_map"), "12345 0 1").unwrap();
    let ns = fs::File::open(format!("/proc/{pid}/ns/user")).unwrap();
    let _ = child.stdin.take();
    (child, ns.into())
}

/// An idmapped copy of the mount at `mnt`, attached at `at`.
fn idmapped(mnt: &std::path::Path, at: &std::path::Path, ns: &OwnedFd) -> std::io::Result<()> {
    use rustix::mount::{MoveMountFlags, OpenTreeFlags};
    let tree = rustix::mount::open_tree(
        rustix::fs::CWD,
        mnt,
        OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC,
    )?;
    #[repr(C)]
    struct MountAttr {
        set: u64,
        clr: u64,
        propagation: u64,
        userns: u64,
    }
    let attr = MountAttr {
        set: 0x0010_0000, // MOUNT_ATTR_IDMAP
        clr: 0,
        propagation: 0,
        userns: ns.as_raw_fd() as u64,
    };
    // SAFETY: mount_setattr reads one mount_attr of the given size from the pointer.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    rustix::mount::move_mount(
        tree.as_fd(),
        c"",
        rustix::fs::CWD,
        at,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )?;
    Ok(())
}

/// Through an idmapped mount of the FUSE mount (ids 12345 of the file system shown as 0), the
/// source's root, owned by 12345, is root's; root's new file belongs to 12345 in the source and
/// shows as root's through the idmapped mount.
#[test]
fn idmapped_mounts_map_owners() {
    let mut cfg = common::config();
    cfg.mount
        .parse_into("allow_other,default_permissions")
        .unwrap();
    let Some(fx) = common::mount("idmap", cfg) else {
        return;
    };
    let at = fx.base.join("idmapped");
    fs::create_dir(&at).unwrap();
    // The root belongs to 12345 in the source, so it is root's in the idmapped mount.
    std::os::unix::fs::chown(&fx.mnt, Some(12345), Some(12345)).unwrap();
    let (mut holder, ns) = userns();
    let made = idmapped(&fx.mnt, &at, &ns);
    let _ = holder.kill();
    let _ = holder.wait();
    made.expect("an idmapped mount of the FUSE mount (FUSE_ALLOW_IDMAP)");
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        fs::write(at.join("made"), "through the idmapped mount").unwrap();
        let src = fs::metadata(fx.s("made")).unwrap();
        assert_eq!(
            (src.uid(), src.gid()),
            (12345, 12345),
            "owner in the source"
        );
        let shown = fs::metadata(at.join("made")).unwrap();
        assert_eq!(
            (shown.uid(), shown.gid()),
            (0, 0),
            "owner through the idmapped mount"
        );
        fs::create_dir(at.join("dir")).unwrap();
        assert_eq!(fs::metadata(fx.s("dir")).unwrap().uid(), 12345);
    }));
    let _ = rustix::mount::unmount(&at, rustix::mount::UnmountFlags::DETACH);
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
}

/// A setgid file whose owner is not in its group: an access ACL set by the owner clears
/// setgid, as on the backing file system itself.
#[test]
fn an_access_acl_by_a_non_member_clears_setgid() {
    let mut cfg = common::config();
    cfg.mount
        .parse_into("allow_other,default_permissions")
        .unwrap();
    let Some(fx) = common::mount("acl-sgid", cfg) else {
        return;
    };
    for (dir, base) in [("native", fx.src.clone()), ("mounted", fx.mnt.clone())] {
        let f = base.join(format!("{dir}-file"));
        fs::write(&f, "x").unwrap();
        std::os::unix::fs::chown(&f, Some(65534), Some(12345)).unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o2775)).unwrap();
        let f = f.to_str().unwrap().to_string();
        let out = as_nobody(&["setfacl", "-m", "u:65534:rwx", &f]);
        assert!(out.status.success(), "{dir}: setfacl: {out:?}");
        let mode = fs::metadata(&f).unwrap().mode() & 0o7777;
        assert_eq!(mode & 0o2000, 0, "{dir}: setgid kept ({mode:o})");
    }
}

/// A directory only its group may write: a member (through a supplementary group) creates in
/// it, with or without `default_permissions`.
#[test]
fn a_supplementary_group_lets_a_member_create() {
    for opts in ["allow_other,default_permissions", "allow_other"] {
        let mut cfg = common::config();
        cfg.mount.parse_into(opts).unwrap();
        let Some(fx) = common::mount(&format!("suppgroup-{}", opts.len()), cfg) else {
            return;
        };
        fs::create_dir(fx.m("g")).unwrap();
        std::os::unix::fs::chown(fx.m("g"), Some(0), Some(12345)).unwrap();
        fs::set_permissions(fx.m("g"), fs::Permissions::from_mode(0o770)).unwrap();
        let path = fx.m("g");
        let made = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--groups=12345", "--"])
            .args([
                "sh",
                "-c",
                &format!("touch '{0}/f' && mkdir '{0}/d'", path.display()),
            ])
            .output()
            .unwrap();
        assert!(made.status.success(), "{opts}: {made:?}");
        let st = fs::metadata(fx.s("g/f")).unwrap();
        assert_eq!(st.uid(), 65534);
        let denied = as_nobody(&["touch", &format!("{}/no", path.display())]);
        assert!(
            !denied.status.success(),
            "{opts}: a non-member created in the directory"
        );
    }
}
