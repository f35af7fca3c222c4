//! One connection's transmission phase.
//!
//! The loop, on one thread with one [`vecio::Queue`] over its own engine:
//!
//! 1. read every request the socket has (non-blocking), validate it, push its read or write
//!    to the queue and submit it at once (one `io_uring_enter` on the uring engine), so the
//!    disk starts on it while the next ones are read; many stay in flight;
//! 2. submit what is left (a retried write) with the wait below;
//! 3. reap completions and queue their replies, in completion order (replies carry the
//!    client's cookie);
//! 4. send replies with as few `writev` calls as the socket allows;
//! 5. wait: while anything is in flight, on the I/O and (when more requests fit) the socket
//!    in one wait: a poll op on the socket in the connection's own ring (`Queue::watch`), or,
//!    on engines without a ring, short waits on the I/O with the socket read between; when
//!    nothing is in flight, on the socket alone.
//!
//! The reads and writes and their completions are `conn/disk.rs`'s, requests with a payload
//! `conn/payload.rs`'s, and the replies `conn/reply.rs`'s.
//!
//! Requests in flight are never left waiting on the client: a completion always ends the
//! wait, and its reply goes out at once. That matters beyond this connection: an aligned
//! direct request in flight holds a shared range lock on the file that every connection
//! shares, and another connection's unaligned write waits for it, so that wait stays bounded
//! by the disk, never by a slow or stalled client. The commands served by a blocking call
//! (flush, trim, write zeroes, block status, cache) first drain this connection's queue.

use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::PollFlags;
use vecio::{AlignedBuf, BufPool, Completion, OwnedBuf, Queue};

use crate::check::{check, Limits};
use crate::error::{Error, Malformed, Result};
use crate::export::Export;
use crate::handshake::Session;
use crate::ops;
use crate::proto::{self, CmdFlags, Command, Errno, Extent, Request};
use crate::recv::{Inbox, Msg, Recv};
use crate::send::Outbox;
use crate::stream::{wait, ShutdownHandle, Stream};

mod disk;
mod payload;
mod reply;
use disk::request_buffers;
use reply::is_disconnect;

/// Longest wait on the disk before looking at the socket again, while more requests fit, on
/// engines that cannot watch the socket in their ring.
const SOCKET_LOOK: std::time::Duration = std::time::Duration::from_micros(50);

/// Bytes of request buffers a connection may hold before it stops reading requests (one
/// more request of up to the maximum payload may still be admitted).
const HELD_LIMIT: usize = 32 << 20;
/// Requests in flight per connection, at most.
const MAX_IN_FLIGHT: usize = 128;
/// How long replies may take to leave once the connection is closing.
const CLOSE_GRACE: Duration = Duration::from_secs(10);

/// Why the connection stops taking requests.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Closing {
    /// `NBD_CMD_DISC`.
    Disc,
    /// The client closed its end (replies are still sent: it may only have shut down its
    /// writing side).
    Eof,
    /// The client is gone: replies cannot be delivered.
    Gone,
    /// The client broke the protocol.
    Violation(Malformed),
    /// The server is shutting down.
    Shutdown,
}

/// A request whose I/O is in flight.
struct Pending {
    req: Request,
    cmd: Command,
    /// Bytes of a write already done by earlier attempts.
    done: u32,
    retries: u8,
    /// The extents of a sparse read (holes answered as hole chunks).
    extents: Option<Vec<Extent>>,
}

/// One client connection in transmission.
pub(crate) struct Conn {
    id: u64,
    stream: Stream,
    export: Arc<Export>,
    session: Session,
    limits: Limits,
    shutdown: ShutdownHandle,
    queue: Queue,
    rx: Inbox,
    tx: Outbox,
    bufs: BufPool,
    pending: Vec<Option<Pending>>,
    free_slots: Vec<usize>,
    in_flight: usize,
    closing: Option<Closing>,
    reaped: Vec<Completion>,
    sent: Vec<AlignedBuf>,
    /// Emptied buffer lists of finished requests, for the next ones.
    spare: Vec<Vec<OwnedBuf>>,
}

