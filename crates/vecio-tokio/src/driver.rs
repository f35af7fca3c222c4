//! [`Driver`]: one vecio [`Queue`] shared by the tasks of a tokio runtime, entered by one thread
//! of its own.
//!
//! A task pushes its request under a short lock (never across an `.await`), wakes the driver's
//! ring thread if it sleeps, and awaits a oneshot channel. The ring thread is the only thread
//! that enters the engine (`io_uring_enter`): it submits what the tasks pushed, waits for the
//! next completion or the next push, reaps the queue and hands each completion to its
//! request's channel. A request whose future was dropped still completes inside the queue,
//! which owns its buffers until then; its completion is dropped when it arrives.
//!
//! Why a thread and not a task: with the tasks submitting from every worker of a multi-threaded
//! runtime and a reaper task woken by the runtime's reactor, 1 request in 1000 waited 13-34 ms
//! for its completion on this project's 2-vCPU machine (the whole queue completed, unreaped);
//! with one thread entering the ring the same O_DIRECT reads keep their p99.9 under 2 ms
//! (docs/results.md, `vecio bench tokio`).

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec};
use tokio::sync::oneshot;
use vecio::{Completion, Engine, EngineKind, FastReadPolicy, Queue};

/// How often parked requests (waiting for a range another thread holds) are retried: nothing
/// signals another thread's release.
const PARKED_RETRY: Timespec = Timespec {
    tv_sec: 0,
    tv_nsec: 1_000_000,
};

/// One engine and its queue, shared by every [`File`](crate::File) opened through it.
///
/// Cloning a `Driver` is cheap (an `Arc`). It serves the tasks of any runtime, on any of their
/// threads: its completions do not depend on a runtime's reactor. Each driver has one thread
/// of its own, the only one that enters its engine; it ends when the last clone is dropped
/// and what was in flight has completed. One `Driver` for many files is the usual shape.
///
/// ```
/// # #[tokio::main(flavor = "multi_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let driver = vecio_tokio::Driver::new(vecio::EngineKind::Uring.build()?)?;
/// # let dir = tempfile::tempdir()?;
/// let opts = vecio::File::options().read(true).write(true).create(true);
/// let file = driver.open(dir.path().join("f"), opts).await?;
/// let (n, _buf) = file.write_at(vec![7u8; 4096], 0).await;
/// assert_eq!(n?, 4096);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Driver {
    inner: Arc<Inner>,
    /// Stops the ring thread when the last clone goes.
    _stop: Arc<StopOnDrop>,
}

struct Inner {
    state: Mutex<State>,
    /// Written by a task that pushed while the ring thread sleeps.
    kick: OwnedFd,
    /// The eventfd the engine signals on completion; `None` for engines that complete inside
    /// `submit`.
    completions: Option<Arc<OwnedFd>>,
    /// True while the ring thread sleeps (or is about to): a push must kick it.
    sleeping: AtomicBool,
    /// Set when the last `Driver` is dropped.
    stop: AtomicBool,
    /// The fast-read policy for buffered reads tried inline.
    pub(crate) policy: FastReadPolicy,
}

struct State {
    queue: Queue,
    waiting: HashMap<u64, oneshot::Sender<Completion>>,
    next_tag: u64,
}

struct StopOnDrop(Arc<Inner>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::SeqCst);
        self.0.wake();
    }
}

impl Driver {
    /// A driver over `engine` (io_uring by default elsewhere in this crate), with its ring
    /// thread started.
    pub fn new(engine: Box<dyn Engine>) -> io::Result<Self> {
        Self::with_policy(engine, FastReadPolicy::default())
    }

