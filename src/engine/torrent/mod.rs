//! One torrent, owned by the session task: its life cycle ([`state`]), trackers
//! ([`announce`]), known addresses ([`peer_book`]), connected peers ([`peers`]), choking
//! ([`choke`]) and, while it runs, the state its peer connections share
//! ([`crate::engine::link::shared`]).
//!
//! A torrent is plain data driven by the session: every input (a command, a disk result,
//! a peer event, an announce answer, a timer) is one method call that updates the parts and
//! carries out the state machine's effects. Timers live on the session's deadline queue, so
//! a torrent with nothing due costs nothing.

pub mod announce;
pub mod choke;
mod dht;
pub mod disk;
mod lsd;
pub mod peer_book;
pub mod peers;
pub mod sources;
pub mod state;
pub mod summary;

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc;

use self::announce::{AnnounceJob, TrackerSet};
use self::choke::Choker;
use self::peer_book::PeerBook;
use self::peers::{PeerHandle, PeerSet};
use self::state::{Effect, Facts, Input, Lifecycle};
use self::summary::{FileSpan, Summary};
use super::ctx::{SessionCtx, SessionEvent, SlotKind};
use super::event_log::EventLog;
use super::link::ctx::Limits;
use super::link::message::{PeerCtrl, PeerError, PeerEvent};
use super::link::metadata::MetadataFetch;
use super::link::peer::PeerInfo;
use super::link::shared::TorrentShared;
use super::link::stream::PeerStream;
use super::peer_conn;
use super::picker::{PRIO_HIGH, PRIO_NORMAL, PRIO_SKIP, Picker};
use super::rate::RateMeter;
use super::timer::Timers;
use crate::api::{
    EventKind, EventLevel, FilePriority, FileRow, PeerFlags, PeerRow, PeerSource, PieceState,
    TorrentDetail, TorrentError, TorrentErrorKind, TorrentId, TorrentRow, TorrentState,
};
use crate::lock::MutexExt;
use crate::metainfo::{InfoHash, Magnet, Metainfo};
use crate::peer::wire::Handshake;
use crate::piece::Bitfield;
use crate::storage::StorageError;
use crate::storage::disk::{DiskEvent, TorrentDisk};
use crate::tracker::{
    AnnounceEvent, AnnounceRequest, AnnounceResponse, TrackerClient, TrackerError,
};

/// A running torrent with no peer for this long lets go of its storage and metainfo.
pub const QUIET_AFTER: Duration = Duration::from_secs(300);
/// Hash failures after which a peer is dropped and its address banned for this torrent.
const MAX_HASH_FAILS: u32 = 3;

/// A timer of one torrent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TorrentTimer {
    /// An announce is due.
    Announce,
    /// Choke round and connection housekeeping (every 10 s while it has peers).
    Sweep,
    /// A backed-off address may be dialled.
    Dial,
    /// Re-check upload slots while a newly unchoked peer is on probation.
    Reclaim,
    /// No peer for a while: let go of the storage and the metainfo.
    Quiet,
    /// A DHT lookup and announce is due (see `torrent/dht.rs`).
    Dht,
}

/// A key on the session's deadline queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TimerKey {
    /// A torrent's timer.
    Torrent(TorrentId, TorrentTimer),
    /// Publish a snapshot.
    Publish,
    /// Write changed records to the state store.
    Checkpoint,
    /// Measure free space of the download volumes.
    DiskGuard,
}

/// Only a few torrents hash their data at once; the others wait here, in order.
#[derive(Debug)]
pub struct CheckQueue {
    waiting: VecDeque<TorrentId>,
    running: HashSet<TorrentId>,
    max: usize,
}

impl CheckQueue {
    /// At most `max` checks at once (at least 1).
    pub fn new(max: usize) -> CheckQueue {
        CheckQueue {
            waiting: VecDeque::new(),
            running: HashSet::new(),
            max: max.max(1),
        }
    }

    fn enqueue(&mut self, id: TorrentId) {
        if !self.waiting.contains(&id) && !self.running.contains(&id) {
            self.waiting.push_back(id);
        }
    }

    /// Leave the queue or give the slot back.
    pub fn remove(&mut self, id: TorrentId) {
        self.waiting.retain(|x| *x != id);
        self.running.remove(&id);
    }

    /// Torrents that may start their check now (they hold a slot from here on).
    pub fn grant(&mut self) -> Vec<TorrentId> {
        let mut out = Vec::new();
        while self.running.len() < self.max {
            let Some(id) = self.waiting.pop_front() else {
                break;
            };
            self.running.insert(id);
            out.push(id);
        }
        out
    }

    /// Checks running.
    pub fn running(&self) -> usize {
        self.running.len()
    }
}

/// What a torrent method may touch besides the torrent.
pub struct Env<'a> {
    /// The session context.
    pub ctx: &'a Arc<SessionCtx>,
    /// The deadline queue.
    pub timers: &'a mut Timers<TimerKey>,
    /// The event stream.
    pub log: &'a mut EventLog,
    /// The check queue.
    pub checks: &'a mut CheckQueue,
    /// Now.
    pub now: Instant,
    /// Set when a snapshot should go out at once (a state changed).
    pub publish_now: &'a mut bool,
    /// The session's state store (none for headless sessions).
    pub store: Option<&'a Arc<crate::state::StateStore>>,
}

/// A magnet link whose info dictionary is not here yet.
struct PendingMetadata {
    /// The link (its trackers are the torrent's; `x.pe` peers are dialled; `so` applies
    /// once the files are known).
    link: Magnet,
    /// The fetch shared by the metadata connections, while running.
    fetch: Option<Arc<MetadataFetch>>,
}

/// `left` announced while the size is unknown (magnet links; libtorrent does the same):
/// non-zero, so trackers list seeders to us.
const LEFT_UNKNOWN: u64 = 16 * 1024;

struct CheckJob {
    key: u64,
    progress: Arc<AtomicU32>,
    cancel: Arc<AtomicBool>,
}

/// One torrent of the session.
pub struct Torrent {
    /// Session-local id.
    pub id: TorrentId,
    /// What is always kept of the metainfo.
    pub sum: Summary,
    /// The full metainfo while needed (files, hashes); reloaded from the state store.
    meta: Option<Arc<Metainfo>>,
    /// A magnet link still fetching its info dictionary.
    pending: Option<PendingMetadata>,
    /// Keep the metainfo loaded (there is no store to reload it from).
    keep_meta: bool,
    /// The folder its files go into.
    pub save_dir: PathBuf,
    /// When it was added (Unix seconds).
    pub added_at: u64,
    /// Orders torrents added in the same second (see [`crate::state::next_added_seq`]).
    added_seq: u64,
    /// Peers the user gave (magnet `x.pe`, by hand): kept and always dialled.
    kept_peers: Vec<crate::state::KeptPeer>,
    /// The peer sources the session runs for it (set when it joins the swarm).
    discovery: sources::Discovery,
    /// When it completed (Unix seconds).
    completed_at: Option<u64>,
    seed: bool,
    /// Each file as it was at the last checkpoint (for fast resume).
    file_stats: Vec<crate::state::FileStat>,
    /// Something kept in the state store changed since the last checkpoint.
    persist_dirty: bool,
    /// Paused by the disk guard (not by the user), with the reason shown.
    guard: Option<String>,
    /// Bytes moved so far while its files move.
    moving: Option<Arc<std::sync::atomic::AtomicU64>>,
    /// This torrent's own limits (kept across pause/resume).
    limits: Arc<Limits>,
    life: Lifecycle,
    /// Verified pieces while no shared state exists (paused, queued, error, completed).
    have: Bitfield,
    /// Download priority per file of the metainfo (padding files: ignored).
    file_prio: Vec<FilePriority>,
    /// Priority per piece, from the files' (0: only in skipped files); empty while every
    /// file has the normal priority (the common case costs no memory).
    piece_prio: Vec<u8>,
    disk: Option<Arc<TorrentDisk>>,
    shared: Option<Arc<TorrentShared>>,
    trackers: TrackerSet,
    book: PeerBook,
    choker: Choker,
    peers: PeerSet,
    dialing: HashSet<SocketAddr>,
    check: Option<CheckJob>,
    hash_fails: HashMap<u64, u32>,
    meters: (RateMeter, RateMeter),
    /// Byte counters of shared states that were dropped (pause/resume keeps totals).
    carried: (u64, u64, u64),
    last_round: Instant,
    rev: u64,
    dirty: bool,
    cached_row: Option<Arc<TorrentRow>>,
    lost_pieces_logged: bool,
    /// DHT lookups (BEP 5).
    dht: dht::DhtLookups,
}

impl Torrent {
    /// A torrent of `meta`, stored under `save_dir`, not started (call
    /// [`Torrent::input`] with [`Input::Resume`] to start it).
    pub fn new(
        id: TorrentId,
        meta: Arc<Metainfo>,
        save_dir: PathBuf,
        seed: bool,
        upload_slots: usize,
        keep_meta: bool,
    ) -> Torrent {
        let sum = Summary::of(&meta);
        let mut t = Torrent::blank(id, sum, save_dir, seed, upload_slots);
        t.meta = Some(meta);
        t.keep_meta = keep_meta;
        t
    }

    fn blank(
        id: TorrentId,
        sum: Summary,
        save_dir: PathBuf,
        seed: bool,
        upload_slots: usize,
    ) -> Torrent {
        let n = sum.piece_count();
        let trackers = TrackerSet::new(&sum.trackers, TrackerClient::supports);
        Torrent {
            id,
            meta: None,
            pending: None,
            keep_meta: false,
            save_dir,
            added_at: now_unix(),
            added_seq: crate::state::next_added_seq(),
            kept_peers: Vec::new(),
            discovery: sources::Discovery::default(),
            completed_at: None,
            seed,
            file_stats: Vec::new(),
            persist_dirty: true,
            guard: None,
            moving: None,
            limits: Arc::new(Limits::unlimited()),
            life: Lifecycle::Paused { needs_check: true },
            have: Bitfield::new(n),
            file_prio: vec![FilePriority::Normal; sum.files.len()],
            piece_prio: Vec::new(),
            disk: None,
            shared: None,
            trackers,
            book: PeerBook::new(),
            choker: Choker::new(upload_slots),
            peers: PeerSet::new(),
            dialing: HashSet::new(),
            check: None,
            hash_fails: HashMap::new(),
            meters: Default::default(),
            carried: (0, 0, 0),
            last_round: Instant::now(),
            rev: 0,
            dirty: true,
            cached_row: None,
            lost_pieces_logged: false,
            dht: dht::DhtLookups::default(),
            sum,
        }
    }

