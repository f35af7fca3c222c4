//! The mount layer: how a connection to the kernel comes to be. `-o` options as FUSE users know
//! them, `mount(2)` of a `/dev/fuse` connection and unmounting (here), mounting without root
//! through `fusermount3` (`fusermount`), and the `FUSE_INIT` agreement that opens the session
//! (`session`). It sits on the transport (`crate::transport::dev`) and the ABI; the server
//! (`crate::Server`) uses it before it starts serving.

pub mod auto_unmount;
pub mod fusermount;
pub mod session;

use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};

use rustix::mount::{MountFlags, UnmountFlags};

use crate::error::{Error, Result};
use crate::transport::dev::Channel;

/// Mount options (`-o allow_other,default_permissions,ro,...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountOptions {
    /// Let users other than the one who mounted access the file system.
    pub allow_other: bool,
    /// Let root in besides the user who mounted (`-o allow_root`, as libfuse's): the kernel
    /// lets everyone in (`allow_other`, with the same `user_allow_other` rule for users) and
    /// the server refuses everyone else's requests with `EACCES`.
    pub allow_root: bool,
    /// Let the kernel check permissions from the file modes (recommended with allow_other).
    pub default_permissions: bool,
    /// Mount read-only.
    pub read_only: bool,
    /// Serve every file with direct I/O, whatever the caller's open flags (`-o direct_io`).
    pub direct_io: bool,
    /// Let the kernel cache writes of buffered opens and send them in the background
    /// (`-o writeback_cache`, `FUSE_WRITEBACK_CACHE`).
    pub writeback_cache: bool,
    /// Mount flags besides read-only (nosuid, nodev, noexec, noatime...).
    pub flags: MountFlags,
    /// The name shown as the mount's source (`fsname=`); default: the source directory.
    pub fsname: Option<String>,
    /// The type shown after `fuse.` (`subtype=`); default: `vecio`. Empty (`subtype=`): the
    /// mount's type is plain `fuse`, as a libfuse server's without a subtype (what test suites
    /// such as xfstests check for).
    pub subtype: String,
    /// Seconds a request may wait for the server before the kernel aborts the connection
    /// (`timeout_s=`, `FUSE_REQUEST_TIMEOUT`; a server option, as in libfuse).
    pub request_timeout: Option<u16>,
    /// POSIX ACLs checked and applied by the kernel (`FUSE_POSIX_ACL`) under
    /// `default_permissions`: on by default and with `-o acl`, off with `-o noacl` (ACL
    /// attributes are then stored as any other, and the kernel checks the mode bits alone).
    pub acl: bool,
    /// Unmount when the server ends however it ends, killed too (`-o auto_unmount`, as
    /// libfuse's): a watcher forked at mount time unmounts once no server process is left.
    pub auto_unmount: bool,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            allow_other: false,
            allow_root: false,
            default_permissions: false,
            read_only: false,
            direct_io: false,
            writeback_cache: false,
            flags: MountFlags::NOSUID | MountFlags::NODEV,
            fsname: None,
            subtype: "vecio".to_string(),
            request_timeout: None,
            acl: true,
            auto_unmount: false,
        }
    }
}

