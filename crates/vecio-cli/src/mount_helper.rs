//! `mount.fuse.vecio`: vecio fuse as mount(8)'s helper, so `mount -t fuse.vecio SOURCE DIR -o
//! OPTIONS` and fstab lines mount it (install a link named `mount.fuse.vecio` to the `vecio`
//! binary in /sbin). mount(8) calls `mount.fuse.vecio SOURCE DIR [-sfnv] [-o OPTIONS] [-t TYPE]`.
//!
//! - A mount starts `vecio fuse` in the background (`--fork`) and returns once the file system
//!   is mounted. SOURCE is the directory served, unless `-o source=DIR` names it (then SOURCE is
//!   only the name shown in the mount table, as with libfuse's passthrough examples).
//! - Options of the server itself: `source=DIR`, `passthrough`, `passthrough_direct`, `uring`,
//!   `no_uring`, `no_passthrough`, `threads=N`, `engine=KIND`, `max_pages=N`, `timeout=SECS` (name and attribute cache),
//!   `log=FILE` (the server's standard error), `sandbox=namespace|none`,
//!   `seccomp=kill|trap|log|none`. The rest are `vecio fuse -o` options; mount(8)'s
//!   own (`defaults`, `auto`, `noauto`, `user`, `users`, `nofail`, `_netdev`, `x-*`) are dropped.
//! - A remount (`-o remount,...`) is passed to the kernel (`mount(2)` with `MS_REMOUNT` and the
//!   mount flags the options give), never to a second server: the running server keeps
//!   serving, and FUSE takes no file-system options on a remount.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Parser;
use vecio_fuse::MountOptions;

use crate::cli::UsageError;

/// True when this process was started as `mount.fuse.vecio` (by mount(8), through a link).
pub fn called_as_helper() -> bool {
    std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .is_some_and(|n| n == "mount.fuse.vecio")
}

/// What mount(8) asked for.
#[derive(Debug, Default, PartialEq)]
struct Request {
    source: String,
    mountpoint: PathBuf,
    /// Options for `vecio fuse -o`.
    mount_opts: Vec<String>,
    /// `vecio fuse` flags from the server's own options.
    server_args: Vec<String>,
    /// `source=DIR`.
    source_dir: Option<String>,
    remount: bool,
    /// `-f`: mount(8)'s fake mode, do nothing.
    fake: bool,
}

/// Splits mount(8)'s arguments into what the server and the kernel get.
fn parse(args: Vec<OsString>) -> Result<Request> {
    let mut req = Request::default();
    let mut positional = Vec::new();
    let mut it = args.into_iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = it.next() {
        match a.as_str() {
            "-o" => {
                let list = it
                    .next()
                    .ok_or_else(|| UsageError("-o needs options".into()))?;
                options(&mut req, &list)?;
            }
            "-t" | "-N" => {
                it.next();
            }
            "-f" => req.fake = true,
            "-s" | "-n" | "-v" => {}
            o if o.starts_with("-o") => options(&mut req, &o[2..])?,
            o if o.starts_with('-') => bail!(UsageError(format!("unknown flag {o}"))),
            _ => positional.push(a),
        }
    }
    let [source, mountpoint] = <[String; 2]>::try_from(positional)
        .map_err(|_| UsageError("usage: mount.fuse.vecio SOURCE DIR [-o OPTIONS]".into()))?;
    req.source = source;
    req.mountpoint = PathBuf::from(mountpoint);
    Ok(req)
}

/// Sorts one comma-separated option list.
fn options(req: &mut Request, list: &str) -> Result<()> {
    for opt in list.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        let (key, value) = match opt.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (opt, None),
        };
        match (key, value) {
            ("remount", None) => req.remount = true,
            ("source", Some(v)) => req.source_dir = Some(v.to_string()),
            (
                "passthrough" | "passthrough_direct" | "uring" | "no_uring" | "no_passthrough",
                None,
            ) => req.server_args.push(format!("--{}", key.replace('_', "-"))),
            (
                "threads" | "engine" | "max_pages" | "timeout" | "log" | "sandbox" | "seccomp",
                Some(v),
            ) => {
                req.server_args.push(format!("--{}", key.replace('_', "-")));
                req.server_args.push(v.to_string());
            }
            ("defaults" | "auto" | "noauto" | "user" | "nouser" | "users" | "nofail", None)
            | ("_netdev", None) => {}
            (k, _) if k.starts_with("x-") || k == "comment" => {}
            _ => req.mount_opts.push(opt.to_string()),
        }
    }
    Ok(())
}

/// Runs the helper.
pub fn run(args: Vec<OsString>) -> Result<()> {
    let req = parse(args)?;
    if req.fake {
        return Ok(());
    }
    if req.remount {
        return remount(&req);
    }
    let mut argv: Vec<String> = vec!["vecio".into(), "fuse".into(), "--fork".into(), "-q".into()];
    argv.push(req.source_dir.clone().unwrap_or_else(|| req.source.clone()));
    argv.push(req.mountpoint.display().to_string());
    // mount(8) passes nosuid, nodev and noexec when asked for, never their defaults (suid,
    // dev, exec): start from those, as any file system mount(8) mounts.
    let mut opts = vec!["suid".to_string(), "dev".to_string()];
    opts.extend(req.mount_opts.iter().cloned());
    if !opts.iter().any(|o| o.starts_with("fsname=")) {
        opts.push(format!("fsname={}", req.source.replace(',', "_")));
    }
    argv.push("-o".into());
    argv.push(opts.join(","));
    argv.extend(req.server_args.iter().cloned());
    let cli = crate::cli::Cli::try_parse_from(&argv)
        .map_err(|e| UsageError(e.to_string().trim().to_string()))?;
    match cli.command {
        crate::cli::Command::Fuse(a) => crate::fuse::run(a),
        _ => unreachable!("the argument list names `fuse`"),
    }
}

/// `MS_REMOUNT` with the flags the options give (read-only, nosuid, noatime...).
fn remount(req: &Request) -> Result<()> {
    let mut opts = MountOptions::default();
    // As for a mount: suid and dev unless mount(8) passes nosuid or nodev.
    opts.parse_into("suid,dev")?;
    for o in &req.mount_opts {
        opts.parse_into(o)?;
    }
    let mut flags = opts.flags;
    if opts.read_only {
        flags |= rustix::mount::MountFlags::RDONLY;
    }
    rustix::mount::mount_remount(&req.mountpoint, flags, c"")
        .with_context(|| format!("remounting {}", req.mountpoint.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<OsString> {
        s.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn splits_server_kernel_and_mount8_options() {
        let r = parse(args(
            "non1 /mnt/t -o rw,source=/srv/d,allow_other,passthrough,threads=2,seccomp=log,nofail,x-systemd.a -t fuse.vecio",
        ))
        .unwrap();
        assert_eq!(r.source, "non1");
        assert_eq!(r.source_dir.as_deref(), Some("/srv/d"));
        assert_eq!(r.mount_opts, ["rw", "allow_other"]);
        assert_eq!(
            r.server_args,
            ["--passthrough", "--threads", "2", "--seccomp", "log"]
        );
        assert!(!r.remount);
        let r = parse(args("non1 /mnt/t -oremount,ro")).unwrap();
        assert!(r.remount);
        assert_eq!(r.mount_opts, ["ro"]);
        assert!(parse(args("only-one")).is_err());
        assert!(parse(args("a b -q")).is_err());
    }
}
