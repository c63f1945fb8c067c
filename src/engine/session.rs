//! The session actor: owns every torrent, accepts incoming peers, answers commands and
//! publishes snapshots.
//!
//! Nothing else mutates engine state. Front ends talk to it only through
//! [`SessionHandle::commands`] and read [`SessionHandle::snapshots`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};

use super::rate::RateMeter;
use super::torrent::{self, SessionCtx, Torrent, TorrentCtrl, TorrentSpawn};
use crate::api::{
    AddRequest, Command, CommandSender, GlobalStats, Snapshot, SnapshotReceiver, TorrentId,
    TorrentRow, TorrentState,
};
use crate::config::Config;
use crate::metainfo::{InfoHash, Metainfo};
use crate::peer::wire::Handshake;

/// How often snapshots are published at most (ms).
pub const PUBLISH_INTERVAL: Duration = Duration::from_millis(500);
/// How long shutdown waits for torrents to send `stopped` (s).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// A running session: channels to drive it and the task to await.
#[derive(Debug)]
pub struct SessionHandle {
    /// Send commands here.
    pub commands: CommandSender,
    /// Latest snapshot.
    pub snapshots: SnapshotReceiver,
    /// The TCP port peers can connect to.
    pub listen_port: u16,
    /// The session task; ends after [`Command::Shutdown`] or when every sender is dropped.
    pub task: tokio::task::JoinHandle<()>,
}

/// Bind the listen port, start the disk threads and the session task.
///
/// # Errors
/// The listen port cannot be bound (in use, no permission).
pub async fn start(config: Config) -> anyhow::Result<SessionHandle> {
    let listener = TcpListener::bind(("0.0.0.0", config.listen_port))
        .await
        .with_context(|| {
            format!(
                "cannot listen for peers on TCP port {} (set listen_port in the config or use --port)",
                config.listen_port
            )
        })?;
    let listen_port = listener.local_addr()?.port();
    let ctx = SessionCtx::new(config, listen_port);
    let (cmd_tx, cmd_rx) = mpsc::channel(256);
    let (snap_tx, snap_rx) = watch::channel(Arc::new(Snapshot {
        seq: 0,
        global: GlobalStats {
            listen_port,
            ..GlobalStats::default()
        },
        rows: Arc::from(Vec::new()),
    }));
    let session = Session {
        ctx,
        torrents: Vec::new(),
        by_hash: Arc::new(RwLock::new(HashMap::new())),
        next_id: 1,
        meters: HashMap::new(),
        snapshots: snap_tx,
        seq: 0,
    };
    let task = tokio::spawn(session.run(cmd_rx, listener));
    Ok(SessionHandle {
        commands: cmd_tx,
        snapshots: snap_rx,
        listen_port,
        task,
    })
}

struct Entry {
    t: Arc<Torrent>,
    ctrl: mpsc::Sender<TorrentCtrl>,
    task: tokio::task::JoinHandle<()>,
}

type Registry = Arc<RwLock<HashMap<InfoHash, mpsc::Sender<TorrentCtrl>>>>;

struct Session {
    ctx: Arc<SessionCtx>,
    torrents: Vec<Entry>,
    by_hash: Registry,
    next_id: u64,
    meters: HashMap<TorrentId, (RateMeter, RateMeter)>,
    snapshots: watch::Sender<Arc<Snapshot>>,
    seq: u64,
}