    /// A torrent of a magnet link: listed under its `dn` (or info hash) with no size until
    /// its info dictionary is fetched from peers (BEP 9). Not started.
    pub fn new_magnet(
        id: TorrentId,
        link: Magnet,
        save_dir: PathBuf,
        seed: bool,
        upload_slots: usize,
        keep_meta: bool,
    ) -> Torrent {
        let sum = Summary {
            info_hash: link.info_hash,
            name: link.display_name(),
            geometry: crate::piece::Geometry::default(),
            payload_size: 0,
            // BEP 12: each tracker of a magnet link is a tier of its own (all are asked)
            trackers: link.trackers.iter().map(|t| vec![t.clone()]).collect(),
            private: false,
            multi_file: false,
            files: Box::new([]),
        };
        let mut t = Torrent::blank(id, sum, save_dir, seed, upload_slots);
        t.keep_meta = keep_meta;
        t.kept_peers = sources::kept_of(&link);
        t.pending = Some(PendingMetadata { link, fetch: None });
        t
    }

    /// Whether the info dictionary is still to be fetched (a magnet link).
    pub fn awaiting_metadata(&self) -> bool {
        self.pending.is_some()
    }

    /// A torrent restored from the state store: listed at once, its metainfo loaded when
    /// needed. `trusted`: the files on disk still match the record (sizes and times), so its
    /// verified pieces count without a check. Not started (the session resumes it unless
    /// the record says paused or failed).
    pub fn restore(
        id: TorrentId,
        info_hash: InfoHash,
        r: &crate::state::TorrentRecord,
        upload_slots: usize,
    ) -> Torrent {
        let mut offset = 0u64;
        let files: Box<[FileSpan]> = r
            .files
            .iter()
            .map(|&(length, pad)| {
                let f = FileSpan {
                    offset,
                    length,
                    pad,
                };
                offset += length;
                f
            })
            .collect();
        let geometry = crate::piece::Geometry::new(r.total_length, r.piece_length, r.piece_count)
            .unwrap_or_default();
        let sum = Summary {
            info_hash,
            name: r.name.clone(),
            geometry,
            payload_size: r.payload_size,
            trackers: r.trackers.clone(),
            private: r.private,
            multi_file: r.multi_file,
            files,
        };
        let mut t = Torrent::blank(id, sum, r.save_dir.clone(), r.seed, upload_slots);
        t.kept_peers = r.peers.clone();
        t.added_seq = r.added_seq;
        if let Some(link) = r.magnet.as_deref().and_then(|l| Magnet::parse(l).ok()) {
            // a record written before the peers were kept: the link's
            for k in sources::kept_of(&link) {
                if !t.kept_peers.iter().any(|p| p.addr == k.addr) {
                    t.kept_peers.push(k);
                }
            }
            t.sum.trackers = link.trackers.iter().map(|u| vec![u.clone()]).collect();
            t.trackers = TrackerSet::new(&t.sum.trackers, TrackerClient::supports);
            t.pending = Some(PendingMetadata { link, fetch: None });
        }
        t.added_at = r.added_at;
        t.completed_at = r.completed_at;
        t.carried = (r.downloaded, r.uploaded, 0);
        t.limits.download.set_rate(r.down_limit);
        t.limits.upload.set_rate(r.up_limit);
        t.file_stats = r.file_stats.clone();
        if !r.file_prio.is_empty() {
            t.file_prio = r.file_prio.iter().map(|&p| prio_of_level(p)).collect();
            t.piece_prio = t.compute_piece_priorities();
        }
        t.have = Bitfield::from_payload(&r.have, r.piece_count)
            .unwrap_or_else(|_| Bitfield::new(r.piece_count));
        t.life = match &r.error {
            Some((kind, message)) => Lifecycle::Error(TorrentError {
                kind: error_kind_of(*kind),
                message: message.clone(),
            }),
            None => Lifecycle::Restoring { paused: r.paused },
        };
        t.persist_dirty = false;
        t
    }

    /// The resume data checked out against the files on disk: trust the verified pieces
    /// (no check), or forget them (a check finds them again). Then it starts, unless the
    /// record said paused.
    pub fn resume_checked(&mut self, trusted: bool, why: &str, env: &mut Env<'_>) {
        if !trusted && self.have.count() > 0 {
            self.log(
                env,
                EventLevel::Info,
                EventKind::Checked,
                format!("files changed since the last run ({why}); rechecking"),
            );
        }
        if !trusted {
            self.have = Bitfield::new(self.sum.piece_count());
        }
        self.input(Input::ResumeData { trusted }, env);
        self.dirty = true;
    }

    /// The record to keep in the state store now (`have`: the verified pieces; the caller
    /// makes sure their bytes are on disk before writing it).
    pub fn record(&self) -> crate::state::TorrentRecord {
        let (downloaded, uploaded, _) = self.totals();
        let geo = self.sum.geometry;
        crate::state::TorrentRecord {
            name: self.sum.name.clone(),
            save_dir: self.save_dir.clone(),
            added_at: self.added_at,
            completed_at: self.completed_at,
            // paused by the user (the disk guard's pause is taken again if still needed)
            paused: self.guard.is_none()
                && matches!(
                    self.life,
                    Lifecycle::Paused { .. }
                        | Lifecycle::Restoring { paused: true }
                        | Lifecycle::QueuedForCheck { then_pause: true }
                        | Lifecycle::Checking { then_pause: true }
                ),
            seed: self.seed,
            error: self
                .life
                .error()
                .map(|e| (error_kind_code(e.kind), e.message.clone())),
            total_length: geo.total_length(),
            piece_length: geo.piece_length(),
            piece_count: geo.piece_count(),
            payload_size: self.sum.payload_size,
            trackers: self.sum.trackers.clone(),
            private: self.sum.private,
            multi_file: self.sum.multi_file,
            files: self.sum.files.iter().map(|f| (f.length, f.pad)).collect(),
            have: self.verified().as_bytes().to_vec(),
            file_stats: self.file_stats.clone(),
            file_prio: if self.file_prio.iter().all(|p| *p == FilePriority::Normal) {
                Vec::new()
            } else {
                self.file_prio.iter().map(|p| prio_level(*p)).collect()
            },
            downloaded,
            uploaded,
            down_limit: self.limits.download.rate(),
            up_limit: self.limits.upload.rate(),
            magnet: self.pending.as_ref().map(|p| p.link.to_link()),
            peers: self.kept_peers.clone(),
            added_seq: self.added_seq,
        }
    }

    /// Whether the record changed since the last checkpoint.
    pub fn persist_dirty(&self) -> bool {
        self.persist_dirty
    }

    /// Whether the record changed since the last checkpoint (clears the mark).
    pub fn take_persist_dirty(&mut self) -> bool {
        std::mem::take(&mut self.persist_dirty)
    }

    /// Mark the record as needing a write (a checkpoint failed).
    pub fn mark_persist_dirty(&mut self) {
        self.persist_dirty = true;
    }

    /// The storage to sync before a checkpoint records the verified pieces.
    pub fn storage_for_checkpoint(&self) -> Option<Arc<TorrentDisk>> {
        self.disk.clone()
    }

    /// File stats measured by a checkpoint.
    pub fn set_file_stats(&mut self, stats: Vec<crate::state::FileStat>) {
        self.file_stats = stats;
    }

    /// The metainfo, loading it from the state store if it is not resident.
    ///
    /// # Errors
    /// The kept .torrent is missing or damaged.
    fn load_meta(&mut self, env: &Env<'_>) -> Result<Arc<Metainfo>, TorrentError> {
        if let Some(m) = &self.meta {
            return Ok(m.clone());
        }
        let err = |message: String| TorrentError {
            kind: TorrentErrorKind::Internal,
            message,
        };
        let store = env
            .store
            .ok_or_else(|| err("the torrent's metainfo is not available".into()))?;
        let m = Arc::new(store.load_metainfo(&self.sum.info_hash).map_err(err)?);
        self.meta = Some(m.clone());
        Ok(m)
    }

    /// Drop the metainfo when nothing needs it (it is reloaded from the store).
    fn maybe_unload_meta(&mut self) {
        if !self.keep_meta && self.shared.is_none() && self.disk.is_none() && self.check.is_none() {
            self.meta = None;
        }
    }

    /// The full metainfo, for the detail view (loaded if needed).
    pub fn metainfo(&mut self, env: &Env<'_>) -> Option<Arc<Metainfo>> {
        self.load_meta(env).ok()
    }

    /// v1 info hash.
    pub fn info_hash(&self) -> InfoHash {
        self.sum.info_hash
    }

    /// The state shown to the user.
    pub fn state(&self) -> TorrentState {
        self.life.ui_state()
    }

