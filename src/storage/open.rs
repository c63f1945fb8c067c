//! Opening a torrent's files safely, through the session's handle cache ([`Opener`]), and
//! telling whether the file at a path is still the one the torrent opened there.
//!
//! Safety: each folder between the download directory and a file is created one level at a
//! time and must resolve inside the download directory after symlinks, and the file itself
//! is opened with `O_NOFOLLOW`, so nothing is ever opened outside the download directory.
//! Reading opens an existing file read-write without creating it (read-only if the OS
//! refuses write access, remembering why); writing creates it, unless the torrent had
//! opened a file there before (then it was deleted: [`StorageError::FileDeleted`]).

use std::fs::OpenOptions;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::io_err;
use super::error::{StorageError, StorageErrorKind};
use super::handle::{FileId, Handle};
use super::handles::HandleCache;
use super::layout::{FileSlot, Files};
use super::options::StorageMode;
use crate::piece::{Bitfield, FileSpan, Geometry};

/// Opens the files of one torrent under its download directory.
#[derive(Debug)]
pub(crate) struct Opener {
    root: PathBuf,
    mode: StorageMode,
    handles: HandleCache,
}

impl Opener {
    /// Files under `root` (the download directory), for I/O in `mode`, kept open in
    /// `handles`.
    pub(crate) fn new(root: &Path, mode: StorageMode, handles: HandleCache) -> Opener {
        Opener {
            root: root.to_path_buf(),
            mode,
            handles,
        }
    }

    /// The download directory.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The I/O mode the handles are opened for.
    pub(crate) fn mode(&self) -> StorageMode {
        self.mode
    }

    /// Drop `slot`'s handle (closed once no I/O uses it); its identity is kept.
    pub(crate) fn close(&self, slot: &FileSlot) {
        self.handles.close(&slot.cell);
    }

    /// Drop `slot`'s handle and forget its identity: the next open takes whatever file is
    /// at the path.
    pub(crate) fn forget(&self, slot: &FileSlot) {
        self.handles.close(&slot.cell);
        slot.cell.forget();
    }

    /// Put `h` into `slot`'s cell as if it had been opened there (tests: a handle opened in
    /// a way the test cannot make the OS do).
    #[cfg(test)]
    pub(crate) fn install(&self, slot: &FileSlot, h: Handle) -> Arc<Handle> {
        self.handles.install(&slot.cell, h)
    }

