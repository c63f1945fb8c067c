//! The part of a running torrent that its peer connections touch: verified pieces (lock-free),
//! the picker (a short `std::sync::Mutex`, never held across an await), byte counters
//! (atomics) and the storage handle. It exists while the torrent is checked or running; a
//! paused, queued or failed torrent holds none of it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use bytes::Bytes;

use super::ctx::{Limits, LinkCtx};
use super::message::PeerEvent;
use crate::api::TorrentId;
use crate::engine::picker::Picker;
use crate::lock::MutexExt;
use crate::metainfo::InfoHash;
use crate::piece::merkle::LayerTree;
use crate::piece::{BlockRef, Geometry, HaveBits, V2File};
use crate::storage::disk::{TorrentDisk, UploadReply};

/// Payload byte counters of a torrent (this run; the torrent adds earlier runs' totals).
#[derive(Debug, Default)]
pub struct TransferStats {
    /// Payload bytes received (including duplicates and failed pieces).
    pub downloaded: AtomicU64,
    /// Payload bytes sent.
    pub uploaded: AtomicU64,
    /// Payload bytes received but not used (duplicates, failed pieces).
    pub wasted: AtomicU64,
}

/// What peer connections share with their torrent.
#[derive(Debug)]
pub struct TorrentShared {
    /// The torrent.
    pub id: TorrentId,
    /// v1 info hash.
    pub info_hash: InfoHash,
    /// Piece and block geometry.
    pub geometry: Geometry,
    /// Verified pieces.
    pub have: HaveBits,
    /// Byte counters.
    pub stats: TransferStats,
    /// Files on disk, for the disk threads.
    pub disk: Arc<TorrentDisk>,
    /// The session, as connections see it.
    pub ctx: Arc<LinkCtx>,
    /// This torrent's own rate limits (bytes/s, 0 = unlimited), on top of the session's.
    pub limits: Arc<Limits>,
    picker: Mutex<Picker>,
    accepting: AtomicBool,
    /// The torrent may use the DHT (DHT on, not private): BEP 5 `port` messages are sent
    /// and acted upon.
    dht: AtomicBool,
    metadata: OnceLock<Arc<[u8]>>,
    private: AtomicBool,
    /// Per v2 file (BEP 52, [`TorrentDisk::hashes`]), the levels above its piece layer,
    /// made the first time a peer asks for its hashes.
    layer_trees: Box<[OnceLock<LayerTree>]>,
}

impl TorrentShared {
    /// Shared state for torrent `id` with the verified pieces in `picker`.
    pub fn new(
        id: TorrentId,
        info_hash: InfoHash,
        geometry: Geometry,
        picker: Picker,
        disk: Arc<TorrentDisk>,
        ctx: Arc<LinkCtx>,
        limits: Arc<Limits>,
    ) -> TorrentShared {
        let v2_files = disk.hashes.v2.as_ref().map_or(0, |v| v.files.len());
        TorrentShared {
            layer_trees: (0..v2_files).map(|_| OnceLock::new()).collect(),
            limits,
            id,
            info_hash,
            geometry,
            have: HaveBits::from_bitfield(picker.have()),
            stats: TransferStats::default(),
            disk,
            ctx,
            picker: Mutex::new(picker),
            accepting: AtomicBool::new(false),
            metadata: OnceLock::new(),
            private: AtomicBool::new(false),
            dht: AtomicBool::new(false),
        }
    }

    /// The v2 file whose `pieces root` is `root` (BEP 52), with its index among the v2 files.
    pub fn v2_file(&self, root: &[u8; 32]) -> Option<(usize, &V2File)> {
        let v2 = self.disk.hashes.v2.as_ref()?;
        v2.files.iter().enumerate().find(|(_, f)| &f.root == root)
    }

