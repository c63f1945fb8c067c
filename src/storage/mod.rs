//! Piece storage: the torrent's payload mapped onto files, with positioned I/O.
//!
//! The payload is the concatenation of the torrent's files (BEP 3); a piece or block may
//! span several files. Reads and writes use `pread`/`pwrite` (`FileExt::read_exact_at` /
//! `write_all_at`), so concurrent workers never race on a file cursor. Files are created
//! sparse (`set_len`), padding files (BEP 47) are never created: they read as zeros and
//! writes to them are dropped.
//!
//! Safety: every file path must be relative with only normal components (the metainfo
//! parser guarantees it; this module checks again), each parent directory must resolve
//! inside the download directory after symlinks, and the file itself is opened with
//! `O_NOFOLLOW`, so nothing is ever written outside the download directory.

pub mod check;
pub mod disk;

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use thiserror::Error;

/// A storage failure, naming the file involved.
#[derive(Debug, Error)]
pub enum StorageError {
    /// A path that is absolute or has `..`/root/prefix components (defence in depth).
    #[error("refusing unsafe path {0:?} (outside the download directory)")]
    UnsafePath(PathBuf),
    /// A directory on the way resolves (through a symlink) outside the download directory.
    #[error("refusing {path:?}: its directory resolves outside the download directory")]
    Escapes {
        /// The file we were about to create.
        path: PathBuf,
    },
    /// An I/O error on a file.
    #[error("{op} {path:?}: {source}")]
    Io {
        /// What we were doing: "create", "open", "read", "write".
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A read or write past the end of the payload.
    #[error("byte range {offset}+{len} is outside the payload ({total} bytes)")]
    OutOfRange {
        /// Payload offset, bytes.
        offset: u64,
        /// Length, bytes.
        len: u64,
        /// Payload size, bytes.
        total: u64,
    },
}

impl StorageError {
    /// True when the error means "the data is not there" (file missing or short): a piece
    /// check treats it as a missing piece rather than a failure.
    pub fn is_missing_data(&self) -> bool {
        matches!(self, StorageError::Io { source, .. }
            if matches!(source.kind(), io::ErrorKind::NotFound | io::ErrorKind::UnexpectedEof))
    }
}

/// One file of the payload.
#[derive(Debug)]
pub struct FileSlot {
    /// Absolute path: download directory joined with the torrent's relative path.
    pub path: PathBuf,
    /// Byte offset of the file within the payload.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// BEP 47 padding file: zeros, never on disk.
    pub pad: bool,
    handle: OnceLock<File>,
}

/// A torrent's payload on disk.
#[derive(Debug)]
pub struct Storage {
    root: PathBuf,
    files: Vec<FileSlot>,
    total_length: u64,
}

/// A file to place: relative path, payload offset (bytes), length (bytes), padding flag.
pub type FileSpec = (PathBuf, u64, u64, bool);

impl Storage {
    /// Map files onto the payload under `root` (the download directory).
    /// `files` are in payload order; their lengths must add up to `total_length`.
    ///
    /// # Errors
    /// [`StorageError::UnsafePath`] for a path that is not relative and normal.
    pub fn new(
        root: &Path,
        files: impl IntoIterator<Item = FileSpec>,
        total_length: u64,
    ) -> Result<Storage, StorageError> {
        let mut slots = Vec::new();
        for (rel, offset, length, pad) in files {
            if rel.as_os_str().is_empty()
                || !rel.components().all(|c| matches!(c, Component::Normal(_)))
            {
                return Err(StorageError::UnsafePath(rel));
            }
            slots.push(FileSlot {
                path: root.join(&rel),
                offset,
                length,
                pad,
                handle: OnceLock::new(),
            });
        }
        Ok(Storage {
            root: root.to_path_buf(),
            files: slots,
            total_length,
        })
    }

    /// The files, in payload order.
    pub fn files(&self) -> &[FileSlot] {
        &self.files
    }

    /// Payload size in bytes (padding included).
    pub fn total_length(&self) -> u64 {
        self.total_length
    }

    /// True if any non-padding file with a non-zero length already exists with data, i.e.
    /// there may be verified pieces to find by checking.
    pub fn any_data_present(&self) -> bool {
        self.files.iter().any(|f| {
            !f.pad
                && f.length > 0
                && std::fs::symlink_metadata(&f.path).is_ok_and(|m| m.is_file() && m.len() > 0)
        })
    }

