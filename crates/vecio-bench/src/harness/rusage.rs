//! CPU time and context switches, from `getrusage(2)` and `wait4(2)`, subtracted around a phase.

use std::io;

use serde::{Deserialize, Serialize};

/// CPU time and context switches consumed, from one `getrusage(2)` call or the difference of two.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// User CPU time in seconds (`ru_utime`).
    pub user_s: f64,
    /// System CPU time in seconds (`ru_stime`).
    pub sys_s: f64,
    /// Voluntary context switches (`ru_nvcsw`): the task blocked, e.g. waiting for I/O.
    pub vol_ctx: u64,
    /// Involuntary context switches (`ru_nivcsw`): the task was preempted.
    pub invol_ctx: u64,
}

impl Usage {
    /// Snapshot of the calling thread: `getrusage(RUSAGE_THREAD)`.
    pub fn thread() -> io::Result<Usage> {
        getrusage(libc::RUSAGE_THREAD)
    }

    /// Snapshot of every child process reaped so far: `getrusage(RUSAGE_CHILDREN)`.
    pub fn children() -> io::Result<Usage> {
        getrusage(libc::RUSAGE_CHILDREN)
    }

    /// The figures of a `struct rusage` the kernel filled.
    pub fn of(ru: &libc::rusage) -> Usage {
        let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        Usage {
            user_s: secs(ru.ru_utime),
            sys_s: secs(ru.ru_stime),
            vol_ctx: u64::try_from(ru.ru_nvcsw).unwrap_or(0),
            invol_ctx: u64::try_from(ru.ru_nivcsw).unwrap_or(0),
        }
    }

    /// What was consumed between `earlier` and `self`, saturating at zero.
    pub fn delta(&self, earlier: &Usage) -> Usage {
        Usage {
            user_s: (self.user_s - earlier.user_s).max(0.0),
            sys_s: (self.sys_s - earlier.sys_s).max(0.0),
            vol_ctx: self.vol_ctx.saturating_sub(earlier.vol_ctx),
            invol_ctx: self.invol_ctx.saturating_sub(earlier.invol_ctx),
        }
    }

    /// User plus system CPU seconds.
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.sys_s
    }

    /// Voluntary plus involuntary context switches.
    pub fn ctx(&self) -> u64 {
        self.vol_ctx + self.invol_ctx
    }
}

fn getrusage(who: libc::c_int) -> io::Result<Usage> {
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable `rusage` for the call.
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Usage::of(&ru))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_saturates() {
        let a = Usage {
            user_s: 1.0,
            sys_s: 2.0,
            vol_ctx: 3,
            invol_ctx: 4,
        };
        let b = Usage {
            user_s: 1.5,
            sys_s: 2.5,
            vol_ctx: 10,
            invol_ctx: 4,
        };
        assert_eq!(
            b.delta(&a),
            Usage {
                user_s: 0.5,
                sys_s: 0.5,
                vol_ctx: 7,
                invol_ctx: 0
            }
        );
        assert_eq!(a.delta(&b), Usage::default());
        assert_eq!(b.ctx(), 14);
    }
}