    /// The open handle of `slot`, opening the file first if needed (through the session's
    /// cache). With `create` a missing file is created (writing) unless the torrent had
    /// opened a file there before (then it was deleted: [`StorageError::FileDeleted`]);
    /// without, the file must already exist as a regular file (reading never creates
    /// anything). A file opened again must be the one seen before (same device and inode).
    ///
    /// # Errors
    /// [`StorageError::FileDeleted`]; [`StorageError::Escapes`] for a folder that leads
    /// out of the download directory; I/O errors naming the file or folder (a symlink at
    /// the file's path is refused with `ELOOP`, a folder there with `EISDIR`).
    pub(crate) fn handle(
        &self,
        slot: &FileSlot,
        create: bool,
    ) -> Result<Arc<Handle>, StorageError> {
        if let Some(h) = slot.cell.get() {
            self.handles.touch(&slot.cell);
            return Ok(h);
        }
        let known = slot.cell.identity();
        let deleted = || StorageError::FileDeleted {
            path: slot.path.clone(),
        };
        let create = create && known.is_none();
        let op = if create { "creating" } else { "opening" };
        if !create {
            let m = match std::fs::symlink_metadata(&slot.path) {
                Ok(m) => m,
                Err(e) if known.is_some() && e.kind() == io::ErrorKind::NotFound => {
                    return Err(deleted());
                }
                Err(e) => return Err(io_err("opening", &slot.path, e)),
            };
            if known.is_some_and(|id| id != FileId::of(&m)) {
                return Err(deleted());
            }
            if !m.is_file() {
                return Err(io_err("opening", &slot.path, not_a_file(&m)));
            }
        }
        self.safe_folders(slot, create)?;
        let flags = libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let rw = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .custom_flags(flags)
            .open(&slot.path);
        let (file, read_only) = match rw {
            Ok(f) => (f, None),
            // read-only data (e.g. seeding from a read-only mount): remember why
            Err(e)
                if matches!(
                    StorageErrorKind::from_io(&e),
                    StorageErrorKind::PermissionDenied | StorageErrorKind::ReadOnly
                ) =>
            {
                match OpenOptions::new()
                    .read(true)
                    .custom_flags(flags)
                    .open(&slot.path)
                {
                    Ok(f) => (f, Some(e)),
                    // report what stopped us, not the fallback's "no such file"
                    Err(_) => return Err(io_err(op, &slot.path, e)),
                }
            }
            Err(e) if known.is_some() && e.kind() == io::ErrorKind::NotFound => {
                return Err(deleted());
            }
            Err(e) => return Err(io_err("opening", &slot.path, e)),
        };
        let meta = file
            .metadata()
            .map_err(|e| io_err("checking", &slot.path, e))?;
        if !meta.is_file() {
            return Err(io_err("opening", &slot.path, not_a_file(&meta)));
        }
        let id = FileId::of(&meta);
        if known.is_some_and(|k| k != id) {
            return Err(deleted());
        }
        if self.mode == StorageMode::File {
            advise(&file, libc::POSIX_FADV_SEQUENTIAL, 0, 0);
        }
        Ok(self
            .handles
            .install(&slot.cell, Handle::new(file, read_only, id)))
    }

    /// Make sure every folder between the download directory and `slot`'s file exists
    /// (with `create`, creating them one level at a time) and resolves inside the download
    /// directory. The download directory itself is never created here.
    ///
    /// # Errors
    /// [`StorageError::Escapes`] for a folder (or symlink to one) that leads outside the
    /// download directory; I/O errors naming the folder (`ENOTDIR` for a file in the way,
    /// `NotFound` without `create` or for a missing download directory).
    pub(crate) fn safe_folders(&self, slot: &FileSlot, create: bool) -> Result<(), StorageError> {
        let root = self
            .root
            .canonicalize()
            .map_err(|e| io_err("resolving", &self.root, e))?;
        let escapes = || StorageError::Escapes {
            path: slot.path.clone(),
        };
        let rel = slot.path.strip_prefix(&self.root).map_err(|_| escapes())?;
        let mut dir = self.root.clone();
        for comp in rel.parent().into_iter().flat_map(Path::components) {
            dir.push(comp);
            match std::fs::symlink_metadata(&dir) {
                Ok(m) if m.is_dir() => {}
                Ok(m) if m.file_type().is_symlink() => {
                    // a link is fine only if it leads to a folder inside the download dir
                    let real = dir
                        .canonicalize()
                        .map_err(|e| io_err("resolving", &dir, e))?;
                    if !real.starts_with(&root) {
                        return Err(escapes());
                    }
                    if !real.is_dir() {
                        return Err(io_err(
                            "opening",
                            &dir,
                            io::Error::from_raw_os_error(libc::ENOTDIR),
                        ));
                    }
                }
                Ok(_) => {
                    return Err(io_err(
                        "opening",
                        &dir,
                        io::Error::from_raw_os_error(libc::ENOTDIR),
                    ));
                }
                Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                    match std::fs::create_dir(&dir) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(io_err("creating", &dir, e)),
                    }
                }
                Err(e) => return Err(io_err("opening", &dir, e)),
            }
        }
        // defence in depth against races with the walk above
        let parent = slot.path.parent().unwrap_or(&self.root);
        let real_parent = parent
            .canonicalize()
            .map_err(|e| io_err("resolving", parent, e))?;
        if !real_parent.starts_with(&root) {
            return Err(escapes());
        }
        Ok(())
    }
}

