//! Open file handles, bounded session-wide: a least-recently-used cache shared by every
//! [`super::Storage`] of a session, so 10,000 seeding torrents never run out of file
//! descriptors.
//!
//! Each file of a torrent has a cell: its open handle (if any), when it was last
//! used, and the identity (device, inode, birth time) of the file the torrent last saw at its path. A
//! [`HandleCache`] knows every cell with an open handle; when opening one more would pass its
//! cap, it drops the handle of the cell used least recently. A handle is shared (`Arc`), so a
//! read or write that runs on it while it is dropped from its cell finishes on it, and its file
//! descriptor is closed when that I/O ends: the number of open files may pass the cap by the
//! number of I/Os in flight (one per disk or check thread), never more. In `mmap` mode a
//! handle also holds the file's mapping, so the same cap bounds the mapped files.
//!
//! The identity outlives the handle: a file opened again after its handle was dropped must
//! still be the same file (same device, inode and birth time), or the torrent gets
//! [`super::StorageErrorKind::FileDeleted`] instead of silently using (or creating) another
//! file. [`super::Storage::close_all`] forgets the identities (the user may have put other
//! files in place, and a re-check reads whatever is there).
//!
//! The handle itself (`storage::handle::Handle`) lives below this cache and the I/O back ends.
//!
//! [`raise_fd_limit`] raises the process's soft `RLIMIT_NOFILE` to its hard limit.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use super::handle::{FileId, Handle};
use crate::lock::{MutexExt, RwLockExt};

/// Handles open at once by default (the config's `max_open_files` overrides it).
pub const DEFAULT_MAX_OPEN_FILES: usize = 512;

/// Fewest handles a cache keeps (a piece may span several files: fewer would thrash).
pub const MIN_MAX_OPEN_FILES: usize = 4;

/// One file's slot in the cache: its open handle, last use, and the identity of the file the
/// torrent last saw at its path.
#[derive(Debug, Default)]
pub(crate) struct HandleCell {
    /// The lock is only held to clone or replace the `Arc`, never across I/O.
    handle: RwLock<Option<Arc<Handle>>>,
    /// The cache's clock at the last use.
    used: AtomicU64,
    /// Identity of the file when the torrent first opened it since the last
    /// [`HandleCell::forget`].
    identity: Mutex<Option<FileId>>,
}

impl HandleCell {
    /// The open handle, if any (does not count as a use).
    pub(crate) fn get(&self) -> Option<Arc<Handle>> {
        self.handle.read_locked().clone()
    }

    /// The identity of the file last seen at the path, if it was opened since the last
    /// [`HandleCell::forget`].
    pub(crate) fn identity(&self) -> Option<FileId> {
        *self.identity.locked()
    }

    /// Forget the identity (after the handle was dropped: the next open takes whatever file
    /// is at the path).
    pub(crate) fn forget(&self) {
        *self.identity.locked() = None;
    }

    fn take(&self) -> Option<Arc<Handle>> {
        self.handle.write_locked().take()
    }

    fn key(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as usize
    }
}

/// The session's bounded set of open file handles (cheap to clone: clones share one cache).
///
/// Create one per session with [`HandleCache::new`] and give a clone to every
/// [`super::Storage`] ([`super::StorageOptions::handles`]). Never fails and never blocks on
/// I/O: dropping a handle only closes its descriptor (after the I/O using it, if any).
#[derive(Clone)]
pub struct HandleCache {
    inner: Arc<Inner>,
}

struct Inner {
    cap: usize,
    clock: AtomicU64,
    /// Every cell with an open handle (keyed by the cell's address).
    open: Mutex<HashMap<usize, Weak<HandleCell>>>,
    opened: AtomicU64,
    evicted: AtomicU64,
}

impl fmt::Debug for HandleCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandleCache")
            .field("cap", &self.inner.cap)
            .field("open", &self.open_count())
            .finish()
    }
}

impl Default for HandleCache {
    /// The process-wide cache ([`HandleCache::process`]).
    fn default() -> Self {
        HandleCache::process()
    }
}

impl HandleCache {
    /// A cache keeping at most `max_open` handles open (at least [`MIN_MAX_OPEN_FILES`]).
    pub fn new(max_open: usize) -> HandleCache {
        HandleCache {
            inner: Arc::new(Inner {
                cap: max_open.max(MIN_MAX_OPEN_FILES),
                clock: AtomicU64::new(1),
                open: Mutex::new(HashMap::new()),
                opened: AtomicU64::new(0),
                evicted: AtomicU64::new(0),
            }),
        }
    }

    /// One cache for the whole process, of [`DEFAULT_MAX_OPEN_FILES`] handles: what a
    /// [`super::Storage`] uses when it is given none (file descriptors are a per-process
    /// resource, so sharing this one is always safe).
    pub fn process() -> HandleCache {
        HandleCache::process_with_capacity(DEFAULT_MAX_OPEN_FILES)
    }

    /// The process-wide cache ([`HandleCache::process`]), made with `max_open` handles if
    /// this is the first call that asks for it (a later call gets the same cache, whatever
    /// its `max_open`).
    pub fn process_with_capacity(max_open: usize) -> HandleCache {
        static PROCESS: OnceLock<HandleCache> = OnceLock::new();
        PROCESS.get_or_init(|| HandleCache::new(max_open)).clone()
    }

