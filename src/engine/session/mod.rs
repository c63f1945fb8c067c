//! The session actor: owns every torrent, accepts incoming peers, answers commands, runs
//! the one deadline queue and publishes snapshots.
//!
//! Nothing else mutates engine state. Front ends talk to it only through the
//! [`Client`](crate::api::Client) in [`SessionHandle::client`] (commands, snapshots,
//! events). The task sleeps until a command, an event from a connection, disk thread or
//! tracker task, an incoming connection, or the earliest deadline: a session whose torrents
//! are idle does not wake up.
//!
//! Rooms beside this actor loop and its dispatch: [`start`] (the handle and start-up),
//! [`publish`] (snapshots).

mod publish;
mod start;

pub use publish::{PUBLISH_INTERVAL, PUBLISH_MIN_GAP};
pub use start::{SessionHandle, start, start_with_state};

use publish::{Due, Publisher};

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::ctx::{MAX_PENDING_INCOMING, SessionCtx, SessionEvent, SlotKind};
use super::event_log::EventLog;
use super::link::stream::PeerStream;
use super::peer_conn;
use super::timer::Timers;
use super::torrent::state::Input;
use super::torrent::{CheckQueue, Env, STOP_ANNOUNCE_TIMEOUT, TimerKey, Torrent};
use crate::api::{
    AddError, AddRequest, AddSource, Command, EventKind, EventLevel, TorrentId, TorrentState,
};
use crate::lock::RwLockExt;
use crate::metainfo::{InfoHash, Magnet, Metainfo};
use crate::peer::wire::Handshake;
use crate::state::{StateStore, Stored, Update};
use std::path::Path;

/// Torrents hashing their data at once.
pub const MAX_CONCURRENT_CHECKS: usize = 1;
/// Counters and progress reach the state store at least this often.
pub const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(60);
/// A state change (added, paused, completed, removed) reaches it within this.
pub const CHECKPOINT_SOON: Duration = Duration::from_secs(1);
/// How often the disk guard measures free space while something downloads.
pub const DISK_GUARD_INTERVAL: Duration = Duration::from_secs(10);

type Registry = Arc<RwLock<HashMap<InfoHash, TorrentId>>>;

struct Session {
    ctx: Arc<SessionCtx>,
    torrents: BTreeMap<TorrentId, Torrent>,
    registry: Registry,
    next_id: u64,
    timers: Timers<TimerKey>,
    log: EventLog,
    checks: CheckQueue,
    publisher: Publisher,
    /// A state changed: publish as soon as [`PUBLISH_MIN_GAP`] allows.
    publish_now: bool,
    /// The state store (none for headless sessions).
    store: Option<Arc<StateStore>>,
    /// Removed torrents whose records are still to be deleted from the store.
    deleted: Vec<InfoHash>,
    /// A checkpoint is being written.
    checkpointing: bool,
    /// The session rate limits were set live and are not yet in the store.
    limits_dirty: bool,
    /// Restored torrents whose resume data is still being compared with their files.
    validating: usize,
    /// Free space of the default download folder's volume at the last measurement.
    free_space: Option<u64>,
}

/// Borrow the session's parts as an [`Env`] next to one torrent.
macro_rules! env {
    ($s:ident, $now:expr) => {
        Env {
            ctx: &$s.ctx,
            timers: &mut $s.timers,
            log: &mut $s.log,
            checks: &mut $s.checks,
            now: $now,
            publish_now: &mut $s.publish_now,
            store: $s.store.as_ref(),
        }
    };
}

