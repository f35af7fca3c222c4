//! Options several experiments share ([`Common`], [`Source`]) and `bench all`'s presets
//! ([`Preset`]); the parsers of sizes (`4k`, `256M`, `1GiB`), counts and seconds, which refuse
//! zero, are `vecio_host::args`'s, shared with `vecio`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
pub use vecio_host::args::{parse_count, parse_seconds, parse_size};

/// An error in what the user asked for, found after the command line was parsed: the bench
/// exits with status 2 for it, as for a parse error.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Options every experiment takes. An experiment with other defaults sets them in
/// [`super::Experiment::command`].
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Directory for the scratch files (default: the current directory; tmpfs is no good for
    /// direct I/O).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Seconds per measurement.
    #[arg(long, default_value = "5", value_parser = parse_seconds)]
    pub runtime: Duration,
    /// Repetitions (the spread in the tables comes from these).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Write every figure to this JSON file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

impl Common {
    /// Where scratch files go: `--dir`, else the current directory.
    pub fn scratch_parent(&self) -> std::io::Result<PathBuf> {
        self.dir.clone().map_or_else(std::env::current_dir, Ok)
    }
}

/// The user's own file or block device, instead of a scratch file.
#[derive(Args, Debug, Clone, Default)]
pub struct Source {
    /// File or block device to measure on (its data is overwritten by the rows and jobs that
    /// write). Default: a scratch file in a temporary directory.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Create --file when it does not exist (filled, then removed when the run ends).
    #[arg(long, requires = "file")]
    pub create: bool,
}

impl Source {
    /// Refuses a `--file` that does not exist unless `--create` was given: a typo in a device
    /// name must not turn into a gigabyte-sized file beside it.
    pub fn check(&self) -> anyhow::Result<()> {
        let Some(path) = &self.file else {
            return Ok(());
        };
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !self.create => {
                Err(UsageError(format!(
                    "--file {}: no such file; give --create to have vecio create it for this run \
                     (and remove it afterwards)",
                    path.display()
                ))
                .into())
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(anyhow::Error::new(e).context(format!("--file {}", path.display())))
            }
            _ => Ok(()),
        }
    }
}

/// `bench all`'s options: the quick or full presets, and overrides of them.
#[derive(Args, Debug, Clone, Default)]
pub struct Preset {
    /// A short run (under 3 minutes on 2 cores): small files, half-second measurements.
    #[arg(long)]
    pub quick: bool,
    /// Directory for scratch files (default: the current directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Do not run fio beside vecio.
    #[arg(long)]
    pub no_fio: bool,
    /// Seconds per measurement, overriding the preset (callcost's at most 1 s).
    #[arg(long, value_parser = parse_seconds)]
    pub runtime: Option<Duration>,
    /// Bytes of each scratch file, overriding the preset (k, M, G suffixes).
    #[arg(long, value_parser = parse_size)]
    pub size: Option<u64>,
    /// Repetitions, overriding the preset.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,
    /// Do not count instructions with callgrind.
    #[arg(long)]
    pub no_callgrind: bool,
    /// Also run loop's table on real block devices in a guest kernel (`bench loop --lab`).
    #[arg(long)]
    pub lab: bool,
    /// Also run tokio's HTTP measurement (`bench tokio --http`: wrk against the example server
    /// through vecio_tokio::fs and through ServeDir).
    #[arg(long)]
    pub http: bool,
}

impl Preset {
    /// Seconds per measurement: `quick` or `full` as the preset says, unless overridden.
    pub fn runtime(&self, quick: f64, full: f64) -> Duration {
        self.runtime
            .unwrap_or(Duration::from_secs_f64(if self.quick {
                quick
            } else {
                full
            }))
    }

    /// Repetitions: `quick` or `full`, unless overridden.
    pub fn repeat(&self, quick: u32, full: u32) -> u32 {
        self.repeat.unwrap_or(if self.quick { quick } else { full })
    }

    /// Bytes of a scratch file: `quick` or `full`, unless overridden.
    pub fn size(&self, quick: u64, full: u64) -> u64 {
        self.size.unwrap_or(if self.quick { quick } else { full })
    }

    /// The mostly cached file of the read experiments: a quarter of `--size`.
    pub fn medium(&self) -> u64 {
        self.size
            .map_or(if self.quick { 64 << 20 } else { 256 << 20 }, |s| s / 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_overrides() {
        let quick = Preset {
            quick: true,
            ..Preset::default()
        };
        assert_eq!(
            (quick.size(1, 2), quick.repeat(3, 4), quick.medium()),
            (1, 3, 64 << 20)
        );
        let tiny = Preset {
            size: Some(16 << 20),
            runtime: Some(Duration::from_millis(100)),
            ..quick
        };
        assert_eq!((tiny.size(1, 2), tiny.medium()), (16 << 20, 4 << 20));
        assert_eq!(tiny.runtime(0.5, 5.0), Duration::from_millis(100));
        assert_eq!(Preset::default().runtime(0.5, 5.0), Duration::from_secs(5));
    }
}
