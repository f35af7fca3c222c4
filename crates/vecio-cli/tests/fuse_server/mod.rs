//! A `vecio fuse` process as a user runs it, for the tests: mounted with `-o allow_other` and
//! the mode's options, waited for until it prints `mounted`, unmounted and reaped on drop.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `vecio fuse`.
pub struct FuseServer {
    child: Option<Child>,
    mountpoint: PathBuf,
    log: PathBuf,
}

impl FuseServer {
    /// Why FUSE mounts cannot be tested here, if they cannot.
    pub fn skip_reason() -> Option<String> {
        if !vecio_testkit::is_root() {
            return Some("not root: loop devices and FUSE mounts need CAP_SYS_ADMIN".into());
        }
        if !Path::new("/dev/fuse").exists() {
            return Some("/dev/fuse is missing".into());
        }
        None
    }

    /// Mounts `source` on `mountpoint` (created) with `-o allow_other` and `extra`.
    pub fn mount(source: &Path, mountpoint: &Path, extra: &[&str]) -> FuseServer {
        std::fs::create_dir_all(mountpoint).unwrap();
        let log = mountpoint.with_extension("log");
        let mut child = Command::new(env!("CARGO_BIN_EXE_vecio"))
            .arg("fuse")
            .arg(source)
            .arg(mountpoint)
            .args(["-o", "allow_other"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("running vecio fuse");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let server = FuseServer {
            child: Some(child),
            mountpoint: mountpoint.to_path_buf(),
            log,
        };
        assert!(
            line.starts_with("mounted"),
            "{extra:?}: first line {line:?}; it said: {}",
            server.log()
        );
        server
    }

    /// Where it is mounted.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// What the server wrote on its standard error so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The lines of the log written in full (up to its last newline).
    fn whole_lines(&self) -> Vec<String> {
        let log = self.log();
        let end = log.rfind('\n').map_or(0, |i| i + 1);
        log[..end].lines().map(str::to_string).collect()
    }

    /// Asks the server what it holds (`SIGUSR1`) and returns the line it prints.
    pub fn held(&self) -> String {
        let before = self
            .whole_lines()
            .iter()
            .filter(|l| l.contains("holding"))
            .count();
        let pid = rustix::process::Pid::from_raw(self.pid() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::USR1).unwrap();
        let mut line = None;
        vecio_testkit::wait_until(Duration::from_secs(5), || {
            line = self
                .whole_lines()
                .into_iter()
                .filter(|l| l.contains("holding"))
                .nth(before);
            line.is_some()
        });
        line.expect("the server printed nothing on SIGUSR1")
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Unmounts and waits for the server to exit; its exit status.
    pub fn unmount(mut self) -> std::process::ExitStatus {
        let _ = Command::new("umount").arg(&self.mountpoint).status();
        let mut child = self.child.take().unwrap();
        let status = vecio_testkit::wait_until(Duration::from_secs(10), || {
            matches!(child.try_wait(), Ok(Some(_)))
        });
        if status.is_none() {
            let _ = child.kill();
        }
        child.wait().unwrap()
    }
}

impl Drop for FuseServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("umount").arg(&self.mountpoint).status();
            let exited = vecio_testkit::wait_until(Duration::from_secs(5), || {
                matches!(child.try_wait(), Ok(Some(_)))
            });
            if exited.is_none() {
                let _ = Command::new("umount")
                    .arg("-l")
                    .arg(&self.mountpoint)
                    .status();
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}
