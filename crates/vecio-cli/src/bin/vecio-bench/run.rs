//! What each subcommand does: an experiment (its section printed, its figures written), `all`,
//! `compare`, `report`, and the hidden helpers, manual pages and completions.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{ArgMatches, FromArgMatches};
use vecio_bench::experiment::{Entry, Env, Preset};
use vecio_bench::registry::{self, EXPERIMENTS};
use vecio_bench::report::{self, compare as cmp, text};
use vecio_bench::results::AllResults;

/// Runs the subcommand `m` names. Whatever an experiment puts on the machine (scratch files,
/// mounts, servers) is removed if it is stopped by SIGINT, SIGTERM or a panic.
pub fn run(m: &ArgMatches) -> Result<()> {
    let Some((name, sub)) = m.subcommand() else {
        bail!("no subcommand");
    };
    if let Some(h) = registry::commands()
        .filter_map(|e| e.helper())
        .find(|h| h.command.get_name() == name)
    {
        return (h.run)(sub);
    }
    match name {
        "compare" => return compare(sub),
        "report" => return render(sub),
        "man" => return man(path(sub, "dir")?),
        "completions" => return completions(sub),
        "commands" => return commands(),
        _ => {}
    }
    crate::stop::clean_up_on_stop()?;
    let env = env()?;
    if name == "all" {
        return all(sub, &env);
    }
    let e = registry::commands()
        .find(|e| e.key() == name)
        .with_context(|| format!("unknown command {name}"))?;
    one(e, sub, &env)
}

fn path<'a>(m: &'a ArgMatches, name: &str) -> Result<&'a PathBuf> {
    m.get_one::<PathBuf>(name)
        .with_context(|| format!("no {name}"))
}

/// The programs the experiments start: `vecio` as `vecio bench` said, else beside this
/// program, else on `PATH`; and this program itself.
fn env() -> Result<Env> {
    let exe = std::env::current_exe().context("finding the vecio-bench binary")?;
    let vecio = std::env::var_os(crate::VECIO_ENV)
        .map(PathBuf::from)
        .or_else(|| Some(exe.with_file_name("vecio")).filter(|p| p.is_file()))
        .or_else(|| vecio_bench::harness::server::find_program("vecio"))
        .unwrap_or_else(|| PathBuf::from("vecio"));
    Ok(Env { vecio, exe })
}

fn write_json(path: Option<&PathBuf>, value: &serde_json::Value) -> Result<()> {
    if let Some(p) = path {
        let text = serde_json::to_string_pretty(value)?;
        std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?;
        eprintln!("figures written to {}", p.display());
    }
    Ok(())
}

/// One experiment: runs it, prints its section, writes its figures.
fn one(e: &dyn Entry, m: &ArgMatches, env: &Env) -> Result<()> {
    let plan = e.plan(m)?;
    let figures = (plan.run)(env)?;
    print!("{}", text::section(&e.section(&figures, None)?));
    write_json(m.get_one::<PathBuf>("json"), &figures)
}

/// Runs every experiment, prints the summary, writes the JSON and the report. Fails when an
/// experiment failed (one left out for a missing tool is not a failure).
fn all(m: &ArgMatches, env: &Env) -> Result<()> {
    let p = Preset::from_arg_matches(m)?;
    let results = vecio_bench::all::run(&p, env, &EXPERIMENTS);
    let sections = report::sections(&results, &EXPERIMENTS)?;
    print!("{}", text::summary(&results, &sections));
    if let Some(p) = m.get_one::<PathBuf>("json") {
        results.save(p)?;
        eprintln!("figures written to {}", p.display());
    }
    if let Some(dir) = m.get_one::<PathBuf>("report") {
        let files = report::write(dir, &results, &EXPERIMENTS)?;
        eprintln!(
            "report written to {} ({} plots; also {} and {})",
            files.html.display(),
            files.plots,
            files.markdown.display(),
            files.json.display()
        );
    }
    let failed: Vec<String> = results
        .not_measured
        .iter()
        .filter(|n| n.failed)
        .map(|n| format!("{}: {}", n.experiment, n.reason))
        .collect();
    if !failed.is_empty() {
        bail!("experiments failed: {}", failed.join("; "));
    }
    Ok(())
}

/// Prints B/A for every figure two runs share, changes beyond the noise flagged.
fn compare(m: &ArgMatches) -> Result<()> {
    let (a, b) = (path(m, "a")?, path(m, "b")?);
    let known: Vec<&dyn Entry> = registry::commands().collect();
    let (ra, rb) = (cmp::load(a, &known)?, cmp::load(b, &known)?);
    let (changes, only) = cmp::compare(&cmp::metrics(&ra, &known), &cmp::metrics(&rb, &known));
    if changes.is_empty() {
        bail!(
            "{} and {} share no figure to compare",
            a.display(),
            b.display()
        );
    }
    let (a, b) = (a.display().to_string(), b.display().to_string());
    print!("{}", cmp::render(&a, &b, &changes, &only));
    Ok(())
}

/// Renders the report of a recorded run and prints its summary: every experiment of `bench
/// all` (and an opt-in one whose figures the file holds), or the one experiment whose own
/// `--json` file it is.
fn render(m: &ArgMatches) -> Result<()> {
    let file = path(m, "results")?;
    let known: Vec<&dyn Entry> = registry::commands().collect();
    let (results, own) = AllResults::read(file, &known)?;
    let in_all = |key: &str| EXPERIMENTS.iter().any(|e| e.key() == key);
    let shown: Vec<&dyn Entry> = known
        .into_iter()
        .filter(|e| match own {
            Some(key) => e.key() == key,
            None => in_all(e.key()) || results.report(e.key()).is_some(),
        })
        .collect();
    let measured = shown.iter().any(|e| results.report(e.key()).is_some());
    if !measured && results.setup.is_none() && results.not_measured.is_empty() {
        bail!(
            "{}: no vecio figures in it (not a `vecio bench all --json` file or results.json, \
             nor one experiment's --json file)",
            file.display()
        );
    }
    let files = report::write(path(m, "out")?, &results, &shown)?;
    let sections = report::sections(&results, &shown)?;
    print!("{}", text::summary(&results, &sections));
    println!(
        "{} ({} plots), {}, {}",
        files.html.display(),
        files.plots,
        files.markdown.display(),
        files.json.display()
    );
    Ok(())
}

/// Writes `vecio-bench.1` and a page per subcommand (`vecio-bench-writev.1`, ...) into `dir`.
fn man(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    clap_mangen::generate_to(crate::command("vecio-bench"), dir)
        .with_context(|| format!("writing manual pages into {}", dir.display()))
}

/// Prints the completion script of `vecio-bench` for the shell asked.
fn completions(m: &ArgMatches) -> Result<()> {
    let shell = *m
        .get_one::<clap_complete::Shell>("shell")
        .context("no shell")?;
    let mut cmd = crate::command("vecio-bench");
    clap_complete::generate(shell, &mut cmd, "vecio-bench", &mut std::io::stdout());
    Ok(())
}

/// The visible subcommands and their one-line help, for `vecio completions`.
fn commands() -> Result<()> {
    for c in crate::command("vecio-bench")
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
    {
        println!(
            "{}\t{}",
            c.get_name(),
            c.get_about().map(|a| a.to_string()).unwrap_or_default()
        );
    }
    Ok(())
}
