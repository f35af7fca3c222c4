//! `vecio info [PATH]`: what vecio learns about a file, directory or block device, and what the
//! running kernel offers (ublk, the NBD client, loop, device-mapper).

use std::path::PathBuf;

use crate::probe::{self as info, InfoOptions};
use anyhow::Result;
use clap::Args;

/// Options of `vecio info`.
#[derive(Args, Debug, Clone)]
pub struct InfoArgs {
    /// A regular file, a directory (probed through a temporary file in it) or a block device.
    /// Without one, only the kernel's drivers are reported.
    pub path: Option<PathBuf>,
    /// Also report the kernel's drivers (ublk and its features, nbd, loop, device-mapper)
    /// after PATH's report.
    #[arg(long)]
    pub kernel: bool,
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
    let kernel = (a.kernel || a.path.is_none()).then(info::kernel::probe);
    let Some(path) = &a.path else {
        let k = kernel.unwrap_or_else(info::kernel::probe);
        if a.json {
            println!("{}", serde_json::to_string_pretty(&k)?);
        } else {
            print!("{}", info::kernel::render(&k));
        }
        return Ok(());
    };
    let i = info::probe(
        path,
        &InfoOptions {
            write_device: a.write,
        },
    )?;
    if a.json {
        let mut v = serde_json::to_value(&i)?;
        if let (Some(k), Some(map)) = (&kernel, v.as_object_mut()) {
            map.insert("kernel".into(), serde_json::to_value(k)?);
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", info::render(&i));
        if let Some(k) = &kernel {
            print!("{}", info::kernel::render(k));
        }
    }
    Ok(())
}
