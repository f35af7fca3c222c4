//! The `vecio` command.

#![warn(missing_docs)]

mod bench;
mod bench_fuse;
mod cli;
mod daemon;
mod docs;
mod fuse;
mod info;
mod mount_helper;
mod nbd;
mod probe;
mod report;
mod signals;
mod size;
mod ublk;

use std::io::IsTerminal;

use clap::Parser;

fn main() {
    // Called as mount(8)'s helper (`mount -t fuse.vecio`, through a link named
    // mount.fuse.vecio): mount(8)'s arguments, not vecio's.
    if mount_helper::called_as_helper() {
        init_logging(false);
        if let Err(e) = mount_helper::run(std::env::args_os().skip(1).collect()) {
            eprintln!("mount.fuse.vecio: {}", one_line(&e));
            // mount(8)'s helper statuses: 1 for a bad invocation, 32 for a failed mount.
            std::process::exit(if e.is::<cli::UsageError>() { 1 } else { 32 });
        }
        return;
    }
    let cli = cli::Cli::parse();
    let debug = matches!(&cli.command, cli::Command::Fuse(a) if a.debug);
    init_logging(debug);
    let result = match cli.command {
        cli::Command::Bench(b) => bench::run(b),
        cli::Command::Nbd(a) => nbd::run(a),
        cli::Command::Fuse(a) => fuse::run(a),
        cli::Command::Ublk(a) => ublk::run(a),
        cli::Command::Info(a) => info::run(a),
        cli::Command::Man(a) => docs::man(a),
        cli::Command::Completions(a) => docs::completions(a),
    };
    if let Err(e) = result {
        if signals::stopping() {
            // A signal is being handled: its thread cleans up and exits with its own status.
            loop {
                std::thread::park();
            }
        }
        eprintln!("vecio: {}", one_line(&e));
        let usage = e.chain().any(|c| c.is::<cli::UsageError>());
        std::process::exit(if usage { 2 } else { 1 });
    }
}

/// Log lines on standard error, filtered by `VECIO_LOG` (default `warn`, `debug` with
/// `vecio fuse -d`), coloured only when standard error is a terminal and `NO_COLOR` is unset.
fn init_logging(debug: bool) {
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

/// An error and its causes on one line. A cause whose text its context already quotes (an OS
/// error formatted into the message that wraps it) is said once.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn an_os_error_is_said_once() {
        let os = std::io::Error::from_raw_os_error(2);
        let e = anyhow::Error::new(os).context(format!(
            "cannot open x: {}",
            std::io::Error::from_raw_os_error(2)
        ));
        assert_eq!(
            one_line(&e),
            "cannot open x: No such file or directory (os error 2)"
        );
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(one_line(&e), "outer: inner");
    }
}
