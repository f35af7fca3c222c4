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

/// Prints `report()` on standard error at every SIGUSR1 (`kill -USR1 PID`), from a thread of
/// its own: what a server holds now, as `dd` prints its progress.
pub fn on_usr1(report: impl Fn() -> String + Send + 'static) -> Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGUSR1])
        .context("installing the SIGUSR1 handler")?;
    std::thread::Builder::new()
        .name("usr1".into())
        .spawn(move || {
            for _ in signals.forever() {
                eprintln!("vecio: holding {}", report());
            }
        })
        .context("starting the SIGUSR1 thread")?;
    Ok(())
}
