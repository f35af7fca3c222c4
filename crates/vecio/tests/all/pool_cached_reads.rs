//! Many cached reads per batch through the thread-pool engine: right in every fast-read mode,
//! and all served inline in the modes that try inline. Real files, real kernel.

use crate::common;

use common::pool::*;
use common::*;
use vecio::engine::WhenFull;
use vecio::fast_read::FastReadMode;
use vecio::{Batch, FastReadPolicy, File, IoIter, RwFlags};

/// A batch of 64 cached 16 KiB reads (scrambled order, half of them in 3 segments) through the
/// pool engine is right in every fast-read mode; inline modes serve them all inline.
#[test]
fn a_batch_of_cached_reads_is_right_in_every_mode() {
    const SEED: u16 = 47;
    const N: usize = 64;
    const LEN: usize = 16 * 1024;
    let dir = tempdir();
    let path = dir.path().join("cached");
    drop(pattern_file(&path, SEED, N * LEN + 5000));
    for mode in [
        FastReadMode::Off,
        FastReadMode::Always,
        FastReadMode::Tracked,
    ] {
        let file = File::options()
            .read(true)
            .direct(vecio::Direct::Off)
            .open(&path)
            .unwrap();
        let mut warmup = vec![0u8; N * LEN + 5000];
        file.read_at(&mut warmup, 0).unwrap();
        let mut eng = engine(2, 128, WhenFull::Wait, mode);
        let order = Rng::new(mode as u64 + 1).permutation(N);
        let mut bufs = vec![vec![0xEEu8; LEN]; N];
        let res = {
            let mut slices: Vec<Vec<std::io::IoSliceMut<'_>>> = bufs
                .iter_mut()
                .enumerate()
                .map(|(i, b)| {
                    let sizes: &[usize] = if i % 2 == 0 {
                        &[LEN]
                    } else {
                        &[1, LEN - 4097, 4096]
                    };
                    split_mut(b, sizes)
                        .into_iter()
                        .map(std::io::IoSliceMut::new)
                        .collect()
                })
                .collect();
            let mut b = Batch::new();
            let mut slots: Vec<Option<&mut Vec<std::io::IoSliceMut<'_>>>> =
                slices.iter_mut().map(Some).collect();
            for &i in &order {
                let s = slots[i].take().unwrap();
                b.push(
                    &file,
                    (i * LEN) as u64 + 3,
                    IoIter::readv_into(s),
                    RwFlags::empty(),
                );
            }
            b.run(&mut eng)
        };
        for (k, r) in res.iter().enumerate() {
            assert_eq!(r.as_ref().ok(), Some(&LEN), "{mode:?} request {k}");
        }
        for (i, b) in bufs.iter().enumerate() {
            assert_pattern(b, SEED, (i * LEN) as u64 + 3, &format!("{mode:?} read {i}"));
        }
        let pol = FastReadPolicy::with_mode(mode);
        let st = file.fast_read_stats(&pol);
        if mode == FastReadMode::Off {
            assert_eq!((st.attempts, st.offloads), (0, N as u64), "{st:?}");
        } else {
            assert_eq!(
                (st.attempts, st.hits, st.offloads),
                (N as u64, N as u64, 0),
                "{mode:?}: {st:?}"
            );
        }
    }
}
