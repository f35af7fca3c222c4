//! SIGINT and SIGTERM: a clean stop for the servers, and for the benchmarks a clean-up of
//! everything they put on the machine before the process exits.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

/// Set when a benchmark is being stopped by a signal.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// True once a benchmark is being stopped by a signal; its thread exits the process.
pub fn stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

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

/// For a benchmark: on SIGINT or SIGTERM, and on a panic in any thread, removes the scratch
/// files, mounts and child servers still registered ([`vecio_bench::harness::cleanup`]). After a
/// signal the process exits with 128 + the signal's number, as a shell reports it.
pub fn clean_up_on_stop() -> Result<()> {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        vecio_bench::harness::cleanup::remove_all();
    }));
    on_stop(|sig| {
        STOPPING.store(true, Ordering::SeqCst);
        let name = if sig == signal_hook::consts::SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        eprintln!("\nvecio: stopped by {name}; removing scratch files, mounts and servers");
        vecio_bench::harness::cleanup::remove_all();
        std::process::exit(128 + sig);
    })
}