    /// Most handles kept open.
    pub fn capacity(&self) -> usize {
        self.inner.cap
    }

    /// Handles open now (approximate while other threads open or close files).
    pub fn open_count(&self) -> usize {
        self.lock().len()
    }

    /// Files opened through this cache so far.
    pub fn opened_total(&self) -> u64 {
        self.inner.opened.load(Ordering::Relaxed)
    }

    /// Handles closed to make room so far.
    pub fn evicted_total(&self) -> u64 {
        self.inner.evicted.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<usize, Weak<HandleCell>>> {
        self.inner.open.locked()
    }

    /// Mark `cell` used now.
    #[inline]
    pub(crate) fn touch(&self, cell: &HandleCell) {
        let now = self.inner.clock.fetch_add(1, Ordering::Relaxed);
        cell.used.store(now, Ordering::Relaxed);
    }

    /// Put `h` into `cell` (unless another thread got there first: then that handle is
    /// returned and `h` is closed), recording its identity, and close the least recently
    /// used handles beyond the cap.
    pub(crate) fn install(&self, cell: &Arc<HandleCell>, h: Handle) -> Arc<Handle> {
        let h = {
            let mut slot = cell.handle.write_locked();
            if let Some(existing) = &*slot {
                return existing.clone();
            }
            let mut id = cell.identity.locked();
            if id.is_none() {
                *id = Some(h.id);
            }
            let h = Arc::new(h);
            *slot = Some(h.clone());
            h
        };
        self.touch(cell);
        self.inner.opened.fetch_add(1, Ordering::Relaxed);
        // lock order: the registry, then a cell (never a cell's lock while taking this one)
        let mut open = self.lock();
        open.insert(cell.key(), Arc::downgrade(cell));
        while open.len() > self.inner.cap {
            let mut victim: Option<(usize, u64)> = None;
            let mut dead = Vec::new();
            for (k, w) in open.iter() {
                if *k == cell.key() {
                    continue;
                }
                match w.upgrade() {
                    Some(c) => {
                        let used = c.used.load(Ordering::Relaxed);
                        if victim.is_none_or(|(_, u)| used < u) {
                            victim = Some((*k, used));
                        }
                    }
                    None => dead.push(*k),
                }
            }
            for k in dead {
                open.remove(&k);
            }
            if open.len() <= self.inner.cap {
                break;
            }
            let Some((k, _)) = victim else { break };
            if let Some(c) = open.remove(&k).and_then(|w| w.upgrade()) {
                // the I/O using it (if any) keeps it open until done
                drop(c.take());
                self.inner.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
        h
    }

    /// Drop `cell`'s handle (closed once no I/O uses it); its identity is kept.
    pub(crate) fn close(&self, cell: &Arc<HandleCell>) {
        let h = cell.take();
        if h.is_some() {
            self.lock().remove(&cell.key());
        }
        drop(h);
    }
}

/// Raise the soft limit on open files (`RLIMIT_NOFILE`) to the hard limit, so the handle
/// cache, sockets and part files have room. Returns the limits in force afterwards as
/// `(soft, hard)`; if the limit cannot be read or raised, returns what it is (or `(0, 0)`
/// when it cannot even be read) and changes nothing. Never panics.
pub fn raise_fd_limit() -> (u64, u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return (0, 0);
    }
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `want` is a valid rlimit for the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
            lim = want;
        }
    }
    (lim.rlim_cur, lim.rlim_max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;

    fn handle_for(path: &std::path::Path) -> Handle {
        let file = File::open(path).unwrap();
        let m = file.metadata().unwrap();
        Handle::new(file, None, FileId::of(&m))
    }

    #[test]
    fn least_recently_used_handles_are_closed_beyond_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HandleCache::new(4);
        let cells: Vec<Arc<HandleCell>> = (0..6).map(|_| Arc::default()).collect();
        for (i, c) in cells.iter().enumerate() {
            let p = dir.path().join(format!("f{i}"));
            std::fs::write(&p, b"x").unwrap();
            cache.install(c, handle_for(&p));
            if i == 3 {
                cache.touch(&cells[0]); // 0 is recent now: 1 goes first
            }
        }
        assert_eq!(cache.open_count(), 4);
        let open: Vec<bool> = cells.iter().map(|c| c.get().is_some()).collect();
        assert_eq!(open, vec![true, false, false, true, true, true]);
        assert_eq!(cache.evicted_total(), 2);
        // identities are kept across eviction
        assert!(cells[1].identity().is_some());
        // a handle in use stays usable after eviction
        let held = cells[3].get().unwrap();
        for c in &cells[..3] {
            cache.close(c);
        }
        let p = dir.path().join("g");
        std::fs::write(&p, b"y").unwrap();
        for _ in 0..3 {
            let c: Arc<HandleCell> = Arc::default();
            cache.install(&c, handle_for(&p));
            drop(c); // a dropped cell's entry must not count forever
        }
        assert!(held.file.metadata().is_ok());
        assert!(cache.open_count() <= 4);
    }

    #[test]
    fn fd_limit_is_raised_to_the_hard_limit() {
        let (soft, hard) = raise_fd_limit();
        assert!(soft > 0 && soft == hard, "{soft} {hard}");
    }
}
