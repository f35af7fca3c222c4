//! Security labels at create (`FUSE_SECURITY_CTX`, as virtiofsd's `--security-label`): the
//! kernel's LSM (SELinux, Smack) chooses the label of a new inode and sends it with the
//! `CREATE`, `MKDIR`, `MKNOD`, `SYMLINK` or `TMPFILE` that makes it; the server sets it on the
//! backing inode (`security.*` xattrs, as the server) before the reply goes out, so the kernel
//! never sees the inode unlabelled. Without an LSM that labels files the kernel sends none.

use std::ffi::CStr;

use zerocopy::FromBytes;

use super::Answer;
use crate::abi::EntryOut;
use crate::error::{Errno, OpResult};
use crate::fs::creds::AsServer;
use crate::fs::Fs;

/// Sets `labels` on the inode `answer` (an entry reply) made.
pub fn apply(fs: &Fs, answer: &Answer, labels: &[(&CStr, &[u8])]) -> OpResult<()> {
    let Answer::Bytes(bytes) = answer else {
        return Ok(());
    };
    let (entry, _) = EntryOut::read_from_prefix(bytes).map_err(|_| Errno::IO)?;
    let inode = fs.inodes.get(entry.nodeid)?;
    let (_held, path) = fs.proc_path(&inode)?;
    let _server = AsServer::new();
    for (name, value) in labels {
        rustix::fs::setxattr(
            path.as_c_str(),
            *name,
            value,
            rustix::fs::XattrFlags::empty(),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::attr::from_stat;

    /// What the kernel's LSM would send with a create, applied to the new inode (this kernel's
    /// LSMs label nothing, so a `user.*` name stands in for `security.selinux`).
    #[test]
    fn labels_land_on_the_new_inode() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        std::fs::write(dir.path().join("new"), "x").unwrap();
        let fs = Fs::new(dir.path(), Default::default()).unwrap();
        let (id, st) = fs.inodes.lookup(crate::abi::ROOT_ID, c"new").unwrap();
        let answer = Answer::of(&fs.cfg.timeouts.entry(id, from_stat(&st)));
        apply(
            &fs,
            &answer,
            &[(c"user.vecio.label", &b"system_u:object_r:x"[..])],
        )
        .unwrap();
        let mut buf = [0u8; 64];
        let n = rustix::fs::getxattr(dir.path().join("new"), c"user.vecio.label", &mut buf[..])
            .unwrap();
        assert_eq!(&buf[..n], b"system_u:object_r:x");
    }
}
