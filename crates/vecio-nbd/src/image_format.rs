//! Disk-image container formats told by their signature. An NBD export is the file's bytes (a
//! raw disk); a qcow2 or other container file's bytes are not the disk it holds, so the
//! servers refuse such files unless told their bytes are meant (qemu-nbd's `-f raw`), as qemu
//! itself will not guess raw for them.

/// Formats and where their signature stands (qemu's probes).
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

/// Bytes from the start of a file that [`container_format`] looks at.
pub const HEAD_BYTES: usize = 128;

/// The container format `head` (a file's first bytes) says it is, if it is one.
pub fn container_format(head: &[u8]) -> Option<&'static str> {
    SIGNATURES
        .iter()
        .find(|(_, at, magic)| head.get(*at..at + magic.len()) == Some(*magic))
        .map(|(name, _, _)| *name)
}

/// What the servers say when they refuse `path`, a `format` image.
fn refusal(path: &std::path::Path, format: &str) -> String {
    format!(
        "{}: a {format} image, whose bytes are not the disk it holds; convert it \
         (`qemu-img convert -O raw`), serve it with qemu-nbd, or pass -f raw to export its \
         bytes as they are",
        path.display()
    )
}

/// Refuses `file` (named `path` in the message) when its first bytes are a container
/// format's signature. Read through `file` itself, so a file opened for direct I/O stays out
/// of the page cache.
pub fn refuse_container(file: &vecio::File, path: &std::path::Path) -> crate::Result<()> {
    let mut head = [0u8; HEAD_BYTES];
    let n = file.read_at(&mut head, 0)?;
    match container_format(&head[..n]) {
        Some(format) => Err(crate::Error::ImageFormat(refusal(path, format))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::container_format;

    #[test]
    fn signatures_are_recognised_where_they_stand() {
        assert_eq!(container_format(b"QFI\xfb\0\0\0\x03"), Some("qcow2 (or qcow)"));
        assert_eq!(container_format(b"vhdxfile...."), Some("VHDX"));
        let mut vdi = vec![0u8; 72];
        vdi[64..68].copy_from_slice(&[0x7f, 0x10, 0xda, 0xbe]);
        assert_eq!(container_format(&vdi), Some("VDI"));
        assert_eq!(container_format(&[0u8; 128]), None);
        assert_eq!(container_format(b"QFI"), None);
        assert_eq!(container_format(b""), None);
    }
}
