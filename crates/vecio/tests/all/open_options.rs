//! `OpenOptions` behaves as `std::fs::OpenOptions`: nothing set at first, `EINVAL`-style
//! refusals for options that cannot open anything, `create_new`, `mode`, and `append` (carried
//! as `RWF_APPEND`, on buffered and direct files alike).

use crate::common;

use std::os::unix::fs::PermissionsExt;

use vecio::{Direct, Error, File};

fn invalid_input(r: vecio::Result<File>) -> bool {
    matches!(r, Err(Error::Open { source, .. }) if source.kind() == std::io::ErrorKind::InvalidInput)
}

#[test]
fn options_start_empty_and_refuse_what_std_refuses() {
    let dir = common::tempdir();
    let p = dir.path().join("f");
    std::fs::write(&p, b"x").unwrap();
    assert!(
        invalid_input(File::options().open(&p)),
        "no access asked for"
    );
    assert!(invalid_input(
        File::options().read(true).create(true).open(&p)
    ));
    assert!(invalid_input(
        File::options().read(true).truncate(true).open(&p)
    ));
    assert!(File::options().read(true).open(&p).unwrap().is_readable());
    assert!(!File::options().write(true).open(&p).unwrap().is_readable());
    assert!(
        File::open(&p).unwrap().is_readable(),
        "File::open is read-only, as std's"
    );
}

#[test]
fn create_new_refuses_an_existing_file_and_mode_is_applied() {
    let dir = common::tempdir();
    let p = dir.path().join("f");
    let f = File::options()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&p)
        .unwrap();
    drop(f);
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    match File::options().write(true).create_new(true).open(&p) {
        Err(Error::Open { source, .. }) => assert_eq!(source.raw_os_error(), Some(libc::EEXIST)),
        other => panic!("expected EEXIST, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn append_writes_at_the_end_buffered_and_direct() {
    for direct in [Direct::Off, Direct::On] {
        let dir = common::tempdir();
        let p = dir.path().join("log");
        std::fs::write(&p, vec![1u8; 5000]).unwrap();
        let f = File::options()
            .append(true)
            .direct(direct)
            .open(&p)
            .unwrap();
        assert_eq!(f.is_direct(), direct == Direct::On);
        assert_eq!(f.write_at(b"abc", 0).unwrap(), 3);
        assert_eq!(f.write_at(b"defg", 10).unwrap(), 4);
        let back = std::fs::read(&p).unwrap();
        assert_eq!(back.len(), 5007, "{direct:?}");
        assert_eq!(&back[5000..], b"abcdefg", "{direct:?}");
        assert!(back[..5000].iter().all(|&b| b == 1), "{direct:?}");
    }
}

#[test]
fn a_write_only_direct_file_takes_unaligned_writes() {
    let dir = common::tempdir();
    let p = dir.path().join("f");
    std::fs::write(&p, vec![1u8; 8192]).unwrap();
    let f = File::options()
        .write(true)
        .direct(Direct::On)
        .open(&p)
        .unwrap();
    assert!(!f.is_readable());
    assert_eq!(f.write_at(b"xyz", 4094).unwrap(), 3);
    let back = std::fs::read(&p).unwrap();
    assert_eq!(&back[4094..4097], b"xyz");
    assert!(back[..4094].iter().chain(&back[4097..]).all(|&b| b == 1));
    let mut buf = [0u8; 4];
    assert!(
        f.read_at(&mut buf, 0).is_err(),
        "still write-only to its user"
    );
}
