//! The sync engine: one `preadv2`/`pwritev2` per operation.

use std::io;

use crate::engine::{syscall, Counters, Cqe, Engine, Op};

/// One `preadv2`/`pwritev2` per operation, with its flags: the kernel submits every segment
/// before waiting on any (the 2002 rework), but operations run one after another.
#[derive(Default)]
pub struct SyncEngine {
    queued: Vec<Op>,
    ready: Vec<Cqe>,
    counters: Counters,
}

impl SyncEngine {
    /// A new sync engine.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Engine for SyncEngine {
    fn name(&self) -> &'static str {
        "sync"
    }

    unsafe fn push(&mut self, op: Op) -> io::Result<()> {
        self.queued.push(op);
        Ok(())
    }

    fn submit_and_wait(&mut self, _want: usize) -> io::Result<()> {
        self.counters.submits += 1;
        for op in self.queued.drain(..) {
            self.counters.syscalls += 1;
            self.counters.ops += 1;
            let result = syscall::vectored(&op);
            self.ready.push(Cqe {
                tag: op.tag,
                result,
            });
        }
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
