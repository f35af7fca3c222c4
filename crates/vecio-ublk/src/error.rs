//! The crate's one error type.

use std::path::PathBuf;

/// Errors of the ublk server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The backing file could not be opened or inspected.
    #[error(transparent)]
    File(#[from] vecio::Error),
    /// The backing file's size could not be read, or is too small for one block.
    #[error("{path}: {reason}", path = path.display())]
    Size {
        /// The backing file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The kernel has no ublk driver (`/dev/ublk-control` is missing).
    #[error(
        "no ublk driver in this kernel (/dev/ublk-control is missing; try `modprobe ublk_drv`)"
    )]
    NoDriver,
    /// A ublk control command failed (`ADD_DEV`, `SET_PARAMS`, `START_DEV`, `STOP_DEV`,
    /// `DEL_DEV`, `START_USER_RECOVERY`, ...).
    #[error("ublk device {dev}: {what}: {source}")]
    Control {
        /// The device id (-1 before the kernel gave one).
        dev: i32,
        /// What was being done.
        what: &'static str,
        /// What libublk or the kernel said.
        #[source]
        source: libublk::UblkError,
    },
    /// A queue could not be set up or served.
    #[error("ublk device {dev} queue {queue}: {what}: {source}")]
    Queue {
        /// The device id.
        dev: u32,
        /// The queue.
        queue: u16,
        /// What was being done.
        what: &'static str,
        /// What libublk or the kernel said.
        #[source]
        source: libublk::UblkError,
    },
    /// No ublk device has this number (`/sys/class/ublk-char/ublkcN` is missing).
    #[error("no ublk device {0} (`vecio ublk list` shows the devices)")]
    NoDevice(u32),
    /// Options out of range.
    #[error("invalid options: {0}")]
    Config(String),
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `f`'s libublk error as an [`Error::Control`] on device `dev`.
pub(crate) fn control(dev: i32, what: &'static str) -> impl FnOnce(libublk::UblkError) -> Error {
    move |source| Error::Control { dev, what, source }
}
