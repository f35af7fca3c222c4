//! Access control as nbdkit and qemu-nbd users know it: by the client's address before the
//! handshake ([`IpFilter`], nbdkit's ip filter), and by the identity TLS proved ([`Authz`],
//! qemu's `authz-list`). Both refuse with a log line naming the client.

mod authz;
mod ip;

pub use authz::{Authz, AuthzRule, MatchFormat, Policy};
pub use ip::{AddrRule, Cred, IpFilter, Peer};
