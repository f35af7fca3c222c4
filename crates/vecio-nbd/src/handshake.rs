//! The fixed newstyle handshake: greeting, client flags, then options until the client
//! chooses the export (`NBD_OPT_GO` or `NBD_OPT_EXPORT_NAME`) or leaves (`NBD_OPT_ABORT`).
//!
//! Supported: `EXPORT_NAME`, `ABORT`, `LIST`, `INFO`, `GO` (with `NBD_INFO_EXPORT`, `NAME`,
//! `DESCRIPTION`, `BLOCK_SIZE`), `STRUCTURED_REPLY`, `EXTENDED_HEADERS` (which takes
//! precedence: `STRUCTURED_REPLY` after it is `NBD_REP_ERR_EXT_HEADER_REQD`),
//! `LIST_META_CONTEXT` and `SET_META_CONTEXT` for `base:allocation`, and `STARTTLS` when the server has TLS (refused
//! with `NBD_REP_ERR_POLICY` otherwise; under `--tls=require` every other option but `ABORT`
//! gets `NBD_REP_ERR_TLS_REQD` until TLS is on). Anything else is `NBD_REP_ERR_UNSUP`. Once shutdown starts, options other than `ABORT` get
//! `NBD_REP_ERR_SHUTDOWN`.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Malformed;
use crate::export::Export;
use crate::exports::Exports;
use crate::proto::TransmissionFlags;
use crate::proto::{self, info, opt, rep, Framing, HandshakeFlags, OptionHeader};
use crate::stream::{wait, ShutdownHandle, Stream};
use crate::tls::{Tls, TlsMode};

/// Largest option data the server reads; longer data is skipped and answered
/// `NBD_REP_ERR_TOO_BIG`.
const MAX_OPTION_LEN: u32 = 64 << 10;
/// The id of `base:allocation` in `NBD_REP_META_CONTEXT` replies.
pub(crate) const BASE_ALLOCATION_ID: u32 = 1;
/// The one metadata context this server has.
pub(crate) const BASE_ALLOCATION: &str = "base:allocation";

/// What a successful handshake agreed on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Session {
    /// Simple, structured or extended: how transmission messages are framed.
    pub(crate) framing: Framing,
    /// `base:allocation` was selected (its context id).
    pub(crate) meta: Option<u32>,
    /// The transmission flags the client was given.
    pub(crate) flags: TransmissionFlags,
}

/// How a handshake ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Transmission begins on the export chosen.
    Go(Session, Arc<Export>),
    /// The client left (`NBD_OPT_ABORT`, end of stream) or the server is shutting down.
    Closed,
}

/// Why a handshake stopped early.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The client broke the protocol.
    Protocol(Malformed),
    /// Socket I/O failed.
    Io(std::io::Error),
    /// The client left, or shutdown began while waiting for it.
    Closed,
    /// The client is not let on (`--tls-authz`): why, naming it.
    Refused(String),
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Self {
        Stop::Io(e)
    }
}

/// How long a client may take over the whole handshake: an idle client must not hold one of
/// the `--shared` connection slots for ever.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Blocking reads and writes on the socket that give up when shutdown begins or the
/// deadline passes.
pub(crate) struct Wire<'a> {
    pub(crate) stream: &'a mut Stream,
    pub(crate) shutdown: &'a ShutdownHandle,
    pub(crate) deadline: Instant,
}

impl Wire<'_> {
    fn read_exact(&mut self, mut buf: &mut [u8]) -> Result<(), Stop> {
        use std::os::fd::AsFd;
        while !buf.is_empty() {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Stop::Io(std::io::ErrorKind::TimedOut.into()));
            }
            if !self.stream.buffered() {
                let r = wait(self.stream.as_fd(), true, false, self.shutdown, Some(left))?;
                if r.shutdown {
                    return Err(Stop::Closed);
                }
                if !r.readable {
                    continue;
                }
            }
            match self.stream.read(buf) {
                Ok(0) => return Err(Stop::Closed),
                Ok(n) => buf = &mut buf[n..],
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(Stop::Io(e)),
            }
        }
        Ok(())
    }

    fn skip(&mut self, mut n: u64) -> Result<(), Stop> {
        let mut scratch = [0u8; 4096];
        while n > 0 {
            let k = n.min(scratch.len() as u64) as usize;
            self.read_exact(&mut scratch[..k])?;
            n -= k as u64;
        }
        Ok(())
    }

    fn write_all(&mut self, buf: &[u8]) -> Result<(), Stop> {
        self.stream.write_all(buf).map_err(Stop::Io)
    }
}