impl Session {
    async fn run(
        mut self,
        mut commands: mpsc::Receiver<Command>,
        mut events: mpsc::UnboundedReceiver<SessionEvent>,
        listener: TcpListener,
    ) {
        // a changed DHT node count is published (the status bar shows it)
        let mut dht_nodes = self.ctx.dht.as_ref().map(crate::dht::Dht::watch_nodes);
        let mut had_nodes = false;
        loop {
            let deadline = self.timers.next_deadline();
            tokio::select! {
                c = commands.recv() => match c {
                    None => { self.shutdown(&mut events).await; return; }
                    Some(Command::Shutdown(reply)) => {
                        self.shutdown(&mut events).await;
                        let _ = reply.send(());
                        return;
                    }
                    Some(c) => self.command(c),
                },
                Some(ev) = events.recv() => {
                    self.event(ev);
                    // drain what else is queued before publishing
                    while let Ok(ev) = events.try_recv() {
                        self.event(ev);
                    }
                }
                a = listener.accept() => match a {
                    Ok((stream, addr)) => self.incoming(stream, addr),
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                _ = sleep_until(deadline), if deadline.is_some() => self.timers_due(),
                Some(Ok(())) = async {
                    match dht_nodes.as_mut() {
                        Some(rx) => Some(rx.changed().await),
                        None => std::future::pending().await,
                    }
                } => {
                    self.publish_now = true;
                    let has = dht_nodes.as_ref().is_some_and(|rx| *rx.borrow() > 0);
                    if has && !had_nodes {
                        // lookups skipped for want of nodes go now
                        let ids: Vec<TorrentId> = self.torrents.keys().copied().collect();
                        for id in ids {
                            self.with(id, |t, env| t.dht_kick(env));
                        }
                    }
                    had_nodes = has;
                }
            }
            self.grant_checks();
            self.after_input();
        }
    }

    /// Run `f` on torrent `id` with the session's parts; note it for the next publish.
    /// The torrent with `info_hash`, if the session has it.
    fn torrent_by_hash(&self, info_hash: &InfoHash) -> Option<TorrentId> {
        self.registry.read_locked().get(info_hash).copied()
    }

    fn with<R>(
        &mut self,
        id: TorrentId,
        f: impl FnOnce(&mut Torrent, &mut Env<'_>) -> R,
    ) -> Option<R> {
        let now = Instant::now();
        let t = self.torrents.get_mut(&id)?;
        let was_publish = self.publish_now;
        let mut env = env!(self, now);
        let r = f(t, &mut env);
        // any input may change what its row shows: the row is rebuilt at the next publish
        // (and shared when equal, so an input that changed nothing sends nothing)
        self.publisher.touch(id);
        if self.store.is_some() && t.persist_dirty() {
            // a state change goes to disk within a second, counters within a minute
            let soon = self.publish_now && !was_publish;
            let at = now
                + if soon {
                    CHECKPOINT_SOON
                } else {
                    CHECKPOINT_INTERVAL
                };
            self.timers.schedule_no_later(TimerKey::Checkpoint, at);
        }
        Some(r)
    }

    /// List the torrents of the last run at once; check their resume data against their
    /// files in the background (stat only), then start them.
    fn restore(&mut self, loaded: crate::state::Loaded) {
        let (down, up) = crate::state::SessionLimits::effective(
            loaded.session_limits,
            self.ctx.config.download_rate_limit,
            self.ctx.config.upload_rate_limit,
        );
        self.ctx.limits.download.set_rate(down);
        self.ctx.limits.upload.set_rate(up);
        self.publish_now = true;
        for w in loaded.warnings {
            self.log
                .push(None, EventLevel::Error, EventKind::DiskError, w);
        }
        let slots = self.ctx.config.upload_slots as usize;
        let mut jobs = Vec::new();
        let mut magnets = Vec::new();
        for stored in loaded.torrents {
            let id = TorrentId(self.next_id);
            match stored {
                Stored::Record(ih, r) => {
                    if self.torrent_by_hash(&ih).is_some() {
                        continue;
                    }
                    self.next_id += 1;
                    let t = Torrent::restore(id, ih, &r, slots);
                    if t.awaiting_metadata() {
                        // no files yet: nothing to compare; it fetches its metadata again
                        self.insert(id, ih, t);
                        if r.error.is_none() {
                            magnets.push(id);
                        }
                        continue;
                    }
                    jobs.push(ValidateJob {
                        id,
                        info_hash: ih,
                        save_dir: r.save_dir.clone(),
                        stats: r.file_stats.clone(),
                        had_pieces: r.have.iter().any(|b| *b != 0),
                        paused: r.paused,
                    });
                    self.insert(id, ih, t);
                }
                Stored::NeedsRecheck { info_hash, why } => {
                    let Some(store) = &self.store else { continue };
                    match store.load_metainfo(&info_hash) {
                        Ok(meta) => {
                            self.next_id += 1;
                            let name = meta.saved_name().to_owned();
                            let t = Torrent::new(
                                id,
                                Arc::new(meta),
                                self.ctx.config.download_dir.clone(),
                                self.ctx.config.seed_after_download,
                                slots,
                                false,
                            );
                            self.insert(id, info_hash, t);
                            self.log.push(
                                Some(id),
                                EventLevel::Warn,
                                EventKind::Checked,
                                format!("{name}: {why}; its data is rechecked"),
                            );
                            self.with(id, |t, env| t.input(Input::Resume, env));
                        }
                        Err(e) => self.log.push(
                            None,
                            EventLevel::Error,
                            EventKind::DiskError,
                            format!("a torrent of the last session cannot come back: {e}"),
                        ),
                    }
                }
            }
        }
        // a paused one stays paused (the record says so: Restoring remembers it)
        for id in magnets {
            self.with(id, |t, env| t.resume_checked(true, "", env));
        }
        if let (Some(store), false) = (&self.store, jobs.is_empty()) {
            self.validating = jobs.len();
            let store = store.clone();
            let ctx = self.ctx.clone();
            tokio::task::spawn_blocking(move || validate_resume(&store, jobs, &ctx));
        }
        self.publish_now = true;
    }

    fn insert(&mut self, id: TorrentId, ih: InfoHash, t: Torrent) {
        // removed a moment ago and added again: the pending delete of its record and its
        // .torrent copy must not reach the store after this add
        self.deleted.retain(|h| *h != ih);
        self.registry.write_locked().insert(ih, id);
        self.torrents.insert(id, t);
        self.publisher.insert(id);
    }

    /// Write the records that changed (after syncing the files of torrents whose verified
    /// pieces are recorded, so no piece is recorded before its bytes are on disk).
    fn checkpoint(&mut self) -> Option<tokio::task::JoinHandle<()>> {
        let store = self.store.clone()?;
        if self.checkpointing {
            self.timers
                .schedule_no_later(TimerKey::Checkpoint, Instant::now() + CHECKPOINT_SOON);
            return None;
        }
        let mut jobs = Vec::new();
        for (id, t) in self.torrents.iter_mut() {
            if t.take_persist_dirty() {
                jobs.push((*id, t.info_hash(), t.record(), t.storage_for_checkpoint()));
            }
        }
        let deleted = std::mem::take(&mut self.deleted);
        let limits = std::mem::take(&mut self.limits_dirty).then(|| crate::state::SessionLimits {
            download: self.ctx.limits.download.rate(),
            upload: self.ctx.limits.upload.rate(),
            config_download: self.ctx.config.download_rate_limit,
            config_upload: self.ctx.config.upload_rate_limit,
        });
        if jobs.is_empty() && deleted.is_empty() && limits.is_none() {
            return None;
        }
        self.checkpointing = true;
        let ctx = self.ctx.clone();
        Some(tokio::task::spawn_blocking(move || {
            let mut updates = Vec::new();
            let mut stats = Vec::new();
            let mut ids = Vec::new();
            for (id, ih, mut record, disk) in jobs {
                if let Some(d) = disk {
                    if let Err(e) = d.storage.sync_all() {
                        tracing::warn!("syncing {} before a checkpoint: {e}", record.name);
                    }
                    record.file_stats = d.storage.file_stats();
                    stats.push((id, record.file_stats.clone()));
                }
                ids.push(id);
                updates.push(Update::Put(ih, Box::new(record)));
            }
            updates.extend(deleted.into_iter().map(Update::Delete));
            updates.extend(limits.map(Update::SessionLimits));
            let result = store.write(updates).map_err(|e| e.to_string());
            ctx.send(SessionEvent::Checkpointed {
                result,
                stats,
                ids,
                limits: limits.is_some(),
            });
        }))
    }

    fn grant_checks(&mut self) {
        for id in self.checks.grant() {
            if self
                .with(id, |t, env| t.input(Input::CheckSlot, env))
                .is_none()
            {
                self.checks.remove(id);
            }
        }
    }

    /// The disk guard: downloads on a volume with less than `min_free_space` free pause
    /// (seeding goes on) and resume when space returns (with a 64 MiB margin, so they do
    /// not flap). Runs every 10 s while something downloads or waits for space.
    fn disk_guard(&mut self) {
        let min = self.ctx.config.min_free_space;
        let mut free: HashMap<PathBuf, Option<u64>> = HashMap::new();
        let mut measure = |dir: &Path| {
            *free
                .entry(dir.to_path_buf())
                .or_insert_with(|| crate::storage::space::free_space(dir))
        };
        self.free_space = measure(&self.ctx.config.download_dir.clone());
        let ids: Vec<TorrentId> = self.torrents.keys().copied().collect();
        let mut watching = false;
        for id in ids {
            let Some(t) = self.torrents.get(&id) else {
                continue;
            };
            let state = t.state();
            if min == 0 || !(state == TorrentState::Downloading || t.guarded()) {
                continue;
            }
            watching = true;
            let dir = t.save_dir.clone();
            let Some(f) = measure(&dir) else { continue };
            if state == TorrentState::Downloading && f < min {
                let reason = format!(
                    "only {} free on the volume of {} (min_free_space is {})",
                    crate::units::size(f),
                    dir.display(),
                    crate::units::size(min)
                );
                self.with(id, |t, env| t.guard_pause(reason, env));
            } else if t.guarded() && f >= min.saturating_add(64 << 20) {
                self.with(id, |t, env| t.guard_resume(env));
            }
        }
        self.publish_now = true;
        if watching {
            self.timers
                .schedule(TimerKey::DiskGuard, Instant::now() + DISK_GUARD_INTERVAL);
        }
    }

    /// After any input: publish now if a state changed, else make sure a publish is due
    /// while anything shown changes.
    fn after_input(&mut self) {
        if self.publish_now
            && self.ctx.config.min_free_space > 0
            && self.timers.deadline(TimerKey::DiskGuard).is_none()
            && self
                .torrents
                .values()
                .any(|t| t.state() == TorrentState::Downloading || t.guarded())
        {
            self.timers.schedule(TimerKey::DiskGuard, Instant::now());
        }
        let due = self.publisher.due(Instant::now(), self.publish_now);
        self.publish_now = false;
        match due {
            Due::Now => self.publish(),
            Due::At(at) => self.timers.schedule_no_later(TimerKey::Publish, at),
            Due::Idle => {}
        }
    }

    fn timers_due(&mut self) {
        let now = Instant::now();
        while let Some(key) = self.timers.pop_due(now) {
            match key {
                TimerKey::Publish => self.publish(),
                TimerKey::DiskGuard => self.disk_guard(),
                TimerKey::Checkpoint => {
                    self.checkpoint();
                }
                TimerKey::Torrent(id, t) => {
                    self.with(id, |tor, env| tor.on_timer(t, env));
                }
            }
        }
    }

    fn command(&mut self, c: Command) {
        match c {
            Command::Add(req, reply) => {
                let r = self.add(req);
                if let Err(e) = &r {
                    // the front end that asked reports it (headless runs print it once)
                    tracing::info!("add refused: {e}");
                }
                if let Some(reply) = reply {
                    let _ = reply.send(r);
                }
            }
            Command::Pause(id) => {
                self.with(id, |t, env| t.input(Input::Pause, env));
            }
            Command::Resume(id) => {
                self.with(id, |t, env| t.input(Input::Resume, env));
            }
            Command::TogglePause(id) => {
                self.with(id, |t, env| {
                    let input = match t.state() {
                        TorrentState::Paused | TorrentState::Error | TorrentState::Completed => {
                            Input::Resume
                        }
                        _ => Input::Pause,
                    };
                    t.input(input, env);
                });
            }
            Command::PauseAll | Command::ResumeAll => {
                let input = if matches!(c, Command::PauseAll) {
                    Input::Pause
                } else {
                    Input::Resume
                };
                let ids: Vec<TorrentId> = self.torrents.keys().copied().collect();
                for id in ids {
                    let input = input.clone();
                    self.with(id, |t, env| {
                        // resume-all leaves completed (non-seeding) torrents alone
                        if !(input == Input::Resume && t.state() == TorrentState::Completed) {
                            t.input(input, env);
                        }
                    });
                }
            }
            Command::Recheck(id) => {
                self.with(id, |t, env| t.input(Input::Recheck, env));
            }
            Command::Reannounce(id) => {
                self.with(id, |t, env| t.reannounce(env));
            }
            Command::AddPeer { id, addr } => {
                self.with(id, |t, env| t.add_peer(addr, env));
            }
            Command::Remove { id, delete_data } => self.remove(id, delete_data),
            Command::Focus(id) => {
                self.publisher.focus(id);
                self.publish_now = true;
            }
            Command::SetLimits { download, upload } => {
                self.ctx.limits.download.set_rate(download);
                self.ctx.limits.upload.set_rate(upload);
                self.publish_now = true;
                if self.store.is_some() {
                    // kept across restarts, like a torrent's own limits
                    self.limits_dirty = true;
                    self.timers
                        .schedule_no_later(TimerKey::Checkpoint, Instant::now() + CHECKPOINT_SOON);
                }
            }
            Command::SetTorrentLimits {
                id,
                download,
                upload,
            } => {
                self.with(id, |t, _| t.set_limits(download, upload));
            }
            Command::SetFilePriority {
                id,
                files,
                priority,
            } => {
                self.with(id, |t, env| t.set_file_priority(&files, priority, env));
            }
            Command::MoveStorage { id, to, move_data } => {
                self.with(id, |t, env| t.move_storage(to, move_data, env));
            }
            Command::RecentEvents(reply) => {
                let _ = reply.send(self.log.recent());
            }
            Command::Shutdown(_) => {}
        }
    }

    fn add(&mut self, req: AddRequest) -> Result<TorrentId, AddError> {
        let path = match &req.source {
            AddSource::File(p) => p.clone(),
            AddSource::Magnet(link) => {
                let m = Magnet::parse(link).map_err(|e| AddError::Invalid(e.to_string()))?;
                return self.add_magnet(m, req);
            }
        };
        let (meta, bytes) = Metainfo::load_with_bytes(&path).map_err(AddError::Invalid)?;
        let existing = self.torrent_by_hash(&meta.info_hash);
        if let Some(id) = existing {
            return Err(AddError::AlreadyAdded {
                id,
                name: meta.saved_name().to_owned(),
                info_hash: meta.info_hash.to_hex(),
                merged: None,
            });
        }
        let id = TorrentId(self.next_id);
        self.next_id += 1;
        let save_dir: PathBuf = req
            .download_dir
            .unwrap_or_else(|| self.ctx.config.download_dir.clone());
        let info_hash = meta.info_hash;
        let name = meta.saved_name().to_owned();
        if let Some(store) = &self.store {
            store.put_metainfo(&info_hash, &bytes).map_err(|e| {
                AddError::Storage(format!(
                    "cannot keep a copy of {} in {}: {e}",
                    path.display(),
                    store.dir().display()
                ))
            })?;
        }
        let t = Torrent::new(
            id,
            Arc::new(meta),
            save_dir,
            req.seed,
            self.ctx.config.upload_slots as usize,
            self.store.is_none(),
        );
        self.insert(id, info_hash, t);
        self.log.push(
            Some(id),
            EventLevel::Info,
            EventKind::Added,
            format!("{name}: added (info hash {info_hash})"),
        );
        self.added(id, req.paused);
        Ok(id)
    }

    /// After an add: start it unless asked paused, publish, and record it soon.
    fn added(&mut self, id: TorrentId, paused: bool) {
        if !paused {
            self.with(id, |t, env| t.input(Input::Resume, env));
        }
        self.publish_now = true;
        if self.store.is_some() {
            self.timers
                .schedule_no_later(TimerKey::Checkpoint, Instant::now() + CHECKPOINT_SOON);
        }
    }

    /// Add a magnet link: listed at once, its metadata fetched from peers when it runs.
    fn add_magnet(&mut self, m: Magnet, req: AddRequest) -> Result<TorrentId, AddError> {
        let existing = self.torrent_by_hash(&m.info_hash);
        if let Some(id) = existing {
            // its new trackers and peers are taken (say so)
            let merged = self.with(id, |t, env| t.merge_magnet(&m, env));
            let name = self
                .torrents
                .get(&id)
                .map_or_else(|| m.display_name(), |t| t.sum.name.clone());
            return Err(AddError::AlreadyAdded {
                id,
                name,
                info_hash: m.info_hash.to_hex(),
                merged: merged.map(|m| m.describe()),
            });
        }
        let id = TorrentId(self.next_id);
        self.next_id += 1;
        let save_dir: PathBuf = req
            .download_dir
            .unwrap_or_else(|| self.ctx.config.download_dir.clone());
        let info_hash = m.info_hash;
        let name = m.display_name();
        let notes = m.notes.clone();
        let t = Torrent::new_magnet(
            id,
            m,
            save_dir,
            req.seed,
            self.ctx.config.upload_slots as usize,
            self.store.is_none(),
        );
        self.insert(id, info_hash, t);
        self.log.push(
            Some(id),
            EventLevel::Info,
            EventKind::Added,
            format!("{name}: added from a magnet link (info hash {info_hash}); fetching its metadata from peers"),
        );
        for n in notes {
            self.log.push(
                Some(id),
                EventLevel::Warn,
                EventKind::Added,
                format!("{name}: {n}"),
            );
        }
        self.added(id, req.paused);
        Ok(id)
    }

    fn remove(&mut self, id: TorrentId, delete_data: bool) {
        let now = Instant::now();
        let Some(mut t) = self.torrents.remove(&id) else {
            return;
        };
        let stops = {
            let mut env = env!(self, now);
            t.remove(&mut env)
        };
        self.checks.remove(id);
        self.timers
            .cancel_where(|k| matches!(k, TimerKey::Torrent(tid, _) if *tid == id));
        self.registry.write_locked().remove(&t.info_hash());
        self.publisher.remove(id);
        let ctx = self.ctx.clone();
        tokio::spawn(async move {
            for (job, mut req) in stops {
                let _ = tokio::time::timeout(
                    STOP_ANNOUNCE_TIMEOUT,
                    ctx.trackers.announce(&job.url, &req),
                )
                .await;
                if req.event == Some(crate::tracker::AnnounceEvent::Completed) {
                    req.event = Some(crate::tracker::AnnounceEvent::Stopped);
                    req.numwant = Some(0);
                    let _ = tokio::time::timeout(
                        STOP_ANNOUNCE_TIMEOUT,
                        ctx.trackers.announce(&job.url, &req),
                    )
                    .await;
                }
            }
        });
        let name = t.sum.name.clone();
        if self.store.is_some() {
            self.deleted.push(t.info_hash());
            self.timers
                .schedule_no_later(TimerKey::Checkpoint, Instant::now() + CHECKPOINT_SOON);
        }
        self.log.push(
            Some(id),
            EventLevel::Info,
            EventKind::Removed,
            if delete_data {
                format!("{name}: removed, deleting its files")
            } else {
                format!("{name}: removed (files kept)")
            },
        );
        if delete_data {
            let paths = {
                let env = env!(self, now);
                t.data_paths(&env)
            };
            match paths {
                Some(payload) => {
                    let ctx = self.ctx.clone();
                    tokio::task::spawn_blocking(move || {
                        let error = payload.delete().err().map(|e| e.to_string());
                        ctx.send(SessionEvent::Deleted { name, error });
                    });
                }
                None => self.log.push(
                    Some(id),
                    EventLevel::Error,
                    EventKind::DiskError,
                    format!("{name}: its files are not known (metainfo missing); nothing deleted"),
                ),
            }
        }
        self.publish_now = true;
    }

    fn event(&mut self, ev: SessionEvent) {
        match ev {
            SessionEvent::Peer {
                torrent,
                key,
                event,
            } => {
                self.with(torrent, |t, env| t.on_peer(key, event, env));
            }
            SessionEvent::Disk {
                torrent,
                disk_key,
                event,
            } => {
                self.with(torrent, |t, env| t.on_disk(disk_key, event, env));
            }
            SessionEvent::Announced {
                torrent,
                job,
                result,
            } => {
                self.with(torrent, |t, env| t.on_announced(job, result, env));
            }
            SessionEvent::Scraped {
                torrent,
                url,
                result,
            } => {
                self.with(torrent, |t, _env| t.on_scraped(&url, &result));
            }
            SessionEvent::Checked {
                torrent,
                check_key,
                result,
            } => {
                self.with(torrent, |t, env| t.on_checked(check_key, result, env));
            }
            SessionEvent::Handshaken {
                info_hash,
                addr,
                outgoing,
                remote,
                stream,
            } => {
                if let Some(id) = self.torrent_by_hash(&info_hash) {
                    self.with(id, |t, env| t.admit(addr, outgoing, remote, stream, env));
                }
            }
            SessionEvent::DhtPeers { torrent, peers } => {
                self.with(torrent, |t, env| t.on_dht_peers(&peers, env));
            }
            SessionEvent::LsdPeer { info_hash, peer } => {
                if let Some(id) = self.torrent_by_hash(&info_hash) {
                    self.with(id, |t, env| t.on_lsd_peer(peer, env));
                }
            }
            SessionEvent::DialFailed {
                torrent,
                addr,
                is_self,
                error,
            } => {
                self.with(torrent, |t, env| {
                    t.on_dial_failed(addr, is_self, error, env)
                });
            }
            SessionEvent::Validated {
                torrent,
                trusted,
                why,
                ..
            } => {
                self.with(torrent, |t, env| t.resume_checked(trusted, &why, env));
                if self.validating > 0 {
                    self.validating -= 1;
                    if self.validating == 0 {
                        // every .torrent of the list was read and let go again
                        release_free_heap();
                    }
                }
            }
            SessionEvent::Checkpointed {
                result,
                stats,
                ids,
                limits,
            } => {
                self.checkpointing = false;
                if limits && result.is_err() {
                    self.limits_dirty = true;
                }
                for (id, st) in stats {
                    if let Some(t) = self.torrents.get_mut(&id) {
                        t.set_file_stats(st);
                    }
                }
                if let Err(e) = result {
                    for id in ids {
                        if let Some(t) = self.torrents.get_mut(&id) {
                            t.mark_persist_dirty();
                        }
                    }
                    self.log.push(
                        None,
                        EventLevel::Error,
                        EventKind::DiskError,
                        format!("saving the session state failed: {e}; retrying in a minute"),
                    );
                    self.timers.schedule_no_later(
                        TimerKey::Checkpoint,
                        Instant::now() + CHECKPOINT_INTERVAL,
                    );
                }
            }
            SessionEvent::Moved { torrent, result } => {
                self.with(torrent, |t, env| t.on_moved(result, env));
            }
            SessionEvent::Deleted { name, error } => match error {
                None => self.log.push(
                    None,
                    EventLevel::Info,
                    EventKind::Removed,
                    format!("{name}: files deleted"),
                ),
                Some(e) => self.log.push(
                    None,
                    EventLevel::Error,
                    EventKind::DiskError,
                    format!("{name}: deleting its files failed: {e}"),
                ),
            },
        }
    }

    fn incoming(&mut self, stream: TcpStream, addr: SocketAddr) {
        let Some(slot) = self
            .ctx
            .conns
            .try_take(SlotKind::PendingIncoming, MAX_PENDING_INCOMING)
        else {
            tracing::debug!(%addr, "too many incoming handshakes at once; closing");
            return;
        };
        let registry = self.registry.clone();
        let ctx = self.ctx.clone();
        tokio::spawn(async move {
            let _slot = slot;
            route_incoming(stream, addr, registry, ctx).await;
        });
    }

    /// Stop every torrent; keep handling announce results (so a `stopped` that follows an
    /// announce in flight goes out) until none is pending or the time is up.
    async fn shutdown(&mut self, events: &mut mpsc::UnboundedReceiver<SessionEvent>) {
        let ids: Vec<TorrentId> = self.torrents.keys().copied().collect();
        // the final checkpoint: every record, files synced and their times taken, before
        // the torrents let go of their storage
        let final_checkpoint = if self.store.is_some() {
            while self.checkpointing {
                match events.recv().await {
                    Some(ev @ SessionEvent::Checkpointed { .. }) => self.event(ev),
                    Some(_) => {}
                    None => break,
                }
            }
            for t in self.torrents.values_mut() {
                t.mark_persist_dirty();
            }
            self.checkpoint()
        } else {
            None
        };
        for id in &ids {
            self.with(*id, |t, env| t.shutdown(env));
        }
        let deadline = tokio::time::Instant::now() + STOP_ANNOUNCE_TIMEOUT;
        while self.torrents.values().any(Torrent::announcing) {
            let ev = tokio::select! {
                ev = events.recv() => ev,
                _ = tokio::time::sleep_until(deadline) => break,
            };
            match ev {
                Some(ev @ SessionEvent::Announced { .. }) => self.event(ev),
                Some(_) => {}
                None => break,
            }
        }
        if let Some(job) = final_checkpoint {
            let _ = job.await;
            while let Ok(ev) = events.try_recv() {
                if let SessionEvent::Checkpointed { result: Err(e), .. } = ev {
                    self.log.push(
                        None,
                        EventLevel::Error,
                        EventKind::DiskError,
                        format!("saving the session state at shutdown failed: {e}"),
                    );
                }
            }
        }
        if let Some(dht) = &self.ctx.dht
            && let Err(e) = dht.shutdown().await
        {
            tracing::warn!("{e}");
        }
        if let Some(lsd) = &self.ctx.lsd {
            lsd.shutdown();
        }
        self.publisher.touch_all();
        // the final state, for front ends that look once more after shutdown
        self.publish();
    }

    /// Publish a snapshot if anything shown changed (see [`Publisher::publish`]).
    fn publish(&mut self) {
        self.timers.cancel(TimerKey::Publish);
        let now = Instant::now();
        let global = publish::session_stats(&self.ctx, self.free_space);
        let next = self
            .publisher
            .publish(now, &mut self.torrents, global, |t| {
                // a quiet or paused torrent lets go of its metainfo; the detail view needs
                // it (files, dates, comment): load it again while the torrent is looked at
                {
                    let env = env!(self, now);
                    let _ = t.metainfo(&env);
                }
                t.detail(now)
            });
        if let Some(at) = next {
            self.timers.schedule_no_later(TimerKey::Publish, at);
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
    }
}

/// Read the handshake prefix of an incoming connection; if it names a torrent we serve,
/// finish the handshake and hand the stream to the session. Unknown info hashes are closed
/// at once (BEP 3: "if the receiving side does not serve the info hash, it drops the
/// connection").
async fn route_incoming(
    mut stream: TcpStream,
    addr: SocketAddr,
    registry: Registry,
    ctx: Arc<SessionCtx>,
) {
    let mut prefix = [0u8; 48];
    match tokio::time::timeout(peer_conn::HANDSHAKE_TIMEOUT, stream.read_exact(&mut prefix)).await {
        Ok(Ok(_)) => {}
        _ => return,
    }
    let Ok((reserved, info_hash)) = Handshake::parse_prefix(&prefix) else {
        tracing::debug!(%addr, "incoming connection is not BitTorrent");
        return;
    };
    let known = registry.read_locked().contains_key(&info_hash);
    if !known {
        tracing::debug!(%addr, %info_hash, "handshake names a torrent we do not serve; closing");
        return;
    }
    // BEP 5 reserved bit: the torrent is not known here, so private ones get it too
    // (they neither send nor act on `port` messages)
    let ours = Handshake::ours(info_hash, ctx.peer_id).with_dht(ctx.dht.is_some());
    match peer_conn::accept(&mut stream, reserved, ours).await {
        Ok(remote) => ctx.send(SessionEvent::Handshaken {
            info_hash,
            addr,
            outgoing: false,
            remote,
            stream: PeerStream::Tcp(stream),
        }),
        Err(e) => tracing::debug!(%addr, "incoming handshake failed: {e}"),
    }
}

/// One restored torrent whose resume data is to be checked against its files.
struct ValidateJob {
    id: TorrentId,
    info_hash: InfoHash,
    save_dir: PathBuf,
    stats: Vec<crate::state::FileStat>,
    had_pieces: bool,
    paused: bool,
}

/// Hand heap memory that was freed back to the system: glibc keeps it in its arenas
/// otherwise, so a burst of short-lived allocations (reading and parsing the .torrent of
/// 10,000 restored torrents) would stay in the RSS for the life of the process.
fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it only returns free pages of glibc's own
    // arenas to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Compare each restored torrent's files with its resume data (sizes and modification
/// times; no data is read) and tell the session which can be trusted.
fn validate_resume(store: &StateStore, jobs: Vec<ValidateJob>, ctx: &SessionCtx) {
    for j in jobs {
        let (trusted, why) = match store.load_files(&j.info_hash) {
            Err(e) => (false, e),
            Ok(files) => {
                let now: Vec<crate::state::FileStat> = files
                    .iter()
                    .map(|f| {
                        if f.pad {
                            None
                        } else {
                            crate::storage::file_stat(&j.save_dir.join(&f.path))
                        }
                    })
                    .collect();
                if j.stats.len() == now.len() {
                    match j.stats.iter().zip(&now).position(|(a, b)| a != b) {
                        None => (true, String::new()),
                        Some(i) => (false, format!("{} differs", files[i].path.display())),
                    }
                } else if !j.had_pieces && now.iter().all(Option::is_none) {
                    (true, String::new())
                } else {
                    (false, "no file times recorded".into())
                }
            }
        };
        ctx.send(SessionEvent::Validated {
            torrent: j.id,
            trusted,
            paused: j.paused,
            why,
        });
    }
}
