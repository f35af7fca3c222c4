//! `vecio man DIR` and `vecio completions SHELL` (both hidden): the manual pages and shell
//! completions, generated from the same clap definition the command parses with, so they never
//! drift from it. `make install-docs` runs them and installs the results.

use std::path::PathBuf;

use anyhow::{Context, Result};
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

/// Writes the manual pages: `vecio.1` and `vecio-SUB.1` for every visible subcommand, nested
/// ones too (`vecio-bench-writev.1`). Prints the paths written.
pub fn man(a: ManArgs) -> Result<()> {
    std::fs::create_dir_all(&a.dir).with_context(|| format!("creating {}", a.dir.display()))?;
    clap_mangen::generate_to(crate::cli::Cli::command(), &a.dir)
        .with_context(|| format!("writing manual pages into {}", a.dir.display()))?;
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

/// Prints the completion script for `shell` on standard output.
pub fn completions(a: CompletionsArgs) -> Result<()> {
    let mut cmd = crate::cli::Cli::command();
    clap_complete::generate(a.shell, &mut cmd, "vecio", &mut std::io::stdout());
    Ok(())
}
