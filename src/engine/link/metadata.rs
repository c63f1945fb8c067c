//! Fetching a magnet link's info dictionary (BEP 9) from every connected peer at once.
//!
//! One [`MetadataFetch`] per torrent in `FetchingMetadata`, shared by its metadata
//! connections (`engine::peer_conn::metadata`). The first usable `metadata_size`
//! a peer gives sizes the [`Assembly`]; peers that say another size are not asked. Pieces
//! are handed out one peer at a time (at most [`PER_PEER`] in flight each), a request not
//! answered in [`REQUEST_TIMEOUT`] or rejected goes to another peer, and a peer that sends
//! a piece that does not fit is dropped. When the whole does not hash to the info hash the
//! next attempts take every piece from a single peer, so the liar is found: a single-source
//! attempt that fails again drops that peer.
//!
//! A v2-only torrent (BEP 52) also needs the piece layers the info dictionary does not
//! carry: once it is verified, they are fetched from the same connections
//! ([`super::layers::LayerFetch`]), and the torrent hears that the metadata is complete
//! only when they are in.
//!
//! All methods take a short lock and never block; memory is bounded by the size cap
//! (`max_metadata_size`) and the per-peer request limit.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::ctx::LinkCtx;
use super::layers::{LayerError, LayerFetch};
use super::message::PeerEvent;
use super::shared::TorrentShared;
use crate::api::TorrentId;
use crate::lock::MutexExt;
use crate::metainfo::InfoHash;
use crate::peer::metadata::{Assembly, MetadataError, Progress};
use crate::peer::wire::HashRequest;

/// Metadata requests in flight to one peer.
pub const PER_PEER: usize = 8;
/// A metadata request not answered in this long is asked of another peer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// What [`MetadataFetch::on_data`] tells the connection.
#[derive(Debug, PartialEq, Eq)]
pub enum DataOutcome {
    /// Kept (or a duplicate); ask for more.
    More,
    /// The info dictionary is complete and verified (the torrent was told).
    Done,
    /// The whole failed its hash; the attempt starts over (maybe without this peer).
    Retry,
    /// This peer lied once too often: close the connection.
    DropPeer,
}

#[derive(Debug, Default)]
struct State {
    assembly: Option<Assembly>,
    /// piece → (peer, when asked)
    requested: HashMap<u32, (u64, Instant)>,
    /// Pieces a peer refused (not asked of it again).
    rejected: HashSet<(u64, u32)>,
    /// Peers whose pieces went into the current attempt.
    contributors: HashSet<u64>,
    /// After a hash failure: the one peer this attempt takes every piece from.
    single_source: Option<u64>,
    /// Hash failures so far.
    failures: u32,
    /// Peers that lied (wrong size, failed single-source attempt).
    excluded: HashSet<u64>,
    /// The verified info dictionary, once complete.
    done: Option<Arc<Vec<u8>>>,
    /// The piece layers of a v2-only torrent being fetched, once the info dictionary is in.
    layers: Option<LayerFetch>,
}

/// The metadata fetch of one torrent.
#[derive(Debug)]
pub struct MetadataFetch {
    /// The torrent.
    pub torrent: TorrentId,
    /// The info hash the info dictionary must hash to (SHA-1, BEP 3; for a v2-only link
    /// the v2 hash cut to 20 bytes, not checked as SHA-1).
    pub info_hash: InfoHash,
    /// The v2 info hash (BEP 52) it must hash to with SHA-256, when the link gives one.
    pub info_hash_v2: Option<[u8; 32]>,
    /// Largest info dictionary accepted, bytes (`max_metadata_size`).
    pub cap: u32,
    /// The session, as connections see it.
    pub ctx: Arc<LinkCtx>,
    /// Pieces held now (for progress).
    pub have: AtomicU32,
    /// Pieces in all (0 until a peer gave the size).
    pub total: AtomicU32,
    state: Mutex<State>,
    /// The torrent's shared state once it has its pieces: its metadata connections go on
    /// as established ones ([`super::message::PeerCtrl::Upgrade`]).
    upgrade: OnceLock<Arc<TorrentShared>>,
}

impl MetadataFetch {
    /// A fetch of the info dictionary of `info_hash`, at most `cap` bytes.
    pub fn new(
        torrent: TorrentId,
        info_hash: InfoHash,
        cap: u32,
        ctx: Arc<LinkCtx>,
    ) -> MetadataFetch {
        MetadataFetch {
            torrent,
            info_hash,
            info_hash_v2: None,
            cap,
            ctx,
            have: AtomicU32::new(0),
            total: AtomicU32::new(0),
            state: Mutex::new(State::default()),
            upgrade: OnceLock::new(),
        }
    }

