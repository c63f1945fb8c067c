//! One torrent, owned by the session task: its life cycle ([`state`]), trackers
//! ([`announce`]), known addresses ([`peer_book`]), connected peers ([`peers`]), choking
//! ([`choke`]) and, while it runs, the state its peer connections share ([`shared`]).
//!
//! A torrent is plain data driven by the session: every input (a command, a disk result,
//! a peer event, an announce answer, a timer) is one method call that updates the parts and
//! carries out the state machine's effects. Timers live on the session's deadline queue, so
//! a torrent with nothing due costs nothing.

pub mod announce;
pub mod choke;
pub mod peer_book;
pub mod peers;
pub mod shared;
pub mod state;

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
use self::shared::TorrentShared;
use self::state::{Effect, Facts, Input, Lifecycle};
use super::ctx::{Limits, PeerEvent, SessionCtx, SessionEvent, SlotKind};
use super::event_log::EventLog;
use super::peer_conn::{self, PeerCtrl, PeerError, PeerInfo, PeerStream};
use super::picker::{PRIO_HIGH, PRIO_NORMAL, PRIO_SKIP, Picker};
use super::rate::{RateLimiter, RateMeter};
use super::timer::Timers;
use crate::api::{
    EventKind, EventLevel, FilePriority, FileRow, PeerFlags, PeerRow, PeerSource, PieceState,
    TorrentDetail, TorrentError, TorrentErrorKind, TorrentId, TorrentRow, TorrentState,
};
use crate::metainfo::{InfoHash, Metainfo};
use crate::peer::wire::Handshake;
use crate::piece::Bitfield;
use crate::storage::StorageError;
use crate::storage::disk::{DiskEvent, TorrentDisk};
use crate::tracker::{
    AnnounceEvent, AnnounceRequest, AnnounceResponse, TrackerClient, TrackerError,
};

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
}

/// A key on the session's deadline queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TimerKey {
    /// A torrent's timer.
    Torrent(TorrentId, TorrentTimer),
    /// Publish a snapshot.
    Publish,
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
}

struct CheckJob {
    key: u64,
    progress: Arc<AtomicU32>,
    cancel: Arc<AtomicBool>,
}

