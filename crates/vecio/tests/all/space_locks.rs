//! Space and size changes under the inode's range lock: a hole punched (through a buffered
//! `File` of the inode) next to unaligned direct writes (through a direct `File`, which
//! read-modify-writes their edge blocks) is never filled back with stale bytes.

use std::sync::atomic::{AtomicBool, Ordering};

use vecio::{Direct, File};

#[test]
fn punched_holes_are_not_refilled_by_read_modify_writes() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("f");
    const BLOCKS: u64 = 4;
    std::fs::write(&path, vec![b'x'; (BLOCKS * 4096) as usize]).unwrap();
    let direct = File::options()
        .read(true)
        .write(true)
        .direct(Direct::On)
        .open(&path);
    let Ok(direct) = direct else {
        eprintln!("skipping: this file system refuses O_DIRECT");
        return;
    };
    let plain = File::options()
        .read(true)
        .write(true)
        .direct(Direct::Off)
        .open(&path)
        .unwrap();
    let stop = AtomicBool::new(false);
    let mut refilled = 0;
    std::thread::scope(|s| {
        s.spawn(|| {
            // Bytes 1000..1100 of each 4 KiB stretch are the writer's; 1100..2048 the
            // puncher's. They share the writer's edge blocks (512 or 4096 bytes of direct-I/O
            // alignment), which its read-modify-write reads and writes back whole.
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                direct
                    .write_at(&[b'w'; 100], (i % BLOCKS) * 4096 + 1000)
                    .unwrap();
                i += 1;
            }
        });
        for round in 0..2000u64 {
            let at = (round % BLOCKS) * 4096 + 1100;
            plain.write_at(&[b'p'; 948], at).unwrap();
            plain.sync_data().unwrap();
            plain.punch_hole(at, 948).unwrap();
            // Let a read-modify-write that was under way land before looking.
            std::thread::sleep(std::time::Duration::from_micros(500));
            let mut back = vec![0u8; 948];
            assert_eq!(direct.read_at(&mut back, at).unwrap(), 948);
            if back.iter().any(|&c| c != 0) {
                refilled += 1;
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(refilled, 0, "punched ranges refilled with stale bytes");
}
