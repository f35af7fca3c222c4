//! The report's first screen: one verdict line per source document (what it claimed, vecio's
//! figure, the best figure of another program, and how many of the section's own targets this
//! run met), and a total that is the sum of the sections' target lists, so the two can never
//! disagree.

use super::summary::SummaryRow;
use super::Section;

/// Who wrote a source document, when, and its headline claim in a sentence: the documents
/// themselves are not in the repository, so the report says what they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provenance {
    /// `000` to `004`.
    pub id: &'static str,
    /// The post's date.
    pub date: &'static str,
    /// Its author and where it was posted.
    pub author: &'static str,
    /// The headline claim, in a sentence.
    pub claim: &'static str,
}

/// The five source documents' provenance, in seed order.
pub static PROVENANCE: [Provenance; 5] = [
    Provenance {
        id: "000",
        date: "2002-09-11",
        author: "Andrew Morton, linux-kernel: \"[patch] readv/writev rework\"",
        claim: "O_DIRECT writev of 8 x 4 KiB segments, all submitted before waiting: random \
                8.7x, sequential 6.6x faster; readv sys time 5x lower",
    },
    Provenance {
        id: "001",
        date: "2015-08-06",
        author: "Ming Lei, linux-kernel: \"[PATCH v9 6/6] block: loop: support DIO & AIO\"",
        claim: "a loop device doing direct, asynchronous I/O on its file: page cache after a \
                run ~10% instead of >55%, fewer context switches, IOPS equal or better",
    },
    Provenance {
        id: "002",
        date: "2015-05 (v7, on 4.1-rc3)",
        author: "Milosz Tanski, linux-api: \"preadv2/pwritev2 and RWF_NONBLOCK\"",
        claim: "cached reads tried without blocking before a thread pool: 70% of mostly-cached \
                random reads at ~2 µs; real workload 20-30% lower response time",
    },
    Provenance {
        id: "003",
        date: "2021-01-07",
        author: "Mikulas Patocka and others, linux-fsdevel: \"Expense of read_iter\"",
        claim: "building an iterator for a single buffer costs the read path ~10% (12% of \
                cycles against 2.7% for the plain path)",
    },
    Provenance {
        id: "004",
        date: "2012-07-20",
        author:
            "Maxim Patlasov, fuse-devel: \"[PATCH 0/4] fuse: optimize scatter-gather direct IO\"",
        claim: "32 x 4 KiB O_DIRECT writev through FUSE 107 -> 480 MB/s, readv 114 -> 569 MB/s \
                when many segments go in one request",
    },
];

/// The provenance of seed `id`.
pub fn provenance(id: &str) -> Option<&'static Provenance> {
    PROVENANCE.iter().find(|p| p.id == id)
}

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
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictLine {
    /// The seed.
    pub seed: &'static str,
    /// What it claimed.
    pub claim: &'static str,
    /// The headline comparison, as the seed's section names it.
    pub result: String,
    /// vecio's figure for it.
    pub vecio: String,
    /// The best other program's figure, or why there is none.
    pub peer: String,
    /// Targets of the section met, and how many it has.
    pub met: usize,
    /// Targets of the section.
    pub total: usize,
    /// Why nothing was measured, if nothing was.
    pub not_measured: Option<String>,
}

impl VerdictLine {
    /// `ok` when every target of the section was met, `MISS` otherwise, `-` without targets.
    pub fn mark(&self) -> &'static str {
        match (self.total, self.not_measured.is_some()) {
            (_, true) | (0, _) => "-",
            (t, _) if self.met == t => "ok",
            _ => "MISS",
        }
    }
}

/// One verdict line per section, from the section's own targets and its first summary row
/// (the seed's headline comparison); the peer is the first row of the seed whose peer is
/// another program.
pub fn verdicts(sections: &[Section], rows: &[SummaryRow]) -> Vec<VerdictLine> {
    sections
        .iter()
        .map(|s| {
            let id = s.seed.id;
            let mine: Vec<&SummaryRow> = rows.iter().filter(|r| r.seed == id).collect();
            let head = mine.first();
            let peer = mine
                .iter()
                .find(|r| is_real_peer(&r.peer))
                .map(|r| format!("{} ({})", r.peer_with_unit(), r.result))
                .unwrap_or_else(|| "no other program measures this".into());
            VerdictLine {
                seed: id,
                claim: provenance(id).map_or(s.seed.title, |p| p.claim),
                result: head.map_or(String::new(), |r| r.result.clone()),
                vecio: head.map_or("not measured".into(), |r| r.vecio_with_unit()),
                peer,
                met: s.targets.iter().filter(|t| t.met).count(),
                total: s.targets.len(),
                not_measured: s.not_measured.clone(),
            }
        })
        .collect()
}

/// `(met, total)` over every section's target list.
pub fn target_count(sections: &[Section]) -> (usize, usize) {
    sections.iter().fold((0, 0), |(m, t), s| {
        (
            m + s.targets.iter().filter(|x| x.met).count(),
            t + s.targets.len(),
        )
    })
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

    #[test]
    fn every_seed_has_its_provenance() {
        for s in super::super::SEEDS.iter() {
            assert!(provenance(s.id).is_some(), "{}", s.id);
        }
    }
}
