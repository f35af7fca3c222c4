//! Direct I/O is correct for any request: odd offsets, odd lengths, unaligned buffer addresses
//! and odd segment sizes are served (reads through a bounce buffer, writes by
//! read-modify-write of the edge blocks), the bytes around each request are preserved, the
//! caller's buffer is written only where it should be, and a write that extends the file sets
//! the size to exactly `offset + len`.

use crate::common;

use std::io::{IoSlice, IoSliceMut};
use std::path::Path;

use common::*;
use vecio::{AlignedBuf, Batch, EngineKind, File, IoIter, RwFlags};

/// One unaligned case: file offset, segment sizes, and how far into an aligned buffer the
/// first segment starts.
struct Case {
    offset: u64,
    segs: &'static [usize],
    mis: usize,
}

const CASES: &[Case] = &[
    Case {
        offset: 1,
        segs: &[1],
        mis: 0,
    },
    Case {
        offset: 511,
        segs: &[2],
        mis: 0,
    },
    Case {
        offset: 513,
        segs: &[1000],
        mis: 1,
    },
    Case {
        offset: 4095,
        segs: &[3, 5, 7, 4096, 1],
        mis: 0,
    },
    // Aligned length, unaligned offset.
    Case {
        offset: 100,
        segs: &[512, 512],
        mis: 0,
    },
    // Aligned offset and total, unaligned segments.
    Case {
        offset: 1024,
        segs: &[100, 412],
        mis: 0,
    },
    // Only the buffer address is unaligned.
    Case {
        offset: 2048,
        segs: &[4096],
        mis: 1,
    },
    Case {
        offset: 8192,
        segs: &[512, 512],
        mis: 4,
    },
    // Zero-length segments mixed in.
    Case {
        offset: 3000,
        segs: &[0, 17, 0, 999, 0],
        mis: 3,
    },
    // Within one block, aligned start, unaligned end.
    Case {
        offset: 6144,
        segs: &[300],
        mis: 0,
    },
    // Within one block, unaligned start, aligned end.
    Case {
        offset: 7000,
        segs: &[168],
        mis: 0,
    },
    // Across many blocks, both edges unaligned, odd segment sizes.
    Case {
        offset: 9999,
        segs: &[1, 511, 513, 4097, 33, 7],
        mis: 5,
    },
];

const FILE_LEN: usize = 64 * 1024;

fn prepare(path: &Path, seed: u16) -> Vec<u8> {
    let data = pattern(seed, 0, FILE_LEN);
    std::fs::write(path, &data).unwrap();
    data
}

/// Writes each case over a patterned file and checks the whole file (every byte outside the
/// request keeps its old value), then reads each case back through unaligned buffers.
#[test]
fn unaligned_writes_preserve_neighbours_and_reads_return_exact_bytes() {
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        let mut model = prepare(&path, 1);
        let file = open_direct(&path);
        assert_eq!(file.dio_align().offset, 512, "ext4 on this machine");
        let mut engine = kind.build().unwrap();
        for (n, case) in CASES.iter().enumerate() {
            let what = format!(
                "{kind:?} case {n} (offset {}, segs {:?})",
                case.offset, case.segs
            );
            let seed = 10 + n as u16;
            let total: usize = case.segs.iter().sum();
            let mut src = AlignedBuf::new(total + case.mis, 4096);
            fill(&mut src[case.mis..], seed, case.offset);
            let segs: Vec<IoSlice<'_>> = split(&src[case.mis..], case.segs)
                .into_iter()
                .map(IoSlice::new)
                .collect();
            let mut batch = Batch::new();
            batch.push(
                &file,
                case.offset,
                IoIter::writev_from(&segs),
                RwFlags::empty(),
            );
            let res = batch.run(engine.as_mut());
            assert_eq!(res[0].as_ref().ok(), Some(&total), "{what}: write: {res:?}");
            let at = case.offset as usize;
            model[at..at + total].copy_from_slice(&src[case.mis..]);
            assert_eq!(
                file.size().unwrap(),
                FILE_LEN as u64,
                "{what}: size changed"
            );
            assert_same(
                &read_all(&path),
                &model,
                0,
                &format!("{what}: file after write"),
            );
        }
        for (n, case) in CASES.iter().enumerate() {
            let what = format!(
                "{kind:?} case {n} read (offset {}, segs {:?})",
                case.offset, case.segs
            );
            let total: usize = case.segs.iter().sum();
            // Guard bytes on both sides of the destination: a bounce copy must not spill.
            let mut dst = AlignedBuf::new(total + case.mis + 64, 4096);
            dst.fill(0xEE);
            {
                let mut segs: Vec<IoSliceMut<'_>> = split_mut(&mut dst[case.mis..], case.segs)
                    .into_iter()
                    .map(IoSliceMut::new)
                    .collect();
                let mut batch = Batch::new();
                batch.push(
                    &file,
                    case.offset,
                    IoIter::readv_into(&mut segs),
                    RwFlags::empty(),
                );
                let res = batch.run(engine.as_mut());
                assert_eq!(res[0].as_ref().ok(), Some(&total), "{what}: {res:?}");
            }
            let at = case.offset as usize;
            assert_same(
                &dst[case.mis..case.mis + total],
                &model[at..at + total],
                case.offset,
                &what,
            );
            assert!(
                dst[..case.mis].iter().all(|&b| b == 0xEE),
                "{what}: guard before"
            );
            assert!(
                dst[case.mis + total..].iter().all(|&b| b == 0xEE),
                "{what}: guard after"
            );
        }
    }
}