impl Session {
    async fn run(mut self, mut commands: mpsc::Receiver<Command>, listener: TcpListener) {
        let mut publish = tokio::time::interval(PUBLISH_INTERVAL);
        publish.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                c = commands.recv() => match c {
                    None => { self.shutdown().await; return; }
                    Some(Command::Shutdown(reply)) => {
                        self.shutdown().await;
                        let _ = reply.send(());
                        return;
                    }
                    Some(c) => {
                        self.command(c).await;
                        self.publish();
                    }
                },
                a = listener.accept() => match a {
                    Ok((stream, addr)) => {
                        let reg = self.by_hash.clone();
                        tokio::spawn(route_incoming(stream, addr, reg));
                    }
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                _ = publish.tick() => self.publish(),
                _ = self.ctx.state_changed.notified() => self.publish(),
            }
        }
    }

    async fn command(&mut self, c: Command) {
        match c {
            Command::Add(req, reply) => {
                let r = self.add(req);
                if let Err(e) = &r {
                    tracing::warn!("add failed: {e}");
                }
                if let Some(reply) = reply {
                    let _ = reply.send(r);
                }
            }
            Command::Pause(id) => self.send(id, TorrentCtrl::Pause).await,
            Command::Resume(id) => self.send(id, TorrentCtrl::Resume).await,
            Command::TogglePause(id) => {
                if let Some(e) = self.torrents.iter().find(|e| e.t.id == id) {
                    let paused = e.t.status.lock().unwrap_or_else(|e| e.into_inner()).state
                        == TorrentState::Paused;
                    let c = if paused {
                        TorrentCtrl::Resume
                    } else {
                        TorrentCtrl::Pause
                    };
                    let _ = e.ctrl.send(c).await;
                }
            }
            Command::Remove(id) => {
                if let Some(i) = self.torrents.iter().position(|e| e.t.id == id) {
                    let e = self.torrents.remove(i);
                    self.by_hash
                        .write()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&e.t.info_hash());
                    self.meters.remove(&id);
                    let pool = self.ctx.pool.clone();
                    tokio::spawn(async move {
                        let (tx, rx) = oneshot::channel();
                        if e.ctrl.send(TorrentCtrl::Stop(tx)).await.is_ok() {
                            let _ = tokio::time::timeout(SHUTDOWN_TIMEOUT, rx).await;
                        }
                        pool.forget(e.t.id.0);
                    });
                }
            }
            Command::Shutdown(_) => {}
        }
    }

    async fn send(&self, id: TorrentId, c: TorrentCtrl) {
        if let Some(e) = self.torrents.iter().find(|e| e.t.id == id) {
            let _ = e.ctrl.send(c).await;
        }
    }

    fn add(&mut self, req: AddRequest) -> Result<TorrentId, String> {
        let meta = Metainfo::load(&req.torrent)?;
        if self
            .by_hash
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&meta.info_hash)
        {
            return Err(format!(
                "{}: {} is already added (info hash {})",
                req.torrent.display(),
                meta.name,
                meta.info_hash
            ));
        }
        let id = TorrentId(self.next_id);
        self.next_id += 1;
        let download_dir = req
            .download_dir
            .unwrap_or_else(|| self.ctx.config.download_dir.clone());
        let info_hash = meta.info_hash;
        let name = meta.name.clone();
        let (t, ctrl, task) = torrent::spawn(
            self.ctx.clone(),
            TorrentSpawn {
                id,
                meta: Arc::new(meta),
                download_dir,
                paused: req.paused,
                seed: req.seed,
            },
        )
        .map_err(|e| format!("{name}: {e}"))?;
        self.by_hash
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(info_hash, ctrl.clone());
        tracing::info!(torrent = %name, %info_hash, "added");
        self.torrents.push(Entry { t, ctrl, task });
        Ok(id)
    }

    async fn shutdown(&mut self) {
        let mut waits = Vec::new();
        for e in &self.torrents {
            let (tx, rx) = oneshot::channel();
            if e.ctrl.send(TorrentCtrl::Stop(tx)).await.is_ok() {
                waits.push(rx);
            }
        }
        let all = futures::future::join_all(waits);
        let _ = tokio::time::timeout(SHUTDOWN_TIMEOUT, all).await;
        // the final state, for front ends that look once more after shutdown
        self.publish();
        for e in self.torrents.drain(..) {
            e.task.abort();
        }
    }

    fn publish(&mut self) {
        let now = Instant::now();
        let mut rows = Vec::with_capacity(self.torrents.len());
        let mut global = GlobalStats {
            listen_port: self.ctx.listen_port,
            ..GlobalStats::default()
        };
        for e in &self.torrents {
            let (down_meter, up_meter) = self.meters.entry(e.t.id).or_default();
            let row = row_of(&e.t, down_meter, up_meter, now);
            global.down_rate += row.down_rate;
            global.up_rate += row.up_rate;
            global.downloaded += row.downloaded;
            global.uploaded += row.uploaded;
            global.peers += row.peers;
            rows.push(row);
        }
        let seq = self.seq + 1;
        let changed = self.snapshots.send_if_modified(|cur| {
            if cur.global == global && *cur.rows == rows[..] {
                return false;
            }
            *cur = Arc::new(Snapshot {
                seq,
                global,
                rows: Arc::from(rows),
            });
            true
        });
        if changed {
            self.seq = seq;
        }
    }
}

