//! Request validation: which command flags each command takes, bounds against the export
//! size, lengths against the maximum payload, read-only exports. Pure: the answer is `Ok`
//! or the NBD error value the protocol asks for.

use crate::export::MAX_PAYLOAD;
use crate::proto::{CmdFlags, Command, Errno, Framing, Request};

/// What validation needs to know about the export and the session.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Limits {
    /// Export size in bytes.
    pub(crate) size: u64,
    /// Writes refused.
    pub(crate) read_only: bool,
    /// The session's framing (structured replies allow `NBD_CMD_FLAG_DF`; extended headers
    /// `NBD_CMD_FLAG_PAYLOAD_LEN`).
    pub(crate) framing: Framing,
    /// `base:allocation` selected (`NBD_CMD_BLOCK_STATUS` allowed).
    pub(crate) meta: bool,
}

/// The command flags `cmd` accepts. FUA is accepted on every command (the protocol asks
/// servers that advertise it to accept it everywhere).
fn allowed_flags(cmd: Command, l: &Limits) -> CmdFlags {
    let extended = l.framing == Framing::Extended;
    match cmd {
        Command::Read if l.framing.chunks() => CmdFlags::FUA | CmdFlags::DF,
        Command::Write if extended => CmdFlags::FUA | CmdFlags::PAYLOAD_LEN,
        Command::Read | Command::Write | Command::Flush | Command::Trim | Command::Cache => {
            CmdFlags::FUA
        }
        Command::WriteZeroes => CmdFlags::FUA | CmdFlags::NO_HOLE | CmdFlags::FAST_ZERO,
        Command::BlockStatus if extended => {
            CmdFlags::FUA | CmdFlags::REQ_ONE | CmdFlags::PAYLOAD_LEN
        }
        Command::BlockStatus => CmdFlags::FUA | CmdFlags::REQ_ONE,
        Command::Disc => CmdFlags::all(),
    }
}

