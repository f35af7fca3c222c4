//! The page cache over one measurement: a thread samples a file's resident pages until
//! stopped, giving the curve the report plots.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use vecio_host::pagecache::CacheSnapshot;

use crate::harness::progress::Ticker;

/// One point of the curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CachePoint {
    /// Seconds since sampling started.
    pub t_s: f64,
    /// Bytes of the file resident in the page cache (`mincore(2)`).
    pub file_resident: u64,
    /// Change of the system's `Cached:` since sampling started, bytes.
    pub system_cached: i64,
}

/// A running sampler; [`CacheSampler::stop`] ends it and returns the curve.
#[derive(Debug)]
pub struct CacheSampler {
    ticker: Ticker,
    points: Arc<Mutex<Vec<CachePoint>>>,
}

impl CacheSampler {
    /// Starts sampling `path` every `interval` (the first point at once).
    pub fn start(path: &Path, interval: Duration) -> CacheSampler {
        let points = Arc::new(Mutex::new(Vec::new()));
        let (path, sink) = (path.to_path_buf(), Arc::clone(&points));
        // The start and the first snapshot, taken on the sampling thread at its first tick.
        let mut origin: Option<(Instant, Option<CacheSnapshot>)> = None;
        let ticker = Ticker::every(interval, move || {
            let (t0, first) =
                *origin.get_or_insert_with(|| (Instant::now(), CacheSnapshot::take(&path).ok()));
            if let (Some(first), Ok(now)) = (first, CacheSnapshot::take(&path)) {
                let point = CachePoint {
                    t_s: t0.elapsed().as_secs_f64(),
                    file_resident: now.file_resident,
                    system_cached: now.system_cached as i64 - first.system_cached as i64,
                };
                sink.lock().unwrap_or_else(|p| p.into_inner()).push(point);
            }
        });
        CacheSampler { ticker, points }
    }

    /// The interval that gives about 25 points over `runtime`, between 20 ms and 500 ms.
    pub fn interval_for(runtime: Duration) -> Duration {
        (runtime / 25).clamp(Duration::from_millis(20), Duration::from_millis(500))
    }

    /// Stops sampling and returns the curve (its last point is the last tick's).
    pub fn stop(self) -> Vec<CachePoint> {
        drop(self.ticker);
        let mut points = self.points.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *points)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_is_clamped() {
        assert_eq!(
            CacheSampler::interval_for(Duration::from_millis(100)),
            Duration::from_millis(20)
        );
        assert_eq!(
            CacheSampler::interval_for(Duration::from_secs(5)),
            Duration::from_millis(200)
        );
        assert_eq!(
            CacheSampler::interval_for(Duration::from_secs(60)),
            Duration::from_millis(500)
        );
    }
}
