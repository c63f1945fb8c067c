//! Creating and sizing files. Nothing is created on disk by [`super::Storage::new`], by
//! checking or by reading. The download directory is created by [`prepare_root`] (the
//! engine calls it when the torrent starts downloading) or [`create_files`]; if it
//! disappears later, I/O fails with [`StorageErrorKind::NotFound`] instead of silently
//! starting over in a new, empty folder. A file is created by the first write to it
//! (sparse; fully allocated with [`Preallocate::Full`]), which also cuts a file longer than
//! the torrent says to its exact length; zero-length files are made by
//! [`create_empty_files`] (the engine calls it when the torrent completes).

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::Ordering;

use std::path::Path;

use super::backend;
#[cfg(doc)]
use super::error::StorageErrorKind;
use super::error::{StorageError, clone_io, io_err};
use super::handle::Handle;
use super::layout::{FileSlot, Files};
use super::open::Opener;
use super::options::{Preallocate, StorageMode};

/// Create the download directory `root` (and its parents) if missing, and nothing else:
/// the engine calls it when the torrent starts downloading, so that files can be created
/// by their first write. After that, a download directory that vanishes gives
/// [`StorageErrorKind::NotFound`] on I/O (it is not created again behind the user's back).
///
/// # Errors
/// The directory cannot be created (permissions, read-only, a file in the way), naming it.
pub(crate) fn prepare_root(root: &Path) -> Result<(), StorageError> {
    std::fs::create_dir_all(root).map_err(|e| io_err(super::error::CREATING_SAVE_FOLDER, root, e))
}

/// Create every zero-length file of `files` that is missing (and the folders on the way),
/// leaving existing files alone: a file with no bytes is never written. Skipped and padding
/// files are not created.
///
/// # Errors
/// As for a write: permissions, read-only, [`StorageError::Escapes`], a missing download
/// directory ([`StorageErrorKind::NotFound`]).
pub(crate) fn create_empty_files(opener: &Opener, files: &Files) -> Result<(), StorageError> {
    for slot in files
        .slots()
        .iter()
        .filter(|f| f.span.length == 0 && f.on_disk())
    {
        if std::fs::symlink_metadata(&slot.path).is_ok_and(|m| m.is_file()) {
            continue;
        }
        opener.safe_folders(slot, true)?;
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&slot.path)
            .map_err(|e| io_err("creating", &slot.path, e))?;
    }
    Ok(())
}

/// Create the download directory, every folder and every file of `files` (sparse, extended
/// to its length if shorter; existing data is never truncated here; fully allocated with
/// [`Preallocate::Full`]). Files that can only be opened read-only are fine if they are long
/// enough (seeding from a read-only mount).
///
/// # Errors
/// I/O errors naming the file ([`StorageError::kind`] tells disk full, permission denied,
/// read-only); [`StorageError::Escapes`] when a folder resolves outside the download
/// directory.
pub(crate) fn create_files(
    opener: &Opener,
    files: &Files,
    prealloc: Preallocate,
) -> Result<(), StorageError> {
    prepare_root(opener.root())?;
    for slot in files.slots().iter().filter(|f| f.on_disk()) {
        let h = opener.handle(slot, true)?;
        let len = h
            .file
            .metadata()
            .map_err(|e| io_err("checking", &slot.path, e))?
            .len();
        if len < slot.span.length {
            if let Some(e) = &h.read_only {
                return Err(io_err("extending", &slot.path, clone_io(e)));
            }
            h.file
                .set_len(slot.span.length)
                .map_err(|e| io_err("extending", &slot.path, e))?;
        }
        if prealloc == Preallocate::Full && h.read_only.is_none() {
            preallocate(slot, &h)?;
        }
    }
    Ok(())
}

/// Write `data` at byte `at` of `slot`'s file (opening or creating it through `opener`, and
/// preparing it for writing on first use: see [`prepare_write`]).
///
/// # Errors
/// As [`super::Storage::write_at`].
#[inline]
pub(crate) fn write_file(
    opener: &Opener,
    prealloc: Preallocate,
    slot: &FileSlot,
    at: u64,
    data: &[u8],
) -> Result<(), StorageError> {
    let h = opener.handle(slot, true)?;
    prepare_write(slot, &h, opener.mode(), prealloc)?;
    slot.written.store(true, Ordering::Relaxed);
    backend::write(opener.mode(), &slot.path, slot.span.length, &h, at, data)
}

/// Allocate the whole of `slot`'s file (full preallocation) and mark the handle so that
/// nothing is reserved per write.
///
/// # Errors
/// [`StorageError::Unsupported`] on a file system without `fallocate` (naming the setting to
/// change); the OS error of `fallocate` (`ENOSPC`: [`StorageErrorKind::NoSpace`]).
pub(crate) fn preallocate(slot: &FileSlot, h: &Handle) -> Result<(), StorageError> {
    if slot.span.length == 0 {
        return Ok(());
    }
    match backend::fallocate(h, 0, slot.span.length) {
        Ok(()) => {
            h.reserved_all.store(true, Ordering::Release);
            Ok(())
        }
        Err(e) if backend::unsupported(&e) => Err(StorageError::Unsupported {
            path: slot.path.clone(),
            what: "preallocate files (fallocate)",
            setting: "preallocate = \"sparse\"",
        }),
        Err(e) => Err(io_err("preallocating", &slot.path, e)),
    }
}

