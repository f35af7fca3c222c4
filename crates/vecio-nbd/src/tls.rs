//! TLS for NBD (`NBD_OPT_STARTTLS`): the server's certificate and key, and optionally the CA
//! that client certificates must chain to, in the layout nbdkit and qemu use
//! (`ca-cert.pem`, `server-cert.pem`, `server-key.pem` in one directory).
//!
//! rustls does the TLS, with the `ring` provider. TLS-PSK (nbdkit's `--tls-psk`) is not
//! offered: rustls has no external pre-shared keys in its stable API (see docs/nbd.md).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

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

/// The TLS settings of a server.
#[derive(Clone, Debug)]
pub struct Tls {
    /// Off, offered or required.
    pub mode: TlsMode,
    /// The rustls configuration every TLS connection shares.
    pub config: Arc<ServerConfig>,
}

impl Tls {
    /// Loads `dir/server-cert.pem` and `dir/server-key.pem`; with `verify_peer`, clients must
    /// present a certificate that chains to `dir/ca-cert.pem`.
    pub fn from_dir(mode: TlsMode, dir: &Path, verify_peer: bool) -> Result<Self> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let certs = load_certs(&dir.join("server-cert.pem"))?;
        let key_path = dir.join("server-key.pem");
        let key = PrivateKeyDer::from_pem_file(&key_path).map_err(|e| pem_err(&key_path, e))?;
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Config(format!("TLS: {e}")))?;
        let builder = if verify_peer {
            let ca_path = dir.join("ca-cert.pem");
            let mut roots = RootCertStore::empty();
            for c in load_certs(&ca_path)? {
                roots
                    .add(c)
                    .map_err(|e| Error::Config(format!("{}: {e}", ca_path.display())))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                .build()
                .map_err(|e| Error::Config(format!("TLS client verifier: {e}")))?;
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let config = builder
            .with_single_cert(certs, key)
            .map_err(|e| Error::Config(format!("{}: {e}", dir.display())))?;
        Ok(Tls {
            mode,
            config: Arc::new(config),
        })
    }
}

fn pem_err(path: &Path, e: rustls::pki_types::pem::Error) -> Error {
    Error::Config(format!("{}: {e}", path.display()))
}

fn load_certs(path: &PathBuf) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem_err(path, e))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| pem_err(path, e))?;
    if certs.is_empty() {
        return Err(Error::Config(format!("{}: no certificate", path.display())));
    }
    Ok(certs)
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
    }
}
