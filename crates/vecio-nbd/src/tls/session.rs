//! One TLS server session, whichever library runs it: rustls for certificates, OpenSSL for
//! pre-shared keys. Both are driven the same way, as a state machine between the socket and the
//! connection: ciphertext in from the socket ([`Session::read_tls`]), plaintext out
//! ([`Session::read_plain`]), plaintext in ([`Session::write_plain`]), ciphertext out
//! ([`Session::write_tls`]). Nothing here waits: on a non-blocking socket `WouldBlock` means
//! the socket has to wait, never TLS.

use std::io::{self, Read, Write};
use std::sync::Arc;

use super::psk_session::PskSession;

/// A TLS server session.
pub(crate) enum Session {
    /// A certificate session (rustls).
    X509(Box<rustls::ServerConnection>),
    /// A pre-shared key session (OpenSSL).
    Psk(Box<PskSession>),
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Session::X509(_) => "Session::X509",
            Session::Psk(_) => "Session::Psk",
        })
    }
}

impl Session {
    /// A certificate session with `config`.
    pub(crate) fn x509(config: Arc<rustls::ServerConfig>) -> io::Result<Self> {
        let conn = rustls::ServerConnection::new(config).map_err(io::Error::other)?;
        Ok(Session::X509(Box::new(conn)))
    }

    /// A pre-shared key session in `ctx`.
    pub(crate) fn psk(ctx: &openssl::ssl::SslContext) -> io::Result<Self> {
        Ok(Session::Psk(Box::new(PskSession::new(ctx)?)))
    }

    /// Runs the server handshake on a blocking socket (bounded by its timeouts). On failure
    /// the client gets the alert that says why, as far as the socket takes it.
    pub(crate) fn handshake<S: Read + Write>(&mut self, sock: &mut S) -> io::Result<()> {
        match self {
            Session::X509(tls) => {
                while tls.is_handshaking() {
                    if let Err(e) = tls.complete_io(sock) {
                        let _ = tls.write_tls(sock);
                        return Err(e);
                    }
                }
                Ok(())
            }
            Session::Psk(tls) => tls.handshake(sock),
        }
    }

    /// Reads ciphertext from `sock` (one `read(2)`); 0 at the socket's end.
    pub(crate) fn read_tls<S: Read>(&mut self, sock: &mut S) -> io::Result<usize> {
        match self {
            Session::X509(tls) => tls.read_tls(sock),
            Session::Psk(tls) => tls.read_tls(sock),
        }
    }

    /// Decrypts what [`read_tls`](Self::read_tls) brought; a broken record or a fatal alert is
    /// `InvalidData`.
    pub(crate) fn process(&mut self) -> io::Result<()> {
        match self {
            Session::X509(tls) => tls
                .process_new_packets()
                .map(|_| ())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
            // OpenSSL decrypts as plaintext is asked for.
            Session::Psk(_) => Ok(()),
        }
    }

    /// Decrypted plaintext into `buf`: `WouldBlock` when none is ready, 0 once the client sent
    /// `close_notify`.
    pub(crate) fn read_plain(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Session::X509(tls) => tls.reader().read(buf),
            Session::Psk(tls) => tls.read_plain(buf),
        }
    }

    /// Encrypts `buf` into records held for the socket; takes all of it.
    pub(crate) fn write_plain(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Session::X509(tls) => tls.writer().write(buf),
            Session::Psk(tls) => tls.write_plain(buf),
        }
    }

    /// Records wait for the socket.
    pub(crate) fn wants_write(&self) -> bool {
        match self {
            Session::X509(tls) => tls.wants_write(),
            Session::Psk(tls) => tls.wants_write(),
        }
    }

    /// Writes held records to `sock` (one `write(2)`).
    pub(crate) fn write_tls<S: Write>(&mut self, sock: &mut S) -> io::Result<usize> {
        match self {
            Session::X509(tls) => tls.write_tls(sock),
            Session::Psk(tls) => tls.write_tls(sock),
        }
    }

    /// Plaintext is ready without reading the socket (the socket may not be readable).
    pub(crate) fn has_plaintext(&mut self) -> bool {
        match self {
            Session::X509(tls) => tls
                .process_new_packets()
                .is_ok_and(|s| s.plaintext_bytes_to_read() > 0),
            Session::Psk(tls) => tls.has_plaintext(),
        }
    }

    /// The protocol version and cipher suite, for logs ("TLSv1.3 TLS_AES_128_GCM_SHA256").
    pub(crate) fn describe(&self) -> String {
        match self {
            Session::X509(tls) => match (tls.protocol_version(), tls.negotiated_cipher_suite()) {
                (Some(v), Some(c)) => format!("{v:?} {:?}", c.suite()),
                _ => "handshaking".to_string(),
            },
            Session::Psk(tls) => tls.describe(),
        }
    }

    /// Who the client proved to be: the subject DN of its certificate (see `dn.rs`) or the
    /// user name of its pre-shared key; `None` when it showed neither.
    pub(crate) fn identity(&self) -> Option<String> {
        match self {
            Session::X509(tls) => super::dn::subject(tls.peer_certificates()?.first()?),
            Session::Psk(tls) => tls.identity(),
        }
    }

    /// Queues `close_notify`.
    pub(crate) fn close_notify(&mut self) {
        match self {
            Session::X509(tls) => tls.send_close_notify(),
            Session::Psk(tls) => tls.close_notify(),
        }
    }
}
