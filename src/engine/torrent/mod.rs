//! One torrent, owned by the session task.
//!
//! A torrent is plain data driven by the session: every input (a command, a disk result,
//! a peer event, an announce answer, a timer) is one method call that updates the parts and
//! carries out the state machine's effects. Timers live on the session's deadline queue, so
//! a torrent with nothing due costs nothing. While it runs, what its peer connections
//! share lives in [`crate::engine::link`].
//!
//! This file holds [`Torrent`], its inputs from the state machine and its timer. Beside it:
//! - plain, tested parts: [`state`] (the life cycle, a pure machine; a check and a move
//!   live in their states as [`jobs`], the connections' shared state in the running
//!   states as [`live`]), [`wanted`] (file →
//!   piece priorities), [`summary`] (what is kept of the metainfo; progress arithmetic),
//!   [`view`] (the list row and detail view), [`persist`] (the state-store record),
//!   [`check_queue`] (check slots), `queue` (its place in the session's queue, force start), [`announce`] (tracker tiers), [`peer_book`] (known addresses), [`peers`] (connected
//!   peers), [`choke`] (upload slots);
//! - `impl Torrent` pages, one per kind of input: `swarm` (dials, admission, peer events,
//!   the choke round, PEX, bans), `trackers` (announces, scrapes), [`disk`] (files, checks,
//!   disk results), `magnet` (a magnet link's metadata), `relocate` (moving the files),
//!   `dht` and `lsd` (those peer sources), [`sources`] (the peers the user gave, the
//!   sources in effect), [`goals`] (seeding goals: share limits, the seeding clock),
//!   `category` (its category, tags and automatic management; the move to the save path
//!   on completion), `piece_order` (sequential download, first and last pieces first),
//!   `unchecked` (pieces taken without a hash check, verified before their first upload),
//!   [`webseeds`] (its web seeds, BEP 19: their tasks while it downloads, hash failures
//!   counted against them, their rows).

pub mod announce;
mod category;
pub mod check_queue;
pub mod choke;
mod dht;
pub mod disk;
pub mod goals;
mod hook;
mod info;
pub mod jobs;
pub mod live;
mod lsd;
mod magnet;
pub mod peer_book;
pub mod peers;
pub mod persist;
mod piece_order;
mod queue;
mod relocate;
pub mod sources;
pub mod state;
pub mod summary;
mod swarm;
pub mod tracker_edit;
mod trackers;
mod unchecked;
pub mod view;
pub mod wanted;
pub mod webseeds;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use self::announce::{AnnounceJob, TrackerSet};
pub use self::check_queue::CheckQueue;
use self::choke::Choker;
use self::info::Info;
use self::jobs::CheckJob;
use self::live::Live;
use self::peer_book::PeerBook;
use self::peers::PeerSet;
use self::state::{Effect, Facts, Input, Lifecycle};
use self::summary::Summary;
use self::swarm::Strikes;
use self::trackers::complete_request;
use self::view::RowCache;
use self::wanted::Wanted;
use super::ctx::SessionCtx;
use super::event_log::EventLog;
use super::link::ctx::Limits;
use super::link::message::PeerCtrl;
use super::link::shared::TorrentShared;
use super::rate::RateMeter;
use super::timer::Timers;
use crate::api::{
    EventKind, EventLevel, FilePriority, TorrentError, TorrentErrorKind, TorrentId, TorrentState,
};
use crate::metainfo::{InfoHash, Metainfo};
use crate::piece::Bitfield;
use crate::tracker::{AnnounceRequest, TrackerClient};

/// A running torrent with no peer for this long lets go of its storage and metainfo.
pub const QUIET_AFTER: Duration = Duration::from_secs(300);

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
    /// A seeding time or inactive seeding time goal may be reached (see `torrent/goals.rs`).
    Goal,
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
    /// Look at the IP filter file for changes.
    IpFilter,
    /// The alternative speed schedule's next boundary (see [`crate::engine::alt_speed`]).
    AltSpeed,
    /// Look at the rates of the torrents holding queue slots (slow torrents, see
    /// [`crate::engine::queue`]).
    Queue,
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
    /// The queue's slots: whether this torrent must wait as `Queued` when it would run.
    pub queue: &'a crate::engine::queue::QueueGate,
    /// The session's seeding goals in effect (`[seeding]`, changeable while it runs).
    pub seeding: &'a crate::config::engine::SeedingConfig,
}

/// `left` announced while the size is unknown (magnet links; libtorrent does the same):
/// non-zero, so trackers list seeders to us.
const LEFT_UNKNOWN: u64 = 16 * 1024;