impl MountOptions {
    /// Applies one comma-separated `-o` list. Unknown options are an error, so a typo never
    /// mounts something the user did not ask for.
    pub fn parse_into(&mut self, list: &str) -> Result<()> {
        for opt in list.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            let (key, value) = match opt.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (opt, None),
            };
            match (key, value) {
                ("allow_other", None) => self.allow_other = true,
                ("allow_root", None) => self.allow_root = true,
                ("default_permissions", None) => self.default_permissions = true,
                ("ro", None) => self.read_only = true,
                ("rw", None) => self.read_only = false,
                ("direct_io", None) => self.direct_io = true,
                ("writeback_cache", None) => self.writeback_cache = true,
                ("no_writeback_cache", None) => self.writeback_cache = false,
                ("suid", None) => self.flags.remove(MountFlags::NOSUID),
                ("nosuid", None) => self.flags.insert(MountFlags::NOSUID),
                ("dev", None) => self.flags.remove(MountFlags::NODEV),
                ("nodev", None) => self.flags.insert(MountFlags::NODEV),
                ("exec", None) => self.flags.remove(MountFlags::NOEXEC),
                ("noexec", None) => self.flags.insert(MountFlags::NOEXEC),
                ("atime", None) => self.flags.remove(MountFlags::NOATIME),
                ("noatime", None) => self.flags.insert(MountFlags::NOATIME),
                ("relatime", None) => self.flags.insert(MountFlags::RELATIME),
                ("norelatime", None) => self.flags.remove(MountFlags::RELATIME),
                ("strictatime", None) => self.flags.insert(MountFlags::STRICTATIME),
                ("nostrictatime", None) => self.flags.remove(MountFlags::STRICTATIME),
                ("diratime", None) => self.flags.remove(MountFlags::NODIRATIME),
                ("nodiratime", None) => self.flags.insert(MountFlags::NODIRATIME),
                ("lazytime", None) => self.flags.insert(MountFlags::LAZYTIME),
                ("nolazytime", None) => self.flags.remove(MountFlags::LAZYTIME),
                ("sync", None) => self.flags.insert(MountFlags::SYNCHRONOUS),
                ("async", None) => self.flags.remove(MountFlags::SYNCHRONOUS),
                ("dirsync", None) => self.flags.insert(MountFlags::DIRSYNC),
                ("acl", None) => self.acl = true,
                ("noacl", None) => self.acl = false,
                ("auto_unmount", None) => self.auto_unmount = true,
                ("fsname", Some(v)) if !v.is_empty() && !v.contains(',') => {
                    self.fsname = Some(v.to_string())
                }
                ("subtype", Some(v)) if !v.contains(',') && !v.contains('/') => {
                    self.subtype = v.to_string()
                }
                ("timeout_s", Some(v)) if v.parse::<u16>().is_ok_and(|s| s > 0) => {
                    self.request_timeout = v.parse().ok()
                }
                _ => {
                    return Err(Error::Option(format!(
                        "unknown or malformed mount option {opt:?}"
                    )))
                }
            }
        }
        if self.allow_other && self.allow_root {
            return Err(Error::Option(
                "allow_other and allow_root exclude each other".into(),
            ));
        }
        Ok(())
    }

    /// The `-o` list for `fusermount3` (it adds fd, rootmode, user_id and group_id itself):
    /// every mount flag asked for, by the names it knows (`relatime` is the kernel's default, so
    /// it is not passed: older `fusermount3`s refuse the name).
    fn fusermount_options(&self, fsname: &str) -> String {
        let mut o = vec![if self.read_only { "ro" } else { "rw" }.to_string()];
        for (flag, on, off) in [
            (MountFlags::NOSUID, "nosuid", Some("suid")),
            (MountFlags::NODEV, "nodev", Some("dev")),
            (MountFlags::NOEXEC, "noexec", Some("exec")),
            (MountFlags::NOATIME, "noatime", None),
            (MountFlags::NODIRATIME, "nodiratime", None),
            (MountFlags::STRICTATIME, "strictatime", None),
            (MountFlags::LAZYTIME, "lazytime", None),
            (MountFlags::SYNCHRONOUS, "sync", None),
            (MountFlags::DIRSYNC, "dirsync", None),
        ] {
            let name = if self.flags.contains(flag) { Some(on) } else { off };
            o.extend(name.map(str::to_string));
        }
        for (set, name) in [
            (self.allow_other || self.allow_root, "allow_other"),
            (self.default_permissions, "default_permissions"),
        ] {
            if set {
                o.push(name.into());
            }
        }
        o.push(format!("fsname={fsname}"));
        if !self.subtype.is_empty() {
            o.push(format!("subtype={}", self.subtype));
        }
        o.join(",")
    }

    /// The mount's type: `fuse.SUBTYPE`, or `fuse` with an empty subtype.
    pub fn fstype(&self) -> String {
        if self.subtype.is_empty() {
            "fuse".to_string()
        } else {
            format!("fuse.{}", self.subtype)
        }
    }

    fn data(&self, fd: i32) -> String {
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        let mut data = format!("fd={fd},rootmode=40000,user_id={uid},group_id={gid}");
        if self.allow_other || self.allow_root {
            data.push_str(",allow_other");
        }
        if self.default_permissions {
            data.push_str(",default_permissions");
        }
        data
    }
}

/// How a mount was made, and so how it is undone.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Via {
    /// `mount(2)` by the server (root); undone with `umount2(MNT_DETACH)`.
    Syscall,
    /// `fusermount3` for an unprivileged user; undone with `fusermount3 -u -z`.
    Fusermount,
}

/// Unmounts `mountpoint` lazily the way it was mounted; an already unmounted point is fine.
pub fn unmount(mountpoint: &Path, via: Via) -> std::io::Result<()> {
    match via {
        Via::Fusermount => crate::mount::fusermount::unmount(mountpoint),
        Via::Syscall => match rustix::mount::unmount(mountpoint, UnmountFlags::DETACH) {
            Ok(()) => Ok(()),
            // Already unmounted by the user (fusermount3 -u, umount).
            Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOENT => Ok(()),
            Err(e) => Err(e.into()),
        },
    }
}

/// A mounted FUSE file system; unmounts (lazily) when dropped unless already gone.
pub struct Mount {
    mountpoint: PathBuf,
    via: Via,
    mounted: bool,
    /// `-o auto_unmount`'s watcher, released after the unmount (it then finds nothing to do).
    watch: Option<auto_unmount::Watch>,
}

