//! The nowait experiment's event loop: one thread keeping reads in flight through a
//! `Queue`, and the raw `preadv2` baseline.

use super::*;

/// `preadv2` on f1, one call at a time, Zipf offsets: what a cached 16 KiB read costs.
pub(super) fn raw_baseline(
    path: &Path,
    zipf: &Zipf,
    runtime: Duration,
    rng: &mut SmallRng,
) -> Result<Latency> {
    let file = File::options().read(true).direct(Direct::Off).open(path)?;
    let mut h = Latencies::new().all;
    let mut buf = vec![0u8; READ];
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    let t0 = Instant::now();
    while t0.elapsed() < runtime.min(Duration::from_secs(2)) {
        let off = zipf.sample(rng) * READ as u64;
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: READ,
        };
        let t = Instant::now();
        // SAFETY: iov points at buf, valid for READ bytes for the call.
        let r = unsafe { libc::preadv2(fd, &iov, 1, off as i64, 0) };
        let ns = t.elapsed().as_nanos() as u64;
        if r < 0 {
            return Err(std::io::Error::last_os_error()).context("preadv2");
        }
        let _ = h.record(ns.max(1));
    }
    Ok(Latency::of(&h))
}

fn engine_for(config: Config, opts: &NowaitOptions) -> Result<Box<dyn Engine>> {
    Ok(match config {
        Config::Uring => Box::new(UringEngine::new(UringOptions {
            entries: (opts.depth.next_power_of_two() as u32).max(8),
            ..UringOptions::default()
        })?),
        _ => Box::new(PoolEngine::new(PoolOptions {
            threads: opts.threads,
            depth: opts.depth * 4,
            fast_read: config.policy(),
            ..PoolOptions::default()
        })?),
    })
}

/// One workload through one configuration for `opts.common.runtime`.
pub(super) fn measure(
    files: &Files,
    w: Workload,
    c: Config,
    opts: &NowaitOptions,
    zipf: &Zipf,
    rng: &mut SmallRng,
) -> Result<Run> {
    // The three files, buffered.
    let open = |p| File::options().read(true).direct(Direct::Off).open(p);
    let [f1, f2, f3] = files.each_ref().map(|p| open(p).map(Arc::new));
    let handles = [f1?, f2?, f3?];
    // Where the next read goes: f1 zipf-random, f2 uniformly random, f3 sequential.
    let (large_blocks, mut seq) = (opts.large / READ as u64, 0);
    let mut next = |rng: &mut SmallRng| {
        let file = w.pick(rng);
        let block = match file {
            0 => zipf.sample(rng),
            1 => rng.gen_range(0..large_blocks),
            _ => {
                seq = (seq + 1) % large_blocks;
                seq
            }
        };
        (file, block)
    };
    let mut q = Queue::new(engine_for(c, opts)?);
    // Keep f2 uncached for the whole run: the kernel would otherwise cache what it reads.
    let f2 = files[1].clone();
    let evictor = Ticker::every(Duration::from_millis(100), move || {
        let _ = pagecache::evict(&f2);
    });

    let mut tally = Tally::new(opts.depth);
    let mut done: Vec<Completion> = Vec::new();
    let mut to_issue: Vec<usize> = (0..opts.depth).collect();
    let t0 = Instant::now();
    let mut issued = 0u64;
    'run: loop {
        while let Some(slot) = to_issue.pop() {
            // Reads served inline complete at once and come straight back here: look at the
            // clock now and then, not only when waiting.
            issued += 1;
            if issued % 64 == 0 && t0.elapsed() >= opts.common.runtime {
                break 'run;
            }
            // The next read, queued for `slot`; a refusal ends the run with its error.
            let (file, block) = next(rng);
            let spare = tally.spare.pop();
            let bufs = spare.unwrap_or_else(|| vec![OwnedBuf::Vec(vec![0u8; READ])]);
            tally.inflight[slot] = Some((Instant::now(), file));
            let at = block * READ as u64;
            let pushed = q.push_read(&handles[file], at, bufs, RwFlags::empty(), slot as u64);
            if let Err(vecio::PushError { error, bufs }) = pushed {
                tally.spare.push(bufs);
                tally.result = Err(error.into());
                break 'run;
            }
            q.reap(&mut done);
            tally.take(&mut done, &mut to_issue);
        }
        if t0.elapsed() >= opts.common.runtime || tally.result.is_err() {
            break;
        }
        if let Err(e) = q.submit_and_wait(1) {
            tally.result = Err(e.into());
            break;
        }
        q.reap(&mut done);
        tally.take(&mut done, &mut to_issue);
    }
    let wall = t0.elapsed().as_secs_f64();
    let _ = q.submit_and_wait(q.len());
    q.reap(&mut done);
    drop(q);
    drop(evictor);
    tally.result?;
    Ok(Run {
        mb_s: tally.bytes as f64 / wall / 1e6,
        latencies: tally.latencies,
        fast: handles
            .iter()
            .map(|h| h.fast_read_stats(&c.policy()))
            .collect(),
    })
}

/// What the event loop has seen: latencies, bytes, and the slots and buffers to reuse.
struct Tally {
    latencies: Latencies,
    bytes: u64,
    /// When each slot's read was issued, and to which file.
    inflight: Vec<Option<(Instant, usize)>>,
    spare: Vec<Vec<OwnedBuf>>,
    result: Result<()>,
}

impl Tally {
    fn new(depth: usize) -> Tally {
        Tally {
            latencies: Latencies::new(),
            bytes: 0,
            inflight: (0..depth).map(|_| None).collect(),
            spare: (0..depth)
                .map(|_| vec![OwnedBuf::Vec(vec![0u8; READ])])
                .collect(),
            result: Ok(()),
        }
    }

    /// Records each completion's latency and bytes; its slot goes back to `to_issue`.
    fn take(&mut self, done: &mut Vec<Completion>, to_issue: &mut Vec<usize>) {
        let now = Instant::now();
        for c in done.drain(..) {
            let slot = c.user_data as usize;
            if let Some((start, file)) = self.inflight.get_mut(slot).and_then(Option::take) {
                let ns = ((now - start).as_nanos() as u64).max(1);
                self.latencies.record(file, ns);
            }
            match c.result {
                Ok(n) => self.bytes += n as u64,
                Err(e) => self.result = Err(e.into()),
            }
            self.spare.push(c.bufs);
            to_issue.push(slot);
        }
    }
}
