//! FUSE over io_uring: one queue per possible CPU, each served by a thread pinned to that CPU
//! with its own ring of 128-byte SQEs. A ring entry is a header buffer (`fuse_uring_req_header`)
//! and a page-aligned payload buffer; `FUSE_IO_URING_CMD_REGISTER` hands an entry to the kernel,
//! whose completion means a request has arrived in it, and `COMMIT_AND_FETCH` answers it and
//! waits for the next in one submission. `READ` data is read straight into the payload buffer
//! and `WRITE` data is written straight from it, both page-aligned. Forgets and interrupts still
//! come through `/dev/fuse`, served by the ordinary workers.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use vecio::{AlignedBuf, Engine, Region};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::abi::request::Body;
use crate::abi::{
    self, InHeader, Opcode, OutHeader, UringCmdReq, UringReqHeader, URING_CMD_COMMIT_AND_FETCH,
    URING_CMD_REGISTER,
};
use crate::error::{Errno, Error, OpResult, Result};
use crate::fs::Fs;
use crate::ops::{self, Answer, Ctx, Incoming};
use crate::stats::WorkerStats;

/// Entries registered per queue.
pub const ENTRIES_PER_QUEUE: usize = 2;

/// Number of queues the kernel expects: one per possible CPU.
pub fn queue_count() -> usize {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    n.max(1) as usize
}

/// The fuse module's parameter that allows FUSE over io_uring (present on kernels that have it).
pub const KNOB: &str = "/sys/module/fuse/parameters/enable_uring";

/// True when the fuse module has FUSE over io_uring enabled.
pub fn enabled() -> bool {
    std::fs::read_to_string(KNOB)
        .is_ok_and(|s| s.trim() == "Y")
}

struct Entry {
    header: Box<UringReqHeader>,
    payload: AlignedBuf,
    iov: Box<[libc::iovec; 2]>,
}

/// One queue's thread state.
pub struct RingQueue {
    qid: u16,
    dev: Arc<OwnedFd>,
    ring: IoUring<squeue::Entry128, cqueue::Entry>,
    entries: Vec<Entry>,
    fs: Arc<Fs>,
    engine: Box<dyn Engine>,
    /// The region the entries' payload buffers lie in, when `engine` registered it.
    region: Option<Region>,
    stats: Arc<WorkerStats>,
    scratch: Vec<u8>,
}

impl RingQueue {
    /// A queue `qid` on the connection `dev`, with payload buffers of `payload` bytes.
    pub fn new(
        qid: u16,
        dev: Arc<OwnedFd>,
        fs: Arc<Fs>,
        mut engine: Box<dyn Engine>,
        payload: usize,
        stats: Arc<WorkerStats>,
    ) -> Result<RingQueue> {
        let ring = IoUring::<squeue::Entry128, cqueue::Entry>::builder()
            .build(ENTRIES_PER_QUEUE as u32 * 2)
            .map_err(|e| Error::Device {
                what: "io_uring_setup (SQE128)",
                source: e,
            })?;
        let (payloads, region) =
            crate::transport::buffers::registered(engine.as_mut(), &[payload; ENTRIES_PER_QUEUE]);
        let entries = payloads
            .into_iter()
            .map(|mut payload| {
                let mut header = Box::new(UringReqHeader::new_zeroed());
                let iov = Box::new([
                    libc::iovec {
                        iov_base: header.as_mut_bytes().as_mut_ptr().cast(),
                        iov_len: std::mem::size_of::<UringReqHeader>(),
                    },
                    libc::iovec {
                        iov_base: payload.as_mut_ptr().cast(),
                        iov_len: payload.len(),
                    },
                ]);
                Entry {
                    header,
                    payload,
                    iov,
                }
            })
            .collect();
        Ok(RingQueue {
            qid,
            dev,
            ring,
            entries,
            fs,
            engine,
            region,
            stats,
            scratch: Vec::new(),
        })
    }

    fn command(&self, i: usize, cmd_op: u32, commit_id: u64) -> squeue::Entry128 {
        let req = UringCmdReq {
            flags: 0,
            commit_id,
            qid: self.qid,
            padding: [0; 6],
        };
        let mut cmd = [0u8; 80];
        cmd[..std::mem::size_of::<UringCmdReq>()].copy_from_slice(req.as_bytes());
        let mut sqe = opcode::UringCmd80::new(types::Fd(self.dev.as_raw_fd()), cmd_op)
            .cmd(cmd)
            .addr(Some(self.entries[i].iov.as_ptr() as u64))
            .build()
            .user_data(i as u64);
        // The fuse driver also reads sqe->len (the iovec count, 2), which the builder does not
        // set. Entry128 is repr(C) over struct io_uring_sqe, where len is the u32 at byte 24.
        // SAFETY: the write stays inside the 128-byte entry and matches the kernel's layout.
        unsafe {
            let p = (&mut sqe as *mut squeue::Entry128)
                .cast::<u8>()
                .add(24)
                .cast::<u32>();
            p.write_unaligned(2);
        }
        sqe
    }

