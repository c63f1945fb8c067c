//! One torrent: shared state that peer tasks and the snapshot publisher read, and the torrent
//! task that owns its life cycle (check, announce, connect, choke, complete, stop).

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use super::announce::Trackers;
use super::choker::{self, Candidate};
use super::peer_task::{self, PeerCtrl, PeerInfo};
use super::picker::{PeerKey, Picker};
use super::rate::RateLimiter;
use crate::api::{TorrentId, TorrentState};
use crate::config::Config;
use crate::metainfo::{InfoHash, Metainfo};
use crate::peer::PeerId;
use crate::peer::wire::{BlockRef, Handshake};
use crate::piece::Bitfield;
use crate::storage::check;
use crate::storage::disk::{DiskEvent, DiskPool, ReadReply, TorrentDisk};
use crate::storage::{Storage, StorageError};
use crate::tracker::http::HttpTracker;
use crate::tracker::{AnnounceEvent, AnnounceRequest, AnnounceResponse};

/// Seconds between choke rounds (BEP 3 suggests 10 s).
const CHOKE_INTERVAL: Duration = Duration::from_secs(10);
/// Seconds between optimistic-unchoke rotations.
const OPTIMISTIC_INTERVAL: Duration = Duration::from_secs(30);
/// First retry delay after a failed announce; doubles up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(15);
const MAX_RETRY: Duration = Duration::from_secs(30 * 60);
/// How long the `stopped` announce may take at shutdown.
const STOP_ANNOUNCE_TIMEOUT: Duration = Duration::from_secs(3);
/// Hash failures after which a peer is dropped and its address banned for this torrent.
const MAX_HASH_FAILS: u32 = 3;
/// Do not redial an address that failed within this time.
const REDIAL_BACKOFF: Duration = Duration::from_secs(60);

/// Session-wide context every torrent shares.
#[derive(Debug)]
pub struct SessionCtx {
    /// Our peer id (BEP 3).
    pub peer_id: PeerId,
    /// Port we accept peers on (sent to trackers and in the BEP 10 handshake).
    pub listen_port: u16,
    /// Random `key` for announces (BEP 7 §key), stable for the session.
    pub tracker_key: u32,
    /// One HTTP client for every tracker.
    pub http: HttpTracker,
    /// The session config.
    pub config: Config,
    /// Disk/hash threads.
    pub pool: Arc<DiskPool>,
    /// Session-wide rate limits.
    pub limits: Arc<Limits>,
    /// Source of unique peer keys.
    pub next_peer_key: AtomicU64,
    /// Signalled when a torrent changes state, so the session publishes at once instead
    /// of at its next tick (a headless download exits the moment it completes).
    pub state_changed: tokio::sync::Notify,
}

impl SessionCtx {
    /// Context for a session listening on `listen_port`: fresh peer id and tracker key,
    /// disk threads and rate limits from `config`.
    pub fn new(config: Config, listen_port: u16) -> Arc<SessionCtx> {
        let limits = Arc::new(Limits {
            download: RateLimiter::new(config.download_rate_limit),
            upload: RateLimiter::new(config.upload_rate_limit),
        });
        Arc::new(SessionCtx {
            peer_id: PeerId::generate(),
            listen_port,
            tracker_key: rand::random(),
            http: HttpTracker::new(),
            pool: Arc::new(DiskPool::new(config.disk_thread_count(), DISK_QUEUE_BYTES)),
            limits,
            config,
            next_peer_key: AtomicU64::new(1),
            state_changed: tokio::sync::Notify::new(),
        })
    }
}

/// Bytes of received blocks allowed to wait for disk, session-wide.
const DISK_QUEUE_BYTES: usize = 4 << 20;

/// Session-wide download and upload limits.
#[derive(Debug)]
pub struct Limits {
    /// Payload + protocol bytes read from peers, bytes/s (0 = unlimited).
    pub download: RateLimiter,
    /// Payload bytes sent to peers, bytes/s (0 = unlimited).
    pub upload: RateLimiter,
}

/// Byte counters of a torrent since it was added (payload only).
#[derive(Debug, Default)]
pub struct TorrentStats {
    /// Payload bytes received (including duplicates and failed pieces).
    pub downloaded: AtomicU64,
    /// Payload bytes sent.
    pub uploaded: AtomicU64,
    /// Payload bytes received but not used (duplicates, failed pieces).
    pub wasted: AtomicU64,
}