/// Check that every non-padding file with data is still there: each file the torrent
/// opened is still the file at its path (not unlinked, not replaced; also when its
/// handle was closed by the cache since), and each file is a regular file at least as
/// long as the torrent says. Zero-length files are not looked at (they hold no data;
/// [`super::Storage::create_empty_files`] makes them). Cost: one `lstat` per file. Call it
/// when the last piece is verified, before reporting the torrent complete.
///
/// # Errors
/// The first problem found: [`StorageErrorKind::FileDeleted`] (a file opened here was
/// deleted or replaced, e.g. the download folder was removed),
/// [`StorageErrorKind::NotFound`] (a file never opened here is missing),
/// [`StorageErrorKind::Truncated`] (shorter than the torrent needs), or another I/O
/// error from `lstat`.
pub(crate) fn verify_present(files: &Files) -> Result<(), StorageError> {
    for slot in files
        .slots()
        .iter()
        .filter(|f| f.span.length > 0 && f.on_disk())
    {
        let meta = slot.check_current()?;
        if meta.len() < slot.span.length {
            return Err(StorageError::Truncated {
                path: slot.path.clone(),
                length: meta.len(),
                needed: slot.span.length,
            });
        }
    }
    Ok(())
}

/// Bytes of the file at `span` from its first byte to the end of the last of its bytes that
/// a piece verified in `have` holds (0 when no verified piece holds any of it): how long the
/// file must be on disk for the verified pieces to be there. A file wholly verified needs
/// its whole length; a skipped file partly written needs only what was written of it.
pub fn verified_extent(span: &FileSpan, geo: &Geometry, have: &Bitfield) -> u64 {
    span.pieces(geo)
        .rev()
        .find(|&p| p < have.len() && have.get(p))
        .map_or(0, |p| geo.piece_range(p).end.min(span.end()) - span.offset)
}

/// [`verify_present`] for the verified data only: each file that is not padding, not
/// routed to the part file and not skipped (`skipped(index)`, index in payload order), and
/// holds bytes of a piece verified in `have`, must still be the file the torrent opened
/// (or a regular file) and at least [`verified_extent`] bytes long. A skipped file is never
/// looked at: its bytes of a verified piece, if gone, are fetched again when read.
/// Cost: one `lstat` per file that holds verified bytes.
///
/// # Errors
/// As [`verify_present`].
pub(crate) fn verify_verified_present(
    files: &Files,
    geo: &Geometry,
    have: &Bitfield,
    skipped: &dyn Fn(usize) -> bool,
) -> Result<(), StorageError> {
    for (i, slot) in files.slots().iter().enumerate() {
        if slot.span.length == 0 || !slot.on_disk() || skipped(i) {
            continue;
        }
        let needed = verified_extent(&slot.span, geo, have);
        if needed == 0 {
            continue;
        }
        let meta = slot.check_current()?;
        if meta.len() < needed {
            return Err(StorageError::Truncated {
                path: slot.path.clone(),
                length: meta.len(),
                needed,
            });
        }
    }
    Ok(())
}