    /// Create every directory and file (sparse, extended to its length if shorter; existing
    /// data is never truncated). Zero-length files are created too.
    ///
    /// # Errors
    /// I/O errors, or [`StorageError::Escapes`] when a directory resolves outside `root`.
    pub fn create_files(&self) -> Result<(), StorageError> {
        std::fs::create_dir_all(&self.root).map_err(|e| io_err("create", &self.root, e))?;
        for slot in self.files.iter().filter(|f| !f.pad) {
            let file = self.open(slot)?;
            let len = file
                .metadata()
                .map_err(|e| io_err("stat", &slot.path, e))?
                .len();
            if len < slot.length {
                file.set_len(slot.length)
                    .map_err(|e| io_err("extend", &slot.path, e))?;
            }
        }
        Ok(())
    }

    fn open<'a>(&self, slot: &'a FileSlot) -> Result<&'a File, StorageError> {
        if let Some(f) = slot.handle.get() {
            return Ok(f);
        }
        let parent = slot.path.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(parent).map_err(|e| io_err("create", parent, e))?;
        let root = self
            .root
            .canonicalize()
            .map_err(|e| io_err("resolve", &self.root, e))?;
        let real_parent = parent
            .canonicalize()
            .map_err(|e| io_err("resolve", parent, e))?;
        if !real_parent.starts_with(&root) {
            return Err(StorageError::Escapes {
                path: slot.path.clone(),
            });
        }
        let rw = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&slot.path);
        let file = match rw {
            Ok(f) => f,
            // read-only data (e.g. seeding from a read-only mount)
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&slot.path)
                .map_err(|e| io_err("open", &slot.path, e))?,
            Err(e) => return Err(io_err("open", &slot.path, e)),
        };
        Ok(slot.handle.get_or_init(|| file))
    }

    /// Open for reading only if the file exists (never creates it).
    fn open_existing<'a>(&self, slot: &'a FileSlot) -> Result<&'a File, StorageError> {
        if let Some(f) = slot.handle.get() {
            return Ok(f);
        }
        let meta =
            std::fs::symlink_metadata(&slot.path).map_err(|e| io_err("open", &slot.path, e))?;
        if !meta.is_file() {
            return Err(io_err(
                "open",
                &slot.path,
                io::Error::new(io::ErrorKind::NotFound, "not a regular file"),
            ));
        }
        self.open(slot)
    }

    /// Call `f(slot, file_offset, range_in_buffer)` for each file segment of payload range
    /// `offset..offset+len`, in order.
    fn for_each_segment(
        &self,
        offset: u64,
        len: usize,
        mut f: impl FnMut(&FileSlot, u64, std::ops::Range<usize>) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let end = offset
            .checked_add(len as u64)
            .filter(|&e| e <= self.total_length)
            .ok_or(StorageError::OutOfRange {
                offset,
                len: len as u64,
                total: self.total_length,
            })?;
        // first file whose end is past `offset`
        let mut i = self
            .files
            .partition_point(|s| s.offset + s.length <= offset);
        let mut pos = offset;
        while pos < end && i < self.files.len() {
            let slot = &self.files[i];
            i += 1;
            if slot.length == 0 {
                continue;
            }
            let seg_end = end.min(slot.offset + slot.length);
            let a = (pos - offset) as usize;
            let b = (seg_end - offset) as usize;
            f(slot, pos - slot.offset, a..b)?;
            pos = seg_end;
        }
        Ok(())
    }

    /// Write `data` at payload offset `offset` (bytes). Padding segments are skipped.
    ///
    /// # Errors
    /// I/O errors (disk full, permissions) naming the file; `OutOfRange`.
    pub fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), StorageError> {
        self.for_each_segment(offset, data.len(), |slot, at, range| {
            if slot.pad {
                return Ok(());
            }
            self.open(slot)?
                .write_all_at(&data[range], at)
                .map_err(|e| io_err("write", &slot.path, e))
        })
    }

    /// Fill `buf` from payload offset `offset` (bytes). Padding reads as zeros. A file that
    /// does not exist is an error for which [`StorageError::is_missing_data`] is true.
    ///
    /// # Errors
    /// I/O errors naming the file; `OutOfRange`.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        self.for_each_segment(offset, buf.len(), |slot, at, range| {
            if slot.pad {
                buf[range].fill(0);
                return Ok(());
            }
            self.open_existing(slot)?
                .read_exact_at(&mut buf[range], at)
                .map_err(|e| io_err("read", &slot.path, e))
        })
    }
}