/// User-visible status of a torrent.
#[derive(Debug, Clone, Default)]
pub struct Status {
    /// Life-cycle state.
    pub state: TorrentState,
    /// Last tracker warning/error or storage error.
    pub message: Option<String>,
    /// Seeders in the swarm per the tracker.
    pub swarm_seeds: Option<u32>,
    /// Leechers in the swarm per the tracker.
    pub swarm_leechers: Option<u32>,
}

/// A connected peer as the torrent task and publisher see it.
#[derive(Debug, Clone)]
pub struct PeerHandle {
    /// Shared counters and flags.
    pub info: Arc<PeerInfo>,
    /// Orders to its task.
    pub ctrl: mpsc::UnboundedSender<PeerCtrl>,
}

/// Events from peer tasks and helpers to the torrent task.
#[derive(Debug)]
pub enum TorrentEvent {
    /// A peer became interested or not interested: re-run the choker.
    InterestChanged,
    /// `block` arrived from `except` while also requested elsewhere (endgame).
    CancelElsewhere {
        /// The block.
        block: BlockRef,
        /// The peer that delivered it.
        except: PeerKey,
    },
    /// Reading for an upload failed.
    StorageError(String),
    /// An outgoing connection attempt finished (handshake done or failed).
    DialDone {
        /// The address dialled.
        addr: SocketAddr,
        /// The failure, if any.
        error: Option<String>,
        /// The address turned out to be ourselves (never dial it again).
        is_self: bool,
    },
    /// A peer connection ended.
    PeerGone {
        /// Its key.
        key: PeerKey,
        /// Its address.
        addr: SocketAddr,
        /// Why, if it was an error.
        error: Option<String>,
    },
}

/// Orders from the session to a torrent task.
#[derive(Debug)]
pub enum TorrentCtrl {
    /// Disconnect peers, announce `stopped`, stay paused.
    Pause,
    /// Start again.
    Resume,
    /// An incoming connection whose handshake prefix named this torrent.
    Incoming {
        /// The socket, 48 handshake bytes already read.
        stream: TcpStream,
        /// Their reserved bytes.
        reserved: [u8; 8],
    },
    /// Stop for good: announce `stopped`, then reply.
    Stop(oneshot::Sender<()>),
}

/// The shared part of a torrent.
#[derive(Debug)]
pub struct Torrent {
    /// Session-local id.
    pub id: TorrentId,
    /// Parsed metainfo.
    pub meta: Arc<Metainfo>,
    /// Byte counters.
    pub stats: TorrentStats,
    /// Status for the UI.
    pub status: Mutex<Status>,
    /// Connected peers.
    pub peers: Mutex<HashMap<PeerKey, PeerHandle>>,
    /// Events to the torrent task.
    pub events: mpsc::UnboundedSender<TorrentEvent>,
    /// Session-wide limits.
    pub limits: Arc<Limits>,
    /// Pieces hashed so far while checking.
    pub check_progress: AtomicU32,
    /// Keep seeding after completion.
    pub seed: bool,
    ctx: Arc<SessionCtx>,
    disk: Arc<TorrentDisk>,
    picker: Mutex<Picker>,
    accepting: AtomicBool,
    cancel_check: AtomicBool,
}

impl Torrent {
    /// Info hash (v1).
    pub fn info_hash(&self) -> InfoHash {
        self.meta.info_hash
    }

    /// Number of pieces.
    pub fn piece_count(&self) -> u32 {
        self.meta.piece_count()
    }

    /// Size of piece `p`, bytes.
    pub fn piece_size(&self, p: u32) -> u32 {
        self.meta.piece_size(p)
    }

    /// Our listen port.
    pub fn listen_port(&self) -> u16 {
        self.ctx.listen_port
    }

    /// Lock the picker. Never hold the guard across an await point.
    pub fn picker(&self) -> MutexGuard<'_, Picker> {
        self.picker.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A copy of our verified pieces.
    pub fn have_snapshot(&self) -> Bitfield {
        self.picker().have().clone()
    }

    /// Whether piece `p` is verified.
    pub fn have_piece(&self, p: u32) -> bool {
        self.picker().have().get(p)
    }

    /// Queue a received block for writing and hashing (waits while the disk queue is full).
    pub async fn write_block(&self, piece: u32, begin: u32, data: Bytes) {
        self.ctx.pool.write(&self.disk, piece, begin, data).await;
    }