/// Before the first write through `h`: refuse if the handle is read-only (reporting why
/// the read-write open failed), cut a file longer than the torrent says to its exact
/// length (bytes past it are not the torrent's; nothing verified is lost), allocate it
/// whole with full preallocation, and in `mmap` mode extend it (sparse) to its length
/// so that it can be mapped. Later calls on the same handle only check read-only.
///
/// # Errors
/// The read-only handle's cause (`PermissionDenied`, `ReadOnly`); errors of `fstat`,
/// `ftruncate` and [`preallocate`], naming the file.
pub(crate) fn prepare_write(
    slot: &FileSlot,
    h: &Handle,
    mode: StorageMode,
    prealloc: Preallocate,
) -> Result<(), StorageError> {
    if let Some(e) = &h.read_only {
        return Err(io_err("writing", &slot.path, clone_io(e)));
    }
    if h.sized.load(Ordering::Acquire) {
        return Ok(());
    }
    let len = h
        .file
        .metadata()
        .map_err(|e| io_err("checking", &slot.path, e))?
        .len();
    if len > slot.span.length {
        tracing::info!(path = %slot.path.display(), len, want = slot.span.length,
            "cutting a file longer than the torrent says to its exact length");
        h.file
            .set_len(slot.span.length)
            .map_err(|e| io_err("truncating", &slot.path, e))?;
    }
    if prealloc == Preallocate::Full {
        preallocate(slot, h)?;
    } else if mode == StorageMode::Mmap && len < slot.span.length {
        h.file
            .set_len(slot.span.length)
            .map_err(|e| io_err("extending", &slot.path, e))?;
    }
    h.sized.store(true, Ordering::Release);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::error::StorageErrorKind;
    use crate::storage::handle::FileId;
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};

    fn one_file(root: &Path, length: u64) -> Files {
        Files::new(root, vec![(PathBuf::from("f"), 0, length, false)], length).unwrap()
    }

    fn handle(path: &Path, read_only: Option<i32>) -> Handle {
        let file = OpenOptions::new()
            .read(true)
            .write(read_only.is_none())
            .open(path)
            .unwrap();
        let id = FileId::of(&file.metadata().unwrap());
        Handle::new(file, read_only.map(std::io::Error::from_raw_os_error), id)
    }

    #[test]
    fn the_first_write_cuts_an_oversized_file_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        let f = one_file(dir.path(), 4);
        let h = handle(&path, None);
        prepare_write(&f.slots()[0], &h, StorageMode::File, Preallocate::Sparse).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"0123");
        assert!(h.sized.load(Ordering::Acquire));
        // sized: a file grown since is not cut again through this handle
        std::fs::write(&path, b"0123456789").unwrap();
        prepare_write(&f.slots()[0], &h, StorageMode::File, Preallocate::Sparse).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 10);
    }

    #[test]
    fn a_short_file_is_extended_for_mapping_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"ab").unwrap();
        let f = one_file(dir.path(), 4096);
        prepare_write(
            &f.slots()[0],
            &handle(&path, None),
            StorageMode::File,
            Preallocate::Sparse,
        )
        .unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            2,
            "file mode: sparse"
        );
        prepare_write(
            &f.slots()[0],
            &handle(&path, None),
            StorageMode::Mmap,
            Preallocate::Sparse,
        )
        .unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            4096,
            "mmap: mappable"
        );
    }

    #[test]
    fn a_read_only_handle_refuses_with_the_cause_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        let f = one_file(dir.path(), 4);
        for (why, kind) in [
            (libc::EROFS, StorageErrorKind::ReadOnly),
            (libc::EACCES, StorageErrorKind::PermissionDenied),
        ] {
            let h = handle(&path, Some(why));
            let e =
                prepare_write(&f.slots()[0], &h, StorageMode::File, Preallocate::Full).unwrap_err();
            assert_eq!(e.kind(), kind);
            assert!(e.to_string().contains(&path.display().to_string()), "{e}");
            assert!(!h.sized.load(Ordering::Acquire));
        }
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 10, "untouched");
    }

    #[test]
    fn full_preallocation_allocates_the_whole_file() {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
        let path = dir.path().join("f");
        std::fs::write(&path, b"").unwrap();
        let len = 1u64 << 20;
        let f = one_file(dir.path(), len);
        let h = handle(&path, None);
        match prepare_write(&f.slots()[0], &h, StorageMode::File, Preallocate::Full) {
            Ok(()) => {
                let m = std::fs::metadata(&path).unwrap();
                assert_eq!(m.len(), len);
                assert!(m.blocks() * 512 >= len);
                assert!(h.reserved_all.load(Ordering::Acquire));
            }
            Err(StorageError::Unsupported { setting, .. }) => {
                assert!(setting.contains("sparse"));
            }
            Err(e) => panic!("{e}"),
        }
        // nothing to allocate for an empty file
        let empty = one_file(dir.path(), 0);
        preallocate(&empty.slots()[0], &handle(&path, None)).unwrap();
    }
}