    /// The life-cycle state.
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.life
    }

    /// Every wanted piece verified (pieces only in skipped files do not count).
    fn complete(&self) -> bool {
        if self.pending.is_some() {
            return false;
        }
        match &self.shared {
            Some(s) => s.picker().is_finished(),
            None if self.piece_prio.is_empty() => self.have.is_full(),
            None => self
                .piece_prio
                .iter()
                .enumerate()
                .all(|(p, &l)| l == PRIO_SKIP || self.have.get(p as u32)),
        }
    }

    /// Priority of piece `p` (normal when no file has another priority).
    fn piece_priority(&self, p: u32) -> u8 {
        self.piece_prio
            .get(p as usize)
            .copied()
            .unwrap_or(PRIO_NORMAL)
    }

    /// Every piece's priority, for the picker.
    fn picker_priorities(&self) -> Vec<u8> {
        if self.piece_prio.is_empty() {
            vec![PRIO_NORMAL; self.sum.piece_count() as usize]
        } else {
            self.piece_prio.clone()
        }
    }

    /// The priority of each piece: the highest of the files it holds bytes of (a piece of
    /// padding only takes the highest priority of any file).
    fn compute_piece_priorities(&self) -> Vec<u8> {
        let geo = self.sum.geometry;
        let mut prio = vec![PRIO_SKIP; geo.piece_count() as usize];
        let mut touched = vec![false; geo.piece_count() as usize];
        let mut top = PRIO_SKIP;
        for (f, fp) in self.sum.files.iter().zip(&self.file_prio) {
            if f.length == 0 {
                continue;
            }
            let level = if f.pad { None } else { Some(prio_level(*fp)) };
            for p in geo.pieces_of_range(f.offset, f.length) {
                if let Some(l) = level {
                    prio[p as usize] = prio[p as usize].max(l);
                    touched[p as usize] = true;
                }
            }
            if let Some(l) = level {
                top = top.max(l);
            }
        }
        for (p, t) in prio.iter_mut().zip(&touched) {
            if !t {
                *p = top;
            }
        }
        prio
    }

    /// Set the priority of files `files` (indices into the detail's file list: the
    /// non-padding files in payload order). Pieces only in skipped files are not requested;
    /// a skipped file that is not on disk is never created (its share of boundary pieces
    /// goes to the part file); wanting it again moves those bytes into it.
    pub fn set_file_priority(
        &mut self,
        files: &[usize],
        priority: FilePriority,
        env: &mut Env<'_>,
    ) {
        let real: Vec<usize> = self
            .sum
            .files
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.pad)
            .map(|(i, _)| i)
            .collect();
        let mut changed = Vec::new();
        for &d in files {
            if let Some(&i) = real.get(d)
                && self.file_prio[i] != priority
            {
                let was_skip = self.file_prio[i] == FilePriority::Skip;
                self.file_prio[i] = priority;
                if was_skip != (priority == FilePriority::Skip) {
                    changed.push(i);
                }
            }
        }
        self.piece_prio = if self.file_prio.iter().all(|p| *p == FilePriority::Normal) {
            Vec::new()
        } else {
            self.compute_piece_priorities()
        };
        self.persist_dirty = true;
        if let Some(d) = &self.disk {
            for &i in &changed {
                if let Err(e) = d.storage.set_skipped(i, priority == FilePriority::Skip) {
                    let err = storage_error(&e);
                    self.log(
                        env,
                        EventLevel::Error,
                        EventKind::DiskError,
                        err.message.clone(),
                    );
                    self.input(Input::Failed(err), env);
                    return;
                }
            }
        }
        if let Some(s) = &self.shared {
            s.picker().set_priorities(&self.picker_priorities());
            self.peers.broadcast(&PeerCtrl::CheckInterest);
        }
        self.dirty = true;
        // done with what is wanted now, or wanting more than we have
        match (self.life.ui_state(), self.complete()) {
            (TorrentState::Downloading, true) => self.input(Input::Complete, env),
            (TorrentState::Seeding | TorrentState::Completed, false) => {
                self.input(Input::PiecesLost, env)
            }
            _ => {}
        }
        if self.life.is_running() {
            self.connect_more(env);
        }
    }

    fn facts(&self) -> Facts {
        Facts {
            complete: self.complete(),
            seed: self.seed,
            has_metadata: self.pending.is_none(),
        }
    }

    /// Every piece verified (nothing at all to fetch from anyone).
    fn have_all(&self) -> bool {
        if self.pending.is_some() {
            return false;
        }
        match &self.shared {
            Some(s) => s.is_complete(),
            None => self.have.is_full(),
        }
    }

    fn verified(&self) -> Bitfield {
        match &self.shared {
            Some(s) => s.have.to_bitfield(),
            None => self.have.clone(),
        }
    }

    fn log(&self, env: &mut Env<'_>, level: EventLevel, kind: EventKind, msg: String) {
        env.log.push(
            Some(self.id),
            level,
            kind,
            format!("{}: {msg}", self.sum.name),
        );
    }

    /// Feed the state machine and carry out its effects.
    pub fn input(&mut self, input: Input, env: &mut Env<'_>) {
        if matches!(input, Input::Resume | Input::Recheck) {
            self.guard = None;
        }
        let before = self.life.ui_state();
        let effects = self.life.step(input, self.facts());
        for e in effects {
            self.apply(e, env);
        }
        // not running and not checking: nothing needs the files or the metainfo now
        if !self.life.is_running() && self.check.is_none() && self.shared.is_none() {
            if let Some(d) = self.disk.take() {
                env.ctx.link.pool.forget(d.key);
            }
            self.maybe_unload_meta();
        }
        let after = self.life.ui_state();
        if before != after {
            self.dirty = true;
            self.persist_dirty = true;
            *env.publish_now = true;
            let (level, kind) = match (&self.life, after) {
                (Lifecycle::Error(_), _) => (EventLevel::Error, EventKind::StateChanged),
                _ => (EventLevel::Info, EventKind::StateChanged),
            };
            let msg = match self.life.error() {
                Some(e) => format!("{} ({}: {})", after.label(), e.message, e.kind.hint()),
                None => after.label().to_string(),
            };
            self.log(env, level, kind, msg);
        }
    }

    fn apply(&mut self, e: Effect, env: &mut Env<'_>) {
        match e {
            Effect::QueueCheck => env.checks.enqueue(self.id),
            Effect::StartCheck => self.start_check(env),
            Effect::CancelCheck => {
                if let Some(c) = self.check.take() {
                    c.cancel.store(true, Ordering::Relaxed);
                }
                env.checks.remove(self.id);
            }
            Effect::ReleaseCheckSlot => {
                self.check = None;
                env.checks.remove(self.id);
                // the files are opened again when a peer comes; until then hold nothing
                if self.shared.is_none()
                    && let Some(d) = self.disk.take()
                {
                    env.ctx.link.pool.forget(d.key);
                }
                self.maybe_unload_meta();
            }
            Effect::ReopenFiles => self.close_storage(env),
            Effect::Activate => self.activate(env),
            Effect::Deactivate => {
                for job in self.deactivate(env) {
                    self.spawn_announce(job, env);
                }
            }
            Effect::AnnounceCompleted => {
                self.completed_at = Some(now_unix());
                self.trackers.complete(env.now);
                self.schedule_announce(env);
            }
        }
    }

    fn ensure_disk(&mut self, env: &Env<'_>) -> Result<Arc<TorrentDisk>, TorrentError> {
        if let Some(d) = &self.disk {
            return Ok(d.clone());
        }
        let meta = self.load_meta(env)?;
        let disk = disk::open_disk(self.id, &meta, &self.save_dir, env.ctx)
            .map_err(|e| storage_error(&e))?;
        for (i, p) in self.file_prio.iter().enumerate() {
            if *p == FilePriority::Skip {
                disk.storage
                    .set_skipped(i, true)
                    .map_err(|e| storage_error(&e))?;
            }
        }
        self.disk = Some(disk.clone());
        Ok(disk)
    }

    /// Drop the files' handles (and the storage, when not running) so the next use opens
    /// the files afresh: the user may have fixed, moved back or replaced them.
    fn close_storage(&mut self, env: &mut Env<'_>) {
        if let Some(d) = &self.disk {
            d.storage.close_all();
        }
        if self.shared.is_none()
            && let Some(d) = self.disk.take()
        {
            env.ctx.link.pool.forget(d.key);
        }
    }

    fn start_check(&mut self, env: &mut Env<'_>) {
        let disk = match self.ensure_disk(env) {
            Ok(d) => d,
            Err(err) => {
                self.input(Input::CheckFailed(err), env);
                return;
            }
        };
        let key = env.ctx.key();
        let progress = Arc::new(AtomicU32::new(0));
        let cancel = Arc::new(AtomicBool::new(false));
        self.check = Some(CheckJob {
            key,
            progress: progress.clone(),
            cancel: cancel.clone(),
        });
        let ctx = env.ctx.clone();
        let id = self.id;
        let geo = self.sum.geometry;
        let threads = ctx.config.disk_thread_count();
        tokio::task::spawn_blocking(move || {
            // check only: files are created by their first write (Storage::prepare_root,
            // create_empty_files)
            let result = {
                let report = if disk.storage.any_data_present() {
                    crate::storage::check::check_report(
                        &disk.storage,
                        geo,
                        &disk.hashes,
                        threads,
                        &progress,
                        &cancel,
                    )
                } else {
                    crate::storage::check::CheckReport {
                        have: Bitfield::new(geo.piece_count()),
                        oversized: Vec::new(),
                        unreadable: Vec::new(),
                        finished: true,
                    }
                };
                // what the files look like now, for the resume data
                Ok((report, disk.storage.file_stats()))
            };
            ctx.send(SessionEvent::Checked {
                torrent: id,
                check_key: key,
                result,
            });
        });
    }

    /// A check finished.
    pub fn on_checked(
        &mut self,
        check_key: u64,
        result: Result<
            (
                crate::storage::check::CheckReport,
                Vec<crate::state::FileStat>,
            ),
            StorageError,
        >,
        env: &mut Env<'_>,
    ) {
        if self.check.as_ref().is_none_or(|c| c.key != check_key) {
            return; // cancelled or superseded
        }
        match result {
            Ok((report, stats)) => {
                self.file_stats = stats;
                for f in &report.oversized {
                    self.log(
                        env,
                        EventLevel::Warn,
                        EventKind::DiskError,
                        format!(
                            "{} is longer than the torrent says: its last piece is fetched again and the file cut to size",
                            f.display()
                        ),
                    );
                }
                if let Some(e) = report.unreadable.first() {
                    let more = report.unreadable.len() - 1;
                    self.log(
                        env,
                        EventLevel::Warn,
                        EventKind::DiskError,
                        if more > 0 {
                            format!("{e} (and {more} more files unreadable)")
                        } else {
                            e.to_string()
                        },
                    );
                }
                let have = report.have;
                let n = have.count();
                self.have = have;
                self.persist_dirty = true;
                self.dirty = true;
                self.log(
                    env,
                    EventLevel::Info,
                    EventKind::Checked,
                    format!("checked: {n}/{} pieces verified", self.sum.piece_count()),
                );
                self.input(Input::CheckDone, env);
            }
            Err(e) => self.input(Input::CheckFailed(storage_error(&e)), env),
        }
    }

    /// Join the swarm: trackers and dials. The storage and the state peers share are made
    /// when the first peer comes ([`Torrent::ensure_shared`]), so a running torrent nobody
    /// connects to holds neither its metainfo nor its files.
    fn activate(&mut self, env: &mut Env<'_>) {
        if let Some(s) = &self.shared {
            s.set_accepting(true);
        }
        if let Some(p) = &mut self.pending {
            p.fetch = Some(Arc::new(MetadataFetch::new(
                self.id,
                self.sum.info_hash,
                env.ctx.config.max_metadata_size,
                env.ctx.link.clone(),
            )));
        }
        self.book_kept_peers(env);
        self.note_discovery(env);
        self.trackers.start(env.now);
        self.schedule_announce(env);
        self.dht_start(env);
        self.lsd_start(env);
        self.connect_more(env);
    }

    /// The state peer connections share, made (with the storage) if needed. On a storage
    /// or metainfo failure the torrent stops with the error.
    fn ensure_shared(&mut self, env: &mut Env<'_>) -> Option<Arc<TorrentShared>> {
        if let Some(s) = &self.shared {
            return Some(s.clone());
        }
        let disk = match self.ensure_disk(env) {
            Ok(d) => d,
            Err(err) => {
                self.input(Input::Failed(err), env);
                return None;
            }
        };
        // downloading: the download folder must exist for files to be created by their
        // first write (checking created nothing)
        if !self.have.is_full()
            && let Err(e) = disk.storage.prepare_root()
        {
            self.input(Input::Failed(storage_error(&e)), env);
            return None;
        }
        let geo = self.sum.geometry;
        let mut picker = Picker::new(
            geo.piece_count(),
            geo.piece_length(),
            geo.last_piece_length(),
            self.have.clone(),
        );
        if !self.piece_prio.is_empty() {
            picker.set_priorities(&self.piece_prio);
        }
        let s = Arc::new(TorrentShared::new(
            self.id,
            self.sum.info_hash,
            geo,
            picker,
            disk,
            env.ctx.link.clone(),
            self.limits.clone(),
        ));
        s.set_accepting(self.life.is_running());
        s.set_dht(self.dht_allowed(env));
        if let Some(m) = &self.meta {
            s.set_metadata(Arc::from(m.info_bytes.as_slice()));
        }
        s.set_private(self.sum.private);
        self.shared = Some(s.clone());
        Some(s)
    }

    /// No peer for a while: drop the shared state, the storage and the metainfo (the
    /// verified pieces and counters stay), unless pieces are in progress.
    fn go_quiet(&mut self, env: &mut Env<'_>) {
        if !self.peers.is_empty() || !self.dialing.is_empty() || self.check.is_some() {
            return;
        }
        if let Some(s) = &self.shared {
            let pk = s.picker();
            if pk.partial_count() > 0 || pk.pending_count() > 0 {
                return;
            }
        }
        if let Some(s) = self.shared.take() {
            self.have = s.have.to_bitfield();
            self.carried.0 += s.stats.downloaded.load(Ordering::Relaxed);
            self.carried.1 += s.stats.uploaded.load(Ordering::Relaxed);
            self.carried.2 += s.stats.wasted.load(Ordering::Relaxed);
        }
        if let Some(d) = self.disk.take() {
            env.ctx.link.pool.forget(d.key);
        }
        self.maybe_unload_meta();
    }

    /// Leave the swarm; returns the `stopped` announces owed.
    fn deactivate(&mut self, env: &mut Env<'_>) -> Vec<AnnounceJob> {
        if let Some(s) = self.shared.take() {
            s.set_accepting(false);
            self.have = s.have.to_bitfield();
            self.carried.0 += s.stats.downloaded.load(Ordering::Relaxed);
            self.carried.1 += s.stats.uploaded.load(Ordering::Relaxed);
            self.carried.2 += s.stats.wasted.load(Ordering::Relaxed);
        }
        // partial pieces are fetched again next time: drop their hasher states
        if let Some(d) = self.disk.take() {
            env.ctx.link.pool.forget(d.key);
        }
        if let Some(p) = &mut self.pending {
            p.fetch = None;
        }
        self.peers
            .broadcast(&PeerCtrl::Disconnect("torrent stopped"));
        self.peers = PeerSet::new();
        self.dialing.clear();
        self.book.clear();
        self.hash_fails.clear();
        self.dht_stop(env);
        self.lsd_stop(env);
        for t in [
            TorrentTimer::Announce,
            TorrentTimer::Sweep,
            TorrentTimer::Dial,
            TorrentTimer::Reclaim,
            TorrentTimer::Quiet,
        ] {
            env.timers.cancel(TimerKey::Torrent(self.id, t));
        }
        self.dirty = true;
        self.trackers.stop()
    }

    /// Leave the swarm for good (the session shuts down): the owed announces are sent;
    /// the session keeps feeding their results until [`Torrent::announcing`] is false.
    pub fn shutdown(&mut self, env: &mut Env<'_>) {
        if let Some(c) = self.check.take() {
            c.cancel.store(true, Ordering::Relaxed);
        }
        for job in self.deactivate(env) {
            self.spawn_announce(job, env);
        }
    }

    /// An announce is in flight, or a `stopped` is still owed after one.
    pub fn announcing(&self) -> bool {
        self.trackers.busy()
    }

    /// Leave the swarm because the torrent is removed: the owed announces, to send in order
    /// without the torrent (a `completed` is followed by a `stopped`).
    pub fn remove(&mut self, env: &mut Env<'_>) -> Vec<(AnnounceJob, AnnounceRequest)> {
        if let Some(c) = self.check.take() {
            c.cancel.store(true, Ordering::Relaxed);
        }
        let jobs = self.deactivate(env);
        jobs.into_iter()
            .map(|j| {
                let mut req = self.request(&j);
                complete_request(&mut req, env.ctx);
                (j, req)
            })
            .collect()
    }

    fn totals(&self) -> (u64, u64, u64) {
        let (d, u, w) = self.carried;
        match &self.shared {
            Some(s) => (
                d + s.stats.downloaded.load(Ordering::Relaxed),
                u + s.stats.uploaded.load(Ordering::Relaxed),
                w + s.stats.wasted.load(Ordering::Relaxed),
            ),
            None => (d, u, w),
        }
    }

    /// Bytes of wanted pieces not verified yet (BEP 3 `left`).
    fn bytes_left(&self) -> u64 {
        if self.pending.is_some() {
            return LEFT_UNKNOWN;
        }
        match &self.shared {
            Some(s) => s.picker().bytes_left(),
            None if self.piece_prio.is_empty() => {
                // every piece wanted: O(1)
                let geo = self.sum.geometry;
                let n = geo.piece_count();
                let mut verified = u64::from(self.have.count()) * u64::from(geo.piece_length());
                if n > 0 && self.have.get(n - 1) {
                    verified -= u64::from(geo.piece_length() - geo.last_piece_length());
                }
                geo.total_length().saturating_sub(verified)
            }
            None => {
                let geo = self.sum.geometry;
                (0..geo.piece_count())
                    .filter(|&p| self.piece_priority(p) != PRIO_SKIP && !self.have.get(p))
                    .map(|p| u64::from(geo.piece_size(p)))
                    .sum()
            }
        }
    }

    /// Bytes of file `f` inside verified pieces.
    fn file_done(&self, f: &FileSpan, have: &Bitfield) -> u64 {
        let geo = self.sum.geometry;
        let mut done = 0u64;
        for p in geo.pieces_of_range(f.offset, f.length) {
            if have.get(p) {
                let start = geo.piece_offset(p).max(f.offset);
                let end =
                    (geo.piece_offset(p) + u64::from(geo.piece_size(p))).min(f.offset + f.length);
                done += end.saturating_sub(start);
            }
        }
        done
    }

    fn request(&self, job: &AnnounceJob) -> AnnounceRequest {
        let (downloaded, uploaded, _) = self.totals();
        AnnounceRequest {
            info_hash: self.sum.info_hash,
            // the session's parts (peer id, port, key, numwant) come in complete_request
            peer_id: crate::peer::PeerId::default(),
            port: 0,
            uploaded,
            downloaded,
            left: self.bytes_left(),
            event: job.event,
            numwant: None,
            key: 0,
            tracker_id: job.tracker_id.clone(),
        }
    }

    fn spawn_announce(&self, job: AnnounceJob, env: &mut Env<'_>) {
        let mut req = self.request(&job);
        complete_request(&mut req, env.ctx);
        let ctx = env.ctx.clone();
        let id = self.id;
        tokio::spawn(async move {
            // a few announces at a time: 10,000 torrents starting do not open 10,000
            // connections at once (`stopped` goes first, it is the one a shutdown waits for)
            let _slot = if job.event == Some(AnnounceEvent::Stopped) {
                None
            } else {
                ctx.announce_slots.clone().acquire_owned().await.ok()
            };
            let result = ctx.trackers.announce(&job.url, &req).await;
            ctx.send(SessionEvent::Announced {
                torrent: id,
                job,
                result,
            });
        });
    }

    /// Scrape the trackers that are due (see [`TrackerSet::scrape_due`]); the answers come
    /// back as [`SessionEvent::Scraped`].
    fn spawn_scrapes(&mut self, env: &mut Env<'_>) {
        for url in self.trackers.scrape_due(env.now) {
            let ctx = env.ctx.clone();
            let (torrent, info_hash) = (self.id, self.sum.info_hash);
            tokio::spawn(async move {
                let _slot = ctx.announce_slots.clone().acquire_owned().await.ok();
                let result = ctx.trackers.scrape(&url, info_hash).await;
                ctx.send(SessionEvent::Scraped {
                    torrent,
                    url,
                    result,
                });
            });
        }
    }

    /// A scrape returned.
    pub fn on_scraped(
        &mut self,
        url: &str,
        result: &Result<crate::tracker::ScrapeStats, crate::tracker::TrackerError>,
    ) {
        if let Err(e) = result {
            tracing::debug!(torrent = %self.sum.name, tracker = %crate::net::host_of(url), "scrape: {e}");
        }
        self.trackers.scraped(url, result);
        self.dirty = true;
    }

    fn schedule_announce(&mut self, env: &mut Env<'_>) {
        let key = TimerKey::Torrent(self.id, TorrentTimer::Announce);
        match self.trackers.next_deadline() {
            Some(at) => env.timers.schedule(key, announce::coalesce(at, env.now)),
            None => env.timers.cancel(key),
        }
    }

    /// An announce returned.
    pub fn on_announced(
        &mut self,
        job: AnnounceJob,
        result: Result<AnnounceResponse, TrackerError>,
        env: &mut Env<'_>,
    ) {
        let was_error = self.trackers.has_message(&job.url);
        let follow = self.trackers.finished(&job, &result, env.now);
        if let Some(f) = follow {
            self.spawn_announce(f, env);
        }
        self.dirty = true;
        match &result {
            Ok(resp) => {
                if let Some(w) = &resp.warning {
                    self.log(
                        env,
                        EventLevel::Warn,
                        EventKind::TrackerWarning,
                        format!("tracker {}: {w}", crate::net::host_of(&job.url)),
                    );
                }
                if self.life.is_running() {
                    let mut new = 0;
                    for a in &resp.peers {
                        new += usize::from(self.book.add(*a, PeerSource::Tracker, env.now));
                    }
                    tracing::debug!(torrent = %self.sum.name, peers = resp.peers.len(), new, "announce ok");
                    self.connect_more(env);
                }
            }
            Err(e) => {
                // one line per change, not one per retry
                if !was_error && job.event != Some(AnnounceEvent::Stopped) {
                    self.log(
                        env,
                        EventLevel::Warn,
                        EventKind::TrackerError,
                        format!("tracker {}: {e}", crate::net::host_of(&job.url)),
                    );
                }
            }
        }
        if self.life.is_running() {
            // right after a tracker answers, and then at most every 30 min
            if result.is_ok() && job.event != Some(AnnounceEvent::Stopped) {
                self.spawn_scrapes(env);
            }
            self.schedule_announce(env);
        }
    }

    /// A timer of this torrent fired.
    pub fn on_timer(&mut self, t: TorrentTimer, env: &mut Env<'_>) {
        if !self.life.is_running() {
            return;
        }
        match t {
            TorrentTimer::Announce => {
                let mut skipped = Vec::new();
                for job in self.trackers.due(env.now) {
                    // a tracker endpoint known to be unreachable fails here and now: no
                    // task, no connection, no round trip through the session's channel
                    // (10,000 torrents on one dead tracker retry at the cost of a lookup)
                    match env.ctx.trackers.down_error(&job.url, env.now) {
                        Some(e) => skipped.push((job, e)),
                        None => self.spawn_announce(job, env),
                    }
                }
                self.dirty = true;
                self.schedule_announce(env);
                for (job, e) in skipped {
                    self.on_announced(job, Err(e), env);
                }
            }
            TorrentTimer::Sweep => self.sweep(env),
            TorrentTimer::Dial => self.connect_more(env),
            TorrentTimer::Reclaim => self.fill_slots(env),
            TorrentTimer::Quiet => self.go_quiet(env),
            TorrentTimer::Dht => self.dht_due(env),
        }
    }

    fn schedule_sweep(&mut self, env: &mut Env<'_>) {
        let key = TimerKey::Torrent(self.id, TorrentTimer::Sweep);
        let quiet = TimerKey::Torrent(self.id, TorrentTimer::Quiet);
        if self.peers.is_empty() {
            env.timers.cancel(key);
            if self.shared.is_some() {
                env.timers.schedule_no_later(quiet, env.now + QUIET_AFTER);
            }
        } else if env.timers.deadline(key).is_none() {
            env.timers.cancel(quiet);
            self.last_round = env.now;
            env.timers.schedule(key, env.now + choke::ROUND);
        }
    }

    /// Choke round and connection housekeeping.
    fn sweep(&mut self, env: &mut Env<'_>) {
        let Some(shared) = self.shared.clone() else {
            // metadata connections: keep-alives and silence only
            self.peers.broadcast(&PeerCtrl::Tick);
            self.dirty = true;
            self.schedule_sweep(env);
            return;
        };
        let now_ms = env.ctx.link.clock.now_ms();
        let seeding = shared.is_complete();
        let secs = env.now.duration_since(self.last_round).as_secs_f64();
        self.last_round = env.now;
        // both sides seeds: nothing to exchange
        if seeding {
            let n = shared.piece_count();
            let seeds: Vec<u64> = self
                .peers
                .iter()
                .filter(|(_, p)| p.info.pieces.load(Ordering::Relaxed) == n)
                .map(|(k, _)| *k)
                .collect();
            for k in seeds {
                if let Some(p) = self.peers.get(k) {
                    p.send(PeerCtrl::Disconnect("both seeds"));
                }
            }
        }
        let views = self.peers.choke_views(seeding, secs, now_ms);
        let unchoke = self.choker.round(&views, env.now);
        for v in &views {
            if unchoke.contains(&v.key) {
                self.peers.unchoke(v.key, env.now);
            } else {
                self.peers.choke(v.key);
            }
        }
        self.peers.broadcast(&PeerCtrl::Tick);
        self.share_peers(&shared, env);
        self.dirty = true;
        // counters moved
        self.persist_dirty = true;
        if self.peers.on_probation(env.now) {
            env.timers.schedule_no_later(
                TimerKey::Torrent(self.id, TorrentTimer::Reclaim),
                env.now + choke::RECHECK,
            );
        }
        self.schedule_sweep(env);
    }

    /// Between choke rounds: give the slots of peers that take nothing to waiting peers, and
    /// free slots to newcomers; while someone is on probation, look again in a moment.
    fn fill_slots(&mut self, env: &mut Env<'_>) {
        if self.shared.is_none() {
            return;
        }
        let views = self.peers.fill_views(env.now, env.ctx.link.clock.now_ms());
        let f = self.choker.fill(&views);
        for k in &f.choke {
            self.peers.choke(*k);
        }
        for k in &f.unchoke {
            self.peers.unchoke(*k, env.now);
        }
        let key = TimerKey::Torrent(self.id, TorrentTimer::Reclaim);
        if self.peers.on_probation(env.now) || views.iter().any(|v| !v.am_choking && v.stalled) {
            env.timers.schedule_no_later(key, env.now + choke::RECHECK);
        } else {
            env.timers.cancel(key);
        }
    }

    /// Dial more peers if there is room (per torrent, session-wide, half-open).
    fn connect_more(&mut self, env: &mut Env<'_>) {
        if !self.life.is_running() {
            return;
        }
        let seeding = self.have_all();
        let max = env.ctx.config.max_peers_per_torrent as usize;
        let max_half_open = env.ctx.config.max_half_open as usize;
        let max_connections = env.ctx.config.max_connections as usize;
        let conns = &env.ctx.conns;
        let room =
            max.saturating_sub(self.peers.len() + self.dialing.len())
                .min(max_half_open.saturating_sub(conns.get(SlotKind::HalfOpen)))
                .min(max_connections.saturating_sub(
                    conns.get(SlotKind::Established) + conns.get(SlotKind::HalfOpen),
                ));
        for addr in self.book.take_dials(env.now, room, seeding) {
            let Some(slot) = conns.try_take(SlotKind::HalfOpen, max_half_open) else {
                self.book.dial_failed(addr, env.now);
                break;
            };
            self.dialing.insert(addr);
            let ctx = env.ctx.clone();
            let id = self.id;
            let ours =
                Handshake::ours(self.sum.info_hash, ctx.peer_id).with_dht(self.dht_allowed(env));
            tokio::spawn(async move {
                let _slot = slot;
                match peer_conn::connect(addr, ours).await {
                    Ok((stream, remote)) => ctx.send(SessionEvent::Handshaken {
                        info_hash: ours.info_hash,
                        addr,
                        outgoing: true,
                        remote,
                        stream: PeerStream::Tcp(stream),
                    }),
                    Err(error) => ctx.send(SessionEvent::DialFailed {
                        torrent: id,
                        addr,
                        is_self: matches!(error, PeerError::SelfConnection),
                        error,
                    }),
                }
            });
        }
        let key = TimerKey::Torrent(self.id, TorrentTimer::Dial);
        match self.book.next_wakeup(seeding) {
            Some(at) if at > env.now => env.timers.schedule(key, at),
            _ => env.timers.cancel(key),
        }
    }

    /// An outgoing attempt failed.
    pub fn on_dial_failed(
        &mut self,
        addr: SocketAddr,
        is_self: bool,
        error: PeerError,
        env: &mut Env<'_>,
    ) {
        self.dialing.remove(&addr);
        if is_self {
            tracing::info!(%addr, "that address is ourselves; not dialling it again");
            self.book.is_ourselves(addr);
        } else {
            tracing::debug!(%addr, "dial failed: {error}");
            self.book.dial_failed(addr, env.now);
        }
        self.connect_more(env);
    }

    /// A handshake for this torrent completed: admit the peer (possibly evicting a useless
    /// one) or drop the stream.
    pub fn admit(
        &mut self,
        addr: SocketAddr,
        outgoing: bool,
        remote: Handshake,
        stream: PeerStream,
        env: &mut Env<'_>,
    ) {
        if outgoing {
            self.dialing.remove(&addr);
        }
        if !self.life.is_running() {
            if outgoing {
                // dialled before the torrent stopped running (e.g. the metadata arrived)
                self.book.release(addr, env.now);
            }
            return;
        }
        let fetch = self.pending.as_ref().and_then(|p| p.fetch.clone());
        let shared = if fetch.is_some() {
            None
        } else {
            match self.ensure_shared(env) {
                Some(s) => Some(s),
                None => return,
            }
        };
        let refuse = |why: &str| tracing::debug!(%addr, "peer refused: {why}");
        if self.book.is_banned(&addr.ip()) {
            return refuse("banned");
        }
        if self.peers.has_peer_id(&remote.peer_id) || self.peers.has_addr(&addr) {
            if outgoing {
                self.book.connected(addr, PeerSource::Tracker, env.now);
            }
            return refuse("already connected");
        }
        let now_ms = env.ctx.link.clock.now_ms();
        let mut evicted = false;
        if self.peers.len() >= env.ctx.config.max_peers_per_torrent as usize {
            match self.peers.victim(now_ms) {
                Some(v) => {
                    self.evict(v, env);
                    evicted = true;
                }
                None => return refuse("torrent full of useful peers"),
            }
        }
        let max_connections = env.ctx.config.max_connections as usize;
        let slot = match env
            .ctx
            .conns
            .try_take(SlotKind::Established, max_connections)
        {
            Some(s) => s,
            None => {
                if !evicted {
                    match self.peers.victim(now_ms) {
                        Some(v) => self.evict(v, env),
                        None => return refuse("session connection limit"),
                    }
                }
                // the victim gives its slot back when its task ends
                match env
                    .ctx
                    .conns
                    .try_take(SlotKind::Established, max_connections + 1)
                {
                    Some(s) => s,
                    None => return refuse("session connection limit"),
                }
            }
        };
        let source = if outgoing {
            self.book.source(&addr).unwrap_or(PeerSource::Tracker)
        } else {
            PeerSource::Incoming
        };
        self.book.connected(addr, source, env.now);
        let key = env.ctx.key();
        let info = Arc::new(PeerInfo::new(
            addr,
            outgoing,
            remote.peer_id,
            source,
            now_ms,
        ));
        let (ctrl_tx, ctrl_rx) = mpsc::unbounded_channel();
        self.peers
            .insert(key, PeerHandle::new(info.clone(), ctrl_tx, now_ms));
        tracing::debug!(torrent = %self.sum.name, %addr, outgoing, source = source.label(), "peer connected");
        match (shared, fetch) {
            (Some(t), _) => {
                tokio::spawn(async move {
                    let _slot = slot;
                    let r = match stream {
                        PeerStream::Tcp(s) => {
                            peer_conn::run(t.clone(), key, s, info, remote, ctrl_rx).await
                        }
                    };
                    t.peer_event(key, PeerEvent::Gone { error: r.err() });
                });
            }
            (None, Some(f)) => {
                tokio::spawn(async move {
                    let _slot = slot;
                    let r = match stream {
                        PeerStream::Tcp(s) => {
                            peer_conn::run_metadata(f.clone(), key, s, info, remote, ctrl_rx).await
                        }
                    };
                    f.peer_event(key, PeerEvent::Gone { error: r.err() });
                });
            }
            (None, None) => return,
        }
        self.dirty = true;
        self.schedule_sweep(env);
    }

    /// An incoming peer that told its listen port (BEP 10 `p`) can be dialled there.
    fn learn_listen_addr(&mut self, info: &PeerInfo, now: Instant) {
        let port = info.listen_port.load(Ordering::Relaxed);
        if !info.outgoing && port != 0 {
            self.book.add(
                SocketAddr::new(info.addr.ip(), port),
                PeerSource::Incoming,
                now,
            );
        }
    }

    /// The info dictionary of the magnet link arrived and hashes to the info hash: make it
    /// the torrent's metainfo (kept in the state store so it is never fetched again),
    /// close the metadata connections (their addresses are dialled again with the full
    /// protocol), and go on to the check and the download.
    fn metadata_arrived(&mut self, env: &mut Env<'_>) {
        let Some(info) = self
            .pending
            .as_ref()
            .and_then(|p| p.fetch.as_ref())
            .and_then(|f| f.take_done())
        else {
            return;
        };
        let Some(pending) = self.pending.take() else {
            return;
        };
        let bytes = crate::metainfo::create::torrent_from_info(&info, &self.sum.trackers);
        let meta = match Metainfo::from_bytes(&bytes) {
            Ok(m) => m,
            Err(e) => {
                let err = TorrentError {
                    kind: TorrentErrorKind::BadMetadata,
                    message: format!("the metadata peers sent is not a usable torrent: {e}"),
                };
                self.pending = Some(PendingMetadata {
                    link: pending.link,
                    fetch: None,
                });
                self.input(Input::Failed(err), env);
                return;
            }
        };
        if let Some(store) = env.store
            && let Err(e) = store.put_metainfo(&meta.info_hash, &bytes)
        {
            // it stays in memory for this run; the next run fetches it again
            self.keep_meta = true;
            self.log(
                env,
                EventLevel::Error,
                EventKind::DiskError,
                format!("cannot keep the fetched metadata in the state folder: {e}"),
            );
        }
        // the metadata connections end; the addresses stay known and are dialled again
        let now = env.now;
        for (_, p) in self.peers.iter() {
            p.send(PeerCtrl::Disconnect("metadata complete"));
        }
        let old = std::mem::take(&mut self.peers);
        for (k, p) in old.iter() {
            self.choker.peer_gone(*k);
            if p.info.outgoing {
                self.book.release(p.info.addr, now);
            } else {
                self.book.disconnected(p.info.addr, true, false, now);
                self.learn_listen_addr(&p.info, now);
            }
        }
        self.sum = Summary::of(&meta);
        if self.sum.private {
            // BEP 27: the info dictionary says private; neither the DHT nor LSD is used
            // from now on
            self.dht_stop(env);
            self.lsd_stop(env);
        }
        let n = self.sum.piece_count();
        self.have = Bitfield::new(n);
        self.file_prio = vec![FilePriority::Normal; self.sum.files.len()];
        if !pending.link.select_only.is_empty() {
            // BEP 53: indices into the info dictionary's file list
            for (i, p) in self.file_prio.iter_mut().enumerate() {
                if !pending.link.select_only.contains(&i) {
                    *p = FilePriority::Skip;
                }
            }
            self.piece_prio = self.compute_piece_priorities();
        }
        let files = meta.files.iter().filter(|f| !f.pad).count();
        let size = crate::units::size(meta.payload_size());
        self.meta = Some(Arc::new(meta));
        self.persist_dirty = true;
        self.dirty = true;
        self.cached_row = None;
        self.log(
            env,
            EventLevel::Info,
            EventKind::StateChanged,
            format!("metadata received: {size} in {files} files, {n} pieces"),
        );
        self.input(Input::MetadataReady, env);
    }

    fn evict(&mut self, key: u64, env: &mut Env<'_>) {
        if let Some(p) = self.peers.remove(key) {
            tracing::debug!(addr = %p.info.addr, "evicting an idle peer for a newcomer");
            p.send(PeerCtrl::Disconnect("evicted for a newcomer"));
            self.book
                .disconnected(p.info.addr, !p.info.outgoing, false, env.now);
            self.choker.peer_gone(key);
        }
    }

    /// Peer exchange (BEP 11): hand every connection the list of peers connected now
    /// (dialable addresses: the one we dialled, or an incoming peer's listen port); each
    /// connection sends its peer the difference at most once a minute. Off for private
    /// torrents (BEP 27) and with `pex = false`.
    fn share_peers(&self, shared: &TorrentShared, env: &Env<'_>) {
        if !env.ctx.config.pex || shared.is_private() || self.peers.len() < 2 {
            return;
        }
        let n = shared.piece_count();
        let list: Vec<crate::peer::pex::PexPeer> = self
            .peers
            .iter()
            .filter_map(|(_, p)| {
                let i = &p.info;
                let port = i.listen_port.load(Ordering::Relaxed);
                let addr = if i.outgoing {
                    i.addr
                } else if port != 0 {
                    std::net::SocketAddr::new(i.addr.ip(), port)
                } else {
                    return None;
                };
                let mut flags = 0;
                if n > 0 && i.pieces.load(Ordering::Relaxed) == n {
                    flags |= crate::peer::pex::FLAG_SEED;
                }
                if i.outgoing {
                    flags |= crate::peer::pex::FLAG_REACHABLE;
                }
                Some(crate::peer::pex::PexPeer { addr, flags })
            })
            .collect();
        if !list.is_empty() {
            self.peers.broadcast(&PeerCtrl::Pex(Arc::new(list)));
        }
    }

    /// An event from connection `key`.
    pub fn on_peer(&mut self, key: u64, ev: PeerEvent, env: &mut Env<'_>) {
        match ev {
            PeerEvent::InterestChanged => self.fill_slots(env),
            PeerEvent::CancelElsewhere(block) => {
                for (k, p) in self.peers.iter() {
                    if *k != key {
                        p.send(PeerCtrl::Cancel(block));
                    }
                }
            }
            PeerEvent::PieceUnreadable { piece, error } => self.piece_lost(piece, &error, env),
            PeerEvent::MetadataComplete => self.metadata_arrived(env),
            PeerEvent::Pex(added) => {
                // a seed has no use for other seeds
                let seeding = self.shared.as_ref().is_some_and(|s| s.is_complete());
                let mut new = 0;
                for p in added {
                    if seeding && p.flags & crate::peer::pex::FLAG_SEED != 0 {
                        continue;
                    }
                    new += usize::from(self.book.add(p.addr, PeerSource::Pex, env.now));
                }
                if new > 0 {
                    tracing::debug!(torrent = %self.sum.name, new, "peers from ut_pex");
                    self.connect_more(env);
                }
            }
            PeerEvent::Gone { error } => {
                self.hash_fails.remove(&key);
                self.choker.peer_gone(key);
                if let Some(p) = self.peers.remove(key) {
                    let n = self.sum.piece_count();
                    let was_seed = p.info.pieces.load(Ordering::Relaxed) == n && n > 0;
                    self.book
                        .disconnected(p.info.addr, !p.info.outgoing, was_seed, env.now);
                    self.learn_listen_addr(&p.info, env.now);
                    if let Some(e) = &error {
                        tracing::debug!(torrent = %self.sum.name, addr = %p.info.addr, "peer closed: {e}");
                    }
                    self.dirty = true;
                    // a slot may have opened
                    self.fill_slots(env);
                    self.schedule_sweep(env);
                    self.connect_more(env);
                }
            }
        }
    }

    /// Verified piece `piece` could not be read back: it is missing again.
    fn piece_lost(&mut self, piece: u32, error: &StorageError, env: &mut Env<'_>) {
        let Some(shared) = self.shared.clone() else {
            return;
        };
        if !shared.have.clear(piece) {
            return;
        }
        shared.picker().piece_lost(piece);
        self.dirty = true;
        if !self.lost_pieces_logged {
            self.lost_pieces_logged = true;
            self.log(
                env,
                EventLevel::Error,
                EventKind::DiskError,
                format!("verified data is missing on disk ({error}); fetching those pieces again"),
            );
        }
        self.peers.broadcast(&PeerCtrl::CheckInterest);
        self.input(Input::PiecesLost, env);
    }

    /// A disk worker's result.
    pub fn on_disk(&mut self, disk_key: u64, ev: DiskEvent, env: &mut Env<'_>) {
        let Some(shared) = self.shared.clone() else {
            return;
        };
        if shared.disk.key != disk_key {
            return; // a result for storage opened before a pause or an error
        }
        match ev {
            DiskEvent::PieceVerified(p) => {
                let complete = {
                    let mut pk = shared.picker();
                    if !pk.piece_verified(p) {
                        return;
                    }
                    shared.have.set(p);
                    pk.is_finished()
                };
                self.dirty = true;
                self.persist_dirty = true;
                self.peers.broadcast(&PeerCtrl::Have(p));
                if complete {
                    // the files must still be the ones we wrote (a deleted download folder
                    // leaves open handles writing into unlinked files)
                    if let Err(e) = shared
                        .disk
                        .storage
                        .create_empty_files()
                        .and_then(|()| shared.disk.storage.verify_files_present())
                    {
                        let err = storage_error(&e);
                        self.log(
                            env,
                            EventLevel::Error,
                            EventKind::DiskError,
                            err.message.clone(),
                        );
                        self.input(Input::Failed(err), env);
                        return;
                    }
                    self.log(
                        env,
                        EventLevel::Info,
                        EventKind::Completed,
                        "download complete".into(),
                    );
                    self.peers.broadcast(&PeerCtrl::CheckInterest);
                    self.input(Input::Complete, env);
                }
            }
            DiskEvent::PieceFailed(p) => {
                let peers = shared.picker().piece_failed(p);
                let size = u64::from(shared.geometry.piece_size(p));
                shared.stats.wasted.fetch_add(size, Ordering::Relaxed);
                self.log(
                    env,
                    EventLevel::Warn,
                    EventKind::HashFailed,
                    format!("piece {p} failed its hash check; fetching it again"),
                );
                // peers we lost interest in while the piece was being hashed have it again
                self.peers.broadcast(&PeerCtrl::CheckInterest);
                for key in peers {
                    let n = self.hash_fails.entry(key).or_default();
                    *n += 1;
                    if *n >= MAX_HASH_FAILS {
                        let n = *n;
                        if let Some(p) = self.peers.get(key) {
                            let addr = p.info.addr;
                            p.send(PeerCtrl::Disconnect("banned"));
                            self.book.ban(addr.ip());
                            self.log(
                                env,
                                EventLevel::Warn,
                                EventKind::PeerBanned,
                                format!("banning peer {addr}: {n} pieces from it failed their hash check"),
                            );
                        }
                    }
                }
            }
            DiskEvent::Error(e) => {
                // the piece is not on disk: it is fetched again once the cause is fixed
                // (the torrent stops now; partial pieces go with its shared state)
                if e.piece_done {
                    shared.picker().piece_failed(e.piece);
                }
                let err = storage_error(&e.error);
                self.log(
                    env,
                    EventLevel::Error,
                    EventKind::DiskError,
                    err.message.clone(),
                );
                self.input(Input::Failed(err), env);
            }
        }
    }

    /// Pieces verified now.
    fn have_count(&self) -> u32 {
        match &self.shared {
            Some(s) => s.have.count(),
            None => self.have.count(),
        }
    }

    /// Whether the row changes by itself (rates, peers, check progress): it is rebuilt at
    /// every publish tick while this is true.
    pub fn is_live(&self) -> bool {
        !self.peers.is_empty()
            || self.check.is_some()
            || self.moving.is_some()
            || self.meters.0.rate() > 0
            || self.meters.1.rate() > 0
    }

    /// Something shown changed since the last publish.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// The list row, rebuilt only when live or dirty (else the previous one is shared).
    pub fn row(&mut self, now: Instant) -> Arc<TorrentRow> {
        if !self.dirty
            && !self.is_live()
            && let Some(r) = &self.cached_row
        {
            return r.clone();
        }
        self.dirty = false;
        let row = self.build_row(now);
        if let Some(old) = &self.cached_row
            && **old == row
        {
            return old.clone();
        }
        self.rev += 1;
        let row = Arc::new(TorrentRow {
            rev: self.rev,
            ..row
        });
        self.cached_row = Some(row.clone());
        row
    }

    fn build_row(&mut self, now: Instant) -> TorrentRow {
        let n = self.sum.piece_count();
        let (downloaded, uploaded, _) = self.totals();
        let mut down_rate = self.meters.0.sample(downloaded, now);
        let mut up_rate = self.meters.1.sample(uploaded, now);
        let state = self.life.ui_state();
        if !state.is_active() {
            down_rate = 0;
            up_rate = 0;
        }
        let left = self.bytes_left();
        let skipping = self.file_prio.contains(&FilePriority::Skip);
        let (size, mut done) = if skipping {
            // the wanted files only, byte-exact
            let have = self.verified();
            let wanted = self
                .sum
                .files
                .iter()
                .zip(&self.file_prio)
                .filter(|(f, p)| !f.pad && **p != FilePriority::Skip);
            wanted.fold((0, 0), |(s, d), (f, _)| {
                (s + f.length, d + self.file_done(f, &have))
            })
        } else {
            let size = self.sum.payload_size;
            let total = self.sum.total_length();
            let verified = total.saturating_sub(left);
            // verified bytes, scaled to exclude padding (exact when the torrent has none)
            let done = if total == 0 {
                0
            } else {
                ((verified as u128 * size as u128) / total as u128) as u64
            };
            (size, done)
        };
        let mut have = self.have_count();
        if let Some(m) = &self.moving {
            done = m.load(Ordering::Relaxed).min(size);
        }
        if let (Lifecycle::Checking { .. }, Some(c)) = (&self.life, &self.check) {
            let checked = c.progress.load(Ordering::Relaxed).min(n);
            done = (u64::from(checked) * size) / u64::from(n.max(1));
            have = checked;
        }
        let (seeds, peers) = {
            let seeds = self
                .peers
                .iter()
                .filter(|(_, p)| p.info.pieces.load(Ordering::Relaxed) == n && n > 0)
                .count();
            (seeds as u32, self.peers.len() as u32)
        };
        let eta_secs =
            (state == TorrentState::Downloading && down_rate > 0).then(|| left / down_rate);
        let (swarm_seeds, swarm_leechers) = self.trackers.swarm();
        let fetching = self
            .pending
            .as_ref()
            .and_then(|p| p.fetch.as_ref())
            .filter(|_| self.life.is_running());
        let message = if let Some(g) = &self.guard {
            Some(format!("paused: {g}"))
        } else if let Some(f) = fetching {
            let total = f.total.load(Ordering::Relaxed);
            Some(if total == 0 {
                format!("fetching metadata (BEP 9) from {} peers", self.peers.len())
            } else {
                format!(
                    "fetching metadata: {}/{total} pieces from {} peers",
                    f.have.load(Ordering::Relaxed),
                    self.peers.len()
                )
            })
        } else if self.life.is_running() {
            self.sources_headline()
        } else {
            None
        };
        TorrentRow {
            id: self.id,
            rev: self.rev,
            name: self.sum.name.clone(),
            info_hash: self.sum.info_hash.to_hex(),
            size,
            done,
            pieces_have: have,
            pieces_total: n,
            state,
            error: self.life.error().cloned(),
            down_rate,
            up_rate,
            eta_secs,
            seeds,
            peers,
            swarm_seeds,
            swarm_leechers,
            downloaded,
            uploaded,
            added_at: self.added_at,
            down_limit: self.limits.download.rate(),
            up_limit: self.limits.upload.rate(),
            message,
        }
    }

    /// The detail view of this torrent.
    pub fn detail(&mut self, now: Instant) -> TorrentDetail {
        let n = self.sum.piece_count();
        let mut peers: Vec<PeerRow> = Vec::with_capacity(self.peers.len());
        let optimistic = self.choker.optimistic();
        for (k, p) in self.peers.iter_mut() {
            let i = &p.info;
            let down = i.downloaded.load(Ordering::Relaxed);
            let up = i.uploaded.load(Ordering::Relaxed);
            let down_rate = p.meters.0.sample(down, now);
            let up_rate = p.meters.1.sample(up, now);
            let client = i
                .client
                .locked()
                .clone()
                .unwrap_or_else(|| crate::peer::client_name(&i.peer_id));
            peers.push(PeerRow {
                addr: i.addr,
                client,
                flags: PeerFlags {
                    am_choking: i.am_choking.load(Ordering::Relaxed),
                    am_interested: i.am_interested.load(Ordering::Relaxed),
                    peer_choking: i.peer_choking.load(Ordering::Relaxed),
                    peer_interested: i.peer_interested.load(Ordering::Relaxed),
                    incoming: !i.outgoing,
                    encrypted: false,
                    utp: false,
                    snubbed: i.snubbed.load(Ordering::Relaxed),
                    optimistic: optimistic == Some(*k),
                },
                progress: if n == 0 {
                    1.0
                } else {
                    i.pieces.load(Ordering::Relaxed) as f32 / n as f32
                },
                down_rate,
                up_rate,
                downloaded: down,
                uploaded: up,
                source: i.source,
            });
        }
        peers.sort_by_key(|p| p.addr);
        let have = self.verified();
        let mut pieces: Vec<PieceState> = (0..n)
            .map(|p| {
                if have.get(p) {
                    PieceState::Have
                } else {
                    PieceState::Missing
                }
            })
            .collect();
        if let Some(s) = &self.shared {
            for p in s.picker().partial_pieces() {
                if let Some(x) = pieces.get_mut(p as usize) {
                    *x = PieceState::Downloading;
                }
            }
        }
        let meta = self.meta.clone();
        let files = match &meta {
            Some(m) => m
                .files
                .iter()
                .zip(self.sum.files.iter())
                .zip(&self.file_prio)
                .filter(|((f, _), _)| !f.pad)
                .map(|((f, span), prio)| FileRow {
                    path: m.path_in_folder(f),
                    changed: f.changes.describe(),
                    size: f.length,
                    done: self.file_done(span, &have),
                    priority: *prio,
                })
                .collect(),
            None => Vec::new(),
        };
        let (_, _, wasted) = self.totals();
        let known = self.book.source_counts();
        let peer_sources = [
            PeerSource::Tracker,
            PeerSource::Incoming,
            PeerSource::Dht,
            PeerSource::Pex,
            PeerSource::Lsd,
            PeerSource::Magnet,
            PeerSource::Manual,
        ]
        .into_iter()
        .map(|source| crate::api::SourceCount {
            source,
            known: known.get(&source).copied().unwrap_or(0),
            connected: peers.iter().filter(|p| p.source == source).count() as u32,
        })
        .filter(|c| c.known > 0 || c.connected > 0 || self.in_effect(c.source))
        .collect();
        TorrentDetail {
            peer_sources,
            given_peers: self.given_peers(),
            id: self.id,
            info_hash: self.sum.info_hash.to_hex(),
            save_path: self.save_dir.clone(),
            name_changed: meta.as_ref().and_then(|m| m.name_changes.describe()),
            comment: meta.as_ref().and_then(|m| m.comment.clone()),
            created_by: meta.as_ref().and_then(|m| m.created_by.clone()),
            creation_date: meta.as_ref().and_then(|m| m.creation_date),
            private: self.sum.private,
            piece_length: self.sum.geometry.piece_length(),
            wasted,
            peers,
            files,
            trackers: self.trackers.rows(now, SystemTime::now()),
            pieces: Arc::from(pieces),
        }
    }

    /// Move the files to `to` (`move_data`), or only point the torrent there and recheck
    /// ("set location", the user moved the files). A move runs on a blocking thread; the
    /// torrent is out of the swarm meanwhile and comes back as it was.
    pub fn move_storage(&mut self, to: PathBuf, move_data: bool, env: &mut Env<'_>) {
        if to == self.save_dir {
            return;
        }
        if self.pending.is_some() {
            // no files yet: the download simply goes there
            self.log(
                env,
                EventLevel::Info,
                EventKind::StateChanged,
                format!("save folder set to {}", to.display()),
            );
            self.set_save_dir(to, env);
            return;
        }
        if !move_data {
            self.log(
                env,
                EventLevel::Info,
                EventKind::StateChanged,
                format!("location set to {}; rechecking", to.display()),
            );
            self.set_save_dir(to, env);
            self.input(Input::Recheck, env);
            return;
        }
        let before = self.life.ui_state();
        self.input(Input::MoveStart, env);
        if self.life.ui_state() != TorrentState::Moving {
            self.log(
                env,
                EventLevel::Warn,
                EventKind::StateChanged,
                format!("cannot move while {}", before.label().to_lowercase()),
            );
            return;
        }
        let Ok(meta) = self.load_meta(env) else {
            self.input(Input::MoveDone, env);
            return;
        };
        // no handle may stay open on the old files
        if let Some(d) = self.disk.take() {
            d.storage.close_all();
            env.ctx.link.pool.forget(d.key);
        }
        let rel = crate::storage::PayloadFiles::of(&meta, &self.save_dir).files;
        let from = self.save_dir.clone();
        let progress = Arc::new(std::sync::atomic::AtomicU64::new(0));
        self.moving = Some(progress.clone());
        let ctx = env.ctx.clone();
        let id = self.id;
        self.log(
            env,
            EventLevel::Info,
            EventKind::StateChanged,
            format!(
                "moving its files from {} to {}",
                from.display(),
                to.display()
            ),
        );
        tokio::task::spawn_blocking(move || {
            let result = crate::storage::mover::move_payload(&from, &to, &rel, &progress)
                .map(|()| to)
                .map_err(|e| e.to_string());
            ctx.send(SessionEvent::Moved {
                torrent: id,
                result,
            });
        });
    }

    /// A move ended.
    pub fn on_moved(&mut self, result: Result<PathBuf, String>, env: &mut Env<'_>) {
        self.moving = None;
        match result {
            Ok(to) => {
                self.log(
                    env,
                    EventLevel::Info,
                    EventKind::StateChanged,
                    format!("files moved to {}", to.display()),
                );
                self.set_save_dir(to, env);
            }
            Err(e) => self.log(
                env,
                EventLevel::Error,
                EventKind::DiskError,
                format!("moving failed, the files stay where they were: {e}"),
            ),
        }
        self.input(Input::MoveDone, env);
    }

    fn set_save_dir(&mut self, to: PathBuf, env: &mut Env<'_>) {
        self.save_dir = to;
        if let Some(d) = self.disk.take() {
            d.storage.close_all();
            env.ctx.link.pool.forget(d.key);
        }
        self.file_stats.clear();
        self.persist_dirty = true;
        self.dirty = true;
    }

    /// The disk guard pauses a download: its volume has too little free space.
    pub fn guard_pause(&mut self, reason: String, env: &mut Env<'_>) {
        if self.life.ui_state() != TorrentState::Downloading {
            return;
        }
        self.log(
            env,
            EventLevel::Warn,
            EventKind::DiskError,
            format!("paused: {reason}"),
        );
        self.input(Input::Pause, env);
        self.guard = Some(reason);
        self.dirty = true;
    }

    /// Space is back: resume a download the disk guard paused.
    pub fn guard_resume(&mut self, env: &mut Env<'_>) {
        if self.guard.take().is_some() && self.life.ui_state() == TorrentState::Paused {
            self.log(
                env,
                EventLevel::Info,
                EventKind::StateChanged,
                "free space is back: resuming".into(),
            );
            self.input(Input::Resume, env);
        }
        self.dirty = true;
    }

    /// Paused by the disk guard.
    pub fn guarded(&self) -> bool {
        self.guard.is_some()
    }

    /// Set this torrent's own limits, bytes/s (0 = unlimited); the session's still apply.
    pub fn set_limits(&mut self, download: u64, upload: u64) {
        self.limits.download.set_rate(download);
        self.limits.upload.set_rate(upload);
        self.dirty = true;
        self.persist_dirty = true;
    }

    /// Announce to every tracker now (as far as `min interval` allows).
    pub fn reannounce(&mut self, env: &mut Env<'_>) {
        if self.life.is_running() {
            self.trackers.reannounce(env.now);
            self.schedule_announce(env);
        }
    }

    /// The payload files, the part file and the top folder, for delete-data; `None` when
    /// the metainfo cannot be loaded.
    pub fn data_paths(&mut self, env: &Env<'_>) -> Option<crate::storage::PayloadFiles> {
        let meta = self.load_meta(env).ok()?;
        Some(crate::storage::PayloadFiles::of(&meta, &self.save_dir))
    }
}

