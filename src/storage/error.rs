//! Storage errors: what failed, on which file, and what the user can do about it.
//!
//! Every [`StorageError`] names the file (or folder) involved and says what happened in the
//! user's terms, e.g. `permission denied writing /dl/a.bin (check the folder's owner and
//! mode)`. [`StorageError::kind`] classifies it as a [`StorageErrorKind`], which the engine
//! uses to decide between failing the torrent, re-fetching one piece, or asking for a
//! re-check, and to show a "what to do" hint ([`StorageErrorKind::hint`]).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// The class of a storage failure, derived from the OS error (`errno`) where there is one.
///
/// | kind | from |
/// |---|---|
/// | `NoSpace` | `ENOSPC`, `EDQUOT` |
/// | `PermissionDenied` | `EACCES`, `EPERM`; a write to a file that could only be opened read-only because of one of those |
/// | `ReadOnly` | `EROFS`; `EBADF` (a handle opened read-only); a write to a file that could only be opened read-only because of `EROFS` |
/// | `NotFound` | `ENOENT`, `ENOTDIR`: a file or folder that is not there (never opened by us, or gone before we opened it) |
/// | `FileDeleted` | a file we had open was unlinked or replaced at its path; `ESTALE` |
/// | `Truncated` | a file shorter than the torrent needs when reading data (`UnexpectedEof`) |
/// | `Refused` | a path outside the download folder, a symbolic link (`ELOOP` with `O_NOFOLLOW`), an impossible file layout |
/// | `Io` | anything else (`EIO`, `EISDIR`, out-of-range offsets, no disk thread) |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StorageErrorKind {
    /// The disk (or the user's quota) is full.
    NoSpace,
    /// The OS refused access to a file or folder (owner or mode bits).
    PermissionDenied,
    /// The file system is mounted read-only, or the file could only be opened read-only.
    ReadOnly,
    /// A file or folder is not there.
    NotFound,
    /// A file we had open was deleted (unlinked) or replaced by another file at its path:
    /// data written since went to a file nobody can see.
    FileDeleted,
    /// A file is shorter than the torrent needs (it was truncated, or never complete).
    Truncated,
    /// Refused for safety: a path outside the download folder, a symbolic link, or a file
    /// layout that does not add up.
    Refused,
    /// Any other I/O error.
    Io,
}

impl StorageErrorKind {
    /// Classify an OS error. Raw `errno` values are looked at first (`EDQUOT`, `EBADF`,
    /// `ELOOP`, `ESTALE` have no stable [`io::ErrorKind`]), then the error's kind, so
    /// synthetic errors (`io::Error::new(io::ErrorKind::NotFound, ..)`) map too.
    pub fn from_io(e: &io::Error) -> StorageErrorKind {
        if let Some(code) = e.raw_os_error() {
            match code {
                libc::ENOSPC | libc::EDQUOT => return StorageErrorKind::NoSpace,
                libc::EACCES | libc::EPERM => return StorageErrorKind::PermissionDenied,
                libc::EROFS | libc::EBADF => return StorageErrorKind::ReadOnly,
                libc::ENOENT | libc::ENOTDIR => return StorageErrorKind::NotFound,
                libc::ESTALE => return StorageErrorKind::FileDeleted,
                libc::ELOOP => return StorageErrorKind::Refused,
                _ => {}
            }
        }
        match e.kind() {
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => StorageErrorKind::NoSpace,
            io::ErrorKind::PermissionDenied => StorageErrorKind::PermissionDenied,
            io::ErrorKind::ReadOnlyFilesystem => StorageErrorKind::ReadOnly,
            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => StorageErrorKind::NotFound,
            io::ErrorKind::StaleNetworkFileHandle => StorageErrorKind::FileDeleted,
            io::ErrorKind::UnexpectedEof => StorageErrorKind::Truncated,
            _ => StorageErrorKind::Io,
        }
    }

    /// True when the user can fix the cause outside ratorrent and then resume: free space,
    /// fix permissions, remount read-write, restore moved or deleted files. False for
    /// [`StorageErrorKind::Refused`] (the torrent or the folder layout must change) and
    /// [`StorageErrorKind::Io`] (the disk itself reported an error).
    pub fn is_recoverable_by_user(self) -> bool {
        !matches!(self, StorageErrorKind::Refused | StorageErrorKind::Io)
    }

