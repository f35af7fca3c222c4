//! Receiving requests on a non-blocking socket: request headers are cut out of a read buffer;
//! a write's payload goes into its own aligned buffer (large payloads are read straight into
//! it), or is skipped when the write is refused. Nothing here ever blocks, so a client that
//! sends slowly holds only its own connection, never another's range locks.

use std::io::{self, Read};

use vecio::AlignedBuf;

use crate::error::Malformed;
use crate::proto::{Errno, Framing, Request, EXTENDED_REQUEST_LEN, REQUEST_LEN};
use crate::stream::Stream;

/// Size of the read buffer request headers (and small payloads) arrive in.
const INBUF: usize = 256 << 10;

/// A message cut out of the byte stream.
#[derive(Debug)]
pub(crate) enum Msg {
    /// A request header. For a request with a payload (a write; with extended headers, any
    /// with `NBD_CMD_FLAG_PAYLOAD_LEN`), the caller must call [`Inbox::start_payload`] or
    /// [`Inbox::start_discard`] before asking for the next message.
    Header(Request),
    /// A request and its whole payload.
    Payload(Request, AlignedBuf),
    /// A refused request whose payload was skipped; the error to reply with.
    Discarded(Request, Errno),
}

/// What a receive attempt found.
#[derive(Debug)]
pub(crate) enum Recv {
    /// A complete message.
    Msg(Msg),
    /// Nothing complete yet; the socket has no more bytes for now.
    Pending,
    /// The client closed the connection between requests.
    Eof,
}

/// Where the stream is.
enum State {
    Header,
    Payload {
        req: Request,
        buf: AlignedBuf,
        filled: usize,
    },
    Discard {
        req: Request,
        left: u64,
        error: Errno,
    },
}

/// The receiving side of a connection.
pub(crate) struct Inbox {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    state: State,
    /// Length of a request header: compact or extended, as negotiated.
    header_len: usize,
    framing: Framing,
    /// A short read means the socket had nothing more (plain sockets; not under TLS, whose
    /// reads return a record at a time).
    short_read_drains: bool,
    /// The last read from the socket was short: reading again before the socket is reported
    /// readable ([`socket_ready`](Self::socket_ready)) would only return `EAGAIN`.
    drained: bool,
}

impl Inbox {
    /// An empty inbox for requests framed as `framing` says. With `short_read_drains` (a
    /// plain socket), a read that returns less than it asked for is taken to mean the socket
    /// is empty: no read is tried again, to meet `EAGAIN`, until
    /// [`socket_ready`](Self::socket_ready) says the socket is readable (the connection's wait
    /// watches it whenever it wants requests, so nothing that arrives is missed).
    pub(crate) fn new(framing: Framing, short_read_drains: bool) -> Self {
        Inbox {
            buf: vec![0u8; INBUF].into_boxed_slice(),
            start: 0,
            end: 0,
            state: State::Header,
            header_len: framing.request_len(),
            framing,
            short_read_drains,
            drained: false,
        }
    }

    /// The socket may have bytes again (a wait saw it readable, or did not look).
    pub(crate) fn socket_ready(&mut self) {
        self.drained = false;
    }

