//! The servers export a file's bytes as they are (qemu-nbd's `-f raw`). A qemu user's disk is
//! often qcow2 or another container format, whose bytes are not the disk a client expects:
//! a file that starts with such a format's signature is refused unless `-f raw` says its bytes
//! are meant, as qemu itself refuses to guess raw for them.

use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};

/// The formats a file may be declared as (`-f`, `--format`): only raw, the file's own bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The file's bytes are the disk.
    Raw,
}

/// Disk-image formats recognised by the signature at the start of the file (qemu's probes).
const SIGNATURES: &[(&str, usize, &[u8])] = &[
    ("qcow2 (or qcow)", 0, b"QFI\xfb"),
    ("QED", 0, b"QED\0"),
    ("VMDK", 0, b"KDMV"),
    ("VMDK (descriptor)", 0, b"# Disk DescriptorFile"),
    ("VHDX", 0, b"vhdxfile"),
    ("VHD", 0, b"conectix"),
    ("VDI", 64, &[0x7f, 0x10, 0xda, 0xbe]),
    ("LUKS", 0, b"LUKS\xba\xbe"),
];

/// The image format `head` (a file's first bytes) says it is, if it is one.
fn recognise(head: &[u8]) -> Option<&'static str> {
    SIGNATURES
        .iter()
        .find(|(_, at, magic)| head.get(*at..at + magic.len()) == Some(*magic))
        .map(|(name, _, _)| *name)
}

/// Refuses `path` when it is a disk image of another format and `format` was not given.
pub fn check(path: &Path, format: Option<Format>) -> Result<()> {
    if format.is_some() {
        return Ok(());
    }
    let mut head = Vec::with_capacity(128);
    let file = std::fs::File::open(path);
    // A file that cannot be read here is the server's to report, with its own words.
    let Ok(file) = file else { return Ok(()) };
    file.take(128)
        .read_to_end(&mut head)
        .with_context(|| format!("{}: reading its first bytes", path.display()))?;
    if let Some(name) = recognise(&head) {
        bail!(
            "{}: a {name} image, whose bytes are not the disk it holds; convert it \
             (`qemu-img convert -O raw`), serve it with qemu-nbd, or pass -f raw to export \
             its bytes as they are",
            path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::recognise;

    #[test]
    fn signatures_are_recognised_where_they_stand() {
        assert_eq!(recognise(b"QFI\xfb\0\0\0\x03"), Some("qcow2 (or qcow)"));
        assert_eq!(recognise(b"vhdxfile...."), Some("VHDX"));
        let mut vdi = vec![0u8; 72];
        vdi[64..68].copy_from_slice(&[0x7f, 0x10, 0xda, 0xbe]);
        assert_eq!(recognise(&vdi), Some("VDI"));
        assert_eq!(recognise(&[0u8; 128]), None);
        assert_eq!(recognise(b"QFI"), None);
        assert_eq!(recognise(b""), None);
    }
}
