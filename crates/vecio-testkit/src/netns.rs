//! Network namespaces for tests that need real clients at real addresses: a server namespace
//! joined to each client namespace by a veth pair of its own, with IPv4 and (where the kernel
//! has it) IPv6 addresses in private ranges. Everything is removed when the [`Netns`] drops.
//!
//! Client `k` (from 1) is on link `k`: the server has `10.231.k.1` and `fd00:231:k::1`, the
//! client `10.231.k.2` and `fd00:231:k::2`. The addresses live inside the namespaces only, so
//! they cannot collide with anything outside them; the names carry the process id and a
//! counter, so two tests (or two test processes) never share one.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A server namespace and its client namespaces (see the module docs).
#[derive(Debug)]
pub struct Netns {
    server: String,
    clients: Vec<String>,
    ipv6: bool,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(format!("ip {}: {}", args.join(" "), err.trim()))
}

impl Netns {
    /// A server namespace and `clients` client namespaces, each joined to the server by a veth
    /// pair; `None`, printing why, when the tests are not root or namespaces cannot be made.
    pub fn star(clients: u8) -> Option<Netns> {
        if !crate::is_root() {
            eprintln!("SKIP network namespaces: not root");
            return None;
        }
        let id = format!(
            "{}x{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut ns = Netns {
            server: format!("vecio-{id}-s"),
            clients: Vec::new(),
            ipv6: std::path::Path::new("/proc/sys/net/ipv6").exists(),
        };
        if let Err(e) = ip(&["netns", "add", &ns.server]) {
            eprintln!("SKIP network namespaces: {e}");
            return None;
        }
        for k in 1..=clients {
            let name = format!("vecio-{id}-c{k}");
            ip(&["netns", "add", &name]).expect("a client namespace");
            ns.clients.push(name);
            ns.link(&id, k).expect("a veth pair");
        }
        if !ns.ipv6 {
            eprintln!("SKIP IPv6 parts: this kernel has no IPv6 (/proc/sys/net/ipv6)");
        }
        Some(ns)
    }

    /// Joins the server to client `k` (veth `vs..`/`vc..`, addresses as the module docs say).
    fn link(&self, id: &str, k: u8) -> Result<(), String> {
        let (vs, vc) = (format!("vs{id}{k}"), format!("vc{id}{k}"));
        let (s, c) = (&self.server, &self.clients[usize::from(k) - 1]);
        ip(&["link", "add", &vs, "type", "veth", "peer", "name", &vc])?;
        ip(&["link", "set", &vs, "netns", s])?;
        ip(&["link", "set", &vc, "netns", c])?;
        for (ns, dev, host) in [(s, &vs, 1), (c, &vc, 2)] {
            ip(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("10.231.{k}.{host}/24"),
                "dev",
                dev,
            ])?;
            if self.ipv6 {
                let v6 = format!("fd00:231:{k}::{host}/64");
                ip(&["-n", ns, "addr", "add", &v6, "dev", dev, "nodad"])?;
            }
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    /// True when the links have IPv6 addresses.
    pub fn has_ipv6(&self) -> bool {
        self.ipv6
    }

    /// The server namespace's name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Client `k`'s namespace name (from 1).
    pub fn client(&self, k: u8) -> &str {
        &self.clients[usize::from(k) - 1]
    }

    /// The namespace file of `name` (for `setns(2)`).
    pub fn path(name: &str) -> PathBuf {
        PathBuf::from(format!("/var/run/netns/{name}"))
    }

    /// `cmd` run in namespace `name` (`ip netns exec`), with its arguments, environment and
    /// directory.
    pub fn exec(name: &str, cmd: &Command) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", name]).arg(cmd.get_program());
        c.args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        if let Some(d) = cmd.get_current_dir() {
            c.current_dir(d);
        }
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth ends in it (and so their peers).
        for ns in self.clients.iter().chain([&self.server]) {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}
