//! Programs run through the mount as natively: a file whose only permission for the caller is
//! execute (`chmod 001`, owned by someone else) runs, though the caller cannot read it; with no
//! execute permission it does not.

mod common;

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
        let run = as_nobody(&[&prog]);
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
        fs::set_permissions(fx.m("prog"), fs::Permissions::from_mode(0o010)).unwrap();
        assert!(
            !as_nobody(&[&prog]).status.success(),
            "{opts}: nobody ran a program only its group may run"
        );
    }
}
