//! What the running kernel's ublk driver offers, by name (`UBLK_U_CMD_GET_FEATURES`, Linux 6.5
//! and later; older drivers answer nothing and are described by what they always had).

use libublk::sys;

/// Every `UBLK_F_*` feature bit vecio knows, with the kernel's name for it.
pub const FEATURES: &[(u64, &str)] = &[
    (sys::UBLK_F_SUPPORT_ZERO_COPY as u64, "SUPPORT_ZERO_COPY"),
    (
        sys::UBLK_F_URING_CMD_COMP_IN_TASK as u64,
        "URING_CMD_COMP_IN_TASK",
    ),
    (sys::UBLK_F_NEED_GET_DATA as u64, "NEED_GET_DATA"),
    (sys::UBLK_F_USER_RECOVERY as u64, "USER_RECOVERY"),
    (
        sys::UBLK_F_USER_RECOVERY_REISSUE as u64,
        "USER_RECOVERY_REISSUE",
    ),
    (sys::UBLK_F_UNPRIVILEGED_DEV as u64, "UNPRIVILEGED_DEV"),
    (sys::UBLK_F_CMD_IOCTL_ENCODE as u64, "CMD_IOCTL_ENCODE"),
    (sys::UBLK_F_USER_COPY as u64, "USER_COPY"),
    (sys::UBLK_F_ZONED as u64, "ZONED"),
    (
        sys::UBLK_F_USER_RECOVERY_FAIL_IO as u64,
        "USER_RECOVERY_FAIL_IO",
    ),
    (sys::UBLK_F_UPDATE_SIZE as u64, "UPDATE_SIZE"),
    (sys::UBLK_F_AUTO_BUF_REG as u64, "AUTO_BUF_REG"),
    (sys::UBLK_F_QUIESCE as u64, "QUIESCE"),
    (sys::UBLK_F_PER_IO_DAEMON as u64, "PER_IO_DAEMON"),
    (sys::UBLK_F_BUF_REG_OFF_DAEMON as u64, "BUF_REG_OFF_DAEMON"),
    (sys::UBLK_F_BATCH_IO as u64, "BATCH_IO"),
];

/// The names of the feature bits set in `flags` (unknown bits as hex).
pub fn feature_names(flags: u64) -> Vec<String> {
    let mut names: Vec<String> = FEATURES
        .iter()
        .filter(|(bit, _)| flags & bit != 0)
        .map(|(_, name)| name.to_string())
        .collect();
    let known = FEATURES.iter().fold(0, |a, (bit, _)| a | bit);
    if flags & !known != 0 {
        names.push(format!("{:#x}", flags & !known));
    }
    names
}

/// What the kernel's ublk driver offers: `None` without a driver (`/dev/ublk-control`
/// missing), `Some(None)` for a driver too old to say (before 6.5), else its feature bits.
pub fn driver_features() -> Option<Option<u64>> {
    if !std::path::Path::new(crate::device::CONTROL).exists() {
        return None;
    }
    Some(libublk::ctrl::UblkCtrl::get_features())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_named_and_unknown_ones_shown() {
        let f = (sys::UBLK_F_USER_RECOVERY | sys::UBLK_F_USER_COPY) as u64 | 1 << 62;
        assert_eq!(
            feature_names(f),
            vec!["USER_RECOVERY", "USER_COPY", "0x4000000000000000"]
        );
        assert!(feature_names(0).is_empty());
    }
}
