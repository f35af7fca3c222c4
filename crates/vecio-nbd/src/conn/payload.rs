//! Requests with a payload: a write's bytes, and (extended headers) the block-status filter
//! naming the contexts to answer for; what is refused is skipped, never read into memory.

use vecio::AlignedBuf;

use super::{Closing, Conn};
use crate::check::check;
use crate::error::{Malformed, Result};
use crate::export::MAX_PAYLOAD;
use crate::proto::{BlockStatusFilter, CmdFlags, Command, Errno, Framing, Request};

impl Conn {
    /// A request with `len` bytes of payload: received into a buffer when it was accepted
    /// (a write, or a block-status filter), skipped and answered with its error otherwise.
    /// An extended-header payload over the maximum closes the connection, as the protocol
    /// allows, rather than being read.
    pub(super) fn start_payload(
        &mut self,
        req: Request,
        len: u64,
        verdict: Result<Command, Errno>,
    ) {
        if self.session.framing == Framing::Extended && len > u64::from(MAX_PAYLOAD) {
            self.closing = Some(Closing::Violation(Malformed::PayloadTooLong(len)));
            return;
        }
        match verdict {
            Ok(Command::Write | Command::BlockStatus) => {
                let buf = self.bufs.get(len as usize);
                self.rx.start_payload(req, buf);
            }
            Ok(_) => self.rx.start_discard(req, Errno::EINVAL),
            Err(e) => self.rx.start_discard(req, e),
        }
    }

    /// A request whose payload has arrived.
    pub(super) fn payload(&mut self, req: Request, buf: AlignedBuf) -> Result<()> {
        if req.command() == Ok(Command::Write) {
            return self.push_write(req, buf, 0, 0);
        }
        let filter = BlockStatusFilter::decode(&buf);
        self.bufs.put(buf);
        // The one context this server has, named once: anything else is NBD_EINVAL.
        let effect = match filter {
            Some(f) if f.ids.len() == 1 && Some(f.ids[0]) == self.session.meta => Request {
                flags: req.flags & !CmdFlags::PAYLOAD_LEN.bits(),
                len: f.len,
                ..req
            },
            _ => {
                self.reply_error(&req, Errno::EINVAL);
                return Ok(());
            }
        };
        match check(&effect, &self.limits) {
            Ok(cmd) => self.blocking(effect, cmd),
            Err(e) => {
                self.reply_error(&req, e);
                Ok(())
            }
        }
    }
}
