//! `ExportDir` on real directories: names that could leave the directory, links, files
//! that are not regular, sharing, and files added, removed or replaced while serving.

use std::os::unix::fs::symlink;
use std::sync::Arc;

use super::*;

fn dir_with(files: &[(&str, usize)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (name, len) in files {
        std::fs::write(d.path().join(name), vec![7u8; *len]).unwrap();
    }
    d
}

fn buffered(name: &str) -> ExportOptions {
    ExportOptions {
        name: name.into(),
        cache: Cache::Writeback,
        ..Default::default()
    }
}

#[test]
fn names_that_are_not_file_names_are_refused() {
    for bad in ["", ".", "..", "../x", "/etc/passwd", "a/b", "x\0y"] {
        assert!(check_name(bad).is_err(), "{bad:?}");
    }
    assert!(check_name(&"a".repeat(4097)).is_err());
    for good in ["disk.img", ".hidden", "...", "a b", "é"] {
        assert_eq!(check_name(good), Ok(()), "{good:?}");
    }
}

#[test]
fn lists_regular_files_only() {
    let d = dir_with(&[("b.img", 4096), ("a.img", 8192)]);
    std::fs::create_dir(d.path().join("sub")).unwrap();
    symlink("/etc/passwd", d.path().join("passwd")).unwrap();
    symlink("a.img", d.path().join("alias")).unwrap();
    let x = ExportDir::open(d.path(), buffered("")).unwrap();
    let names: Vec<String> = x.list().unwrap().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a.img", "b.img"]);
    for refused in ["sub", "passwd", "alias", "../x", "", "nothing"] {
        assert!(x.get(refused).is_err(), "{refused:?} served");
    }
    assert_eq!(x.get("a.img").unwrap().size(), 8192);
}

#[test]
fn one_export_per_file_shared_and_replaced_when_the_file_is() {
    let d = dir_with(&[("a.img", 4096)]);
    let x = ExportDir::open(d.path(), buffered("")).unwrap();
    let first = x.get("a.img").unwrap();
    assert!(Arc::ptr_eq(&first, &x.get("a.img").unwrap()));
    // Replaced by another file: new connections get the new one, the old stays usable.
    std::fs::write(d.path().join("a.tmp"), vec![1u8; 8192]).unwrap();
    std::fs::rename(d.path().join("a.tmp"), d.path().join("a.img")).unwrap();
    let second = x.get("a.img").unwrap();
    assert!(!Arc::ptr_eq(&first, &second));
    assert_eq!((first.size(), second.size()), (4096, 8192));
    assert_eq!(x.lock().retired.len(), 1);
    // Listing retires an export whose file is gone, even before anyone asks for it.
    std::fs::write(d.path().join("c.img"), vec![2u8; 4096]).unwrap();
    let third = x.get("c.img").unwrap();
    std::fs::remove_file(d.path().join("c.img")).unwrap();
    assert_eq!(x.list().unwrap().len(), 1);
    assert!(!x.lock().current.contains_key("c.img"));
    drop(third);
    x.list().unwrap();
    assert_eq!(
        x.lock().retired.len(),
        1,
        "only a.img's first file is still in use"
    );
    // Removed: refused, and the retired export is closed once nothing uses it.
    std::fs::remove_file(d.path().join("a.img")).unwrap();
    assert!(x.get("a.img").is_err());
    assert!(x.list().unwrap().is_empty());
    drop((first, second));
    let _ = x.get("a.img");
    assert!(x.lock().retired.is_empty() && x.lock().current.is_empty());
    x.flush().unwrap();
}

#[test]
fn the_default_export_is_named_and_must_exist() {
    let d = dir_with(&[("a.img", 4096), ("b.img", 512)]);
    let x = ExportDir::open(d.path(), buffered("")).unwrap();
    assert!(x.get("").is_err());
    let opts = ExportOptions {
        description: "the b disk".into(),
        ..buffered("b.img")
    };
    let x = ExportDir::open(d.path(), opts).unwrap();
    let e = x.get("").unwrap();
    assert_eq!((e.name(), e.size()), ("b.img", 512));
    assert!(Arc::ptr_eq(&e, &x.get("b.img").unwrap()));
    let list = x.list().unwrap();
    assert_eq!(list[1], ("b.img".into(), "the b disk".into()));
    assert_eq!(list[0], ("a.img".into(), String::new()));
    for bad in ["nothing", "../a.img", "sub"] {
        assert!(ExportDir::open(d.path(), buffered(bad)).is_err(), "{bad}");
    }
    let described = ExportOptions {
        description: "what?".into(),
        ..buffered("")
    };
    assert!(ExportDir::open(d.path(), described).is_err());
}

#[test]
fn read_only_and_direct_apply_to_every_export() {
    let d = dir_with(&[("a.img", 4096)]);
    let opts = ExportOptions {
        read_only: true,
        cache: Cache::None,
        ..Default::default()
    };
    let x = ExportDir::open(d.path(), opts).unwrap();
    let e = x.get("a.img").unwrap();
    assert!(e.is_read_only() && !e.file().is_writable());
    assert!(e.file().is_direct());
    assert!(ExportDir::open(d.path().join("a.img"), buffered("")).is_err());
}

/// A virtual machine's hold on `path` under qemu's image locks (bytes 100, 101, 201).
fn held_by_a_vm(path: &std::path::Path) -> std::fs::File {
    let f = std::fs::File::open(path).unwrap();
    for byte in [100, 101, 201] {
        crate::image_lock::read_lock(&f, byte).unwrap();
    }
    f
}

#[test]
fn a_file_a_vm_writes_is_refused_to_writers_and_locks_last_with_the_export() {
    let d = dir_with(&[("vm.img", 4096), ("free.img", 4096)]);
    let vm = held_by_a_vm(&d.path().join("vm.img"));
    let writable = ExportDir::open(d.path(), buffered("")).unwrap();
    assert!(writable.get("vm.img").is_err(), "served what a VM writes");
    let free = writable.get("free.img").unwrap();
    // The export's own description holds qemu-nbd's bytes (write held: a VM would be refused),
    // until the export is closed.
    let path = d.path().join("free.img");
    assert!(held(&path, 101) && held(&path, 203) && !held(&path, 201));
    drop((free, writable));
    assert!(!held(&path, 101), "the lock outlived the export");
    let read_only = ExportDir::open(
        d.path(),
        ExportOptions {
            read_only: true,
            ..buffered("")
        },
    )
    .unwrap();
    assert!(read_only.get("vm.img").is_ok(), "-r beside a VM, as qemu-nbd -r");
    drop(vm);
}

/// Whether a lock on `byte` of `path` is held by another open file description.
fn held(path: &std::path::Path, byte: i64) -> bool {
    let f = std::fs::File::open(path).unwrap();
    crate::image_lock::another_holds(&f, byte).unwrap()
}
