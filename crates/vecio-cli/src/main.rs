//! The `vecio` command.

#![warn(missing_docs)]

mod bench;
mod cli;
mod daemon;
mod docs;
mod errors;
mod fuse;
mod image_format;
mod info;
mod logging;
mod mount_helper;
mod nbd;
mod probe;
mod signals;
mod ublk;

use clap::Parser;

fn main() {
    // Called as mount(8)'s helper (`mount -t fuse.vecio`, through a link named
    // mount.fuse.vecio): mount(8)'s arguments, not vecio's.
    if mount_helper::called_as_helper() {
        logging::init(false);
        if let Err(e) = mount_helper::run(std::env::args_os().skip(1).collect()) {
            eprintln!("mount.fuse.vecio: {}", errors::one_line(&e));
            // mount(8)'s helper statuses: 1 for a bad invocation, 32 for a failed mount.
            std::process::exit(if e.is::<cli::UsageError>() { 1 } else { 32 });
        }
        return;
    }
    let cli = cli::Cli::parse();
    let debug = matches!(&cli.command, cli::Command::Fuse(a) if a.debug);
    logging::init(debug);
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
        eprintln!("vecio: {}", errors::one_line(&e));
        let usage = e.chain().any(|c| c.is::<cli::UsageError>());
        std::process::exit(if usage { 2 } else { 1 });
    }
}
