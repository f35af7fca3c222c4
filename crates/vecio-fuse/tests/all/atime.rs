//! `-o noatime`: reads through the mount leave the backing file's access time alone, on the
//! served path and under `--passthrough` (where the kernel reads the backing file itself);
//! without it, reads update it as the backing file system's own rules say.

use crate::common;

use std::fs;
use std::os::unix::fs::MetadataExt;

use common::sh;

/// Sets the access time of `src/name` two days back (older than `relatime`'s day), reads the
/// file through the mount, and says whether the access time moved.
fn atime_moved(fx: &common::Fixture, name: &str, read: &str) -> bool {
    let s = fx.s(name);
    sh(&format!("touch -a -d '2 days ago' '{}'", s.display()));
    let before = fs::metadata(&s).unwrap().atime();
    sh(&read.replace("{}", &fx.m(name).display().to_string()));
    fs::metadata(&s).unwrap().atime() != before
}

#[test]
fn noatime_keeps_the_backing_access_time() {
    for passthrough in [false, true] {
        for noatime in [false, true] {
            let mut cfg = common::config();
            cfg.fs.passthrough = passthrough;
            if noatime {
                cfg.mount.parse_into("noatime").unwrap();
            }
            let name = format!("atime-{}{}", passthrough as u8, noatime as u8);
            let Some(fx) = common::mount(&name, cfg) else {
                return;
            };
            fs::write(fx.s("f"), "some data\n").unwrap();
            fs::create_dir(fx.s("d")).unwrap();
            fs::write(fx.s("d/x"), "").unwrap();
            for (what, name, read) in [
                ("cat", "f", "cat '{}' >/dev/null"),
                ("ls", "d", "ls -f '{}' >/dev/null"),
            ] {
                let moved = atime_moved(&fx, name, read);
                assert_eq!(
                    moved, !noatime,
                    "{what} (passthrough {passthrough}, noatime {noatime}): access time moved: {moved}"
                );
            }
        }
    }
}
