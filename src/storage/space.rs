//! Free space of a download volume (`statvfs`), for the disk guard and the status bar.

use std::path::Path;

/// Bytes available to an unprivileged user on the file system holding `path` (or, if it
/// does not exist yet, its nearest existing ancestor); `None` when it cannot be measured,
/// or the file system has no blocks at all (`/proc`, `/sys`: no data can go there, and
/// "0 B free" would send the user after space instead of after the folder).
pub fn free_space(path: &Path) -> Option<u64> {
    let mut p = Some(path);
    while let Some(dir) = p {
        if dir.exists() {
            return statvfs_free(dir);
        }
        p = dir.parent();
    }
    None
}

/// The file system id of `path`'s nearest existing ancestor, to group torrents by volume.
pub fn volume_of(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut p = Some(path);
    while let Some(dir) = p {
        if let Ok(m) = std::fs::metadata(dir) {
            return Some(m.dev());
        }
        p = dir.parent();
    }
    None
}

fn statvfs_free(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` a properly sized out-parameter
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (r == 0 && st.f_blocks > 0).then(|| (st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_existing_and_missing_paths() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_space(dir.path()).unwrap();
        assert!(free > 0);
        let missing = dir.path().join("a/b/c");
        assert!(free_space(&missing).is_some(), "nearest existing ancestor");
        assert_eq!(volume_of(&missing), volume_of(dir.path()));
        // a pseudo file system holds no data: not "0 B free"
        if Path::new("/proc/self").exists() {
            assert_eq!(free_space(Path::new("/proc/nope/x")), None);
        }
    }
}