    /// A driver over `engine` whose buffered reads are tried inline under `policy`.
    pub fn with_policy(engine: Box<dyn Engine>, policy: FastReadPolicy) -> io::Result<Self> {
        let mut queue = Queue::new(engine);
        let eventfd = || rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK);
        let efd = Arc::new(eventfd()?);
        let completions = queue.notify_on(efd.clone())?.then_some(efd);
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                queue,
                waiting: HashMap::new(),
                next_tag: 0,
            }),
            kick: eventfd()?,
            completions,
            sleeping: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            policy,
        });
        let ring = inner.clone();
        std::thread::Builder::new()
            .name("vecio-tokio-io".into()) // 15 bytes at most: the kernel's comm
            .spawn(move || ring_thread(&ring))?;
        Ok(Driver {
            _stop: Arc::new(StopOnDrop(inner.clone())),
            inner,
        })
    }

    /// A driver over a default io_uring engine.
    pub fn uring() -> io::Result<Self> {
        Self::new(EngineKind::Uring.build()?)
    }

    /// The process's shared driver over a default io_uring engine, made on first use and kept
    /// for the life of the process (as tokio keeps its blocking pool): what
    /// [`File::open`](crate::File::open) uses, so opening many files does not make a ring and a
    /// thread for each. A service that wants its own engine, or to spread the load, makes its
    /// own drivers.
    pub fn shared() -> io::Result<Self> {
        static SHARED: Mutex<Option<Driver>> = Mutex::new(None);
        let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(d) = shared.as_ref() {
            return Ok(d.clone());
        }
        let d = Self::uring()?;
        *shared = Some(d.clone());
        Ok(d)
    }

    /// The fast-read policy of this driver's files.
    pub fn policy(&self) -> &FastReadPolicy {
        &self.inner.policy
    }

    /// The engine's counters (ops, system calls), for tests and benchmarks.
    pub fn counters(&self) -> vecio::engine::Counters {
        self.inner.lock().queue.engine_mut().counters()
    }

    /// Pushes one request with `push` (given the queue and the request's tag) and waits for its
    /// completion. A refused push comes back as `Err` with its buffers.
    pub(crate) async fn run(
        &self,
        push: impl FnOnce(&mut Queue, u64) -> Result<(), vecio::PushError>,
    ) -> Result<Completion, vecio::PushError> {
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.inner.lock();
            let tag = st.next_tag;
            st.next_tag = st.next_tag.wrapping_add(1);
            push(&mut st.queue, tag)?;
            st.waiting.insert(tag, tx);
        }
        self.inner.wake();
        match rx.await {
            Ok(c) => Ok(c),
            Err(_) => Err(vecio::PushError {
                error: vecio::Error::Engine {
                    engine: "vecio-tokio",
                    source: io::Error::other(
                        "the driver's engine failed before the request completed",
                    ),
                },
                bufs: Vec::new(),
            }),
        }
    }
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("engine", &self.inner.lock().queue.engine_mut().name())
            .finish()
    }
}

/// Two handles are equal when they are clones of one driver (one queue, one thread).
impl PartialEq for Driver {
    fn eq(&self, other: &Driver) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for Driver {}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Kicks the ring thread if it sleeps (or is about to).
    fn wake(&self) {
        if self.sleeping.swap(false, Ordering::SeqCst) {
            // A full eventfd counter (2^64 - 2 kicks unread) is the only failure: it is
            // readable then, which is all a kick needs.
            let _ = rustix::io::write(&self.kick, &1u64.to_ne_bytes());
        }
    }
}

impl State {
    /// Submits what was pushed, reaps, and hands every completion to its request's future
    /// (dropped if that is gone). An engine failure fails every waiting request, so no future
    /// hangs.
    fn submit_and_deliver(&mut self) {
        if self.queue.submit().is_err() {
            self.waiting.clear();
        }
        let mut done = Vec::new();
        self.queue.reap(&mut done);
        for c in done {
            if let Some(tx) = self.waiting.remove(&c.user_data) {
                let _ = tx.send(c);
            }
        }
    }
}

/// The ring thread: submits, reaps and delivers, then sleeps until a completion or a push;
/// ends once the last `Driver` is gone and nothing is left in the queue.
fn ring_thread(inner: &Inner) {
    loop {
        // Announce the sleep first, then look: a push after the look sees `sleeping` and kicks.
        inner.sleeping.store(true, Ordering::SeqCst);
        let parked = {
            let mut st = inner.lock();
            st.submit_and_deliver();
            if inner.stop.load(Ordering::SeqCst) && st.queue.is_empty() && st.queue.parked() == 0 {
                return;
            }
            st.queue.parked() > 0
        };
        wait(inner, parked.then_some(&PARKED_RETRY));
        inner.sleeping.store(false, Ordering::SeqCst);
        drain(&inner.kick);
        if let Some(c) = &inner.completions {
            drain(c);
        }
    }
}

/// Sleeps until the kick or the completion eventfd is readable, or `timeout` passes.
fn wait(inner: &Inner, timeout: Option<&Timespec>) {
    let kick = inner.kick.as_fd();
    let mut fds = vec![PollFd::new(&kick, PollFlags::IN)];
    let completions = inner.completions.as_deref().map(AsFd::as_fd);
    if let Some(c) = &completions {
        fds.push(PollFd::new(c, PollFlags::IN));
    }
    // EINTR: look again; any other failure would repeat at once, so the loop still progresses
    // through submit_and_deliver.
    let _ = rustix::event::poll(&mut fds, timeout);
}

/// Resets an eventfd (non-blocking: nothing to read is fine).
fn drain(fd: &OwnedFd) {
    let mut count = [0u8; 8];
    let _ = rustix::io::read(fd, &mut count);
}
