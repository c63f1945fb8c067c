//! One open file of a torrent and what is known about it: its identity ([`FileId`]), whether
//! it could only be opened read-only and why, whether it was sized for writing, and in `mmap`
//! mode its [`Mapping`]. The types the handle cache ([`super::handles`]) and the two I/O back
//! ends ([`super::backend`]) share, so neither imports the other.

use std::collections::HashSet;
use std::fmt;
use std::fs::File;
use std::io;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};

use memmap2::MmapRaw;

/// A file's memory map (shared, read-write when the file was opened read-write). Made by
/// [`super::backend`] on first access in `mmap` mode and kept in the file's [`Handle`].
pub(crate) struct Mapping {
    raw: MmapRaw,
    /// Bytes mapped (from offset 0).
    len: u64,
    writable: bool,
}

impl Mapping {
    /// Wrap `raw`, a mapping of the first `len` bytes of a file (`writable`: mapped
    /// read-write).
    pub(crate) fn new(raw: MmapRaw, len: u64, writable: bool) -> Mapping {
        Mapping { raw, len, writable }
    }

    /// The first mapped byte.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.raw.as_mut_ptr()
    }

    /// Whether it covers bytes `..need` and allows writing when `write` is asked for.
    pub(crate) fn covers(&self, need: u64, write: bool) -> bool {
        self.len >= need && (self.writable || !write)
    }
}

/// What tells one file from another: device, inode and (where the file system records
/// it) birth time, since an inode number freed by deleting a file is soon reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
    /// Birth time in ns since the epoch; 0 where the file system has none.
    born: u64,
}

impl FileId {
    /// The identity of the file `m` describes.
    pub(crate) fn of(m: &std::fs::Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        let born = m
            .created()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        FileId {
            dev: m.dev(),
            ino: m.ino(),
            born,
        }
    }
}

/// An open file and what we know about it.
pub(crate) struct Handle {
    pub(crate) file: File,
    /// `Some(e)`: the read-write open failed with `e` (`EACCES`, `EPERM`, `EROFS`) and this
    /// handle is read-only; a write reports `e`.
    pub(crate) read_only: Option<io::Error>,
    /// The file's identity when opened, compared with its path's.
    pub(crate) id: FileId,
    /// Set once the file was made ready for writing through this handle (cut to the
    /// torrent's length, and in `mmap` mode or with full preallocation, extended to it).
    pub(crate) sized: AtomicBool,
    /// `mmap` mode: the file's mapping, made on first access and replaced by a longer one
    /// when the file grows. Shared, so an access in flight keeps its mapping alive.
    pub(crate) map: RwLock<Option<Arc<Mapping>>>,
    /// `mmap` mode: 4 MiB regions already `fallocate`d for writing through the map.
    pub(crate) reserved: Mutex<HashSet<u64>>,
    /// The whole file is allocated (full preallocation): nothing to reserve per write.
    pub(crate) reserved_all: AtomicBool,
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("file", &self.file)
            .field("read_only", &self.read_only.is_some())
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Handle {
    /// A handle for `file` (already checked to be a regular file with this identity).
    pub(crate) fn new(file: File, read_only: Option<io::Error>, id: FileId) -> Handle {
        Handle {
            file,
            read_only,
            id,
            sized: AtomicBool::new(false),
            map: RwLock::new(None),
            reserved: Mutex::new(HashSet::new()),
            reserved_all: AtomicBool::new(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memmap2::MmapOptions;
    use std::sync::atomic::Ordering;

    #[test]
    fn file_id_tells_files_apart_and_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"a").unwrap();
        std::fs::write(&b, b"b").unwrap();
        let id_a = FileId::of(&std::fs::metadata(&a).unwrap());
        let again = FileId::of(&File::open(&a).unwrap().metadata().unwrap());
        assert_eq!(id_a, again, "the same file through a path and a handle");
        assert_ne!(id_a, FileId::of(&std::fs::metadata(&b).unwrap()));
        // a rename keeps the file; a new file at the old path is another one
        let c = dir.path().join("c");
        std::fs::rename(&a, &c).unwrap();
        assert_eq!(FileId::of(&std::fs::metadata(&c).unwrap()), id_a);
        std::fs::write(&a, b"new").unwrap();
        assert_ne!(FileId::of(&std::fs::metadata(&a).unwrap()), id_a);
    }

    #[test]
    fn a_new_handle_is_unsized_unmapped_and_unreserved() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"xyz").unwrap();
        let file = File::open(&p).unwrap();
        let id = FileId::of(&file.metadata().unwrap());
        let why = io::Error::from_raw_os_error(libc::EROFS);
        let h = Handle::new(file, Some(why), id);
        assert_eq!(h.id, id);
        assert_eq!(
            h.read_only.as_ref().unwrap().raw_os_error(),
            Some(libc::EROFS)
        );
        assert!(!h.sized.load(Ordering::Acquire));
        assert!(!h.reserved_all.load(Ordering::Acquire));
        assert!(h.map.read().unwrap().is_none());
        assert!(h.reserved.lock().unwrap().is_empty());
        assert!(format!("{h:?}").contains("read_only: true"));
    }

    #[test]
    fn a_mapping_covers_what_it_maps_and_writes_only_when_writable() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, [7u8; 8192]).unwrap();
        let file = File::open(&p).unwrap();
        let raw = MmapOptions::new()
            .len(4096)
            .map_raw_read_only(&file)
            .unwrap();
        let m = Mapping::new(raw, 4096, false);
        assert!(m.covers(4096, false));
        assert!(!m.covers(4097, false), "past the mapped length");
        assert!(!m.covers(1, true), "read-only mapping refuses a write");
        // SAFETY: the mapping is 4096 bytes of a file of 8192 bytes that nobody truncates.
        assert_eq!(unsafe { *m.ptr().add(4095) }, 7);
        let rw = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        let m = Mapping::new(
            MmapOptions::new().len(8192).map_raw(&rw).unwrap(),
            8192,
            true,
        );
        assert!(m.covers(8192, true));
    }
}
