//! Acting as the caller exactly: supplementary groups per request, none of the server's own, and
//! kill-priv (setuid/setgid cleared on a write or truncate by another user, as natively). Each
//! case runs with `-o allow_other,default_permissions` (the kernel checks modes first) and with
//! `-o allow_other` alone (only the backing file system, under the caller's credentials, checks).

use crate::common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Command, Output};

use common::{as_nobody, Fixture};

/// Runs `args` as uid/gid 65534 with supplementary group 65533 only.
fn as_nobody_in_65533(args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--groups=65533", "--"])
        .args(args)
        .output()
        .expect("running setpriv")
}

fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: status {:?}, stderr {:?}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn fails(o: &Output, what: &str) {
    assert!(
        !o.status.success(),
        "{what} succeeded, stdout {:?}",
        String::from_utf8_lossy(&o.stdout)
    );
}

fn configs() -> Vec<(&'static str, vecio_fuse::Config)> {
    let mut both = Vec::new();
    for (name, opts) in [
        ("kernel-checks", "allow_other,default_permissions"),
        ("server-checks", "allow_other"),
    ] {
        let mut cfg = common::config();
        cfg.mount.parse_into(opts).unwrap();
        both.push((name, cfg));
    }
    both
}

fn p(fx: &Fixture, rel: &str) -> String {
    fx.m(rel).to_str().unwrap().to_string()
}

#[test]
fn a_supplementary_group_grants_what_it_grants_natively() {
    for (name, cfg) in configs() {
        let Some(fx) = common::mount(&format!("groups-{name}"), cfg) else {
            return;
        };
        fs::create_dir(fx.m("g")).unwrap();
        fs::write(fx.m("g/file"), "group data\n").unwrap();
        std::os::unix::fs::chown(fx.m("g"), Some(0), Some(65533)).unwrap();
        std::os::unix::fs::chown(fx.m("g/file"), Some(0), Some(65533)).unwrap();
        fs::set_permissions(fx.m("g"), fs::Permissions::from_mode(0o770)).unwrap();
        fs::set_permissions(fx.m("g/file"), fs::Permissions::from_mode(0o660)).unwrap();

        ok(
            &as_nobody_in_65533(&["ls", &p(&fx, "g")]),
            "listing through group 65533",
        );
        let o = as_nobody_in_65533(&["cat", &p(&fx, "g/file")]);
        ok(&o, "reading through group 65533");
        assert_eq!(o.stdout, b"group data\n");
        ok(
            &as_nobody_in_65533(&["touch", &p(&fx, "g/made-by-member")]),
            "creating through group 65533",
        );
        assert_eq!(fs::metadata(fx.s("g/made-by-member")).unwrap().uid(), 65534);
        // Without the group: refused, whoever checks.
        fails(
            &as_nobody(&["ls", &p(&fx, "g")]),
            "listing without the group",
        );
        fails(
            &as_nobody(&["cat", &p(&fx, "g/file")]),
            "reading without the group",
        );

        // chown to a group one is a member of (pjdfstest chown/00.t): allowed; to another: not.
        fs::create_dir(fx.m("open")).unwrap();
        fs::set_permissions(fx.m("open"), fs::Permissions::from_mode(0o777)).unwrap();
        ok(
            &as_nobody_in_65533(&["touch", &p(&fx, "open/mine")]),
            "touch",
        );
        ok(
            &as_nobody_in_65533(&["chgrp", "65533", &p(&fx, "open/mine")]),
            "chgrp to a member group",
        );
        assert_eq!(fs::metadata(fx.s("open/mine")).unwrap().gid(), 65533);
        fails(
            &as_nobody_in_65533(&["chgrp", "0", &p(&fx, "open/mine")]),
            "chgrp to a group one is not in",
        );
        drop(fx);
    }
}

