//! The two ways bytes reach a file: positioned I/O (`file` mode: `pread`/`pwrite`) and
//! memory maps (`mmap` mode, `memmap2`). [`super::Storage`] routes a payload range to files,
//! part file and padding the same way for both; only the per-file access below differs.
//!
//! # `mmap` mode and `SIGBUS`
//!
//! Touching a mapped page past the end of its file raises `SIGBUS`, which kills the process.
//! Every access batch (one file segment of a read or write) therefore first asks the kernel
//! for the file's current size (`fstat`) and refuses a range past the end with
//! [`StorageError::Truncated`], exactly as `file` mode reports a short read. What remains is a
//! race: a file truncated by another process *between* that `fstat` and the copy (a window of
//! microseconds per batch) still raises `SIGBUS`. No handler is installed for it (there is no
//! sound way to resume a Rust thread from a signal handler that interrupts a copy), so `mmap`
//! mode is for payloads that only ratorrent changes; `file` mode has no such window.
//!
//! Writing to a hole of a sparse file through a mapping allocates disk blocks at the page
//! fault; on a full disk that is a `SIGBUS` too. So before copying into the mapping, the
//! range is allocated with `fallocate` (a 4 MiB aligned region at a time, remembered per
//! handle; only the write's own range when the region does not fit), which fails with
//! `ENOSPC` as an ordinary error. Where the file system has no
//! `fallocate`, writes fall back to `pwrite` (coherent with the mapping: both go through the
//! page cache). Reading a hole maps the shared zero page and allocates nothing.
//!
//! A read error of the device under a mapped page (`EIO`) is also a `SIGBUS`; positioned I/O
//! reports it as an error. Prefer `file` mode on failing disks.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use memmap2::MmapOptions;

use super::error::StorageError;
use super::error::{clone_io, io_err};
use super::handle::{Handle, Mapping};
use super::options::StorageMode;
use crate::lock::{MutexExt, RwLockExt};

/// Region `fallocate`d at once before writing through a mapping (bytes).
const RESERVE_CHUNK: u64 = 4 << 20;

/// The file's size now (`fstat`).
fn file_len(path: &Path, h: &Handle) -> Result<u64, StorageError> {
    h.file
        .metadata()
        .map(|m| m.len())
        .map_err(|e| io_err("checking", path, e))
}

fn truncated(path: &Path, length: u64, needed: u64) -> StorageError {
    StorageError::Truncated {
        path: path.to_path_buf(),
        length,
        needed,
    }
}

/// A mapping of `h` covering at least bytes `..need` (writable if `write`), made or
/// replaced as needed: `map_len` bytes are mapped (the torrent's length of the file, or
/// less for a short file that is only read). The caller checked `need <= file size`.
fn mapping(
    path: &Path,
    h: &Handle,
    need: u64,
    map_len: u64,
    write: bool,
) -> Result<Arc<Mapping>, StorageError> {
    if let Some(m) = h.map.read_locked().as_ref()
        && m.covers(need, write)
    {
        return Ok(m.clone());
    }
    let mut slot = h.map.write_locked();
    if let Some(m) = slot.as_ref()
        && m.covers(need, write)
    {
        return Ok(m.clone());
    }
    let len = usize::try_from(map_len.max(need))
        .map_err(|_| io_err("mapping", path, io::Error::from_raw_os_error(libc::EFBIG)))?;
    let writable = h.read_only.is_none();
    if write && !writable {
        let e = h
            .read_only
            .as_ref()
            .map_or_else(|| io::Error::from_raw_os_error(libc::EBADF), clone_io);
        return Err(io_err("writing", path, e));
    }
    let mut opts = MmapOptions::new();
    opts.len(len);
    let raw = if writable {
        opts.map_raw(&h.file)
    } else {
        opts.map_raw_read_only(&h.file)
    }
    .map_err(|e| io_err("mapping", path, e))?;
    let m = Arc::new(Mapping::new(raw, len as u64, writable));
    *slot = Some(m.clone());
    Ok(m)
}

/// Fill `buf` from byte `at` of the file (`file_length`: the torrent's length of it).
pub(crate) fn read(
    mode: StorageMode,
    path: &Path,
    file_length: u64,
    h: &Handle,
    at: u64,
    buf: &mut [u8],
) -> Result<(), StorageError> {
    let need = at + buf.len() as u64;
    match mode {
        StorageMode::File => h.file.read_exact_at(buf, at).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                truncated(path, h.file.metadata().map_or(0, |m| m.len()), need)
            } else {
                io_err("reading", path, e)
            }
        }),
        StorageMode::Mmap => {
            let len = file_len(path, h)?;
            if need > len {
                return Err(truncated(path, len, need));
            }
            let m = mapping(path, h, need, len.min(file_length), false)?;
            // SAFETY: the mapping covers `..need` and the file was at least `need` bytes
            // long just now (see the module docs for the truncation race); `buf` is ours and
            // cannot overlap a fresh mapping.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    m.ptr().add(at as usize),
                    buf.as_mut_ptr(),
                    buf.len(),
                );
            }
            Ok(())
        }
    }
}

