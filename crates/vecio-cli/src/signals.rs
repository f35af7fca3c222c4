//! SIGINT and SIGTERM: a clean stop for the servers (and, in `vecio-bench`, the clean-up of
//! everything a benchmark put on the machine).

use anyhow::{Context, Result};

/// Calls `stop(signal)` on every SIGINT or SIGTERM, from a thread of its own.
pub fn on_stop(stop: impl Fn(i32) + Send + 'static) -> Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .context("installing signal handlers")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                stop(sig);
            }
        })
        .context("starting the signal thread")?;
    Ok(())
}
