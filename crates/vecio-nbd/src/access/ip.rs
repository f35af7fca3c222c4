//! `--allow` and `--deny`: which clients may connect, by address (TCP) or by the credentials of
//! the process at the other end (Unix sockets), with nbdkit's ip filter rules.
//!
//! The check, once per connection, before the handshake:
//! 1. a client matching any allow rule is served;
//! 2. otherwise, a client matching any deny rule is refused (the connection is closed at once
//!    and a log line names it);
//! 3. otherwise it is served.
//!
//! The order on the command line does not matter: allow is always looked at first. No rules
//! serve everyone. An IPv4 client reaching an IPv6 socket (`::ffff:a.b.c.d`) is matched as the
//! IPv4 address it is.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;

/// Who is at the other end of a connection, as the access rules and the logs see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Peer {
    /// A TCP client and its address (IPv4-mapped IPv6 addresses already turned into IPv4).
    Tcp(SocketAddr),
    /// A client on a Unix socket, with the credentials of its process when the kernel gave
    /// them (`SO_PEERCRED`).
    Unix(Option<Cred>),
}

/// The credentials of the process at the other end of a Unix socket (`SO_PEERCRED`: those it
/// had when it connected).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Cred {
    /// Its process id.
    pub pid: i32,
    /// Its user id.
    pub uid: u32,
    /// Its group id.
    pub gid: u32,
}

impl Peer {
    /// A TCP peer at `addr`; an IPv4-mapped IPv6 address becomes the IPv4 address it carries.
    pub fn tcp(addr: SocketAddr) -> Self {
        let ip = match addr.ip() {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        Peer::Tcp(SocketAddr::new(ip, addr.port()))
    }

    /// A Unix-socket peer, with the credentials `SO_PEERCRED` gives for `sock`.
    pub(crate) fn unix(sock: impl std::os::fd::AsFd) -> Self {
        let cred = rustix::net::sockopt::socket_peercred(sock)
            .ok()
            .map(|c| Cred {
                pid: c.pid.as_raw_nonzero().get(),
                uid: c.uid.as_raw(),
                gid: c.gid.as_raw(),
            });
        Peer::Unix(cred)
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Tcp(a) => write!(f, "{a}"),
            Peer::Unix(Some(c)) => write!(f, "unix (pid {}, uid {}, gid {})", c.pid, c.uid, c.gid),
            Peer::Unix(None) => f.write_str("unix"),
        }
    }
}

/// One entry of an allow or deny list, in nbdkit's spelling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AddrRule {
    /// `all` or `any`: every client.
    Any,
    /// `allipv4` or `anyipv4`: every IPv4 client.
    AnyIpv4,
    /// `allipv6` or `anyipv6`: every IPv6 client.
    AnyIpv6,
    /// `allunix` or `anyunix`: every client on a Unix socket.
    AnyUnix,
    /// `A.B.C.D`, `A.B.C.D/NN`, `A:B::C`, `A:B::/NN`: an address or a network.
    Net(IpNet),
    /// `uid:N`: a Unix-socket client running as user N.
    Uid(u32),
    /// `gid:N`: a Unix-socket client running with group N.
    Gid(u32),
    /// `pid:N`: a Unix-socket client with process id N (ids are reused: an extra check only).
    Pid(i32),
}

impl AddrRule {
    /// True when `peer` is one this rule names.
    pub fn matches(&self, peer: &Peer) -> bool {
        match (self, peer) {
            (AddrRule::Any, _) => true,
            (AddrRule::AnyIpv4, Peer::Tcp(a)) => a.is_ipv4(),
            (AddrRule::AnyIpv6, Peer::Tcp(a)) => a.is_ipv6(),
            (AddrRule::AnyUnix, Peer::Unix(_)) => true,
            (AddrRule::Net(net), Peer::Tcp(a)) => net.contains(&a.ip()),
            (AddrRule::Uid(u), Peer::Unix(Some(c))) => c.uid == *u,
            (AddrRule::Gid(g), Peer::Unix(Some(c))) => c.gid == *g,
            (AddrRule::Pid(p), Peer::Unix(Some(c))) => c.pid == *p,
            _ => false,
        }
    }
}

