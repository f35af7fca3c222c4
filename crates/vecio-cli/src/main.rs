//! The `vecio` command.

#![warn(missing_docs)]

mod bench;
mod cli;
mod docs;
mod errors;
mod fuse;
mod info;
mod logging;
mod nbd;
mod probe;
mod signals;
mod size;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let debug = matches!(&cli.command, cli::Command::Fuse(a) if a.debug);
    logging::init(debug);
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
