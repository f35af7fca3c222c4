//! `vecio info PATH`: what vecio learns about a file, directory or block device.

use std::path::PathBuf;

use crate::probe::{self as info, InfoOptions};
use anyhow::Result;
use clap::Args;

/// Options of `vecio info`.
#[derive(Args, Debug, Clone)]
pub struct InfoArgs {
    /// A regular file, a directory (probed through a temporary file in it) or a block device.
    pub path: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// On a block device, probe writes by rewriting its first block with its own bytes (only
    /// when it can be opened exclusively: not mounted, not held).
    #[arg(long)]
    pub write: bool,
}

/// Runs `vecio info`.
pub fn run(a: InfoArgs) -> Result<()> {
    let i = info::probe(
        &a.path,
        &InfoOptions {
            write_device: a.write,
        },
    )?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&i)?);
    } else {
        print!("{}", info::render(&i));
    }
    Ok(())
}
