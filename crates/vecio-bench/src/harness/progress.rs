//! Progress bars on stderr: a timed phase and a byte count, hidden without a terminal or with
//! `VECIO_NO_PROGRESS`.

use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Environment variable that turns progress bars off when set (to anything).
pub const NO_PROGRESS_ENV: &str = "VECIO_NO_PROGRESS";

/// True when progress bars are drawn: stderr is a terminal and `VECIO_NO_PROGRESS` is unset.
pub fn enabled() -> bool {
    should_show(
        std::io::stderr().is_terminal(),
        std::env::var_os(NO_PROGRESS_ENV).is_some(),
    )
}

/// The decision behind [`enabled`], separated from the environment for testing.
fn should_show(stderr_is_terminal: bool, no_progress_set: bool) -> bool {
    stderr_is_terminal && !no_progress_set
}

/// A thread calling a function every `period` until dropped (which waits for it).
#[derive(Debug)]
pub struct Ticker(Option<(Sender<()>, JoinHandle<()>)>);

impl Ticker {
    /// Calls `tick` now and every `period` after.
    pub fn every(period: Duration, mut tick: impl FnMut() + Send + 'static) -> Ticker {
        let (tx, rx) = mpsc::channel::<()>();
        let handle = std::thread::spawn(move || loop {
            tick();
            if !matches!(rx.recv_timeout(period), Err(RecvTimeoutError::Timeout)) {
                break;
            }
        });
        Ticker(Some((tx, handle)))
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        if let Some((stop, handle)) = self.0.take() {
            drop(stop);
            let _ = handle.join();
        }
    }
}

/// A bar of length `len` with `template` (`{prefix:>16} [{bar:30}] ...`), joining the
/// overall display if one runs; a hidden one when bars are off.
pub fn new_bar(len: u64, template: &str, label: &str) -> ProgressBar {
    if !enabled() {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template(&format!("{{prefix:>16}} [{{bar:30}}] {template}"))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    let bar = ProgressBar::new(len)
        .with_style(style)
        .with_prefix(label.to_string());
    crate::harness::overall::attach(bar)
}

/// One progress bar, cleared from the terminal when finished or dropped.
#[derive(Debug)]
pub struct Phase {
    bar: ProgressBar,
    /// For timed phases: the thread moving the bar by elapsed time.
    ticker: Option<Ticker>,
}

impl Phase {
    /// A bar that fills over `duration` by elapsed time, for a measurement of fixed length.
    pub fn timed(label: &str, duration: Duration) -> Phase {
        let total_ms = duration.as_millis().max(1) as u64;
        let bar = new_bar(total_ms, "{elapsed:>3} of {msg}", label);
        bar.set_message(format!("{:.1}s", duration.as_secs_f64()));
        let (b, start) = (bar.clone(), Instant::now());
        let ticker = (!bar.is_hidden()).then(|| {
            Ticker::every(Duration::from_millis(100), move || {
                b.set_position((start.elapsed().as_millis() as u64).min(total_ms))
            })
        });
        Phase { bar, ticker }
    }

    /// A bar counting bytes towards `total`; advance it with [`Phase::set_position`].
    pub fn bytes(label: &str, total: u64) -> Phase {
        let bar = new_bar(total, "{bytes}/{total_bytes} {bytes_per_sec}", label);
        Phase { bar, ticker: None }
    }

    /// Sets the count done so far.
    pub fn set_position(&self, done: u64) {
        self.bar.set_position(done);
    }

    /// Stops the bar and clears it from the terminal (as dropping it does).
    pub fn finish(self) {}
}

impl Drop for Phase {
    fn drop(&mut self) {
        drop(self.ticker.take());
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_only_on_a_terminal_without_opt_out() {
        assert!(should_show(true, false));
        assert!(!should_show(true, true));
        assert!(!should_show(false, false));
    }

    #[test]
    fn phases_finish_promptly() {
        let start = Instant::now();
        let p = Phase::timed("timed", Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(20));
        p.finish();
        let b = Phase::bytes("bytes", 100);
        b.set_position(40);
        assert!(b.bar.position() == 40 || b.bar.is_hidden());
        drop(b);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "finish must stop the ticker"
        );
    }
}
