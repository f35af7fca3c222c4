//! `vecio man DIR` and `vecio completions SHELL` (both hidden): the manual pages and shell
//! completions, generated from the same clap definition the command parses with, so they never
//! drift from it. `make install-docs` runs them and installs the results.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::{Args, CommandFactory};

/// Options of `vecio man`.
#[derive(Args, Debug, Clone)]
pub struct ManArgs {
    /// Directory to write vecio.1 and one page per subcommand (vecio-nbd.1, ...) into.
    pub dir: PathBuf,
}

/// Options of `vecio completions`.
#[derive(Args, Debug, Clone)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

/// Writes the manual pages: `vecio.1` and `vecio-SUB.1` for every visible subcommand, and the
/// bench's own (`vecio-bench.1`, `vecio-bench-writev.1`, ...), which `vecio-bench man`
/// writes. Prints the paths written.
pub fn man(a: ManArgs) -> Result<()> {
    std::fs::create_dir_all(&a.dir).with_context(|| format!("creating {}", a.dir.display()))?;
    clap_mangen::generate_to(crate::cli::Cli::command(), &a.dir)
        .with_context(|| format!("writing manual pages into {}", a.dir.display()))?;
    match crate::bench::program() {
        Some(bench) => {
            let status = Command::new(&bench).arg("man").arg(&a.dir).status();
            if !status.is_ok_and(|s| s.success()) {
                bail!("{} man {} failed", bench.display(), a.dir.display());
            }
        }
        None => eprintln!("vecio: vecio-bench not found: no manual pages for vecio bench"),
    }
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&a.dir)
        .with_context(|| format!("listing {}", a.dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "1"))
        .collect();
    pages.sort();
    for p in pages {
        println!("{}", p.display());
    }
    Ok(())
}

/// Prints the completion script for `shell` on standard output. `vecio bench` completes the
/// experiments and commands `vecio-bench commands` lists (their options: `vecio-bench`'s own
/// completions, `vecio-bench completions SHELL`).
pub fn completions(a: CompletionsArgs) -> Result<()> {
    let mut cmd = crate::cli::Cli::command();
    if let Some(subs) = bench_commands() {
        cmd = cmd.mut_subcommand("bench", |b| {
            let stub = clap::Command::new("bench");
            let stub = stub.about(b.get_about().cloned().unwrap_or_default());
            stub.subcommands(subs)
        });
    }
    clap_complete::generate(a.shell, &mut cmd, "vecio", &mut std::io::stdout());
    Ok(())
}

/// The bench's subcommands, named and described, as `vecio-bench commands` lists them.
fn bench_commands() -> Option<Vec<clap::Command>> {
    let out = Command::new(crate::bench::program()?)
        .arg("commands")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    // clap names commands with &'static str: this process prints one script and ends.
    let line = |l: &str| {
        let (name, about) = l.split_once('\t').unwrap_or((l, ""));
        let name: &'static str = name.to_string().leak();
        clap::Command::new(name).about(about.to_string())
    };
    out.status
        .success()
        .then(|| text.lines().map(line).collect())
}
