//! Every experiment, in the order `bench all` runs them, and those it leaves out: all the
//! command line, `bench all`, the report and `compare` know of them.

use crate::experiment::Entry;
use crate::experiments::{callcost, fuse, loopdev, nowait, tokio_reads, tree, writev};

/// The experiments.
pub static EXPERIMENTS: [&dyn Entry; 6] = [
    &writev::Writev,
    &nowait::Nowait,
    &tokio_reads::Tokio,
    &callcost::Callcost,
    &loopdev::Loop,
    &fuse::Fuse,
];

/// Experiments run only when asked for by name (`vecio bench tree`): not part of `bench all`,
/// its report or its summary. `tree` drops the page cache of the whole machine before each
/// cold walk, which no other experiment of a shared run should suffer.
pub static OPT_IN: [&dyn Entry; 1] = [&tree::Tree];

/// Every experiment with a subcommand: [`EXPERIMENTS`], then [`OPT_IN`].
pub fn commands() -> impl Iterator<Item = &'static dyn Entry> {
    EXPERIMENTS.iter().chain(OPT_IN.iter()).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every quote is the seed's own words (where the seed files are beside the project).
    #[test]
    fn quotes_are_verbatim() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/seeds");
        if !dir.exists() {
            println!("skipped: the seed documents are not at {}", dir.display());
            return;
        }
        let squash = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        for e in EXPERIMENTS {
            let s = e.seed();
            let text = std::fs::read_to_string(dir.join(s.file)).unwrap_or_default();
            let text = squash(&text.replace(['`', '>'], " "));
            for c in s.claims {
                let first = c.quote.split(" / ").next().unwrap_or(c.quote);
                let first = first.split(" -> ").next().unwrap_or(first);
                let first = first.trim_start_matches("after: ");
                let probe = squash(first.split(": ").last().unwrap_or(first));
                assert!(text.contains(&probe), "seed {}: {probe:?} not found", s.id);
            }
        }
    }

    #[test]
    fn keys_are_unique_and_every_seed_is_told() {
        let mut keys: Vec<&str> = commands().map(|e| e.key()).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), EXPERIMENTS.len() + OPT_IN.len());
        for e in EXPERIMENTS {
            let s = e.seed();
            assert!(
                !s.date.is_empty() && !s.author.is_empty() && !s.headline.is_empty(),
                "{}",
                s.id
            );
        }
        let ids: Vec<&str> = EXPERIMENTS.iter().map(|e| e.seed().id).collect();
        for id in ["000", "001", "002", "003", "004"] {
            assert!(ids.contains(&id), "no experiment re-measures seed {id}");
        }
    }
}
