//! Log lines, the same for `vecio` and `vecio-bench`.

use std::io::IsTerminal;

/// Log lines on standard error, filtered by `VECIO_LOG` (default `warn`, or `debug` when
/// `debug` is set, as `vecio fuse -d` does), coloured only when standard error is a terminal
/// and `NO_COLOR` is unset.
pub fn init(debug: bool) {
    let default = if debug { "debug" } else { "warn" };
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("VECIO_LOG").unwrap_or_else(|_| default.into());
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .init();
}
