//! CPU time and context switches, from `getrusage(2)` and `/proc/PID/status`.
//!
//! Snapshots are taken before and after a measured phase and subtracted with [`Usage::delta`].
//! A thread snapshot ([`Usage::thread`], `RUSAGE_THREAD`) isolates one worker; a process snapshot
//! ([`Usage::process`], `RUSAGE_SELF`) includes every thread, such as an engine's pool. Servers
//! measured as separate processes are read with [`proc_ctx_switches`].

use std::io;
use std::time::Duration;

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

    /// Snapshot of the whole process, all threads: `getrusage(RUSAGE_SELF)`.
    pub fn process() -> io::Result<Usage> {
        getrusage(libc::RUSAGE_SELF)
    }

    /// Snapshot of every child process reaped so far, with the children they reaped:
    /// `getrusage(RUSAGE_CHILDREN)`. The difference around one client run is that client's
    /// usage, as long as no other child is reaped meanwhile.
    pub fn children() -> io::Result<Usage> {
        getrusage(libc::RUSAGE_CHILDREN)
    }

    /// What was consumed between `earlier` and `self`. Counters never go negative: a value
    /// smaller than its earlier one (snapshots swapped or of different scopes) gives zero.
    pub fn delta(&self, earlier: &Usage) -> Usage {
        Usage {
            user_s: (self.user_s - earlier.user_s).max(0.0),
            sys_s: (self.sys_s - earlier.sys_s).max(0.0),
            vol_ctx: self.vol_ctx.saturating_sub(earlier.vol_ctx),
            invol_ctx: self.invol_ctx.saturating_sub(earlier.invol_ctx),
        }
    }

    /// User plus system CPU time, in seconds.
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.sys_s
    }

    /// Voluntary plus involuntary context switches.
    pub fn ctx(&self) -> u64 {
        self.vol_ctx + self.invol_ctx
    }

    /// CPU time as a percentage of one CPU over `wall` (100.0 = one core busy all the time).
    pub fn cpu_pct(&self, wall: Duration) -> f64 {
        let secs = wall.as_secs_f64();
        if secs > 0.0 {
            100.0 * self.cpu_s() / secs
        } else {
            0.0
        }
    }
}

/// Calls `getrusage(2)` for `who` and converts the result.
fn getrusage(who: libc::c_int) -> io::Result<Usage> {
    // SAFETY: `rusage` is plain old data; an all-zero value is valid and is fully overwritten
    // by the kernel on success.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable `rusage` that outlives the call; `who` is one of the
    // RUSAGE_* constants.
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Usage {
        user_s: timeval_s(ru.ru_utime),
        sys_s: timeval_s(ru.ru_stime),
        vol_ctx: u64::try_from(ru.ru_nvcsw).unwrap_or(0),
        invol_ctx: u64::try_from(ru.ru_nivcsw).unwrap_or(0),
    })
}

/// A `timeval` in seconds.
fn timeval_s(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

/// Context switches of a process, from `voluntary_ctxt_switches` and
/// `nonvoluntary_ctxt_switches` in `/proc/PID/status` (proc(5)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CtxSwitches {
    /// Voluntary context switches.
    pub voluntary: u64,
    /// Involuntary (preemption) context switches.
    pub nonvoluntary: u64,
}

impl CtxSwitches {
    /// What happened between `earlier` and `self`, saturating at zero.
    pub fn delta(&self, earlier: &CtxSwitches) -> CtxSwitches {
        CtxSwitches {
            voluntary: self.voluntary.saturating_sub(earlier.voluntary),
            nonvoluntary: self.nonvoluntary.saturating_sub(earlier.nonvoluntary),
        }
    }

    /// Voluntary plus involuntary.
    pub fn total(&self) -> u64 {
        self.voluntary + self.nonvoluntary
    }
}

/// Reads the context switches of process `pid` from `/proc/PID/status`.
///
/// These are the counts of the process's main thread (proc(5)); for a multi-threaded server,
/// sum [`proc_task_ctx_switches`] instead.
pub fn proc_ctx_switches(pid: u32) -> io::Result<CtxSwitches> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    parse_status(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("/proc/{pid}/status has no ctxt_switches lines"),
        )
    })
}

/// Sums the context switches of every thread of process `pid`, from
/// `/proc/PID/task/TID/status`. Threads that exit while being read are skipped.
pub fn proc_task_ctx_switches(pid: u32) -> io::Result<CtxSwitches> {
    let mut sum = CtxSwitches::default();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let path = entry?.path().join("status");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if let Some(c) = parse_status(&text) {
            sum.voluntary += c.voluntary;
            sum.nonvoluntary += c.nonvoluntary;
        }
    }
    Ok(sum)
}

/// Extracts the two ctxt_switches counters from the text of a proc status file.
fn parse_status(text: &str) -> Option<CtxSwitches> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim_start_matches(':').trim().parse::<u64>().ok())
    };
    Some(CtxSwitches {
        voluntary: field("voluntary_ctxt_switches")?,
        nonvoluntary: field("nonvoluntary_ctxt_switches")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_usage_counts_sleep_as_voluntary_switch() -> io::Result<()> {
        let before = Usage::thread()?;
        std::thread::sleep(Duration::from_millis(5));
        let after = Usage::thread()?;
        let d = after.delta(&before);
        assert!(d.vol_ctx >= 1, "sleeping must block the thread: {d:?}");
        Ok(())
    }

    #[test]
    fn process_usage_grows_with_work() -> io::Result<()> {
        let before = Usage::process()?;
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let d = Usage::process()?.delta(&before);
        assert!(d.cpu_s() > 0.0, "busy loop must use CPU: {d:?}");
        Ok(())
    }

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
        assert!((b.cpu_pct(Duration::from_secs(8)) - 50.0).abs() < 1e-9);
    }

    #[test]
    fn parses_status_text() {
        let text = "Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(
            parse_status(text),
            Some(CtxSwitches {
                voluntary: 12,
                nonvoluntary: 3
            })
        );
        assert_eq!(parse_status("Name:\tx\n"), None);
    }

    #[test]
    fn reads_own_process_status() -> io::Result<()> {
        let c = proc_ctx_switches(std::process::id())?;
        let all = proc_task_ctx_switches(std::process::id())?;
        assert!(all.total() >= c.total());
        Ok(())
    }
}
