//! An OpenSSL server session driven as a state machine: OpenSSL reads ciphertext from, and
//! writes records to, buffers in memory ([`MemIo`]); the session moves them to and from the
//! socket. That gives PSK sessions the same shape as rustls' (see [`super::Session`]).

use std::io::{self, Read, Write};

use openssl::ssl::{ErrorCode, Ssl, SslContext, SslStream};

/// Ciphertext buffered for OpenSSL: room for four full records.
const RX_CAPACITY: usize = 4 * (16 << 10) + 1024;

/// The memory OpenSSL reads from and writes to.
struct MemIo {
    /// Ciphertext from the socket; `rx[start..end]` is unread.
    rx: Box<[u8]>,
    start: usize,
    end: usize,
    /// Records for the socket; `tx[sent..]` is unsent.
    tx: Vec<u8>,
    sent: usize,
}

impl Read for MemIo {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.start == self.end {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.end - self.start);
        buf[..n].copy_from_slice(&self.rx[self.start..self.start + n]);
        self.start += n;
        Ok(n)
    }
}

impl Write for MemIo {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tx.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A pre-shared key session (OpenSSL).
pub(crate) struct PskSession {
    ssl: SslStream<MemIo>,
}

/// An OpenSSL failure as an I/O error: `WouldBlock` when it needs more ciphertext.
fn io_error(e: openssl::ssl::Error) -> io::Error {
    match e.code() {
        ErrorCode::WANT_READ | ErrorCode::WANT_WRITE => io::ErrorKind::WouldBlock.into(),
        _ => io::Error::new(io::ErrorKind::InvalidData, format!("TLS: {e}")),
    }
}

impl PskSession {
    /// A server session in `ctx`.
    pub(crate) fn new(ctx: &SslContext) -> io::Result<Self> {
        let ssl = Ssl::new(ctx).map_err(io::Error::other)?;
        let mem = MemIo {
            rx: vec![0; RX_CAPACITY].into_boxed_slice(),
            start: 0,
            end: 0,
            tx: Vec::new(),
            sent: 0,
        };
        let ssl = SslStream::new(ssl, mem).map_err(io::Error::other)?;
        Ok(PskSession { ssl })
    }

    /// The handshake on a blocking socket.
    pub(crate) fn handshake<S: Read + Write>(&mut self, sock: &mut S) -> io::Result<()> {
        loop {
            let res = self.ssl.accept();
            // Whatever OpenSSL wrote (its flight, or the alert on failure) goes out first.
            while self.wants_write() {
                self.write_tls(sock)?;
            }
            match res {
                Ok(()) => return Ok(()),
                Err(e) if e.code() == ErrorCode::WANT_READ => {
                    if self.read_tls(sock)? == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the client closed the connection in the TLS handshake",
                        ));
                    }
                }
                Err(e) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("TLS-PSK handshake: {e}"),
                    ))
                }
            }
        }
    }

    /// One `read(2)` of ciphertext into the buffer OpenSSL reads.
    pub(crate) fn read_tls<S: Read>(&mut self, sock: &mut S) -> io::Result<usize> {
        let m = self.ssl.get_mut();
        if m.start == m.end {
            (m.start, m.end) = (0, 0);
        } else if m.end == m.rx.len() {
            m.rx.copy_within(m.start..m.end, 0);
            (m.start, m.end) = (0, m.end - m.start);
        }
        if m.end == m.rx.len() {
            // Four records unread: OpenSSL has not asked for them yet.
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = sock.read(&mut m.rx[m.end..])?;
        m.end += n;
        Ok(n)
    }

    /// Decrypted plaintext: `WouldBlock` when none is ready, 0 after `close_notify`.
    pub(crate) fn read_plain(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        match self.ssl.ssl_read(buf) {
            Ok(n) => Ok(n),
            Err(e) if e.code() == ErrorCode::ZERO_RETURN => Ok(0),
            Err(e) => Err(io_error(e)),
        }
    }

    /// Encrypts all of `buf` into records held for the socket.
    pub(crate) fn write_plain(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.ssl.ssl_write(buf).map_err(io_error)
    }

    /// Records wait for the socket.
    pub(crate) fn wants_write(&self) -> bool {
        let m = self.ssl.get_ref();
        m.sent < m.tx.len()
    }

    /// One `write(2)` of held records.
    pub(crate) fn write_tls<S: Write>(&mut self, sock: &mut S) -> io::Result<usize> {
        let m = self.ssl.get_mut();
        let n = sock.write(&m.tx[m.sent..])?;
        m.sent += n;
        if m.sent == m.tx.len() {
            m.tx.clear();
            m.sent = 0;
        }
        Ok(n)
    }

    /// A whole record is decrypted and waiting (the socket may have nothing more).
    pub(crate) fn has_plaintext(&mut self) -> bool {
        if self.ssl.ssl().pending() > 0 {
            return true;
        }
        let m = self.ssl.get_ref();
        m.start < m.end && self.ssl.ssl_peek(&mut [0u8; 1]).is_ok_and(|n| n > 0)
    }

    /// The protocol version and cipher, for logs.
    pub(crate) fn describe(&self) -> String {
        let ssl = self.ssl.ssl();
        let cipher = ssl.current_cipher().map_or("none", |c| c.name());
        format!("{} {cipher} (PSK)", ssl.version_str())
    }

    /// The user name the client's key was found under.
    pub(crate) fn identity(&self) -> Option<String> {
        let id = self.ssl.ssl().ex_data(super::psk::identity_index()?)?;
        Some(String::from_utf8_lossy(id).into_owned())
    }

    /// Queues `close_notify`.
    pub(crate) fn close_notify(&mut self) {
        let _ = self.ssl.shutdown();
    }
}
