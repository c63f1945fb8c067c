//! The daemon's control socket: the engine–UI contract ([`crate::api`]) carried over a
//! Unix socket, so a TUI in another process (`ratorrent attach`) drives the daemon's
//! engine as if it were its own.
//!
//! - Where: `$XDG_RUNTIME_DIR/ratorrent/control-<hash>.sock` (the folder mode 0700; the
//!   hash names the state folder, so daemons on different state folders do not meet), or
//!   `<state folder>/run/` when `XDG_RUNTIME_DIR` is unset ([`socket_path`]). The daemon
//!   writes the path in the state folder's owner file ([`crate::state::Owner`]), where an
//!   attaching TUI reads it.
//! - Who: the daemon checks each connection's peer credentials (`SO_PEERCRED`): another
//!   user is refused, whatever the folder's mode.
//! - How ([`wire`]): a hello line each way naming the protocol version
//!   ([`wire::PROTOCOL_VERSION`]; a mismatch is refused with both versions named), then
//!   frames: a 4-byte big-endian length and a postcard body, bounded in size both ways.
//!   The daemon sends snapshots as differences from the last one it sent ([`delta`]: rows
//!   that did not change are not sent again), the engine's events and the answers to
//!   requests; the TUI sends [`crate::api::Command`]s, a request id standing in for each
//!   reply sender.
//! - [`server`]: the daemon's side, over its [`crate::api::Client`]; a slow or stuck TUI
//!   never holds the engine up (it gets the latest snapshot when it reads again).
//! - [`remote`]: the TUI's side: [`remote::connect`] gives an [`crate::api::Client`]
//!   whose channels are bridged to the socket, so the TUI does not know the difference.

pub mod delta;
pub mod remote;
pub mod server;
pub mod wire;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::Digest;

/// Who answered a connection: the daemon's pid and state folder, from its hello.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonInfo {
    /// The daemon's process id.
    pub pid: u32,
    /// The state folder its engine uses.
    pub state_dir: PathBuf,
}

/// The folder the control socket of the engine on `state_dir` lives in:
/// `$XDG_RUNTIME_DIR/ratorrent`, or `<state_dir>/run` when `XDG_RUNTIME_DIR` is unset or
/// empty.
pub fn socket_dir(state_dir: &Path) -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("ratorrent"),
        _ => state_dir.join("run"),
    }
}

/// Longest path a Unix socket address holds (`sun_path` is 108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// The control socket's path for the engine on `state_dir`: [`socket_dir`] joined with
/// `control-<first 16 hex digits of SHA-256(state_dir)>.sock`; when that is longer than a
/// Unix socket address can be (a deep state folder without `XDG_RUNTIME_DIR`), the same
/// name in `ratorrent-<uid>` under the system's temporary folder (made 0700 and checked to
/// be ours by [`prepare_socket_dir`], like the others).
pub fn socket_path(state_dir: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let digest = sha2::Sha256::digest(state_dir.as_os_str().as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let name = format!("control-{hex}.sock");
    let path = socket_dir(state_dir).join(&name);
    if path.as_os_str().len() <= MAX_SOCKET_PATH {
        return path;
    }
    // SAFETY: geteuid(2) cannot fail
    let uid = unsafe { libc::geteuid() };
    std::env::temp_dir()
        .join(format!("ratorrent-{uid}"))
        .join(name)
}

/// Create `dir` (and its parents) for the control socket with mode 0700: an existing one
/// of ours is tightened to 0700; one owned by another user is refused.
///
/// # Errors
/// The folder cannot be created or changed, or another user owns it.
pub fn prepare_socket_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::metadata(dir)?;
    // SAFETY: geteuid(2) cannot fail
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} belongs to another user (uid {}): the control socket cannot be made there",
                dir.display(),
                meta.uid()
            ),
        ));
    }
    if meta.permissions().mode() & 0o777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state folder so deep that the socket's usual path would not fit a Unix socket
    /// address (it failed with "path must be shorter than SUN_LEN"): a short one in the
    /// temporary folder, still one per state folder.
    #[test]
    fn a_deep_state_folder_gets_a_socket_path_that_fits() {
        let deep = PathBuf::from(format!("/srv/{}/ratorrent", "d".repeat(120)));
        let deeper = PathBuf::from(format!("/srv/{}/ratorrent", "e".repeat(120)));
        let (a, b) = (socket_path(&deep), socket_path(&deeper));
        assert!(a.as_os_str().len() <= MAX_SOCKET_PATH, "{}", a.display());
        assert_ne!(a, b);
        assert!(a.starts_with(std::env::temp_dir()), "{}", a.display());
        // and it binds
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("x".repeat(100)).join("ratorrent");
        let path = socket_path(&state);
        prepare_socket_dir(path.parent().unwrap()).unwrap();
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        drop(listener);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn the_socket_is_named_after_the_state_folder_in_a_private_folder() {
        let a = socket_path(Path::new("/home/u/.local/share/ratorrent"));
        let b = socket_path(Path::new("/srv/other/ratorrent"));
        assert_ne!(a, b);
        let name = a.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("control-") && name.ends_with(".sock") && name.len() == 29,
            "{name}"
        );
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("x/ratorrent");
        prepare_socket_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        prepare_socket_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "tightened again");
    }
}
