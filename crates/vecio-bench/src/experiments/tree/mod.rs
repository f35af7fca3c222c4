//! A source tree's life through `vecio fuse` (issue 27), natively and through the FUSE
//! experiment's mounts: docs/fuse.md, "A tree's life".

mod generate;
pub mod phases;
mod view;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::experiment::options::{parse_count, Common};
use crate::experiment::{Env, Experiment, Preset, Seed, Target};
use crate::experiments::fuse::hp;
use crate::experiments::fuse::subjects::{self, Counts, Mounted, Subject};
use crate::experiments::fuse::{NATIVE, VECIO, VECIO_DEV, VECIO_PASSTHROUGH};
use crate::harness::cleanup::{remove_tree, ScratchDir};
use crate::harness::meta::RunMeta;
use crate::harness::stats::{paired_median, Summary};
pub use generate::TreeInfo;
use phases::{Phase, PHASES};

/// Options of `vecio bench tree`.
#[derive(Args, Debug, Clone)]
pub struct TreeOptions {
    /// Where (the ext4 directory and the mount points) and how often (rounds);
    /// `--runtime` is not used.
    #[command(flatten)]
    pub common: Common,
    /// Files of the generated tree (in about 15% as many directories).
    #[arg(long, default_value = "10000", value_parser = parse_count)]
    pub files: usize,
    /// Extract this tarball instead of the generated tree (anything `tar -x` reads).
    #[arg(long, value_name = "FILE")]
    pub tree: Option<PathBuf>,
    /// Also measure libfuse's `passthrough_hp` with its defaults: its binary, or a libfuse
    /// source tree, which the bench builds with meson once.
    #[arg(long = "libfuse-hp", value_name = "PATH")]
    pub passthrough_hp: Option<PathBuf>,
    /// Also measure `vecio fuse` of this other `vecio` binary with its default options (an
    /// earlier build, to compare before and after in one run).
    #[arg(long, value_name = "PATH")]
    pub baseline: Option<PathBuf>,
}

/// The experiment.
pub struct Tree;

/// Name of `--baseline`'s `vecio fuse` as a subject.
pub const BASELINE: &str = "vecio fuse (baseline)";

/// Name of libfuse's passthrough_hp as a subject.
pub const HP: &str = "libfuse passthrough_hp";

impl Experiment for Tree {
    const KEY: &'static str = "tree";
    const ABOUT: &'static str = "A source tree's life (issue 27): tar -x, cold walk, read all, \
        rm -rf natively and through vecio fuse (default, --passthrough, --no-uring)";
    const FIELDS: &'static [&'static str] = &["tree", "rounds", "subjects"];
    const SEED: &'static Seed = &view::SEED;
    type Options = TreeOptions;
    type Report = TreeReport;

    fn preset(o: &mut TreeOptions, p: &Preset) {
        o.common.dir = p.dir.clone();
        o.files = if p.quick { 1000 } else { 10_000 };
        o.common.repeat = p.repeat(1, 3);
    }

    /// Per file and subject, about 0.25 ms natively and 1 ms through FUSE per phase, plus the
    /// tree's generation, a mount per subject and a cache drop per cold walk.
    fn estimate(o: &TreeOptions) -> Duration {
        let given = [o.passthrough_hp.is_some(), o.baseline.is_some()];
        let subjects = 4.0 + given.iter().filter(|&&g| g).count() as f64;
        let per_round = o.files as f64 * 4.0 * (0.25e-3 + (subjects - 1.0) * 1e-3);
        let rounds = f64::from(o.common.repeat);
        let secs = o.files as f64 * 0.2e-3 + subjects * 0.2 + rounds * (per_round + subjects * 0.5);
        Duration::from_secs_f64(secs)
    }

    fn cannot_run(_o: &TreeOptions) -> Option<String> {
        crate::experiments::fuse::cannot_run()
    }

    fn run(opts: &TreeOptions, env: &Env) -> Result<TreeReport> {
        run(opts, &env.vecio)
    }
}

