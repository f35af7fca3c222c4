//! `-f raw` of `vecio nbd` and `vecio ublk`: a file that starts like a disk-image container
//! (qcow2, VMDK, ...) is refused unless its bytes are declared meant
//! (`vecio_nbd::image_format`).

use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};
use vecio_nbd::image_format::{container_format, refusal, HEAD_BYTES};

/// The formats a file may be declared as (`-f`, `--format`): only raw, the file's own bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The file's bytes are the disk.
    Raw,
}

/// Refuses `path` when it is a disk image of another format and `format` was not given.
pub fn check(path: &Path, format: Option<Format>) -> Result<()> {
    if format.is_some() {
        return Ok(());
    }
    // A file that cannot be read here is the server's to report, in its own words.
    let Ok(file) = std::fs::File::open(path) else {
        return Ok(());
    };
    let mut head = Vec::with_capacity(HEAD_BYTES);
    file.take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .with_context(|| format!("{}: reading its first bytes", path.display()))?;
    if let Some(name) = container_format(&head) {
        bail!(refusal(path, name));
    }
    Ok(())
}
