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

/// Whether a read through the mount moves the access time of `src/name`, set a minute ahead
/// (after its modification and change times, within the day): `relatime` leaves it,
/// `strictatime` moves it.
fn recent_atime_moved(fx: &common::Fixture, name: &str) -> bool {
    let s = fx.s(name);
    let ahead = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 60;
    sh(&format!("touch -a -d '@{ahead}' '{}'", s.display()));
    let before = fs::metadata(&s).unwrap().atime();
    sh(&format!("cat '{}' >/dev/null", fx.m(name).display()));
    fs::metadata(&s).unwrap().atime() != before
}

#[test]
fn strictatime_moves_the_access_time_on_every_read() {
    for passthrough in [false, true] {
        for strict in [false, true] {
            let mut cfg = common::config();
            cfg.fs.passthrough = passthrough;
            if strict {
                cfg.mount.parse_into("strictatime").unwrap();
            }
            let name = format!("strictatime-{}{}", passthrough as u8, strict as u8);
            let Some(fx) = common::mount(&name, cfg) else {
                return;
            };
            fs::write(fx.s("f"), "some data\n").unwrap();
            let backing = rustix::fs::statvfs(fx.s("f")).unwrap().f_flag;
            let relatime = backing.contains(rustix::fs::StatVfsMountFlags::RELATIME);
            let moved = recent_atime_moved(&fx, "f");
            if strict {
                assert!(
                    moved,
                    "strictatime (passthrough {passthrough}): access time kept"
                );
            } else if relatime {
                assert!(
                    !moved,
                    "relatime backing (passthrough {passthrough}): access time moved"
                );
            }
        }
    }
}