    /// This fetch, checking the info dictionary against the v2 info hash too (BEP 52).
    #[must_use]
    pub fn with_v2(mut self, info_hash_v2: Option<[u8; 32]>) -> MetadataFetch {
        self.info_hash_v2 = info_hash_v2;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.locked()
    }

    /// Tell the torrent about connection `key`.
    pub fn peer_event(&self, key: u64, event: PeerEvent) {
        self.ctx.peer_event(self.torrent, key, event);
    }

    /// Peer `key` says the info dictionary has `size` bytes (already checked against the
    /// cap). Returns whether this peer can be asked (its size is the one being assembled).
    pub fn offer_size(&self, key: u64, size: u32) -> bool {
        let mut s = self.lock();
        if s.done.is_some() || s.excluded.contains(&key) {
            return false;
        }
        match &s.assembly {
            Some(a) => a.size() == size,
            None => {
                s.assembly = Some(Assembly::new(self.info_hash, size).with_v2(self.info_hash_v2));
                self.total
                    .store(crate::peer::metadata::piece_count(size), Ordering::Relaxed);
                true
            }
        }
    }

    /// Pieces peer `key` should be asked for now (it has `in_flight` requests out); marks
    /// them requested. Expired requests of other peers are handed out again.
    pub fn next_requests(&self, key: u64, in_flight: usize, now: Instant) -> Vec<u32> {
        let mut s = self.lock();
        let State {
            assembly,
            requested,
            rejected,
            single_source,
            excluded,
            done,
            ..
        } = &mut *s;
        let Some(a) = assembly else {
            return Vec::new();
        };
        if done.is_some() || excluded.contains(&key) || single_source.is_some_and(|p| p != key) {
            return Vec::new();
        }
        requested.retain(|_, (_, at)| now.duration_since(*at) < REQUEST_TIMEOUT);
        let mut out = Vec::new();
        for p in 0..a.piece_count() {
            if in_flight + out.len() >= PER_PEER {
                break;
            }
            if a.missing(p) && !requested.contains_key(&p) && !rejected.contains(&(key, p)) {
                requested.insert(p, (key, now));
                out.push(p);
            }
        }
        out
    }

    /// Peer `key` refused piece `piece`: someone else is asked.
    pub fn on_reject(&self, key: u64, piece: u32) {
        let mut s = self.lock();
        if s.requested.get(&piece).is_some_and(|(k, _)| *k == key) {
            s.requested.remove(&piece);
        }
        s.rejected.insert((key, piece));
        // a single source that refuses: any peer may serve again
        if s.single_source == Some(key) {
            s.single_source = None;
        }
    }

    /// Piece `piece` from peer `key`.
    ///
    /// # Errors
    /// The piece does not fit the assembly (wrong `total_size`, length or index): the peer
    /// is excluded and its connection should close with this error.
    pub fn on_data(
        &self,
        key: u64,
        piece: u32,
        total_size: i64,
        data: &[u8],
    ) -> Result<DataOutcome, MetadataError> {
        let mut s = self.lock();
        if s.done.is_some() {
            return Ok(DataOutcome::Done);
        }
        let Some(a) = s.assembly.as_mut() else {
            return Ok(DataOutcome::More);
        };
        let progress = match a.on_data(piece, total_size, data) {
            Ok(p) => p,
            Err(e) => {
                s.excluded.insert(key);
                s.requested.retain(|_, (k, _)| *k != key);
                return Err(e);
            }
        };
        if s.requested.get(&piece).is_some_and(|(k, _)| *k == key) {
            s.requested.remove(&piece);
        }
        match progress {
            Progress::Duplicate => Ok(DataOutcome::More),
            Progress::Stored { have, .. } => {
                s.contributors.insert(key);
                self.have.store(have, Ordering::Relaxed);
                Ok(DataOutcome::More)
            }
            Progress::Complete(info) => {
                s.layers = layers_wanted(&info);
                s.done = Some(Arc::new(info));
                s.requested.clear();
                self.have
                    .store(self.total.load(Ordering::Relaxed), Ordering::Relaxed);
                let waiting = s.layers.is_some();
                drop(s);
                if !waiting {
                    self.peer_event(key, PeerEvent::MetadataComplete);
                }
                Ok(DataOutcome::Done)
            }
            Progress::HashMismatch => {
                s.contributors.insert(key);
                s.failures += 1;
                s.requested.clear();
                self.have.store(0, Ordering::Relaxed);
                let drop_peer = if let Some(single) = s.single_source.take() {
                    // one peer sent it all and it is wrong: that peer lies
                    s.excluded.insert(single);
                    single == key
                } else {
                    false
                };
                // next attempt from one peer (this one, unless it is the liar)
                s.single_source = (!drop_peer).then_some(key);
                s.contributors.clear();
                tracing::warn!(
                    info_hash = %self.info_hash,
                    failures = s.failures,
                    "metadata failed its hash check; fetching it again"
                );
                Ok(if drop_peer {
                    DataOutcome::DropPeer
                } else {
                    DataOutcome::Retry
                })
            }
        }
    }

