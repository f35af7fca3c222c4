//! `vecio_tokio::fs` as a tokio program uses it: the stream calls (`AsyncRead`, `AsyncWrite`,
//! `AsyncSeek`) through `BufReader`, `tokio::io::copy` and random seeks, checked byte for byte
//! against `std::fs`; direct files at any alignment; cached reads served on the task; clones
//! sharing a position; `into_std` and `from_std`; append; a background write's error met by
//! the next call.

use std::io::{Read, Seek, SeekFrom, Write};

use crate::common::{self, pattern, Rng};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, AsyncWriteExt, BufReader};
use vecio::Direct;
use vecio_tokio::fs::{self, File, OpenOptions};

fn tempdir() -> tempfile::TempDir {
    common::tempdir("vecio-tokio-fs-")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_seeks_and_reads_match_std_buffered_and_direct() {
    let dir = tempdir();
    let path = dir.path().join("data");
    let data = pattern(1, 3 << 20);
    std::fs::write(&path, &data).unwrap();
    for direct in [Direct::Off, Direct::Auto] {
        let mut file = OpenOptions::new()
            .read(true)
            .direct(direct)
            .open(&path)
            .await
            .unwrap();
        let mut rng = Rng(7);
        for _ in 0..300 {
            let at = rng.below(data.len() as u64 + 100);
            let len = 1 + rng.below(200_000) as usize;
            assert_eq!(file.seek(SeekFrom::Start(at)).await.unwrap(), at);
            let mut buf = vec![0u8; len];
            let mut got = 0;
            while got < len {
                let n = file.read(&mut buf[got..]).await.unwrap();
                if n == 0 {
                    break;
                }
                got += n;
            }
            let want = &data[(at as usize).min(data.len())..(at as usize + len).min(data.len())];
            assert_eq!(&buf[..got], want, "{direct:?}: {len} bytes at {at}");
            assert_eq!(file.stream_position().await.unwrap(), at + got as u64);
        }
        // SeekFrom::End and Current.
        assert_eq!(
            file.seek(SeekFrom::End(-10)).await.unwrap(),
            data.len() as u64 - 10
        );
        assert_eq!(
            file.seek(SeekFrom::Current(3)).await.unwrap(),
            data.len() as u64 - 7
        );
        let mut tail = Vec::new();
        file.read_to_end(&mut tail).await.unwrap();
        assert_eq!(tail, &data[data.len() - 7..]);
        assert!(file
            .seek(SeekFrom::Current(-(data.len() as i64) - 1))
            .await
            .is_err());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buf_reader_lines_and_io_copy() {
    let dir = tempdir();
    let src = dir.path().join("lines");
    let text: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(&src, &text).unwrap();
    let mut lines = BufReader::new(File::open(&src).await.unwrap()).lines();
    let mut i = 0;
    while let Some(line) = lines.next_line().await.unwrap() {
        assert_eq!(line, format!("line {i}"));
        i += 1;
    }
    assert_eq!(i, 20_000);

    let dst = dir.path().join("copy");
    let mut from = File::open(&src).await.unwrap();
    let mut to = File::create(&dst).await.unwrap();
    let n = tokio::io::copy(&mut from, &mut to).await.unwrap();
    to.flush().await.unwrap();
    assert_eq!(n, text.len() as u64);
    assert_eq!(std::fs::read_to_string(&dst).unwrap(), text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_land_where_the_position_says_direct_or_not() {
    let dir = tempdir();
    for direct in [Direct::Off, Direct::Auto] {
        let path = dir.path().join(format!("w-{direct:?}"));
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .direct(direct)
            .open(&path)
            .await
            .unwrap();
        let mut model = Vec::new();
        let mut rng = Rng(11);
        for i in 0..200 {
            let at = rng.below(1 << 20);
            let chunk = pattern(i, 1 + rng.below(70_000) as usize);
            file.seek(SeekFrom::Start(at)).await.unwrap();
            file.write_all(&chunk).await.unwrap();
            let end = at as usize + chunk.len();
            if model.len() < end {
                model.resize(end, 0);
            }
            model[at as usize..end].copy_from_slice(&chunk);
        }
        file.flush().await.unwrap();
        file.sync_all().await.unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), model, "{direct:?}");
        // Read back through the same file after writing: no stale read-ahead.
        file.rewind().await.unwrap();
        let mut back = Vec::new();
        file.read_to_end(&mut back).await.unwrap();
        assert_eq!(back, model, "{direct:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_reads_are_served_on_the_task() {
    let dir = tempdir();
    let path = dir.path().join("warm");
    std::fs::write(&path, pattern(3, 1 << 20)).unwrap();
    let _ = std::fs::read(&path).unwrap(); // in the page cache
    let mut file = File::open(&path).await.unwrap();
    let driver = file.positional().unwrap().driver().clone();
    let ops = driver.counters().ops;
    let mut buf = vec![0u8; 4096];
    for i in 0..100u64 {
        file.seek(SeekFrom::Start(i * 8192)).await.unwrap();
        file.read_exact(&mut buf).await.unwrap();
    }
    // The shared driver may serve other tests meanwhile: this file took at most a few ops.
    assert!(
        driver.counters().ops - ops < 10,
        "100 cached reads went through the engine"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clones_share_the_position_and_std_conversions_keep_it() {
    let dir = tempdir();
    let path = dir.path().join("shared");
    std::fs::write(&path, b"0123456789abcdef").unwrap();
    let mut a = File::open(&path).await.unwrap();
    let mut b = a.try_clone().await.unwrap();
    let mut two = [0u8; 2];
    a.read_exact(&mut two).await.unwrap();
    b.read_exact(&mut two).await.unwrap();
    assert_eq!(&two, b"23", "a clone continues where the other stopped");
    a.seek(SeekFrom::Start(10)).await.unwrap();
    let mut std = b.into_std().await;
    let mut rest = String::new();
    std.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "abcdef");

    let mut std = std::fs::File::open(&path).unwrap();
    std.seek(SeekFrom::Start(4)).unwrap();
    let mut file = File::from_std(std);
    let mut four = [0u8; 4];
    file.read_exact(&mut four).await.unwrap();
    assert_eq!(&four, b"4567");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_descriptor_vecio_cannot_serve_fails_its_reads_with_the_reason() {
    let (rx, mut tx) = std::io::pipe().unwrap();
    tx.write_all(b"x").unwrap();
    let mut file = File::from_std(std::fs::File::from(std::os::fd::OwnedFd::from(rx)));
    let mut buf = [0u8; 1];
    let err = file.read(&mut buf).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::Unsupported, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_writes_go_to_the_end() {
    let dir = tempdir();
    let path = dir.path().join("log");
    std::fs::write(&path, b"start\n").unwrap();
    let mut log = OpenOptions::new().append(true).open(&path).await.unwrap();
    log.write_all(b"one\n").await.unwrap();
    log.write_all(b"two\n").await.unwrap();
    log.flush().await.unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "start\none\ntwo\n");
    assert_eq!(log.stream_position().await.unwrap(), 14);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_background_write_is_met_by_the_next_call() {
    let dir = tempdir();
    let path = dir.path().join("ro");
    std::fs::write(&path, b"x").unwrap();
    // Opened read-only, then written: the write is refused when it runs.
    let mut file = File::open(&path).await.unwrap();
    let first = file.write(b"data").await;
    let flushed = file.flush().await;
    assert!(
        first.is_err() || flushed.is_err(),
        "a write to a read-only file reported success"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_file_calls_and_metadata() {
    let dir = tempdir();
    let path = dir.path().join("whole");
    let data = pattern(9, 5 << 20);
    fs::write(&path, &data).await.unwrap();
    assert_eq!(fs::read(&path).await.unwrap(), data);
    assert!(fs::read_to_string(&path).await.is_err(), "not UTF-8");
    fs::write(&path, "text").await.unwrap();
    assert_eq!(fs::read_to_string(&path).await.unwrap(), "text");
    let file = File::open(&path).await.unwrap();
    assert_eq!(file.metadata().await.unwrap().len(), 4);
    let rw = OpenOptions::new().write(true).open(&path).await.unwrap();
    rw.set_len(100).await.unwrap();
    assert_eq!(fs::metadata(&path).await.unwrap().len(), 100);
    fs::create_dir_all(dir.path().join("a/b")).await.unwrap();
    fs::rename(&path, dir.path().join("a/b/moved"))
        .await
        .unwrap();
    fs::remove_file(dir.path().join("a/b/moved")).await.unwrap();
    assert!(fs::read(&path).await.is_err());
}
