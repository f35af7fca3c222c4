//! A `Queue` request that fails after moving some bytes reports both: `Ok(n)` and the error in
//! `stopped_by`. Made real with the file system's largest file size (`s_maxbytes`): a write
//! across it is cut short by the kernel, and its remainder fails with `EFBIG`.

use crate::common;

use std::sync::Arc;

use vecio::{Direct, EngineKind, File, OwnedBuf, Queue, RwFlags};

/// The largest offset a 1-byte write succeeds at, by bisection over sparse writes; `None` on
/// a file system whose limit is the largest `loff_t` (nothing to cross).
fn max_bytes(file: &File) -> Option<u64> {
    let (mut ok, mut bad) = (0u64, i64::MAX as u64);
    while bad - ok > 1 {
        let mid = ok + (bad - ok) / 2;
        match file.write_at(b"x", mid) {
            Ok(_) => ok = mid,
            Err(_) => bad = mid,
        }
    }
    file.set_len(0).ok()?;
    (bad < i64::MAX as u64 - 1).then_some(bad)
}

#[test]
fn a_write_stopped_after_some_bytes_carries_its_error() {
    let dir = common::tempdir();
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .direct(Direct::Off)
        .open(dir.path().join("big"))
        .unwrap();
    let Some(limit) = max_bytes(&file) else {
        eprintln!("skipped: this file system has no file size limit below i64::MAX");
        return;
    };
    let file = Arc::new(file);
    for kind in EngineKind::ALL {
        let mut q = Queue::new(kind.build().unwrap());
        let at = limit - 4096;
        q.push_write(
            &file,
            at,
            vec![OwnedBuf::Vec(vec![7u8; 8192])],
            RwFlags::empty(),
            1,
        )
        .map_err(|e| e.error)
        .unwrap();
        q.submit_and_wait(1).unwrap();
        let mut done = Vec::new();
        q.reap(&mut done);
        let c = &done[0];
        assert_eq!(
            c.result.as_ref().ok(),
            Some(&4096),
            "{kind:?}: bytes before the limit"
        );
        let e = c.stopped_by.as_ref().expect("the error beside the bytes");
        assert_eq!(e.raw_os_error(), Some(libc::EFBIG), "{kind:?}: {e}");
        assert!(
            e.to_string().contains(&format!("offset {limit}")),
            "{kind:?}: {e}"
        );
        file.set_len(0).unwrap();
    }
}