/// One phase of one subject over the rounds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PhaseResult {
    /// Which phase.
    pub phase: Phase,
    /// Seconds of each round.
    pub samples: Vec<f64>,
    /// Seconds over the rounds.
    pub seconds: Option<Summary>,
    /// The server's CPU seconds (user + system, its processes together) during the phase,
    /// each round; empty for the native subject.
    pub server_cpu_s: Vec<f64>,
    /// The FUSE requests the server served during the phase, by opcode with their total under
    /// `"total"`, each round; empty where they are not counted (native, passthrough_hp).
    #[serde(default)]
    pub requests: Vec<Counts>,
}

/// Everything measured of one subject.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SubjectResult {
    /// The subject's name.
    pub subject: String,
    /// Each phase, in [`PHASES`] order.
    pub phases: Vec<PhaseResult>,
    /// The whole life's seconds, each round (the phases summed).
    pub total_samples: Vec<f64>,
    /// The whole life over the rounds.
    pub total: Option<Summary>,
    /// The error that stopped this subject, if one did.
    pub error: Option<String>,
}

impl SubjectResult {
    /// Its result for `phase`.
    pub fn phase(&self, phase: Phase) -> Option<&PhaseResult> {
        self.phases.iter().find(|p| p.phase == phase)
    }
}

/// Everything `vecio bench tree` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TreeReport {
    /// Machine and file system (the tarball's).
    pub meta: RunMeta,
    /// What the tree holds.
    pub tree: TreeInfo,
    /// Rounds.
    pub rounds: u32,
    /// Why the caches could not be dropped before the cold walks (the walk was then warm).
    pub caches_not_dropped: Option<String>,
    /// Which subjects' FUSE requests are counted, and how.
    pub requests: String,
    /// The subjects, in table order.
    pub subjects: Vec<Subject>,
    /// Each subject's figures.
    pub results: Vec<SubjectResult>,
    /// The targets, judged.
    pub targets: Vec<Target>,
    /// Targets that could not be judged, and why.
    pub not_judged: Vec<String>,
}

impl TreeReport {
    /// The figures of `subject`.
    pub fn result(&self, subject: &str) -> Option<&SubjectResult> {
        self.results.iter().find(|r| r.subject == subject)
    }
}

/// How the FUSE requests are counted.
const REQUESTS_COUNTED: &str = "counted for vecio fuse from its SIGUSR1 report (the requests \
    it served, by opcode) before and after each phase; passthrough_hp does not count them";

/// Runs the experiment; `exe` is the `vecio` binary (for `vecio fuse`).
pub fn run(opts: &TreeOptions, exe: &Path) -> Result<TreeReport> {
    if let Some(why) = crate::experiments::fuse::cannot_run() {
        anyhow::bail!("the tree experiment cannot run: {why}");
    }
    // Said before the tree is generated, not after the first rounds.
    if let Some(b) = &opts.baseline {
        hp::runnable("--baseline", b)?;
    }
    let hp_binary = match &opts.passthrough_hp {
        Some(p) => Some(hp::passthrough_hp("--libfuse-hp", p)?),
        None => None,
    };
    let tmp = ScratchDir::new_in("tree", &opts.common.scratch_parent()?)?;
    let (tarball, tree) = prepare_tree(opts, tmp.path())?;
    let src = tmp.path().join("src");
    std::fs::create_dir(&src)?;
    let mut subjects = vec![
        Subject::native(NATIVE),
        Subject::vecio(VECIO, &[]),
        Subject::vecio(VECIO_PASSTHROUGH, &["--passthrough"]),
        Subject::vecio(VECIO_DEV, &["--no-uring"]),
    ];
    let hp: Vec<(String, PathBuf)> = hp_binary
        .map(|p| (subjects::HP_PASSTHROUGH.to_string(), p))
        .into_iter()
        .collect();
    if !hp.is_empty() {
        subjects.push(Subject::libfuse(HP.into(), subjects::HP_PASSTHROUGH));
    }
    if let Some(b) = &opts.baseline {
        subjects.push(Subject::vecio_at(BASELINE, b, &[]));
    }
    let file = |i| format!("t{i}");
    let mounted = subjects::mount_all(&subjects, exe, &hp, &src, file, tmp.path())?;
    let mut results: Vec<SubjectResult> = subjects.iter().map(empty_result).collect();
    let caches_not_dropped = phases::drop_caches().err().map(|e| format!("{e:#}"));
    for round in 0..opts.common.repeat {
        let mut order: Vec<usize> = (0..subjects.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            if results[i].error.is_none() {
                let cold = caches_not_dropped.is_none();
                if let Err(e) = life(&tarball, &mounted[i], cold, &mut results[i]) {
                    results[i].error = Some(format!("{e:#}"));
                }
            }
        }
    }
    subjects::stop_all(mounted, "bench tree");
    for r in &mut results {
        for p in &mut r.phases {
            p.seconds = Summary::of(&p.samples);
        }
        r.total = Summary::of(&r.total_samples);
    }
    let (targets, not_judged) = targets(&results);
    Ok(TreeReport {
        meta: RunMeta::collect(&tarball),
        tree,
        rounds: opts.common.repeat,
        caches_not_dropped,
        requests: REQUESTS_COUNTED.into(),
        subjects,
        results,
        targets,
        not_judged,
    })
}

