//! What a running torrent holds while it serves peers: the state its connections share,
//! with the storage they write to and read from. It lives in the running states
//! ([`Lifecycle::Downloading`](super::state::Lifecycle::Downloading) and
//! [`Lifecycle::Seeding`](super::state::Lifecycle::Seeding)), made when the first peer comes
//! and dropped when the torrent goes quiet or leaves them; the state machine hands it back
//! with [`Effect::Deactivate`](super::state::Effect::Deactivate) so the torrent keeps its
//! verified pieces and byte counters.

use std::fmt;
use std::sync::Arc;

use crate::engine::link::shared::TorrentShared;
use crate::storage::disk::TorrentDisk;

/// The shared state of a running torrent's connections (picker, verified pieces, counters)
/// and, through it, its storage ([`TorrentShared::disk`]). Not `Clone`: one per running
/// state. Dropping it tells the disk threads to forget the hasher states of its partial
/// pieces (they are fetched again next time).
pub struct Live {
    shared: Arc<TorrentShared>,
}

impl Live {
    /// Hold `shared` (and its storage) for a running state.
    pub fn new(shared: Arc<TorrentShared>) -> Live {
        Live { shared }
    }

    /// The state the connections share.
    pub fn shared(&self) -> &Arc<TorrentShared> {
        &self.shared
    }

    /// The storage the connections write to and read from.
    pub fn disk(&self) -> &Arc<TorrentDisk> {
        &self.shared.disk
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.shared.ctx.pool.forget(self.shared.disk.key);
    }
}

/// Two are equal when they hold the same shared state.
impl PartialEq for Live {
    fn eq(&self, other: &Live) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl Eq for Live {}

impl fmt::Debug for Live {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Live")
            .field("torrent", &self.shared.id)
            .field("disk", &self.shared.disk.key)
            .finish_non_exhaustive()
    }
}

/// Small stand-ins for the state machine's tests: a storage of one 32 KiB file that is
/// never touched, shared state over it, and a metadata fetch.
#[cfg(test)]
pub(crate) mod fixture {
    use std::sync::Arc;

    use super::Live;
    use crate::api::TorrentId;
    use crate::engine::link::ctx::{Limits, LinkCtx};
    use crate::engine::link::metadata::MetadataFetch;
    use crate::engine::link::shared::TorrentShared;
    use crate::engine::picker::Picker;
    use crate::engine::torrent::jobs::Fetch;
    use crate::metainfo::InfoHash;
    use crate::piece::{Bitfield, Geometry};
    use crate::storage::disk::TorrentDisk;
    use crate::storage::{Storage, StorageOptions};

    fn geometry() -> Geometry {
        Geometry::new(32 * 1024, 16 * 1024, 2).expect("two 16 KiB pieces")
    }

    /// A storage keyed `key` in a folder that is never created.
    pub(crate) fn disk(key: u64) -> Arc<TorrentDisk> {
        let root = std::env::temp_dir().join("ratorrent-live-fixture-never-created");
        let storage = Storage::with_options(
            &root,
            vec![("a".into(), 0, 32 * 1024, false)],
            32 * 1024,
            StorageOptions::default(),
        )
        .expect("a plain file name");
        Arc::new(TorrentDisk {
            key,
            storage,
            geometry: geometry(),
            hashes: crate::piece::PieceHashes::v1(vec![[0; 20]; 2]),
            unchecked: crate::piece::HaveBits::new(2),
            sink: Arc::new(|_| {}),
        })
    }

    fn link() -> Arc<LinkCtx> {
        Arc::new(LinkCtx::new(
            0,
            false,
            0,
            Arc::new(Limits::unlimited()),
            Default::default(),
            Box::new(|_, _, _| {}),
        ))
    }

    /// A metadata fetch of the same torrent, nothing fetched.
    pub(crate) fn fetch() -> Fetch {
        Fetch::new(MetadataFetch::new(
            TorrentId(1),
            InfoHash([1; 20]),
            1 << 20,
            link(),
        ))
    }

    /// Shared state over [`disk`]`(key)`, nothing verified.
    pub(crate) fn live(key: u64) -> Live {
        let link = link();
        let geo = geometry();
        Live::new(Arc::new(TorrentShared::new(
            TorrentId(1),
            InfoHash([1; 20]),
            geo,
            Picker::new(geo, Bitfield::new(2)),
            disk(key),
            link,
            Arc::new(Limits::unlimited()),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::fixture;
    use std::sync::atomic::Ordering;

    #[test]
    fn the_disk_is_the_shared_states() {
        let l = fixture::live(5);
        assert_eq!(l.disk().key, 5);
        assert!(std::sync::Arc::ptr_eq(l.disk(), &l.shared().disk));
        l.shared().stats.downloaded.fetch_add(7, Ordering::Relaxed);
        assert_eq!(l.shared().stats.downloaded.load(Ordering::Relaxed), 7);
    }

    #[test]
    fn live_states_are_told_apart_by_their_shared_state() {
        let a = fixture::live(1);
        let b = fixture::live(1);
        assert_eq!(a, a);
        assert_ne!(a, b, "same key, another shared state");
        assert!(format!("{a:?}").contains("disk: 1"));
    }
}