    /// Read blocks for uploading; `reply` gets them on a disk thread.
    pub fn read_blocks(&self, blocks: Vec<BlockRef>, reply: ReadReply) {
        self.ctx.pool.read(&self.disk, blocks, reply);
    }

    fn set_state(&self, state: TorrentState) {
        let changed = {
            let mut st = self.status.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut st.state, state) != state
        };
        if changed {
            self.ctx.state_changed.notify_one();
        }
    }

    fn state(&self) -> TorrentState {
        self.status.lock().unwrap_or_else(|e| e.into_inner()).state
    }

    fn set_message(&self, msg: Option<String>) {
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .message = msg;
    }

    fn broadcast(&self, c: &PeerCtrl) {
        for p in self
            .peers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            let _ = p.ctrl.send(c.clone());
        }
    }

    fn send_to(&self, key: PeerKey, c: PeerCtrl) {
        if let Some(p) = self
            .peers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            let _ = p.ctrl.send(c);
        }
    }

    /// Bytes still to download, for announces and ETA.
    pub fn bytes_left(&self) -> u64 {
        self.picker().bytes_left()
    }

    /// Register an established connection and run it to the end.
    async fn run_peer(
        self: Arc<Self>,
        stream: TcpStream,
        remote: Handshake,
        addr: SocketAddr,
        outgoing: bool,
    ) {
        if !self.accepting.load(Ordering::Relaxed) {
            return;
        }
        let key = self.ctx.next_peer_key.fetch_add(1, Ordering::Relaxed);
        let info = Arc::new(PeerInfo::new(addr, outgoing, remote.peer_id));
        let (ctrl_tx, ctrl_rx) = mpsc::unbounded_channel();
        {
            let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
            let max = self.ctx.config.max_peers_per_torrent as usize;
            if peers.len() >= max || peers.values().any(|p| p.info.peer_id == remote.peer_id) {
                return;
            }
            peers.insert(
                key,
                PeerHandle {
                    info: info.clone(),
                    ctrl: ctrl_tx,
                },
            );
        }
        tracing::debug!(torrent = %self.meta.name, %addr, outgoing, "peer connected");
        let r = peer_task::run(self.clone(), key, stream, info, remote, ctrl_rx).await;
        self.peers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        let error = r.err().map(|e| e.to_string());
        if let Some(e) = &error {
            tracing::debug!(torrent = %self.meta.name, %addr, "peer closed: {e}");
        }
        let _ = self
            .events
            .send(TorrentEvent::PeerGone { key, addr, error });
    }
}

/// Everything needed to add a torrent to a session.
pub struct TorrentSpawn {
    /// Session-local id.
    pub id: TorrentId,
    /// Parsed metainfo.
    pub meta: Arc<Metainfo>,
    /// Directory the payload goes into.
    pub download_dir: std::path::PathBuf,
    /// Start paused.
    pub paused: bool,
    /// Keep seeding after completion.
    pub seed: bool,
}

/// A started torrent: its shared state, the sender for its orders, and its task.
pub type Spawned = (
    Arc<Torrent>,
    mpsc::Sender<TorrentCtrl>,
    tokio::task::JoinHandle<()>,
);