/// `mmap` mode: call `f` with bytes `at..at+len` of the file straight from its mapping
/// (`file_length`: the torrent's length of the file).
pub(crate) fn visit_mapped(
    path: &Path,
    file_length: u64,
    h: &Handle,
    at: u64,
    len: usize,
    f: &mut dyn FnMut(&[u8]),
) -> Result<(), StorageError> {
    let need = at + len as u64;
    let flen = file_len(path, h)?;
    if need > flen {
        return Err(truncated(path, flen, need));
    }
    let m = mapping(path, h, need, flen.min(file_length), false)?;
    // SAFETY: as in `read`; the slice lives only for the call to `f`, which only reads it
    // (hashing). Another process writing the file meanwhile would change the bytes seen,
    // not their validity as `u8`s.
    let bytes = unsafe { std::slice::from_raw_parts(m.ptr().add(at as usize), len) };
    f(bytes);
    Ok(())
}

/// `fallocate(fd, 0, offset, len)`.
pub(crate) fn fallocate(h: &Handle, offset: u64, len: u64) -> io::Result<()> {
    let (Ok(off), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Err(io::Error::from_raw_os_error(libc::EFBIG));
    };
    loop {
        // SAFETY: plain syscall on a file descriptor we own.
        let rc = unsafe { libc::fallocate(h.file.as_raw_fd(), 0, off, len) };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// True for the errors of a file system without `fallocate`.
pub(crate) fn unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL)
    )
}

/// Write `data` at byte `at` of the file. The caller prepared the handle for writing
/// (read-only refused; in `mmap` mode the file extended to `file_length`).
pub(crate) fn write(
    mode: StorageMode,
    path: &Path,
    file_length: u64,
    h: &Handle,
    at: u64,
    data: &[u8],
) -> Result<(), StorageError> {
    match mode {
        StorageMode::File => h
            .file
            .write_all_at(data, at)
            .map_err(|e| io_err("writing", path, e)),
        StorageMode::Mmap => {
            let need = at + data.len() as u64;
            let len = file_len(path, h)?;
            if need > len {
                // someone cut the file after we sized it: what was written there is gone
                return Err(truncated(path, len, need));
            }
            if !reserve(h, at, data.len() as u64, file_length.min(len))
                .map_err(|e| io_err("writing", path, e))?
            {
                return h
                    .file
                    .write_all_at(data, at)
                    .map_err(|e| io_err("writing", path, e));
            }
            let m = mapping(path, h, need, file_length.min(len), true)?;
            // SAFETY: the mapping is writable and covers `..need`; the file is at least
            // `need` bytes and the range's blocks are allocated (no SIGBUS on a full disk).
            // Concurrent writers touch disjoint blocks (one disk worker owns a piece).
            unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr(), m.ptr().add(at as usize), data.len());
            }
            Ok(())
        }
    }
}

/// Make sure the blocks of `at..at+len` are allocated (4 MiB aligned regions, clamped to
/// `end`). `Ok(false)`: the file system has no `fallocate` (write with `pwrite` instead).
fn reserve(h: &Handle, at: u64, len: u64, end: u64) -> io::Result<bool> {
    if h.reserved_all.load(std::sync::atomic::Ordering::Acquire) {
        return Ok(true);
    }
    let first = at / RESERVE_CHUNK;
    let last = (at + len).saturating_sub(1) / RESERVE_CHUNK;
    let mut done = h.reserved.locked();
    for c in first..=last {
        if done.contains(&c) {
            continue;
        }
        let a = c * RESERVE_CHUNK;
        let b = ((c + 1) * RESERVE_CHUNK).min(end);
        if b <= a {
            continue;
        }
        match fallocate(h, a, b - a) {
            Ok(()) => {
                done.insert(c);
            }
            Err(e) if unsupported(&e) => return Ok(false),
            // not room for the whole region: maybe for the write itself
            Err(e)
                if e.raw_os_error() == Some(libc::ENOSPC)
                    || e.raw_os_error() == Some(libc::EDQUOT) =>
            {
                let (x, y) = (at.max(a), (at + len).min(b));
                fallocate(h, x, y - x)?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}
