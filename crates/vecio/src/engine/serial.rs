//! The serial engine: one `pread`/`pwrite` per segment, each waited on before the next.

use std::io;

use crate::engine::{syscall, Counters, Cqe, Engine, Op};

/// One `pread`/`pwrite` per segment, each waited on before the next segment is started: the
/// pre-2002 readv/writev, and the fallback for back ends with no vector operation.
#[derive(Default)]
pub struct SerialEngine {
    queued: Vec<Op>,
    ready: Vec<Cqe>,
    counters: Counters,
}

impl SerialEngine {
    /// A new serial engine.
    pub fn new() -> Self {
        Self::default()
    }

    fn run(&mut self, op: &Op) -> i64 {
        if op.cmd != super::Cmd::Rw {
            self.counters.syscalls += 1;
            return syscall::command(op);
        }
        // SAFETY: the pusher keeps the iovec array valid until the completion is reaped.
        let segs = unsafe { std::slice::from_raw_parts(op.iov, op.nr_segs as usize) };
        let mut done: i64 = 0;
        let mut offset = op.offset;
        for s in segs {
            if s.iov_len == 0 {
                continue;
            }
            self.counters.syscalls += 1;
            // SAFETY: the pusher keeps fd and buffers valid until the completion is reaped.
            let r = unsafe {
                syscall::single(
                    op.fd,
                    op.dir,
                    op.flags,
                    s.iov_base.cast(),
                    s.iov_len,
                    offset,
                )
            };
            if r < 0 {
                return if done > 0 { done } else { r };
            }
            done += r;
            offset += r as u64;
            if (r as usize) < s.iov_len {
                break;
            }
        }
        done
    }
}

impl Engine for SerialEngine {
    fn name(&self) -> &'static str {
        "serial"
    }

    unsafe fn push(&mut self, op: Op) -> io::Result<()> {
        self.queued.push(op);
        Ok(())
    }

    fn submit_and_wait(&mut self, _want: usize) -> io::Result<()> {
        self.counters.submits += 1;
        let queued = std::mem::take(&mut self.queued);
        for op in &queued {
            let result = self.run(op);
            self.counters.ops += 1;
            self.ready.push(Cqe {
                tag: op.tag,
                result,
            });
        }
        self.queued = queued;
        self.queued.clear();
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Cqe>) {
        out.append(&mut self.ready);
    }

    fn in_flight(&self) -> usize {
        self.queued.len() + self.ready.len()
    }

    fn counters(&self) -> Counters {
        self.counters
    }
}
