//! `copy_file_range` goes through vecio's range locks, and under `-o direct_io` it works at any
//! offset (the kernel refuses an unaligned copy between direct files; vecio copies through its
//! own reads and writes then). `fallocate` and size changes are locked too; through one mount the
//! kernel already orders them against writes (its inode lock), so their test is the library's
//! (`crates/vecio/tests/all/space_locks.rs`), where two `File`s of one inode race for real.

use crate::common;

use std::fs;
use std::process::Command;

#[test]
fn copy_file_range_under_direct_io_at_any_offset() {
    let mut cfg = common::config();
    cfg.mount.direct_io = true;
    let Some(fx) = common::mount("cfr-direct", cfg) else {
        return;
    };
    let data = common::pattern(9, 300_000);
    fs::write(fx.m("a"), &data).unwrap();
    fs::write(fx.m("b"), vec![b'.'; 10_000]).unwrap();
    let py = format!(
        "import os\na=os.open('{a}',os.O_RDONLY)\nb=os.open('{b}',os.O_WRONLY)\nn=0\nwhile n<200001:\n k=os.copy_file_range(a,b,200001-n,1234+n,777+n)\n assert k>0\n n+=k\nprint(n)\n",
        a = fx.m("a").display(),
        b = fx.m("b").display()
    );
    let o = Command::new("python3").args(["-c", &py]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let b = fs::read(fx.s("b")).unwrap();
    assert_eq!(b.len(), 777 + 200_001);
    assert!(b[..777].iter().all(|&c| c == b'.'));
    assert!(b[777..] == data[1234..1234 + 200_001]);
}
