//! The torrent and its web seeds (BEP 19 `url-list`): a task per server
//! ([`crate::engine::webseed`]) while the torrent downloads and `[webseeds] enabled` is
//! on, stopped when it completes, pauses or fails; hash failures counted against the
//! server that sent the data (dropped for the run at [`MAX_HASH_FAILS`]); their rows for
//! the snapshot.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::watch;

use super::swarm::MAX_HASH_FAILS;
use super::{Env, Torrent};
use crate::api::{EventKind, EventLevel, TorrentState, WebSeedRow, WebSeedState};
use crate::engine::rate::RateMeter;
use crate::engine::webseed::{self, Seed, WebSeedInfo};
use crate::webseed::FileUrls;

/// One web seed of the torrent.
#[derive(Debug)]
struct Server {
    /// The URL as the torrent gives it.
    url: String,
    info: Arc<WebSeedInfo>,
    /// While its task runs: its key in the picker and the way to stop it.
    running: Option<(u64, watch::Sender<bool>)>,
    /// Not used again this run (why is in its message).
    dropped: bool,
    meter: RateMeter,
}

/// A torrent's web seeds.
#[derive(Debug, Default)]
pub struct WebSeeds {
    servers: Vec<Server>,
}

impl WebSeeds {
    /// The web seeds of `urls` (the torrent's `url-list`), none running.
    pub fn new(urls: &[String]) -> WebSeeds {
        WebSeeds {
            servers: urls
                .iter()
                .map(|u| Server {
                    url: u.clone(),
                    info: Arc::new(WebSeedInfo::new(u)),
                    running: None,
                    dropped: false,
                    meter: RateMeter::default(),
                })
                .collect(),
        }
    }

    /// Whether the torrent has web seeds.
    pub fn in_effect(&self) -> bool {
        !self.servers.is_empty()
    }

    /// Whether a web seed's task runs.
    pub fn running(&self) -> bool {
        self.servers.iter().any(|s| s.running.is_some())
    }

    /// Web seeds whose task runs and that are not backed off.
    pub fn active(&self) -> u32 {
        self.servers
            .iter()
            .filter(|s| s.running.is_some() && s.info.state() == WebSeedState::Active)
            .count() as u32
    }

    /// Stop every task (they give their blocks back to the picker as they end).
    pub fn stop_all(&mut self) {
        for s in &mut self.servers {
            if let Some((_, stop)) = s.running.take() {
                let _ = stop.send(true);
                // the task ends on its own time: it no longer says what the server does
                s.info.begin();
            }
            s.info.set_state(WebSeedState::Idle);
            s.info.requests.store(0, Ordering::Relaxed);
            s.info.retry_at.store(0, Ordering::Relaxed);
        }
    }

    /// The web seed whose task has picker key `key`.
    fn by_key(&mut self, key: u64) -> Option<&mut Server> {
        self.servers
            .iter_mut()
            .find(|s| s.running.as_ref().is_some_and(|(k, _)| *k == key))
    }

    /// The rows for the detail view, rates sampled at `now`.
    pub fn rows(&mut self, now: Instant) -> Vec<WebSeedRow> {
        self.servers
            .iter_mut()
            .map(|s| {
                let i = &s.info;
                let downloaded = i.downloaded.load(Ordering::Relaxed);
                let retry = i.retry_at.load(Ordering::Relaxed);
                let state = i.state();
                WebSeedRow {
                    url: i.url.clone(),
                    state,
                    down_rate: s.meter.sample(downloaded, now),
                    downloaded,
                    requests: i.requests.load(Ordering::Relaxed),
                    failures: i.failures.load(Ordering::Relaxed),
                    hash_fails: i.hash_fails.load(Ordering::Relaxed),
                    max_hash_fails: MAX_HASH_FAILS,
                    bad_bytes: i.bad_bytes.load(Ordering::Relaxed),
                    missing_files: i.missing_files.load(Ordering::Relaxed),
                    message: i.message(),
                    retry_at: (state == WebSeedState::BackedOff && retry > 0)
                        .then(|| SystemTime::UNIX_EPOCH + Duration::from_millis(retry)),
                }
            })
            .collect()
    }
}

