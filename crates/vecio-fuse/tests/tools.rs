//! The shell tools people point at a mount: `cp -a`, `tar c | tar x`, `find`, and `rsync` when
//! installed, each tree compared with `diff -r` and a `find -printf` listing of names, types,
//! modes, owners, sizes, link counts, link targets and modification times.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::{pattern, sh};

/// A tree with what copies get wrong: empty and odd-sized files, page and block edges, a
/// sparse file, nested directories, relative and dangling symlinks, hard links, modes,
/// owners, an xattr and old timestamps.
fn sample_tree(root: &Path) {
    fs::create_dir_all(root.join("a/b/c")).unwrap();
    fs::create_dir(root.join("empty-dir")).unwrap();
    for (i, size) in [0usize, 1, 511, 4095, 4096, 4097, 100_000, (1 << 20) + 7]
        .into_iter()
        .enumerate()
    {
        fs::write(root.join(format!("a/f{size}")), pattern(i as u64, size)).unwrap();
    }
    fs::write(root.join("a/b/c/deep"), "deep\n").unwrap();
    fs::write(root.join("exec.sh"), "#!/bin/sh\necho hi\n").unwrap();
    fs::set_permissions(root.join("exec.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(root.join("private"), "secret").unwrap();
    fs::set_permissions(root.join("private"), fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink("a/b/c/deep", root.join("link")).unwrap();
    std::os::unix::fs::symlink("nowhere", root.join("dangling")).unwrap();
    fs::hard_link(root.join("a/f4096"), root.join("hard")).unwrap();
    std::os::unix::fs::chown(root.join("a/f1"), Some(1234), Some(4321)).unwrap();
    let f = fs::File::create(root.join("sparse")).unwrap();
    f.set_len(8 << 20).unwrap();
    drop(f);
    let f1 = common::cpath(&root.join("a/f1"));
    // SAFETY: valid C strings and a one-byte value, live for the call.
    let r = unsafe {
        libc::setxattr(
            f1.as_ptr(),
            c"user.tag".as_ptr(),
            b"v".as_ptr().cast(),
            1,
            0,
        )
    };
    assert_eq!(r, 0, "setxattr: errno {}", common::errno());
    sh(&format!(
        "printf tail >> '{0}/sparse' && touch -h -d '2001-02-03 04:05:06.789' '{0}/a/f511' '{0}/link'",
        root.display()
    ));
}

fn xattr(p: &Path) -> Vec<u8> {
    let mut buf = [0u8; 64];
    // SAFETY: valid C strings and a 64-byte buffer, live for the call.
    let n = unsafe {
        libc::getxattr(
            common::cpath(p).as_ptr(),
            c"user.tag".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    buf[..n.max(0) as usize].to_vec()
}

/// Names, types, modes, owners, sizes, link counts, link targets and mtimes of a tree.
fn listing(root: &Path) -> String {
    let out = sh(&format!(
        "cd '{}' && find . -printf '%P|%y|%m|%U|%G|%s|%n|%l|%T@\\n' | LC_ALL=C sort",
        root.display()
    ));
    // Directory sizes differ between file systems (and are meaningless): leave them out.
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            if f[1] == "d" {
                format!("{}|d|{}|{}|{}|{}", f[0], f[2], f[3], f[4], f[8])
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn same_tree(a: &Path, b: &Path) {
    sh(&format!(
        "diff -r --no-dereference '{}' '{}'",
        a.display(),
        b.display()
    ));
    let (la, lb) = (listing(a), listing(b));
    assert!(
        la == lb,
        "{} and {} differ:\n{la}\n---\n{lb}",
        a.display(),
        b.display()
    );
}

#[test]
fn cp_tar_find_and_rsync_round_trip() {
    let Some(fx) = common::mount("tools", common::config()) else {
        return;
    };
    let sample = fx.base.join("sample");
    sample_tree(&sample);

    // Into the mount with cp -a, checked through the mount and in the source.
    sh(&format!(
        "cp -a '{}' '{}'",
        sample.display(),
        fx.m("cp").display()
    ));
    same_tree(&sample, &fx.m("cp"));
    same_tree(&sample, &fx.s("cp"));
    assert_eq!(xattr(&fx.s("cp/a/f1")), b"v", "cp -a lost the xattr");

    // tar from the mount to a plain directory, and from a plain directory into the mount.
    fs::create_dir(fx.base.join("untar")).unwrap();
    sh(&format!(
        "tar -C '{}' --format=posix -cf - . | tar -C '{}' -xpf -",
        fx.m("cp").display(),
        fx.base.join("untar").display()
    ));
    same_tree(&sample, &fx.base.join("untar"));
    fs::create_dir(fx.m("tar")).unwrap();
    sh(&format!(
        "tar -C '{}' --format=posix -cSf - . | tar -C '{}' -xpf -",
        sample.display(),
        fx.m("tar").display()
    ));
    same_tree(&sample, &fx.s("tar"));

    // find with tests and actions, through the mount and natively.
    let find = |root: &Path| {
        let o = sh(&format!(
            "cd '{}' && find . -type f -size +4k -name 'f*' -newer a/f511 | LC_ALL=C sort",
            root.display()
        ));
        String::from_utf8(o.stdout).unwrap()
    };
    let found = find(&fx.m("cp"));
    assert_eq!(found, find(&sample));
    assert!(found.contains("./a/f100000") && !found.contains("f4095"));

    if Command::new("rsync").arg("--version").output().is_ok() {
        // --modify-window=-1: times compared to the nanosecond, as `listing` compares them;
        // by default rsync takes times in the same second as equal and leaves them unset (a
        // directory then keeps the time it was filled at, natively too).
        sh(&format!(
            "rsync -aHX --modify-window=-1 '{}/' '{}/'",
            sample.display(),
            fx.m("rsync").display()
        ));
        same_tree(&sample, &fx.s("rsync"));
        // A second run finds nothing to send.
        let o = sh(&format!(
            "rsync -aHXi --modify-window=-1 '{}/' '{}/'",
            sample.display(),
            fx.m("rsync").display()
        ));
        assert!(
            o.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
    } else {
        eprintln!("rsync is not installed (scripts/setup installs it): the rsync round trip was not tested");
    }
    fx.finish();
}

/// `find` stats every file, so the server holds a descriptor for each: with the soft limit on
/// open files at the common 1024, a tree of 3000 files must still be served (the server lifts
/// its soft limit to the hard one).
#[test]
fn find_over_more_files_than_the_soft_fd_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let Some(d) = common::dirs("fdlimit") else {
        return;
    };
    let lim = getrlimit(Resource::Nofile);
    if lim.maximum.is_some_and(|m| m < 8192) {
        eprintln!("skipping the fd-limit test: the hard limit {lim:?} is too low to tell");
        return;
    }
    fs::create_dir(d.src.join("many")).unwrap();
    for i in 0..3000 {
        fs::File::create(d.src.join(format!("many/file-{i}"))).unwrap();
    }
    // The common default soft limit (the other test of this binary needs few descriptors).
    let low = Rlimit {
        current: Some(1024),
        maximum: lim.maximum,
    };
    setrlimit(Resource::Nofile, low).unwrap();
    let fx = d.mount(common::config());
    let out = sh(&format!(
        "find '{}' -type f -printf '%s\\n' | wc -l",
        fx.m("many").display()
    ));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3000");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fx.finish();
    setrlimit(Resource::Nofile, lim).unwrap();
}