/// Option state between options.
struct State<'a> {
    exports: &'a Exports,
    framing: Framing,
    /// The export `base:allocation` was selected for (by `SET_META_CONTEXT`).
    meta: Option<Arc<Export>>,
    out: Vec<u8>,
}

impl State<'_> {
    fn reply(&mut self, option: u32, kind: u32, data: &[u8]) {
        proto::encode_option_reply(&mut self.out, option, kind, data);
    }

    /// True when `base:allocation` is selected for `export`.
    fn meta_for(&self, export: &Arc<Export>) -> bool {
        self.meta.as_ref().is_some_and(|m| Arc::ptr_eq(m, export))
    }

    /// The transmission flags `export` is offered with: block status with a payload only
    /// where a context is selected.
    fn flags(&self, export: &Arc<Export>) -> TransmissionFlags {
        let mut f = export.flags(self.framing);
        if !self.meta_for(export) {
            f.remove(TransmissionFlags::BLOCK_STATUS_PAYLOAD);
        }
        f
    }

    /// Transmission on `export`: the metadata context stays selected only when it was
    /// selected for that export.
    fn go(&self, export: Arc<Export>) -> Outcome {
        let session = Session {
            framing: self.framing,
            meta: self.meta_for(&export).then_some(BASE_ALLOCATION_ID),
            flags: self.flags(&export),
        };
        Outcome::Go(session, export)
    }

    /// The export `name` means, or `NBD_REP_ERR_UNKNOWN` sent with the reason.
    fn lookup(&mut self, option: u32, name: &str) -> Option<Arc<Export>> {
        match self.exports.get(name) {
            Ok(e) => Some(e),
            Err(why) => {
                tracing::debug!(export = name, "refused: {why}");
                self.reply(option, rep::ERR_UNKNOWN, why.as_bytes());
                None
            }
        }
    }

    /// `NBD_OPT_LIST`: an `NBD_REP_SERVER` per export.
    fn list(&mut self, option: u32) {
        match self.exports.list() {
            Ok(all) => {
                for (name, description) in all {
                    let d = proto::rep_server(&name, &description);
                    self.reply(option, rep::SERVER, &d);
                }
                self.reply(option, rep::ACK, &[]);
            }
            Err(e) => {
                tracing::warn!("listing the exports: {e}");
                self.reply(option, rep::ERR_PLATFORM, b"the exports cannot be listed");
            }
        }
    }

    /// `NBD_OPT_INFO` and `NBD_OPT_GO`; the export when it was accepted.
    fn info(&mut self, option: u32, data: &[u8]) -> Option<Arc<Export>> {
        let req = match proto::decode_info_request(data) {
            Ok(r) => r,
            Err(e) => {
                self.reply(option, rep::ERR_INVALID, e.to_string().as_bytes());
                return None;
            }
        };
        let e = self.lookup(option, &req.name)?;
        let flags = self.flags(&e);
        self.reply(option, rep::INFO, &proto::info_export(e.size(), flags));
        let (min, pref, max) = e.block_sizes();
        self.reply(option, rep::INFO, &proto::info_block_size(min, pref, max));
        if req.infos.contains(&info::NAME) {
            self.reply(option, rep::INFO, &proto::info_string(info::NAME, e.name()));
        }
        if req.infos.contains(&info::DESCRIPTION) && !e.description().is_empty() {
            let d = proto::info_string(info::DESCRIPTION, e.description());
            self.reply(option, rep::INFO, &d);
        }
        self.reply(option, rep::ACK, &[]);
        Some(e)
    }

    /// `NBD_OPT_LIST_META_CONTEXT` and `NBD_OPT_SET_META_CONTEXT`.
    fn meta_context(&mut self, option: u32, data: &[u8]) {
        let set = option == opt::SET_META_CONTEXT;
        if set {
            // Setting replaces the selection, even when it fails.
            self.meta = None;
            if !self.framing.chunks() {
                let msg = b"structured replies must be negotiated first";
                self.reply(option, rep::ERR_INVALID, msg);
                return;
            }
        }
        let req = match proto::decode_meta_request(data) {
            Ok(r) => r,
            Err(e @ Malformed::TooManyQueries(_)) => {
                self.reply(option, rep::ERR_TOO_BIG, e.to_string().as_bytes());
                return;
            }
            Err(e) => {
                self.reply(option, rep::ERR_INVALID, e.to_string().as_bytes());
                return;
            }
        };
        let Some(export) = self.lookup(option, &req.name) else {
            return;
        };
        let found = if set {
            req.queries.iter().any(|q| q == BASE_ALLOCATION)
        } else {
            req.queries.is_empty()
                || req
                    .queries
                    .iter()
                    .any(|q| q == BASE_ALLOCATION || q == "base:")
        };
        if found {
            let id = if set { BASE_ALLOCATION_ID } else { 0 };
            let d = proto::rep_meta_context(id, BASE_ALLOCATION);
            self.reply(option, rep::META_CONTEXT, &d);
        }
        if set && found {
            self.meta = Some(export);
        }
        self.reply(option, rep::ACK, &[]);
    }
}