/// Several unaligned writes in one batch, some sharing a 512-byte block, next to aligned
/// writes and reads of other bytes of the same blocks: nothing tears.
#[test]
fn unaligned_writes_sharing_blocks_in_one_batch() {
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        let mut model = prepare(&path, 2);
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();
        // (offset, len): unaligned neighbours in blocks 0 and 1, and an aligned block 2.
        let writes: &[(u64, usize)] = &[
            (10, 10),
            (20, 10),
            (30, 500),
            (530, 10),
            (1024, 512),
            (1600, 7),
        ];
        let bufs: Vec<Vec<u8>> = writes
            .iter()
            .enumerate()
            .map(|(i, &(o, l))| pattern(50 + i as u16, o, l))
            .collect();
        let mut aligned = AlignedBuf::new(512, 4096);
        aligned.copy_from_slice(&bufs[4]);
        // Reads of bytes the writes do not touch, in the same blocks.
        let mut r1 = vec![0u8; 10];
        let mut r2 = AlignedBuf::new(512, 4096);
        {
            let mut batch = Batch::new();
            for (i, &(o, _)) in writes.iter().enumerate() {
                let it = if i == 4 {
                    IoIter::write_from(&aligned)
                } else {
                    IoIter::write_from(&bufs[i])
                };
                batch.push(&file, o, it, RwFlags::empty());
            }
            batch.push(&file, 0, IoIter::read_into(&mut r1), RwFlags::empty());
            batch.push(&file, 2048, IoIter::read_into(&mut r2), RwFlags::empty());
            let res = batch.run(engine.as_mut());
            for (i, &(_, l)) in writes.iter().enumerate() {
                assert_eq!(
                    res[i].as_ref().ok(),
                    Some(&l),
                    "{kind:?}: write {i}: {res:?}"
                );
            }
            assert_eq!(res[6].as_ref().ok(), Some(&10));
            assert_eq!(res[7].as_ref().ok(), Some(&512));
        }
        assert_same(&r1, &model[..10], 0, &format!("{kind:?}: read 0..10"));
        assert_same(
            &r2,
            &model[2048..2560],
            2048,
            &format!("{kind:?}: read 2048.."),
        );
        for (i, &(o, l)) in writes.iter().enumerate() {
            model[o as usize..o as usize + l].copy_from_slice(&bufs[i]);
        }
        assert_same(&read_all(&path), &model, 0, &format!("{kind:?}: file"));
    }
}

fn write_one(engine: &mut dyn vecio::Engine, file: &File, offset: u64, data: &[u8]) -> usize {
    let mut batch = Batch::new();
    batch.push(file, offset, IoIter::write_from(data), RwFlags::empty());
    batch.run(engine).pop().unwrap().unwrap()
}

