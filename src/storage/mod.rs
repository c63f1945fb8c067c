//! Piece storage: the torrent's payload mapped onto files.
//!
//! The payload is the concatenation of the torrent's files (BEP 3); a piece or block may
//! span several files. [`Storage`] routes a payload range to its files, the part file and
//! padding; the bytes then reach each file through one of two back ends ([`StorageMode`]):
//! positioned I/O (`pread`/`pwrite`, so concurrent workers never race on a file cursor) or
//! memory maps (see [`backend`] for how `mmap` mode avoids `SIGBUS` and what race remains).
//! Padding files (BEP 47) are never created: they read as zeros and writes to them are
//! dropped.
//!
//! Safety: every file path must be relative with only normal components (the metainfo
//! parser guarantees it; this module checks again), each directory on the way is created
//! one level at a time and must resolve inside the download directory after symlinks, and
//! the file itself is opened with `O_NOFOLLOW`, so nothing is ever written outside the
//! download directory.
//!
//! Lazy creation: nothing is created on disk by [`Storage::new`], by checking or by reading.
//! The download directory is created by [`Storage::prepare_root`] (the engine calls it when
//! the torrent starts downloading) or [`Storage::create_files`]; if it disappears later, I/O
//! fails with [`StorageErrorKind::NotFound`] instead of silently starting over in a new,
//! empty folder. A file is created by the first write to it (sparse; fully allocated with
//! [`Preallocate::Full`]); zero-length files by [`Storage::create_empty_files`] (the engine
//! calls it when the torrent completes).
//!
//! Handles: a file is opened on first use and its handle kept in the session's
//! [`HandleCache`], which closes the least recently used handles beyond its cap. Reading
//! opens an existing file read-write without creating it (read-only if the OS refuses write
//! access, e.g. seeding from a read-only mount); writing creates it. A handle remembers
//! whether it is read-only and why, so a write to it reports `permission denied writing
//! <file>` rather than a bare `EBADF`. The identity (device, inode, birth time) of each file is kept
//! across re-opens: a file deleted or replaced while the torrent uses it is
//! [`StorageErrorKind::FileDeleted`], whether its handle is open or was closed by the cache
//! ([`Storage::verify_files_present`]; a deleted download folder leaves open handles
//! writing into unlinked files). [`Storage::close_all`] drops every handle and forgets the
//! identities (for resuming after the user fixed something, and before re-checking).
//!
//! Skipped files: a file set to skip that does not exist yet is never created; the bytes of
//! it that a downloaded piece holds (a piece it shares with a wanted file) go to the
//! torrent's [`part_file::PartFile`] and come back from there, and move into the file when
//! it is wanted again ([`Storage::set_skipped`]). The part file's descriptor is not in the
//! handle cache (at most one per torrent with skipped files).
//!
//! Oversized files: a file longer than the torrent says is never truncated by checking
//! ([`check::check_report`] reports it and leaves the piece holding its end unverified); it
//! is truncated to its exact length the first time the torrent writes to it.

pub mod backend;
pub mod check;
pub mod disk;
mod error;
pub mod handles;
pub mod mover;
pub mod part_file;
pub mod space;

pub use error::{StorageError, StorageErrorKind};
pub use handles::{DEFAULT_MAX_OPEN_FILES, HandleCache, raise_fd_limit};

use std::fs::OpenOptions;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;

use crate::lock::MutexExt;
use error::{clone_io, io_err};
use handles::{FileId, Handle, HandleCell};

/// How payload bytes reach the files (config `storage`, command line `--storage`).
///
/// Which to pick: `file` unless there is a reason. It reports every disk problem as an
/// error (a file cut short, a failing disk), keeps the process's resident memory small,
/// and on the 1 GiB benchmarks (2 cores) it downloaded with less CPU than `mmap` (2.1 vs
/// 2.7-3.0 CPU s/GiB: a mapping takes a page fault for every 4 KiB page written) and
/// re-checked with the same CPU (0.83 s/GiB, both at the SHA-1 cost plus the page-cache
/// copy or page faults). `mmap` saves the copy and the system call per block on reads, and
/// its resident size includes the mapped payload (page cache, not anonymous memory, like
/// libtorrent 2.x); use it only for payloads no other program truncates, on local disks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageMode {
    /// Positioned I/O (`pread`/`pwrite`) through a copy in user memory. Safe on every file
    /// system and against files changed by other programs; the default.
    #[default]
    File,
    /// Memory maps (`memmap2`): no copy and no syscall per block once mapped, pages shared
    /// with the page cache. A file truncated by another program during an access can still
    /// kill the process (`SIGBUS`, see [`backend`]).
    Mmap,
}

impl std::str::FromStr for StorageMode {
    type Err = String;

    /// `"file"` or `"mmap"`.
    fn from_str(s: &str) -> Result<StorageMode, String> {
        match s {
            "file" => Ok(StorageMode::File),
            "mmap" => Ok(StorageMode::Mmap),
            other => Err(format!(
                "unknown storage mode {other:?} (expected file or mmap)"
            )),
        }
    }
}

impl std::fmt::Display for StorageMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StorageMode::File => "file",
            StorageMode::Mmap => "mmap",
        })
    }
}

/// How a file's disk space is allocated when the torrent first writes to it (config
/// `preallocate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preallocate {
    /// Sparse: blocks are allocated as data arrives (holes read as zeros). The default.
    #[default]
    Sparse,
    /// The whole file is allocated with `fallocate` on the first write to it (less
    /// fragmentation; a full disk shows at once, not mid-download). On a file system
    /// without `fallocate` the write fails with [`StorageError::Unsupported`], naming the
    /// file and the setting to change: ratorrent never writes zeros over a file that may
    /// already hold data.
    Full,
}

/// Per-torrent storage settings, and the session's handle cache.
#[derive(Debug, Clone, Default)]
pub struct StorageOptions {
    /// Positioned I/O or memory maps.
    pub mode: StorageMode,
    /// Sparse or fully allocated files.
    pub preallocate: Preallocate,
    /// The session's open-file cache (the default is [`HandleCache::process`]).
    pub handles: HandleCache,
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
    /// The open handle (in the session's cache) and the file's identity.
    cell: Arc<HandleCell>,
    /// Skipped and not on disk: its bytes live in the part file.
    to_part: AtomicBool,
    /// Written since the last [`Storage::sync_all`].
    written: AtomicBool,
}