impl Mount {
    /// Opens a FUSE connection and mounts it on `mountpoint`: with `mount(2)` as root, else
    /// through `fusermount3` as libfuse does for users; with `-o auto_unmount`, starts the
    /// watcher that unmounts it once the server has ended.
    pub fn attach(
        source: &Path,
        mountpoint: &Path,
        opts: &MountOptions,
    ) -> Result<(Channel, Mount)> {
        let mount_err = |reason: String| Error::Mount {
            mountpoint: mountpoint.to_path_buf(),
            reason,
        };
        let st = rustix::fs::stat(mountpoint).map_err(|e| mount_err(e.to_string()))?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory {
            return Err(mount_err("not a directory".into()));
        }
        let fsname = opts
            .fsname
            .clone()
            .unwrap_or_else(|| source.display().to_string().replace(',', "_"));
        let (channel, via) = if rustix::process::geteuid().is_root() {
            let channel = Channel::open()?;
            let fstype = opts.fstype();
            let mut flags = opts.flags;
            if opts.read_only {
                flags |= MountFlags::RDONLY;
            }
            let data = std::ffi::CString::new(opts.data(channel.as_fd().as_raw_fd()))
                .map_err(|_| mount_err("mount data holds a NUL byte".into()))?;
            rustix::mount::mount(
                fsname.as_str(),
                mountpoint,
                fstype.as_str(),
                flags,
                data.as_c_str(),
            )
            .map_err(|e| mount_err(std::io::Error::from(e).to_string()))?;
            (channel, Via::Syscall)
        } else {
            let fd = crate::mount::fusermount::mount(mountpoint, &opts.fusermount_options(&fsname))
                .map_err(mount_err)?;
            (Channel::from_fd(fd), Via::Fusermount)
        };
        let mut mount = Mount {
            mountpoint: mountpoint.to_path_buf(),
            via,
            mounted: true,
            watch: None,
        };
        if opts.auto_unmount {
            // On failure the mount is dropped, so unmounted: nothing is left half made.
            let watch = auto_unmount::watch(mountpoint, via == Via::Fusermount);
            mount.watch = Some(watch.map_err(mount_err)?);
        }
        Ok((channel, mount))
    }

    /// The mount point.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// How the mount was made.
    pub fn via(&self) -> Via {
        self.via
    }

    /// Detaches the mount: callers still inside finish, new ones cannot enter, and the
    /// connection ends when the last user leaves.
    pub fn unmount(&mut self) -> std::io::Result<()> {
        if !self.mounted {
            return Ok(());
        }
        self.mounted = false;
        unmount(&self.mountpoint, self.via)
    }

    /// Marks the mount as already gone (the kernel told us), so drop does nothing.
    pub fn forget(&mut self) {
        self.mounted = false;
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Err(e) = self.unmount() {
            tracing::warn!(mountpoint = %self.mountpoint.display(), "unmount: {e}");
        }
        // The watcher wakes, finds the mount gone, and exits.
        self.watch.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_fuse_users_write() {
        let mut o = MountOptions::default();
        o.parse_into("allow_other,default_permissions,ro,noexec,fsname=data")
            .unwrap();
        assert!(o.allow_other && o.default_permissions && o.read_only);
        assert!(o.flags.contains(MountFlags::NOEXEC));
        assert_eq!(o.fsname.as_deref(), Some("data"));
        assert!(o.data(5).ends_with(",allow_other,default_permissions"));
        assert!(o.acl);
        o.parse_into("noacl").unwrap();
        assert!(!o.acl);
        o.parse_into("acl").unwrap();
        assert!(o.acl);
    }

    #[test]
    fn allow_root_lets_everyone_past_the_kernel_and_excludes_allow_other() {
        let mut o = MountOptions::default();
        o.parse_into("allow_root").unwrap();
        assert!(o.data(5).ends_with(",allow_other"));
        assert!(o.fusermount_options("src").contains(",allow_other,"));
        assert!(o.parse_into("allow_other").is_err());
    }

    #[test]
    fn refuses_unknown_options() {
        let mut o = MountOptions::default();
        assert!(o.parse_into("allow_otter").is_err());
        assert!(o.parse_into("fsname=").is_err());
        assert!(o.parse_into("ro=1").is_err());
        assert!(o.parse_into("subtype=a/b").is_err());
    }

    #[test]
    fn an_empty_subtype_mounts_plain_fuse() {
        let mut o = MountOptions::default();
        assert_eq!(o.fstype(), "fuse.vecio");
        o.parse_into("subtype=").unwrap();
        assert_eq!(o.fstype(), "fuse");
        assert!(!o.fusermount_options("src").contains("subtype"));
    }

    #[test]
    fn fusermount3_is_given_every_flag_asked_for() {
        let mut o = MountOptions::default();
        assert_eq!(
            o.fusermount_options("src"),
            "rw,nosuid,nodev,exec,fsname=src,subtype=vecio"
        );
        o.parse_into("ro,suid,noexec,sync,dirsync,nodiratime,lazytime,auto_unmount")
            .unwrap();
        assert!(o.auto_unmount);
        assert_eq!(
            o.fusermount_options("src"),
            "ro,suid,nodev,noexec,nodiratime,lazytime,sync,dirsync,fsname=src,subtype=vecio"
        );
    }
}