/// Build a torrent's shared state and start its task. Returns the shared state and the
/// sender for [`TorrentCtrl`] orders.
///
/// # Errors
/// A storage layout error (unsafe paths are refused again here, defence in depth).
pub fn spawn(ctx: Arc<SessionCtx>, spec: TorrentSpawn) -> Result<Spawned, StorageError> {
    let meta = spec.meta;
    let storage = Storage::new(
        &spec.download_dir,
        meta.files
            .iter()
            .map(|f| (f.path.clone(), f.offset, f.length, f.pad)),
        meta.total_length,
    )?;
    let (disk_tx, disk_rx) = mpsc::unbounded_channel();
    let (ev_tx, ev_rx) = mpsc::unbounded_channel();
    let (ctrl_tx, ctrl_rx) = mpsc::channel(64);
    let n = meta.piece_count();
    let last = meta.piece_size(n.saturating_sub(1));
    let disk = Arc::new(TorrentDisk {
        key: spec.id.0,
        storage,
        piece_length: meta.piece_length,
        last_piece_length: last,
        hashes: meta.piece_hashes.clone(),
        events: disk_tx,
    });
    let t = Arc::new(Torrent {
        id: spec.id,
        stats: TorrentStats::default(),
        status: Mutex::new(Status::default()),
        peers: Mutex::new(HashMap::new()),
        events: ev_tx,
        limits: ctx.limits.clone(),
        check_progress: AtomicU32::new(0),
        seed: spec.seed,
        picker: Mutex::new(Picker::new(n, meta.piece_length, last, Bitfield::new(n))),
        accepting: AtomicBool::new(false),
        cancel_check: AtomicBool::new(false),
        disk,
        meta,
        ctx,
    });
    let task = TorrentTask {
        t: t.clone(),
        trackers: Some(Trackers::new(&t.meta.trackers)),
        announce_tx: None,
        next_announce: None,
        next_event: Some(AnnounceEvent::Started),
        retry: FIRST_RETRY,
        last_ok_tracker: false,
        completed_pending: false,
        candidates: VecDeque::new(),
        known: HashSet::new(),
        failed: HashMap::new(),
        banned: HashSet::new(),
        hash_fails: HashMap::new(),
        seeds: HashSet::new(),
        dialing: 0,
        paused: spec.paused,
        last_choke: Instant::now(),
        last_optimistic: Instant::now() - OPTIMISTIC_INTERVAL,
        optimistic: None,
        rate_marks: HashMap::new(),
    };
    let handle = tokio::spawn(task.run(ctrl_rx, ev_rx, disk_rx));
    Ok((t, ctrl_tx, handle))
}

type AnnounceResult = (
    Trackers,
    Result<AnnounceResponse, String>,
    Option<AnnounceEvent>,
);

struct TorrentTask {
    t: Arc<Torrent>,
    /// `None` while an announce is in flight (it owns the tracker list).
    trackers: Option<Trackers>,
    announce_tx: Option<mpsc::UnboundedSender<AnnounceResult>>,
    next_announce: Option<Instant>,
    next_event: Option<AnnounceEvent>,
    retry: Duration,
    /// Some tracker accepted an announce from us (so `stopped` is owed).
    last_ok_tracker: bool,
    /// Download completed but `completed` not yet acknowledged by a tracker.
    completed_pending: bool,
    candidates: VecDeque<SocketAddr>,
    known: HashSet<SocketAddr>,
    failed: HashMap<SocketAddr, Instant>,
    banned: HashSet<std::net::IpAddr>,
    hash_fails: HashMap<PeerKey, u32>,
    /// Addresses of peers found to be seeds (not dialled while we seed too).
    seeds: HashSet<SocketAddr>,
    dialing: usize,
    paused: bool,
    last_choke: Instant,
    last_optimistic: Instant,
    optimistic: Option<PeerKey>,
    /// Per peer: (downloaded, uploaded) at the last choke round, for rates.
    rate_marks: HashMap<PeerKey, (u64, u64)>,
}

