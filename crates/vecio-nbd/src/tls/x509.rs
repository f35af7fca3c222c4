//! Certificate credentials: the rustls server configuration from nbdkit's and qemu's directory
//! layout.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

use crate::error::{Error, Result};

/// `dir/server-cert.pem` (the chain) and `dir/server-key.pem`; with `verify_peer`, client
/// certificates must chain to `dir/ca-cert.pem`.
pub(super) fn server_config(dir: &Path, verify_peer: bool) -> Result<ServerConfig> {
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
    builder
        .with_single_cert(certs, key)
        .map_err(|e| Error::Config(format!("{}: {e}", dir.display())))
}

fn pem_err(path: &Path, e: rustls::pki_types::pem::Error) -> Error {
    Error::Config(format!("{}: {e}", path.display()))
}

fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem_err(path, e))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| pem_err(path, e))?;
    if certs.is_empty() {
        return Err(Error::Config(format!("{}: no certificate", path.display())));
    }
    Ok(certs)
}