/// Check, without opening anything, that the files of a torrent stopped now still hold its
/// verified pieces: for each file at `root.join(paths[i])` with place `spans[i]` (payload
/// order) that is not padding, not skipped (`skipped(i)`) and holds bytes of a piece
/// verified in `have`, a regular file at least [`verified_extent`] bytes long must be there
/// (symlinks are not followed). Cost: one `lstat` per such file, no data read. The engine
/// calls it before a complete or partly verified torrent joins the swarm (resumed, or
/// started at launch), so that deleted data is not announced as had.
///
/// # Errors
/// The first problem found: [`StorageErrorKind::NotFound`] (missing, naming it),
/// [`StorageError::Truncated`] (shorter than its verified bytes need), or another I/O error
/// from `lstat` (a folder or symlink in its place, permissions).
pub fn check_verified_files(
    root: &Path,
    paths: &[PathBuf],
    spans: &[FileSpan],
    geo: &Geometry,
    have: &Bitfield,
    skipped: &dyn Fn(usize) -> bool,
) -> Result<(), StorageError> {
    for (i, (rel, span)) in paths.iter().zip(spans).enumerate() {
        if span.pad || span.length == 0 || skipped(i) {
            continue;
        }
        let needed = verified_extent(span, geo, have);
        if needed == 0 {
            continue;
        }
        let path = root.join(rel);
        let m = std::fs::symlink_metadata(&path).map_err(|e| io_err("checking", &path, e))?;
        if !m.is_file() {
            return Err(io_err("checking", &path, not_a_file(&m)));
        }
        if m.len() < needed {
            return Err(StorageError::Truncated {
                path,
                length: m.len(),
                needed,
            });
        }
    }
    Ok(())
}

/// [`verify_present`] for the files holding payload bytes
/// `offset..offset+len` only (the disk workers call it for each piece they verify).
pub(crate) fn verify_range_present(
    files: &Files,
    offset: u64,
    len: usize,
) -> Result<(), StorageError> {
    files.segments(offset, len, |slot, _, _| {
        if !slot.on_disk() {
            return Ok(());
        }
        slot.check_current().map(drop)
    })
}

impl FileSlot {
    /// The path's metadata if it is still the file the torrent last opened there (same
    /// device and inode; a regular file when it never opened one);
    /// [`StorageError::FileDeleted`] if that file was unlinked or replaced.
    pub(crate) fn check_current(&self) -> Result<std::fs::Metadata, StorageError> {
        let Some(id) = self.cell.identity() else {
            return self.check_exists();
        };
        let deleted = || StorageError::FileDeleted {
            path: self.path.clone(),
        };
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) if FileId::of(&m) == id => Ok(m),
            Ok(_) => Err(deleted()),
            Err(e) if StorageErrorKind::from_io(&e) == StorageErrorKind::NotFound => Err(deleted()),
            Err(e) => Err(io_err("checking", &self.path, e)),
        }
    }

    /// The path's metadata when no file was opened there: it must be a regular file.
    fn check_exists(&self) -> Result<std::fs::Metadata, StorageError> {
        let m =
            std::fs::symlink_metadata(&self.path).map_err(|e| io_err("checking", &self.path, e))?;
        if !m.is_file() {
            return Err(io_err("checking", &self.path, not_a_file(&m)));
        }
        Ok(m)
    }
}

/// A file's size and modification time (Unix seconds, nanoseconds), if it is a regular
/// file (symlinks are not followed).
pub fn file_stat(path: &Path) -> crate::state::FileStat {
    let m = std::fs::symlink_metadata(path).ok()?;
    m.is_file().then(|| {
        (
            m.len(),
            m.mtime(),
            m.mtime_nsec().clamp(0, 999_999_999) as u32,
        )
    })
}

/// The OS error that describes finding `m` where a regular file should be.
fn not_a_file(m: &std::fs::Metadata) -> io::Error {
    if m.file_type().is_symlink() {
        io::Error::from_raw_os_error(libc::ELOOP)
    } else if m.is_dir() {
        io::Error::from_raw_os_error(libc::EISDIR)
    } else {
        io::Error::new(io::ErrorKind::NotFound, "not a regular file")
    }
}

