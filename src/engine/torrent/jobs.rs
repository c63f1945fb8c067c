//! The background work a life-cycle state owns: a check of the data on disk (owned by
//! [`Lifecycle::Checking`](super::state::Lifecycle::Checking)) and a move of the files
//! (owned by [`Lifecycle::Moving`](super::state::Lifecycle::Moving)). Each exists exactly
//! while its state does: leaving the state drops it, and dropping a check stops its
//! hashing thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crate::engine::link::metadata::MetadataFetch;
use crate::storage::disk::TorrentDisk;

/// A check of the data on disk in progress: its key (results of an older check are told
/// apart by it), the storage it reads (opened for the check, closed with it), the pieces
/// checked so far, and the flag that stops the hashing thread.
/// Not `Clone`: the one job lives in the `Checking` state, and dropping it (the state is
/// left: a pause, a recheck, an error, the check finished) raises the stop flag.
#[derive(Debug)]
pub struct CheckJob {
    key: u64,
    disk: Arc<TorrentDisk>,
    progress: Arc<AtomicU32>,
    cancel: Arc<AtomicBool>,
}

/// What the hashing thread of a [`CheckJob`] holds: where it counts the pieces checked,
/// and the flag it polls to stop early.
#[derive(Debug, Clone)]
pub struct CheckHandles {
    /// Pieces checked so far (the thread adds to it).
    pub progress: Arc<AtomicU32>,
    /// Raised when the check is no longer wanted.
    pub cancel: Arc<AtomicBool>,
}

impl CheckJob {
    /// A new check tagged `key` (fresh per check, from the session's key counter) of the
    /// files of `disk`.
    pub fn new(key: u64, disk: Arc<TorrentDisk>) -> CheckJob {
        CheckJob {
            key,
            disk,
            progress: Arc::new(AtomicU32::new(0)),
            cancel: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The key its result comes back with.
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The storage the check reads.
    pub fn disk(&self) -> &Arc<TorrentDisk> {
        &self.disk
    }

    /// Pieces checked so far.
    pub fn checked(&self) -> u32 {
        self.progress.load(Ordering::Relaxed)
    }

    /// The counters the hashing thread works with.
    pub fn handles(&self) -> CheckHandles {
        CheckHandles {
            progress: self.progress.clone(),
            cancel: self.cancel.clone(),
        }
    }

    /// Stop the hashing thread (it ends at its next piece; its result is not sent).
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

impl Drop for CheckJob {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// Two jobs are the same check when their keys are.
impl PartialEq for CheckJob {
    fn eq(&self, other: &CheckJob) -> bool {
        self.key == other.key
    }
}

impl Eq for CheckJob {}

/// The bytes moved so far while a torrent's files move to another folder; the mover
/// thread adds to a clone of it, the list row reads it.
#[derive(Debug, Clone, Default)]
pub struct MoveProgress(Arc<AtomicU64>);

impl MoveProgress {
    /// The counter the mover thread adds to, bytes.
    pub fn counter(&self) -> &Arc<AtomicU64> {
        &self.0
    }

    /// Bytes moved so far.
    pub fn moved(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Two progress counters are equal when they are the same counter.
impl PartialEq for MoveProgress {
    fn eq(&self, other: &MoveProgress) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for MoveProgress {}

/// The fetch of a magnet link's info dictionary (BEP 9) that the metadata connections
/// share: owned by [`Lifecycle::FetchingMetadata`](super::state::Lifecycle::FetchingMetadata),
/// then kept through the check that follows so those connections go on with the full
/// protocol. A handle: clones are the same fetch.
#[derive(Debug, Clone)]
pub struct Fetch(Arc<MetadataFetch>);

impl Fetch {
    /// Own `fetch`.
    pub fn new(fetch: MetadataFetch) -> Fetch {
        Fetch(Arc::new(fetch))
    }

    /// The fetch, as the metadata connections hold it.
    pub fn get(&self) -> &Arc<MetadataFetch> {
        &self.0
    }
}

/// Two are equal when they are the same fetch.
impl PartialEq for Fetch {
    fn eq(&self, other: &Fetch) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Fetch {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::torrent::live::fixture;

    fn job(key: u64) -> CheckJob {
        CheckJob::new(key, fixture::disk(key))
    }

    #[test]
    fn dropping_a_check_stops_its_thread() {
        let job = job(7);
        let h = job.handles();
        assert!(!h.cancel.load(Ordering::Relaxed));
        h.progress.fetch_add(3, Ordering::Relaxed);
        assert_eq!(job.checked(), 3, "the thread's count is the job's");
        assert_eq!(job.key(), 7);
        assert_eq!(job.disk().key, 7, "the storage it reads");
        drop(job);
        assert!(
            h.cancel.load(Ordering::Relaxed),
            "the thread sees the stop flag"
        );
    }

    #[test]
    fn cancel_raises_the_flag_without_dropping() {
        let job = job(1);
        let h = job.handles();
        job.cancel();
        assert!(h.cancel.load(Ordering::Relaxed));
        assert_eq!(job.checked(), 0);
    }

    #[test]
    fn checks_are_told_apart_by_key() {
        assert_eq!(job(4), job(4));
        assert_ne!(job(4), job(5));
    }

    #[test]
    fn fetches_are_told_apart_by_identity() {
        let f = fixture::fetch();
        let same = f.clone();
        assert_eq!(f, same);
        assert!(Arc::ptr_eq(f.get(), same.get()));
        assert_ne!(f, fixture::fetch(), "another fetch of the same torrent");
    }

    #[test]
    fn move_progress_is_shared_with_the_mover() {
        let p = MoveProgress::default();
        let mover = p.clone();
        mover.counter().fetch_add(4096, Ordering::Relaxed);
        assert_eq!(p.moved(), 4096);
        assert_eq!(p, mover, "the same counter");
        assert_ne!(p, MoveProgress::default(), "another move's counter");
    }
}
