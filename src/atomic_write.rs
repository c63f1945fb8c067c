//! Replacing a file atomically: the one way the crate writes a file that must never be seen
//! half-written (the DHT's routing table, the state store's copies of .torrent files).
//!
//! The bytes go to `PATH.tmp` beside the file, which is then renamed over `PATH`: a reader (or
//! the next start after a crash) sees the old file or the new one, never a mix. With
//! [`Durability::Synced`] the new file's data reaches the device before the rename; with
//! [`Durability::Deferred`] the caller flushes later (the state store flushes a batch of
//! .torrent copies with one `fsync` each before it commits the records that name them, so
//! adding thousands of torrents costs no flush per file here).

use std::io::Write;
use std::path::{Path, PathBuf};

/// When the new file's data is flushed to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// `fsync` of the temporary file before the rename: after a crash `path` holds the old
    /// or the new content, complete.
    Synced,
    /// No flush: the caller syncs `path` (and its folder) before relying on it surviving a
    /// crash.
    Deferred,
}

/// The temporary file [`write()`] uses for `path`: `path` with `.tmp` appended
/// (`dht.state` → `dht.state.tmp`).
pub fn temp_path(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    PathBuf::from(tmp)
}

/// Replaces `path` with `data` atomically (see the module documentation), creating its
/// parent folders first.
///
/// # Errors
/// Creating the folders, writing or syncing the temporary file, or the rename failed (disk
/// full, permissions, a read-only file system). `path` is then unchanged and the temporary
/// file is removed (best effort).
pub fn write(path: &Path, data: &[u8], durability: Durability) -> std::io::Result<()> {
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = temp_path(path);
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(data)?;
        if durability == Durability::Synced {
            f.sync_all()?;
        }
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/state.bin");
        write(&path, b"first", Durability::Synced).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        write(&path, b"second, longer", Durability::Deferred).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second, longer");
        write(&path, b"", Durability::Synced).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        let names: Vec<_> = std::fs::read_dir(dir.path().join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["state.bin"]);
        assert_eq!(temp_path(&path), dir.path().join("a/b/state.bin.tmp"));
    }

    #[test]
    fn a_failed_write_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keep");
        write(&path, b"old", Durability::Synced).unwrap();
        // the temporary's name is taken by a folder: creating it fails, nothing changes
        std::fs::create_dir(temp_path(&path)).unwrap();
        assert!(write(&path, b"new", Durability::Synced).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        // a path whose parent is a file cannot be written
        assert!(write(&path.join("below"), b"x", Durability::Deferred).is_err());
    }
}