/// `NBD_OPT_STARTTLS`: acknowledged in plain text, then the TLS handshake; what was
/// negotiated before it is forgotten, as the protocol asks.
fn starttls(
    wire: &mut Wire<'_>,
    st: &mut State<'_>,
    tls: Option<&Tls>,
    data: &[u8],
) -> Result<(), Stop> {
    let option = opt::STARTTLS;
    match tls {
        _ if !data.is_empty() => st.reply(option, rep::ERR_INVALID, b"STARTTLS takes no data"),
        None => st.reply(
            option,
            rep::ERR_POLICY,
            b"TLS is not offered by this server",
        ),
        Some(t) if t.mode == TlsMode::Off => st.reply(
            option,
            rep::ERR_POLICY,
            b"TLS is not offered by this server",
        ),
        Some(_) if wire.stream.is_tls() => st.reply(option, rep::ERR_INVALID, b"TLS is already on"),
        Some(t) => {
            st.reply(option, rep::ACK, &[]);
            wire.write_all(&std::mem::take(&mut st.out))?;
            wire.stream.start_tls(t)?;
            authorize(wire.stream, t)?;
            st.framing = Framing::Simple;
            st.meta = None;
            tracing::debug!(
                "TLS on: {}",
                wire.stream.tls_description().unwrap_or_default()
            );
        }
    }
    wire.write_all(&std::mem::take(&mut st.out))
}

/// `--tls-authz`: the identity TLS proved must be one the list allows.
fn authorize(stream: &Stream, tls: &Tls) -> Result<(), Stop> {
    let Some(authz) = tls.authz() else {
        return Ok(());
    };
    match stream.tls_identity() {
        Some(id) if authz.allows(&id) => {
            tracing::debug!(identity = id, "TLS identity allowed");
            Ok(())
        }
        Some(id) => Err(Stop::Refused(format!(
            "TLS identity {id:?} is not allowed (--tls-authz)"
        ))),
        None => Err(Stop::Refused(
            "the client proved no TLS identity (--tls-authz)".into(),
        )),
    }
}