impl TorrentTask {
    async fn run(
        mut self,
        mut ctrl: mpsc::Receiver<TorrentCtrl>,
        mut events: mpsc::UnboundedReceiver<TorrentEvent>,
        mut disk: mpsc::UnboundedReceiver<DiskEvent>,
    ) {
        // 1. files and existing data
        if let Err(stop) = self.prepare(&mut ctrl).await {
            if let Some(reply) = stop {
                let _ = reply.send(());
            }
            return;
        }
        let (announce_tx, mut announce_rx) = mpsc::unbounded_channel();
        self.announce_tx = Some(announce_tx);
        if !self.paused {
            self.start();
        } else {
            self.t.set_state(TorrentState::Paused);
        }
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                c = ctrl.recv() => match c {
                    None => { self.stop(&mut announce_rx).await; return; }
                    Some(TorrentCtrl::Stop(reply)) => {
                        self.stop(&mut announce_rx).await;
                        let _ = reply.send(());
                        return;
                    }
                    Some(TorrentCtrl::Pause) => self.pause(),
                    Some(TorrentCtrl::Resume) => self.resume(),
                    Some(TorrentCtrl::Incoming { stream, reserved }) => self.incoming(stream, reserved),
                },
                Some(ev) = events.recv() => self.on_event(ev),
                Some(d) = disk.recv() => self.on_disk(d),
                Some(r) = announce_rx.recv() => self.on_announce(r),
                _ = tick.tick() => self.on_tick(),
            }
        }
    }

    /// Create files and check existing data. `Err(Some(reply))`: stopped meanwhile.
    async fn prepare(
        &mut self,
        ctrl: &mut mpsc::Receiver<TorrentCtrl>,
    ) -> Result<(), Option<oneshot::Sender<()>>> {
        self.t.set_state(TorrentState::Checking);
        let t = self.t.clone();
        let work = tokio::task::spawn_blocking(move || -> Result<Bitfield, StorageError> {
            let n = t.piece_count();
            let have = if t.disk.storage.any_data_present() {
                let threads = t.ctx.config.disk_thread_count();
                check::check_pieces(
                    &t.disk.storage,
                    t.meta.geometry(),
                    &t.disk.hashes,
                    threads,
                    &t.check_progress,
                    &t.cancel_check,
                )
            } else {
                Bitfield::new(n)
            };
            t.disk.storage.create_files()?;
            Ok(have)
        });
        tokio::pin!(work);
        let result = loop {
            tokio::select! {
                r = &mut work => break r,
                c = ctrl.recv() => match c {
                    None => { self.t.cancel_check.store(true, Ordering::Relaxed); return Err(None); }
                    Some(TorrentCtrl::Stop(reply)) => {
                        self.t.cancel_check.store(true, Ordering::Relaxed);
                        let _ = (&mut work).await;
                        return Err(Some(reply));
                    }
                    Some(TorrentCtrl::Pause) => self.paused = true,
                    Some(TorrentCtrl::Resume) => self.paused = false,
                    Some(TorrentCtrl::Incoming { .. }) => {}
                },
            }
        };
        let have = match result {
            Ok(Ok(have)) => have,
            Ok(Err(e)) => {
                self.fail(format!("storage: {e}"));
                return self.wait_for_stop(ctrl).await;
            }
            Err(e) => {
                self.fail(format!("check failed: {e}"));
                return self.wait_for_stop(ctrl).await;
            }
        };
        let n = self.t.piece_count();
        let complete = have.is_full();
        *self.t.picker() = Picker::new(
            n,
            self.t.disk.piece_length,
            self.t.disk.last_piece_length,
            have,
        );
        tracing::info!(torrent = %self.t.meta.name, complete, "checked existing data");
        Ok(())
    }

    async fn wait_for_stop(
        &mut self,
        ctrl: &mut mpsc::Receiver<TorrentCtrl>,
    ) -> Result<(), Option<oneshot::Sender<()>>> {
        loop {
            match ctrl.recv().await {
                None => return Err(None),
                Some(TorrentCtrl::Stop(reply)) => return Err(Some(reply)),
                Some(_) => {}
            }
        }
    }

    fn fail(&mut self, msg: String) {
        tracing::error!(torrent = %self.t.meta.name, "{msg}");
        self.t.set_message(Some(msg));
        self.t.set_state(TorrentState::Error);
        self.t.accepting.store(false, Ordering::Relaxed);
        self.t.broadcast(&PeerCtrl::Disconnect);
    }

    fn running_state(&self) -> TorrentState {
        if self.t.picker().is_complete() {
            if self.t.seed {
                TorrentState::Seeding
            } else {
                TorrentState::Completed
            }
        } else {
            TorrentState::Downloading
        }
    }

    fn start(&mut self) {
        let state = self.running_state();
        self.t.set_state(state);
        self.paused = false;
        if state == TorrentState::Completed {
            // nothing to do: done, and not seeding
            self.t.accepting.store(false, Ordering::Relaxed);
            return;
        }
        self.t.accepting.store(true, Ordering::Relaxed);
        self.next_event = Some(AnnounceEvent::Started);
        self.next_announce = Some(Instant::now());
        if self.t.meta.trackers.is_empty() {
            self.t
                .set_message(Some("no trackers: waiting for incoming peers".into()));
        }
    }

    fn pause(&mut self) {
        if self.paused || self.t.state() == TorrentState::Error {
            return;
        }
        self.paused = true;
        self.t.accepting.store(false, Ordering::Relaxed);
        self.t.broadcast(&PeerCtrl::Disconnect);
        self.t.set_state(TorrentState::Paused);
        self.candidates.clear();
        self.known.clear();
        self.next_announce = None;
        if self.last_ok_tracker {
            self.announce(Some(AnnounceEvent::Stopped));
            self.last_ok_tracker = false;
        }
    }

    fn resume(&mut self) {
        if !self.paused || self.t.state() == TorrentState::Error {
            return;
        }
        self.start();
    }

    async fn stop(&mut self, announce_rx: &mut mpsc::UnboundedReceiver<AnnounceResult>) {
        self.t.accepting.store(false, Ordering::Relaxed);
        self.t.broadcast(&PeerCtrl::Disconnect);
        // let an announce in flight (e.g. `completed`) finish first
        if self.trackers.is_none()
            && let Ok(Some(r)) =
                tokio::time::timeout(STOP_ANNOUNCE_TIMEOUT, announce_rx.recv()).await
        {
            self.on_announce(r);
        }
        let Some(mut trackers) = self.trackers.take() else {
            return;
        };
        if self.completed_pending {
            let req = self.request(Some(AnnounceEvent::Completed));
            if let Ok(Ok(_)) = tokio::time::timeout(
                STOP_ANNOUNCE_TIMEOUT,
                trackers.announce(&self.t.ctx.http, &req),
            )
            .await
            {
                self.last_ok_tracker = true;
            }
        }
        if self.last_ok_tracker {
            let req = self.request(Some(AnnounceEvent::Stopped));
            let _ = tokio::time::timeout(
                STOP_ANNOUNCE_TIMEOUT,
                trackers.announce(&self.t.ctx.http, &req),
            )
            .await;
        }
    }

    fn request(&self, event: Option<AnnounceEvent>) -> AnnounceRequest {
        let left = self.t.bytes_left();
        AnnounceRequest {
            info_hash: self.t.info_hash(),
            peer_id: self.t.ctx.peer_id,
            port: self.t.ctx.listen_port,
            uploaded: self.t.stats.uploaded.load(Ordering::Relaxed),
            downloaded: self.t.stats.downloaded.load(Ordering::Relaxed),
            left,
            event,
            numwant: if event == Some(AnnounceEvent::Stopped) {
                Some(0)
            } else {
                Some(self.t.ctx.config.numwant)
            },
            key: self.t.ctx.tracker_key,
            tracker_id: None,
        }
    }

    /// Start an announce in the background (one at a time).
    fn announce(&mut self, event: Option<AnnounceEvent>) {
        let Some(mut trackers) = self.trackers.take() else {
            return;
        };
        if trackers.is_empty() {
            self.trackers = Some(trackers);
            return;
        }
        let Some(tx) = self.announce_tx.clone() else {
            self.trackers = Some(trackers);
            return;
        };
        let req = self.request(event);
        let http = self.t.ctx.http.clone();
        tokio::spawn(async move {
            let r = trackers.announce(&http, &req).await;
            let _ = tx.send((trackers, r, event));
        });
    }

    fn on_announce(&mut self, (trackers, result, event): AnnounceResult) {
        self.trackers = Some(trackers);
        match result {
            Ok(resp) => {
                if event == Some(AnnounceEvent::Stopped) {
                    return;
                }
                self.last_ok_tracker = true;
                if event == Some(AnnounceEvent::Completed) {
                    self.completed_pending = false;
                }
                self.retry = FIRST_RETRY;
                let interval = Duration::from_secs(u64::from(resp.regular_interval()));
                if !self.paused {
                    self.next_announce = Some(Instant::now() + interval);
                }
                {
                    let mut st = self.t.status.lock().unwrap_or_else(|e| e.into_inner());
                    st.swarm_seeds = resp.complete;
                    st.swarm_leechers = resp.incomplete;
                    st.message = resp.warning.map(|w| format!("tracker warning: {w}"));
                }
                tracing::debug!(torrent = %self.t.meta.name, peers = resp.peers.len(), "announce ok");
                for addr in resp.peers {
                    if self.known.insert(addr) {
                        self.candidates.push_back(addr);
                    }
                }
                self.connect_more();
            }
            Err(e) => {
                if event == Some(AnnounceEvent::Stopped) {
                    return;
                }
                tracing::warn!(torrent = %self.t.meta.name, "announce failed: {e}");
                self.t.set_message(Some(format!("tracker: {e}")));
                // the event was not delivered: send it again with the retry
                if event != Some(AnnounceEvent::Completed) {
                    self.next_event = event.or(self.next_event);
                }
                if !self.paused {
                    self.next_announce = Some(Instant::now() + self.retry);
                }
                self.retry = (self.retry * 2).min(MAX_RETRY);
            }
        }
    }

    fn on_tick(&mut self) {
        if self.paused || !self.t.accepting.load(Ordering::Relaxed) {
            return;
        }
        if let Some(at) = self.next_announce
            && Instant::now() >= at
            && self.trackers.is_some()
        {
            self.next_announce = None;
            let event = if self.completed_pending {
                Some(AnnounceEvent::Completed)
            } else {
                self.next_event.take()
            };
            self.announce(event);
        }
        if self.last_choke.elapsed() >= CHOKE_INTERVAL {
            self.choke_round();
        }
        self.connect_more();
    }

    fn connect_more(&mut self) {
        if self.paused || !self.t.accepting.load(Ordering::Relaxed) {
            return;
        }
        let seeding = match self.running_state() {
            TorrentState::Downloading => false,
            TorrentState::Seeding => true,
            _ => return,
        };
        let max = self.t.ctx.config.max_peers_per_torrent as usize;
        let (connected, addrs): (usize, HashSet<SocketAddr>) = {
            let peers = self.t.peers.lock().unwrap_or_else(|e| e.into_inner());
            (peers.len(), peers.values().map(|p| p.info.addr).collect())
        };
        let mut tries = self.candidates.len();
        while connected + self.dialing < max && tries > 0 {
            tries -= 1;
            let Some(addr) = self.candidates.pop_front() else {
                break;
            };
            if addrs.contains(&addr)
                || self.banned.contains(&addr.ip())
                || (seeding && self.seeds.contains(&addr))
            {
                continue; // connected, banned, or a seed while we seed
            }
            if self
                .failed
                .get(&addr)
                .is_some_and(|at| at.elapsed() < REDIAL_BACKOFF)
            {
                self.candidates.push_back(addr);
                continue;
            }
            self.dial(addr);
        }
    }

    fn dial(&mut self, addr: SocketAddr) {
        self.dialing += 1;
        let t = self.t.clone();
        tokio::spawn(async move {
            let ours = Handshake::ours(t.info_hash(), t.ctx.peer_id);
            match peer_task::connect(addr, ours).await {
                Ok((stream, theirs)) => {
                    let _ = t.events.send(TorrentEvent::DialDone {
                        addr,
                        error: None,
                        is_self: false,
                    });
                    t.run_peer(stream, theirs, addr, true).await;
                }
                Err(e) => {
                    let _ = t.events.send(TorrentEvent::DialDone {
                        addr,
                        is_self: matches!(e, peer_task::PeerError::SelfConnection),
                        error: Some(e.to_string()),
                    });
                }
            }
        });
    }

    fn incoming(&mut self, mut stream: TcpStream, reserved: [u8; 8]) {
        if self.paused || !self.t.accepting.load(Ordering::Relaxed) {
            return;
        }
        let Ok(addr) = stream.peer_addr() else { return };
        if self.banned.contains(&addr.ip()) {
            return;
        }
        let t = self.t.clone();
        tokio::spawn(async move {
            let ours = Handshake::ours(t.info_hash(), t.ctx.peer_id);
            match peer_task::accept(&mut stream, reserved, ours).await {
                Ok(theirs) => t.run_peer(stream, theirs, addr, false).await,
                Err(e) => tracing::debug!(%addr, "incoming handshake failed: {e}"),
            }
        });
    }

    fn on_event(&mut self, ev: TorrentEvent) {
        match ev {
            TorrentEvent::InterestChanged => self.choke_round(),
            TorrentEvent::CancelElsewhere { block, except } => {
                for (k, p) in self
                    .t
                    .peers
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                {
                    if *k != except {
                        let _ = p.ctrl.send(PeerCtrl::Cancel(block));
                    }
                }
            }
            TorrentEvent::StorageError(e) => self.fail(format!("storage: {e}")),
            TorrentEvent::DialDone {
                addr,
                error,
                is_self,
            } => {
                self.dialing = self.dialing.saturating_sub(1);
                if is_self {
                    // our own listen address, as a tracker sees it: stays in `known` so
                    // it is never queued again
                    tracing::info!(%addr, "that address is ourselves; not dialling it again");
                } else if let Some(e) = error {
                    tracing::debug!(%addr, "dial failed: {e}");
                    self.failed.insert(addr, Instant::now());
                    self.candidates.push_back(addr);
                }
            }
            TorrentEvent::PeerGone { key, addr, .. } => {
                self.hash_fails.remove(&key);
                self.rate_marks.remove(&key);
                if self.optimistic == Some(key) {
                    self.optimistic = None;
                }
                if !self.banned.contains(&addr.ip()) && self.known.contains(&addr) {
                    self.failed.insert(addr, Instant::now());
                    self.candidates.push_back(addr);
                }
                // a slot may have opened
                self.choke_round();
                self.connect_more();
            }
        }
    }

    fn on_disk(&mut self, ev: DiskEvent) {
        match ev {
            DiskEvent::PieceVerified(p) => {
                let complete = {
                    let mut pk = self.t.picker();
                    pk.piece_verified(p);
                    pk.is_complete()
                };
                self.t.broadcast(&PeerCtrl::Have(p));
                if complete {
                    self.on_complete();
                }
            }
            DiskEvent::PieceFailed(p) => {
                let peers = self.t.picker().piece_failed(p);
                let size = u64::from(self.t.piece_size(p));
                self.t.stats.wasted.fetch_add(size, Ordering::Relaxed);
                tracing::warn!(torrent = %self.t.meta.name, piece = p, "piece failed its hash check; fetching it again");
                // peers we lost interest in while the piece was being hashed have it again
                self.t.broadcast(&PeerCtrl::CheckInterest);
                for key in peers {
                    let n = self.hash_fails.entry(key).or_default();
                    *n += 1;
                    if *n >= MAX_HASH_FAILS {
                        let addr = self
                            .t
                            .peers
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get(&key)
                            .map(|h| h.info.addr);
                        if let Some(addr) = addr {
                            tracing::warn!(%addr, "banning peer after {n} pieces failed their hash check");
                            self.banned.insert(addr.ip());
                        }
                        self.t.send_to(key, PeerCtrl::Disconnect);
                    }
                }
            }
            DiskEvent::Error(e) => self.fail(format!("storage: {e}")),
        }
    }

    fn on_complete(&mut self) {
        tracing::info!(torrent = %self.t.meta.name, "download complete");
        self.completed_pending = true;
        let state = self.running_state();
        self.t.set_state(state);
        self.next_announce = Some(Instant::now());
        if state == TorrentState::Completed {
            self.t.broadcast(&PeerCtrl::Disconnect);
            self.t.accepting.store(false, Ordering::Relaxed);
            // announce `completed` now (or, if an announce is in flight, when the torrent
            // stops: `completed_pending` stays set until a tracker acknowledges it);
            // `stopped` follows when the torrent is stopped
            self.next_announce = None;
            self.announce(Some(AnnounceEvent::Completed));
        } else {
            self.t.broadcast(&PeerCtrl::CheckInterest);
        }
    }

    fn choke_round(&mut self) {
        self.last_choke = Instant::now();
        let seeding = self.t.picker().is_complete();
        let n = self.t.piece_count();
        let peers: Vec<(PeerKey, PeerHandle)> = self
            .t
            .peers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, p)| (*k, p.clone()))
            .collect();
        let mut cands = Vec::with_capacity(peers.len());
        for (k, p) in &peers {
            let down = p.info.downloaded.load(Ordering::Relaxed);
            let up = p.info.uploaded.load(Ordering::Relaxed);
            let (d0, u0) = self.rate_marks.insert(*k, (down, up)).unwrap_or((down, up));
            let rate = if seeding {
                up - u0.min(up)
            } else {
                down - d0.min(down)
            };
            if seeding && p.info.pieces.load(Ordering::Relaxed) == n {
                // both sides are seeds: nothing to exchange
                self.seeds.insert(p.info.addr);
                let _ = p.ctrl.send(PeerCtrl::Disconnect);
                continue;
            }
            cands.push(Candidate {
                key: *k,
                interested: p.info.peer_interested.load(Ordering::Relaxed),
                rate,
            });
        }
        if self.last_optimistic.elapsed() >= OPTIMISTIC_INTERVAL || self.optimistic.is_none() {
            let choked: Vec<PeerKey> = cands
                .iter()
                .filter(|c| c.interested)
                .map(|c| c.key)
                .filter(|k| Some(*k) != self.optimistic)
                .collect();
            if !choked.is_empty() {
                self.optimistic = Some(choked[rand::random_range(0..choked.len())]);
                self.last_optimistic = Instant::now();
            }
        }
        let slots = self.t.ctx.config.upload_slots as usize;
        let unchoke = choker::choose(&cands, slots, self.optimistic);
        for (k, p) in &peers {
            let choking = p.info.am_choking.load(Ordering::Relaxed);
            if unchoke.contains(k) {
                if choking {
                    let _ = p.ctrl.send(PeerCtrl::Unchoke);
                }
            } else if !choking {
                let _ = p.ctrl.send(PeerCtrl::Choke);
            }
        }
    }
}
