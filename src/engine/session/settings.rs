//! The session settings a front end may change while the session runs (qBittorrent's
//! `app/setPreferences`): the default save folder, the session's seeding goals
//! (`[seeding]`), the queue (`[queue]` on/off and its limits) and the DHT. They start from
//! the config; a change holds for this run (the config file is not rewritten) and is
//! published in the snapshot ([`SessionSettings`]).

use std::path::PathBuf;

use super::Session;
use crate::api::{EventKind, EventLevel, SessionSettings, SettingsChange, TorrentId};
use crate::config::engine::{EngineConfig, SeedingConfig};
use crate::engine::ctx::SessionEvent;

/// The changeable settings the session holds (the queue's live in `queue`, the DHT node
/// in the context's slot).
pub(super) struct Settings {
    /// The session's seeding goals in effect.
    pub seeding: SeedingConfig,
    /// Where an add without a folder goes, and what implicit category paths start from.
    pub download_dir: PathBuf,
    /// The DHT should run (a node may still be starting).
    pub dht_wanted: bool,
}

impl Settings {
    /// The settings of `config` (its download folder already made absolute).
    pub fn of(config: &EngineConfig) -> Settings {
        Settings {
            seeding: config.seeding.clone(),
            download_dir: config.download_dir.clone(),
            dht_wanted: config.dht.enabled,
        }
    }
}

impl Session {
    /// The settings in effect, as the snapshot shows them.
    pub(super) fn settings_view(&self) -> SessionSettings {
        let q = self.queue.config();
        let s = &self.settings.seeding;
        SessionSettings {
            download_dir: self.settings.download_dir.clone(),
            ratio_limit: s.ratio_limit,
            seeding_time_limit: s.seeding_time_limit,
            inactive_seeding_time_limit: s.inactive_seeding_time_limit,
            goal_action: s.action,
            queueing: q.enabled,
            max_active_downloads: q.max_active_downloads,
            max_active_uploads: q.max_active_uploads,
            max_active_torrents: q.max_active_torrents,
            dht: self.ctx.dht.is_on(),
            pex: self.ctx.config.pex,
            lsd: self.ctx.lsd.is_some(),
        }
    }

    /// Apply `change` (checked first: a wrong value changes nothing); log what changed.
    /// New seeding goals are looked at again for every seeding torrent, a new queue gives
    /// its slots again, the DHT starts or stops.
    ///
    /// # Errors
    /// The first wrong value ([`SettingsChange::check`]).
    pub(super) fn change_settings(
        &mut self,
        change: SettingsChange,
    ) -> Result<SessionSettings, String> {
        change.check()?;
        let mut said = Vec::new();
        if let Some(dir) = change.download_dir
            && dir != self.settings.download_dir
        {
            said.push(format!("default save folder {}", dir.display()));
            self.settings.download_dir = dir;
            // implicit category paths start from it (torrents already placed stay put)
            self.categories_settings_changed();
        }
        let mut seeding = self.settings.seeding.clone();
        if let Some(r) = change.ratio_limit {
            seeding.ratio_limit = r;
        }
        if let Some(m) = change.seeding_time_limit {
            seeding.seeding_time_limit = m;
        }
        if let Some(m) = change.inactive_seeding_time_limit {
            seeding.inactive_seeding_time_limit = m;
        }
        if let Some(a) = change.goal_action {
            seeding.action = a;
        }
        if seeding != self.settings.seeding {
            said.push(format!(
                "seeding goals: ratio {}, seeding time {}, inactive time {}, action {:?}",
                seeding.ratio_limit,
                seeding.seeding_time_limit,
                seeding.inactive_seeding_time_limit,
                seeding.action
            ));
            self.settings.seeding = seeding;
            // every seeding torrent measures itself against the new goals
            let ids: Vec<TorrentId> = self.torrents.keys().copied().collect();
            for id in ids {
                self.with(id, |t, env| t.goals_changed(env));
            }
        }
        let mut queue = self.queue.config().clone();
        if let Some(on) = change.queueing {
            queue.enabled = on;
        }
        if let Some(n) = change.max_active_downloads {
            queue.max_active_downloads = n;
        }
        if let Some(n) = change.max_active_uploads {
            queue.max_active_uploads = n;
        }
        if let Some(n) = change.max_active_torrents {
            queue.max_active_torrents = n;
        }
        if &queue != self.queue.config() {
            said.push(format!(
                "queue {}: downloads {}, seeds {}, torrents {}",
                if queue.enabled { "on" } else { "off" },
                queue.max_active_downloads,
                queue.max_active_uploads,
                queue.max_active_torrents
            ));
            self.queue_reconfigure(queue);
        }
        if let Some(on) = change.dht
            && on != self.settings.dht_wanted
        {
            said.push(format!("DHT {}", if on { "starting" } else { "off" }));
            self.dht_switch(on);
        }
        if !said.is_empty() {
            self.log.push(
                None,
                EventLevel::Info,
                EventKind::Settings,
                format!("settings changed: {}", said.join("; ")),
            );
        }
        self.publish_now = true;
        Ok(self.settings_view())
    }
}

impl Session {
    /// Start the DHT node (off the session's task: it binds a socket and reads the saved
    /// routing table; [`SessionEvent::DhtStarted`] brings it back) or stop it now: its
    /// torrents stop their lookups, the node saves its table and closes.
    fn dht_switch(&mut self, on: bool) {
        self.settings.dht_wanted = on;
        if on {
            let ctx = self.ctx.clone();
            tokio::spawn(async move {
                let utp = ctx.utp.is_some();
                let node =
                    super::start::start_dht_node(&ctx.config.dht, ctx.listen_port, utp).await;
                ctx.send(SessionEvent::DhtStarted(node));
            });
        } else if let Some(node) = self.ctx.dht.take() {
            self.dht_switched();
            tokio::spawn(async move {
                if let Err(e) = node.shutdown().await {
                    tracing::warn!("{e}");
                }
            });
        }
    }

    /// A node started by [`Session::dht_switch`] is up (`None`: it could not start; the
    /// reason is in the log): in use, unless the DHT was switched off again meanwhile.
    pub(super) fn on_dht_started(&mut self, node: Option<crate::dht::Dht>) {
        match node {
            Some(node) if self.settings.dht_wanted && !self.ctx.dht.is_on() => {
                self.ctx.dht.set(node);
                self.dht_switched();
                self.log
                    .push(None, EventLevel::Info, EventKind::Settings, "DHT on".into());
            }
            Some(node) => {
                tokio::spawn(async move {
                    let _ = node.shutdown().await;
                });
            }
            None => {
                self.settings.dht_wanted = false;
                self.log.push(
                    None,
                    EventLevel::Warn,
                    EventKind::Settings,
                    "the DHT could not start (see the log file): it stays off".into(),
                );
            }
        }
        self.publish_now = true;
    }

    /// Every torrent hears that the DHT went on or off.
    fn dht_switched(&mut self) {
        let ids: Vec<TorrentId> = self.torrents.keys().copied().collect();
        for id in ids {
            self.with(id, |t, env| t.dht_switched(env));
        }
    }
}