/// The escalation: a server whose process has supplementary group 0 must not lend it to a
/// caller. Natively user nobody cannot read a root:root 0640 file in a root:root 0770 directory.
#[test]
fn the_servers_own_groups_are_never_lent() {
    // The test process (the server's) must hold group 0 as a supplementary group, as root's
    // processes usually do. It is not set in this process: a process-wide setgroups would stop
    // every thread of this test binary, including ones waiting on another test's mount. Where
    // the process lacks it (a CI runner's root often has no supplementary groups), this test
    // runs again alone in a child of this binary that holds it (`setpriv --groups=0`).
    let groups = rustix::process::getgroups().unwrap();
    if !groups.iter().any(|g| g.as_raw() == 0) {
        run_again_with_group_0(&groups);
        return;
    }
    for (name, cfg) in configs() {
        let Some(fx) = common::mount(&format!("escalation-{name}"), cfg) else {
            return;
        };
        fs::create_dir(fx.m("d")).unwrap();
        fs::write(fx.m("d/secret"), "root's\n").unwrap();
        fs::set_permissions(fx.m("d"), fs::Permissions::from_mode(0o770)).unwrap();
        fs::set_permissions(fx.m("d/secret"), fs::Permissions::from_mode(0o640)).unwrap();
        fails(
            &as_nobody(&["cat", &p(&fx, "d/secret")]),
            "nobody reading root's 0640 file",
        );
        fails(
            &as_nobody(&["ls", &p(&fx, "d")]),
            "nobody listing root's 0770 directory",
        );
        fails(
            &as_nobody(&["touch", &p(&fx, "d/new")]),
            "nobody creating in it",
        );
        assert!(!fx.s("d/new").exists());
    }
}

/// Set in the child that runs `the_servers_own_groups_are_never_lent` with group 0.
const WITH_GROUP_0: &str = "VECIO_TEST_WITH_GROUP_0";

