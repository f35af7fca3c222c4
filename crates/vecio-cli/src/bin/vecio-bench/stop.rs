//! A benchmark stopped by SIGINT, SIGTERM or a panic removes what it put on the machine
//! before the process exits.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;

// The servers' SIGUSR1 report is vecio's alone.
#[path = "../../signals.rs"]
#[allow(dead_code)]
mod signals;

/// Set when a benchmark is being stopped by a signal.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// True once a benchmark is being stopped by a signal; its thread exits the process.
pub fn stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

/// On SIGINT or SIGTERM, and on a panic in any thread, removes the scratch files, mounts and
/// child servers still registered ([`vecio_bench::harness::cleanup`]). After a signal the
/// process exits with 128 + the signal's number, as a shell reports it.
pub fn clean_up_on_stop() -> Result<()> {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        vecio_bench::harness::cleanup::remove_all();
    }));
    signals::on_stop(|sig| {
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