impl FileSlot {
    /// The path's metadata if it is still the file the torrent last opened there (same
    /// device and inode; a regular file when it never opened one);
    /// [`StorageError::FileDeleted`] if that file was unlinked or replaced.
    fn check_current(&self) -> Result<std::fs::Metadata, StorageError> {
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

/// A torrent's payload on disk.
#[derive(Debug)]
pub struct Storage {
    root: PathBuf,
    files: Vec<FileSlot>,
    total_length: u64,
    opts: StorageOptions,
    /// Where skipped files' bytes go, with the piece length it slots by.
    part: Option<(part_file::PartFile, u32)>,
    /// Held while a file's bytes move between the part file and the file, and by writes to
    /// a file in the part file (so none is lost in the move).
    part_gate: std::sync::Mutex<()>,
}

/// Bytes per read when checking in `file` mode ([`check`]): small enough for the buffer to
/// stay in the CPU's cache.
pub const READ_SIZE: usize = 64 << 10;

/// A file to place: relative path, payload offset (bytes), length (bytes), padding flag.
pub type FileSpec = (PathBuf, u64, u64, bool);

impl Drop for Storage {
    fn drop(&mut self) {
        // give the session's cache its slots back at once
        for slot in &self.files {
            self.opts.handles.close(&slot.cell);
        }
    }
}

impl Storage {
    /// Map files onto the payload under `root` (the download directory), in `file` mode
    /// with sparse files and the process-wide handle cache ([`Storage::with_options`]).
    /// `files` are in payload order and must tile it: each starts where the previous one
    /// ended (the first at 0) and their lengths add up to `total_length` (bytes).
    /// Nothing is touched on disk.
    ///
    /// # Errors
    /// [`StorageError::UnsafePath`] for a path that is not relative and normal;
    /// [`StorageError::BadLayout`] for files that do not tile the payload.
    pub fn new(
        root: &Path,
        files: impl IntoIterator<Item = FileSpec>,
        total_length: u64,
    ) -> Result<Storage, StorageError> {
        Storage::with_options(root, files, total_length, StorageOptions::default())
    }

    /// [`Storage::new`] with the given mode, preallocation and handle cache.
    ///
    /// # Errors
    /// As [`Storage::new`].
    pub fn with_options(
        root: &Path,
        files: impl IntoIterator<Item = FileSpec>,
        total_length: u64,
        opts: StorageOptions,
    ) -> Result<Storage, StorageError> {
        let mut slots = Vec::new();
        let mut end = 0u64;
        for (index, (rel, offset, length, pad)) in files.into_iter().enumerate() {
            if rel.as_os_str().is_empty()
                || !rel.components().all(|c| matches!(c, Component::Normal(_)))
            {
                return Err(StorageError::UnsafePath(rel));
            }
            if offset != end {
                return Err(StorageError::BadLayout {
                    index,
                    problem: format!("starts at byte {offset}, the previous file ends at {end}"),
                });
            }
            end = offset
                .checked_add(length)
                .ok_or_else(|| StorageError::BadLayout {
                    index,
                    problem: format!("of {length} bytes at byte {offset} ends past 2^64"),
                })?;
            slots.push(FileSlot {
                path: root.join(&rel),
                offset,
                length,
                pad,
                cell: Arc::default(),
                to_part: AtomicBool::new(false),
                written: AtomicBool::new(false),
            });
        }
        if end != total_length {
            return Err(StorageError::BadLayout {
                index: slots.len(),
                problem: format!(
                    "(the end): files add up to {end} bytes, the payload is {total_length}"
                ),
            });
        }
        Ok(Storage {
            root: root.to_path_buf(),
            files: slots,
            total_length,
            opts,
            part: None,
            part_gate: std::sync::Mutex::new(()),
        })
    }

    /// Keep skipped files' bytes in a part file at `path` (inside the download folder), in
    /// slots of `piece_length` bytes for `piece_count` pieces. Nothing is created until a
    /// skipped file's bytes are written.
    pub fn with_part_file(mut self, path: PathBuf, piece_length: u32, piece_count: u32) -> Storage {
        self.part = Some((
            part_file::PartFile::new(path, piece_length, piece_count),
            piece_length,
        ));
        self
    }

    /// The storage mode in use.
    pub fn mode(&self) -> StorageMode {
        self.opts.mode
    }

    /// The download directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Skip file `index` (or want it again). Skipping a file that is not on disk routes its
    /// bytes to the part file, so it is never created; a file already on disk stays where it
    /// is. Wanting a skipped file again moves its bytes from the part file into the file
    /// (creating it). Without a part file this only records the wish.
    ///
    /// # Errors
    /// Moving the bytes failed (disk full, permissions): the file stays skipped.
    pub fn set_skipped(&self, index: usize, skip: bool) -> Result<(), StorageError> {
        let Some(slot) = self.files.get(index) else {
            return Ok(());
        };
        if slot.pad {
            return Ok(());
        }
        let _gate = self.part_gate.locked();
        let in_part = slot.to_part.load(Ordering::Acquire);
        if skip {
            if !in_part && self.part.is_some() && std::fs::symlink_metadata(&slot.path).is_err() {
                self.opts.handles.close(&slot.cell);
                slot.cell.forget();
                slot.to_part.store(true, Ordering::Release);
            }
            return Ok(());
        }
        if !in_part {
            return Ok(());
        }
        // move what the part file holds of this file into it
        if let Some((part, pl)) = &self.part {
            let pl = u64::from(*pl);
            let first = slot.offset / pl;
            let last = (slot.offset + slot.length).saturating_sub(1) / pl;
            let mut buf = Vec::new();
            for piece in first..=last.max(first) {
                if slot.length == 0 || !part.has(piece as u32) {
                    continue;
                }
                let p_start = piece * pl;
                let a = slot.offset.max(p_start);
                let b = (slot.offset + slot.length).min(p_start + pl);
                buf.resize((b - a) as usize, 0);
                if part
                    .read(piece as u32, (a - p_start) as u32, &mut buf)
                    .is_err()
                {
                    continue; // this part of the piece was never written
                }
                self.write_file(slot, a - slot.offset, &buf)?;
            }
        }
        slot.to_part.store(false, Ordering::Release);
        if let Some((part, _)) = &self.part
            && !self.files.iter().any(|f| f.to_part.load(Ordering::Acquire))
        {
            let _ = part.remove();
        }
        Ok(())
    }

    /// Whether file `index` is skipped and kept in the part file.
    pub fn in_part_file(&self, index: usize) -> bool {
        self.files
            .get(index)
            .is_some_and(|f| f.to_part.load(Ordering::Acquire))
    }

    /// Do `f(piece, offset_in_piece, range_in_buffer)` for the part-file pieces of payload
    /// range `offset..offset+len`; false when there is no part file.
    fn part_io(
        &self,
        offset: u64,
        len: usize,
        mut f: impl FnMut(&part_file::PartFile, u32, u32, std::ops::Range<usize>) -> io::Result<()>,
    ) -> Option<io::Result<()>> {
        let (part, pl) = self.part.as_ref()?;
        let pl = u64::from(*pl);
        let mut pos = offset;
        let end = offset + len as u64;
        while pos < end {
            let piece = pos / pl;
            let seg_end = end.min((piece + 1) * pl);
            let r = (pos - offset) as usize..(seg_end - offset) as usize;
            if let Err(e) = f(part, piece as u32, (pos - piece * pl) as u32, r) {
                return Some(Err(e));
            }
            pos = seg_end;
        }
        Some(Ok(()))
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
        }) || self.part.as_ref().is_some_and(|(p, _)| p.in_use())
    }