    /// True when data already verified may be gone or changed, so resuming must start with a
    /// re-check of the files (and [`super::Storage::close_all`] so they are opened afresh):
    /// `NotFound`, `FileDeleted`, `Truncated`. For `NoSpace`, `PermissionDenied` and
    /// `ReadOnly` verified data is intact: resuming only has to re-fetch the pieces that
    /// failed.
    pub fn needs_recheck(self) -> bool {
        matches!(
            self,
            StorageErrorKind::NotFound
                | StorageErrorKind::FileDeleted
                | StorageErrorKind::Truncated
        )
    }

    /// What the user can do, as a short imperative phrase for the UI (no trailing period).
    pub fn hint(self) -> &'static str {
        match self {
            StorageErrorKind::NoSpace => "free some disk space, then resume",
            StorageErrorKind::PermissionDenied => "check the folder's owner and mode",
            StorageErrorKind::ReadOnly => {
                "remount the disk read-write or choose another download folder"
            }
            StorageErrorKind::NotFound => {
                "the file or folder was moved or deleted: put it back, then re-check"
            }
            StorageErrorKind::FileDeleted => {
                "the file was deleted or replaced while in use: restore it, then re-check"
            }
            StorageErrorKind::Truncated => {
                "the file is shorter than the torrent: restore it, then re-check"
            }
            StorageErrorKind::Refused => {
                "the torrent or a symbolic link points outside the download folder"
            }
            StorageErrorKind::Io => "the disk reported an error: check it, then re-check",
        }
    }
}

impl fmt::Display for StorageErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StorageErrorKind::NoSpace => "no space left",
            StorageErrorKind::PermissionDenied => "permission denied",
            StorageErrorKind::ReadOnly => "read-only",
            StorageErrorKind::NotFound => "not found",
            StorageErrorKind::FileDeleted => "file deleted",
            StorageErrorKind::Truncated => "file truncated",
            StorageErrorKind::Refused => "refused",
            StorageErrorKind::Io => "I/O error",
        })
    }
}

/// A storage failure, naming the file involved. `Display` gives a complete sentence for the
/// user: what happened, doing what, to which file, and (in parentheses) what to do.
///
/// `Clone` re-creates the OS error from its `errno` (or kind and message), so an error can
/// be both reported at once and kept.
#[derive(Debug)]
pub enum StorageError {
    /// A path that is absolute or has `..`/root/prefix components (defence in depth).
    UnsafePath(PathBuf),
    /// A directory on the way resolves (through a symlink) outside the download directory.
    Escapes {
        /// The file we were about to create.
        path: PathBuf,
    },
    /// The files do not tile the payload: file `index` does not start where the previous
    /// one ended, ends past 2^64 bytes, or the lengths do not add up to the payload size.
    BadLayout {
        /// Index of the offending file (the file count when the total is wrong).
        index: usize,
        /// What does not add up, with the numbers (bytes).
        problem: String,
    },
    /// An OS error on a file or folder.
    Io {
        /// What we were doing, as a verb in -ing form: "creating", [`CREATING_SAVE_FOLDER`], "opening", "reading",
        /// "writing", "checking", "extending", "truncating", "resolving", "mapping",
        /// "preallocating".
        op: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The OS error. For a write to a file that could only be opened read-only this is
        /// the error the read-write open gave (`EACCES`, `EPERM` or `EROFS`).
        source: io::Error,
    },
    /// A file we had open was unlinked, or its path now names another file.
    FileDeleted {
        /// The file.
        path: PathBuf,
    },
    /// A file is shorter than the torrent needs.
    Truncated {
        /// The file.
        path: PathBuf,
        /// Its length on disk, bytes.
        length: u64,
        /// The length the read (or the torrent) needs, bytes.
        needed: u64,
    },
    /// A read or write past the end of the payload.
    OutOfRange {
        /// Payload offset, bytes.
        offset: u64,
        /// Length, bytes.
        len: u64,
        /// Payload size, bytes.
        total: u64,
    },
    /// No disk thread could be started.
    NoDiskThread(io::Error),
    /// The file system cannot do what a setting asks (e.g. `fallocate` for full
    /// preallocation). Kind [`StorageErrorKind::Io`]; the message names the setting to
    /// change.
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What the file system cannot do, e.g. "preallocate files (fallocate)".
        what: &'static str,
        /// The config setting that avoids it, e.g. `preallocate = "sparse"`.
        setting: &'static str,
    },
}

