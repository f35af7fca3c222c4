//! The report's first screen: one verdict line per section and a target count summed over the
//! sections' own lists, so the two cannot disagree.

use crate::experiment::Section;

/// Names of vecio's own engines and paths: never a peer, however a row names them.
const OWN: [&str; 8] = [
    "io_uring", "uring", "sync", "serial", "pool", "preadv2", "fast", "vecio",
];

/// True when `peer` (a summary row's peer cell, `FIGURE NAME`) names another program or the
/// kernel's own path without vecio (`native`), not one of vecio's own engines, and its figure
/// is the program's own measure, not a ratio (`6.03x fio 32k/4k` is fio against itself).
pub fn is_real_peer(peer: &str) -> bool {
    let peer = peer.trim();
    if peer.is_empty() || peer == "-" {
        return false;
    }
    let ratio = peer
        .split_whitespace()
        .next()
        .is_some_and(|f| f.ends_with('x') && f.trim_end_matches('x').parse::<f64>().is_ok());
    !ratio && !peer.split_whitespace().any(|w| OWN.contains(&w))
}

/// One line of the first screen.
#[derive(Debug, Clone)]
pub struct VerdictLine<'a> {
    /// The section.
    pub section: &'a Section,
    /// The headline comparison, as the section's first summary row names it.
    pub result: String,
    /// vecio's figure for it.
    pub vecio: String,
    /// The best other program's figure, or why there is none.
    pub peer: String,
    /// Targets of the section met.
    pub met: usize,
    /// Targets of the section.
    pub total: usize,
}

impl VerdictLine<'_> {
    /// `ok` when every target of the section was met, `MISS` otherwise, `-` without targets.
    pub fn mark(&self) -> &'static str {
        match (self.total, self.section.not_measured.is_some()) {
            (_, true) | (0, _) => "-",
            (t, _) if self.met == t => "ok",
            _ => "MISS",
        }
    }
}

/// One verdict line per section, from its own targets and its first summary row (the seed's
/// headline comparison); the peer is the first of its rows whose peer is another program.
pub fn verdicts(sections: &[Section]) -> Vec<VerdictLine<'_>> {
    sections
        .iter()
        .map(|s| {
            let head = s.summary.first();
            let peer = s
                .summary
                .iter()
                .find(|r| is_real_peer(&r.peer))
                .map(|r| format!("{} ({})", r.peer_with_unit(), r.result))
                .unwrap_or_else(|| "no other program measures this".into());
            let (met, total) = target_count(std::slice::from_ref(s));
            VerdictLine {
                section: s,
                result: head.map_or(String::new(), |r| r.result.clone()),
                vecio: head.map_or("not measured".into(), |r| r.vecio_with_unit()),
                peer,
                met,
                total,
            }
        })
        .collect()
}

/// The sections of distinct source documents, in order: one per seed (the sections of a seed
/// are next to each other, as [`super::sections`] sorts them).
pub fn documents(sections: &[Section]) -> Vec<&Section> {
    let mut out: Vec<&Section> = sections.iter().collect();
    out.dedup_by_key(|s| s.seed.id);
    out
}

/// `(met, total)` over every section's target list.
pub fn target_count(sections: &[Section]) -> (usize, usize) {
    let targets = || sections.iter().flat_map(|s| &s.targets);
    (targets().filter(|t| t.met).count(), targets().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_engines_are_no_peers() {
        assert!(is_real_peer("31426 qemu-nbd"));
        assert!(!is_real_peer("6.03x fio 32k/4k"));
        assert!(is_real_peer("812.4 fio 32k"));
        assert!(is_real_peer("429 libfuse passthrough_ll"));
        assert!(is_real_peer("1310 native"));
        assert!(!is_real_peer("0.0% io_uring"));
        assert!(!is_real_peer("2.50x preadv2"));
        assert!(!is_real_peer("-"));
        assert!(!is_real_peer("38.4 µs io_uring"));
    }
}
