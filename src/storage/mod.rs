//! Piece storage: the torrent's payload mapped onto files.
//!
//! The payload is the concatenation of the torrent's files (BEP 3); a piece or block may
//! span several files. [`Storage`] is the façade the engine and the disk threads use
//! ([`Storage::write_at`], [`Storage::read_at`], [`Storage::sync_all`], ...); behind it, one
//! room per concept:
//!
//! - [`options`]: the I/O mode ([`StorageMode`]), preallocation, the session's handle cache.
//! - `layout`: the files' places in the payload and the routing of a byte range to them.
//! - `open`: opening files safely through the handle cache, and telling whether the file at
//!   a path is still the one the torrent opened (a deleted or replaced file is
//!   [`StorageErrorKind::FileDeleted`], whether its handle is open or was closed by the
//!   cache; [`Storage::close_all`] forgets the identities).
//! - `skip`: skipped files' bytes routed to the [`part_file`] (`.INFOHASH.parts`).
//! - `files`: lazy creation (nothing is created by [`Storage::new`], checking or reading;
//!   a file is created by its first write, sparse or fully allocated), zero-length files,
//!   cutting a file longer than the torrent says on its first write.
//! - [`delete`]: deleting a removed torrent's payload.
//! - [`handle`](self) / [`handles`] / [`backend`]: an open file, the session's bounded cache
//!   of them, and the two ways bytes reach a file: positioned I/O (`pread`/`pwrite`, so
//!   concurrent workers never race on a file cursor) or memory maps (see [`backend`] for
//!   how `mmap` mode avoids `SIGBUS` and what race remains).
//! - [`check`], [`disk`], [`mover`], [`space`]: hashing what is on disk, the disk threads,
//!   moving a payload, free space.
//!
//! Padding files (BEP 47) are never created: they read as zeros and writes to them are
//! dropped.
//!
//! Safety: every file path must be relative with only normal components (the metainfo
//! parser guarantees it; this module checks again), each directory on the way is created
//! one level at a time and must resolve inside the download directory after symlinks, and
//! the file itself is opened with `O_NOFOLLOW`, so nothing is ever written outside the
//! download directory.
//!
//! Oversized files: a file longer than the torrent says is never truncated by checking
//! ([`check::check_report`] reports it and leaves the piece holding its end unverified); it
//! is truncated to its exact length the first time the torrent writes to it.

pub mod backend;
pub mod check;
pub mod delete;
pub mod disk;
mod error;
mod files;
mod handle;
pub mod handles;
mod layout;
pub mod mover;
mod open;
pub mod options;
pub mod part_file;
mod skip;
pub mod space;

pub use delete::{DeleteError, PayloadFiles};
pub use error::{CREATING_SAVE_FOLDER, StorageError, StorageErrorKind};

/// Make a torrent's save folder `root` (and its parents) before its storage is opened, as
/// [`Storage::prepare_root`] does once it is: a download calls it when it joins the swarm,
/// so a folder that cannot be made is told at once.
///
/// # Errors
/// The folder cannot be made (permissions, read-only, a file in the way, a pseudo file
/// system): [`StorageError::Io`] with op [`CREATING_SAVE_FOLDER`], naming it.
pub fn prepare_save_folder(root: &std::path::Path) -> Result<(), StorageError> {
    files::prepare_root(root)
}
pub use handles::{DEFAULT_MAX_OPEN_FILES, HandleCache, raise_fd_limit};
pub use layout::{FileSlot, FileSpec};
pub use open::{check_verified_files, file_stat, verified_extent};
pub use options::{Preallocate, StorageMode, StorageOptions};

use std::path::{Path, PathBuf};

use crate::metainfo::Metainfo;
use crate::piece::{FileLayout, Geometry};
use layout::Files;
use open::{Opener, advise};
use part_file::PartFile;
use skip::PartRoute;

/// A torrent's payload on disk.
#[derive(Debug)]
pub struct Storage {
    /// The download directory, the I/O mode and the session's handle cache.
    opener: Opener,
    /// The files in payload order.
    files: Files,
    preallocate: Preallocate,
    /// Where skipped files' bytes go.
    part: PartRoute,
}

/// Bytes per read when checking in `file` mode ([`check`]): small enough for the buffer to
/// stay in the CPU's cache.
pub const READ_SIZE: usize = 64 << 10;

