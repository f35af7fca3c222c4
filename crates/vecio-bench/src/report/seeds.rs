//! The five source documents: what each one is and what it claimed, quoted.

/// A claim of a seed: its own words and the figure they give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The seed's words, verbatim.
    pub quote: &'static str,
    /// The figure, as the report compares it.
    pub figure: &'static str,
}

/// A source document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seed {
    /// `000` to `004`.
    pub id: &'static str,
    /// The experiment reproducing it (`writev`, `loop`, `nowait`, `callcost`, `fuse`).
    pub experiment: &'static str,
    /// What it is.
    pub title: &'static str,
    /// Its file under `seeds/`.
    pub file: &'static str,
    /// How vecio re-measures it.
    pub method: &'static str,
    /// Its claims.
    pub claims: &'static [Claim],
}

const fn c(quote: &'static str, figure: &'static str) -> Claim {
    Claim { quote, figure }
}

/// Every seed, in order.
pub static SEEDS: [Seed; 5] = [
    Seed {
        id: "000",
        experiment: "writev",
        title: "readv/writev rework (2002): submit every segment, then wait on the lot",
        file: "000_7dcf0df396dbfddb.txt",
        method: "32 KiB requests as 8 x 4 KiB O_DIRECT segments, one request at a time: vecio's \
                 serial engine (one call per segment, waited on: the seed's before) against sync \
                 (preadv2/pwritev2) and uring (one io_uring_enter), beside fio bs=4k and bs=32k psync.",
        claims: &[
            c("Random writev 8.7 times faster", "8.7x"),
            c("Sequential writev 6.6 times faster", "6.6x"),
            c("Random readv not faster, but sys time improves 5x", "sys 5.2x"),
            c("Random mixed I/O 5 times faster", "5.1x"),
            c("Sequential mixed I/O 6.6 times faster", "6.6x"),
            c("Each raw readv or writev was for 32K (4k x 8).", "32 KiB = 8 x 4 KiB"),
        ],
    },
    Seed {
        id: "001",
        experiment: "loop",
        title: "loop device with direct and async I/O (2015): no double caching, fewer switches",
        file: "001_bce926be3a1aae53.txt",
        method: "One image served over NBD by vecio nbd (direct + io_uring, and buffered), \
                 qemu-nbd and nbdkit; fio's nbd engine runs 4 KiB random and 128 KiB sequential \
                 jobs at depth 32; fio's own io_uring O_DIRECT on the file is the limit. The \
                 image's pages in the page cache are sampled while each job runs.",
        claims: &[
            c("base |240 |8705 |3763 |20914 / base+loop aio |242 |9258 |4577 |21451 (IOPS, 16 jobs)", "dio+aio/base 1.01x, 1.06x, 1.22x, 1.03x"),
            c("context switch decreased by ~16% with loop aio for randread, and decreased by ~33% for read", "-16%, -33%"),
            c("After these four tests with loop aio: ~10% memory becomes used", "~10%"),
            c("After these four tests without loop aio: more than 55% memory becomes used", ">55%"),
        ],
    },
    Seed {
        id: "002",
        experiment: "nowait",
        title: "preadv2/pwritev2 and RWF_NONBLOCK (2015): cached reads served inline, not queued",
        file: "002_830b7ce2b4df9caf.txt",
        method: "16 KiB buffered reads kept 32 in flight by one event loop over three files (f1 \
                 Zipf over a mostly cached file, f2 uniform over an uncached one, f3 sequential) \
                 and their 73/18/9 mix: a thread pool alone (the seed's before), fast read always \
                 tried, fast read tracked per file, and io_uring.",
        claims: &[
            c("f1: ~73% rand read over mostly cached data (zipf med-size dataset)", "the workload"),
            c("after: f1: lat (usec) : 2=70.63%", "70.6% under 2 µs"),
            c("after: f3: lat (usec) : 2=64.04%", "64.0% under 2 µs"),
            c("total: READ: aggrb=174669KB/s -> aggrb=177339KB/s", "bandwidth 1.02x"),
            c("we were able to reduce average response time by 20 to 30%", "-20% to -30%"),
        ],
    },
    Seed {
        id: "003",
        experiment: "callcost",
        title: "the expense of read_iter (2021): a single buffer should not pay for an iterator",
        file: "003_f92c9aae2b9a0629.txt",
        method: "The same cached 4 KiB page read over and over: raw pread and preadv2, then each \
                 vecio path (read_at, readv_at, one-request batches per engine); time per call, \
                 and user-space instructions per call from callgrind.",
        claims: &[
            c("reading a file with the read method has 10% better performance than the read_iter method", "1.10x"),
            c("we get 12.01%. On the other hand, in the second trace, nvfs_read consumes just 2.71%", "12.0% vs 2.7% of cycles"),
        ],
    },
    Seed {
        id: "004",
        experiment: "fuse",
        title: "FUSE scatter-gather direct I/O (2012): many segments per request",
        file: "004_79c7fe0e9c79c24f.txt",
        method: "A file opened O_DIRECT on a FUSE passthrough mount, readv/writev of 32 x 4 KiB \
                 in a loop: vecio fuse against libfuse's passthrough.",
        claims: &[
            c("An iovec[] for readv/writev consisted of 32 segments of 4K each.", "32 x 4 KiB"),
            c("writev: ~107 / ~480", "107 -> 480 MB/s (4.5x)"),
            c("readv: ~114 / ~569", "114 -> 569 MB/s (5.0x)"),
        ],
    },
];

/// The seed reproduced by `experiment`.
pub fn seed(experiment: &str) -> &'static Seed {
    SEEDS
        .iter()
        .find(|s| s.experiment == experiment)
        .unwrap_or(&SEEDS[0])
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
        for s in &SEEDS {
            let text = std::fs::read_to_string(dir.join(s.file)).unwrap_or_default();
            let squash = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
            let text = squash(&text.replace(['`', '>'], " "));
            for c in s.claims {
                let first = c.quote.split(" / ").next().unwrap_or(c.quote);
                let first = first.split(" -> ").next().unwrap_or(first);
                let first = first.trim_start_matches("after: ");
                let probe = squash(first.split(": ").last().unwrap_or(first));
                assert!(text.contains(&probe), "seed {}: {probe:?} not found", s.id);
            }
        }
        assert_eq!(seed("loop").id, "001");
    }
}