/// One torrent of the session.
pub struct Torrent {
    /// Session-local id.
    pub id: TorrentId,
    /// What is always kept of the metainfo.
    pub sum: Summary,
    /// The info dictionary: the full metainfo (files, hashes), resident while needed and
    /// reloaded from the state store; or the magnet link still fetching it.
    info: Info,
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
    /// This torrent's own limits (kept across pause/resume).
    limits: Arc<Limits>,
    life: Lifecycle,
    /// Verified pieces while no shared state exists (paused, queued, error, completed).
    have: Bitfield,
    /// Failed, and its files changed since its resume data was written (found at start):
    /// its verified pieces are still shown, and resuming rechecks them.
    stale_have: bool,
    /// What is wanted: file priorities and the piece priorities they make.
    wanted: Wanted,
    trackers: TrackerSet,
    book: PeerBook,
    choker: Choker,
    peers: PeerSet,
    dialing: HashSet<SocketAddr>,
    /// Hash failures per connection (bans).
    strikes: Strikes,
    /// Connections closed as a twin (one peer, two connections) whose end the kept one
    /// waits for: (closed, kept). When the closed one's task has given its requests back,
    /// the kept one asks again ([`PeerCtrl::Repick`]).
    twins: Vec<(u64, u64)>,
    meters: (RateMeter, RateMeter),
    /// Byte counters of shared states that were dropped (pause/resume keeps totals).
    carried: (u64, u64, u64),
    last_round: Instant,
    /// The last list row built (shared while nothing shown changes).
    view: RowCache,
    lost_pieces_logged: bool,
    /// DHT lookups (BEP 5).
    dht: dht::DhtLookups,
    /// Seeding goals: limits, the seeding clock, a goal's stop or removal.
    goals: goals::GoalState,
    /// How it is managed: queue place, category, tags, piece order, unchecked pieces (the
    /// record's form, kept as read until each part is live).
    manage: crate::state::ManageRecord,
    /// Place in the queue shown to the user, 1 = first (set by the session's queue).
    queue_rank: u32,
    /// It completed with a final folder to go to (a category's download path in use): the
    /// session starts the move after the input (see `torrent/category.rs`).
    final_move_due: bool,
    /// Payload bytes moved either way at the last row, and when they last changed (Unix
    /// seconds): the row's `last_activity`. `None` until the first row.
    activity: Option<(u64, u64)>,
    /// The name the user gave it, shown instead of its own (`None`: its own).
    display_name: Option<String>,
    /// Pieces taken without a check that did not match when first hashed (this run).
    unchecked_failed: u32,
    /// Its web seeds (BEP 19).
    web_seeds: webseeds::WebSeeds,
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
        t.info = Info::Known(Some(meta));
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
            info: Info::Known(None),
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
            limits: Arc::new(Limits::unlimited()),
            life: Lifecycle::paused(true),
            have: Bitfield::new(n),
            stale_have: false,
            wanted: Wanted::all_normal(sum.files.len()),
            trackers,
            book: PeerBook::new(),
            choker: Choker::new(upload_slots),
            peers: PeerSet::new(),
            dialing: HashSet::new(),
            strikes: Strikes::default(),
            twins: Vec::new(),
            meters: Default::default(),
            carried: (0, 0, 0),
            last_round: Instant::now(),
            view: RowCache::default(),
            lost_pieces_logged: false,
            dht: dht::DhtLookups::default(),
            goals: goals::GoalState::default(),
            manage: Default::default(),
            queue_rank: 0,
            final_move_due: false,
            activity: None,
            display_name: None,
            unchecked_failed: 0,
            web_seeds: webseeds::WebSeeds::new(sum.web_seeds.as_deref().unwrap_or_default()),
            sum,
        }
    }

    /// The metainfo, loading it from the state store if it is not resident.
    ///
    /// # Errors
    /// The kept .torrent is missing or damaged.
    fn load_meta(&mut self, env: &Env<'_>) -> Result<Arc<Metainfo>, TorrentError> {
        let err = |message: String| TorrentError {
            kind: TorrentErrorKind::Internal,
            message,
        };
        let Info::Known(resident) = &mut self.info else {
            return Err(err("the torrent's metainfo is not available".into()));
        };
        if let Some(m) = resident {
            return Ok(m.clone());
        }
        let store = env
            .store
            .ok_or_else(|| err("the torrent's metainfo is not available".into()))?;
        let m = Arc::new(store.load_metainfo(&self.sum.info_hash).map_err(err)?);
        *resident = Some(m.clone());
        // a restored hybrid learns its v2 info hash here (its record does not keep it)
        self.sum.info_hash_v2 = m.info_hash_v2;
        Ok(m)
    }

    /// Drop the metainfo when nothing needs it: no storage is open (it is reloaded from
    /// the store).
    fn maybe_unload_meta(&mut self) {
        if !self.keep_meta
            && self.life.disk().is_none()
            && let Info::Known(resident) = &mut self.info
        {
            *resident = None;
        }
    }

    /// The state the connections share, while running with peers.
    fn shared(&self) -> Option<&Arc<TorrentShared>> {
        self.life.live().map(Live::shared)
    }

    /// The full metainfo, for the detail view (loaded if needed).
    pub fn metainfo(&mut self, env: &Env<'_>) -> Option<Arc<Metainfo>> {
        self.load_meta(env).ok()
    }

    /// The info hash on the wire: v1, or for a v2-only torrent the v2 hash cut to 20 bytes.
    pub fn info_hash(&self) -> InfoHash {
        self.sum.info_hash
    }

    /// A hybrid torrent's other 20-byte name: its v2 info hash cut to 20 bytes (BEP 52), by
    /// which v2 peers, trackers and the DHT know it too. `None` for v1 and v2-only ones.
    pub fn v2_alias(&self) -> Option<InfoHash> {
        self.sum
            .info_hash_v2
            .map(|v| InfoHash::truncated(&v))
            .filter(|a| *a != self.sum.info_hash)
    }

    /// Every 20-byte hash the torrent is known by: [`Torrent::info_hash`], then the
    /// [`Torrent::v2_alias`] of a hybrid (announced to trackers, the DHT and LSD).
    pub fn swarm_hashes(&self) -> impl Iterator<Item = InfoHash> {
        std::iter::once(self.sum.info_hash).chain(self.v2_alias())
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
        if self.awaiting_metadata() {
            return false;
        }
        match self.shared() {
            Some(s) => s.picker().is_finished(),
            None => self.wanted.is_complete(&self.have),
        }
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
        let changed = self.wanted.set(files, priority, &self.sum);
        self.persist_dirty = true;
        if let Some(d) = self.life.disk().cloned() {
            for &i in &changed {
                if let Err(e) = d.storage.set_skipped(i, priority == FilePriority::Skip) {
                    self.fail_on_disk(&e, env);
                    return;
                }
            }
        }
        if let Some(s) = self.shared() {
            s.picker().set_priorities(&self.piece_levels());
            self.peers.broadcast(&PeerCtrl::CheckInterest);
        }
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

    fn facts(&self, env: &Env<'_>) -> Facts {
        Facts {
            complete: self.complete(),
            seed: self.seed,
            fetch: self.new_fetch(env),
            held: env.queue.holds(self.id, self.manage.forced),
        }
    }

    /// Every piece verified (nothing at all to fetch from anyone).
    fn have_all(&self) -> bool {
        if self.awaiting_metadata() {
            return false;
        }
        match self.shared() {
            Some(s) => s.is_complete(),
            None => self.have.is_full(),
        }
    }

    fn verified(&self) -> Bitfield {
        match self.shared() {
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

    /// A check slot is free for it (the session's [`CheckQueue`] turn): its storage is
    /// opened and its check starts, unless it no longer waits for one.
    pub fn check_slot(&mut self, env: &mut Env<'_>) {
        if !matches!(self.life, Lifecycle::QueuedForCheck { .. }) {
            return;
        }
        match self.open_storage(env) {
            Ok(disk) => {
                let job = CheckJob::new(env.ctx.key(), disk);
                self.input(Input::CheckSlot(job), env);
            }
            Err(err) => self.input(Input::CheckFailed(err), env),
        }
    }

    /// Feed the state machine and carry out its effects.
    pub fn input(&mut self, input: Input, env: &mut Env<'_>) {
        let input = self.gate_resume(input, env);
        let before = self.life.ui_state();
        let effects = self.life.step(input, self.facts(env));
        // said before its effects run: an effect may feed another input (joining the swarm
        // finds the save folder cannot be made), which says its own change after this one,
        // once
        let after = self.life.ui_state();
        if before != after {
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
            self.goal_state_changed(before, after, env);
            self.category_state_changed(before, after);
        }
        for e in effects {
            self.apply(e, env);
        }
        self.sync_web_seeds(env);
        // not running and not checking: nothing needs the metainfo now (the storage went
        // with the state that had it)
        if !self.life.is_running() && self.life.check_job().is_none() {
            self.maybe_unload_meta();
        }
    }

    /// What a resume becomes before it reaches the state machine: a failed torrent whose
    /// files changed since its resume data (found at start) is rechecked; a stopped
    /// torrent with verified pieces that would go straight back to the swarm (paused
    /// without needing a check, or completed) first has its files looked at (one `lstat`
    /// each, [`crate::storage::check_verified_files`]) and fails with "files missing"
    /// instead of announcing pieces that are gone. Any other input passes unchanged.
    fn gate_resume(&mut self, input: Input, env: &mut Env<'_>) -> Input {
        if !matches!(input, Input::Resume | Input::GuardResume) {
            return input;
        }
        match &self.life {
            Lifecycle::Error(_) if input == Input::Resume && self.stale_have => {
                self.stale_have = false;
                return Input::Recheck;
            }
            Lifecycle::Paused {
                needs_check: false,
                guard,
            } if input == Input::Resume || guard.is_some() => {}
            Lifecycle::Completed if input == Input::Resume => {}
            _ => return input,
        }
        match self.files_hold_verified(env) {
            Ok(()) => input,
            // the state change to Error says it, with what to do: once
            Err(e) => Input::Failed(disk::storage_error(&e)),
        }
    }

    /// Whether the files of this stopped torrent still hold its verified pieces (stat
    /// only, see [`crate::storage::check_verified_files`]); skipped files are not looked
    /// at. Nothing verified, no metadata yet, or a metainfo that cannot be loaded: `Ok`
    /// (reads report what is wrong later).
    ///
    /// # Errors
    /// The first file missing or too short, or an `lstat` error.
    fn files_hold_verified(&mut self, env: &Env<'_>) -> Result<(), crate::storage::StorageError> {
        if self.awaiting_metadata() || self.have.count() == 0 {
            return Ok(());
        }
        let Ok(meta) = self.load_meta(env) else {
            return Ok(());
        };
        let paths: Vec<PathBuf> = meta.files.iter().map(|f| f.path.clone()).collect();
        let skip = self.wanted.files();
        crate::storage::check_verified_files(
            &self.save_dir,
            &paths,
            self.sum.files.spans(),
            &self.sum.geometry,
            &self.have,
            &|i| skip.get(i) == Some(&FilePriority::Skip),
        )
    }

    fn apply(&mut self, e: Effect, env: &mut Env<'_>) {
        match e {
            Effect::QueueCheck => env.checks.enqueue(self.id),
            Effect::StartCheck => self.start_check(env),
            // the check itself stopped with its state (dropping a CheckJob stops it)
            Effect::CancelCheck => env.checks.remove(self.id),
            Effect::ReleaseCheckSlot => {
                env.checks.remove(self.id);
                // the check's storage went with its state; the files are opened again when
                // a peer comes, until then hold nothing
                self.maybe_unload_meta();
            }
            Effect::ReopenFiles => self.close_storage(),
            Effect::Activate => self.activate(env),
            Effect::Deactivate(live) => {
                for job in self.deactivate(live, env) {
                    self.spawn_announce(job, env);
                }
            }
            Effect::HandOver(fetch) => self.hand_over(&fetch, env),
            Effect::AnnounceCompleted => {
                self.completed_at = Some(now_unix());
                self.trackers.complete(env.now);
                self.schedule_announce(env);
            }
        }
    }

    /// Join the swarm: trackers and dials. The storage and the state peers share are made
    /// when the first peer comes ([`Torrent::ensure_shared`]), so a running torrent nobody
    /// connects to holds neither its metainfo nor its files.
    fn activate(&mut self, env: &mut Env<'_>) {
        // a download with nothing verified yet makes its save folder now: a folder that
        // cannot be made (a typo, no permission, under /proc) fails at once, not when the
        // first peer comes, which may be never (a folder that vanished under verified data
        // is not made again: that is "files missing")
        if !self.awaiting_metadata()
            && self.have.count() == 0
            && !self.have.is_full()
            && let Err(e) = crate::storage::prepare_save_folder(&self.save_dir)
        {
            self.input(Input::Failed(disk::storage_error(&e)), env);
            return;
        }
        if let Some(s) = self.shared() {
            s.set_accepting(true);
        }
        self.book_kept_peers(env);
        self.note_discovery(env);
        self.trackers.start(env.now);
        self.schedule_announce(env);
        self.dht_start(env);
        self.lsd_start(env);
        self.connect_more(env);
    }

    /// Keep the verified pieces and the byte counters of what the connections shared, then
    /// drop it (partial pieces are fetched again next time: their hasher states go with it).
    fn retire(&mut self, live: Live) {
        let s = live.shared();
        self.have = s.have.to_bitfield();
        self.keep_unchecked(s);
        self.carried.0 += s.stats.downloaded.load(Ordering::Relaxed);
        self.carried.1 += s.stats.uploaded.load(Ordering::Relaxed);
        self.carried.2 += s.stats.wasted.load(Ordering::Relaxed);
    }

    /// Leave the swarm, retiring `live` (what the running state shared with its
    /// connections); returns the `stopped` announces owed.
    fn deactivate(&mut self, live: Option<Live>, env: &mut Env<'_>) -> Vec<AnnounceJob> {
        if let Some(live) = live {
            live.shared().set_accepting(false);
            self.retire(live);
        }
        self.peers
            .broadcast(&PeerCtrl::Disconnect("torrent stopped"));
        self.peers = PeerSet::new();
        self.web_seeds.stop_all();
        self.dialing.clear();
        self.book.clear();
        self.strikes.clear();
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
        self.trackers.stop()
    }

    /// Leave the swarm for good (the session shuts down): the owed announces are sent;
    /// the session keeps feeding their results until [`Torrent::announcing`] is false.
    pub fn shutdown(&mut self, env: &mut Env<'_>) {
        if let Some(c) = self.life.check_job() {
            c.cancel();
        }
        let live = self.life.take_live();
        for job in self.deactivate(live, env) {
            self.spawn_announce(job, env);
        }
    }

    /// Leave the swarm because the torrent is removed: the owed announces, to send in order
    /// without the torrent (a `completed` is followed by a `stopped`).
    pub fn remove(&mut self, env: &mut Env<'_>) -> Vec<(AnnounceJob, AnnounceRequest)> {
        if let Some(c) = self.life.check_job() {
            c.cancel();
        }
        let live = self.life.take_live();
        let jobs = self.deactivate(live, env);
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
        match self.shared() {
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
        if self.awaiting_metadata() {
            return LEFT_UNKNOWN;
        }
        match self.shared() {
            Some(s) => s.picker().bytes_left(),
            None => self.wanted.bytes_left(&self.sum.geometry, &self.have),
        }
    }

    /// A timer of this torrent fired.
    pub fn on_timer(&mut self, t: TorrentTimer, env: &mut Env<'_>) {
        if !self.life.is_running() {
            return;
        }
        match t {
            TorrentTimer::Announce => self.announce_due(env),
            TorrentTimer::Sweep => self.sweep(env),
            TorrentTimer::Dial => self.connect_more(env),
            TorrentTimer::Reclaim => self.fill_slots(env),
            TorrentTimer::Quiet => self.go_quiet(),
            TorrentTimer::Dht => self.dht_due(env),
            TorrentTimer::Goal => self.check_goals(env),
        }
    }

    /// Pieces verified now.
    fn have_count(&self) -> u32 {
        match self.shared() {
            Some(s) => s.have.count(),
            None => self.have.count(),
        }
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
        self.input(Input::GuardPause(reason), env);
    }

    /// Space is back: resume a download the disk guard paused (a move under way goes on;
    /// the torrent is no longer the guard's).
    pub fn guard_resume(&mut self, env: &mut Env<'_>) {
        if !self.guarded() {
            return;
        }
        if self.life.ui_state() == TorrentState::Paused {
            self.log(
                env,
                EventLevel::Info,
                EventKind::StateChanged,
                "free space is back: resuming".into(),
            );
        }
        self.input(Input::GuardResume, env);
    }

    /// Paused by the disk guard.
    pub fn guarded(&self) -> bool {
        self.life.guard().is_some()
    }

    /// Set this torrent's own limits, bytes/s (0 = unlimited); the session's still apply.
    pub fn set_limits(&mut self, download: u64, upload: u64) {
        self.limits.download.set_rate(download);
        self.set_own_upload_limit(upload);
        self.persist_dirty = true;
    }

    /// Show it as `name` (qBittorrent's `torrents/rename`: the name only, its files stay
    /// where they are); `None` or a blank name: its own name again. Kept in its record.
    pub fn rename(&mut self, name: Option<String>, env: &mut Env<'_>) {
        let name = name.filter(|n| !n.trim().is_empty());
        if name == self.display_name {
            return;
        }
        let msg = match &name {
            Some(n) => format!("{}: renamed {n}", self.sum.name),
            None => format!("{}: its own name again", self.sum.name),
        };
        self.display_name = name;
        self.persist_dirty = true;
        *env.publish_now = true;
        self.log(env, EventLevel::Info, EventKind::StateChanged, msg);
    }
}

/// Now, in Unix seconds.
fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// How long the `stopped` announces may take at shutdown.
pub const STOP_ANNOUNCE_TIMEOUT: Duration = Duration::from_secs(3);
