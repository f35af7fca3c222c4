//! `vecio info`'s FUSE lines: what decides how `vecio fuse` can serve here, each read from the
//! system: FUSE over io_uring (the fuse module's `enable_uring`), the largest request
//! (`/proc/sys/fs/fuse/max_pages_limit`), and what a user who is not root needs to mount
//! (a `/dev/fuse` every user may open, `fusermount3`, and `user_allow_other` in
//! `/etc/fuse.conf` for `-o allow_other` and `-o allow_root`).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// What `vecio fuse` finds here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FuseInfo {
    /// FUSE over io_uring: `Some(true)` on, `Some(false)` off, `None` not in this kernel.
    pub uring: Option<bool>,
    /// Pages a request may carry at most (`None`: not reported, the kernel's 256 or fewer).
    pub max_pages_limit: Option<u32>,
    /// `/dev/fuse`'s permission bits (`None`: missing).
    pub dev_mode: Option<u32>,
    /// `fusermount3 -V`'s version (`None`: not installed).
    pub fusermount3: Option<String>,
    /// `user_allow_other` is set in `/etc/fuse.conf`.
    pub user_allow_other: bool,
}

/// Reads what `vecio fuse` finds here.
pub fn probe() -> FuseInfo {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let fusermount3 = std::process::Command::new("fusermount3")
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| {
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            out.rsplit(' ').next().map(|v| v.trim().to_string())
        });
    FuseInfo {
        uring: read(vecio_fuse::URING_KNOB).map(|v| v.trim() == "Y"),
        max_pages_limit: read("/proc/sys/fs/fuse/max_pages_limit")
            .and_then(|v| v.trim().parse().ok()),
        dev_mode: std::fs::metadata("/dev/fuse")
            .ok()
            .map(|m| m.permissions().mode() & 0o7777),
        fusermount3,
        user_allow_other: allows_others(read("/etc/fuse.conf").as_deref()),
    }
}

/// Whether `/etc/fuse.conf`'s text sets `user_allow_other` (a line of its own, not commented).
fn allows_others(conf: Option<&str>) -> bool {
    conf.is_some_and(|c| c.lines().any(|l| l.trim() == "user_allow_other"))
}

/// The lines under the kernel section.
pub fn render(f: &FuseInfo) -> String {
    let knob = Path::new(vecio_fuse::URING_KNOB).display();
    let uring = match f.uring {
        Some(true) => "on".to_string(),
        Some(false) => format!("off ({knob} = N; `vecio fuse --uring` as root turns it on)"),
        None => "not in this kernel (vecio fuse serves /dev/fuse)".to_string(),
    };
    let mut out = format!("  fuse       FUSE over io_uring: {uring}\n");
    if let Some(p) = f.max_pages_limit {
        out += &format!("  {:<10} requests up to {p} pages ({} KiB)\n", "", p * 4);
    }
    let users = match f.dev_mode {
        None => "/dev/fuse is missing: no FUSE here".to_string(),
        Some(m) if m & 0o006 != 0o006 => {
            format!("/dev/fuse is {m:04o}: only root can serve (users need 0666)")
        }
        Some(_) => match &f.fusermount3 {
            None => "fusermount3 is missing (fuse3): only root can mount".to_string(),
            Some(v) => format!("users mount through fusermount3 {v}"),
        },
    };
    out += &format!("  {:<10} {users}\n", "");
    let others = match f.user_allow_other {
        true => "user_allow_other set: users may pass -o allow_other, allow_root",
        false => "user_allow_other not set in /etc/fuse.conf: only root may pass -o allow_other, allow_root",
    };
    out += &format!("  {:<10} {others}\n", "");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commented_user_allow_other_is_not_set() {
        assert!(!allows_others(None));
        assert!(!allows_others(Some(
            "#user_allow_other\nmount_max = 1000\n"
        )));
        assert!(allows_others(Some("# fuse\n user_allow_other \n")));
    }

    #[test]
    fn the_lines_say_what_stops_a_user() {
        let f = FuseInfo {
            uring: Some(false),
            max_pages_limit: Some(256),
            dev_mode: Some(0o600),
            fusermount3: Some("3.14.0".into()),
            user_allow_other: false,
        };
        let text = render(&f);
        assert!(text.contains("FUSE over io_uring: off"), "{text}");
        assert!(text.contains("256 pages (1024 KiB)"), "{text}");
        assert!(text.contains("/dev/fuse is 0600: only root"), "{text}");
        assert!(text.contains("user_allow_other not set"), "{text}");
        let open = FuseInfo {
            dev_mode: Some(0o666),
            ..f
        };
        assert!(render(&open).contains("through fusermount3 3.14.0"));
    }
}
