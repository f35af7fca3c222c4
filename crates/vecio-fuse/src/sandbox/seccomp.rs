//! The serving threads' system-call allow-list (seccomp), as virtiofsd's `--seccomp`: once the
//! sandbox is entered, the thread that serves installs a filter that every thread it starts
//! inherits (workers, rings, lock waiters, the pool engine's threads); a system call off the
//! list is refused with the chosen action. The main thread of a process embedding the server
//! (the CLI's, the tests') keeps no filter.
//!
//! The list is what the server's threads call, found by running every FUSE test, pjdfstest and
//! xfstests under `log` (the kernel's audit log names each refused call) and kept by running
//! them under the default, `kill`: a call added to the code and missing here kills the test's
//! server, so it fails a test before it can fail a user.

use std::collections::BTreeMap;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule};

/// What a system call off the list gets.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Seccomp {
    /// The process is killed (`SECCOMP_RET_KILL_PROCESS`): the default.
    #[default]
    Kill,
    /// `SIGSYS` is sent to the thread (`SECCOMP_RET_TRAP`).
    Trap,
    /// The call is let through and named in the kernel's audit log (`SECCOMP_RET_LOG`): for
    /// finding what the list lacks.
    Log,
    /// No filter.
    None,
}

impl std::str::FromStr for Seccomp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "kill" => Ok(Seccomp::Kill),
            "trap" => Ok(Seccomp::Trap),
            "log" => Ok(Seccomp::Log),
            "none" => Ok(Seccomp::None),
            _ => Err(format!("{s:?}: seccomp is kill, trap, log or none")),
        }
    }
}

/// The system calls the serving threads make (seccompiler keys them as i64; vecio builds for
/// 64-bit Linux, where `libc::SYS_*` are i64 too).
const ALLOWED: &[i64] = &[
    // The FUSE device and the engines.
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_pread64,
    libc::SYS_pwrite64,
    libc::SYS_preadv,
    libc::SYS_pwritev,
    libc::SYS_preadv2,
    libc::SYS_pwritev2,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_ioctl,
    libc::SYS_poll,
    libc::SYS_ppoll,
    libc::SYS_eventfd2,
    // Files, names and attributes.
    libc::SYS_openat,
    libc::SYS_openat2,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_close,
    libc::SYS_close_range,
    libc::SYS_dup,
    libc::SYS_dup3,
    libc::SYS_fcntl,
    libc::SYS_lseek,
    libc::SYS_fstat,
    libc::SYS_newfstatat,
    libc::SYS_statx,
    libc::SYS_statfs,
    libc::SYS_fstatfs,
    libc::SYS_getdents64,
    libc::SYS_mkdirat,
    libc::SYS_mknodat,
    libc::SYS_symlinkat,
    libc::SYS_linkat,
    libc::SYS_unlinkat,
    libc::SYS_renameat2,
    libc::SYS_readlinkat,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    libc::SYS_fchmodat2,
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_utimensat,
    libc::SYS_faccessat,
    libc::SYS_faccessat2,
    libc::SYS_fsync,
    libc::SYS_fdatasync,
    libc::SYS_fallocate,
    libc::SYS_ftruncate,
    libc::SYS_copy_file_range,
    libc::SYS_flock,
    libc::SYS_getxattr,
    libc::SYS_lgetxattr,
    libc::SYS_fgetxattr,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    libc::SYS_listxattr,
    libc::SYS_llistxattr,
    libc::SYS_flistxattr,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    libc::SYS_umask,
    libc::SYS_fchdir,
    libc::SYS_unshare,
    // Acting as the caller.
    libc::SYS_setfsuid,
    libc::SYS_setfsgid,
    libc::SYS_setgroups,
    libc::SYS_setresuid,
    libc::SYS_setresgid,
    libc::SYS_getuid,
    libc::SYS_geteuid,
    libc::SYS_getgid,
    libc::SYS_getegid,
    libc::SYS_getgroups,
    libc::SYS_capget,
    libc::SYS_capset,
    // Threads, memory, signals, time.
    libc::SYS_clone,
    libc::SYS_clone3,
    libc::SYS_exit,
    libc::SYS_exit_group,
    libc::SYS_futex,
    libc::SYS_set_robust_list,
    libc::SYS_rseq,
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mremap,
    libc::SYS_mprotect,
    libc::SYS_madvise,
    libc::SYS_brk,
    libc::SYS_mlock,
    libc::SYS_munlock,
    libc::SYS_rt_sigaction,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigreturn,
    libc::SYS_sigaltstack,
    libc::SYS_tgkill,
    // Reaping the `-o auto_unmount` watcher as the serving thread lets its mount go.
    libc::SYS_wait4,
    libc::SYS_getpid,
    libc::SYS_gettid,
    libc::SYS_prctl,
    libc::SYS_sched_getaffinity,
    libc::SYS_sched_setaffinity,
    libc::SYS_sched_yield,
    libc::SYS_clock_gettime,
    libc::SYS_clock_nanosleep,
    libc::SYS_nanosleep,
    libc::SYS_gettimeofday,
    libc::SYS_getrandom,
    libc::SYS_restart_syscall,
    // The readiness line a forked server sends its parent.
    libc::SYS_sendto,
    libc::SYS_sendmsg,
];