fn row_of(t: &Torrent, down: &mut RateMeter, up: &mut RateMeter, now: Instant) -> TorrentRow {
    let meta = &t.meta;
    let (have, left, n) = {
        let pk = t.picker();
        (pk.have().count(), pk.bytes_left(), meta.piece_count())
    };
    let status = t.status.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let (peers, seeds) = {
        let peers = t.peers.lock().unwrap_or_else(|e| e.into_inner());
        let seeds = peers
            .values()
            .filter(|p| p.info.pieces.load(Ordering::Relaxed) == n)
            .count();
        (peers.len() as u32, seeds as u32)
    };
    let downloaded = t.stats.downloaded.load(Ordering::Relaxed);
    let uploaded = t.stats.uploaded.load(Ordering::Relaxed);
    let mut down_rate = down.sample(downloaded, now);
    let mut up_rate = up.sample(uploaded, now);
    if !matches!(
        status.state,
        TorrentState::Downloading | TorrentState::Seeding
    ) {
        // a stopped torrent moves nothing; do not show the meter's decay
        down_rate = 0;
        up_rate = 0;
    }
    let size = meta.payload_size();
    // verified bytes, scaled to exclude padding (exact when the torrent has none)
    let verified = meta.total_length.saturating_sub(left);
    let done = if meta.total_length == 0 {
        0
    } else {
        ((verified as u128 * size as u128) / meta.total_length as u128) as u64
    };
    let (state, done, have) = if status.state == TorrentState::Checking {
        let checked = t.check_progress.load(Ordering::Relaxed).min(n);
        let done = (u64::from(checked) * size) / u64::from(n.max(1));
        (status.state, done, checked)
    } else {
        (status.state, done, have)
    };
    let eta_secs = if state == TorrentState::Downloading && down_rate > 0 {
        Some(left / down_rate)
    } else {
        None
    };
    TorrentRow {
        id: t.id,
        name: meta.name.clone(),
        info_hash: meta.info_hash.to_hex(),
        size,
        done,
        pieces_have: have,
        pieces_total: n,
        state,
        down_rate,
        up_rate,
        eta_secs,
        seeds,
        peers,
        swarm_seeds: status.swarm_seeds,
        swarm_leechers: status.swarm_leechers,
        downloaded,
        uploaded,
        message: status.message,
    }
}

/// Read the handshake prefix of an incoming connection and hand it to the torrent it names.
/// Unknown info hashes are closed at once (BEP 3: "if the receiving side does not serve the
/// info hash, it drops the connection").
async fn route_incoming(mut stream: TcpStream, addr: SocketAddr, registry: Registry) {
    let mut prefix = [0u8; 48];
    match tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut prefix)).await {
        Ok(Ok(_)) => {}
        _ => return,
    }
    let Ok((reserved, info_hash)) = Handshake::parse_prefix(&prefix) else {
        tracing::debug!(%addr, "incoming connection is not BitTorrent");
        return;
    };
    let ctrl = registry
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(&info_hash)
        .cloned();
    match ctrl {
        Some(ctrl) => {
            let _ = ctrl.try_send(TorrentCtrl::Incoming { stream, reserved });
        }
        None => {
            tracing::debug!(%addr, %info_hash, "handshake info hash does not match any torrent we serve; closing");
        }
    }
}