    /// One read from the socket into `buf`, noting a short one.
    fn read(&mut self, stream: &mut Stream, buf_end: usize) -> io::Result<usize> {
        if self.drained {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let want = self.buf.len() - buf_end;
        let n = stream.read(&mut self.buf[buf_end..])?;
        self.drained = self.short_read_drains && n > 0 && n < want;
        Ok(n)
    }

    /// Bytes received and not yet handed out as a message.
    fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// True when a whole request header waits in the read buffer (read from the socket while
    /// the connection could take no more requests): the socket may have nothing more to say.
    pub(crate) fn holds_request(&self) -> bool {
        matches!(self.state, State::Header) && self.buffered() >= self.header_len
    }

    /// True while a write's payload is being received or skipped.
    pub(crate) fn in_payload(&self) -> bool {
        !matches!(self.state, State::Header)
    }

    /// True when a message was started and not finished.
    fn mid_message(&self) -> bool {
        !matches!(self.state, State::Header) || self.buffered() > 0
    }

    /// Receives the payload of `req` into `buf` (of exactly its payload's length).
    pub(crate) fn start_payload(&mut self, req: Request, buf: AlignedBuf) {
        self.state = State::Payload {
            req,
            buf,
            filled: 0,
        };
    }

    /// Skips the payload of the refused request `req`, to be answered with `error`.
    pub(crate) fn start_discard(&mut self, req: Request, error: Errno) {
        self.state = State::Discard {
            req,
            left: req.payload_len(self.framing),
            error,
        };
    }

    /// Cuts the next request header out of the read buffer, if it is all there.
    fn header(&mut self) -> Option<Result<Request, Malformed>> {
        if self.buffered() < self.header_len {
            return None;
        }
        let at = self.start;
        let h = self.buf.get(at..at + self.header_len)?;
        let r = match self.framing {
            Framing::Extended => {
                let mut b = [0u8; EXTENDED_REQUEST_LEN];
                b.copy_from_slice(h);
                Request::decode_extended(&b)
            }
            _ => {
                let mut b = [0u8; REQUEST_LEN];
                b.copy_from_slice(h);
                Request::decode(&b)
            }
        };
        self.start += self.header_len;
        Some(r)
    }

    /// Reads into the free end of the buffer; `Ok(0)` is the end of the stream.
    fn fill(&mut self, stream: &mut Stream) -> io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 && self.buf.len() - self.end < self.header_len {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        loop {
            match self.read(stream, self.end) {
                Ok(n) => {
                    self.end += n;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The next complete message, reading from the socket as far as it has bytes.
    /// A wrong request magic is a [`Malformed`] error (the stream cannot be resynchronised);
    /// the end of the stream in the middle of a message is [`Malformed::Eof`].
    pub(crate) fn next(&mut self, stream: &mut Stream) -> io::Result<Result<Recv, Malformed>> {
        loop {
            match &mut self.state {
                State::Header => {
                    if let Some(r) = self.header() {
                        return Ok(r.map(|r| Recv::Msg(Msg::Header(r))));
                    }
                }
                State::Payload { buf, filled, .. } => {
                    let take = (buf.len() - *filled).min(self.end - self.start);
                    buf[*filled..*filled + take]
                        .copy_from_slice(&self.buf[self.start..self.start + take]);
                    *filled += take;
                    self.start += take;
                    // Large remainders go straight into the payload buffer, not through ours.
                    while *filled < buf.len() && buf.len() - *filled >= INBUF / 2 {
                        if self.drained {
                            return Ok(Ok(Recv::Pending));
                        }
                        let want = buf.len() - *filled;
                        match stream.read(&mut buf[*filled..]) {
                            Ok(0) => return Ok(Err(Malformed::Eof)),
                            Ok(n) => {
                                *filled += n;
                                self.drained = self.short_read_drains && n < want;
                            }
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                                return Ok(Ok(Recv::Pending))
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    if *filled == buf.len() {
                        if let State::Payload { req, buf, .. } =
                            std::mem::replace(&mut self.state, State::Header)
                        {
                            return Ok(Ok(Recv::Msg(Msg::Payload(req, buf))));
                        }
                    }
                }
                State::Discard { req, left, error } => {
                    let take = (*left).min((self.end - self.start) as u64) as usize;
                    self.start += take;
                    *left -= take as u64;
                    if *left == 0 {
                        let msg = Msg::Discarded(*req, *error);
                        self.state = State::Header;
                        return Ok(Ok(Recv::Msg(msg)));
                    }
                }
            }
            match self.fill(stream) {
                Ok(0) if !self.mid_message() => return Ok(Ok(Recv::Eof)),
                Ok(0) => return Ok(Err(Malformed::Eof)),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Ok(Recv::Pending)),
                Err(e) => return Err(e),
            }
        }
    }
}
