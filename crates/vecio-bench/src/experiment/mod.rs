//! What an experiment is: the [`Experiment`] trait, and [`Entry`], the same behind one
//! object-safe interface, which is all the registry, `bench all` and the report use.

pub mod chart;
pub mod options;
pub mod section;
pub mod seed;
pub mod table;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{ArgMatches, Args, Command, FromArgMatches};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use options::Preset;
pub use section::{Metric, Section, SummaryRow, Target};
pub use seed::Seed;

use crate::harness::setup::Setup;

/// The programs an experiment starts.
#[derive(Debug, Clone)]
pub struct Env {
    /// The `vecio` binary: its `nbd` and `fuse` servers, and `info`.
    pub vecio: PathBuf,
    /// This program: the helper commands an experiment runs itself through.
    pub exe: PathBuf,
}

/// A hidden command an experiment runs itself through (callcost's worker under callgrind).
pub struct Helper {
    /// Its command line.
    pub command: Command,
    /// What it does.
    pub run: fn(&ArgMatches) -> Result<()>,
}

/// One experiment: the seed document it re-measures, its options and the presets `bench all`
/// gives them, how to run it, and what its report shows.
pub trait Experiment: Sync + 'static {
    /// Its subcommand and its field of `results.json` (`writev`, `loop`, ...).
    const KEY: &'static str;
    /// Its line in `--help`.
    const ABOUT: &'static str;
    /// Top-level fields of its own `--json` file, which tell that file apart.
    const FIELDS: &'static [&'static str];
    /// The seed document it re-measures, with what that document claimed.
    const SEED: &'static Seed;
    /// Its options on the command line.
    type Options: Args + FromArgMatches + Clone;
    /// Everything one run measured: its `--json` file and its field of `results.json`, and
    /// what the report shows of it.
    type Report: View;

    /// Its command line, to change a shared option's default (`mut_arg`).
    fn command(cmd: Command) -> Command {
        cmd
    }
    /// The options `bench all` runs it with, from its defaults and `p`.
    fn preset(opts: &mut Self::Options, p: &Preset);
    /// How long it should take with `opts`.
    fn estimate(opts: &Self::Options) -> Duration;
    /// Why `bench all` leaves it out here, if it must (a missing tool, not root).
    fn cannot_run(_opts: &Self::Options) -> Option<String> {
        None
    }
    /// Runs it.
    fn run(opts: &Self::Options, env: &Env) -> Result<Self::Report>;
    /// A hidden helper command, if it has one.
    fn helper() -> Option<Helper> {
        None
    }
}

/// What the report shows of an experiment's figures.
pub trait View: Serialize + DeserializeOwned {
    /// Fills its section of the report: set-up lines, tables, plots, targets and notes.
    fn section(&self, setup: Option<&Setup>, s: &mut Section);
    /// Its rows of the summary; `None` when it was not measured.
    fn summary(r: Option<&Self>) -> Vec<SummaryRow>;
    /// The figures `vecio bench compare` puts side by side.
    fn metrics(&self) -> Vec<Metric>;
}

/// A run ready to go: how long it should take, why it cannot run here, and the run itself.
pub struct Plan {
    /// The estimate.
    pub estimate: Duration,
    /// Why it cannot run here, if it cannot.
    pub cannot_run: Option<String>,
    /// Runs it and returns its report as JSON.
    pub run: RunOnce,
}

/// A [`Plan`]'s run: called once with the environment, returns the report as JSON.
pub type RunOnce = Box<dyn FnOnce(&Env) -> Result<Value>>;

/// An [`Experiment`] seen through one interface: what the registry holds.
pub trait Entry: Sync {
    /// [`Experiment::KEY`].
    fn key(&self) -> &'static str;
    /// [`Experiment::SEED`].
    fn seed(&self) -> &'static Seed;
    /// Its subcommand: `vecio bench KEY [OPTIONS]`.
    fn command(&self) -> Command;
    /// [`Experiment::helper`].
    fn helper(&self) -> Option<Helper>;
    /// The run its command line asked for.
    fn plan(&self, m: &ArgMatches) -> Result<Plan>;
    /// The run `bench all` makes.
    fn preset(&self, p: &Preset) -> Result<Plan>;
    /// Its section of the report, from its report's JSON.
    fn section(&self, v: &Value, setup: Option<&Setup>) -> Result<Section>;
    /// Its summary rows, from its report's JSON (`None`: not measured).
    fn summary(&self, v: Option<&Value>) -> Vec<SummaryRow>;
    /// Its figures, from its report's JSON.
    fn metrics(&self, v: &Value) -> Vec<Metric>;
    /// When `v` is its own `--json` file ([`Experiment::FIELDS`] are there): how many fields
    /// that took, so that the most specific match wins.
    fn owns(&self, v: &Value) -> Option<usize>;
}

fn parse<E: Experiment>(v: &Value) -> Result<E::Report> {
    E::Report::deserialize(v).with_context(|| format!("the {} figures do not parse", E::KEY))
}

/// The options `bench all` runs experiment `E` with: its defaults, then its presets for `p`.
pub fn preset_options<E: Experiment>(p: &Preset) -> Result<E::Options> {
    let defaults = E::command(E::Options::augment_args(Command::new(E::KEY)));
    let mut opts = E::Options::from_arg_matches(&defaults.try_get_matches_from([E::KEY])?)?;
    E::preset(&mut opts, p);
    Ok(opts)
}

fn plan_of<E: Experiment>(opts: E::Options) -> Plan {
    Plan {
        estimate: E::estimate(&opts),
        cannot_run: E::cannot_run(&opts),
        run: Box::new(move |env| Ok(serde_json::to_value(E::run(&opts, env)?)?)),
    }
}

impl<E: Experiment> Entry for E {
    fn key(&self) -> &'static str {
        E::KEY
    }

    fn seed(&self) -> &'static Seed {
        E::SEED
    }

    fn command(&self) -> Command {
        let cmd = E::Options::augment_args(Command::new(E::KEY));
        E::command(cmd.about(E::ABOUT).long_about(None))
    }

    fn helper(&self) -> Option<Helper> {
        E::helper()
    }

    fn plan(&self, m: &ArgMatches) -> Result<Plan> {
        Ok(plan_of::<E>(E::Options::from_arg_matches(m)?))
    }

    fn preset(&self, p: &Preset) -> Result<Plan> {
        Ok(plan_of::<E>(preset_options::<E>(p)?))
    }

    fn section(&self, v: &Value, setup: Option<&Setup>) -> Result<Section> {
        let mut s = Section::new(E::KEY, E::SEED);
        parse::<E>(v)?.section(setup, &mut s);
        Ok(s)
    }

    fn summary(&self, v: Option<&Value>) -> Vec<SummaryRow> {
        let report = v.and_then(|v| parse::<E>(v).ok());
        E::Report::summary(report.as_ref())
    }

    fn metrics(&self, v: &Value) -> Vec<Metric> {
        parse::<E>(v).map(|r| r.metrics()).unwrap_or_default()
    }

    fn owns(&self, v: &Value) -> Option<usize> {
        let all = E::FIELDS.iter().all(|f| v.get(f).is_some());
        all.then_some(E::FIELDS.len())
    }
}
