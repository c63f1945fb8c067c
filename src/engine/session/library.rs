//! The library: which torrents the session has, under which id and info hash, and how
//! torrents enter it (an added .torrent file, magnet link or URL of a .torrent file, the
//! last fetched off the session's task) and leave it (removed, with
//! or without their files).
//!
//! [`Library`] hands out the [`TorrentId`]s and keeps the [`Registry`] (info hash ->
//! id) that the listener's tasks read to route incoming handshakes. The torrents
//! themselves stay in the session's map, next to the parts they borrow ([`Env`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::Session;
use crate::api::{AddError, AddRequest, AddSource, EventKind, EventLevel, TorrentId};
use crate::engine::ctx::{AddReply, SessionCtx, SessionEvent};
use crate::engine::hooks::HookWhen;
use crate::engine::torrent::announce::AnnounceJob;
use crate::engine::torrent::state::Input;
use crate::engine::torrent::{Env, STOP_ANNOUNCE_TIMEOUT, TimerKey, Torrent};
use crate::fetch::{FetchError, Fetched};
use crate::lock::RwLockExt;
use crate::metainfo::{InfoHash, Magnet, Metainfo};
use crate::net::mask_passkey;
use crate::tracker::{AnnounceEvent, AnnounceRequest};

/// Which torrent serves which info hash. Cloned handles share one map: the session
/// writes it (add, restore, remove), the listener's tasks read it to route an incoming
/// handshake before the session sees the connection. Beside it, each info hash under
/// `HASH('req2', info hash)`, for the responder of an MSE handshake (which learns only that
/// hash): every torrent is in both, magnet links still fetching metadata included.
#[derive(Debug, Clone, Default)]
pub(super) struct Registry(Arc<RwLock<Maps>>);

#[derive(Debug, Default)]
struct Maps {
    by_hash: HashMap<InfoHash, TorrentId>,
    by_req2: HashMap<[u8; 20], InfoHash>,
}

impl Registry {
    /// The torrent with `info_hash`, if the session has it.
    pub fn get(&self, info_hash: &InfoHash) -> Option<TorrentId> {
        self.0.read_locked().by_hash.get(info_hash).copied()
    }

    /// Whether the session serves `info_hash`.
    pub fn contains(&self, info_hash: &InfoHash) -> bool {
        self.get(info_hash).is_some()
    }

    /// The info hash whose `HASH('req2', info hash)` is `req2` (MSE/PE), if the session
    /// has that torrent.
    pub fn find_req2(&self, req2: &[u8; 20]) -> Option<InfoHash> {
        self.0.read_locked().by_req2.get(req2).copied()
    }

    fn insert(&self, info_hash: InfoHash, id: TorrentId) {
        let mut m = self.0.write_locked();
        m.by_hash.insert(info_hash, id);
        m.by_req2
            .insert(crate::peer::mse::req2(&info_hash), info_hash);
    }

    fn remove(&self, info_hash: &InfoHash) -> Option<TorrentId> {
        let mut m = self.0.write_locked();
        m.by_req2.remove(&crate::peer::mse::req2(info_hash));
        m.by_hash.remove(info_hash)
    }
}

/// The session's index of its torrents: the next id to hand out and the registry.
#[derive(Debug)]
pub(super) struct Library {
    registry: Registry,
    next_id: u64,
}

impl Default for Library {
    fn default() -> Self {
        Library::new()
    }
}

impl Library {
    /// An empty library; the first id handed out is 1.
    pub fn new() -> Library {
        Library {
            registry: Registry::default(),
            next_id: 1,
        }
    }

    /// A fresh id: ids are never reused within a run, not even after a remove.
    pub fn new_id(&mut self) -> TorrentId {
        let id = TorrentId(self.next_id);
        self.next_id += 1;
        id
    }

    /// The torrent with `info_hash`, if the session has it.
    pub fn find(&self, info_hash: &InfoHash) -> Option<TorrentId> {
        self.registry.get(info_hash)
    }