/// Copy an `io::Error` (which is not `Clone`): same errno, or same kind and message.
pub(crate) fn clone_io(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

impl Clone for StorageError {
    fn clone(&self) -> Self {
        match self {
            StorageError::UnsafePath(p) => StorageError::UnsafePath(p.clone()),
            StorageError::Escapes { path } => StorageError::Escapes { path: path.clone() },
            StorageError::BadLayout { index, problem } => StorageError::BadLayout {
                index: *index,
                problem: problem.clone(),
            },
            StorageError::Io { op, path, source } => StorageError::Io {
                op,
                path: path.clone(),
                source: clone_io(source),
            },
            StorageError::FileDeleted { path } => StorageError::FileDeleted { path: path.clone() },
            StorageError::Truncated {
                path,
                length,
                needed,
            } => StorageError::Truncated {
                path: path.clone(),
                length: *length,
                needed: *needed,
            },
            StorageError::OutOfRange { offset, len, total } => StorageError::OutOfRange {
                offset: *offset,
                len: *len,
                total: *total,
            },
            StorageError::NoDiskThread(e) => StorageError::NoDiskThread(clone_io(e)),
            StorageError::Unsupported {
                path,
                what,
                setting,
            } => StorageError::Unsupported {
                path: path.clone(),
                what,
                setting,
            },
        }
    }
}

impl StorageError {
    /// The class of this failure (see [`StorageErrorKind`] for the mapping).
    pub fn kind(&self) -> StorageErrorKind {
        match self {
            StorageError::UnsafePath(_)
            | StorageError::Escapes { .. }
            | StorageError::BadLayout { .. } => StorageErrorKind::Refused,
            StorageError::Io { source, .. } => StorageErrorKind::from_io(source),
            StorageError::FileDeleted { .. } => StorageErrorKind::FileDeleted,
            StorageError::Truncated { .. } => StorageErrorKind::Truncated,
            StorageError::OutOfRange { .. }
            | StorageError::NoDiskThread(_)
            | StorageError::Unsupported { .. } => StorageErrorKind::Io,
        }
    }

    /// True when the error means "the data is not there" (file missing or short): a piece
    /// check treats it as a missing piece rather than a failure.
    pub fn is_missing_data(&self) -> bool {
        matches!(
            self.kind(),
            StorageErrorKind::NotFound | StorageErrorKind::Truncated
        )
    }

    /// True when the save folder (or a move's target folder) could not be created because a
    /// folder above it is not there and cannot be made (`ENOENT`, `ENOTDIR` with op
    /// [`CREATING_SAVE_FOLDER`], e.g. a save folder under `/proc`): nothing was moved or
    /// deleted, the folder must change. A file or subfolder that cannot be created because
    /// the save folder vanished is not this (its files are missing).
    pub fn is_folder_not_created(&self) -> bool {
        matches!(self, StorageError::Io { op: CREATING_SAVE_FOLDER, source, .. }
            if StorageErrorKind::from_io(source) == StorageErrorKind::NotFound)
    }

    /// What the user can do about this error, a short imperative phrase (no trailing
    /// period): the kind's [`StorageErrorKind::hint`], except for a folder that could not
    /// be created ([`StorageError::is_folder_not_created`]), where putting files back
    /// makes no sense.
    pub fn hint(&self) -> &'static str {
        if self.is_folder_not_created() {
            FOLDER_NOT_CREATED_HINT
        } else {
            self.kind().hint()
        }
    }

    /// The file or folder the error is about, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            StorageError::UnsafePath(path)
            | StorageError::Escapes { path }
            | StorageError::Io { path, .. }
            | StorageError::FileDeleted { path }
            | StorageError::Truncated { path, .. }
            | StorageError::Unsupported { path, .. } => Some(path),
            StorageError::BadLayout { .. }
            | StorageError::OutOfRange { .. }
            | StorageError::NoDiskThread(_) => None,
        }
    }
}

/// [`StorageError::Io`]'s `op` when creating the save folder itself (with its parents).
pub const CREATING_SAVE_FOLDER: &str = "creating the save folder";

/// [`StorageError::hint`] for a folder that could not be created.
pub const FOLDER_NOT_CREATED_HINT: &str =
    "choose another folder with m (move), or create it and resume";