    fn push(&mut self, sqe: &squeue::Entry128) -> Result<()> {
        loop {
            // SAFETY: the entry's buffers (iovecs, header, payload) live in self.entries, which
            // outlives the ring's use of them: the queue is dropped only after the ring.
            if unsafe { self.ring.submission().push(sqe) }.is_ok() {
                return Ok(());
            }
            self.ring.submit().map_err(|e| Error::Device {
                what: "io_uring_enter",
                source: e,
            })?;
        }
    }

    /// Registers every entry, then serves requests until the connection ends or `stop` is set.
    pub fn run(mut self, stop: Arc<AtomicBool>) -> Result<()> {
        for i in 0..self.entries.len() {
            let sqe = self.command(i, URING_CMD_REGISTER, 0);
            self.push(&sqe)?;
        }
        let ts = types::Timespec::from(Duration::from_millis(200));
        loop {
            let args = types::SubmitArgs::new().timespec(&ts);
            match self.ring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e)
                    if e.raw_os_error() == Some(libc::ETIME)
                        || e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => {
                    return Err(Error::Device {
                        what: "io_uring_enter",
                        source: e,
                    })
                }
            }
            let done: Vec<(usize, i32)> = self
                .ring
                .completion()
                .map(|c| (c.user_data() as usize, c.result()))
                .collect();
            if done.is_empty() && stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            for (i, res) in done {
                if res < 0 {
                    // The connection is gone (unmounted or aborted): the queue is done.
                    tracing::debug!(qid = self.qid, "ring entry ended: errno {}", -res);
                    return Ok(());
                }
                if i >= self.entries.len() {
                    continue;
                }
                let commit_id = self.serve(i);
                let sqe = self.command(i, URING_CMD_COMMIT_AND_FETCH, commit_id);
                self.push(&sqe)?;
            }
        }
    }

    /// Serves the request in entry `i` through the shared dispatcher; leaves the reply in the
    /// entry; returns its commit id.
    fn serve(&mut self, i: usize) -> u64 {
        let RingQueue {
            entries,
            fs,
            engine,
            region,
            stats,
            scratch,
            ..
        } = self;
        let ent = &mut entries[i];
        let io = ent.header.ring_ent_in_out;
        let h = InHeader::read_from_prefix(&ent.header.in_out)
            .map(|(h, _)| h)
            .unwrap_or_default();
        let payload_sz = (io.payload_sz as usize).min(ent.payload.len());
        stats.ring_requests.fetch_add(1, Ordering::Relaxed);
        let mut ctx = Ctx {
            fs,
            engine: engine.as_mut(),
            region: region.as_ref(),
            stats,
            later: None,
        };
        let op_in = &ent.header.op_in[..];
        let result = match Opcode::from_raw(h.opcode) {
            // READ data goes straight into the payload buffer; WRITE data comes straight from
            // it. Their arguments are in the entry's opcode header.
            Some(Opcode::Read) => ops::dispatch(
                &mut ctx,
                Incoming {
                    header: h,
                    body: Body::over(op_in),
                    ext: &[],
                    payload: None,
                },
                &mut ent.payload,
            ),
            Some(Opcode::Write) => ops::dispatch(
                &mut ctx,
                Incoming {
                    header: h,
                    body: Body::over(op_in),
                    ext: &[],
                    payload: Some(&ent.payload[..payload_sz]),
                },
                &mut [],
            ),
            // Rebuild other requests as /dev/fuse would deliver them: the opcode's own header
            // (the bytes the total length leaves for it), then the payload (names, values).
            _ => {
                let head = std::mem::size_of::<InHeader>();
                let op_len = (h.len as usize)
                    .saturating_sub(head + payload_sz)
                    .min(abi::URING_OP_IN_OUT_SZ);
                scratch.clear();
                scratch.extend_from_slice(&op_in[..op_len]);
                scratch.extend_from_slice(&ent.payload[..payload_sz]);
                // The extensions (total_extlen) end the payload.
                match Body::split_ext(scratch, h.total_extlen) {
                    Ok((body, ext)) => {
                        let incoming = Incoming {
                            header: h,
                            body,
                            ext,
                            payload: None,
                        };
                        ops::dispatch(&mut ctx, incoming, &mut ent.payload)
                    }
                    Err(e) => Err(e),
                }
            }
        };
        let result: OpResult<usize> = result.and_then(|answer| match answer {
            Answer::Buffer(n) => Ok(n),
            Answer::Nothing => Ok(0),
            other => {
                let bytes = other.payload(&[]).unwrap_or_default();
                let dst = ent.payload.get_mut(..bytes.len()).ok_or(Errno::RANGE)?;
                dst.copy_from_slice(bytes);
                Ok(bytes.len())
            }
        });
        let (error, n) = match result {
            Ok(n) => (0, n),
            Err(e) => (-e.0, 0),
        };
        let out = OutHeader {
            len: (std::mem::size_of::<OutHeader>() + n) as u32,
            error,
            unique: h.unique,
        };
        ent.header.in_out[..std::mem::size_of::<OutHeader>()].copy_from_slice(out.as_bytes());
        ent.header.ring_ent_in_out.payload_sz = n as u32;
        io.commit_id
    }
}

/// Pins the calling thread to `cpu` (requests of a CPU go to its queue).
pub fn pin_to(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