impl Conn {
    /// A connection over `stream`, after a handshake that agreed on `session`.
    pub(crate) fn new(
        id: u64,
        stream: Stream,
        export: Arc<Export>,
        session: Session,
        engine: vecio::EngineKind,
        shutdown: ShutdownHandle,
    ) -> Result<Self> {
        let plain = !stream.is_tls();
        let mut queue = Queue::new(engine.build()?);
        let bufs = request_buffers(id, &export, &mut queue);
        let limits = Limits {
            size: export.size(),
            read_only: export.is_read_only(),
            framing: session.framing,
            meta: session.meta.is_some(),
        };
        Ok(Conn {
            id,
            stream,
            export,
            session,
            limits,
            shutdown,
            queue,
            rx: Inbox::new(session.framing, plain),
            tx: Outbox::default(),
            bufs,
            pending: Vec::new(),
            free_slots: Vec::new(),
            in_flight: 0,
            closing: None,
            reaped: Vec::new(),
            sent: Vec::new(),
            spare: Vec::new(),
        })
    }

    fn sock_err(&self, source: std::io::Error) -> Error {
        Error::Socket {
            conn: self.id,
            source,
        }
    }

    /// Serves requests until the client disconnects, breaks the protocol, or shutdown;
    /// requests in flight are always finished and answered first.
    pub(crate) fn serve(mut self) -> Result<()> {
        self.stream
            .set_nonblocking(true)
            .map_err(|e| self.sock_err(e))?;
        let mut closing_since: Option<Instant> = None;
        let result = loop {
            if let Err(e) = self.step() {
                break Err(e);
            }
            let unsent = !self.tx.is_empty() || self.stream.wants_write();
            if self.closing.is_some() && self.in_flight == 0 && !unsent {
                break Ok(());
            }
            if self.in_flight > 0 {
                if let Err(e) = self.wait_io() {
                    break Err(e);
                }
                continue;
            }
            if let Some(c) = self.closing {
                let since = *closing_since.get_or_insert_with(Instant::now);
                if since.elapsed() > CLOSE_GRACE || c == Closing::Gone {
                    break Ok(());
                }
            }
            let read = self.closing.is_none() && (self.can_admit() || self.rx.in_payload());
            if read && (self.stream.buffered() || self.rx.holds_request()) {
                // TLS holds decrypted requests, or requests read while the connection could
                // take no more are still in the read buffer: no need to wait on the socket.
                continue;
            }
            let write = unsent;
            let timeout = self.closing.map(|_| Duration::from_millis(100));
            match wait(self.stream.as_fd(), read, write, &self.shutdown, timeout) {
                Ok(r) if r.shutdown && self.closing.is_none() => {
                    self.closing = Some(Closing::Shutdown)
                }
                Ok(r) if r.readable => self.rx.socket_ready(),
                Ok(_) => {}
                Err(e) => break Err(self.sock_err(e)),
            }
        };
        match self.closing {
            Some(Closing::Violation(reason)) => {
                tracing::warn!(conn = self.id, "closing: {reason}");
            }
            Some(c) => tracing::debug!(conn = self.id, "closing: {c:?}"),
            None => {}
        }
        let c = self.queue.engine_mut().counters();
        tracing::debug!(
            conn = self.id,
            ops = c.ops,
            syscalls = c.syscalls,
            fixed_buffer_ops = c.fixed_buffer_ops,
            "engine counters"
        );
        self.stream.close();
        result
    }

    /// One round: receive and dispatch (each request submitted as it is read), reap, send.
    fn step(&mut self) -> Result<()> {
        if self.shutdown.is_triggered() && self.closing.is_none() {
            self.closing = Some(Closing::Shutdown);
        }
        if self.queue.watch_fired().is_some() {
            self.rx.socket_ready();
        }
        self.receive()?;
        self.complete()?;
        self.send()
    }

    fn can_admit(&self) -> bool {
        self.bufs.held() < HELD_LIMIT && self.in_flight < MAX_IN_FLIGHT
    }

    /// Reads and dispatches requests while the socket has them and limits allow.
    fn receive(&mut self) -> Result<()> {
        while self.closing.is_none() && (self.can_admit() || self.rx.in_payload()) {
            let got = match self.rx.next(&mut self.stream) {
                Ok(Ok(got)) => got,
                Ok(Err(reason)) => {
                    self.closing = Some(match reason {
                        Malformed::Eof => Closing::Eof,
                        r => Closing::Violation(r),
                    });
                    return Ok(());
                }
                Err(e) if is_disconnect(&e) => {
                    self.closing = Some(Closing::Gone);
                    return Ok(());
                }
                Err(e) => return Err(self.sock_err(e)),
            };
            match got {
                Recv::Pending => return Ok(()),
                Recv::Eof => {
                    self.closing = Some(Closing::Eof);
                    return Ok(());
                }
                Recv::Msg(Msg::Header(req)) => self.header(req)?,
                Recv::Msg(Msg::Payload(req, buf)) => self.payload(req, buf)?,
                Recv::Msg(Msg::Discarded(req, error)) => self.reply_error(&req, error),
            }
            // What the request pushed goes to the kernel now, not after the rest of the
            // socket's requests are read: the disk starts on it while they are parsed. A
            // client's requests arrive together and the disk answers them together, so
            // without this the disk idled while the whole batch was read (43% of the time
            // at depth 32; +11% 4 KiB reads for +0.3 us of CPU a request, docs/results.md).
            // Nothing pushed: no system call.
            self.queue.submit()?;
        }
        Ok(())
    }

