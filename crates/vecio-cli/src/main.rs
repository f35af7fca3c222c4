//! The `vecio` command.

#![warn(missing_docs)]

mod bench;
mod cli;
mod docs;
mod errors;
mod fuse;
mod info;
mod nbd;
mod probe;
mod signals;
mod size;

use std::io::IsTerminal;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let debug = matches!(&cli.command, cli::Command::Fuse(a) if a.debug);
    init_logging(debug);
    let result = match cli.command {
        cli::Command::Bench(b) => bench::run(b),
        cli::Command::Nbd(a) => nbd::run(a),
        cli::Command::Fuse(a) => fuse::run(a),
        cli::Command::Info(a) => info::run(a),
        cli::Command::Man(a) => docs::man(a),
        cli::Command::Completions(a) => docs::completions(a),
    };
    if let Err(e) = result {
        eprintln!("vecio: {}", errors::one_line(&e));
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