fn io_err(op: &'static str, path: &Path, source: io::Error) -> StorageError {
    StorageError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Vec<FileSpec> {
        vec![
            ("t/a.bin".into(), 0, 10_000, false),
            ("t/.pad/6384".into(), 10_000, 6_384, true),
            ("t/empty".into(), 16_384, 0, false),
            ("t/sub/b.bin".into(), 16_384, 20_000, false),
            ("t/c.bin".into(), 36_384, 5, false),
        ]
    }

    #[test]
    fn writes_span_files_and_skip_pads() {
        let dir = tempfile::tempdir().unwrap();
        let st = Storage::new(dir.path(), layout(), 36_389).unwrap();
        st.create_files().unwrap();
        assert!(dir.path().join("t/empty").exists());
        assert!(!dir.path().join("t/.pad").exists());
        let data: Vec<u8> = (0..36_389u32).map(|i| (i % 251) as u8).collect();
        // write in odd-sized chunks crossing every boundary
        let mut off = 0;
        for chunk in data.chunks(7_001) {
            st.write_at(off, chunk).unwrap();
            off += chunk.len() as u64;
        }
        let a = std::fs::read(dir.path().join("t/a.bin")).unwrap();
        assert_eq!(a, data[..10_000]);
        let b = std::fs::read(dir.path().join("t/sub/b.bin")).unwrap();
        assert_eq!(b, data[16_384..36_384]);
        let c = std::fs::read(dir.path().join("t/c.bin")).unwrap();
        assert_eq!(c, data[36_384..]);
        let mut back = vec![1u8; 36_389];
        st.read_at(0, &mut back).unwrap();
        assert_eq!(&back[..10_000], &data[..10_000]);
        assert!(
            back[10_000..16_384].iter().all(|&x| x == 0),
            "pad reads as zeros"
        );
        assert_eq!(&back[16_384..], &data[16_384..]);
    }

    #[test]
    fn out_of_range_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let st = Storage::new(dir.path(), layout(), 36_389).unwrap();
        assert!(matches!(
            st.write_at(36_389, b"x"),
            Err(StorageError::OutOfRange { .. })
        ));
        assert!(matches!(
            st.write_at(u64::MAX, b"x"),
            Err(StorageError::OutOfRange { .. })
        ));
        let mut b = [0u8; 2];
        assert!(matches!(
            st.read_at(36_388, &mut b),
            Err(StorageError::OutOfRange { .. })
        ));
    }

    #[test]
    fn missing_file_reads_as_missing_data() {
        let dir = tempfile::tempdir().unwrap();
        let st = Storage::new(dir.path(), layout(), 36_389).unwrap();
        let mut b = [0u8; 10];
        let e = st.read_at(0, &mut b).unwrap_err();
        assert!(e.is_missing_data(), "{e}");
        assert!(
            !dir.path().join("t/a.bin").exists(),
            "reading never creates files"
        );
        assert!(!st.any_data_present());
    }

    #[test]
    fn unsafe_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["../x", "/etc/passwd", "a/../../x", "", "./a/../.."] {
            let r = Storage::new(dir.path(), vec![(PathBuf::from(bad), 0, 1, false)], 1);
            assert!(matches!(r, Err(StorageError::UnsafePath(_))), "{bad:?}");
        }
    }

    #[test]
    fn symlinked_directory_escaping_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("t")).unwrap();
        let st = Storage::new(dir.path(), vec![("t/evil".into(), 0, 4, false)], 4).unwrap();
        assert!(matches!(
            st.write_at(0, b"evil"),
            Err(StorageError::Escapes { .. })
        ));
        assert!(!outside.path().join("evil").exists());
    }

    #[test]
    fn symlinked_file_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("victim");
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("f")).unwrap();
        let st = Storage::new(dir.path(), vec![("f".into(), 0, 4, false)], 4).unwrap();
        assert!(st.write_at(0, b"evil").is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }

    #[test]
    fn existing_longer_file_is_not_truncated() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![7u8; 100]).unwrap();
        let st = Storage::new(dir.path(), vec![("f".into(), 0, 10, false)], 10).unwrap();
        st.create_files().unwrap();
        assert_eq!(std::fs::metadata(dir.path().join("f")).unwrap().len(), 100);
        assert!(st.any_data_present());
    }
}
