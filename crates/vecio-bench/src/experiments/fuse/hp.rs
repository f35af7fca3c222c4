//! libfuse's `passthrough_hp` as a peer: `--libfuse-hp PATH` names its binary, or a libfuse
//! source tree that the bench builds with meson and ninja once, into a directory of its own
//! under the system's temporary directory (never inside the user's tree).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The `passthrough_hp` binary `path` names: `path` itself when it is an executable file, or,
/// when it is a libfuse source tree (a directory holding `meson.build`), its example built
/// with `meson setup -Dexamples=true` and `ninja example/passthrough_hp` (reused when built
/// before). `flag` names the option in errors.
pub fn passthrough_hp(flag: &str, path: &Path) -> Result<PathBuf> {
    let meta = std::fs::metadata(path).with_context(|| format!("{flag} {}", path.display()))?;
    if meta.is_dir() {
        return build(flag, path);
    }
    runnable(flag, path)?;
    Ok(path.to_path_buf())
}

/// An error naming `flag` unless `path` is a file that may be executed.
pub fn runnable(flag: &str, path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).with_context(|| format!("{flag} {}", path.display()))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        bail!("{flag} {}: not an executable file", path.display());
    }
    Ok(())
}

fn build(flag: &str, src: &Path) -> Result<PathBuf> {
    if !src.join("meson.build").is_file() {
        bail!(
            "{flag} {}: a directory, but not a libfuse source tree (no meson.build)",
            src.display()
        );
    }
    let src = src
        .canonicalize()
        .with_context(|| format!("{flag} {}", src.display()))?;
    let name: String = src
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = std::env::temp_dir().join(format!("vecio-libfuse-hp{name}"));
    let binary = dir.join("example").join("passthrough_hp");
    if binary.is_file() {
        return Ok(binary);
    }
    eprintln!(
        "vecio: building passthrough_hp from {} with meson (once, in {})",
        src.display(),
        dir.display()
    );
    if !dir.join("build.ninja").is_file() {
        let _ = std::fs::remove_dir_all(&dir);
        run(
            Command::new("meson")
                .arg("setup")
                .arg(&dir)
                .arg(&src)
                .args(["-Dutils=false", "-Dexamples=true", "-Dtests=false"]),
            "meson setup",
        )?;
    }
    run(
        Command::new("ninja")
            .arg("-C")
            .arg(&dir)
            .arg("example/passthrough_hp"),
        "ninja",
    )?;
    runnable(flag, &binary)?;
    Ok(binary)
}

/// Runs `cmd`, an error with the end of its output when it fails or cannot start.
fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd.output().with_context(|| {
        format!("{what}: cannot run it (scripts/setup installs meson, ninja-build and g++)")
    })?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(8)..].join("\n");
        bail!("{what} failed ({}):\n{tail}", out.status);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::passthrough_hp;

    #[test]
    fn a_directory_without_meson_build_or_a_plain_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let err = passthrough_hp("--libfuse-hp", dir.path()).unwrap_err();
        assert!(
            format!("{err:#}").contains("not a libfuse source tree"),
            "{err:#}"
        );
        let file = dir.path().join("notes.txt");
        std::fs::write(&file, "not a program").unwrap();
        let err = passthrough_hp("--libfuse-hp", &file).unwrap_err();
        assert!(
            format!("{err:#}").contains("not an executable file"),
            "{err:#}"
        );
        let err = passthrough_hp("--libfuse-hp", &dir.path().join("missing")).unwrap_err();
        assert!(format!("{err:#}").contains("--libfuse-hp"), "{err:#}");
    }

    #[test]
    fn an_executable_file_is_taken_as_it_is() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("passthrough_hp");
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(passthrough_hp("--libfuse-hp", &file).unwrap(), file);
    }
}
