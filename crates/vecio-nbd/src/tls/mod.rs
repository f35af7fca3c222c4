//! TLS for NBD (`NBD_OPT_STARTTLS`), with the credentials nbdkit and qemu-nbd take: X.509
//! certificates in their directory layout (`ca-cert.pem`, `server-cert.pem`, `server-key.pem`),
//! or pre-shared keys in nbdkit's `--tls-psk` file (`username:hexkey` lines).
//!
//! rustls (with the `ring` provider) does the certificate sessions. PSK sessions go through
//! OpenSSL: rustls has no external pre-shared keys in its stable API (see docs/nbd.md). Both
//! sit behind one [`Session`] type, so the connection code does not know which one it has.

mod dn;
mod psk;
mod psk_session;
mod session;
mod x509;

use std::path::Path;
use std::sync::Arc;

pub(crate) use session::Session;

use crate::access::Authz;
use crate::error::{Error, Result};

/// When the server uses TLS (`--tls`, as nbdkit spells it).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum TlsMode {
    /// No TLS: `NBD_OPT_STARTTLS` is refused with `NBD_REP_ERR_POLICY`.
    #[default]
    Off,
    /// TLS offered: clients may upgrade with `NBD_OPT_STARTTLS` or stay plain.
    On,
    /// TLS required: every option but `STARTTLS` and `ABORT` before it gets
    /// `NBD_REP_ERR_TLS_REQD`.
    Require,
}

impl std::str::FromStr for TlsMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "off" | "no" | "false" => Ok(TlsMode::Off),
            "on" | "yes" | "true" => Ok(TlsMode::On),
            "require" | "required" => Ok(TlsMode::Require),
            _ => Err(format!("{s}: expected off, on or require")),
        }
    }
}

/// The credentials every TLS connection of a server shares.
#[derive(Clone)]
enum Credentials {
    /// Certificates: a rustls configuration.
    X509(Arc<rustls::ServerConfig>),
    /// Pre-shared keys: an OpenSSL context whose PSK callback looks the client's identity up.
    Psk(openssl::ssl::SslContext),
}

/// The TLS settings of a server.
#[derive(Clone)]
pub struct Tls {
    /// Off, offered or required.
    pub mode: TlsMode,
    creds: Credentials,
    /// Client certificates are required and checked against the CA.
    verify_peer: bool,
    /// Who may go on once TLS is up (`--tls-authz`).
    authz: Option<Arc<Authz>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.creds {
            Credentials::X509(_) => "x509",
            Credentials::Psk(_) => "psk",
        };
        f.debug_struct("Tls")
            .field("mode", &self.mode)
            .field("credentials", &kind)
            .field("verify_peer", &self.verify_peer)
            .field("authz", &self.authz)
            .finish()
    }
}

impl Tls {
    /// Loads `dir/server-cert.pem` and `dir/server-key.pem`; with `verify_peer`, clients must
    /// present a certificate that chains to `dir/ca-cert.pem`.
    pub fn from_dir(mode: TlsMode, dir: &Path, verify_peer: bool) -> Result<Self> {
        Ok(Tls {
            mode,
            creds: Credentials::X509(Arc::new(x509::server_config(dir, verify_peer)?)),
            verify_peer,
            authz: None,
        })
    }

    /// Loads nbdkit's TLS-PSK key file: one `username:hexkey` line per client (as GnuTLS'
    /// `psktool` writes it, and as libnbd's `tls-psk-file` reads it). A client must name one
    /// of the users (libnbd's `tls-username`) and prove it holds the key.
    pub fn from_psk_file(mode: TlsMode, path: &Path) -> Result<Self> {
        Ok(Tls {
            mode,
            creds: Credentials::Psk(psk::server_context(path)?),
            verify_peer: false,
            authz: None,
        })
    }

    /// Lets on only the clients `authz` allows (`--tls-authz`, as qemu-nbd's): once the TLS
    /// handshake is done, the subject DN of the client's certificate (or the user name of its
    /// pre-shared key) is looked up in it, and a client it does not allow is logged and
    /// disconnected. It needs TLS required (`TlsMode::Require`: a plain client would skip the
    /// check) and, with certificates, client certificates verified against the CA
    /// (`verify_peer`); otherwise [`Error::Config`].
    pub fn with_authz(mut self, authz: Authz) -> Result<Self> {
        if self.mode != TlsMode::Require {
            return Err(Error::Config(
                "TLS authorization needs TLS required (--tls=require)".into(),
            ));
        }
        if !self.is_psk() && !self.verify_peer {
            return Err(Error::Config(
                "TLS authorization of certificates needs them verified (--tls-verify-peer)".into(),
            ));
        }
        self.authz = Some(Arc::new(authz));
        Ok(self)
    }

    /// The authorization list, if one was given.
    pub fn authz(&self) -> Option<&Authz> {
        self.authz.as_deref()
    }

    /// True for pre-shared keys, false for certificates.
    pub fn is_psk(&self) -> bool {
        matches!(self.creds, Credentials::Psk(_))
    }

    /// A new server session with these credentials.
    pub(crate) fn session(&self) -> std::io::Result<Session> {
        match &self.creds {
            Credentials::X509(config) => Session::x509(config.clone()),
            Credentials::Psk(ctx) => Session::psk(ctx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_missing_files_are_named() {
        assert_eq!("require".parse::<TlsMode>(), Ok(TlsMode::Require));
        assert!("maybe".parse::<TlsMode>().is_err());
        let e = Tls::from_dir(TlsMode::On, Path::new("/nonexistent-dir"), false).unwrap_err();
        assert!(e.to_string().contains("server-cert.pem"), "{e}");
        let e = Tls::from_psk_file(TlsMode::On, Path::new("/nonexistent.psk")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent.psk"), "{e}");
    }
}
