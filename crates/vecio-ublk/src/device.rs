//! A device's life: added (or recovered), started, served by one thread per queue, stopped and
//! deleted; and the commands on devices served elsewhere (`list`, `del`, stop).

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libublk::ctrl::{UblkCtrl, UblkCtrlBuilder};
use libublk::io::UblkDev;
use libublk::{sys, UblkFlags};

use crate::error::{control, Error, Result};
use crate::options::Options;
use crate::params::Geometry;
use crate::queue::{self, Shared};

/// The control device every ublk command goes through.
pub const CONTROL: &str = "/dev/ublk-control";

/// The device flags vecio asks for: user recovery (a server killed with SIGKILL leaves the
/// device quiesced, its requests kept for the next server) with reissue (requests the dead
/// server had taken are sent again, so no acknowledged write depends on it).
const RECOVERY: u64 = (sys::UBLK_F_USER_RECOVERY | sys::UBLK_F_USER_RECOVERY_REISSUE) as u64;

/// A device being served, as [`serve`] reports it once it is up.
#[derive(Clone, Debug)]
pub struct Device {
    /// The device number N.
    pub id: u32,
    /// `/dev/ublkbN`.
    pub path: PathBuf,
    /// Its shape.
    pub geometry: Geometry,
    /// Hardware queues.
    pub queues: u16,
    /// Requests in flight per queue.
    pub depth: u16,
    /// The `UBLK_F_*` flags the device runs with (as the kernel kept them).
    pub flags: u64,
    /// True when this server resumed a device whose server had died.
    pub recovered: bool,
}

/// Serves `opts.file` as a ublk block device until the device is stopped (by [`stop`], `vecio
/// ublk del`, or `ublk del`), then deletes it. `ready` is called once the block device exists.
pub fn serve(opts: &Options, ready: impl FnOnce(&Device) + Send + Sync + 'static) -> Result<()> {
    opts.check()?;
    // The file first: a missing or unreadable file is the user's to fix wherever they run it.
    let file = crate::backend::open(opts)?;
    if !Path::new(CONTROL).exists() {
        return Err(Error::NoDriver);
    }
    let ctrl = control_for(opts)?;
    let info = ctrl.dev_info();
    let id = info.dev_id;
    let geometry = Geometry::of(&file, info.max_io_buf_bytes, opts.read_only)?;
    let recovered = opts.recover.is_some();
    if recovered {
        ctrl.start_user_recover()
            .map_err(control(id as i32, "starting user recovery"))?;
    }
    let fd = file.as_raw_fd();
    let shared = Arc::new(Shared {
        file: Arc::new(file),
        fixed_slot: Some(1),
    });
    let target = serde_json::json!({ "vecio": {
        "file": opts.file, "cache": opts.cache.name(), "read_only": opts.read_only,
    }});
    let tgt_init = |dev: &mut UblkDev| {
        init_target(dev, fd, &geometry, target);
        Ok(())
    };
    let device = Device {
        id,
        path: PathBuf::from(format!("/dev/ublkb{id}")),
        geometry,
        queues: info.nr_hw_queues,
        depth: info.queue_depth,
        flags: info.flags,
        recovered,
    };
    let served = ctrl.run_target(
        tgt_init,
        move |qid, dev: &UblkDev| queue::serve(qid, dev, &shared),
        move |_| ready(&device),
    );
    served.map_err(control(id as i32, "serving"))?;
    // A device added here is deleted when `ctrl` drops; a recovered one is ours now, too.
    if recovered {
        let _ = ctrl.del_dev();
    }
    Ok(())
}

/// The control handle: a new device (`ADD_DEV` with the options' geometry), or device
/// `opts.recover` resumed with its own queues and depth.
fn control_for(opts: &Options) -> Result<UblkCtrl> {
    let builder = UblkCtrlBuilder::default().name("vecio");
    let ctrl = match opts.recover {
        Some(n) => builder
            .id(n as i32)
            .dev_flags(UblkFlags::UBLK_DEV_F_RECOVER_DEV)
            .build()
            .map_err(control(n as i32, "opening the device to recover"))?,
        None => builder
            .id(opts.id.map_or(-1, |n| n as i32))
            .nr_queues(opts.queues)
            .depth(opts.depth)
            .io_buf_bytes(opts.io_size)
            .ctrl_flags(RECOVERY | ioctl_encode())
            .dev_flags(UblkFlags::UBLK_DEV_F_ADD_DEV)
            .build()
            .map_err(control(
                opts.id.map_or(-1, |n| n as i32),
                "adding the device",
            ))?,
    };
    Ok(ctrl)
}

/// `UBLK_F_CMD_IOCTL_ENCODE` where the driver offers it (6.2 and later): the ioctl-encoded
/// command numbers, which kernels built without the legacy ones require.
fn ioctl_encode() -> u64 {
    match UblkCtrl::get_features() {
        Some(f) => f & sys::UBLK_F_CMD_IOCTL_ENCODE as u64,
        None => 0,
    }
}

/// The target's part of the device: the backing file as fixed file 1 of every queue ring, the
/// parameters, ring sizes for the commands and the file's ops together, and what `list` shows.
fn init_target(dev: &mut UblkDev, fd: i32, geometry: &Geometry, target: serde_json::Value) {
    let depth = dev.dev_info.queue_depth;
    let tgt = &mut dev.tgt;
    tgt.fds[1] = fd;
    tgt.nr_fds = 2;
    tgt.dev_size = geometry.size;
    tgt.params = geometry.params();
    // Each tag: its ublk command, and up to a few backing-file ops (a read-modify-write stage,
    // a retry timer); the completion queue holds them all.
    tgt.sq_depth = depth.saturating_mul(2).max(8);
    tgt.cq_depth = depth.saturating_mul(4).max(16);
    dev.set_target_json(target);
}

/// Stops device `id` (`STOP_DEV`): its server's queues end and its `serve` returns.
pub fn stop(id: u32) -> Result<()> {
    let ctrl = open_existing(id)?;
    // Opened for an existing device: dropping it leaves the device alone.
    ctrl.kill_dev().map_err(control(id as i32, "stopping"))?;
    Ok(())
}

/// Stops and deletes device `id` (`STOP_DEV`, `DEL_DEV`), served or orphaned.
pub fn delete(id: u32) -> Result<()> {
    let ctrl = open_existing(id)?;
    ctrl.del_dev().map_err(control(id as i32, "deleting"))?;
    Ok(())
}

/// The control handle of device `id`, which exists: without a driver, or for a number no device
/// has, the error says which (libublk would print its own hint and fail with "other failure").
fn open_existing(id: u32) -> Result<UblkCtrl> {
    if !Path::new(CONTROL).exists() {
        return Err(Error::NoDriver);
    }
    if !Path::new(&format!("/sys/class/ublk-char/ublkc{id}")).exists() {
        return Err(Error::NoDevice(id));
    }
    UblkCtrl::new_simple(id as i32).map_err(control(id as i32, "opening"))
}
