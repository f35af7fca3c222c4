//! X.509 certificates for servers measured over TLS, made with `openssl`
//! (`vecio_host::certs`) in a scratch directory (docs/report.md, "The harness").

use std::path::{Path, PathBuf};

use anyhow::Result;
use vecio_host::certs::{self, Role};

pub use vecio_host::certs::openssl_missing;

/// A CA and a server certificate signed by it.
#[derive(Debug, Clone)]
pub struct Certificates {
    server: PathBuf,
    client: PathBuf,
}

impl Certificates {
    /// Makes `dir/server` (`ca-cert.pem`, `server-cert.pem`, `server-key.pem`; the CA's key
    /// stays in `dir/ca`) and `dir/client` (`ca-cert.pem`). Fails with openssl's message.
    pub fn make(dir: &Path) -> Result<Certificates> {
        let (ca, server, client) = (dir.join("ca"), dir.join("server"), dir.join("client"));
        certs::ca(&ca, "vecio bench CA")?;
        certs::cert(&ca, &server, Role::Server, "/CN=localhost", &[])?;
        certs::copy_ca(&ca, &client)?;
        Ok(Certificates { server, client })
    }

    /// The server's directory (`--tls-certificates` of nbdkit and vecio nbd, `dir=` of
    /// qemu's `tls-creds-x509`).
    pub fn server_dir(&self) -> &Path {
        &self.server
    }

    /// The client's directory (libnbd's `tls-certificates`): the CA's certificate.
    pub fn client_dir(&self) -> &Path {
        &self.client
    }
}
