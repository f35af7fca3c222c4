//! vecio ublk: the loop device as a real block device.
//!
//! A file (or block device) is served as `/dev/ublkbN` through the kernel's ublk driver, with
//! the design of the kernel's loop device after its 2015 rework: direct I/O on the backing
//! file (no double caching) and asynchronous I/O (no thread per request), here in the same
//! io_uring that carries the ublk commands, one ring and one thread per hardware queue.
//!
//! - [`serve`]: add (or, after the previous server was killed, [recover](Options::recover))
//!   and serve a device until it is stopped.
//! - [`list`], [`stop`], [`delete`]: the devices on the machine.
//! - [`driver_features`]: what the kernel's ublk driver offers.
//!
//! Control and queue plumbing come from libublk; requests run as vecio [`Queue`](vecio::Queue)
//! requests on a vecio [`File`](vecio::File), whose engine submits into the ublk queue's own
//! ring. See `docs/ublk.md`.
//!
//! ```no_run
//! use vecio_ublk::{serve, Options};
//! let opts = Options::new("disk.img");
//! serve(&opts, |dev| println!("{}", dev.path.display()))?;
//! # Ok::<(), vecio_ublk::Error>(())
//! ```

#![warn(missing_docs)]

mod backend;
mod device;
mod error;
mod features;
mod list;
mod options;
mod params;
mod queue;
mod request;
mod straight;

pub use device::{delete, serve, stop, Device, CONTROL};
pub use error::{Error, Result};
pub use features::{driver_features, feature_names, FEATURES};
pub use list::{list, Listed};
pub use options::{Cache, Options, MAX_DEPTH, MAX_QUEUES};
pub use params::Geometry;
