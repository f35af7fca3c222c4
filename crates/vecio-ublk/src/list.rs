//! `vecio ublk list`: the ublk devices on this machine, whoever serves them.

use std::path::PathBuf;

use libublk::ctrl::UblkCtrl;
use libublk::sys;

use crate::error::{control, Result};

/// One ublk device as the kernel and its server's export describe it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Listed {
    /// The device number N (`/dev/ublkbN`, `/dev/ublkcN`).
    pub id: u32,
    /// `live`, `quiesced` (its server died; `--recover N` resumes it), `dead` (added, not
    /// started or stopped) or `fail-io`.
    pub state: &'static str,
    /// The serving process (0 when none).
    pub pid: i32,
    /// Hardware queues.
    pub queues: u16,
    /// Requests in flight per queue.
    pub depth: u16,
    /// Largest request in bytes.
    pub io_size: u32,
    /// The `UBLK_F_*` flags the device runs with.
    pub flags: u64,
    /// The backing file, for devices vecio serves.
    pub file: Option<PathBuf>,
}

/// The name of a `UBLK_S_DEV_*` state.
fn state_name(state: u16) -> &'static str {
    match state as u32 {
        sys::UBLK_S_DEV_LIVE => "live",
        sys::UBLK_S_DEV_QUIESCED => "quiesced",
        sys::UBLK_S_DEV_DEAD => "dead",
        _ => "fail-io",
    }
}

/// Every ublk device (`/sys/class/ublk-char`), by number.
pub fn list() -> Result<Vec<Listed>> {
    let mut ids: Vec<u32> = std::fs::read_dir("/sys/class/ublk-char")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("ublkc")?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    ids.sort_unstable();
    ids.into_iter().map(describe).collect()
}

/// Device `id` as [`Listed`].
fn describe(id: u32) -> Result<Listed> {
    let ctrl = UblkCtrl::new_simple(id as i32).map_err(control(id as i32, "reading"))?;
    let info = ctrl.dev_info();
    let file = ctrl
        .get_target_data_from_json()
        .and_then(|t| t.get("vecio")?.get("file")?.as_str().map(PathBuf::from));
    Ok(Listed {
        id,
        state: state_name(info.state),
        pid: info.ublksrv_pid,
        queues: info.nr_hw_queues,
        depth: info.queue_depth,
        io_size: info.max_io_buf_bytes,
        flags: info.flags,
        file,
    })
}