/// Runs `the_servers_own_groups_are_never_lent` alone in a child of this test binary whose
/// supplementary groups are `0` (root may set them), and fails if it fails or does not run.
fn run_again_with_group_0(groups: &[rustix::process::Gid]) {
    assert!(
        std::env::var_os(WITH_GROUP_0).is_none(),
        "setpriv --groups=0 gave the child the groups {groups:?}"
    );
    if !rustix::process::geteuid().is_root() {
        eprintln!(
            "skipping: no supplementary group 0 to lend ({groups:?}), and not root to take it"
        );
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let name = "credentials::the_servers_own_groups_are_never_lent";
    let out = Command::new("setpriv")
        .arg("--groups=0")
        .arg(&exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(WITH_GROUP_0, "1")
        .output()
        .expect("running setpriv");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "with group 0: {said}");
    assert!(
        said.contains("1 passed"),
        "with group 0, it did not run: {said}"
    );
    assert!(!said.contains("skipping"), "with group 0: {said}");
}

/// A write, truncate or fallocate by someone without `CAP_FSETID` clears setuid, and setgid
/// when the group may execute or the writer is not in the file's group; setgid without
/// group-execute stays for a member of the group (natively the same, and the write succeeds
/// instead of failing with `EPERM`).
#[test]
fn writes_by_another_user_clear_setuid_and_setgid() {
    // With passthrough the kernel writes to the backing file itself, as the server: no WRITE
    // reaches the server to mark, so the kernel must clear the bits through SETATTR instead.
    let mut passthrough = common::config();
    passthrough
        .mount
        .parse_into("allow_other,default_permissions")
        .unwrap();
    passthrough.fs.passthrough = true;
    let mut all = configs();
    all.push(("passthrough", passthrough));
    for (name, mut cfg) in all {
        cfg.fs.timeouts.attr = std::time::Duration::from_secs(60);
        let Some(fx) = common::mount(&format!("killpriv-{name}"), cfg) else {
            return;
        };
        for (file, mode, after) in [
            ("suid", 0o4777, 0o777),
            ("sgid", 0o2777, 0o777),
            ("both", 0o6777, 0o777),
            // Root's group, which nobody is not in (before 2026-11-28 vecio kept it: 2767).
            ("sgid-no-gx", 0o2767, 0o767),
            ("sgid-no-gx-own-group", 0o2767, 0o2767),
            ("both-no-gx-own-group", 0o6767, 0o2767),
        ] {
            fs::write(fx.m(file), "x").unwrap();
            if file.ends_with("own-group") {
                std::os::unix::fs::chown(fx.m(file), None, Some(65534)).unwrap();
            }
            fs::set_permissions(fx.m(file), fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(fs::metadata(fx.s(file)).unwrap().mode() & 0o7777, mode);
            ok(
                &as_nobody(&["sh", "-c", &format!("echo more >> '{}'", p(&fx, file))]),
                &format!("nobody writing {file}"),
            );
            // Under passthrough the kernel's own SETATTR clears setgid only with group
            // execute (its rule for servers without kill-priv v2, whatever the writer's
            // groups): the one case where it differs, and no request reaches vecio to mend it.
            let after = if name == "passthrough" && file == "sgid-no-gx" {
                0o2767
            } else {
                after
            };
            assert_eq!(
                fs::metadata(fx.s(file)).unwrap().mode() & 0o7777,
                after,
                "{file} after a write by nobody ({name})"
            );
            // The mount shows it at once, though the kernel may cache attributes for a minute:
            // the server tells it the attributes changed (FUSE_NOTIFY_INVAL_INODE). `stat -c
            // %a` asks for the mode alone (statx), which the write itself does not invalidate.
            let shown = common::sh(&format!("stat -c %a '{}'", p(&fx, file)));
            assert_eq!(
                String::from_utf8_lossy(&shown.stdout).trim(),
                format!("{after:o}"),
                "{file} through the mount after a write by nobody ({name})"
            );
        }
        fs::write(fx.m("cut"), "0123456789").unwrap();
        fs::set_permissions(fx.m("cut"), fs::Permissions::from_mode(0o6777)).unwrap();
        ok(
            &as_nobody(&["truncate", "-s", "3", &p(&fx, "cut")]),
            "nobody truncating",
        );
        let md = fs::metadata(fx.s("cut")).unwrap();
        assert_eq!((md.len(), md.mode() & 0o7777), (3, 0o777));
        // fallocate too (xfstests' generic/683-685), though the kernel marks no FALLOCATE and,
        // with default_permissions (FUSE_ALLOW_IDMAP), names no caller's ids in it.
        for (file, mode) in [
            ("falloc", None),
            ("punch", Some("--punch-hole")),
            ("zero", Some("--zero-range")),
        ] {
            fs::write(fx.m(file), vec![7u8; 16384]).unwrap();
            fs::set_permissions(fx.m(file), fs::Permissions::from_mode(0o6777)).unwrap();
            let path = p(&fx, file);
            let mut args = vec!["fallocate", "-o", "0", "-l", "8192"];
            args.extend(mode);
            args.push(&path);
            ok(&as_nobody(&args), &format!("nobody's fallocate of {file}"));
            assert_eq!(
                fs::metadata(fx.s(file)).unwrap().mode() & 0o7777,
                0o777,
                "{file} after a fallocate by nobody ({name})"
            );
        }
        // Root keeps the bits (it has CAP_FSETID), as natively.
        fs::write(fx.m("roots"), "x").unwrap();
        fs::set_permissions(fx.m("roots"), fs::Permissions::from_mode(0o4755)).unwrap();
        fs::OpenOptions::new()
            .append(true)
            .open(fx.m("roots"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"y"))
            .unwrap();
        common::sh(&format!("fallocate -l 65536 '{}'", p(&fx, "roots")));
        assert_eq!(fs::metadata(fx.s("roots")).unwrap().mode() & 0o7777, 0o4755);
    }
}

/// New files get the caller's umask applied by the backing file system, which ignores it
/// where the parent directory has a default ACL (the kernel is told not to mask:
/// `FUSE_DONT_MASK`).
#[test]
fn umask_applies_as_natively() {
    let Some(fx) = common::mount("umask", common::config()) else {
        return;
    };
    common::sh(&format!(
        "umask 027; touch '{0}/f'; mkdir '{0}/d'",
        fx.mnt.display()
    ));
    assert_eq!(fs::metadata(fx.s("f")).unwrap().mode() & 0o777, 0o640);
    assert_eq!(fs::metadata(fx.s("d")).unwrap().mode() & 0o777, 0o750);
}
