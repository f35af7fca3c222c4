//! Property test: unaligned and aligned `Queue` reads and writes, interleaved with fsync,
//! fdatasync, punch-hole and zero-range ops on one file (direct, then buffered), against a byte-vector model.
//! Each round pushes up to four ops over disjoint 16 KiB slots (so their order within the
//! round does not matter), submits them together, checks every completion and read, and
//! applies the writes to the model; the file is compared with the model at the end.

use crate::common;

use std::sync::Arc;

use proptest::prelude::*;
use rustix::fs::FallocateFlags;
use vecio::{AlignedBuf, Direct, EngineKind, File, OwnedBuf, Queue, RwFlags};

const SLOT: u64 = 16384;
const SLOTS: u64 = 4;
const SIZE: usize = (SLOT * SLOTS) as usize;

#[derive(Clone, Debug)]
enum Kind {
    Read,
    Write(u8),
    Fsync(bool),
    Punch,
    Zero,
}

#[derive(Clone, Debug)]
struct Step {
    kind: Kind,
    /// Offset and length inside the slot; rounded to 4 KiB when `aligned`.
    off: u64,
    len: u64,
    aligned: bool,
}

fn step() -> impl Strategy<Value = Step> {
    let kind = prop_oneof![
        3 => Just(Kind::Read),
        3 => any::<u8>().prop_map(Kind::Write),
        1 => any::<bool>().prop_map(Kind::Fsync),
        1 => Just(Kind::Punch),
        1 => Just(Kind::Zero),
    ];
    (kind, 0..SLOT - 1, 1..SLOT, any::<bool>()).prop_map(|(kind, off, len, aligned)| {
        let (off, len) = if aligned {
            (off / 4096 * 4096, (len / 4096).max(1) * 4096)
        } else {
            (off, len)
        };
        Step {
            kind,
            off,
            len: len.min(SLOT - off),
            aligned,
        }
    })
}

fn buf(len: usize, aligned: bool, fill: u8) -> OwnedBuf {
    if aligned {
        let mut b = AlignedBuf::page_aligned(len);
        b.fill(fill);
        OwnedBuf::Aligned(b)
    } else {
        OwnedBuf::Vec(vec![fill; len])
    }
}

fn run_round(q: &mut Queue, file: &Arc<File>, model: &mut [u8], round: &[Step]) {
    for (i, s) in round.iter().enumerate() {
        let at = i as u64 * SLOT + s.off;
        let len = s.len as usize;
        let tag = i as u64;
        let pushed = match s.kind {
            Kind::Read => q
                .push_read(
                    file,
                    at,
                    vec![buf(len, s.aligned, 0)],
                    RwFlags::empty(),
                    tag,
                )
                .map_err(|e| e.error),
            Kind::Write(b) => q
                .push_write(
                    file,
                    at,
                    vec![buf(len, s.aligned, b)],
                    RwFlags::empty(),
                    tag,
                )
                .map_err(|e| e.error),
            Kind::Fsync(data_only) => q.push_fsync(file, data_only, tag),
            Kind::Punch => {
                let mode = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
                q.push_fallocate(file, mode, at, s.len, tag)
            }
            Kind::Zero => {
                let mode = FallocateFlags::ZERO_RANGE | FallocateFlags::KEEP_SIZE;
                q.push_fallocate(file, mode, at, s.len, tag)
            }
        };
        pushed.unwrap();
    }
    q.submit_and_wait(round.len()).unwrap();
    let mut done = Vec::new();
    q.reap(&mut done);
    assert_eq!(done.len(), round.len());
    for c in done {
        let s = &round[c.user_data as usize];
        let at = (c.user_data * SLOT + s.off) as usize;
        let len = s.len as usize;
        let n = *c.result.as_ref().unwrap_or_else(|e| panic!("{s:?}: {e}"));
        assert!(c.stopped_by.is_none(), "{s:?}");
        match s.kind {
            Kind::Read => {
                assert_eq!(n, len, "{s:?}");
                assert!(
                    c.bufs[0].as_slice() == &model[at..at + len],
                    "{s:?}: read differs"
                );
            }
            Kind::Write(b) => {
                assert_eq!(n, len, "{s:?}");
                model[at..at + len].fill(b);
            }
            Kind::Punch | Kind::Zero => model[at..at + len].fill(0),
            Kind::Fsync(_) => assert_eq!(n, 0),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn queue_matches_a_byte_model(rounds in prop::collection::vec(
        prop::collection::vec(step(), 1..=SLOTS as usize), 1..12)) {
        // Direct: fallocate takes the locked blocking path; buffered: it goes through the ring.
        for direct in [Direct::On, Direct::Off] {
            let dir = common::tempdir();
            let file = File::options().read(true).write(true).create(true).direct(direct)
                .open(dir.path().join("m")).unwrap();
            let mut model = common::pattern(5, 0, SIZE);
            file.write_all_at(&model, 0).unwrap();
            let file = Arc::new(file);
            for kind in [EngineKind::Uring, EngineKind::Pool, EngineKind::Sync] {
                let mut q = Queue::new(kind.build().unwrap());
                for round in &rounds {
                    run_round(&mut q, &file, &mut model, round);
                }
            }
            let mut back = vec![0u8; SIZE];
            file.read_exact_at(&mut back, 0).unwrap();
            prop_assert!(back == model, "{:?}: file differs from the model", direct);
            prop_assert_eq!(file.size().unwrap(), SIZE as u64);
        }
    }
}