/// What an OS error is, in words, for the message "{what} {op} {path} ({hint})".
fn describe_io(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => "no space left on the disk".into(),
        Some(libc::EDQUOT) => "disk quota exceeded".into(),
        Some(libc::EACCES | libc::EPERM) => "permission denied".into(),
        Some(libc::EROFS) => "read-only file system".into(),
        Some(libc::EBADF) => "file opened read-only".into(),
        Some(libc::ENOENT) => "no such file or folder".into(),
        Some(libc::ENOTDIR) => "a folder on the way is not a folder".into(),
        Some(libc::ESTALE) => "stale file handle (the file was deleted)".into(),
        Some(libc::ELOOP) => "refusing a symbolic link".into(),
        _ => match StorageErrorKind::from_io(e) {
            StorageErrorKind::Io => format!("error ({e})"),
            StorageErrorKind::NoSpace => "no space left on the disk".into(),
            kind => format!("{kind} ({e})"),
        },
    }
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hint = self.hint();
        match self {
            StorageError::UnsafePath(p) => write!(
                f,
                "refusing unsafe path {} (outside the download folder)",
                p.display()
            ),
            StorageError::Escapes { path } => write!(
                f,
                "refusing {}: its folder resolves outside the download folder ({hint})",
                path.display()
            ),
            StorageError::BadLayout { index, problem } => {
                write!(f, "impossible file layout: file {index} {problem}")
            }
            StorageError::Io { op, path, source } => {
                write!(
                    f,
                    "{} {op} {} ({hint})",
                    describe_io(source),
                    path.display()
                )
            }
            StorageError::FileDeleted { path } => write!(
                f,
                "{} was deleted or replaced while the torrent had it open ({hint})",
                path.display()
            ),
            StorageError::Truncated {
                path,
                length,
                needed,
            } => write!(
                f,
                "{} is too short: {length} bytes on disk, the torrent needs {needed} ({hint})",
                path.display()
            ),
            StorageError::OutOfRange { offset, len, total } => write!(
                f,
                "byte range {offset}+{len} is outside the payload ({total} bytes)"
            ),
            StorageError::NoDiskThread(e) => write!(f, "cannot start a disk thread: {e}"),
            StorageError::Unsupported {
                path,
                what,
                setting,
            } => write!(
                f,
                "the file system of {} cannot {what} (set {setting} in the config)",
                path.display()
            ),
        }
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StorageError::Io { source, .. } | StorageError::NoDiskThread(source) => Some(source),
            _ => None,
        }
    }
}