/// The tarball to extract and what its tree holds: the user's (extracted once into the
/// scratch directory to count it), or the generated tree packed into `scratch/tree.tar`.
fn prepare_tree(opts: &TreeOptions, scratch: &Path) -> Result<(PathBuf, TreeInfo)> {
    let staged = scratch.join("staged");
    let (tarball, info) = match &opts.tree {
        Some(t) => {
            std::fs::create_dir(&staged)?;
            generate::extract(t, &staged).with_context(|| format!("--tree {}", t.display()))?;
            (
                t.clone(),
                generate::count(&staged, t.display().to_string())?,
            )
        }
        None => {
            // About 20 KiB per file on average (the large ones included), twice: tree and tarball.
            let need = (opts.files as u64).saturating_mul(40 << 10);
            crate::harness::scratch::ensure_free(scratch, need)?;
            let info = generate::write_tree(&staged, opts.files as u64)?;
            let tarball = scratch.join("tree.tar");
            generate::pack(&staged, &tarball)?;
            (tarball, info)
        }
    };
    remove_tree(&staged).with_context(|| staged.display().to_string())?;
    crate::harness::scratch::ensure_free(scratch, info.bytes.saturating_mul(2))?;
    Ok((tarball, info))
}

fn empty_result(s: &Subject) -> SubjectResult {
    let phase = |phase| PhaseResult {
        phase,
        ..PhaseResult::default()
    };
    SubjectResult {
        subject: s.name.clone(),
        phases: PHASES.map(phase).to_vec(),
        ..SubjectResult::default()
    }
}

/// One round of the tree's life through `m`: every phase timed, the server's CPU read around
/// each; the samples are kept only when the whole life succeeded.
fn life(tarball: &Path, m: &Mounted, cold: bool, r: &mut SubjectResult) -> Result<()> {
    let mut round = Vec::new();
    let mut counted = m.requests();
    for phase in PHASES {
        let cpu0 = m.server_pid().map(phases::tree_cpu_s);
        let s = phases::run(phase, tarball, &m.file, cold).with_context(|| phase.name())?;
        let cpu = m.server_pid().map(phases::tree_cpu_s).zip(cpu0);
        let cpu = cpu.map(|(after, before)| (after - before).max(0.0));
        let now = counted.as_ref().and(m.requests());
        let served = now.as_ref().zip(counted.as_ref()).map(|(a, b)| since(a, b));
        counted = now;
        round.push((s, cpu, served));
    }
    for (p, (s, cpu, served)) in r.phases.iter_mut().zip(&round) {
        p.samples.push(*s);
        p.server_cpu_s.extend(*cpu);
        p.requests.extend(served.clone());
    }
    r.total_samples.push(round.iter().map(|(s, _, _)| s).sum());
    Ok(())
}