    /// Hash requests (BEP 52) peer `key`, which has `in_flight` out, should be sent now:
    /// none unless the piece layers are being fetched.
    pub fn next_hash_requests(&self, key: u64, in_flight: usize, now: Instant) -> Vec<HashRequest> {
        let mut s = self.lock();
        let State { done, layers, .. } = &mut *s;
        match (done, layers) {
            (Some(_), Some(l)) if !l.complete() => l.next_requests(key, in_flight, now),
            _ => Vec::new(),
        }
    }

    /// Whether piece layers are still being fetched (after the info dictionary).
    pub fn wants_layers(&self) -> bool {
        self.lock().layers.as_ref().is_some_and(|l| !l.complete())
    }

    /// Peer `key` sent `hashes` for `req`. Returns whether it answered a request of ours.
    ///
    /// # Errors
    /// The hashes are wrong or a flood: close the connection.
    pub fn on_hashes(
        &self,
        key: u64,
        req: &HashRequest,
        hashes: &[u8],
    ) -> Result<bool, LayerError> {
        let mut s = self.lock();
        let Some(l) = s.layers.as_mut() else {
            return Ok(false);
        };
        let was_complete = l.complete();
        let asked = l.on_hashes(key, req, hashes)?;
        let now_complete = l.complete();
        drop(s);
        if now_complete && !was_complete {
            tracing::debug!(info_hash = %self.info_hash, "piece layers complete (BEP 52)");
            self.peer_event(key, PeerEvent::MetadataComplete);
        }
        Ok(asked)
    }

    /// Peer `key` refused `req`. Returns whether it was a request of ours.
    ///
    /// # Errors
    /// A flood of refusals of requests never made: close the connection.
    pub fn on_hash_reject(&self, key: u64, req: &HashRequest) -> Result<bool, LayerError> {
        match self.lock().layers.as_mut() {
            Some(l) => l.on_reject(key, req),
            None => Ok(false),
        }
    }

    /// The piece layers fetched (by pieces root, as `piece layers` holds them).
    pub fn layers(&self) -> std::collections::BTreeMap<[u8; 32], Vec<u8>> {
        self.lock()
            .layers
            .as_ref()
            .map(LayerFetch::layers)
            .unwrap_or_default()
    }

    /// Connection `key` ended: its requests go to others.
    pub fn peer_gone(&self, key: u64) {
        let mut s = self.lock();
        if let Some(l) = s.layers.as_mut() {
            l.peer_gone(key);
        }
        s.requested.retain(|_, (k, _)| *k != key);
        s.rejected.retain(|(k, _)| *k != key);
        if s.single_source == Some(key) {
            s.single_source = None;
        }
    }

    /// The verified info dictionary, once complete (and its piece layers, for a v2-only
    /// torrent: see [`MetadataFetch::layers`]).
    pub fn take_done(&self) -> Option<Arc<Vec<u8>>> {
        self.lock().done.clone()
    }

    /// Hash failures so far.
    pub fn failures(&self) -> u32 {
        self.lock().failures
    }

    /// The metadata is complete (verified).
    pub fn is_done(&self) -> bool {
        self.lock().done.is_some()
    }

    /// The torrent has its pieces: `shared` is what its metadata connections continue
    /// with. Only the first call counts.
    pub fn hand_over(&self, shared: Arc<TorrentShared>) {
        let _ = self.upgrade.set(shared);
    }

    /// What [`MetadataFetch::hand_over`] gave, if it was called.
    pub fn handed_over(&self) -> Option<Arc<TorrentShared>> {
        self.upgrade.get().cloned()
    }
}

/// The piece layers to fetch for the info dictionary `info`: some only for a v2-only
/// torrent with a file longer than one piece (a hybrid downloads on its v1 side and checks
/// its v2 side where the roots suffice; a malformed one is refused by the torrent later).
fn layers_wanted(info: &[u8]) -> Option<LayerFetch> {
    let bytes = crate::metainfo::create::torrent_from_info(info, &[]);
    let meta = crate::metainfo::Metainfo::from_bytes(&bytes).ok()?;
    if meta.version() != crate::metainfo::MetaVersion::V2 {
        return None;
    }
    LayerFetch::new(meta.v2.as_ref()?)
}
