//! Other users: with `allow_other,default_permissions` the kernel checks modes; with
//! `allow_other` alone the server checks, acting as the caller; without `allow_other` other
//! users are refused. The other user is uid/gid 65534, run with `setpriv`.

use crate::common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Output;

use common::{as_nobody, Fixture};

fn text(o: &Output) -> String {
    format!(
        "status {:?}, stdout {:?}, stderr {:?}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn denied(o: &Output, what: &str) {
    assert!(!o.status.success(), "{what} succeeded: {}", text(o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("Permission denied"),
        "{what}: {}",
        text(o)
    );
}

fn p(fx: &Fixture, rel: &str) -> String {
    fx.m(rel).to_str().unwrap().to_string()
}

/// Files made by root through the mount: `secret` (0600), `public` (0644), `shared/` (0777).
fn populate(fx: &Fixture) {
    fs::write(fx.m("secret"), "root only\n").unwrap();
    fs::set_permissions(fx.m("secret"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::write(fx.m("public"), "everyone\n").unwrap();
    fs::set_permissions(fx.m("public"), fs::Permissions::from_mode(0o644)).unwrap();
    fs::create_dir(fx.m("shared")).unwrap();
    fs::set_permissions(fx.m("shared"), fs::Permissions::from_mode(0o777)).unwrap();
}

/// What uid 65534 may and may not do, the same whoever checks.
fn check_as_nobody(fx: &Fixture) {
    denied(
        &as_nobody(&["cat", &p(fx, "secret")]),
        "reading a 0600 file",
    );
    let o = as_nobody(&["cat", &p(fx, "public")]);
    assert!(o.status.success(), "reading a 0644 file: {}", text(&o));
    assert_eq!(o.stdout, b"everyone\n");
    denied(
        &as_nobody(&["sh", "-c", &format!("echo x >> '{}'", p(fx, "public"))]),
        "appending to a 0644 file",
    );
    assert_eq!(fs::read_to_string(fx.s("public")).unwrap(), "everyone\n");
    denied(
        &as_nobody(&["mkdir", &p(fx, "nope")]),
        "mkdir in a 0755 root directory",
    );
    assert!(!fx.s("nope").exists());

    let o = as_nobody(&[
        "sh",
        "-c",
        &format!(
            "echo mine > '{0}/mine' && mkdir '{0}/dir' && ln -s mine '{0}/sym'",
            p(fx, "shared")
        ),
    ]);
    assert!(
        o.status.success(),
        "creating in a 0777 directory: {}",
        text(&o)
    );
    for name in ["shared/mine", "shared/dir", "shared/sym"] {
        let m = fs::symlink_metadata(fx.s(name)).unwrap();
        assert_eq!((m.uid(), m.gid()), (65534, 65534), "owner of {name}");
    }
    assert_eq!(fs::read_to_string(fx.s("shared/mine")).unwrap(), "mine\n");
    // Root's file in the shared directory stays root's.
    fs::write(fx.m("shared/roots"), "r").unwrap();
    assert_eq!(fs::metadata(fx.s("shared/roots")).unwrap().uid(), 0);
}

#[test]
fn default_permissions_lets_the_kernel_check_modes() {
    let mut cfg = common::config();
    cfg.mount.allow_other = true;
    cfg.mount.default_permissions = true;
    let Some(fx) = common::mount("defperm", cfg) else {
        return;
    };
    populate(&fx);
    check_as_nobody(&fx);
    fx.finish();
}

#[test]
fn without_default_permissions_the_server_checks_as_the_caller() {
    let mut cfg = common::config();
    cfg.mount.allow_other = true;
    let Some(fx) = common::mount("callerperm", cfg) else {
        return;
    };
    populate(&fx);
    check_as_nobody(&fx);
    fx.finish();
}

#[test]
fn without_allow_other_other_users_are_refused() {
    let Some(fx) = common::mount("noallow", common::config()) else {
        return;
    };
    populate(&fx);
    denied(
        &as_nobody(&["cat", &p(&fx, "public")]),
        "reading without allow_other",
    );
    fx.finish();
}