/// The filter for `action` as a BPF program, or `None` for [`Seccomp::None`].
fn program(action: Seccomp) -> std::io::Result<Option<BpfProgram>> {
    let mismatch = match action {
        Seccomp::None => return Ok(None),
        Seccomp::Kill => SeccompAction::KillProcess,
        Seccomp::Trap => SeccompAction::Trap,
        Seccomp::Log => SeccompAction::Log,
    };
    let rules: BTreeMap<i64, Vec<SeccompRule>> =
        ALLOWED.iter().map(|&nr| (nr, Vec::new())).collect();
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| std::io::Error::other(format!("seccomp: {e}")))?;
    SeccompFilter::new(rules, mismatch, SeccompAction::Allow, arch)
        .and_then(TryInto::try_into)
        .map(Some)
        .map_err(|e| std::io::Error::other(format!("seccomp: {e}")))
}

/// Installs the filter on the calling thread (the threads it starts inherit it). Needs
/// `no_new_privs` or `CAP_SYS_ADMIN` (the sandbox sets the first).
pub fn install(action: Seccomp) -> std::io::Result<()> {
    match program(action)? {
        Some(p) => seccompiler::apply_filter(&p)
            .map_err(|e| std::io::Error::other(format!("seccomp: {e}"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forks a child that installs the filter for `action`, then calls `getppid` (off the
    /// list); returns how it ended (`waitpid`'s status).
    fn child_calling_off_the_list(action: Seccomp) -> i32 {
        let program = program(action).unwrap().expect("a filter");
        // SAFETY: the child calls only prctl, seccomp (through apply_filter, which allocates
        // nothing), getppid and _exit before it ends; the parent only waits for it.
        unsafe {
            let pid = libc::fork();
            assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
            if pid == 0 {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                if seccompiler::apply_filter(&program).is_err() {
                    libc::_exit(3);
                }
                libc::syscall(libc::SYS_getppid);
                libc::_exit(0);
            }
            let mut status = 0;
            assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
            status
        }
    }

    #[test]
    fn a_call_off_the_list_kills_and_log_lets_it_through() {
        assert!(!ALLOWED.contains(&libc::SYS_getppid));
        for action in [Seccomp::Kill, Seccomp::Trap] {
            let status = child_calling_off_the_list(action);
            assert!(
                libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSYS,
                "{action:?}: the child ended with status {status:#x}, not by SIGSYS"
            );
        }
        let status = child_calling_off_the_list(Seccomp::Log);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "log: the child ended with status {status:#x}"
        );
    }

    #[test]
    fn modes_parse() {
        assert_eq!("kill".parse(), Ok(Seccomp::Kill));
        assert_eq!("none".parse(), Ok(Seccomp::None));
        assert!("allow".parse::<Seccomp>().is_err());
    }
}
