//! Differential test: random sequences of vectored reads and writes (random offsets, lengths,
//! segment splits and buffer addresses, aligned and not) through every engine on an O_DIRECT
//! file, against `std::fs` (buffered `pread`/`pwrite`) on a second file. Every read returns
//! the same bytes, and the files end up identical.
//!
//! Requests are grouped into batches the way a caller may: requests of one batch run
//! concurrently, so a batch never holds a write together with another request over the same
//! bytes, nor a read that could see a size change made by a write of the same batch.

use crate::common;

use std::io::{IoSlice, IoSliceMut};
use std::ops::Range;
use std::os::unix::fs::FileExt;

use common::*;
use proptest::collection::vec;
use proptest::prelude::*;
use vecio::{AlignedBuf, Batch, Direct, EngineKind, File, IoIter, RwFlags};

#[derive(Clone, Debug)]
struct Req {
    write: bool,
    offset: u64,
    segs: Vec<usize>,
    /// How far past an aligned address the buffer starts.
    mis: usize,
}

impl Req {
    fn len(&self) -> usize {
        self.segs.iter().sum()
    }
    fn range(&self) -> Range<u64> {
        self.offset..self.offset + self.len() as u64
    }
}

fn aligned_req() -> impl Strategy<Value = Req> {
    (any::<bool>(), 0u64..96, vec(1usize..=8, 1..=6)).prop_map(|(write, off, units)| Req {
        write,
        offset: off * 512,
        segs: units.into_iter().map(|u| u * 512).collect(),
        mis: 0,
    })
}

fn unaligned_req() -> impl Strategy<Value = Req> {
    (
        any::<bool>(),
        0u64..52_000,
        vec(0usize..=2500, 1..=6),
        0usize..8,
    )
        .prop_map(|(write, offset, mut segs, mis)| {
            if segs.iter().all(|&s| s == 0) {
                segs[0] = 1;
            }
            Req {
                write,
                offset,
                segs,
                mis,
            }
        })
}

fn req() -> impl Strategy<Value = Req> {
    prop_oneof![aligned_req(), unaligned_req()]
}

fn overlaps(a: &Range<u64>, b: &Range<u64>) -> bool {
    a.start < b.end && b.start < a.end
}

/// What `std::fs` says a run of requests does: the batches (ranges of request indexes), each
/// read's bytes (`None` for writes), and the final file.
type Reference = (Vec<Range<usize>>, Vec<Option<Vec<u8>>>, Vec<u8>);

/// Groups requests into batches (see the module docs), and computes what `std::fs` says: each
/// read's bytes (`None` for writes) and the final file.
fn reference(reqs: &[Req]) -> Reference {
    let dir = tempdir();
    let path = dir.path().join("reference");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    let mut batches = Vec::new();
    let mut start = 0;
    let mut size_before = 0u64;
    let mut reads = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        let fits = {
            let group = &reqs[start..i];
            let has_write = group.iter().any(|q| q.write) || r.write;
            group.len() < 6
                && group.iter().all(|q| {
                    !((q.write || r.write) && overlaps(&q.range(), &r.range()))
                        && !(has_write && !q.write && q.range().end > size_before)
                })
                && !(has_write && !r.write && r.range().end > size_before)
        };
        if !fits {
            batches.push(start..i);
            start = i;
            size_before = f.metadata().unwrap().len();
        }
        if r.write {
            f.write_all_at(&pattern(1000 + i as u16, r.offset, r.len()), r.offset)
                .unwrap();
            reads.push(None);
        } else {
            let mut buf = vec![0u8; r.len()];
            let mut got = 0;
            while got < buf.len() {
                match f.read_at(&mut buf[got..], r.offset + got as u64).unwrap() {
                    0 => break,
                    n => got += n,
                }
            }
            buf.truncate(got);
            reads.push(Some(buf));
        }
    }
    batches.push(start..reqs.len());
    (batches, reads, std::fs::read(&path).unwrap())
}

