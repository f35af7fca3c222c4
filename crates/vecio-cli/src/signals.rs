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