/// One torrent of the session.
pub struct Torrent {
    /// Session-local id.
    pub id: TorrentId,
    /// The metainfo.
    pub meta: Arc<Metainfo>,
    /// The folder its files go into.
    pub save_dir: PathBuf,
    /// When it was added (Unix seconds).
    pub added_at: u64,
    seed: bool,
    /// This torrent's own limits (kept across pause/resume).
    limits: Arc<Limits>,
    life: Lifecycle,
    /// Verified pieces while no shared state exists (paused, queued, error, completed).
    have: Bitfield,
    /// Download priority per file of the metainfo (padding files: ignored).
    file_prio: Vec<FilePriority>,
    /// Priority per piece, from the files' (0: only in skipped files).
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
    ) -> Torrent {
        let n = meta.piece_count();
        let trackers = TrackerSet::new(&meta.trackers, TrackerClient::supports);
        Torrent {
            id,
            save_dir,
            added_at: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            seed,
            limits: Arc::new(Limits {
                download: RateLimiter::new(0),
                upload: RateLimiter::new(0),
            }),
            life: Lifecycle::Paused { needs_check: true },
            have: Bitfield::new(n),
            file_prio: vec![FilePriority::Normal; meta.files.len()],
            piece_prio: vec![PRIO_NORMAL; n as usize],
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
            meta,
        }
    }

    /// v1 info hash.
    pub fn info_hash(&self) -> InfoHash {
        self.meta.info_hash
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
        match &self.shared {
            Some(s) => s.picker().is_finished(),
            None => self
                .piece_prio
                .iter()
                .enumerate()
                .all(|(p, &l)| l == PRIO_SKIP || self.have.get(p as u32)),
        }
    }

    /// The priority of each piece: the highest of the files it holds bytes of (a piece of
    /// padding only takes the highest priority of any file).
    fn compute_piece_priorities(&self) -> Vec<u8> {
        let geo = self.meta.geometry();
        let mut prio = vec![PRIO_SKIP; geo.piece_count() as usize];
        let mut touched = vec![false; geo.piece_count() as usize];
        let mut top = PRIO_SKIP;
        for (f, fp) in self.meta.files.iter().zip(&self.file_prio) {
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
            .meta
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
        self.piece_prio = self.compute_piece_priorities();
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
            s.picker().set_priorities(&self.piece_prio);
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
            has_metadata: true,
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
            format!("{}: {msg}", self.meta.name),
        );
    }

    /// Feed the state machine and carry out its effects.
    pub fn input(&mut self, input: Input, env: &mut Env<'_>) {
        let before = self.life.ui_state();
        let effects = self.life.step(input, self.facts());
        for e in effects {
            self.apply(e, env);
        }
        let after = self.life.ui_state();
        if before != after {
            self.dirty = true;
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
            }
            Effect::ReopenFiles => self.close_storage(env),
            Effect::Activate => self.activate(env),
            Effect::Deactivate => {
                for job in self.deactivate(env) {
                    self.spawn_announce(job, env);
                }
            }
            Effect::AnnounceCompleted => {
                self.trackers.complete(env.now);
                self.schedule_announce(env);
            }
        }
    }

    fn ensure_disk(&mut self, ctx: &Arc<SessionCtx>) -> Result<Arc<TorrentDisk>, StorageError> {
        if let Some(d) = &self.disk {
            return Ok(d.clone());
        }
        let disk = shared::open_disk(self.id, &self.meta, &self.save_dir, ctx)?;
        for (i, p) in self.file_prio.iter().enumerate() {
            if *p == FilePriority::Skip {
                disk.storage.set_skipped(i, true)?;
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
            env.ctx.pool.forget(d.key);
        }
    }

    fn start_check(&mut self, env: &mut Env<'_>) {
        let disk = match self.ensure_disk(env.ctx) {
            Ok(d) => d,
            Err(e) => {
                let err = storage_error(&e);
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
        let geo = self.meta.geometry();
        let threads = ctx.config.disk_thread_count();
        tokio::task::spawn_blocking(move || {
            let result = (|| {
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
                disk.storage.create_files()?;
                Ok(report)
            })();
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
        result: Result<crate::storage::check::CheckReport, StorageError>,
        env: &mut Env<'_>,
    ) {
        if self.check.as_ref().is_none_or(|c| c.key != check_key) {
            return; // cancelled or superseded
        }
        match result {
            Ok(report) => {
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
                self.dirty = true;
                self.log(
                    env,
                    EventLevel::Info,
                    EventKind::Checked,
                    format!("checked: {n}/{} pieces verified", self.meta.piece_count()),
                );
                self.input(Input::CheckDone, env);
            }
            Err(e) => self.input(Input::CheckFailed(storage_error(&e)), env),
        }
    }

    fn activate(&mut self, env: &mut Env<'_>) {
        let disk = match self.ensure_disk(env.ctx) {
            Ok(d) => d,
            Err(e) => {
                self.input(Input::Failed(storage_error(&e)), env);
                return;
            }
        };
        if self.shared.is_none() {
            let geo = self.meta.geometry();
            let mut picker = Picker::new(
                geo.piece_count(),
                geo.piece_length(),
                geo.last_piece_length(),
                self.have.clone(),
            );
            picker.set_priorities(&self.piece_prio);
            self.shared = Some(Arc::new(TorrentShared::new(
                self.id,
                self.meta.info_hash,
                geo,
                picker,
                disk,
                env.ctx.clone(),
                self.limits.clone(),
            )));
        }
        if let Some(s) = &self.shared {
            s.set_accepting(true);
        }
        self.trackers.start(env.now);
        self.schedule_announce(env);
        self.connect_more(env);
    }

    /// Leave the swarm; returns the `stopped` announces owed.
    fn deactivate(&mut self, env: &mut Env<'_>) -> Vec<AnnounceJob> {
        if let Some(s) = self.shared.take() {
            s.set_accepting(false);
            self.have = s.have.to_bitfield();
            self.carried.0 += s.stats.downloaded.load(Ordering::Relaxed);
            self.carried.1 += s.stats.uploaded.load(Ordering::Relaxed);
            self.carried.2 += s.stats.wasted.load(Ordering::Relaxed);
            // partial pieces are fetched again next time: drop their hasher states
            env.ctx.pool.forget(s.disk.key);
            if let Some(d) = self.disk.take() {
                env.ctx.pool.forget(d.key);
            }
        }
        self.peers
            .broadcast(&PeerCtrl::Disconnect("torrent stopped"));
        self.peers = PeerSet::new();
        self.dialing.clear();
        self.book.clear();
        self.hash_fails.clear();
        for t in [
            TorrentTimer::Announce,
            TorrentTimer::Sweep,
            TorrentTimer::Dial,
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
        match &self.shared {
            Some(s) => s.picker().bytes_left(),
            None => {
                let geo = self.meta.geometry();
                (0..geo.piece_count())
                    .filter(|&p| self.piece_prio[p as usize] != PRIO_SKIP && !self.have.get(p))
                    .map(|p| u64::from(geo.piece_size(p)))
                    .sum()
            }
        }
    }

    /// Bytes of file `f` inside verified pieces.
    fn file_done(&self, f: &crate::metainfo::FileInfo, have: &Bitfield) -> u64 {
        let geo = self.meta.geometry();
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
            info_hash: self.meta.info_hash,
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
            let result = ctx.trackers.announce(&job.url, &req).await;
            ctx.send(SessionEvent::Announced {
                torrent: id,
                job,
                result,
            });
        });
    }

    fn schedule_announce(&mut self, env: &mut Env<'_>) {
        let key = TimerKey::Torrent(self.id, TorrentTimer::Announce);
        match self.trackers.next_deadline() {
            Some(at) => env.timers.schedule(key, at),
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
        let was_error = self
            .trackers
            .rows(env.now, SystemTime::now())
            .iter()
            .any(|r| r.url == crate::tracker::mask_passkey(&job.url) && r.message.is_some());
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
                        format!("tracker {}: {w}", crate::tracker::host_of(&job.url)),
                    );
                }
                if self.life.is_running() {
                    let mut new = 0;
                    for a in &resp.peers {
                        new += usize::from(self.book.add(*a, PeerSource::Tracker, env.now));
                    }
                    tracing::debug!(torrent = %self.meta.name, peers = resp.peers.len(), new, "announce ok");
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
                        format!("tracker {}: {e}", crate::tracker::host_of(&job.url)),
                    );
                }
            }
        }
        if self.life.is_running() {
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
                for job in self.trackers.due(env.now) {
                    self.spawn_announce(job, env);
                }
                self.dirty = true;
                self.schedule_announce(env);
            }
            TorrentTimer::Sweep => self.sweep(env),
            TorrentTimer::Dial => self.connect_more(env),
            TorrentTimer::Reclaim => self.fill_slots(env),
        }
    }

    fn schedule_sweep(&mut self, env: &mut Env<'_>) {
        let key = TimerKey::Torrent(self.id, TorrentTimer::Sweep);
        if self.peers.is_empty() {
            env.timers.cancel(key);
        } else if env.timers.deadline(key).is_none() {
            self.last_round = env.now;
            env.timers.schedule(key, env.now + choke::ROUND);
        }
    }

    /// Choke round and connection housekeeping.
    fn sweep(&mut self, env: &mut Env<'_>) {
        let Some(shared) = self.shared.clone() else {
            return;
        };
        let now_ms = env.ctx.clock.now_ms();
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
        self.dirty = true;
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
        let views = self.peers.fill_views(env.now, env.ctx.clock.now_ms());
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
        let Some(shared) = self.shared.clone() else {
            return;
        };
        if !self.life.is_running() || !shared.accepting() {
            return;
        }
        let seeding = shared.is_complete();
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
            let ours = Handshake::ours(self.meta.info_hash, ctx.peer_id);
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
        let Some(shared) = self.shared.clone() else {
            return;
        };
        if !self.life.is_running() || !shared.accepting() {
            return;
        }
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
        let now_ms = env.ctx.clock.now_ms();
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
        tracing::debug!(torrent = %self.meta.name, %addr, outgoing, "peer connected");
        let t = shared;
        tokio::spawn(async move {
            let _slot = slot;
            let r = match stream {
                PeerStream::Tcp(s) => {
                    peer_conn::run(t.clone(), key, s, info, remote, ctrl_rx).await
                }
            };
            t.peer_event(key, PeerEvent::Gone { error: r.err() });
        });
        self.dirty = true;
        self.schedule_sweep(env);
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
            PeerEvent::Gone { error } => {
                self.hash_fails.remove(&key);
                self.choker.peer_gone(key);
                if let Some(p) = self.peers.remove(key) {
                    let n = self.meta.piece_count();
                    let was_seed = p.info.pieces.load(Ordering::Relaxed) == n && n > 0;
                    self.book
                        .disconnected(p.info.addr, !p.info.outgoing, was_seed, env.now);
                    if let Some(e) = &error {
                        tracing::debug!(torrent = %self.meta.name, addr = %p.info.addr, "peer closed: {e}");
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
                self.peers.broadcast(&PeerCtrl::Have(p));
                if complete {
                    // the files must still be the ones we wrote (a deleted download folder
                    // leaves open handles writing into unlinked files)
                    if let Err(e) = shared.disk.storage.verify_files_present() {
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
        let meta = &self.meta;
        let n = meta.piece_count();
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
                .meta
                .files
                .iter()
                .zip(&self.file_prio)
                .filter(|(f, p)| !f.pad && **p != FilePriority::Skip);
            wanted.fold((0, 0), |(s, d), (f, _)| {
                (s + f.length, d + self.file_done(f, &have))
            })
        } else {
            let size = meta.payload_size();
            let verified = meta.total_length.saturating_sub(left);
            // verified bytes, scaled to exclude padding (exact when the torrent has none)
            let done = if meta.total_length == 0 {
                0
            } else {
                ((verified as u128 * size as u128) / meta.total_length as u128) as u64
            };
            (size, done)
        };
        let mut have = self.have_count();
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
        let message = if self.life.is_running() {
            self.trackers.headline()
        } else {
            None
        };
        TorrentRow {
            id: self.id,
            rev: self.rev,
            name: meta.name.clone(),
            info_hash: meta.info_hash.to_hex(),
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
            // placeholder on tui-v2: queueing is not in the engine yet
            queue_position: None,
        }
    }

    /// The detail view of this torrent.
    pub fn detail(&mut self, now: Instant) -> TorrentDetail {
        let n = self.meta.piece_count();
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
                .lock()
                .unwrap_or_else(|e| e.into_inner())
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
        let files = self
            .meta
            .files
            .iter()
            .zip(&self.file_prio)
            .filter(|(f, _)| !f.pad)
            .map(|(f, prio)| FileRow {
                path: f.display_path.join("/"),
                size: f.length,
                done: self.file_done(f, &have),
                priority: *prio,
            })
            .collect();
        let (_, _, wasted) = self.totals();
        TorrentDetail {
            id: self.id,
            info_hash: self.meta.info_hash.to_hex(),
            save_path: self.save_dir.clone(),
            comment: self.meta.comment.clone(),
            created_by: self.meta.created_by.clone(),
            creation_date: self.meta.creation_date,
            private: self.meta.private,
            piece_length: self.meta.piece_length,
            wasted,
            peers,
            files,
            trackers: self.trackers.rows(now, SystemTime::now()),
            pieces: Arc::from(pieces),
        }
    }

    /// Set this torrent's own limits, bytes/s (0 = unlimited); the session's still apply.
    pub fn set_limits(&mut self, download: u64, upload: u64) {
        self.limits.download.set_rate(download);
        self.limits.upload.set_rate(upload);
        self.dirty = true;
    }

    /// Announce to every tracker now (as far as `min interval` allows).
    pub fn reannounce(&mut self, env: &mut Env<'_>) {
        if self.life.is_running() {
            self.trackers.reannounce(env.now);
            self.schedule_announce(env);
        }
    }

    /// The payload files (absolute paths) and the top folder, for delete-data.
    pub fn data_paths(&self) -> (Vec<PathBuf>, Option<PathBuf>) {
        let files = self
            .meta
            .files
            .iter()
            .filter(|f| !f.pad)
            .map(|f| self.save_dir.join(&f.path))
            .collect();
        let top = self
            .meta
            .multi_file
            .then(|| self.meta.files.first())
            .flatten()
            .and_then(|f| f.path.components().next())
            .map(|c| self.save_dir.join(c.as_os_str()));
        (files, top)
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