    /// A new request header.
    fn header(&mut self, req: Request) -> Result<()> {
        tracing::trace!(
            conn = self.id,
            cmd = proto::cmd_name(req.kind),
            offset = req.offset,
            len = req.len,
            flags = req.flags,
            "request"
        );
        let verdict = check(&req, &self.limits);
        let payload = req.payload_len(self.session.framing);
        if payload > 0 {
            self.start_payload(req, payload, verdict);
            return Ok(());
        }
        let cmd = match verdict {
            Ok(cmd) => cmd,
            Err(e) => {
                self.reply_error(&req, e);
                return Ok(());
            }
        };
        match cmd {
            Command::Disc => self.closing = Some(Closing::Disc),
            Command::Read | Command::Write if req.len == 0 => self.reply_ok(&req),
            Command::Read => self.read(req),
            _ => self.blocking(req, cmd)?,
        }
        Ok(())
    }

    /// Commands served by a blocking call, after this connection's I/O in flight is done.
    fn blocking(&mut self, req: Request, cmd: Command) -> Result<()> {
        self.drain()?;
        let (e, off, len, flags) = (&*self.export, req.offset, req.len, req.cmd_flags());
        let result = match cmd {
            Command::Flush => ops::flush(e),
            Command::Trim if len == 0 => Ok(()),
            Command::Trim => ops::trim(e, off, len, flags),
            Command::WriteZeroes if len == 0 => Ok(()),
            Command::WriteZeroes => ops::write_zeroes(e, off, len, flags),
            Command::Cache => ops::cache(e, off, len),
            Command::BlockStatus => {
                match ops::block_status(e, off, len, flags.contains(CmdFlags::REQ_ONE)) {
                    Ok(extents) => {
                        let id = self.session.meta.unwrap_or(0);
                        let mut out = Vec::with_capacity(48 + 16 * extents.len());
                        let framing = self.session.framing;
                        proto::encode_block_status(&mut out, framing, (&req).into(), id, &extents);
                        self.tx.push(&out, None);
                        return Ok(());
                    }
                    Err(err) => Err(err),
                }
            }
            _ => Err(Errno::EINVAL),
        };
        match result {
            Ok(()) => self.reply_ok(&req),
            Err(err) => self.reply_error(&req, err),
        }
        Ok(())
    }

    /// Waits for at least one completion and handles what is ready. While the connection could
    /// take more requests, the wait on the disk is bounded (`SOCKET_LOOK`), so requests that
    /// arrive meanwhile are read and go to the disk beside those in flight, instead of waiting
    /// for a completion; the device sees the client's queue depth.
    fn wait_io(&mut self) -> Result<()> {
        let read = self.closing.is_none() && (self.can_admit() || self.rx.in_payload());
        // Replies the socket could not take yet (it was full).
        let unsent = !self.tx.is_empty() || self.stream.wants_write();
        if !read && !unsent {
            self.queue.submit_and_wait(1)?;
            // The socket was not watched: it may have requests by now.
            self.rx.socket_ready();
        } else if read && (self.stream.buffered() || self.rx.holds_request()) {
            // Requests wait in TLS or the read buffer already: take them first.
            self.queue.submit()?;
        } else if !unsent && self.queue.watch(self.stream.as_fd(), PollFlags::IN)? {
            // One wait for both: a completion, or the socket readable (a poll op in the ring).
            // A fired watch is armed again by the next wait (`watch` re-arms unless armed).
            self.queue.submit_and_wait_any()?;
        } else {
            // Replies wait for room in the socket, or the engine cannot watch it: look at the
            // socket again after a short wait on the disk.
            self.queue.submit_and_wait_timeout(SOCKET_LOOK)?;
            self.rx.socket_ready();
        }
        self.complete()
    }

    /// Finishes everything in flight.
    fn drain(&mut self) -> Result<()> {
        while self.in_flight > 0 {
            self.queue.submit_and_wait(self.queue.len())?;
            self.complete()?;
        }
        Ok(())
    }
}