/// `posix_fadvise` on `file`, ignoring errors (it is only a hint).
pub(crate) fn advise(file: &std::fs::File, advice: libc::c_int, offset: u64, len: u64) {
    let (Ok(off), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: plain syscall on a descriptor we own; it only reads its arguments.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), off, len, advice);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::layout::Files;

    fn files(root: &Path, rel: &str) -> Files {
        Files::new(root, vec![(PathBuf::from(rel), 0, 4, false)], 4).unwrap()
    }

    fn opener(root: &Path) -> Opener {
        Opener::new(root, StorageMode::File, HandleCache::new(8))
    }

    #[test]
    fn reading_never_creates_and_writing_creates_folders_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let (o, f) = (opener(dir.path()), files(dir.path(), "t/sub/a"));
        let slot = &f.slots()[0];
        let e = o.handle(slot, false).unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::NotFound);
        assert!(!dir.path().join("t").exists(), "reading created nothing");
        let h = o.handle(slot, true).unwrap();
        assert!(dir.path().join("t/sub/a").is_file());
        assert!(h.read_only.is_none());
        // cached: the same handle again, for reading too
        assert!(Arc::ptr_eq(&h, &o.handle(slot, false).unwrap()));
        assert_eq!(slot.cell.identity(), Some(h.id));
    }

    #[test]
    fn a_file_replaced_after_it_was_opened_is_deleted_until_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let (o, f) = (opener(dir.path()), files(dir.path(), "a"));
        let slot = &f.slots()[0];
        let path = dir.path().join("a");
        o.handle(slot, true).unwrap();
        o.close(slot);
        assert!(slot.cell.get().is_none());
        assert!(slot.check_current().is_ok(), "closing keeps the identity");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            slot.check_current().unwrap_err().kind(),
            StorageErrorKind::FileDeleted
        );
        // neither reading nor writing takes (or makes) another file in its place
        assert_eq!(
            o.handle(slot, true).unwrap_err().kind(),
            StorageErrorKind::FileDeleted
        );
        assert!(!path.exists());
        std::fs::write(&path, b"new!").unwrap();
        assert_eq!(
            o.handle(slot, false).unwrap_err().kind(),
            StorageErrorKind::FileDeleted
        );
        o.forget(slot);
        assert!(
            o.handle(slot, false).is_ok(),
            "forgotten: the file there now"
        );
        assert!(slot.check_current().is_ok());
    }

    #[test]
    fn links_are_refused_at_the_file_and_outside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("a"), b"data").unwrap();
        std::os::unix::fs::symlink(outside.path().join("a"), dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        let o = opener(dir.path());
        let f = files(dir.path(), "a");
        for create in [false, true] {
            let e = o.handle(&f.slots()[0], create).unwrap_err();
            assert_eq!(e.kind(), StorageErrorKind::Refused, "{e}");
        }
        let e = f.slots()[0].check_current().unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::Refused, "{e}");
        let f = files(dir.path(), "out/b");
        for create in [false, true] {
            let e = o.safe_folders(&f.slots()[0], create).unwrap_err();
            assert!(matches!(e, StorageError::Escapes { .. }), "{e}");
        }
        assert!(!outside.path().join("b").exists());
    }

    #[test]
    fn a_folder_or_file_in_the_way_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("f"), b"").unwrap();
        let o = opener(dir.path());
        let e = o
            .handle(&files(dir.path(), "a").slots()[0], false)
            .unwrap_err();
        assert!(
            e.to_string()
                .contains(&dir.path().join("a").display().to_string())
        );
        let e = o
            .handle(&files(dir.path(), "f/x").slots()[0], true)
            .unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::NotFound, "ENOTDIR: {e}");
    }

    #[test]
    fn file_stat_sees_regular_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"12345").unwrap();
        let (len, secs, nanos) = file_stat(&p).unwrap();
        assert_eq!(len, 5);
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!((secs, i64::from(nanos)), (m.mtime(), m.mtime_nsec()));
        std::os::unix::fs::symlink(&p, dir.path().join("l")).unwrap();
        assert_eq!(file_stat(&dir.path().join("l")), None);
        assert_eq!(file_stat(dir.path()), None);
        assert_eq!(file_stat(&dir.path().join("missing")), None);
    }
}