enum Segs<'a> {
    R(Vec<IoSliceMut<'a>>),
    W(Vec<IoSlice<'a>>),
}

fn run(
    kind: EngineKind,
    direct: Direct,
    reqs: &[Req],
    batches: &[Range<usize>],
    want_reads: &[Option<Vec<u8>>],
    want_file: &[u8],
) -> Result<(), TestCaseError> {
    let dir = tempdir();
    let path = dir.path().join("vecio");
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .direct(direct)
        .open(&path)
        .unwrap();
    prop_assert_eq!(file.is_direct(), direct == Direct::On);
    let mut engine = kind.build().unwrap();
    for range in batches {
        let group = &reqs[range.clone()];
        let mut bufs: Vec<AlignedBuf> = group
            .iter()
            .enumerate()
            .map(|(j, r)| {
                let mut b = AlignedBuf::new(r.len() + r.mis, 4096);
                if r.write {
                    fill(&mut b[r.mis..], 1000 + (range.start + j) as u16, r.offset);
                } else {
                    b.fill(0xEE);
                }
                b
            })
            .collect();
        let res = {
            let mut segs: Vec<Segs<'_>> = bufs
                .iter_mut()
                .zip(group)
                .map(|(b, r)| {
                    if r.write {
                        let b: &[u8] = &b[r.mis..];
                        Segs::W(split(b, &r.segs).into_iter().map(IoSlice::new).collect())
                    } else {
                        Segs::R(
                            split_mut(&mut b[r.mis..], &r.segs)
                                .into_iter()
                                .map(IoSliceMut::new)
                                .collect(),
                        )
                    }
                })
                .collect();
            let mut batch = Batch::new();
            for (s, r) in segs.iter_mut().zip(group) {
                let it = match s {
                    Segs::R(v) => IoIter::readv_into(v),
                    Segs::W(v) => IoIter::writev_from(v),
                };
                batch.push(&file, r.offset, it, RwFlags::empty());
            }
            batch.run(engine.as_mut())
        };
        for (j, (r, got)) in group.iter().zip(&res).enumerate() {
            let i = range.start + j;
            let what = format!("{kind:?} {direct:?} request {i} {r:?}");
            let n = match got {
                Ok(n) => *n,
                Err(e) => return Err(TestCaseError::fail(format!("{what}: {e}"))),
            };
            match &want_reads[i] {
                None => prop_assert_eq!(n, r.len(), "{}: write count", what),
                Some(want) => {
                    prop_assert_eq!(n, want.len(), "{}: read count", what);
                    let b = &bufs[j][r.mis..r.mis + n];
                    if b != &want[..] {
                        let k = b.iter().zip(want).position(|(x, y)| x != y).unwrap();
                        return Err(TestCaseError::fail(format!(
                            "{what}: read bytes differ from offset {} on: got {}, std read {}",
                            r.offset + k as u64,
                            describe_word(b, r.offset, (r.offset + k as u64) & !7),
                            describe_word(want, r.offset, (r.offset + k as u64) & !7),
                        )));
                    }
                }
            }
        }
    }
    prop_assert_eq!(
        file.size().unwrap(),
        want_file.len() as u64,
        "{:?} {:?}: size",
        kind,
        direct
    );
    let got = read_all(&path);
    if got != want_file {
        let k = got
            .iter()
            .zip(want_file)
            .position(|(x, y)| x != y)
            .unwrap_or(0);
        return Err(TestCaseError::fail(format!(
            "{kind:?} {direct:?}: files differ from offset {k}: vecio {}, std {}",
            describe_word(&got, 0, k as u64 & !7),
            describe_word(want_file, 0, k as u64 & !7)
        )));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        // VECIO_DIFF_CASES=N runs a longer search by hand.
        cases: std::env::var("VECIO_DIFF_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(24),
        failure_persistence: None,
        max_shrink_iters: 200,
        ..ProptestConfig::default()
    })]

    #[test]
    fn engines_match_std_fs(reqs in vec(req(), 1..=16)) {
        let (batches, reads, file) = reference(&reqs);
        for kind in EngineKind::ALL {
            for direct in [Direct::On, Direct::Off] {
                run(kind, direct, &reqs, &batches, &reads, &file)?;
            }
        }
    }
}
