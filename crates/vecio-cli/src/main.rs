//! The `vecio` command.

mod bench;
mod bench_fuse;
mod cli;
mod fuse;
mod info;
mod nbd;
mod report;
mod signals;
mod size;

use clap::Parser;

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("VECIO_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Bench(b) => bench::run(b),
        cli::Command::Nbd(a) => nbd::run(a),
        cli::Command::Fuse(a) => fuse::run(a),
        cli::Command::Info(a) => info::run(a),
    };
    if let Err(e) = result {
        eprintln!("vecio: {}", one_line(&e));
        std::process::exit(1);
    }
}

/// An error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
    e.chain()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}
