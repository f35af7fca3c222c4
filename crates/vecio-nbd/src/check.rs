//! Request validation: which command flags each command takes, bounds against the export
//! size, lengths against the maximum payload, read-only exports. Pure: the answer is `Ok`
//! or the NBD error value the protocol asks for.

use crate::export::MAX_PAYLOAD;
use crate::proto::{cmd, errno, CmdFlags, Request};

/// What validation needs to know about the export and the session.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Limits {
    /// Export size in bytes.
    pub(crate) size: u64,
    /// Writes refused.
    pub(crate) read_only: bool,
    /// Structured replies negotiated (`NBD_CMD_FLAG_DF` allowed).
    pub(crate) structured: bool,
    /// `base:allocation` selected (`NBD_CMD_BLOCK_STATUS` allowed).
    pub(crate) meta: bool,
}

/// The command flags `kind` accepts. FUA is accepted on every command (the protocol asks
/// servers that advertise it to accept it everywhere).
fn allowed_flags(kind: u16, l: &Limits) -> Option<CmdFlags> {
    Some(match kind {
        cmd::READ if l.structured => CmdFlags::FUA | CmdFlags::DF,
        cmd::READ | cmd::WRITE | cmd::FLUSH | cmd::TRIM | cmd::CACHE => CmdFlags::FUA,
        cmd::WRITE_ZEROES => CmdFlags::FUA | CmdFlags::NO_HOLE | CmdFlags::FAST_ZERO,
        cmd::BLOCK_STATUS => CmdFlags::FUA | CmdFlags::REQ_ONE,
        cmd::DISC => CmdFlags::all(),
        _ => return None,
    })
}

/// Checks `r` against the export; `Err` is the NBD error to reply with.
pub(crate) fn check(r: &Request, l: &Limits) -> Result<(), u32> {
    let allowed = allowed_flags(r.kind, l).ok_or(errno::EINVAL)?;
    if r.kind == cmd::DISC {
        return Ok(());
    }
    if r.flags & !allowed.bits() != 0 {
        return Err(errno::EINVAL);
    }
    let writes = matches!(r.kind, cmd::WRITE | cmd::TRIM | cmd::WRITE_ZEROES);
    if writes && l.read_only {
        return Err(errno::EPERM);
    }
    match r.kind {
        cmd::FLUSH if r.offset != 0 || r.len != 0 => return Err(errno::EINVAL),
        cmd::FLUSH => return Ok(()),
        // Over the advertised maximum: NBD_EOVERFLOW where structured replies allow it
        // (the protocol keeps simple replies to NBD_EINVAL).
        cmd::READ if r.len > MAX_PAYLOAD && l.structured => return Err(errno::EOVERFLOW),
        cmd::READ | cmd::WRITE if r.len > MAX_PAYLOAD => return Err(errno::EINVAL),
        cmd::BLOCK_STATUS if !l.meta || r.len == 0 => return Err(errno::EINVAL),
        _ => {}
    }
    let past_end = r
        .offset
        .checked_add(r.len as u64)
        .is_none_or(|end| end > l.size);
    if past_end {
        return Err(match r.kind {
            cmd::WRITE | cmd::WRITE_ZEROES => errno::ENOSPC,
            _ => errno::EINVAL,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits {
        size: 1 << 20,
        read_only: false,
        structured: true,
        meta: true,
    };

    fn req(kind: u16, flags: u16, offset: u64, len: u32) -> Request {
        Request {
            flags,
            kind,
            cookie: 1,
            offset,
            len,
        }
    }

    #[test]
    fn in_bounds_requests_pass() {
        assert_eq!(check(&req(cmd::READ, 0, 0, 4096), &L), Ok(()));
        assert_eq!(check(&req(cmd::WRITE, 1, (1 << 20) - 1, 1), &L), Ok(()));
        assert_eq!(check(&req(cmd::FLUSH, 0, 0, 0), &L), Ok(()));
        assert_eq!(check(&req(cmd::WRITE_ZEROES, 0x13, 0, 1 << 20), &L), Ok(()));
        assert_eq!(check(&req(cmd::BLOCK_STATUS, 8, 0, 1), &L), Ok(()));
        assert_eq!(check(&req(cmd::DISC, 0xffff, 5, 5), &L), Ok(()));
        assert_eq!(check(&req(cmd::READ, 0, 0, 0), &L), Ok(()));
    }

    #[test]
    fn reads_over_the_maximum_are_eoverflow_with_structured_replies_einval_without() {
        let big = MAX_PAYLOAD + 1;
        let l = Limits { size: 1 << 40, ..L };
        assert_eq!(check(&req(cmd::READ, 0, 0, big), &l), Err(errno::EOVERFLOW));
        let simple = Limits {
            structured: false,
            ..l
        };
        assert_eq!(
            check(&req(cmd::READ, 0, 0, big), &simple),
            Err(errno::EINVAL)
        );
        assert_eq!(check(&req(cmd::READ, 0, 0, MAX_PAYLOAD), &l), Ok(()));
    }

    #[test]
    fn past_the_end_is_refused_with_the_documented_error() {
        assert_eq!(
            check(&req(cmd::READ, 0, 1 << 20, 1), &L),
            Err(errno::EINVAL)
        );
        assert_eq!(
            check(&req(cmd::WRITE, 0, 1 << 20, 1), &L),
            Err(errno::ENOSPC)
        );
        assert_eq!(
            check(&req(cmd::WRITE_ZEROES, 0, 1, 1 << 20), &L),
            Err(errno::ENOSPC)
        );
        assert_eq!(
            check(&req(cmd::TRIM, 0, u64::MAX, 2), &L),
            Err(errno::EINVAL)
        );
        assert_eq!(
            check(&req(cmd::BLOCK_STATUS, 0, 1 << 20, 1), &L),
            Err(errno::EINVAL)
        );
    }

    #[test]
    fn bad_flags_lengths_and_commands_are_einval() {
        assert_eq!(check(&req(cmd::WRITE, 2, 0, 1), &L), Err(errno::EINVAL));
        assert_eq!(check(&req(cmd::READ, 0x100, 0, 1), &L), Err(errno::EINVAL));
        assert_eq!(
            check(&req(cmd::WRITE, 0, 0, (32 << 20) + 1), &L),
            Err(errno::EINVAL)
        );
        assert_eq!(check(&req(cmd::FLUSH, 0, 1, 0), &L), Err(errno::EINVAL));
        assert_eq!(check(&req(99, 0, 0, 0), &L), Err(errno::EINVAL));
        let simple = Limits {
            structured: false,
            meta: false,
            ..L
        };
        assert_eq!(check(&req(cmd::READ, 4, 0, 1), &simple), Err(errno::EINVAL));
        assert_eq!(
            check(&req(cmd::BLOCK_STATUS, 0, 0, 1), &simple),
            Err(errno::EINVAL)
        );
        // Write zeroes and trim may exceed the maximum payload.
        let big = Limits { size: 1 << 40, ..L };
        assert_eq!(check(&req(cmd::TRIM, 0, 0, u32::MAX), &big), Ok(()));
    }

    #[test]
    fn read_only_refuses_writes_with_eperm() {
        let ro = Limits {
            read_only: true,
            ..L
        };
        for kind in [cmd::WRITE, cmd::TRIM, cmd::WRITE_ZEROES] {
            assert_eq!(check(&req(kind, 0, 0, 1), &ro), Err(errno::EPERM));
        }
        assert_eq!(check(&req(cmd::READ, 0, 0, 1), &ro), Ok(()));
    }
}
