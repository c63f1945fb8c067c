//! Starting a session: bind the listen port, start the DHT node and LSD when the config
//! asks for them, open the state store, build the session and spawn its task; and the
//! [`SessionHandle`] the caller gets back.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use tokio::sync::{mpsc, watch};

use super::Session;
use super::disk_guard::DiskGuard;
use super::library::Library;
use super::persist::Persist;
use super::publish::{Publisher, session_stats};
use crate::api::{Client, ClientError, Snapshot};
use crate::config::engine::EngineConfig;
use crate::engine::alt_speed::{AltSpeeds, LocalClock, WallClock};
use crate::engine::ctx::{SessionCtx, SessionEvent};
use crate::engine::event_log::EventLog;
use crate::engine::timer::Timers;
use crate::engine::torrent::CheckQueue;
use crate::state::StateStore;

/// A running session: the client handle to drive it and the task to await.
#[derive(Debug)]
pub struct SessionHandle {
    /// The one way in: commands, snapshots and events (clone it for each user).
    pub client: Client,
    /// The TCP port peers can connect to.
    pub listen_port: u16,
    /// The session task; ends after [`Command::Shutdown`](crate::api::Command::Shutdown)
    /// or when every client is dropped.
    pub task: tokio::task::JoinHandle<()>,
}

impl SessionHandle {
    /// Shut the session down ([`Client::shutdown`]: torrents stopped, trackers told, state
    /// saved) and wait for its task to end.
    ///
    /// # Errors
    /// [`ClientError::EngineGone`]: the session had stopped already.
    pub async fn shutdown(self) -> Result<(), ClientError> {
        let confirmed = self.client.shutdown().await;
        let _ = self.task.await;
        confirmed
    }
}

/// Bind the listen port, start the disk threads and the session task, with no state kept
/// across runs (headless `download`, tests).
///
/// # Errors
/// The listen port cannot be bound (in use, no permission).
pub async fn start(config: EngineConfig) -> anyhow::Result<SessionHandle> {
    start_session(config, None, Arc::new(WallClock)).await
}

/// [`start`] with the session state in `state_dir` (see [`crate::state`]): the torrents of
/// the last run are listed at once and come back (without reading their data when their
/// files are as they were), and the list, resume data and totals are kept on a checkpoint
/// cadence and at shutdown.
///
/// # Errors
/// Another ratorrent uses the same state ([`crate::state::StateError::Locked`]), the state
/// folder cannot be written, or the listen port cannot be bound.
pub async fn start_with_state(
    config: EngineConfig,
    state_dir: &Path,
) -> anyhow::Result<SessionHandle> {
    start_with_clock(config, Some(state_dir), Arc::new(WallClock)).await
}

/// [`start`] (`state_dir` `None`) or [`start_with_state`], with the local time of the
/// `[alt_speed_schedule]` read from `clock` instead of the system's (tests: a clock set
/// just before a boundary).
///
/// # Errors
/// As [`start_with_state`].
pub async fn start_with_clock(
    mut config: EngineConfig,
    state_dir: Option<&Path>,
    clock: Arc<dyn LocalClock>,
) -> anyhow::Result<SessionHandle> {
    let Some(state_dir) = state_dir else {
        return start_session(config, None, clock).await;
    };
    // the DHT routing table lives beside the session state
    if config.dht.state_file.is_none() {
        config.dht.state_file = Some(state_dir.join(crate::dht::STATE_FILE_NAME));
    }
    let dir = state_dir.to_path_buf();
    let opened = tokio::task::spawn_blocking(move || StateStore::open(&dir))
        .await
        .context("opening the session state")??;
    start_session(config, Some(opened), clock).await
}