impl std::str::FromStr for AddrRule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let num = || format!("{s}: expected a number after ':'");
        let id = |v: &str| v.parse::<u32>().map_err(|_| num());
        Ok(match s {
            "all" | "any" => AddrRule::Any,
            "allipv4" | "anyipv4" => AddrRule::AnyIpv4,
            "allipv6" | "anyipv6" => AddrRule::AnyIpv6,
            "allunix" | "anyunix" => AddrRule::AnyUnix,
            _ if s.starts_with("uid:") => AddrRule::Uid(id(&s[4..])?),
            _ if s.starts_with("gid:") => AddrRule::Gid(id(&s[4..])?),
            _ if s.starts_with("pid:") => AddrRule::Pid(s[4..].parse().map_err(|_| num())?),
            _ if s.contains('/') => AddrRule::Net(s.parse().map_err(|_| bad(s))?),
            _ => AddrRule::Net(IpNet::from(s.parse::<IpAddr>().map_err(|_| bad(s))?)),
        })
    }
}

fn bad(s: &str) -> String {
    format!(
        "{s}: expected an address, a network (A.B.C.D/NN, A:B::/NN), all, anyipv4, anyipv6, \
         anyunix, uid:N, gid:N or pid:N"
    )
}

/// The allow and deny lists of a server (`--allow`, `--deny`); see the module docs for how
/// they combine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IpFilter {
    /// Clients served whatever the deny list says.
    pub allow: Vec<AddrRule>,
    /// Clients refused unless the allow list names them.
    pub deny: Vec<AddrRule>,
}

impl IpFilter {
    /// Parses a comma-separated list of rules (`10.0.0.0/8,::1,anyunix`), as nbdkit's
    /// `allow=` and `deny=` take them.
    pub fn parse_list(s: &str) -> Result<Vec<AddrRule>, String> {
        s.split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::parse)
            .collect()
    }

    /// True when `peer` may connect.
    pub fn permits(&self, peer: &Peer) -> bool {
        if self.allow.iter().any(|r| r.matches(peer)) {
            return true;
        }
        !self.deny.iter().any(|r| r.matches(peer))
    }

    /// True when there are no rules (everyone is served).
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(s: &str) -> Peer {
        Peer::tcp(s.parse().unwrap())
    }

    fn filter(allow: &str, deny: &str) -> IpFilter {
        IpFilter {
            allow: IpFilter::parse_list(allow).unwrap(),
            deny: IpFilter::parse_list(deny).unwrap(),
        }
    }

    #[test]
    fn allow_is_looked_at_first_then_deny_then_everyone_is_served() {
        let f = filter("127.0.0.1,::1", "all");
        assert!(f.permits(&tcp("127.0.0.1:5000")));
        assert!(f.permits(&tcp("[::1]:5000")));
        assert!(!f.permits(&tcp("10.0.0.1:5000")));
        assert!(!f.permits(&Peer::Unix(None)));
        let f = filter("", "8.0.0.0/8");
        assert!(!f.permits(&tcp("8.8.8.8:53")));
        assert!(f.permits(&tcp("9.0.0.1:53")));
        assert!(f.permits(&Peer::Unix(None)));
        // Both lists name the client: allow wins.
        assert!(filter("10.0.0.0/8", "10.1.0.0/16").permits(&tcp("10.1.2.3:1")));
        assert!(IpFilter::default().permits(&tcp("1.2.3.4:1")));
        assert!(IpFilter::default().is_empty());
    }

    #[test]
    fn mapped_ipv4_keywords_and_credentials() {
        let mapped = tcp("[::ffff:10.9.8.7]:1");
        assert_eq!(mapped, tcp("10.9.8.7:1"));
        let f = filter("10.9.0.0/16", "all");
        assert!(f.permits(&mapped));
        let f = filter("anyipv6,anyunix", "all");
        assert!(f.permits(&tcp("[fd00::1]:1")) && f.permits(&Peer::Unix(None)));
        assert!(!f.permits(&tcp("10.0.0.1:1")));
        let me = Peer::Unix(Some(Cred {
            pid: 7,
            uid: 1000,
            gid: 100,
        }));
        assert!(filter("uid:1000", "all").permits(&me));
        assert!(!filter("uid:0", "all").permits(&me));
        assert!(filter("gid:100", "all").permits(&me));
        assert!(filter("pid:7", "all").permits(&me));
        // A credential rule never names a TCP client.
        assert!(!filter("uid:1000", "all").permits(&tcp("10.0.0.1:1")));
    }

    #[test]
    fn mistakes_are_named() {
        for bad in [
            "10.0.0.256",
            "10.0.0.0/33",
            "uid:me",
            "localhost",
            "fd00::/129",
        ] {
            let e = IpFilter::parse_list(bad).unwrap_err();
            assert!(e.starts_with(bad), "{bad}: {e}");
        }
        assert_eq!(IpFilter::parse_list("").unwrap(), vec![]);
    }
}