/// An [`StorageError::Io`].
pub(crate) fn io_err(op: &'static str, path: &Path, source: io::Error) -> StorageError {
    StorageError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(code: i32) -> io::Error {
        io::Error::from_raw_os_error(code)
    }

    #[test]
    fn os_errors_map_to_kinds() {
        use StorageErrorKind as K;
        for (code, kind) in [
            (libc::ENOSPC, K::NoSpace),
            (libc::EDQUOT, K::NoSpace),
            (libc::EACCES, K::PermissionDenied),
            (libc::EPERM, K::PermissionDenied),
            (libc::EROFS, K::ReadOnly),
            (libc::EBADF, K::ReadOnly),
            (libc::ENOENT, K::NotFound),
            (libc::ENOTDIR, K::NotFound),
            (libc::ESTALE, K::FileDeleted),
            (libc::ELOOP, K::Refused),
            (libc::EIO, K::Io),
            (libc::EISDIR, K::Io),
        ] {
            assert_eq!(K::from_io(&raw(code)), kind, "errno {code}");
            let e = io_err("writing", Path::new("/x/y"), raw(code));
            assert_eq!(e.kind(), kind, "errno {code}");
            assert_eq!(e.clone().kind(), kind, "clone keeps errno {code}");
        }
        // synthetic errors without an errno map by kind
        for (k, kind) in [
            (io::ErrorKind::NotFound, K::NotFound),
            (io::ErrorKind::PermissionDenied, K::PermissionDenied),
            (io::ErrorKind::StorageFull, K::NoSpace),
            (io::ErrorKind::ReadOnlyFilesystem, K::ReadOnly),
            (io::ErrorKind::UnexpectedEof, K::Truncated),
            (io::ErrorKind::Other, K::Io),
        ] {
            assert_eq!(K::from_io(&io::Error::new(k, "x")), kind, "{k:?}");
        }
    }

    #[test]
    fn messages_say_what_happened_in_user_terms() {
        let e = io_err("writing", Path::new("/x/y"), raw(libc::EACCES));
        assert_eq!(
            e.to_string(),
            "permission denied writing /x/y (check the folder's owner and mode)"
        );
        let e = io_err("writing", Path::new("/x/y"), raw(libc::ENOSPC));
        assert_eq!(
            e.to_string(),
            "no space left on the disk writing /x/y (free some disk space, then resume)"
        );
        let e = io_err("writing", Path::new("/x/y"), raw(libc::EDQUOT));
        assert!(
            e.to_string()
                .starts_with("disk quota exceeded writing /x/y")
        );
        let e = io_err("writing", Path::new("/x/y"), raw(libc::EROFS));
        assert!(
            e.to_string()
                .starts_with("read-only file system writing /x/y (")
        );
        let e = io_err("writing", Path::new("/x/y"), raw(libc::EBADF));
        assert!(
            e.to_string()
                .starts_with("file opened read-only writing /x/y")
        );
        assert!(!e.to_string().contains("Bad file descriptor"));
        let e = StorageError::FileDeleted {
            path: "/x/y".into(),
        };
        assert!(
            e.to_string().contains("/x/y was deleted or replaced"),
            "{e}"
        );
        let e = StorageError::Truncated {
            path: "/x/y".into(),
            length: 10,
            needed: 20,
        };
        assert!(e.to_string().contains("10 bytes on disk"), "{e}");
        let e = io_err("writing", Path::new("/x/y"), raw(libc::EIO));
        assert!(e.to_string().contains("/x/y"), "{e}");
        assert!(e.to_string().contains("os error 5"), "{e}");
    }

    #[test]
    fn kinds_say_what_the_user_can_do() {
        use StorageErrorKind as K;
        for k in [
            K::NoSpace,
            K::PermissionDenied,
            K::ReadOnly,
            K::NotFound,
            K::FileDeleted,
            K::Truncated,
        ] {
            assert!(k.is_recoverable_by_user(), "{k:?}");
            assert!(!k.hint().is_empty());
        }
        assert!(!K::Io.is_recoverable_by_user());
        assert!(!K::Refused.is_recoverable_by_user());
        assert!(K::FileDeleted.needs_recheck() && K::Truncated.needs_recheck());
        assert!(!K::NoSpace.needs_recheck() && !K::PermissionDenied.needs_recheck());
    }

    #[test]
    fn missing_data_is_not_found_or_truncated() {
        assert!(io_err("reading", Path::new("/a"), raw(libc::ENOENT)).is_missing_data());
        assert!(
            StorageError::Truncated {
                path: "/a".into(),
                length: 0,
                needed: 1
            }
            .is_missing_data()
        );
        assert!(!io_err("reading", Path::new("/a"), raw(libc::EACCES)).is_missing_data());
        assert!(!StorageError::FileDeleted { path: "/a".into() }.is_missing_data());
    }

    #[test]
    fn a_folder_that_cannot_be_created_is_told_apart_from_a_missing_file() {
        let create = io_err(
            CREATING_SAVE_FOLDER,
            Path::new("/proc/xx"),
            raw(libc::ENOENT),
        );
        assert!(create.is_folder_not_created());
        assert_eq!(create.kind(), StorageErrorKind::NotFound);
        assert_eq!(create.hint(), FOLDER_NOT_CREATED_HINT);
        let text = create.to_string();
        assert!(
            text.contains("/proc/xx") && text.contains("m (move)") && !text.contains("put it back"),
            "{text}"
        );
        let gone = io_err("opening", Path::new("/dl/a.bin"), raw(libc::ENOENT));
        assert!(!gone.is_folder_not_created());
        assert!(gone.to_string().contains("put it back"), "{gone}");
        let denied = io_err(
            CREATING_SAVE_FOLDER,
            Path::new("/root/x"),
            raw(libc::EACCES),
        );
        assert!(!denied.is_folder_not_created());
        // a file inside a save folder that vanished: its files are missing, not the folder
        let inside = io_err("creating", Path::new("/dl/sub"), raw(libc::ENOENT));
        assert!(!inside.is_folder_not_created());
    }
}