async fn start_session(
    config: EngineConfig,
    state: Option<(StateStore, crate::state::Loaded)>,
    clock: Arc<dyn LocalClock>,
) -> anyhow::Result<SessionHandle> {
    // a relative download folder (`-o dl`) is the one under the folder started from, for
    // good: the torrents added into it keep pointing there after a restart elsewhere
    let config = EngineConfig {
        download_dir: super::library::absolute(config.download_dir.clone()),
        ..config
    };
    let listeners = super::bind::bind(&config).await?;
    let listen_port = listeners.port;
    let dht = start_dht(&config, listen_port).await;
    let (ev_tx, ev_rx) = mpsc::unbounded_channel();
    let lsd = start_lsd(&config, listen_port, ev_tx.clone());
    let ctx =
        SessionCtx::with_transports(config, listen_port, ev_tx, dht, lsd, listeners.utp.clone());
    let (cmd_tx, cmd_rx) = mpsc::channel(256);
    let (snap_tx, snap_rx) = watch::channel(Arc::new(Snapshot {
        seq: 0,
        global: session_stats(&ctx, None, false),
        rows: Arc::from(Vec::new()),
        detail: None,
    }));
    let log = EventLog::new();
    let min_free_space = ctx.config.min_free_space;
    let alt = AltSpeeds::new(
        (ctx.config.download_rate_limit, ctx.config.upload_rate_limit),
        (
            ctx.config.alt_download_rate_limit,
            ctx.config.alt_upload_rate_limit,
        ),
        ctx.config.alt_speed_schedule,
        clock,
    );
    let client = Client::new(cmd_tx, snap_rx, log.sender());
    let checks = CheckQueue::new(ctx.config.queue.max_active_checking as usize);
    let queue = super::queue::Queue::new(&ctx.config.queue);
    let mut settings = super::settings::Settings::of(&ctx.config);
    settings.dht_wanted = ctx.dht.is_on();
    let session = Session {
        ctx,
        torrents: BTreeMap::new(),
        library: Library::new(),
        timers: Timers::new(),
        log,
        checks,
        queue,
        publisher: Publisher::new(snap_tx),
        publish_now: false,
        persist: Persist::new(None),
        guard: DiskGuard::new(min_free_space),
        filter: Default::default(),
        alt,
        categories: Default::default(),
        settings,
        flushes: Vec::new(),
    };
    let mut session = session;
    session.categories_start(state.as_ref().map(|(store, _)| store.dir()));
    // read on a blocking thread; installed when ready (peers learnt before are held
    // back at their dial, see PeerBook)
    session.ip_filter_look();
    let free = crate::storage::space::free_space(&session.settings.download_dir);
    session.guard.measured(free);
    if let Some((store, loaded)) = state {
        session.persist = Persist::new(Some(Arc::new(store)));
        session.restore(loaded);
        session.categories_restored();
        // the list of the last session is in the first snapshot, before anything is
        // hashed or connected
        session.grant_checks();
        session.after_input();
    }
    // a schedule decides at start (over a switch saved by hand), then at its boundaries
    if session.alt.follow_schedule_now() {
        session.alt_speed_changed("by the schedule");
        session.after_input();
    }
    session.schedule_alt_speed();
    // the first snapshot has the settings (and the categories) even with no torrent
    session.publish_now = true;
    session.after_input();
    let task = tokio::spawn(session.run(cmd_rx, ev_rx, listeners));
    Ok(SessionHandle {
        client,
        listen_port,
        task,
    })
}

/// Start the DHT node when the config asks for one: UDP on `[dht] port` (default: the
/// listen port, or the next one when uTP has the listen port's UDP side), dual stack
/// (`[::]`, BEP 32) where the host has IPv6, else IPv4 only. A node that cannot start is
/// logged and the session runs without it.
async fn start_dht(config: &EngineConfig, listen_port: u16) -> Option<crate::dht::Dht> {
    if !config.dht.enabled {
        return None;
    }
    start_dht_node(&config.dht, listen_port, config.peer.utp()).await
}

/// Start a DHT node as `[dht]` says, whether `enabled` or not (also when it is switched on
/// while the session runs); `None` when it cannot start (logged). `utp`: the uTP socket
/// has the listen port's UDP side (the node's default port is then the next one).
pub(super) async fn start_dht_node(
    config: &crate::config::engine::DhtConfig,
    listen_port: u16,
    utp: bool,
) -> Option<crate::dht::Dht> {
    use std::net::{Ipv4Addr, Ipv6Addr};
    let port = config.udp_port(listen_port, utp);
    let opts = |bind: SocketAddr| crate::dht::DhtOptions {
        bind,
        bootstrap: config.bootstrap.clone(),
        state_file: config.state_file.clone(),
    };
    let dual = crate::dht::Dht::start(opts(SocketAddr::from((Ipv6Addr::UNSPECIFIED, port))));
    match dual.await {
        Ok(d) => return Some(d),
        Err(e) => tracing::debug!("{e}; trying IPv4 only"),
    }
    match crate::dht::Dht::start(opts(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)))).await {
        Ok(d) => Some(d),
        Err(e) => {
            tracing::warn!("{e}; running without the DHT");
            None
        }
    }
}

/// Start Local Service Discovery (BEP 14) when `[lsd] enabled` (off by default): peers
/// heard for our torrents come back as [`SessionEvent::LsdPeer`]. A socket that cannot
/// be bound or joined is one log line and the session runs without LSD.
fn start_lsd(
    config: &EngineConfig,
    listen_port: u16,
    events: mpsc::UnboundedSender<SessionEvent>,
) -> Option<crate::lsd::Lsd> {
    if !config.lsd.enabled {
        return None;
    }
    let opts = crate::lsd::LsdOptions {
        interface: config.lsd.interface_addr(),
        listen_port,
    };
    let on_peer = move |info_hash, peer| {
        let _ = events.send(SessionEvent::LsdPeer { info_hash, peer });
    };
    match crate::lsd::Lsd::start(opts, on_peer) {
        Ok(l) => {
            tracing::info!(
                "LSD (BEP 14) on: {}:{} joined on interface {}",
                crate::lsd::GROUP_V4,
                crate::lsd::PORT,
                opts.interface
            );
            Some(l)
        }
        Err(e) => {
            tracing::warn!("{e}");
            None
        }
    }
}