/// An unaligned write past the end sets the size to exactly `offset + len`, never rounded up
/// to a block, and leaves the gap as zeros.
#[test]
fn unaligned_write_extends_file_to_exact_size() {
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let mut engine = kind.build().unwrap();
        let e = engine.as_mut();

        // Empty file, write in the middle of the second block.
        let path = dir.path().join("empty");
        let file = open_direct(&path);
        assert_eq!(write_one(e, &file, 4097, b"abc"), 3);
        assert_eq!(file.size().unwrap(), 4100, "{kind:?}: empty file");
        let all = read_all(&path);
        assert!(all[..4097].iter().all(|&b| b == 0), "{kind:?}: hole");
        assert_eq!(&all[4097..], b"abc");

        // File of unaligned size 1000.
        let cases: &[(u64, usize, u64)] = &[
            // (offset, len, expected size)
            (1500, 10, 1510),   // past the end, gap in the last block and the next
            (900, 200, 1100),   // from inside to past the end, same block as EOF
            (100, 50, 1000),    // inside: no change
            (990, 10, 1000),    // ends exactly at EOF
            (1000, 1, 1001),    // starts exactly at EOF
            (1024, 100, 1124),  // aligned start past an unaligned EOF
            (700, 1000, 1700),  // from inside across a block boundary past the end
            (5000, 4096, 9096), // aligned length, unaligned offset, far past the end
        ];
        for (n, &(offset, len, size)) in cases.iter().enumerate() {
            let what = format!("{kind:?} case {n}: write {len} at {offset} into a 1000-byte file");
            let path = dir.path().join(format!("odd{n}"));
            let mut model = pattern(9, 0, 1000);
            std::fs::write(&path, &model).unwrap();
            let file = open_direct(&path);
            let data = pattern(20 + n as u16, offset, len);
            assert_eq!(write_one(e, &file, offset, &data), len, "{what}");
            assert_eq!(file.size().unwrap(), size, "{what}: size");
            if model.len() < (offset as usize + len) {
                model.resize(offset as usize + len, 0);
            }
            model[offset as usize..offset as usize + len].copy_from_slice(&data);
            assert_same(&read_all(&path), &model, 0, &what);
        }

        // Through File::write_at (the blocking single-call path) as well.
        let path = dir.path().join("write_at");
        std::fs::write(&path, pattern(9, 0, 1000)).unwrap();
        let file = open_direct(&path);
        assert_eq!(file.write_at(b"xyz", 2000).unwrap(), 3);
        assert_eq!(file.size().unwrap(), 2003, "write_at: size");
    }
}

/// Unaligned reads that the bounce buffer must trim at both ends, from a file whose size is not
/// a block multiple.
#[test]
fn unaligned_reads_of_odd_sized_file() {
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        let size = 3 * 4096 + 777;
        let model = pattern(4, 0, size);
        std::fs::write(&path, &model).unwrap();
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();
        let mut rng = Rng::new(99);
        for i in 0..200 {
            let off = rng.range(0, size as u64 + 10) as usize;
            let len = rng.range(1, 3000) as usize;
            let mis = rng.range(0, 16) as usize;
            let mut dst = vec![0xEEu8; len + mis + 8];
            let mut batch = Batch::new();
            batch.push(
                &file,
                off as u64,
                IoIter::read_into(&mut dst[mis..mis + len]),
                RwFlags::empty(),
            );
            let got = batch.run(engine.as_mut()).pop().unwrap().unwrap();
            let want = len.min(size.saturating_sub(off));
            let what = format!("{kind:?} read {i}: {len} at {off} (mis {mis})");
            assert_eq!(got, want, "{what}");
            assert_same(
                &dst[mis..mis + got],
                &model[off.min(size)..off.min(size) + got],
                off as u64,
                &what,
            );
            assert!(
                dst[..mis].iter().all(|&b| b == 0xEE),
                "{what}: guard before"
            );
            // An aligned direct read may fill its whole last block past EOF; a bounced one must
            // write exactly the bytes it reports.
            let aligned =
                file.is_aligned_request(off as u64, &IoIter::read_into(&mut dst[mis..mis + len]));
            if !aligned {
                assert!(
                    dst[mis + got..].iter().all(|&b| b == 0xEE),
                    "{what}: bytes after the count"
                );
            }
        }
    }
}

/// Threads, each with its own engine, read-modify-write interleaved 64-byte stripes of the
/// same 512-byte blocks, through one shared `File` and through a `File` each (separate opens of
/// one path share the inode's range lock): every update stays (a lost update would bring back
/// an older pass's bytes).
#[test]
fn concurrent_unaligned_writes_to_shared_blocks_do_not_tear() {
    for separate in [false, true] {
        unaligned_writers(separate);
    }
}