/// Fill in the session-wide parts of an announce: peer id, port, key, numwant.
fn complete_request(req: &mut AnnounceRequest, ctx: &SessionCtx) {
    req.peer_id = ctx.peer_id;
    req.port = ctx.listen_port;
    req.key = ctx.tracker_key;
    req.numwant = if req.event == Some(AnnounceEvent::Stopped) {
        Some(0)
    } else {
        ctx.config.announce_numwant()
    };
}

/// Now, in Unix seconds.
fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The file priority of a piece priority level (as stored).
fn prio_of_level(l: u8) -> FilePriority {
    match l {
        0 => FilePriority::Skip,
        1 => FilePriority::Low,
        3.. => FilePriority::High,
        _ => FilePriority::Normal,
    }
}

/// The stored code of an error kind.
fn error_kind_code(k: TorrentErrorKind) -> u8 {
    match k {
        TorrentErrorKind::NoSpace => 1,
        TorrentErrorKind::PermissionDenied => 2,
        TorrentErrorKind::ReadOnly => 3,
        TorrentErrorKind::FilesMissing => 4,
        TorrentErrorKind::Storage => 5,
        TorrentErrorKind::Internal => 6,
        TorrentErrorKind::BadMetadata => 7,
    }
}

/// The error kind of a stored code.
fn error_kind_of(c: u8) -> TorrentErrorKind {
    match c {
        1 => TorrentErrorKind::NoSpace,
        2 => TorrentErrorKind::PermissionDenied,
        3 => TorrentErrorKind::ReadOnly,
        4 => TorrentErrorKind::FilesMissing,
        5 => TorrentErrorKind::Storage,
        7 => TorrentErrorKind::BadMetadata,
        _ => TorrentErrorKind::Internal,
    }
}

/// The piece priority level of a file priority.
fn prio_level(p: FilePriority) -> u8 {
    match p {
        FilePriority::Skip => PRIO_SKIP,
        FilePriority::Low => 1,
        FilePriority::Normal => PRIO_NORMAL,
        FilePriority::High => PRIO_HIGH,
    }
}

/// A storage error as the user sees it: a kind with a hint, and the message.
pub fn storage_error(e: &StorageError) -> TorrentError {
    use crate::storage::StorageErrorKind as K;
    let kind = match e.kind() {
        K::NoSpace => TorrentErrorKind::NoSpace,
        K::PermissionDenied => TorrentErrorKind::PermissionDenied,
        K::ReadOnly => TorrentErrorKind::ReadOnly,
        K::NotFound | K::FileDeleted | K::Truncated => TorrentErrorKind::FilesMissing,
        K::Refused | K::Io => TorrentErrorKind::Storage,
    };
    TorrentError {
        kind,
        message: e.to_string(),
    }
}

/// How long the `stopped` announces may take at shutdown.
pub const STOP_ANNOUNCE_TIMEOUT: Duration = Duration::from_secs(3);