/// The counts in `after` less those in `before`, by key (a key not in `before` counts from 0).
fn since(after: &Counts, before: &Counts) -> Counts {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v.saturating_sub(*before.get(k).unwrap_or(&0))))
        .filter(|(_, v)| *v > 0)
        .collect()
}

/// The median of per-round ratios of `phase` (total when `None`) of `a` over `b`.
pub fn ratio(
    a: Option<&SubjectResult>,
    b: Option<&SubjectResult>,
    phase: Option<Phase>,
) -> Option<f64> {
    let samples = |r: &SubjectResult| match phase {
        None => Some(r.total_samples.clone()),
        Some(p) => Some(r.phase(p)?.samples.clone()),
    };
    let (a, b) = (a?, b?);
    if a.error.is_some() || b.error.is_some() {
        return None;
    }
    paired_median(&samples(a)?, &samples(b)?)
}

/// The most `vecio fuse` may take over native (issue 27): of the whole life (`None`) 2x, of
/// the extraction 3x; the other phases have no such target.
pub fn native_limit(phase: Option<Phase>) -> Option<f64> {
    match phase {
        None => Some(2.0),
        Some(Phase::Extract) => Some(3.0),
        Some(_) => None,
    }
}

/// The targets for `vecio fuse` with default options: its whole life and extraction
/// within [`native_limit`], and no phase slower than passthrough_hp's (when measured).
fn targets(results: &[SubjectResult]) -> (Vec<Target>, Vec<String>) {
    let find = |n: &str| results.iter().find(|r| r.subject == n);
    let (v, native, hp) = (find(VECIO), find(NATIVE), find(HP));
    let mut wanted: Vec<(String, Option<f64>, f64)> =
        [(None, "whole life"), (Some(Phase::Extract), "extract")]
            .into_iter()
            .filter_map(|(p, what)| {
                Some((
                    format!("{what} vs native"),
                    ratio(v, native, p),
                    native_limit(p)?,
                ))
            })
            .collect();
    if let Some(hp) = hp {
        wanted.extend(PHASES.map(|p| {
            let what = format!("{} vs passthrough_hp", p.name());
            (what, ratio(v, Some(hp), Some(p)), 1.0)
        }));
    }
    let (mut t, mut not_judged) = (Vec::new(), Vec::new());
    for (what, got, want) in wanted {
        match got {
            Some(g) => t.push(Target {
                text: format!("{VECIO} {what}: {g:.2}x (want <= {want:.1}x)"),
                met: g <= want,
            }),
            None => not_judged.push(format!("{VECIO} {what} (want <= {want:.1}x): not measured")),
        }
    }
    if hp.is_none() {
        let why =
            "no phase slower than passthrough_hp's: passthrough_hp not measured (--libfuse-hp)";
        not_judged.push(why.to_string());
    }
    (t, not_judged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(name: &str, per_phase: [f64; 4]) -> SubjectResult {
        let mut r = empty_result(&Subject::native(name));
        for (p, s) in r.phases.iter_mut().zip(per_phase) {
            p.samples = vec![s, s];
        }
        let total: f64 = per_phase.iter().sum();
        r.total_samples = vec![total, total];
        r
    }

    /// The targets are judged from the ratios to native; passthrough_hp's only when measured.
    #[test]
    fn targets_are_judged() {
        let native = result(NATIVE, [1.0, 0.5, 0.5, 0.5]);
        let vecio = result(VECIO, [3.5, 1.5, 2.0, 2.0]);
        let (t, not) = targets(&[native.clone(), vecio.clone()]);
        assert_eq!(t.len(), 2);
        assert!(!t[0].met && t[0].text.contains("3.60x"), "{t:?}");
        assert!(!t[1].met && t[1].text.contains("3.50x"), "{t:?}");
        assert_eq!(not.len(), 1);
        let hp = result(HP, [4.0, 1.0, 2.0, 3.0]);
        let (t, not) = targets(&[native, vecio, hp]);
        assert_eq!((t.len(), not.len()), (6, 0));
        assert_eq!(
            t[2..].iter().map(|t| t.met).collect::<Vec<_>>(),
            [true, false, true, true]
        );
    }
}