fn unaligned_writers(separate: bool) {
    const THREADS: u64 = 4;
    const STRIPE: u64 = 64;
    const LEN: u64 = 16 * 1024;
    const PASSES: u16 = 3;
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        std::fs::write(&path, vec![0u8; LEN as usize]).unwrap();
        let file = open_direct(&path);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (file, path) = (&file, &path);
                s.spawn(move || {
                    let own = separate.then(|| open_direct(path));
                    let file = own.as_ref().unwrap_or(file);
                    let mut engine = kind.build().unwrap();
                    for pass in 0..PASSES {
                        let seed = 100 * (pass + 1) + t as u16;
                        let mut off = t * STRIPE;
                        while off < LEN {
                            let data = pattern(seed, off, STRIPE as usize);
                            let mut batch = Batch::new();
                            batch.push(file, off, IoIter::write_from(&data), RwFlags::empty());
                            let r = batch.run(engine.as_mut()).pop().unwrap();
                            assert_eq!(r.ok(), Some(STRIPE as usize), "{kind:?} thread {t}");
                            off += THREADS * STRIPE;
                        }
                    }
                });
            }
        });
        let all = read_all(&path);
        for (i, stripe) in all.chunks(STRIPE as usize).enumerate() {
            let t = i as u64 % THREADS;
            let seed = 100 * PASSES + t as u16;
            let off = i as u64 * STRIPE;
            assert_pattern(
                stripe,
                seed,
                off,
                &format!("{kind:?}: stripe {i} (thread {t}, separate files: {separate})"),
            );
        }
    }
}

/// While an unaligned write extends a file, no reader may see the file longer than it ever
/// is: the read-modify-write window reaches to the end of the last block, and the size must
/// not show that block's padding (a read past `offset + len` returning zeros) between the
/// write and the cut back. Readers are vecio reads on the same `File`, aligned (direct) and
/// unaligned (bounce), each with its own engine.
#[test]
fn extending_unaligned_write_never_shows_the_padded_block() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        std::fs::write(&path, pattern(1, 0, 1000)).unwrap();
        let file = open_direct(&path);
        let stop = AtomicBool::new(false);
        let seen = AtomicU64::new(0);
        let mut examples = Vec::new();
        std::thread::scope(|s| {
            let (f, stop, seen) = (&file, &stop, &seen);
            let reader = s.spawn(move || {
                let mut engine = kind.build().unwrap();
                let mut bad = Vec::new();
                let mut aligned = AlignedBuf::new(512, 4096);
                while !stop.load(Ordering::Relaxed) {
                    // The file is 1000 or 1510 bytes long at every instant a caller can see.
                    let mut tail = [0u8; 10];
                    let mut batch = Batch::new();
                    batch.push(f, 1520, IoIter::read_into(&mut tail), RwFlags::empty());
                    batch.push(f, 1024, IoIter::read_into(&mut aligned), RwFlags::empty());
                    let res = batch.run(engine.as_mut());
                    let (a, b) = (res[0].as_ref().ok().copied(), res[1].as_ref().ok().copied());
                    if a != Some(0) || !(b == Some(0) || b == Some(486)) {
                        seen.fetch_add(1, Ordering::Relaxed);
                        if bad.len() < 3 {
                            bad.push(format!(
                                "read 10 at 1520 -> {a:?}, read 512 at 1024 -> {b:?}"
                            ));
                        }
                    }
                }
                bad
            });
            let mut engine = kind.build().unwrap();
            for _ in 0..400 {
                if seen.load(Ordering::Relaxed) > 0 {
                    break;
                }
                f.set_len(1000).unwrap();
                let d = [7u8; 10];
                let mut batch = Batch::new();
                batch.push(f, 1500, IoIter::write_from(&d), RwFlags::empty());
                assert_eq!(batch.run(engine.as_mut()).pop().unwrap().ok(), Some(10));
            }
            stop.store(true, Ordering::Relaxed);
            examples = reader.join().unwrap();
        });
        assert!(
            examples.is_empty(),
            "{kind:?}: a 10-byte write at 1500 into a 1000-byte file let readers see a \
             1536-byte file ({} times), e.g. {examples:?}",
            seen.load(Ordering::Relaxed)
        );
    }
}