    /// Torrent `id` now serves `info_hash`.
    pub fn list(&self, info_hash: InfoHash, id: TorrentId) {
        self.registry.insert(info_hash, id);
    }

    /// `info_hash` is no longer served; returns the id it had.
    pub fn unlist(&self, info_hash: &InfoHash) -> Option<TorrentId> {
        self.registry.remove(info_hash)
    }

    /// A handle on the registry for tasks off the session (the listener's).
    pub fn registry(&self) -> Registry {
        self.registry.clone()
    }
}

/// Send the `stopped` announces of a removed torrent, each bounded by
/// [`STOP_ANNOUNCE_TIMEOUT`]; a torrent that had just completed sends `completed` first.
fn send_stops(ctx: Arc<SessionCtx>, stops: Vec<(AnnounceJob, AnnounceRequest)>) {
    tokio::spawn(async move {
        for (job, mut req) in stops {
            let _ =
                tokio::time::timeout(STOP_ANNOUNCE_TIMEOUT, ctx.trackers.announce(&job.url, &req))
                    .await;
            if req.event == Some(AnnounceEvent::Completed) {
                req.event = Some(AnnounceEvent::Stopped);
                req.numwant = Some(0);
                let _ = tokio::time::timeout(
                    STOP_ANNOUNCE_TIMEOUT,
                    ctx.trackers.announce(&job.url, &req),
                )
                .await;
            }
        }
    });
}

impl Session {
    /// List torrent `id` under `info_hash`: in the registry, the map and the published list.
    pub(super) fn insert(&mut self, id: TorrentId, ih: InfoHash, mut t: Torrent) {
        t.use_ip_filter(self.ctx.ip_filter.clone());
        // removed a moment ago and added again: the pending delete of its record and its
        // .torrent copy must not reach the store after this add
        self.persist.listed(&ih);
        self.library.list(ih, id);
        // a hybrid is also known by its v2 hash cut to 20 bytes (BEP 52): v2 peers name it so
        if let Some(alias) = t.v2_alias() {
            self.library.list(alias, id);
        }
        self.torrents.insert(id, t);
        self.publisher.insert(id);
        self.queue_insert(id);
    }

    /// Add a .torrent file or a magnet link (an add by URL goes through [`Session::fetch`]
    /// first). Errors: the source is invalid, the torrent is already in the session, or its
    /// copy cannot be kept in the state store.
    pub(super) fn add(&mut self, req: AddRequest) -> Result<TorrentId, AddError> {
        let path = match &req.source {
            AddSource::File(p) => p.clone(),
            AddSource::Magnet(link) => {
                let m = Magnet::parse(link).map_err(|e| AddError::Invalid(e.to_string()))?;
                return self.add_magnet(m, req);
            }
            AddSource::Url(url) => {
                return Err(AddError::Invalid(format!(
                    "{}: an add by URL is fetched first",
                    mask_passkey(url)
                )));
            }
            AddSource::Create(c) => {
                return Err(AddError::Invalid(format!(
                    "{}: a new torrent is hashed first",
                    c.path.display()
                )));
            }
            AddSource::Data { name, bytes } => {
                let meta = Metainfo::from_bytes(&bytes.0)
                    .map_err(|e| AddError::Invalid(format!("{name}: not a valid torrent: {e}")))?;
                let (name, bytes) = (name.clone(), bytes.clone());
                return self.add_metainfo(meta, &bytes.0, &name, req);
            }
        };
        let (meta, bytes) = Metainfo::load_with_bytes(&path).map_err(AddError::Invalid)?;
        self.add_metainfo(meta, &bytes, &path.display().to_string(), req)
    }

