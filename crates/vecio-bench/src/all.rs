//! `vecio bench all`: every experiment in turn under one progress display, each section printed
//! as it ends, gathered into one [`AllResults`]; one that cannot run or fails is recorded as not
//! measured, with the reason, and the run goes on (docs/report.md).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::experiment::{Entry, Env, Plan, Preset};
use crate::harness::overall::{self, Overall, Step};
use crate::harness::setup::Setup;
use crate::report::text;
use crate::results::{AllResults, Elapsed, NotMeasured, FORMAT};

/// Each experiment's plan for `p`, or why it has none.
pub fn plans(p: &Preset, experiments: &[&dyn Entry]) -> Vec<Result<Plan, String>> {
    experiments
        .iter()
        .map(|e| e.preset(p).map_err(|e| format!("{e:#}")))
        .collect()
}

/// How long the whole run should take.
pub fn estimate(plans: &[Result<Plan, String>]) -> Duration {
    plans.iter().flatten().map(|p| p.estimate).sum()
}

/// Runs every experiment with the presets of `p`. Failures are recorded in the results, never
/// returned.
pub fn run(p: &Preset, env: &Env, experiments: &[&dyn Entry]) -> AllResults {
    let dir = p.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let mut results = AllResults {
        format: FORMAT,
        quick: p.quick,
        setup: Some(Setup::collect(&dir, &env.vecio)),
        ..AllResults::default()
    };
    let plans = plans(p, experiments);
    let steps = experiments
        .iter()
        .zip(&plans)
        .map(|(e, plan)| Step {
            label: format!("{} (seed {})", e.key(), e.seed().id),
            estimate: plan.as_ref().map_or(Duration::ZERO, |p| p.estimate),
        })
        .collect();
    let display = Overall::start(steps);
    for (i, (e, plan)) in experiments.iter().zip(plans).enumerate() {
        display.begin(i);
        let t0 = Instant::now();
        let outcome = run_one(*e, plan, env, &mut results);
        display.end();
        results.elapsed.push(Elapsed {
            experiment: e.key().to_string(),
            seconds: t0.elapsed().as_secs_f64(),
        });
        if let Err((reason, failed)) = outcome {
            overall::print(&format!("{}: not measured: {reason}\n\n", e.key()));
            results.not_measured.push(NotMeasured {
                experiment: e.key().to_string(),
                reason,
                failed,
            });
        }
    }
    results
}

/// Runs one experiment, stores its figures and prints its section; or says why not and
/// whether it failed (rather than being left out).
fn run_one(
    e: &dyn Entry,
    plan: Result<Plan, String>,
    env: &Env,
    results: &mut AllResults,
) -> Result<(), (String, bool)> {
    let plan = plan.map_err(|why| (why, true))?;
    if let Some(why) = plan.cannot_run {
        return Err((why, false));
    }
    let failed = |err: anyhow::Error| (format!("{err:#}").replace('\n', " "), true);
    let figures = (plan.run)(env).map_err(failed)?;
    let section = e
        .section(&figures, results.setup.as_ref())
        .map_err(failed)?;
    overall::print(&format!("{}\n", text::section(&section)));
    results.reports.insert(e.key().to_string(), figures);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::preset_options;
    use crate::experiments::{
        callcost::Callcost, fuse::Fuse, loopdev::Loop, nowait::Nowait, tokio_reads::Tokio,
        writev::Writev,
    };
    use crate::registry::EXPERIMENTS;

    #[test]
    fn the_quick_run_fits_in_three_minutes() {
        let quick = Preset {
            quick: true,
            ..Preset::default()
        };
        let quick_plans = plans(&quick, &EXPERIMENTS);
        assert!(quick_plans.iter().all(Result::is_ok), "every preset parses");
        let total = estimate(&quick_plans).as_secs_f64();
        assert!(total < 180.0, "quick run estimated at {total:.0} s");
        let full = estimate(&plans(&Preset::default(), &EXPERIMENTS)).as_secs_f64();
        assert!(
            full > 4.0 * total,
            "full run {full:.0} s, quick {total:.0} s"
        );
    }

    #[test]
    fn presets_and_overrides_reach_every_experiment() -> anyhow::Result<()> {
        let quick = Preset {
            quick: true,
            ..Preset::default()
        };
        let w = preset_options::<Writev>(&quick)?;
        assert_eq!(w.size, 256 << 20);
        assert!(w.common.repeat >= 2, "a spread needs two repetitions");
        let f = preset_options::<Fuse>(&quick)?;
        assert!(
            !preset_options::<Loop>(&quick)?.lab && !preset_options::<Tokio>(&quick)?.http.http
        );
        let both = Preset {
            lab: true,
            http: true,
            ..quick.clone()
        };
        assert!(
            preset_options::<Loop>(&both)?.lab,
            "bench all --lab reaches loop"
        );
        assert!(
            preset_options::<Tokio>(&both)?.http.http,
            "bench all --http reaches tokio"
        );
        assert!(f.common.repeat >= 2 && f.size == 64 << 20);
        let tiny = Preset {
            size: Some(16 << 20),
            runtime: Some(Duration::from_millis(100)),
            repeat: Some(1),
            ..quick
        };
        let (w, n) = (
            preset_options::<Writev>(&tiny)?,
            preset_options::<Nowait>(&tiny)?,
        );
        assert_eq!((w.size, n.medium), (16 << 20, 4 << 20));
        assert_eq!(
            preset_options::<Loop>(&tiny)?.common.runtime,
            Duration::from_millis(100)
        );
        assert_eq!(preset_options::<Callcost>(&tiny)?.common.repeat, 1);
        let f = preset_options::<Fuse>(&tiny)?;
        assert_eq!(
            (f.size, f.common.runtime, f.common.repeat),
            (16 << 20, Duration::from_millis(100), 1)
        );
        let full = preset_options::<Writev>(&Preset::default())?;
        assert_eq!(full.common.runtime, Duration::from_secs(5));
        Ok(())
    }
}