/// Checks `r` against the export: the command it is, or the NBD error to reply with.
///
/// A block-status request carrying a payload (`NBD_CMD_FLAG_PAYLOAD_LEN`) passes here on its
/// flags alone: its bounds are those of the effect length inside the payload, checked again
/// once the payload has come (as a request without the flag).
pub(crate) fn check(r: &Request, l: &Limits) -> Result<Command, Errno> {
    let cmd = r.command().map_err(|_| Errno::EINVAL)?;
    if cmd == Command::Disc {
        return Ok(cmd);
    }
    if r.flags & !allowed_flags(cmd, l).bits() != 0 {
        return Err(Errno::EINVAL);
    }
    if cmd.writes() && l.read_only {
        return Err(Errno::EPERM);
    }
    let payload = r.cmd_flags().contains(CmdFlags::PAYLOAD_LEN);
    let max = u64::from(MAX_PAYLOAD);
    match cmd {
        Command::Flush if r.offset != 0 || r.len != 0 => return Err(Errno::EINVAL),
        Command::Flush => return Ok(cmd),
        // Over the advertised maximum: NBD_EOVERFLOW where structured replies allow it
        // (the protocol keeps simple replies to NBD_EINVAL).
        Command::Read if r.len > max && l.framing.chunks() => return Err(Errno::EOVERFLOW),
        Command::Read | Command::Write if r.len > max => return Err(Errno::EINVAL),
        Command::BlockStatus if !l.meta || r.len == 0 => return Err(Errno::EINVAL),
        Command::BlockStatus if payload => return Ok(cmd),
        _ => {}
    }
    let past_end = r.offset.checked_add(r.len).is_none_or(|end| end > l.size);
    if past_end {
        return Err(match cmd {
            Command::Write | Command::WriteZeroes => Errno::ENOSPC,
            _ => Errno::EINVAL,
        });
    }
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits {
        size: 1 << 20,
        read_only: false,
        framing: Framing::Structured,
        meta: true,
    };

    fn req(kind: impl Into<u16>, flags: u16, offset: u64, len: u64) -> Request {
        Request {
            flags,
            kind: kind.into(),
            cookie: 1,
            offset,
            len,
        }
    }

    fn ok(r: Request, l: &Limits) -> bool {
        check(&r, l) == r.command().map_err(|_| Errno::EINVAL)
    }

    #[test]
    fn in_bounds_requests_pass() {
        assert!(ok(req(Command::Read, 0, 0, 4096), &L));
        assert!(ok(req(Command::Write, 1, (1 << 20) - 1, 1), &L));
        assert!(ok(req(Command::Flush, 0, 0, 0), &L));
        assert!(ok(req(Command::WriteZeroes, 0x13, 0, 1 << 20), &L));
        assert!(ok(req(Command::BlockStatus, 8, 0, 1), &L));
        assert!(ok(req(Command::Disc, 0xffff, 5, 5), &L));
        assert!(ok(req(Command::Read, 0, 0, 0), &L));
    }

    #[test]
    fn reads_over_the_maximum_are_eoverflow_with_structured_replies_einval_without() {
        let big = u64::from(MAX_PAYLOAD) + 1;
        let l = Limits { size: 1 << 40, ..L };
        assert_eq!(
            check(&req(Command::Read, 0, 0, big), &l),
            Err(Errno::EOVERFLOW)
        );
        let simple = Limits {
            framing: Framing::Simple,
            ..l
        };
        assert_eq!(
            check(&req(Command::Read, 0, 0, big), &simple),
            Err(Errno::EINVAL)
        );
        assert!(ok(req(Command::Read, 0, 0, MAX_PAYLOAD.into()), &l));
    }

    #[test]
    fn past_the_end_is_refused_with_the_documented_error() {
        assert_eq!(
            check(&req(Command::Read, 0, 1 << 20, 1), &L),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            check(&req(Command::Write, 0, 1 << 20, 1), &L),
            Err(Errno::ENOSPC)
        );
        assert_eq!(
            check(&req(Command::WriteZeroes, 0, 1, 1 << 20), &L),
            Err(Errno::ENOSPC)
        );
        assert_eq!(
            check(&req(Command::Trim, 0, u64::MAX, 2), &L),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            check(&req(Command::BlockStatus, 0, 1 << 20, 1), &L),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn bad_flags_lengths_and_commands_are_einval() {
        assert_eq!(check(&req(Command::Write, 2, 0, 1), &L), Err(Errno::EINVAL));
        assert_eq!(
            check(&req(Command::Read, 0x100, 0, 1), &L),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            check(&req(Command::Write, 0, 0, (32 << 20) + 1), &L),
            Err(Errno::EINVAL)
        );
        assert_eq!(check(&req(Command::Flush, 0, 1, 0), &L), Err(Errno::EINVAL));
        assert_eq!(check(&req(99u16, 0, 0, 0), &L), Err(Errno::EINVAL));
        let simple = Limits {
            framing: Framing::Simple,
            meta: false,
            ..L
        };
        assert_eq!(
            check(&req(Command::Read, 4, 0, 1), &simple),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            check(&req(Command::BlockStatus, 0, 0, 1), &simple),
            Err(Errno::EINVAL)
        );
        // Write zeroes and trim may exceed the maximum payload.
        let big = Limits { size: 1 << 40, ..L };
        assert!(ok(req(Command::Trim, 0, 0, u32::MAX.into()), &big));
    }

    #[test]
    fn extended_headers_take_64_bit_effect_lengths_and_payload_flags() {
        let ext = Limits {
            size: 8 << 30,
            framing: Framing::Extended,
            ..L
        };
        let pl = CmdFlags::PAYLOAD_LEN.bits();
        assert!(ok(req(Command::Trim, 0, 0, 5 << 30), &ext));
        assert!(ok(req(Command::WriteZeroes, 2, 1, (8 << 30) - 1), &ext));
        assert!(ok(req(Command::BlockStatus, 0, 0, 8 << 30), &ext));
        assert!(ok(req(Command::Write, pl, 0, 4096), &ext));
        // A write may carry the payload flag (qemu 10 sends none); other commands may not,
        // but block status.
        assert!(ok(req(Command::Write, 0, 0, 4096), &ext));
        assert_eq!(
            check(&req(Command::Trim, pl, 0, 8), &ext),
            Err(Errno::EINVAL)
        );
        assert!(ok(req(Command::BlockStatus, pl, 0, 12), &ext));
        // Without extended headers the flag is unknown.
        assert_eq!(
            check(&req(Command::BlockStatus, pl, 0, 12), &L),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            check(&req(Command::Read, 0, 0, 1 << 32), &ext),
            Err(Errno::EOVERFLOW)
        );
        assert_eq!(
            check(&req(Command::Trim, 0, 1, 8 << 30), &ext),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn read_only_refuses_writes_with_eperm() {
        let ro = Limits {
            read_only: true,
            ..L
        };
        for kind in [Command::Write, Command::Trim, Command::WriteZeroes] {
            assert_eq!(check(&req(kind, 0, 0, 1), &ro), Err(Errno::EPERM));
        }
        assert!(ok(req(Command::Read, 0, 0, 1), &ro));
    }
}
