//! Programs run through the mount as natively: a file whose only permission for the caller is
//! execute (`chmod 001`, owned by someone else) runs, though the caller cannot read it; with no
//! execute permission it does not.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;

use common::as_nobody;

#[test]
fn an_execute_only_program_runs_and_cannot_be_read() {
    for opts in ["allow_other,default_permissions", "allow_other"] {
        let mut cfg = common::config();
        cfg.mount.parse_into(opts).unwrap();
        let Some(fx) = common::mount(&format!("exec-{}", opts.len()), cfg) else {
            return;
        };
        fs::copy("/bin/true", fx.m("prog")).unwrap();
        std::os::unix::fs::chown(fx.m("prog"), Some(12345), Some(12345)).unwrap();
        fs::set_permissions(fx.m("prog"), fs::Permissions::from_mode(0o001)).unwrap();
        let prog = fx.m("prog").to_str().unwrap().to_string();
        let run = as_nobody(&["sh", "-c", &format!("exec '{prog}'")]);
        assert!(
            run.status.success(),
            "{opts}: nobody running a 001 program: {:?} {}",
            run.status.code(),
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(
            !as_nobody(&["cat", &prog]).status.success(),
            "{opts}: nobody read a 001 file"
        );
        // Group execute only: nobody (no capability left, from a shell) may not run it,
        // through the mount as on the source.
        fs::set_permissions(fx.m("prog"), fs::Permissions::from_mode(0o010)).unwrap();
        for path in [prog.clone(), fx.s("prog").to_str().unwrap().to_string()] {
            let run = as_nobody(&["sh", "-c", &format!("exec '{path}'")]);
            assert_eq!(
                run.status.code(),
                Some(126),
                "{opts}: nobody ran {path} (mode 010)"
            );
        }
    }
}
