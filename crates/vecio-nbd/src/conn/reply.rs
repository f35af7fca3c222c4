//! A connection's replies: queued in completion order (simple or structured, as negotiated),
//! sent with as few `writev` calls as the socket takes; a client that has gone gets none.

use vecio::AlignedBuf;

use super::{Closing, Conn};
use crate::error::Result;
use crate::proto::{self, Command, Errno, Framing, Request};

impl Conn {
    /// Sends what the socket takes of the queued replies; a client that has gone closes the
    /// connection's replies (what is in flight still finishes).
    pub(super) fn send(&mut self) -> Result<()> {
        let r = self.tx.send(&mut self.stream, &mut self.sent);
        for b in self.sent.drain(..) {
            self.bufs.put(b);
        }
        match r {
            Ok(_) => Ok(()),
            Err(e) if is_disconnect(&e) => {
                // Nobody to answer: finish what is in flight, drop the replies.
                self.closing = Some(Closing::Gone);
                self.tx.clear(&mut self.sent);
                for b in self.sent.drain(..) {
                    self.bufs.put(b);
                }
                Ok(())
            }
            Err(e) => Err(self.sock_err(e)),
        }
    }

    /// Queues a success reply without data: a final `NONE` chunk where the framing asks for
    /// chunks (extended headers always, structured replies for reads), else a simple reply.
    pub(super) fn reply_ok(&mut self, req: &Request) {
        if self.closing == Some(Closing::Gone) {
            return;
        }
        let framing = self.session.framing;
        let chunk = match framing {
            Framing::Extended => true,
            Framing::Structured => req.command() == Ok(Command::Read),
            Framing::Simple => false,
        };
        if chunk {
            self.tx.push(&proto::none_chunk(framing, req.into()), None);
        } else {
            self.tx.push(&proto::simple_reply(None, req.cookie), None);
        }
    }

    /// Queues a read's reply with its bytes in `buf` (one data chunk with chunked framing).
    pub(super) fn reply_read(&mut self, req: &Request, buf: AlignedBuf) {
        if self.closing == Some(Closing::Gone) {
            self.bufs.put(buf);
            return;
        }
        let framing = self.session.framing;
        if framing.chunks() {
            let len = buf.len() as u32;
            let h = proto::offset_data_header(framing, req.into(), req.offset, len, true);
            self.tx.push(&h, Some(buf));
        } else {
            self.tx
                .push(&proto::simple_reply(None, req.cookie), Some(buf));
        }
    }

    /// Queues an error reply with `error`.
    pub(super) fn reply_error(&mut self, req: &Request, error: Errno) {
        tracing::debug!(
            conn = self.id,
            cmd = proto::cmd_name(req.kind),
            offset = req.offset,
            len = req.len,
            %error,
            "request failed"
        );
        if self.closing == Some(Closing::Gone) {
            return;
        }
        let framing = self.session.framing;
        if framing.chunks() {
            let mut out = Vec::with_capacity(64);
            let msg = format!("{} failed", proto::cmd_name(req.kind));
            proto::encode_error_chunk(&mut out, framing, req.into(), error, &msg);
            self.tx.push(&out, None);
        } else {
            self.tx
                .push(&proto::simple_reply(Some(error), req.cookie), None);
        }
    }
}

/// The NBD error for a vecio error.
pub(super) fn vecio_errno(e: &vecio::Error) -> Errno {
    match e {
        vecio::Error::Invalid { .. } => Errno::EINVAL,
        e => Errno::from_os(e.raw_os_error().unwrap_or(libc::EIO)),
    }
}

/// True for the errors that mean the client is gone.
pub(super) fn is_disconnect(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        BrokenPipe | ConnectionReset | ConnectionAborted | UnexpectedEof | NotConnected
    )
}
