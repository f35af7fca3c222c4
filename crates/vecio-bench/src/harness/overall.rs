//! The overall progress of `vecio bench all`: one line over each experiment's own bars
//! (docs/report.md, "The harness").

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar};

use crate::harness::progress::{self, Ticker};

/// The display every new progress bar joins while an [`Overall`] is running.
static DISPLAY: Mutex<Option<MultiProgress>> = Mutex::new(None);

fn display() -> MutexGuard<'static, Option<MultiProgress>> {
    DISPLAY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Adds `bar` to the running overall display, if there is one (called for every new bar).
pub fn attach(bar: ProgressBar) -> ProgressBar {
    match display().as_ref() {
        Some(m) => m.add(bar),
        None => bar,
    }
}

/// Prints `text` on stdout without tearing the bars.
pub fn print(text: &str) {
    let out = || print!("{text}");
    match display().as_ref() {
        Some(m) => m.suspend(out),
        None => out(),
    }
}

/// One experiment of the run.
#[derive(Debug, Clone)]
pub struct Step {
    /// What the display calls it, e.g. `writev (seed 000)`.
    pub label: String,
    /// How long it should take.
    pub estimate: Duration,
}

#[derive(Debug)]
struct State {
    steps: Vec<Step>,
    /// Wall time of each finished step.
    took: Vec<Duration>,
    /// The running step and when it began.
    current: Option<(usize, Instant)>,
}

impl State {
    /// How far finished steps were off their estimates, within 0.5x..2x.
    fn scale(&self) -> f64 {
        let est: Duration = self.steps[..self.took.len()]
            .iter()
            .map(|s| s.estimate)
            .sum();
        let took: Duration = self.took.iter().sum();
        match est.as_secs_f64() {
            0.0 => 1.0,
            est => (took.as_secs_f64() / est).clamp(0.5, 2.0),
        }
    }

    /// Seconds left in the current step and in the whole run.
    fn left(&self) -> (f64, f64) {
        let scale = self.scale();
        let (cur, later_from) = match self.current {
            Some((i, t0)) => {
                let est = self.steps[i].estimate.as_secs_f64() * scale;
                ((est - t0.elapsed().as_secs_f64()).max(0.0), i + 1)
            }
            None => (0.0, self.took.len()),
        };
        let later: f64 = self.steps[later_from.min(self.steps.len())..]
            .iter()
            .map(|s| s.estimate.as_secs_f64() * scale)
            .sum();
        (cur, cur + later)
    }

    fn message(&self) -> String {
        let (cur, all) = self.left();
        match self.current {
            Some((i, _)) => format!(
                "[{}/{}] {}: ~{} left; whole run ~{} left",
                i + 1,
                self.steps.len(),
                self.steps[i].label,
                fmt_secs(cur),
                fmt_secs(all)
            ),
            None => format!("whole run ~{} left", fmt_secs(all)),
        }
    }
}

/// `1m05s`, `42s`.
pub fn fmt_secs(s: f64) -> String {
    let s = s.round() as u64;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// The overall display of a run; dropping it clears the display.
#[derive(Debug)]
pub struct Overall {
    state: Arc<Mutex<State>>,
    bar: ProgressBar,
    ticker: Option<Ticker>,
}

impl Overall {
    /// Starts the display for `steps`, run in this order.
    pub fn start(steps: Vec<Step>) -> Overall {
        let state = Arc::new(Mutex::new(State {
            steps,
            took: Vec::new(),
            current: None,
        }));
        if progress::enabled() {
            *display() = Some(MultiProgress::new());
        }
        // Hidden when bars are off: then no thread moves it.
        let bar = progress::new_bar(1000, "{msg}", "bench all");
        let (st, b) = (state.clone(), bar.clone());
        let ticker = (!bar.is_hidden()).then(|| {
            Ticker::every(Duration::from_millis(200), move || {
                if let Ok(s) = st.lock() {
                    let run: f64 = s.took.iter().map(Duration::as_secs_f64).sum::<f64>()
                        + s.current.map_or(0.0, |(_, t)| t.elapsed().as_secs_f64());
                    let (_, left) = s.left();
                    b.set_position((1000.0 * run / (run + left).max(1e-9)) as u64);
                    b.set_message(s.message());
                }
            })
        });
        Overall { state, bar, ticker }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Step `i` starts now.
    pub fn begin(&self, i: usize) {
        let mut s = self.lock();
        if i >= s.steps.len() {
            return;
        }
        s.current = Some((i, Instant::now()));
        if self.bar.is_hidden() {
            eprintln!("{}", s.message());
        }
    }

    /// The running step is over.
    pub fn end(&self) {
        let mut s = self.lock();
        if let Some((_, t0)) = s.current.take() {
            s.took.push(t0.elapsed());
        }
    }

    /// Seconds left in the whole run, as the display estimates it.
    #[cfg(test)]
    pub fn left(&self) -> f64 {
        self.lock().left().1
    }
}

impl Drop for Overall {
    fn drop(&mut self) {
        drop(self.ticker.take());
        self.bar.finish_and_clear();
        *display() = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(label: &str, secs: u64) -> Step {
        Step {
            label: label.into(),
            estimate: Duration::from_secs(secs),
        }
    }

    #[test]
    fn time_left_follows_the_steps() {
        let o = Overall::start(vec![step("a", 10), step("b", 20), step("c", 30)]);
        assert!((o.left() - 60.0).abs() < 0.5, "{}", o.left());
        o.begin(0);
        let left = o.left();
        assert!(left <= 60.0 && left > 59.0, "{left}");
        o.end();
        // Step a took almost nothing: the rest is scaled down to half (the floor).
        assert!((o.left() - 25.0).abs() < 0.5, "{}", o.left());
        o.begin(1);
        assert!(o.lock().message().starts_with("[2/3] b: ~10s left"));
    }

    #[test]
    fn formats_seconds() {
        assert_eq!(fmt_secs(42.4), "42s");
        assert_eq!(fmt_secs(65.0), "1m05s");
    }
}