    /// Create the download directory (and its parents) if missing, and nothing else: the
    /// engine calls it when the torrent starts downloading, so that files can be created
    /// by their first write. After that, a download directory that vanishes gives
    /// [`StorageErrorKind::NotFound`] on I/O (it is not created again behind the user's
    /// back).
    ///
    /// # Errors
    /// The directory cannot be created (permissions, read-only, a file in the way), naming
    /// it.
    pub fn prepare_root(&self) -> Result<(), StorageError> {
        std::fs::create_dir_all(&self.root).map_err(|e| io_err("creating", &self.root, e))
    }

    /// Create every zero-length file of the torrent that is missing (and the folders on
    /// the way), leaving existing files alone: call it when the torrent completes, since a
    /// file with no bytes is never written. Skipped and padding files are not created.
    ///
    /// # Errors
    /// As for a write: permissions, read-only, [`StorageError::Escapes`], a missing download
    /// directory ([`StorageErrorKind::NotFound`]).
    pub fn create_empty_files(&self) -> Result<(), StorageError> {
        for slot in self
            .files
            .iter()
            .filter(|f| f.length == 0 && !f.pad && !f.to_part.load(Ordering::Acquire))
        {
            if std::fs::symlink_metadata(&slot.path).is_ok_and(|m| m.is_file()) {
                continue;
            }
            self.safe_folders(slot, true)?;
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

    /// Create the download directory, every folder and every file (sparse, extended to its
    /// length if shorter; existing data is never truncated here). Zero-length files are
    /// created too. Files that can only be opened read-only are fine if they are long
    /// enough (seeding from a read-only mount). The engine no longer calls this (files are
    /// created lazily); it stays for tools and tests that want the whole layout at once.
    ///
    /// # Errors
    /// I/O errors naming the file ([`StorageError::kind`] tells disk full, permission
    /// denied, read-only); [`StorageError::Escapes`] when a folder resolves outside the
    /// download directory.
    pub fn create_files(&self) -> Result<(), StorageError> {
        self.prepare_root()?;
        for slot in self
            .files
            .iter()
            .filter(|f| !f.pad && !f.to_part.load(Ordering::Acquire))
        {
            let h = self.handle(slot, true)?;
            let len = h
                .file
                .metadata()
                .map_err(|e| io_err("checking", &slot.path, e))?
                .len();
            if len < slot.length {
                if let Some(e) = &h.read_only {
                    return Err(io_err("extending", &slot.path, clone_io(e)));
                }
                h.file
                    .set_len(slot.length)
                    .map_err(|e| io_err("extending", &slot.path, e))?;
            }
            if self.opts.preallocate == Preallocate::Full && h.read_only.is_none() {
                self.preallocate(slot, &h)?;
            }
        }
        Ok(())
    }

    /// Drop every cached file handle and forget the files' identities; the next read or
    /// write opens the files again at their paths. Call it before resuming a torrent that
    /// failed with a storage error the user may have fixed (permissions, a remount,
    /// restored files), and before re-checking. I/O already running on another thread
    /// finishes on the old handle. Never fails.
    pub fn close_all(&self) {
        for slot in &self.files {
            self.opts.handles.close(&slot.cell);
            slot.cell.forget();
        }
        if let Some((part, _)) = &self.part {
            part.close();
        }
    }

    /// Check that every non-padding file with data is still there: each file the torrent
    /// opened is still the file at its path (not unlinked, not replaced; also when its
    /// handle was closed by the cache since), and each file is a regular file at least as
    /// long as the torrent says. Zero-length files are not looked at (they hold no data;
    /// [`Storage::create_empty_files`] makes them). Cost: one `lstat` per file. Call it
    /// when the last piece is verified, before reporting the torrent complete.
    ///
    /// # Errors
    /// The first problem found: [`StorageErrorKind::FileDeleted`] (a file opened here was
    /// deleted or replaced, e.g. the download folder was removed),
    /// [`StorageErrorKind::NotFound`] (a file never opened here is missing),
    /// [`StorageErrorKind::Truncated`] (shorter than the torrent needs), or another I/O
    /// error from `lstat`.
    pub fn verify_files_present(&self) -> Result<(), StorageError> {
        for slot in self
            .files
            .iter()
            .filter(|f| !f.pad && f.length > 0 && !f.to_part.load(Ordering::Acquire))
        {
            let meta = slot.check_current()?;
            if meta.len() < slot.length {
                return Err(StorageError::Truncated {
                    path: slot.path.clone(),
                    length: meta.len(),
                    needed: slot.length,
                });
            }
        }
        Ok(())
    }

    /// [`Storage::verify_files_present`] for the files holding payload bytes
    /// `offset..offset+len` only (the disk workers call it for each piece they verify).
    pub(crate) fn verify_range_present(&self, offset: u64, len: usize) -> Result<(), StorageError> {
        self.for_each_segment(offset, len, |slot, _, _| {
            if slot.pad || slot.to_part.load(Ordering::Acquire) {
                return Ok(());
            }
            slot.check_current().map(drop)
        })
    }

    /// The open handle of `slot`, opening the file first if needed (through the session's
    /// cache). With `create` a missing file is created (writing) unless the torrent had
    /// opened a file there before (then it was deleted: [`StorageError::FileDeleted`]);
    /// without, the file must already exist as a regular file (reading never creates
    /// anything). A file opened again must be the one seen before (same device and inode).
    fn handle(&self, slot: &FileSlot, create: bool) -> Result<Arc<Handle>, StorageError> {
        if let Some(h) = slot.cell.get() {
            self.opts.handles.touch(&slot.cell);
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
        if self.opts.mode == StorageMode::File {
            advise(&file, libc::POSIX_FADV_SEQUENTIAL, 0, 0);
        }
        Ok(self
            .opts
            .handles
            .install(&slot.cell, Handle::new(file, read_only, id)))
    }

    /// Make sure every folder between the download directory and `slot`'s file exists
    /// (with `create`, creating them one level at a time) and resolves inside the download
    /// directory. The download directory itself is never created here.
    fn safe_folders(&self, slot: &FileSlot, create: bool) -> Result<(), StorageError> {
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

    /// Allocate the whole of `slot`'s file (full preallocation).
    fn preallocate(&self, slot: &FileSlot, h: &Handle) -> Result<(), StorageError> {
        if slot.length == 0 {
            return Ok(());
        }
        match backend::fallocate(h, 0, slot.length) {
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
    /// so that it can be mapped.
    fn prepare_write(&self, slot: &FileSlot, h: &Handle) -> Result<(), StorageError> {
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
        if len > slot.length {
            tracing::info!(path = %slot.path.display(), len, want = slot.length,
                "cutting a file longer than the torrent says to its exact length");
            h.file
                .set_len(slot.length)
                .map_err(|e| io_err("truncating", &slot.path, e))?;
        }
        if self.opts.preallocate == Preallocate::Full {
            self.preallocate(slot, h)?;
        } else if self.opts.mode == StorageMode::Mmap && len < slot.length {
            h.file
                .set_len(slot.length)
                .map_err(|e| io_err("extending", &slot.path, e))?;
        }
        h.sized.store(true, Ordering::Release);
        Ok(())
    }

    /// Write `data` at byte `at` of `slot`'s file (opening or creating it).
    fn write_file(&self, slot: &FileSlot, at: u64, data: &[u8]) -> Result<(), StorageError> {
        let h = self.handle(slot, true)?;
        self.prepare_write(slot, &h)?;
        slot.written.store(true, Ordering::Relaxed);
        backend::write(self.opts.mode, &slot.path, slot.length, &h, at, data)
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
        // first file whose end is past `offset` (the layout was checked: no overflow)
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

    /// The part file's path (for errors), or the slot's.
    fn part_path<'a>(&'a self, slot: &'a FileSlot) -> &'a Path {
        self.part.as_ref().map_or(&slot.path, |(p, _)| p.path())
    }

    /// Write `data` at payload offset `offset` (bytes). Padding segments are skipped. The
    /// first write to a file creates it (and the folders on the way; the download
    /// directory must exist, see [`Storage::prepare_root`]) and cuts a file longer than
    /// the torrent says to its exact length.
    ///
    /// # Errors
    /// I/O errors naming the file: [`StorageErrorKind::NoSpace`], `PermissionDenied` (also
    /// for a file that could only be opened read-only), `ReadOnly`, `NotFound` (the
    /// download directory is gone), `FileDeleted` (a file written before is gone or
    /// replaced); [`StorageError::Unsupported`] (full preallocation on a file system
    /// without it); [`StorageError::OutOfRange`].
    pub fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), StorageError> {
        self.for_each_segment(offset, data.len(), |slot, at, range| {
            if slot.pad {
                return Ok(());
            }
            if slot.to_part.load(Ordering::Acquire) {
                let _gate = self.part_gate.locked();
                if slot.to_part.load(Ordering::Acquire) {
                    let seg = &data[range.clone()];
                    let r = self.part_io(slot.offset + at, seg.len(), |part, piece, off, r| {
                        part.write(piece, off, &seg[r])
                    });
                    if let Some(r) = r {
                        return r.map_err(|e| io_err("writing", self.part_path(slot), e));
                    }
                }
            }
            self.write_file(slot, at, &data[range])
        })
    }

    /// Flush to the device every file written since the last call (`fdatasync`), so that
    /// pieces verified before this call are on disk when it returns (the state store
    /// records them only then). Files not written are not touched.
    ///
    /// # Errors
    /// The first file that could not be synced (its data may not be on disk).
    pub fn sync_all(&self) -> Result<(), StorageError> {
        let mut first = None;
        for slot in self.files.iter().filter(|f| !f.pad) {
            if !slot.written.swap(false, Ordering::AcqRel) {
                continue;
            }
            let r = self.handle(slot, false).and_then(|h| {
                h.file
                    .sync_data()
                    .map_err(|e| io_err("syncing", &slot.path, e))
            });
            if let Err(e) = r {
                slot.written.store(true, Ordering::Relaxed);
                first.get_or_insert(e);
            }
        }
        if let Some((part, _)) = &self.part
            && let Err(e) = part.sync()
        {
            first.get_or_insert(io_err("syncing", part.path(), e));
        }
        first.map_or(Ok(()), Err)
    }

    /// Each file's size and modification time now (`None`: missing or a padding file), in
    /// payload order: what resume data records so a restart can tell unchanged files.
    pub fn file_stats(&self) -> Vec<crate::state::FileStat> {
        self.files
            .iter()
            .map(|f| if f.pad { None } else { file_stat(&f.path) })
            .collect()
    }

    /// Fill `buf` from payload offset `offset` (bytes). Padding reads as zeros. Never
    /// creates or changes a file.
    ///
    /// # Errors
    /// I/O errors naming the file; a file that does not exist is
    /// [`StorageErrorKind::NotFound`] and a file too short is [`StorageError::Truncated`]
    /// (for both [`StorageError::is_missing_data`] is true); a file read before and now
    /// gone or replaced is [`StorageErrorKind::FileDeleted`]; [`StorageError::OutOfRange`].
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        self.for_each_segment(offset, buf.len(), |slot, at, range| {
            if slot.pad {
                buf[range].fill(0);
                return Ok(());
            }
            if slot.to_part.load(Ordering::Acquire) {
                let _gate = self.part_gate.locked();
                if slot.to_part.load(Ordering::Acquire) {
                    let seg = &mut buf[range.clone()];
                    let r = self.part_io(slot.offset + at, seg.len(), |part, piece, off, r| {
                        part.read(piece, off, &mut seg[r])
                    });
                    if let Some(r) = r {
                        return r.map_err(|e| io_err("reading", self.part_path(slot), e));
                    }
                }
            }
            let h = self.handle(slot, false)?;
            backend::read(
                self.opts.mode,
                &slot.path,
                slot.length,
                &h,
                at,
                &mut buf[range],
            )
        })
    }

    /// Call `f` with the bytes of payload range `offset..offset+len`, in order, in one or
    /// more slices: in `mmap` mode straight from the mappings (one slice per file segment),
    /// in `file` mode through `scratch` in reads of [`READ_SIZE`] bytes (and for padding
    /// and part-file bytes through `scratch`, grown to the segment's size). Like [`Storage::read_at`] it never creates or changes
    /// a file, and fails the same way; on an error `f` may have seen a prefix of the range.
    pub(crate) fn read_with(
        &self,
        offset: u64,
        len: usize,
        scratch: &mut Vec<u8>,
        mut f: impl FnMut(&[u8]),
    ) -> Result<(), StorageError> {
        if self.opts.mode == StorageMode::File {
            // small reads into a buffer that stays in the CPU cache: the kernel's copy out
            // of the page cache costs a third as much as with a buffer of several MiB (the
            // disk still sees large reads: read-ahead, see `will_need`)
            let step = READ_SIZE.min(len).max(1);
            if scratch.len() < step {
                scratch.resize(step, 0);
            }
            let mut done = 0;
            while done < len {
                let k = step.min(len - done);
                self.read_at(offset + done as u64, &mut scratch[..k])?;
                f(&scratch[..k]);
                done += k;
            }
            return Ok(());
        }
        self.for_each_segment(offset, len, |slot, at, range| {
            let n = range.len();
            let part = slot.to_part.load(Ordering::Acquire);
            if slot.pad || part {
                if scratch.len() < n {
                    scratch.resize(n, 0);
                }
                self.read_at(slot.offset + at, &mut scratch[..n])?;
                f(&scratch[..n]);
                return Ok(());
            }
            let h = self.handle(slot, false)?;
            backend::visit_mapped(&slot.path, slot.length, &h, at, n, &mut f)
        })
    }

    /// Hint the kernel about the files under payload range `offset..offset+len`
    /// (`POSIX_FADV_WILLNEED`: start reading it in now). Only files that exist and are
    /// opened already or can be opened for reading are advised; errors are ignored.
    pub(crate) fn will_need(&self, offset: u64, len: u64) {
        let Ok(len) = usize::try_from(len) else {
            return;
        };
        let _ = self.for_each_segment(offset, len, |slot, at, range| {
            if slot.pad || slot.to_part.load(Ordering::Acquire) {
                return Ok(());
            }
            if let Ok(h) = self.handle(slot, false) {
                advise(&h.file, libc::POSIX_FADV_WILLNEED, at, range.len() as u64);
            }
            Ok(())
        });
    }
}

/// `posix_fadvise` on `file`, ignoring errors (it is only a hint).
fn advise(file: &std::fs::File, advice: libc::c_int, offset: u64, len: u64) {
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
    use std::fs::File;
    use std::os::unix::fs::MetadataExt;

    fn new_st(
        mode: StorageMode,
        root: &Path,
        files: impl IntoIterator<Item = FileSpec>,
        total: u64,
    ) -> Result<Storage, StorageError> {
        Storage::with_options(
            root,
            files,
            total,
            StorageOptions {
                mode,
                ..StorageOptions::default()
            },
        )
    }

    fn layout() -> Vec<FileSpec> {
        vec![
            ("t/a.bin".into(), 0, 10_000, false),
            ("t/.pad/6384".into(), 10_000, 6_384, true),
            ("t/empty".into(), 16_384, 0, false),
            ("t/sub/b.bin".into(), 16_384, 20_000, false),
            ("t/c.bin".into(), 36_384, 5, false),
        ]
    }

    fn writes_span_files_and_skip_pads(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let st = new_st(mode, dir.path(), layout(), 36_389).unwrap();
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

    fn skipped_files_are_not_created_and_their_bytes_move_in_when_wanted(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        // pieces of 16384: piece 0 = a (10000) + pad; piece 1..: b (20000) spans 1 and 2,
        // c (5) in piece 2
        let st = new_st(mode, dir.path(), layout(), 36_389)
            .unwrap()
            .with_part_file(dir.path().join(".t.parts"), 16_384, 3);
        st.create_files().unwrap();
        std::fs::remove_file(dir.path().join("t/c.bin")).unwrap();
        st.set_skipped(4, true).unwrap(); // c.bin
        assert!(st.in_part_file(4));
        let data: Vec<u8> = (0..36_389u32).map(|i| (i % 251) as u8).collect();
        st.write_at(0, &data[..16_384]).unwrap();
        st.write_at(16_384, &data[16_384..32_768]).unwrap();
        st.write_at(32_768, &data[32_768..]).unwrap(); // b's tail + c
        assert!(
            !dir.path().join("t/c.bin").exists(),
            "a skipped file is not created"
        );
        assert!(dir.path().join(".t.parts").exists());
        let mut back = vec![0u8; 36_389 - 32_768];
        st.read_at(32_768, &mut back).unwrap();
        assert_eq!(
            back,
            data[32_768..],
            "its bytes read back from the part file"
        );
        st.verify_files_present().unwrap();
        // wanted again: the bytes move into the file, the part file goes
        st.set_skipped(4, false).unwrap();
        assert!(!st.in_part_file(4));
        assert_eq!(
            std::fs::read(dir.path().join("t/c.bin")).unwrap(),
            data[36_384..]
        );
        assert!(!dir.path().join(".t.parts").exists());
        st.read_at(32_768, &mut back).unwrap();
        assert_eq!(back, data[32_768..]);
        // skipping a file that exists leaves it where it is
        st.set_skipped(3, true).unwrap();
        assert!(!st.in_part_file(3));
    }

    fn out_of_range_is_an_error(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let st = new_st(mode, dir.path(), layout(), 36_389).unwrap();
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

    fn missing_file_reads_as_missing_data(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let st = new_st(mode, dir.path(), layout(), 36_389).unwrap();
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

    fn symlinked_directory_escaping_root_is_refused(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("t")).unwrap();
        let st = new_st(mode, dir.path(), vec![("t/evil".into(), 0, 4, false)], 4).unwrap();
        assert!(matches!(
            st.write_at(0, b"evil"),
            Err(StorageError::Escapes { .. })
        ));
        assert!(!outside.path().join("evil").exists());
    }

    fn symlinked_file_is_not_followed(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("victim");
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("f")).unwrap();
        let st = new_st(mode, dir.path(), vec![("f".into(), 0, 4, false)], 4).unwrap();
        assert!(st.write_at(0, b"evil").is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }

    fn existing_longer_file_is_not_truncated(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![7u8; 100]).unwrap();
        let st = new_st(mode, dir.path(), vec![("f".into(), 0, 10, false)], 10).unwrap();
        st.create_files().unwrap();
        assert_eq!(std::fs::metadata(dir.path().join("f")).unwrap().len(), 100);
        assert!(st.any_data_present());
    }

    fn euid_is_root() -> bool {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }

    /// Cache a read-only handle for file `i`, as the fallback open does after the
    /// read-write open failed with `why`.
    fn force_read_only(st: &Storage, i: usize, why: i32) {
        let slot = &st.files[i];
        let file = File::open(&slot.path).unwrap();
        let meta = file.metadata().unwrap();
        st.opts.handles.close(&slot.cell);
        slot.cell.forget();
        st.opts.handles.install(
            &slot.cell,
            Handle::new(
                file,
                Some(io::Error::from_raw_os_error(why)),
                FileId::of(&meta),
            ),
        );
    }

    fn write_to_a_read_only_fallback_handle_names_the_cause_and_the_file(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"seed").unwrap();
        let st = new_st(mode, dir.path(), vec![("f".into(), 0, 4, false)], 4).unwrap();
        let path = dir.path().join("f");
        for (why, kind) in [
            (libc::EACCES, StorageErrorKind::PermissionDenied),
            (libc::EPERM, StorageErrorKind::PermissionDenied),
            (libc::EROFS, StorageErrorKind::ReadOnly),
        ] {
            force_read_only(&st, 0, why);
            let e = st.write_at(0, b"evil").unwrap_err();
            assert_eq!(e.kind(), kind, "{e}");
            assert_eq!(e.path(), Some(path.as_path()));
            let msg = e.to_string();
            assert!(!msg.contains("Bad file descriptor"), "{msg}");
            assert!(
                msg.contains(&format!("writing {}", path.display())),
                "{msg}"
            );
            if why == libc::EACCES {
                assert_eq!(
                    msg,
                    format!(
                        "permission denied writing {} (check the folder's owner and mode)",
                        path.display()
                    )
                );
            }
            // reading (seeding) still works, extending is refused the same way
            let mut b = [0u8; 4];
            st.read_at(0, &mut b).unwrap();
            assert_eq!(&b, b"seed");
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"seed");
    }

    fn read_only_file_by_mode_bits(mode: StorageMode) {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"seed").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let st = new_st(mode, dir.path(), vec![("f".into(), 0, 4, false)], 4).unwrap();
        // seeding from a read-only file works for everyone
        let mut b = [0u8; 4];
        st.read_at(0, &mut b).unwrap();
        assert_eq!(&b, b"seed");
        st.create_files().unwrap();
        let w = st.write_at(0, b"evil");
        if euid_is_root() {
            // root ignores mode bits: the fallback path cannot be reached this way (it is
            // covered by write_to_a_read_only_fallback_handle_names_the_cause_and_the_file)
            return;
        }
        let e = w.unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::PermissionDenied, "{e}");
        assert!(
            e.to_string().starts_with("permission denied writing"),
            "{e}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"seed");
    }

    fn unwritable_folder_reports_permission_denied_creating(mode: StorageMode) {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("t")).unwrap();
        std::fs::set_permissions(dir.path().join("t"), std::fs::Permissions::from_mode(0o555))
            .unwrap();
        let st = new_st(mode, dir.path(), vec![("t/new".into(), 0, 4, false)], 4).unwrap();
        let r = st.write_at(0, b"data");
        std::fs::set_permissions(dir.path().join("t"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        if euid_is_root() {
            return; // root ignores mode bits
        }
        let e = r.unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::PermissionDenied, "{e}");
        assert!(
            e.to_string().starts_with("permission denied creating"),
            "{e}"
        );
    }

    fn short_file_is_truncated_data(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![1u8; 6]).unwrap();
        let st = new_st(mode, dir.path(), vec![("f".into(), 0, 10, false)], 10).unwrap();
        let mut b = [0u8; 10];
        let e = st.read_at(0, &mut b).unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::Truncated, "{e}");
        assert!(e.is_missing_data());
        assert!(
            matches!(
                e,
                StorageError::Truncated {
                    length: 6,
                    needed: 10,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(std::fs::metadata(dir.path().join("f")).unwrap().len(), 6);
    }

    fn deleted_and_replaced_files_are_detected(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let st = new_st(mode, dir.path(), layout(), 36_389).unwrap();
        st.create_files().unwrap();
        st.verify_files_present().unwrap();
        // replaced: another file renamed over b.bin
        let b = dir.path().join("t/sub/b.bin");
        std::fs::write(dir.path().join("other"), vec![0u8; 20_000]).unwrap();
        std::fs::rename(dir.path().join("other"), &b).unwrap();
        let e = st.verify_files_present().unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::FileDeleted, "{e}");
        assert_eq!(e.path(), Some(b.as_path()));
        assert!(st.verify_range_present(16_384, 10).is_err());
        assert!(st.verify_range_present(0, 10_000).is_ok(), "a.bin is fine");
        // after close_all the file at the path is used
        st.close_all();
        st.verify_files_present().unwrap();
        st.create_files().unwrap(); // opens every file again
        // unlinked
        std::fs::remove_file(dir.path().join("t/c.bin")).unwrap();
        let e = st.verify_files_present().unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::FileDeleted, "{e}");
        st.close_all();
        let e = st.verify_files_present().unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::NotFound, "{e}");
        // restored, but short
        std::fs::write(dir.path().join("t/c.bin"), b"abc").unwrap();
        let e = st.verify_files_present().unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::Truncated, "{e}");
        st.create_files().unwrap();
        st.verify_files_present().unwrap();
    }

    fn deleted_download_folder_is_reported_not_recreated(mode: StorageMode) {
        let parent = tempfile::tempdir().unwrap();
        let root = parent.path().join("dl");
        let st = new_st(mode, &root, layout(), 36_389).unwrap();
        st.create_files().unwrap();
        st.write_at(0, &[5u8; 100]).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        // open handles keep writing into unlinked files: that alone cannot be noticed...
        st.write_at(100, &[5u8; 100]).unwrap();
        // ...but it is when checking
        let e = st.verify_files_present().unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::FileDeleted, "{e}");
        // once the handles are dropped, I/O fails instead of starting a new, empty folder
        st.close_all();
        let e = st.write_at(0, &[5u8; 100]).unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::NotFound, "{e}");
        assert_eq!(e.path(), Some(root.as_path()), "{e}");
        assert!(!root.exists());
        let mut b = [0u8; 10];
        let e = st.read_at(0, &mut b).unwrap_err();
        assert!(e.is_missing_data(), "{e}");
        assert!(!root.exists());
    }

    fn first_write_cuts_an_oversized_file_to_its_length(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![7u8; 100]).unwrap();
        let st = new_st(mode, dir.path(), vec![("f".into(), 0, 10, false)], 10).unwrap();
        // reading does not touch it
        let mut b = [0u8; 10];
        st.read_at(0, &mut b).unwrap();
        assert_eq!(std::fs::metadata(dir.path().join("f")).unwrap().len(), 100);
        st.write_at(2, b"ab").unwrap();
        let got = std::fs::read(dir.path().join("f")).unwrap();
        assert_eq!(got, b"\x07\x07ab\x07\x07\x07\x07\x07\x07");
    }

    #[test]
    fn impossible_layouts_are_refused_without_panicking() {
        let dir = tempfile::tempdir().unwrap();
        let bad: Vec<(Vec<FileSpec>, u64)> = vec![
            (
                vec![("a".into(), 0, 10, false), ("b".into(), 5, 10, false)],
                15,
            ),
            (
                vec![("a".into(), 0, 10, false), ("b".into(), 12, 10, false)],
                22,
            ),
            (vec![("a".into(), 1, 10, false)], 11),
            (vec![("a".into(), 0, 10, false)], 11),
            (
                vec![
                    ("a".into(), 0, u64::MAX, false),
                    ("b".into(), u64::MAX, 2, false),
                ],
                1,
            ),
            (vec![("a".into(), u64::MAX, 2, false)], 1),
        ];
        for (files, total) in bad {
            let r = Storage::new(dir.path(), files.clone(), total);
            assert!(
                matches!(r, Err(StorageError::BadLayout { .. })),
                "{files:?} {total}"
            );
            assert_eq!(r.unwrap_err().kind(), StorageErrorKind::Refused);
        }
        Storage::new(dir.path(), Vec::new(), 0).unwrap();
    }

    fn symlinked_folder_deep_in_the_path_creates_nothing_outside(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("t")).unwrap();
        let st = new_st(
            mode,
            dir.path(),
            vec![("t/sub/deeper/evil".into(), 0, 4, false)],
            4,
        )
        .unwrap();
        let e = st.write_at(0, b"evil").unwrap_err();
        assert!(matches!(e, StorageError::Escapes { .. }), "{e}");
        assert!(st.create_files().is_err());
        assert!(!outside.path().join("sub").exists());
        // reading through it is refused too (no serving files from outside)
        std::fs::create_dir_all(outside.path().join("sub/deeper")).unwrap();
        std::fs::write(outside.path().join("sub/deeper/evil"), b"priv").unwrap();
        let mut b = [0u8; 4];
        let e = st.read_at(0, &mut b).unwrap_err();
        assert!(matches!(e, StorageError::Escapes { .. }), "{e}");
    }

    fn symlinked_folder_inside_the_download_dir_is_fine(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("t")).unwrap();
        let st = new_st(mode, dir.path(), vec![("t/f".into(), 0, 4, false)], 4).unwrap();
        st.write_at(0, b"good").unwrap();
        assert_eq!(std::fs::read(dir.path().join("real/f")).unwrap(), b"good");
    }

    fn symlinked_file_is_refused_with_a_clear_kind(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("victim"), b"keep").unwrap();
        std::os::unix::fs::symlink(outside.path().join("victim"), dir.path().join("f")).unwrap();
        let st = new_st(mode, dir.path(), vec![("f".into(), 0, 4, false)], 4).unwrap();
        let e = st.write_at(0, b"evil").unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::Refused, "{e}");
        let mut b = [0u8; 4];
        let e = st.read_at(0, &mut b).unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::Refused, "{e}");
        assert_eq!(
            std::fs::read(outside.path().join("victim")).unwrap(),
            b"keep"
        );
    }

    fn opts(mode: StorageMode, handles: &HandleCache, preallocate: Preallocate) -> StorageOptions {
        StorageOptions {
            mode,
            preallocate,
            handles: handles.clone(),
        }
    }

    fn many_files_keep_working_beyond_the_handle_cap(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let cache = HandleCache::new(8);
        // 3 torrents of 10 files each share a cache of 8 handles
        let stores: Vec<Storage> = (0..3)
            .map(|t| {
                let files =
                    (0..10u64).map(|i| (PathBuf::from(format!("t{t}/f{i}")), i * 100, 100, false));
                let st = Storage::with_options(
                    dir.path(),
                    files,
                    1000,
                    opts(mode, &cache, Preallocate::Sparse),
                )
                .unwrap();
                st.prepare_root().unwrap();
                st
            })
            .collect();
        let data: Vec<u8> = (0..1000u32).map(|i| (i % 253) as u8).collect();
        for round in 0..3 {
            for st in &stores {
                for i in 0..10 {
                    let r = i * 100..i * 100 + 100;
                    if round == 0 {
                        st.write_at(r.start as u64, &data[r.clone()]).unwrap();
                    }
                    let mut b = vec![0u8; 100];
                    st.read_at(r.start as u64, &mut b).unwrap();
                    assert_eq!(b, data[r]);
                    assert!(cache.open_count() <= 8, "{}", cache.open_count());
                }
            }
        }
        assert!(cache.evicted_total() > 0);
        stores[0].verify_files_present().unwrap();
        // a file replaced while its handle was closed by the cache is still caught
        let victim = dir.path().join("t0/f0");
        assert!(stores[0].files()[0].cell.get().is_none(), "f0 was evicted");
        std::fs::remove_file(&victim).unwrap();
        std::fs::write(&victim, &data[..100]).unwrap();
        let e = stores[0].verify_files_present().unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::FileDeleted, "{e}");
        let mut b = vec![0u8; 100];
        let e = stores[0].read_at(0, &mut b).unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::FileDeleted, "{e}");
        // a deleted one is not created again by a write
        std::fs::remove_file(dir.path().join("t0/f1")).unwrap();
        cache.close(&stores[0].files()[1].cell);
        let e = stores[0].write_at(100, &data[..100]).unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::FileDeleted, "{e}");
        assert!(!dir.path().join("t0/f1").exists());
        // close_all takes the files as they are now
        stores[0].close_all();
        stores[0].read_at(0, &mut b).unwrap();
        drop(stores);
        assert_eq!(
            cache.open_count(),
            0,
            "dropped storages give their handles back"
        );
    }

    fn nothing_is_created_until_written_then_the_empty_files(mode: StorageMode) {
        let parent = tempfile::tempdir().unwrap();
        let root = parent.path().join("dl");
        let st = new_st(mode, &root, layout(), 36_389).unwrap();
        let mut b = [0u8; 10];
        assert!(st.read_at(0, &mut b).unwrap_err().is_missing_data());
        assert!(!st.any_data_present());
        st.verify_files_present().unwrap_err();
        assert!(!root.exists(), "reading and checking create nothing");
        // no download folder yet: a write does not create it
        let e = st.write_at(0, b"x").unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::NotFound, "{e}");
        assert!(!root.exists());
        st.prepare_root().unwrap();
        assert_eq!(
            std::fs::read_dir(&root).unwrap().count(),
            0,
            "only the folder"
        );
        st.write_at(16_384, b"b").unwrap();
        assert!(root.join("t/sub/b.bin").exists());
        assert!(!root.join("t/a.bin").exists() && !root.join("t/c.bin").exists());
        assert!(!root.join("t/empty").exists());
        st.create_empty_files().unwrap();
        assert_eq!(std::fs::metadata(root.join("t/empty")).unwrap().len(), 0);
        assert!(!root.join("t/.pad").exists());
        st.create_empty_files().unwrap(); // idempotent
    }

    fn full_preallocation_allocates_on_first_write(mode: StorageMode) {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
        let len = 8u64 << 20;
        let cache = HandleCache::new(16);
        for (pre, want_full) in [(Preallocate::Sparse, false), (Preallocate::Full, true)] {
            let name = format!("{pre:?}");
            let st = Storage::with_options(
                dir.path(),
                vec![(PathBuf::from(&name), 0, len, false)],
                len,
                opts(mode, &cache, pre),
            )
            .unwrap();
            st.write_at(len - 4, b"tail").unwrap();
            let m = std::fs::metadata(dir.path().join(&name)).unwrap();
            assert_eq!(m.len(), len, "{name}");
            let allocated = m.blocks() * 512;
            assert_eq!(
                allocated >= len,
                want_full,
                "{name}: {allocated} bytes allocated"
            );
            let mut b = [0u8; 4];
            st.read_at(len - 4, &mut b).unwrap();
            assert_eq!(&b, b"tail");
            st.read_at(0, &mut b).unwrap();
            assert_eq!(b, [0; 4]);
        }
    }

    fn truncated_under_the_storage_is_an_error_not_a_crash(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 249) as u8).collect();
        std::fs::write(dir.path().join("f"), &data).unwrap();
        let st = new_st(
            mode,
            dir.path(),
            vec![("f".into(), 0, 1_000_000, false)],
            1_000_000,
        )
        .unwrap();
        let mut b = vec![0u8; 100_000];
        st.read_at(800_000, &mut b).unwrap(); // mapped now (mmap mode)
        assert_eq!(b, data[800_000..900_000]);
        std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join("f"))
            .unwrap()
            .set_len(500_000)
            .unwrap();
        let e = st.read_at(800_000, &mut b).unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::Truncated, "{e}");
        let mut seen = 0;
        let mut scratch = Vec::new();
        let e = st
            .read_with(400_000, 200_000, &mut scratch, |s| seen += s.len())
            .unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::Truncated, "{e}");
        // the part before the cut still reads
        st.read_at(0, &mut b).unwrap();
        assert_eq!(b, data[..100_000]);
        // a write past the new end: mmap mode refuses (its mapping would fault), file
        // mode writes (pwrite extends the file)
        let w = st.write_at(900_000, &[1u8; 10]);
        match mode {
            StorageMode::Mmap => {
                // the first write sizes the file to its length again, so this one works
                w.unwrap();
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(dir.path().join("f"))
                    .unwrap()
                    .set_len(500_000)
                    .unwrap();
                let e = st.write_at(900_000, &[1u8; 10]).unwrap_err();
                assert_eq!(e.kind(), StorageErrorKind::Truncated, "{e}");
            }
            StorageMode::File => w.unwrap(),
        }
    }

    #[test]
    fn storage_mode_parses_and_prints() {
        assert_eq!("mmap".parse::<StorageMode>().unwrap(), StorageMode::Mmap);
        assert_eq!("file".parse::<StorageMode>().unwrap(), StorageMode::File);
        assert!(
            "MMAP"
                .parse::<StorageMode>()
                .unwrap_err()
                .contains("file or mmap")
        );
        assert_eq!(StorageMode::Mmap.to_string(), "mmap");
    }

    /// Each storage test, once per mode.
    macro_rules! in_both_modes {
        ($($name:ident),* $(,)?) => {
            mod file_mode {
                $(#[test]
                fn $name() {
                    super::$name(super::StorageMode::File)
                })*
            }
            mod mmap_mode {
                $(#[test]
                fn $name() {
                    super::$name(super::StorageMode::Mmap)
                })*
            }
        };
    }

    in_both_modes!(
        many_files_keep_working_beyond_the_handle_cap,
        nothing_is_created_until_written_then_the_empty_files,
        full_preallocation_allocates_on_first_write,
        truncated_under_the_storage_is_an_error_not_a_crash,
        writes_span_files_and_skip_pads,
        skipped_files_are_not_created_and_their_bytes_move_in_when_wanted,
        out_of_range_is_an_error,
        missing_file_reads_as_missing_data,
        symlinked_directory_escaping_root_is_refused,
        symlinked_file_is_not_followed,
        existing_longer_file_is_not_truncated,
        write_to_a_read_only_fallback_handle_names_the_cause_and_the_file,
        read_only_file_by_mode_bits,
        unwritable_folder_reports_permission_denied_creating,
        short_file_is_truncated_data,
        deleted_and_replaced_files_are_detected,
        deleted_download_folder_is_reported_not_recreated,
        first_write_cuts_an_oversized_file_to_its_length,
        symlinked_folder_deep_in_the_path_creates_nothing_outside,
        symlinked_folder_inside_the_download_dir_is_fine,
        symlinked_file_is_refused_with_a_clear_kind,
    );
}