    /// The tree above v2 file `index`'s piece layer (made once, then kept), `None` when its
    /// layer is not known.
    pub fn layer_tree(&self, index: usize) -> Option<&LayerTree> {
        let v2 = self.disk.hashes.v2.as_ref()?;
        let f = v2.files.get(index)?;
        let layer = f.layer.as_ref()?;
        let slot = self.layer_trees.get(index)?;
        Some(slot.get_or_init(|| LayerTree::new(layer, v2.piece_level(), f.levels())))
    }

    /// Serve `info` (the bencoded info dictionary) to peers that ask (BEP 9); set once.
    pub fn set_metadata(&self, info: Arc<[u8]>) {
        let _ = self.metadata.set(info);
    }

    /// The info dictionary we serve (BEP 9), if set.
    pub fn metadata(&self) -> Option<&Arc<[u8]>> {
        self.metadata.get()
    }

    /// Mark the torrent private (BEP 27): no PEX.
    pub fn set_private(&self, yes: bool) {
        self.private.store(yes, Ordering::Relaxed);
    }

    /// The torrent is private (BEP 27).
    pub fn is_private(&self) -> bool {
        self.private.load(Ordering::Relaxed)
    }

    /// The DHT node, when this torrent may use it (see [`TorrentShared::set_dht`]).
    pub fn dht(&self) -> Option<crate::dht::Dht> {
        if self.dht.load(Ordering::Relaxed) {
            self.ctx.dht.get()
        } else {
            None
        }
    }

    /// Allow (a public torrent with the DHT on) or forbid (BEP 27 private) DHT use by
    /// its connections.
    pub fn set_dht(&self, yes: bool) {
        self.dht.store(yes, Ordering::Relaxed);
    }

    /// Number of pieces.
    pub fn piece_count(&self) -> u32 {
        self.geometry.piece_count()
    }

    /// Lock the picker. Never hold the guard across an await point.
    pub fn picker(&self) -> MutexGuard<'_, Picker> {
        self.picker.locked()
    }

    /// Whether peers are served now (false once the torrent stops: connections wind down).
    pub fn accepting(&self) -> bool {
        self.accepting.load(Ordering::Acquire)
    }

    /// Start or stop serving peers.
    pub fn set_accepting(&self, yes: bool) {
        self.accepting.store(yes, Ordering::Release);
    }

    /// Every piece verified.
    pub fn is_complete(&self) -> bool {
        self.have.is_full()
    }

    /// Queue a received block for writing and hashing (waits while the disk queue is full).
    pub async fn write_block(&self, piece: u32, begin: u32, data: Bytes) {
        self.ctx.pool.write(&self.disk, piece, begin, data).await;
    }

    /// Read `blocks` for uploading into `buf` (reused); `reply` gets them on a disk thread.
    pub fn read_for_upload(&self, blocks: Vec<BlockRef>, buf: Vec<u8>, reply: UploadReply) {
        self.ctx
            .pool
            .read_for_upload(&self.disk, blocks, buf, reply);
    }

    /// The download limit in effect for this torrent: the tighter of its own and the
    /// session's (bytes/s, 0 = unlimited).
    pub fn download_limit(&self) -> u64 {
        crate::engine::rate::tighter(self.ctx.limits.download.rate(), self.limits.download.rate())
    }

    /// Count `bytes` read from a peer against both download limits; how long to pause.
    pub fn debit_download(&self, bytes: u64) -> std::time::Duration {
        crate::engine::rate::debit_both(&self.ctx.limits.download, &self.limits.download, bytes)
    }

    /// Count `bytes` sent to a peer against both upload limits, sleeping off any debt.
    pub async fn consume_upload(&self, bytes: u64) {
        let wait =
            crate::engine::rate::debit_both(&self.ctx.limits.upload, &self.limits.upload, bytes);
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// Tell the torrent about connection `key`.
    pub fn peer_event(&self, key: u64, event: PeerEvent) {
        self.ctx.peer_event(self.id, key, event);
    }
}
