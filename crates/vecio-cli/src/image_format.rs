//! `-f raw` of `vecio nbd` and `vecio ublk`: a file that starts like a disk-image container
//! (qcow2, VMDK, ...) is refused unless its bytes are declared meant
//! (`vecio_nbd::image_format`).

use std::path::Path;

use anyhow::Result;

/// The formats a file may be declared as (`-f`, `--format`): only raw, the file's own bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The file's bytes are the disk.
    Raw,
}

/// Refuses `path` when it is a disk image of another format and `format` was not given: for
/// `vecio ublk`, which opens the file itself (`vecio nbd` checks its export's own file).
pub fn check(path: &Path, format: Option<Format>) -> Result<()> {
    if format.is_some() {
        return Ok(());
    }
    // Direct I/O where the file system allows it: the servers' default keeps the image out of
    // the page cache, and a buffered look at its head would put pages there (bench loop's
    // page-cache check sees them). A file that cannot be opened here is the server's to
    // report, in its own words.
    let opened = vecio::File::options()
        .read(true)
        .direct(vecio::Direct::Auto)
        .custom_flags(libc::O_NONBLOCK) // a FIFO's open must not wait for a writer
        .open(path);
    let Ok(file) = opened else { return Ok(()) };
    Ok(vecio_nbd::image_format::refuse_container(&file, path)?)
}