impl Drop for Storage {
    fn drop(&mut self) {
        // give the session's cache its slots back at once
        for slot in self.files.slots() {
            self.opener.close(slot);
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
        Ok(Storage::assemble(
            root,
            Files::new(root, files, total_length)?,
            opts,
        ))
    }

    /// The files of `layout` under `root`, at `paths` (relative, one per file of the layout,
    /// in payload order), with `opts`. Nothing is touched on disk.
    ///
    /// # Errors
    /// [`StorageError::UnsafePath`] for a path that is not relative and normal;
    /// [`StorageError::BadLayout`] when there are not as many paths as files.
    pub fn with_layout(
        root: &Path,
        paths: Vec<PathBuf>,
        layout: FileLayout,
        opts: StorageOptions,
    ) -> Result<Storage, StorageError> {
        Ok(Storage::assemble(
            root,
            Files::laid_out(root, paths, layout)?,
            opts,
        ))
    }

    /// The storage of `meta`'s payload under `save_dir`, with `opts`, its skipped files'
    /// bytes going to the torrent's part file (`.INFOHASH.parts` in `save_dir`, see
    /// [`part_file::file_name`]). Nothing is touched on disk.
    ///
    /// # Errors
    /// As [`Storage::with_layout`] (a metainfo from the parser always lays out).
    pub fn for_torrent(
        meta: &Metainfo,
        save_dir: &Path,
        opts: StorageOptions,
    ) -> Result<Storage, StorageError> {
        let paths = meta.files.iter().map(|f| f.path.clone()).collect();
        Ok(
            Storage::with_layout(save_dir, paths, meta.layout(), opts)?.with_part_file(
                save_dir.join(part_file::file_name(&meta.info_hash)),
                meta.geometry(),
            ),
        )
    }

    fn assemble(root: &Path, files: Files, opts: StorageOptions) -> Storage {
        Storage {
            files,
            opener: Opener::new(root, opts.mode, opts.handles),
            preallocate: opts.preallocate,
            part: PartRoute::default(),
        }
    }

    /// Keep skipped files' bytes in a part file at `path` (inside the download folder), in
    /// slots of one piece of `geometry` each. Nothing is created until a skipped file's bytes
    /// are written.
    pub fn with_part_file(mut self, path: PathBuf, geometry: Geometry) -> Storage {
        self.part = PartRoute::new(PartFile::new(path, geometry));
        self
    }

    /// The storage mode in use.
    pub fn mode(&self) -> StorageMode {
        self.opener.mode()
    }

    /// The download directory.
    pub fn root(&self) -> &Path {
        self.opener.root()
    }

    /// The files, in payload order.
    pub fn files(&self) -> &[FileSlot] {
        self.files.slots()
    }

    /// Payload size in bytes (padding included).
    pub fn total_length(&self) -> u64 {
        self.files.total_length()
    }

    /// True if any non-padding file with a non-zero length already exists with data, i.e.
    /// there may be verified pieces to find by checking.
    pub fn any_data_present(&self) -> bool {
        self.files.slots().iter().any(|f| {
            !f.span.pad
                && f.span.length > 0
                && std::fs::symlink_metadata(&f.path).is_ok_and(|m| m.is_file() && m.len() > 0)
        }) || self.part.file().is_some_and(PartFile::in_use)
    }

    /// Drop every cached file handle and forget the files' identities; the next read or
    /// write opens the files again at their paths. Call it before resuming a torrent that
    /// failed with a storage error the user may have fixed (permissions, a remount,
    /// restored files), and before re-checking. I/O already running on another thread
    /// finishes on the old handle. Never fails.
    pub fn close_all(&self) {
        for slot in self.files.slots() {
            self.opener.forget(slot);
        }
        if let Some(part) = self.part.file() {
            part.close();
        }
    }

    /// Skip file `index` (or want it again). Skipping a file that is not on disk routes its
    /// bytes to the part file, so it is never created; a file already on disk stays where it
    /// is. Wanting a skipped file again moves its bytes from the part file into the file
    /// (creating it). Without a part file this only records the wish.
    ///
    /// # Errors
    /// Moving the bytes failed (disk full, permissions): the file stays skipped.
    pub fn set_skipped(&self, index: usize, skip: bool) -> Result<(), StorageError> {
        self.part
            .set_skipped(&self.files, index, skip, &self.opener, |slot, at, bytes| {
                files::write_file(&self.opener, self.preallocate, slot, at, bytes)
            })
    }

    /// Whether file `index` is skipped and kept in the part file.
    pub fn in_part_file(&self, index: usize) -> bool {
        self.files.get(index).is_some_and(FileSlot::in_part)
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
        files::prepare_root(self.opener.root())
    }

    /// Create every zero-length file of the torrent that is missing (and the folders on
    /// the way), leaving existing files alone: call it when the torrent completes, since a
    /// file with no bytes is never written. Skipped and padding files are not created.
    ///
    /// # Errors
    /// As for a write: permissions, read-only, [`StorageError::Escapes`], a missing download
    /// directory ([`StorageErrorKind::NotFound`]).
    pub fn create_empty_files(&self) -> Result<(), StorageError> {
        files::create_empty_files(&self.opener, &self.files)
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
        files::create_files(&self.opener, &self.files, self.preallocate)
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
        open::verify_present(&self.files)
    }

    /// [`Storage::verify_files_present`] for the verified data only, as the engine calls it
    /// when a torrent completes: a file counts only for the bytes of it that pieces
    /// verified in `have` (of `geo`) hold ([`verified_extent`]), and files skipped
    /// (`skipped(index)`, payload order) or kept in the part file are not looked at. So a
    /// file skipped after it was partly written never fails the torrent.
    ///
    /// # Errors
    /// As [`Storage::verify_files_present`].
    pub fn verify_verified_present(
        &self,
        geo: &Geometry,
        have: &crate::piece::Bitfield,
        skipped: &dyn Fn(usize) -> bool,
    ) -> Result<(), StorageError> {
        open::verify_verified_present(&self.files, geo, have, skipped)
    }

    /// [`Storage::verify_files_present`] for the files holding payload bytes
    /// `offset..offset+len` only (the disk workers call it for each piece they verify).
    pub(crate) fn verify_range_present(&self, offset: u64, len: usize) -> Result<(), StorageError> {
        open::verify_range_present(&self.files, offset, len)
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
        self.files.segments(offset, data.len(), |slot, at, range| {
            if slot.span.pad {
                return Ok(());
            }
            let data = &data[range];
            if let Some(r) = self.part.write(slot, at, data) {
                return r;
            }
            files::write_file(&self.opener, self.preallocate, slot, at, data)
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
        for slot in self.files.slots().iter().filter(|f| !f.span.pad) {
            if !slot
                .written
                .swap(false, std::sync::atomic::Ordering::AcqRel)
            {
                continue;
            }
            let r = self.opener.handle(slot, false).and_then(|h| {
                h.file
                    .sync_data()
                    .map_err(|e| error::io_err("syncing", &slot.path, e))
            });
            if let Err(e) = r {
                slot.written
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                first.get_or_insert(e);
            }
        }
        if let Some(part) = self.part.file()
            && let Err(e) = part.sync()
        {
            first.get_or_insert(error::io_err("syncing", part.path(), e));
        }
        first.map_or(Ok(()), Err)
    }

    /// Each file's size and modification time now (`None`: missing or a padding file), in
    /// payload order: what resume data records so a restart can tell unchanged files.
    pub fn file_stats(&self) -> Vec<crate::state::FileStat> {
        self.files
            .slots()
            .iter()
            .map(|f| if f.span.pad { None } else { file_stat(&f.path) })
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
        self.files.segments(offset, buf.len(), |slot, at, range| {
            let buf = &mut buf[range];
            if slot.span.pad {
                buf.fill(0);
                return Ok(());
            }
            if let Some(r) = self.part.read(slot, at, buf) {
                return r;
            }
            let h = self.opener.handle(slot, false)?;
            backend::read(self.mode(), &slot.path, slot.span.length, &h, at, buf)
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
        if self.mode() == StorageMode::File {
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
        self.files.segments(offset, len, |slot, at, range| {
            let n = range.len();
            if !slot.on_disk() {
                if scratch.len() < n {
                    scratch.resize(n, 0);
                }
                self.read_at(slot.span.offset + at, &mut scratch[..n])?;
                f(&scratch[..n]);
                return Ok(());
            }
            let h = self.opener.handle(slot, false)?;
            backend::visit_mapped(&slot.path, slot.span.length, &h, at, n, &mut f)
        })
    }

    /// Hint the kernel about the files under payload range `offset..offset+len`
    /// (`POSIX_FADV_WILLNEED`: start reading it in now). Only files that exist and are
    /// opened already or can be opened for reading are advised; errors are ignored.
    pub(crate) fn will_need(&self, offset: u64, len: u64) {
        let Ok(len) = usize::try_from(len) else {
            return;
        };
        let _ = self.files.segments(offset, len, |slot, at, range| {
            if !slot.on_disk() {
                return Ok(());
            }
            if let Ok(h) = self.opener.handle(slot, false) {
                advise(&h.file, libc::POSIX_FADV_WILLNEED, at, range.len() as u64);
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests;
