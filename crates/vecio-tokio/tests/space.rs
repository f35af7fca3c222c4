//! What a tokio program sees of space, on a small ext4 of the test's own (a loop device):
//! a 20 MiB file written through `vecio_tokio::File`, dropped and removed is free again within a
//! second (three in a row fit on a 56 MiB file system); a churn of files leaves nothing held;
//! and a full file system gives `ENOSPC` to the writer, keeps every acknowledged and synced
//! write, and takes writes again once space is freed. Root only; skips saying why otherwise.
//! A binary of its own: the churn counts the ring slots of the whole process.

use std::time::Duration;

use vecio::{Direct, OpenOptions};
use vecio_testkit::{skip_unless_root, wait_until, SmallFs};
use vecio_tokio::File;

const MIB: u64 = 1 << 20;

/// One test at a time: the churn counts the process's ring slots.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn small_fs(mib: u64) -> Option<(tempfile::TempDir, SmallFs)> {
    if skip_unless_root("a small ext4 on a loop device").is_some() {
        return None;
    }
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let fs = SmallFs::ext4(scratch.path(), mib).expect("a small ext4 on a loop device");
    Some((scratch, fs))
}

fn options(direct: Direct) -> OpenOptions {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .direct(direct)
}

async fn write_mib(file: &File, mib: u64, byte: u8) -> std::io::Result<()> {
    for i in 0..mib {
        let (r, _) = file.write_all_at(vec![byte; MIB as usize], i * MIB).await;
        r?;
    }
    file.sync_all().await
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_removed_file_gives_its_space_back_within_a_second() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some((_scratch, fs)) = small_fs(56) else {
        return;
    };
    runtime().block_on(async {
        let base = fs.used_bytes();
        for round in 0..3 {
            for direct in [Direct::Off, Direct::On] {
                let path = fs.path().join(format!("f{round}"));
                let file = File::open(&path, options(direct)).await.unwrap();
                write_mib(&file, 20, round as u8).await.unwrap();
                drop(file);
                std::fs::remove_file(&path).unwrap();
                let back = wait_until(Duration::from_secs(1), || fs.used_bytes() <= base + MIB);
                assert!(
                    back.is_some(),
                    "round {round} ({direct:?}): {} MiB still used after a second (baseline {} MiB)",
                    fs.used_bytes() / MIB,
                    base / MIB
                );
            }
        }
        // A churn through the shared driver: nothing held at the end.
        for i in 0..1000 {
            let path = fs.path().join(format!("c{i}"));
            let file = File::open(&path, options(Direct::Auto)).await.unwrap();
            let (r, _) = file.write_all_at(vec![7u8; 64 << 10], 0).await;
            r.unwrap();
            drop(file);
            std::fs::remove_file(&path).unwrap();
        }
        let back = wait_until(Duration::from_secs(1), || {
            fs.used_bytes() <= base + MIB && vecio::engine::registered_files() == 0
        });
        assert!(
            back.is_some(),
            "after the churn: {} MiB used (baseline {} MiB), {} ring slots held",
            fs.used_bytes() / MIB,
            base / MIB,
            vecio::engine::registered_files()
        );
    });
}

#[test]
fn a_full_file_system_reaches_the_writer_and_loses_nothing_acknowledged() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some((_scratch, fs)) = small_fs(48) else {
        return;
    };
    runtime().block_on(async {
        for direct in [Direct::Off, Direct::On] {
            let filler = fs.path().join("filler");
            std::fs::write(&filler, vec![1u8; 16 * MIB as usize]).unwrap();
            let path = fs.path().join("data");
            let file = File::open(&path, options(direct)).await.unwrap();
            // Write and sync MiB after MiB until the file system is full.
            let mut acked = 0u64;
            let err = loop {
                let (r, _) = file
                    .write_all_at(vec![acked as u8 ^ 0x5a; MIB as usize], acked * MIB)
                    .await;
                let r = match r {
                    Ok(()) => file.sync_data().await,
                    Err(e) => Err(e),
                };
                match r {
                    Ok(()) => acked += 1,
                    Err(e) => break e,
                }
                assert!(acked < 64, "{direct:?}: a 48 MiB file system never filled");
            };
            // vecio's error names the file and offset; its kind is ENOSPC's.
            assert_eq!(
                err.kind(),
                std::io::ErrorKind::StorageFull,
                "{direct:?}: the writer got {err} instead of ENOSPC"
            );
            assert!(acked > 10, "{direct:?}: only {acked} MiB written");
            // Every acknowledged MiB reads back.
            for i in 0..acked {
                let (r, buf) = file.read_exact_at(vec![0u8; MIB as usize], i * MIB).await;
                r.unwrap();
                assert!(
                    buf.iter().all(|&b| b == i as u8 ^ 0x5a),
                    "{direct:?}: MiB {i} did not read back"
                );
            }
            // Space freed: writing works again.
            std::fs::remove_file(&filler).unwrap();
            let (r, _) = file
                .write_all_at(vec![0xee; MIB as usize], acked * MIB)
                .await;
            r.unwrap();
            file.sync_data().await.unwrap();
            let (r, buf) = file
                .read_exact_at(vec![0u8; MIB as usize], acked * MIB)
                .await;
            r.unwrap();
            assert!(buf.iter().all(|&b| b == 0xee));
            drop(file);
            std::fs::remove_file(&path).unwrap();
        }
    });
}