/// Runs the handshake on `wire` for `exports`, with `tls` offered or required if given.
pub(crate) fn negotiate(
    wire: &mut Wire<'_>,
    exports: &Exports,
    tls: Option<&Tls>,
) -> Result<Outcome, Stop> {
    let require = tls.is_some_and(|t| t.mode == TlsMode::Require);
    let hs = HandshakeFlags::FIXED_NEWSTYLE | HandshakeFlags::NO_ZEROES;
    wire.write_all(&proto::greeting(hs))?;
    let mut cf = [0u8; 4];
    wire.read_exact(&mut cf)?;
    let client = proto::decode_client_flags(cf).map_err(Stop::Protocol)?;
    let no_zeroes = client.contains(proto::ClientFlags::NO_ZEROES);
    let mut st = State {
        exports,
        framing: Framing::Simple,
        meta: None,
        out: Vec::new(),
    };
    loop {
        let mut h = [0u8; proto::OPTION_HEADER_LEN];
        wire.read_exact(&mut h)?;
        let h = OptionHeader::decode(&h).map_err(Stop::Protocol)?;
        if h.len > MAX_OPTION_LEN {
            wire.skip(h.len as u64)?;
            if h.option == opt::EXPORT_NAME {
                return Ok(Outcome::Closed);
            }
            st.reply(h.option, rep::ERR_TOO_BIG, b"option data too long");
            wire.write_all(&std::mem::take(&mut st.out))?;
            continue;
        }
        let mut data = vec![0u8; h.len as usize];
        wire.read_exact(&mut data)?;
        tracing::debug!(option = h.option, len = h.len, "option");
        if wire.shutdown.is_triggered() && h.option != opt::ABORT {
            if h.option == opt::EXPORT_NAME {
                return Ok(Outcome::Closed);
            }
            st.reply(h.option, rep::ERR_SHUTDOWN, b"server shutting down");
            wire.write_all(&std::mem::take(&mut st.out))?;
            continue;
        }
        if h.option == opt::STARTTLS {
            starttls(wire, &mut st, tls, &data)?;
            continue;
        }
        if require && !wire.stream.is_tls() && h.option != opt::ABORT {
            if h.option == opt::EXPORT_NAME {
                return Ok(Outcome::Closed);
            }
            st.reply(
                h.option,
                rep::ERR_TLS_REQD,
                b"TLS is required: use STARTTLS",
            );
            wire.write_all(&std::mem::take(&mut st.out))?;
            continue;
        }
        let outcome = option(&mut st, h.option, &data, no_zeroes);
        wire.write_all(&std::mem::take(&mut st.out))?;
        if let Some(o) = outcome {
            return Ok(o);
        }
    }
}

/// Handles one option; `Some` ends the handshake.
fn option(st: &mut State<'_>, option: u32, data: &[u8], no_zeroes: bool) -> Option<Outcome> {
    let empty = data.is_empty();
    match option {
        opt::EXPORT_NAME => {
            let name = std::str::from_utf8(data).unwrap_or("\0");
            let Ok(export) = st.exports.get(name) else {
                // No error can be sent in reply to EXPORT_NAME: the session ends.
                tracing::debug!(export = name, "EXPORT_NAME refused: closing");
                return Some(Outcome::Closed);
            };
            let flags = st.flags(&export);
            st.out.extend(proto::encode_export_name_reply(
                export.size(),
                flags,
                no_zeroes,
            ));
            Some(st.go(export))
        }
        opt::ABORT => {
            st.reply(option, rep::ACK, &[]);
            Some(Outcome::Closed)
        }
        opt::LIST if !empty => {
            st.reply(option, rep::ERR_INVALID, b"LIST takes no data");
            None
        }
        opt::LIST => {
            st.list(option);
            None
        }
        opt::INFO => {
            st.info(option, data);
            None
        }
        opt::GO => st.info(option, data).map(|e| st.go(e)),
        opt::STRUCTURED_REPLY if !empty => {
            st.reply(option, rep::ERR_INVALID, b"STRUCTURED_REPLY takes no data");
            None
        }
        opt::STRUCTURED_REPLY if st.framing == Framing::Extended => {
            let msg = b"extended headers are negotiated and take precedence";
            st.reply(option, rep::ERR_EXT_HEADER_REQD, msg);
            None
        }
        opt::STRUCTURED_REPLY => {
            st.framing = Framing::Structured;
            st.reply(option, rep::ACK, &[]);
            None
        }
        opt::EXTENDED_HEADERS if !empty => {
            st.reply(option, rep::ERR_INVALID, b"EXTENDED_HEADERS takes no data");
            None
        }
        opt::EXTENDED_HEADERS => {
            st.framing = Framing::Extended;
            st.reply(option, rep::ACK, &[]);
            None
        }
        opt::LIST_META_CONTEXT | opt::SET_META_CONTEXT => {
            st.meta_context(option, data);
            None
        }
        _ => {
            st.reply(option, rep::ERR_UNSUP, b"option not supported");
            None
        }
    }
}