    /// Fetch the .torrent file at `url` off the session's task, then add it
    /// ([`SessionEvent::Fetched`], [`Session::add_fetched`]); `reply` gets the answer then.
    /// A URL that cannot be fetched (`file://`, no host) is refused at once.
    pub(super) fn fetch(&mut self, url: String, req: AddRequest, reply: Option<AddReply>) {
        if let Err(e) = crate::fetch::check_url(&url) {
            let refused = Err(AddError::Invalid(format!("{}: {e}", mask_passkey(&url))));
            self.add_answered(refused, reply);
            return;
        }
        tracing::info!("fetching {}", mask_passkey(&url));
        let ctx = self.ctx.clone();
        let timeout = Duration::from_secs(u64::from(ctx.config.add_url_timeout));
        tokio::spawn(async move {
            let result = crate::fetch::fetch_torrent(&url, timeout).await;
            ctx.send(SessionEvent::Fetched {
                request: req,
                reply,
                result,
            });
        });
    }

    /// Add what the URL of `req` led to: a .torrent file's bytes or a magnet link. Errors:
    /// the fetch failed, the body is not a torrent (the parser's reason), or as
    /// [`Session::add`].
    pub(super) fn add_fetched(
        &mut self,
        mut req: AddRequest,
        result: Result<Fetched, FetchError>,
    ) -> Result<TorrentId, AddError> {
        let url = req.source.to_string();
        let invalid = |why: String| AddError::Invalid(format!("{url}: {why}"));
        match result.map_err(|e| invalid(e.to_string()))? {
            Fetched::Magnet(link) => {
                let m = Magnet::parse(&link)
                    .map_err(|e| invalid(format!("redirected to a magnet link that {e}")))?;
                req.source = AddSource::Magnet(link);
                self.add_magnet(m, req)
            }
            Fetched::Torrent(bytes) => {
                let meta = Metainfo::from_bytes(&bytes)
                    .map_err(|e| invalid(format!("not a valid torrent: {e}")))?;
                self.add_metainfo(meta, &bytes, &url, req)
            }
        }
    }

    /// Every add's answer: a refusal goes to the session log (whoever asked: the TUI,
    /// a headless run, the watch folder) and to `reply`, as does a new torrent's id.
    pub(super) fn add_answered(&mut self, r: Result<TorrentId, AddError>, reply: Option<AddReply>) {
        if let Err(e) = &r {
            // the front end that asked reports it (headless runs print it once)
            tracing::info!("add refused: {e}");
            let level = match e {
                AddError::AlreadyAdded { .. } => Some(EventLevel::Info),
                AddError::ShuttingDown => None,
                AddError::Invalid(_) | AddError::Storage(_) => Some(EventLevel::Error),
            };
            if let Some(level) = level {
                self.log.push(
                    None,
                    level,
                    EventKind::AddRefused,
                    format!("not added: {e}"),
                );
            }
        }
        if let Some(reply) = reply {
            let _ = reply.send(r);
        }
    }

    /// Add a parsed .torrent (`bytes` as read, kept in the state store; `from` names where
    /// it came from in errors: the path or the masked URL).
    pub(super) fn add_metainfo(
        &mut self,
        meta: Metainfo,
        bytes: &[u8],
        from: &str,
        req: AddRequest,
    ) -> Result<TorrentId, AddError> {
        if let Some(id) = self.library.find(&meta.info_hash) {
            return Err(AddError::AlreadyAdded {
                id,
                name: meta.saved_name().to_owned(),
                info_hash: meta.info_hash.to_hex(),
                merged: None,
            });
        }
        let plan = self.add_plan(&req)?;
        let id = self.library.new_id();
        let info_hash = meta.info_hash;
        let name = meta.saved_name().to_owned();
        if let Some(store) = self.persist.store() {
            store.put_metainfo(&info_hash, bytes).map_err(|e| {
                AddError::Storage(format!(
                    "cannot keep a copy of {from} in {}: {e}",
                    store.dir().display()
                ))
            })?;
        }
        let mut t = Torrent::new(
            id,
            Arc::new(meta),
            plan.save_dir.clone(),
            req.seed,
            self.ctx.config.upload_slots as usize,
            !self.persist.is_on(),
        );
        plan.apply(&mut t);
        t.set_order_on_add(req.sequential, req.first_last);
        let skipped = if req.skip_check {
            t.skip_check_on_add();
            "; hash check skipped: each piece is checked before it is first sent"
        } else {
            ""
        };
        self.insert(id, info_hash, t);
        self.log.push(
            Some(id),
            EventLevel::Info,
            EventKind::Added,
            format!("{name}: added (info hash {info_hash}){skipped}"),
        );
        self.with(id, |t, env| t.run_hook(HookWhen::Added, env));
        self.added(id, req.paused);
        Ok(id)
    }

