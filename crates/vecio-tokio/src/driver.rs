//! [`Driver`]: one vecio [`Queue`] shared by the tasks of a tokio runtime, its completions
//! awaited through an eventfd the engine signals.
//!
//! A task pushes its request and submits it under a short lock (never across an `.await`),
//! then awaits a oneshot channel. A reaper task, running only while requests are in flight,
//! waits on the eventfd with `AsyncFd`, reaps the queue and hands each completion to its
//! request's channel. A request whose future was dropped still completes inside the queue,
//! which owns its buffers until then; its completion is dropped when it arrives.

use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::sync::oneshot;
use vecio::{Completion, Engine, EngineKind, FastReadPolicy, Queue};

/// How often parked requests (waiting for a range another thread holds) are retried when
/// nothing else is in flight to wake the reaper.
const PARKED_RETRY: Duration = Duration::from_millis(1);

/// One engine and its queue, shared by every [`File`](crate::File) opened through it.
///
/// Cloning a `Driver` is cheap (an `Arc`). Create it inside a tokio runtime (it registers an
/// eventfd with the runtime's reactor); it serves the tasks of that runtime, on any of its
/// worker threads. One `Driver` per runtime is the usual shape; several spread the lock.
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
}

struct Inner {
    state: Mutex<State>,
    /// The eventfd the engine signals; `None` for engines that complete inside `submit`.
    eventfd: Option<AsyncFd<Arc<OwnedFd>>>,
    /// The fast-read policy for buffered reads tried inline.
    pub(crate) policy: FastReadPolicy,
}

struct State {
    queue: Queue,
    waiting: HashMap<u64, oneshot::Sender<Completion>>,
    next_tag: u64,
    /// True while a reaper task runs.
    reaping: bool,
}

impl Driver {
    /// A driver over `engine` (io_uring by default elsewhere in this crate). Must be called
    /// from inside a tokio runtime.
    pub fn new(engine: Box<dyn Engine>) -> io::Result<Self> {
        Self::with_policy(engine, FastReadPolicy::default())
    }

    /// A driver over `engine` whose buffered reads are tried inline under `policy`.
    pub fn with_policy(engine: Box<dyn Engine>, policy: FastReadPolicy) -> io::Result<Self> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(io::Error::other(
                "vecio_tokio::Driver must be created inside a tokio runtime",
            ));
        }
        let mut queue = Queue::new(engine);
        let efd: OwnedFd = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        )?;
        let efd = Arc::new(efd);
        let eventfd = match queue.notify_on(efd.clone())? {
            // SAFETY: the AsyncFd owns an Arc of the eventfd, so the descriptor stays open and
            // the same for the AsyncFd's whole life.
            true => Some(unsafe { AsyncFd::register(efd) }?),
            false => None,
        };
        Ok(Driver {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    queue,
                    waiting: HashMap::new(),
                    next_tag: 0,
                    reaping: false,
                }),
                eventfd,
                policy,
            }),
        })
    }

    /// A driver over a default io_uring engine.
    pub fn uring() -> io::Result<Self> {
        Self::new(EngineKind::Uring.build()?)
    }

    /// The fast-read policy of this driver's files.
    pub fn policy(&self) -> &FastReadPolicy {
        &self.inner.policy
    }

    /// The engine's counters (ops, system calls), for tests and benchmarks.
    pub fn counters(&self) -> vecio::engine::Counters {
        self.inner.lock().queue.engine_mut().counters()
    }

    /// Pushes one request with `push` (given the queue and the request's tag), submits it,
    /// and waits for its completion. A refused push comes back as `Err` with its buffers.
    pub(crate) async fn run(
        &self,
        push: impl FnOnce(&mut Queue, u64) -> Result<(), vecio::PushError>,
    ) -> Result<Completion, vecio::PushError> {
        let (tx, rx) = oneshot::channel();
        let spawn_reaper = {
            let mut st = self.inner.lock();
            let tag = st.next_tag;
            st.next_tag = st.next_tag.wrapping_add(1);
            push(&mut st.queue, tag)?;
            st.waiting.insert(tag, tx);
            let submitted = st.queue.submit();
            st.deliver();
            if submitted.is_err() {
                // The engine failed: fail everything waiting rather than leave it hanging.
                fail_waiting(&mut st);
            }
            let spawn = !st.reaping && !st.waiting.is_empty();
            if spawn {
                st.reaping = true;
            }
            spawn
        };
        if spawn_reaper {
            tokio::spawn(reap(self.inner.clone()));
        }
        match rx.await {
            Ok(c) => Ok(c),
            Err(_) => Err(vecio::PushError {
                error: vecio::Error::Engine {
                    engine: "vecio-tokio",
                    source: io::Error::other("the driver stopped before the request completed"),
                },
                bufs: Vec::new(),
            }),
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl State {
    /// Hands every ready completion to its request's future (dropped if that is gone).
    fn deliver(&mut self) {
        let mut done = Vec::new();
        self.queue.reap(&mut done);
        for c in done {
            if let Some(tx) = self.waiting.remove(&c.user_data) {
                let _ = tx.send(c);
            }
        }
    }
}

/// Fails every waiting request: their futures end with an error (the queue keeps their
/// buffers until the engine gives them back).
fn fail_waiting(st: &mut State) {
    st.waiting.clear();
}

/// The reaper: waits on the eventfd, reaps, delivers; ends when nothing is in flight.
async fn reap(inner: Arc<Inner>) {
    loop {
        let parked = inner.lock().queue.parked() > 0;
        let Some(efd) = inner.eventfd.as_ref() else {
            // An engine that completes inside submit: only parked requests can be left.
            tokio::time::sleep(PARKED_RETRY).await;
            if !submit_and_deliver(&inner) {
                return;
            }
            continue;
        };
        if parked {
            tokio::select! {
                r = wait_signal(efd) => if r.is_err() { break },
                _ = tokio::time::sleep(PARKED_RETRY) => {}
            }
        } else if wait_signal(efd).await.is_err() {
            break;
        }
        if !submit_and_deliver(&inner) {
            return;
        }
    }
    // The reactor failed: fail what waits, so no future hangs.
    let mut st = inner.lock();
    st.waiting.clear();
    st.reaping = false;
}

/// Submits, reaps and delivers; false (and the reaper marked gone) when nothing is left in
/// flight.
fn submit_and_deliver(inner: &Inner) -> bool {
    let mut st = inner.lock();
    let submitted = st.queue.submit();
    st.deliver();
    if submitted.is_err() {
        fail_waiting(&mut st);
    }
    if st.waiting.is_empty() {
        st.reaping = false;
        return false;
    }
    true
}

/// Waits until the eventfd has been signalled, and resets it.
async fn wait_signal(efd: &AsyncFd<Arc<OwnedFd>>) -> io::Result<()> {
    loop {
        let mut guard = efd.readable().await?;
        let mut count = [0u8; 8];
        match guard.try_io(|fd| Ok(rustix::io::read(&**fd.get_ref(), &mut count)?)) {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => continue,
        }
    }
}
