//! What users of libfuse's passthrough_hp and virtiofsd expect: birth time through `statx`,
//! POSIX ACLs enforced by the kernel with `default_permissions`, and `-o writeback_cache`.

use crate::common;

use std::fs;
use std::io::Write;
use std::os::unix::fs::{FileExt, PermissionsExt};

use common::{as_nobody, sh};

#[test]
fn statx_gives_the_birth_time() {
    let Some(fx) = common::mount("statx", common::config()) else {
        return;
    };
    fs::write(fx.m("f"), "x").unwrap();
    let through = fs::metadata(fx.m("f")).unwrap().created();
    let native = fs::metadata(fx.s("f")).unwrap().created();
    match native {
        Ok(native) => assert_eq!(through.unwrap(), native),
        Err(e) => eprintln!("the backing file system has no birth time ({e}): nothing to compare"),
    }
}

#[test]
fn acls_are_enforced_with_default_permissions() {
    let mut cfg = common::config();
    cfg.mount
        .parse_into("allow_other,default_permissions")
        .unwrap();
    let Some(fx) = common::mount("acl", cfg) else {
        return;
    };
    fs::write(fx.m("f"), "acl data\n").unwrap();
    fs::set_permissions(fx.m("f"), fs::Permissions::from_mode(0o600)).unwrap();
    let f = fx.m("f").to_str().unwrap().to_string();
    assert!(
        !as_nobody(&["cat", &f]).status.success(),
        "0600 before the ACL"
    );
    let set = std::process::Command::new("setfacl")
        .args(["-m", "u:65534:r", &f])
        .output()
        .unwrap();
    if !set.status.success() {
        eprintln!(
            "skipping: setfacl through the mount: {}",
            String::from_utf8_lossy(&set.stderr)
        );
        return;
    }
    let o = as_nobody(&["cat", &f]);
    assert!(o.status.success(), "read granted by the ACL: {o:?}");
    assert_eq!(o.stdout, b"acl data\n");
    // The ACL lives on the backing file.
    let get = sh(&format!("getfacl -cnp '{}'", fx.s("f").display()));
    assert!(String::from_utf8_lossy(&get.stdout).contains("user:65534:r--"));
    // A default ACL on a directory is inherited by new files (and the umask is then not applied).
    fs::create_dir(fx.m("d")).unwrap();
    sh(&format!(
        "setfacl -d -m u:65534:rw '{}'",
        fx.m("d").display()
    ));
    sh(&format!("umask 077; touch '{}'", fx.m("d/new").display()));
    let get = sh(&format!("getfacl -cnp '{}'", fx.s("d/new").display()));
    assert!(
        String::from_utf8_lossy(&get.stdout).contains("user:65534:rw-"),
        "{get:?}"
    );
}

/// `-o noacl`: the kernel leaves POSIX ACLs alone (no `FUSE_POSIX_ACL`) and checks the mode
/// bits alone, as on a file system mounted `noacl`.
#[test]
fn noacl_leaves_permissions_to_the_mode_bits() {
    let mut cfg = common::config();
    cfg.mount
        .parse_into("allow_other,default_permissions,noacl")
        .unwrap();
    let Some(fx) = common::mount("noacl", cfg) else {
        return;
    };
    fs::write(fx.m("f"), "acl data\n").unwrap();
    fs::set_permissions(fx.m("f"), fs::Permissions::from_mode(0o600)).unwrap();
    let src = fx.s("f").to_str().unwrap().to_string();
    let set = std::process::Command::new("setfacl")
        .args(["-m", "u:65534:r", &src])
        .output()
        .unwrap();
    if !set.status.success() {
        eprintln!(
            "skipping: setfacl on the source: {}",
            String::from_utf8_lossy(&set.stderr)
        );
        return;
    }
    let f = fx.m("f").to_str().unwrap().to_string();
    assert!(
        !as_nobody(&["cat", &f]).status.success(),
        "under noacl the kernel sees the mode bits alone, where nobody is other (---)"
    );
    let s = fx.finish();
    assert!(!s.negotiated.has(vecio_fuse::abi::InitFlags::POSIX_ACL));
}

#[test]
fn writeback_cache_keeps_write_only_partial_writes_exact() {
    let mut cfg = common::config();
    cfg.mount.parse_into("writeback_cache").unwrap();
    let Some(fx) = common::mount("writeback", cfg) else {
        return;
    };
    let data = common::pattern(5, 3 * 4096 + 100);
    fs::write(fx.m("f"), &data).unwrap();
    // A write-only open patching the middle of pages: the kernel reads the rest of each page.
    let f = fs::OpenOptions::new().write(true).open(fx.m("f")).unwrap();
    f.write_all_at(b"PATCH", 4000).unwrap();
    f.write_all_at(b"END", (data.len() + 10) as u64).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let mut want = data.clone();
    want[4000..4005].copy_from_slice(b"PATCH");
    want.resize(data.len() + 10, 0);
    want.extend_from_slice(b"END");
    assert!(fs::read(fx.s("f")).unwrap() == want);
    let mut a = fs::OpenOptions::new().append(true).open(fx.m("f")).unwrap();
    a.write_all(b"+appended").unwrap();
    drop(a);
    assert!(fs::read(fx.m("f")).unwrap().ends_with(b"END+appended"));
}

/// `l*xattr` on a symlink acts on the link itself, as on ext4: `trusted.*` is set, read,
/// listed and removed on the link and never on its target; `user.*` is refused by the kernel
/// (`EPERM`, for files and directories only). Before, every call failed with `EOPNOTSUPP`.
#[test]
fn xattrs_of_a_symlink_are_its_own() {
    use common::{cpath, errno};
    let Some(fx) = common::mount("symlink-xattr", common::config()) else {
        return;
    };
    fs::write(fx.m("target"), "t").unwrap();
    std::os::unix::fs::symlink("target", fx.m("link")).unwrap();
    let link = cpath(&fx.m("link"));
    let set = |name: &std::ffi::CStr, value: &[u8]| {
        // SAFETY: valid C strings and a value buffer of the given length.
        let r = unsafe {
            libc::lsetxattr(
                link.as_ptr(),
                name.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(errno())
        }
    };
    set(c"trusted.vecio", b"on the link").expect("lsetxattr trusted.* on a symlink");
    assert_eq!(set(c"user.vecio", b"x"), Err(libc::EPERM));
    let mut buf = [0u8; 64];
    // SAFETY: valid C strings and a buffer of the given length.
    let n = unsafe {
        libc::lgetxattr(
            link.as_ptr(),
            c"trusted.vecio".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    assert_eq!(
        &buf[..n.max(0) as usize],
        b"on the link",
        "errno {}",
        errno()
    );
    let list = |p: &std::path::Path| {
        let out = sh(&format!(
            "getfattr -h -m - --absolute-names '{}'",
            p.display()
        ));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert!(list(&fx.m("link")).contains("trusted.vecio"));
    assert!(
        list(&fx.s("link")).contains("trusted.vecio"),
        "on the backing link"
    );
    assert!(
        !list(&fx.s("target")).contains("trusted.vecio"),
        "not on the target"
    );
    // SAFETY: valid C strings.
    let r = unsafe { libc::lremovexattr(link.as_ptr(), c"trusted.vecio".as_ptr()) };
    assert_eq!(r, 0, "lremovexattr: errno {}", errno());
    assert!(!list(&fx.s("link")).contains("trusted.vecio"));
}