    /// After an add: start it unless asked paused, publish, and record it soon.
    fn added(&mut self, id: TorrentId, paused: bool) {
        if !paused {
            self.with(id, |t, env| t.input(Input::Resume, env));
        }
        self.publish_now = true;
        if self.persist.is_on() {
            self.checkpoint_soon();
        }
    }

    /// Add a magnet link: listed at once, its metadata fetched from peers when it runs.
    fn add_magnet(&mut self, m: Magnet, req: AddRequest) -> Result<TorrentId, AddError> {
        if let Some(id) = self.library.find(&m.info_hash) {
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
        let plan = self.add_plan(&req)?;
        let id = self.library.new_id();
        let info_hash = m.info_hash;
        let name = m.display_name();
        let notes = m.notes.clone();
        let mut t = Torrent::new_magnet(
            id,
            m,
            plan.save_dir.clone(),
            req.seed,
            self.ctx.config.upload_slots as usize,
            !self.persist.is_on(),
        );
        plan.apply(&mut t);
        t.set_order_on_add(req.sequential, req.first_last);
        self.insert(id, info_hash, t);
        self.log.push(
            Some(id),
            EventLevel::Info,
            EventKind::Added,
            format!("{name}: added from a magnet link (info hash {info_hash}); fetching its metadata from peers"),
        );
        if req.skip_check {
            self.log.push(
                Some(id),
                EventLevel::Info,
                EventKind::Added,
                format!("{name}: a magnet link is not added without a check: its data is checked once its metadata is in"),
            );
        }
        for n in notes {
            self.log.push(
                Some(id),
                EventLevel::Warn,
                EventKind::Added,
                format!("{name}: {n}"),
            );
        }
        self.with(id, |t, env| t.run_hook(HookWhen::Added, env));
        self.added(id, req.paused);
        Ok(id)
    }

    /// Remove torrent `id`: its peers and tasks stop, its trackers hear `stopped`, its
    /// record leaves the state store at the next checkpoint, and with `delete_data` its
    /// files are deleted off the session's task (the result comes back as
    /// [`SessionEvent::Deleted`]).
    pub(super) fn remove(&mut self, id: TorrentId, delete_data: bool) {
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
        for h in t.swarm_hashes() {
            if self.library.find(&h) == Some(id) {
                self.library.unlist(&h);
            }
        }
        self.publisher.remove(id);
        self.queue_remove(id);
        send_stops(self.ctx.clone(), stops);
        let name = t.sum.name.clone();
        if self.persist.removed(t.info_hash()) {
            self.checkpoint_soon();
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

    /// The files of a removed torrent were deleted, or deleting them failed.
    pub(super) fn on_deleted(&mut self, name: String, error: Option<String>) {
        match error {
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
        }
    }
}

#[cfg(test)]
mod tests;

/// `dir` made absolute against the working folder the engine runs in, once, when it is
/// given: a relative save folder (`-o dl`, `rel/dir` typed in a dialog) must not point
/// somewhere else after a restart from another folder. Unchanged when already absolute
/// (or when the working folder is gone).
pub(super) fn absolute(dir: PathBuf) -> PathBuf {
    if dir.is_absolute() {
        return dir;
    }
    std::path::absolute(&dir).unwrap_or(dir)
}
