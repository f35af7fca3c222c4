//! The measurement: tasks reading 16 KiB at a time through `tokio::fs::File` for the runtime,
//! their latencies, and whether the process really has an io_uring (tokio falls back to its
//! blocking pool without a word when the kernel refuses a ring).

use std::io::SeekFrom;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncSeekExt};

use crate::Args;

/// Bytes per read, as the bench's other paths.
const READ: u64 = 16 * 1024;

/// What one measurement found.
pub struct Outcome {
    /// MiB/s over the run.
    pub mib_s: f64,
    /// Percentiles and mean of the read latencies, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// Mean, µs.
    pub mean_us: f64,
    /// Reads done.
    pub reads: u64,
    /// Reads that failed, and the first failure.
    pub errors: u64,
    /// The first failure's text.
    pub first_error: Option<String>,
    /// True when the process had an io_uring descriptor open after the run.
    pub io_uring: bool,
}

impl Outcome {
    /// One line of JSON.
    pub fn json(&self) -> String {
        let err = match &self.first_error {
            Some(e) => format!("\"{}\"", e.replace('\\', "\\\\").replace('"', "\\\"")),
            None => "null".into(),
        };
        format!(
            "{{\"mib_s\":{:.3},\"p50_us\":{:.3},\"p99_us\":{:.3},\"p999_us\":{:.3},\
             \"mean_us\":{:.3},\"reads\":{},\"errors\":{},\"first_error\":{err},\"io_uring\":{}}}",
            self.mib_s,
            self.p50_us,
            self.p99_us,
            self.p999_us,
            self.mean_us,
            self.reads,
            self.errors,
            self.io_uring
        )
    }
}

/// A small xorshift generator: the offsets need no more, and the crate stays at two dependencies.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Which file (large or not) and offset the next read of `scenario` takes: the 73/18/9 split of
/// `tokio_reads/run.rs`'s `pick` (cached random / uncached random / sequential).
fn pick(scenario: &str, rng: &mut Rng, seq: &mut u64, medium: u64, large: u64) -> (bool, u64) {
    let r = match scenario {
        "cached" => 0,
        "direct" => 80,
        _ => rng.below(100),
    };
    let blocks = |len: u64| (len / READ).max(1);
    if r < 73 {
        (false, rng.below(blocks(medium)) * READ)
    } else if r < 91 {
        (true, rng.below(blocks(large)) * READ)
    } else {
        *seq = (*seq + READ) % (blocks(large) * READ);
        (true, *seq)
    }
}

/// Latencies (ns), bytes, failures and the first failure of one task.
type TaskOut = (Vec<u64>, u64, u64, Option<String>);

async fn open(path: &std::path::Path, direct: bool) -> std::io::Result<tokio::fs::File> {
    let mut o = tokio::fs::OpenOptions::new();
    o.read(true);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path).await
}

async fn task(a: Arc<Args>, sizes: (u64, u64), seed: u64, until: Instant) -> TaskOut {
    let mut out: TaskOut = (Vec::new(), 0, 0, None);
    let files = match (open(&a.medium, false).await, open(&a.large, true).await) {
        (Ok(m), Ok(l)) => Some((m, l)),
        (Err(e), _) | (_, Err(e)) => {
            out.2 += 1;
            out.3 = Some(format!("open: {e}"));
            None
        }
    };
    let Some((mut medium, mut large)) = files else {
        return out;
    };
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut seq = seed * (64 << 20);
    let mut buf = vec![0u8; READ as usize];
    while Instant::now() < until {
        let (is_large, off) = pick(&a.scenario, &mut rng, &mut seq, sizes.0, sizes.1);
        let f = if is_large { &mut large } else { &mut medium };
        let t = Instant::now();
        let r = match f.seek(SeekFrom::Start(off)).await {
            Ok(_) => f.read(&mut buf).await,
            Err(e) => Err(e),
        };
        match r {
            Ok(n) => {
                out.0.push(t.elapsed().as_nanos() as u64);
                out.1 += n as u64;
            }
            Err(e) => {
                out.2 += 1;
                out.3.get_or_insert_with(|| e.to_string());
                // A read that fails fails again: stop rather than spin on it.
                break;
            }
        }
    }
    out
}

/// True when one of this process's descriptors is an io_uring.
fn has_io_uring() -> bool {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return false;
    };
    dir.flatten().any(|e| {
        std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("io_uring"))
    })
}

fn pct(lat: &[u64], p: f64) -> f64 {
    if lat.is_empty() {
        return 0.0;
    }
    lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)] as f64 / 1000.0
}

/// Runs the tasks on a runtime with io_uring enabled and sums up what they did.
pub fn run(a: &Args) -> std::io::Result<Outcome> {
    let mut b = if a.current_thread {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let rt = b.enable_all().enable_io_uring().build()?;
    let sizes = (
        std::fs::metadata(&a.medium)?.len(),
        std::fs::metadata(&a.large)?.len(),
    );
    let args = Arc::new(Args {
        scenario: a.scenario.clone(),
        medium: a.medium.clone(),
        large: a.large.clone(),
        ..*a
    });
    let start = Instant::now();
    let until = start + Duration::from_millis(a.runtime_ms);
    let (outs, io_uring) = rt.block_on(async {
        let hs: Vec<_> = (0..a.tasks)
            .map(|s| tokio::spawn(task(args.clone(), sizes, s + 1, until)))
            .collect();
        let mut outs = Vec::new();
        for h in hs {
            outs.push(h.await.unwrap_or_default());
        }
        (outs, has_io_uring())
    });
    let secs = start.elapsed().as_secs_f64();
    let bytes: u64 = outs.iter().map(|o| o.1).sum();
    let errors = outs.iter().map(|o| o.2).sum();
    let first_error = outs.iter().find_map(|o| o.3.clone());
    let mut lat: Vec<u64> = outs.into_iter().flat_map(|o| o.0).collect();
    lat.sort_unstable();
    let mean = lat.iter().sum::<u64>() as f64 / lat.len().max(1) as f64 / 1000.0;
    Ok(Outcome {
        mib_s: bytes as f64 / secs / (1 << 20) as f64,
        p50_us: pct(&lat, 0.5),
        p99_us: pct(&lat, 0.99),
        p999_us: pct(&lat, 0.999),
        mean_us: mean,
        reads: lat.len() as u64,
        errors,
        first_error,
        io_uring,
    })
}