impl Torrent {
    /// Run the web seeds while the torrent downloads (and `[webseeds] enabled`), stop them
    /// otherwise. Called after every input to the state machine.
    pub(super) fn sync_web_seeds(&mut self, env: &mut Env<'_>) {
        if self.sum.web_seeds.is_none() && self.life.is_running() {
            // a record older than the web seeds' own field: the .torrent says
            if let Ok(meta) = self.load_meta(env) {
                self.sum.web_seeds = Some(meta.web_seeds.clone());
                self.web_seeds = WebSeeds::new(&meta.web_seeds);
                self.persist_dirty = true;
            }
        }
        if !self.web_seeds.in_effect() {
            return;
        }
        let want = env.ctx.config.webseeds.enabled
            && self.life.ui_state() == TorrentState::Downloading
            && !self.awaiting_metadata();
        if !want {
            if self.web_seeds.running() {
                self.web_seeds.stop_all();
                // the storage may go quiet now that no web seed holds it
                self.schedule_sweep(env);
            }
            return;
        }
        if self
            .web_seeds
            .servers
            .iter()
            .all(|s| s.dropped || s.running.is_some())
        {
            return;
        }
        let Some(shared) = self.ensure_shared(env) else {
            return;
        };
        let Ok(meta) = self.load_meta(env) else {
            return;
        };
        let client = match env.ctx.webseed_client() {
            Ok(c) => c,
            Err(why) => {
                self.log(
                    env,
                    EventLevel::Error,
                    EventKind::WebSeed,
                    format!("web seeds unavailable: {why}"),
                );
                for s in &mut self.web_seeds.servers {
                    s.dropped = true;
                    s.info.set_state(WebSeedState::Dropped);
                    s.info.set_message(why.clone());
                }
                return;
            }
        };
        let layout = Arc::new(self.sum.files.clone());
        let names: Arc<[String]> = meta.files.iter().map(|f| meta.path_in_folder(f)).collect();
        let cfg = &env.ctx.config.webseeds;
        let mut notes = Vec::new();
        for s in &mut self.web_seeds.servers {
            if s.dropped || s.running.is_some() {
                continue;
            }
            let urls = match FileUrls::new(&s.url, &meta) {
                Ok(u) => Arc::new(u),
                Err(why) => {
                    s.dropped = true;
                    s.info.set_state(WebSeedState::Dropped);
                    s.info.set_message(format!("not usable: {why}"));
                    notes.push(format!("web seed {} not usable: {why}", s.info.url));
                    continue;
                }
            };
            let key = env.ctx.key();
            let (stop, rx) = watch::channel(false);
            s.running = Some((key, stop));
            let generation = s.info.begin();
            s.info.set_state(WebSeedState::Active);
            tokio::spawn(webseed::run(Seed {
                t: shared.clone(),
                key,
                urls,
                layout: layout.clone(),
                names: names.clone(),
                info: s.info.clone(),
                client: client.clone(),
                connections: cfg.max_connections_per_server as usize,
                rate: cfg.min_rate(),
                stop: rx,
                generation,
            }));
        }
        for n in notes {
            self.log(env, EventLevel::Warn, EventKind::WebSeed, n);
        }
    }

    /// Pieces with data from connection or web seed `keys` failed their hash check: the
    /// web seeds among them have `bytes` counted against them; one at
    /// [`MAX_HASH_FAILS`] is dropped for this run. Returns the keys that are not web seeds.
    pub(super) fn strike_web_seeds(
        &mut self,
        keys: Vec<u64>,
        bytes: u64,
        env: &mut Env<'_>,
    ) -> Vec<u64> {
        let mut peers = Vec::with_capacity(keys.len());
        let mut notes = Vec::new();
        for key in keys {
            let Some(s) = self.web_seeds.by_key(key) else {
                peers.push(key);
                continue;
            };
            s.info.bad_bytes.fetch_add(bytes, Ordering::Relaxed);
            let n = s.info.hash_fails.fetch_add(1, Ordering::Relaxed) + 1;
            if n >= MAX_HASH_FAILS {
                if let Some((_, stop)) = s.running.take() {
                    let _ = stop.send(true);
                    s.info.begin();
                }
                s.info.requests.store(0, Ordering::Relaxed);
                s.info.retry_at.store(0, Ordering::Relaxed);
                s.dropped = true;
                s.info.set_state(WebSeedState::Dropped);
                let why =
                    format!("dropped for this run: {n} pieces of its data failed their hash check");
                s.info.set_message(why.clone());
                notes.push((EventLevel::Warn, format!("web seed {}: {why}", s.info.url)));
            } else {
                s.info.set_message(format!(
                    "{n} pieces of its data failed their hash check (dropped at {MAX_HASH_FAILS})"
                ));
            }
        }
        for (level, n) in notes {
            self.log(env, level, EventKind::WebSeed, n);
        }
        peers
    }

    /// A web seed's news (its task's [`PeerEvent::WebSeedNote`]) for the log.
    ///
    /// [`PeerEvent::WebSeedNote`]: crate::engine::link::message::PeerEvent::WebSeedNote
    pub(super) fn web_seed_note(&mut self, key: u64, note: String, env: &mut Env<'_>) {
        let Some(url) = self.web_seeds.by_key(key).map(|s| s.info.url.clone()) else {
            return;
        };
        *env.publish_now = true;
        self.log(
            env,
            EventLevel::Warn,
            EventKind::WebSeed,
            format!("web seed {url}: {note}"),
        );
    }
}
