//! `tokio-io-uring-reads`: the reads of `vecio bench tokio` through `tokio::fs` on a runtime with
//! tokio's own io_uring driver (`--cfg tokio_unstable`, the `io-uring` feature,
//! `Builder::enable_io_uring`), printed as one JSON object. The bench runs it once per
//! measurement, as a process, so the unstable flag stays out of the rest of the workspace.
//!
//! ```sh
//! tokio-io-uring-reads --scenario cached|direct|mix --medium FILE --large FILE \
//!     --tasks 32 --runtime-ms 3000 [--current-thread]
//! ```
//!
//! Each task opens both files itself (`tokio::fs::OpenOptions`, the large one `O_DIRECT`), and
//! each read is `seek` then `read` of 16 KiB: tokio::fs has no positional read, and its `seek`
//! runs on the blocking pool (the `read` is the io_uring operation). Offsets are picked as the
//! bench's other paths pick them (`pick` in `tokio_reads/run.rs`).

mod measure;

use std::path::PathBuf;
use std::process::ExitCode;

/// What the command line asked for.
pub struct Args {
    /// `cached`, `direct` or `mix`.
    pub scenario: String,
    /// The mostly cached file.
    pub medium: PathBuf,
    /// The large file, opened `O_DIRECT`.
    pub large: PathBuf,
    /// Tasks reading at once.
    pub tasks: u64,
    /// How long to read, in milliseconds.
    pub runtime_ms: u64,
    /// A current-thread runtime instead of the multi-threaded one.
    pub current_thread: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        scenario: String::new(),
        medium: PathBuf::new(),
        large: PathBuf::new(),
        tasks: 32,
        runtime_ms: 1000,
        current_thread: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--scenario" => a.scenario = value()?,
            "--medium" => a.medium = value()?.into(),
            "--large" => a.large = value()?.into(),
            "--tasks" => a.tasks = value()?.parse().map_err(|_| "--tasks: not a count")?,
            "--runtime-ms" => {
                a.runtime_ms = value()?.parse().map_err(|_| "--runtime-ms: not a count")?
            }
            "--current-thread" => a.current_thread = true,
            _ => return Err(format!("unknown argument {arg}")),
        }
    }
    if !matches!(a.scenario.as_str(), "cached" | "direct" | "mix") {
        return Err("--scenario cached|direct|mix is required".into());
    }
    if a.medium.as_os_str().is_empty() || a.large.as_os_str().is_empty() || a.tasks == 0 {
        return Err("--medium, --large and a nonzero --tasks are required".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("tokio-io-uring-reads: {e}");
            return ExitCode::from(2);
        }
    };
    match measure::run(&args) {
        Ok(out) => {
            println!("{}", out.json());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tokio-io-uring-reads: {e}");
            ExitCode::FAILURE
        }
    }
}
