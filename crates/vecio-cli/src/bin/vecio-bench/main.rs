//! `vecio-bench`: the experiments as a program of their own, which `vecio bench ...` runs (as
//! git and cargo run their subcommands), so the servers' binary links none of the bench. Its
//! command line is built from the registry: one subcommand per experiment, then `all`,
//! `compare` and `report`.

#![warn(missing_docs)]

#[path = "../../errors.rs"]
mod errors;
#[path = "../../logging.rs"]
mod logging;
mod run;
mod stop;

use clap::{Arg, Command};
use vecio_bench::experiment::Preset;
use vecio_bench::registry;

/// Set by `vecio bench` to its own path: the `vecio` whose servers the experiments start.
pub const VECIO_ENV: &str = "VECIO";

fn main() {
    let via_vecio = std::env::var_os(VECIO_ENV).is_some();
    let name = if via_vecio {
        "vecio bench"
    } else {
        "vecio-bench"
    };
    let m = command(name).get_matches();
    logging::init(false);
    if let Err(e) = run::run(&m) {
        if stop::stopping() {
            // A signal is being handled: its thread cleans up and exits with its own status.
            loop {
                std::thread::park();
            }
        }
        let prefix = if via_vecio { "vecio" } else { "vecio-bench" };
        eprintln!("{prefix}: {}", errors::one_line(&e));
        let usage = e
            .chain()
            .any(|c| c.is::<vecio_bench::experiment::options::UsageError>());
        std::process::exit(if usage { 2 } else { 1 });
    }
}

/// The command line: every experiment, its helpers (hidden), and the commands over results.
pub fn command(name: &'static str) -> Command {
    let mut cmd = Command::new("vecio-bench")
        .display_name(name)
        .bin_name(name)
        .version(env!("CARGO_PKG_VERSION"))
        .propagate_version(true)
        .subcommand_required(true)
        .arg_required_else_help(true)
        .about("Re-measure the source documents' tables on this machine");
    for e in registry::commands() {
        cmd = cmd.subcommand(e.command());
        if let Some(h) = e.helper() {
            cmd = cmd.subcommand(h.command);
        }
    }
    let all = <Preset as clap::Args>::augment_args(Command::new("all"))
        .about("Every experiment, one summary; --report DIR writes the HTML/Markdown/JSON report")
        .long_about(None)
        .arg(path_arg("json", "Write every figure to this JSON file"))
        .arg(path_arg(
            "report",
            "Write the report (index.html, report.md, results.json, plots/) into this directory",
        ));
    let compare = Command::new("compare")
        .about("Two runs' figures side by side, changes beyond the run-to-run noise flagged")
        .arg(positional(
            "a",
            "The earlier run: a results.json, a `bench all --json` file or one experiment's --json",
        ))
        .arg(positional("b", "The later run, of the same kinds"));
    let report = Command::new("report")
        .about("The report (index.html, report.md, results.json) of a recorded results.json")
        .arg(positional(
            "results",
            "A recorded results.json, a `bench all --json` file or one experiment's --json",
        ))
        .arg(
            path_arg(
                "out",
                "Directory to write index.html, report.md, results.json and plots/ into",
            )
            .short('o')
            .required(true),
        );
    let hidden = |c: Command| c.hide(true);
    cmd.subcommand(all)
        .subcommand(compare)
        .subcommand(report)
        .subcommand(hidden(
            Command::new("man")
                .about("Writes the manual pages into a directory")
                .arg(positional("dir", "Directory")),
        ))
        .subcommand(hidden(
            Command::new("completions")
                .about("Prints a shell completion script")
                .arg(
                    Arg::new("shell")
                        .required(true)
                        .value_parser(clap::value_parser!(clap_complete::Shell)),
                ),
        ))
        .subcommand(hidden(
            Command::new("commands").about("Lists the subcommands, one `NAME<TAB>ABOUT` a line"),
        ))
}

fn path_arg(name: &'static str, help: &'static str) -> Arg {
    Arg::new(name)
        .long(name)
        .help(help)
        .value_parser(clap::value_parser!(std::path::PathBuf))
}

fn positional(name: &'static str, help: &'static str) -> Arg {
    Arg::new(name)
        .required(true)
        .help(help)
        .value_parser(clap::value_parser!(std::path::PathBuf))
}
