//! What every part of the engine shares: the session context (peer id, config, limits,
//! trackers, connection counts, and [`LinkCtx`], the part peer connections see: disk pool,
//! clock, upload budget) and the events that flow back to the session task.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::{Semaphore, mpsc};

use super::link::ctx::{Limits, LinkCtx};
use super::link::message::{PeerError, PeerEvent};
use super::link::stream::PeerStream;
use crate::api::TorrentId;
use crate::config::engine::EngineConfig;
use crate::lock::MutexExt;
use crate::metainfo::InfoHash;
use crate::peer::PeerId;
use crate::peer::wire::Handshake;
use crate::storage::StorageError;
use crate::storage::disk::DiskEvent;
use crate::tracker::{AnnounceResponse, TrackerClient, TrackerError};

use super::torrent::announce::AnnounceJob;

/// Tracker announces in flight at once, session-wide.
pub const MAX_ANNOUNCES: usize = 32;
/// Incoming connections allowed to be in their handshake at once (beyond: closed at once).
pub const MAX_PENDING_INCOMING: usize = 128;
/// Addresses remembered as not answering uTP ([`SessionCtx::no_utp`]).
pub const MAX_NO_UTP: usize = 8192;

/// Incoming MSE/PE handshakes at once (each costs two 768-bit modular exponentiations);
/// beyond, a connection that starts one is closed at once. Part of the
/// [`MAX_PENDING_INCOMING`] connections.
pub const MAX_MSE_HANDSHAKES: usize = 32;

/// Connection counters kept exact by RAII: a [`ConnSlot`] decrements its counter when it is
/// dropped, on every path (error, panic, task abort), so the counts cannot drift.
#[derive(Debug, Default)]
pub struct ConnCounters {
    /// Established peer connections (all torrents).
    pub established: AtomicUsize,
    /// Outgoing connection attempts in flight.
    pub half_open: AtomicUsize,
    /// Incoming connections still in their handshake.
    pub pending_incoming: AtomicUsize,
    /// Incoming connections in their MSE/PE handshake.
    pub mse_handshakes: AtomicUsize,
}

/// Which counter a [`ConnSlot`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotKind {
    /// An established connection.
    Established,
    /// An outgoing attempt.
    HalfOpen,
    /// An incoming handshake.
    PendingIncoming,
    /// An incoming MSE/PE handshake.
    MseHandshake,
}

/// One unit of a [`ConnCounters`] counter, given back on drop.
#[derive(Debug)]
pub struct ConnSlot {
    counters: Arc<ConnCounters>,
    kind: SlotKind,
}

impl ConnCounters {
    fn counter(&self, kind: SlotKind) -> &AtomicUsize {
        match kind {
            SlotKind::Established => &self.established,
            SlotKind::HalfOpen => &self.half_open,
            SlotKind::PendingIncoming => &self.pending_incoming,
            SlotKind::MseHandshake => &self.mse_handshakes,
        }
    }

    /// Take a slot of `kind` if fewer than `max` are taken.
    pub fn try_take(self: &Arc<Self>, kind: SlotKind, max: usize) -> Option<ConnSlot> {
        let c = self.counter(kind);
        let mut cur = c.load(Ordering::Relaxed);
        loop {
            if cur >= max {
                return None;
            }
            match c.compare_exchange_weak(cur, cur + 1, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    return Some(ConnSlot {
                        counters: self.clone(),
                        kind,
                    });
                }
                Err(v) => cur = v,
            }
        }
    }

    /// Slots of `kind` taken now.
    pub fn get(&self, kind: SlotKind) -> usize {
        self.counter(kind).load(Ordering::Relaxed)
    }
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.counters
            .counter(self.kind)
            .fetch_sub(1, Ordering::AcqRel);
    }
}

/// Shared by every torrent, peer connection and helper task of a session.
#[derive(Debug)]
pub struct SessionCtx {
    /// Our peer id (BEP 3).
    pub peer_id: PeerId,
    /// Port we accept peers on (sent to trackers and in the BEP 10 handshake).
    pub listen_port: u16,
    /// Random `key` for announces (BEP 7 §key), stable for the session.
    pub tracker_key: u32,
    /// One client for every tracker, dispatching by URL scheme.
    pub trackers: TrackerClient,
    /// The engine's part of the config (never the TUI's).
    pub config: EngineConfig,
    /// Session-wide rate limits (the same `Arc` as `link.limits`).
    pub limits: Arc<Limits>,
    /// What peer connections use of the session: disk threads, clock, upload budget.
    pub link: Arc<LinkCtx>,
    /// Announces in flight at once (see [`MAX_ANNOUNCES`]).
    pub announce_slots: Arc<Semaphore>,
    /// Connection counts.
    pub conns: Arc<ConnCounters>,
    /// Source of unique peer keys and disk keys.
    pub next_key: AtomicU64,
    /// Events to the session task.
    pub events: mpsc::UnboundedSender<SessionEvent>,
    /// The DHT node (BEP 5) while it runs (started from the config, switched on and off
    /// while the session runs); the same slot as `link.dht`.
    pub dht: Arc<crate::dht::DhtSlot>,
    /// Local Service Discovery (BEP 14), when enabled and started.
    pub lsd: Option<crate::lsd::Lsd>,
    /// The uTP socket (BEP 29), when uTP is on: dials go through it.
    pub utp: Option<Arc<crate::peer::utp::UtpSocket>>,
    /// Addresses that did not answer uTP but did TCP: dialled over TCP first from then on
    /// (as libtorrent marks a peer that does not support uTP). At most
    /// [`MAX_NO_UTP`]; forgotten all at once when full.
    pub no_utp: std::sync::Mutex<std::collections::HashSet<SocketAddr>>,
    /// Runs `on_added` / `on_complete` programs (see [`super::hooks`]).
    pub hooks: super::hooks::HookRunner,
    /// The IP filter in force (none until the `ip_filter` file is read) and its count of
    /// blocked attempts; every torrent's peer book holds it too.
    pub ip_filter: Arc<super::ip_filter::Blocklist>,
    /// The HTTP client of web seeds (BEP 19), made on first use: the session's HTTP policy
    /// (user agent, connect timeout, redirect cap, proxy from the environment), kept-alive
    /// connections shared by every web seed; or why it cannot be made.
    webseed_http: std::sync::OnceLock<Result<reqwest::Client, String>>,
}

impl SessionCtx {
    /// Context for a session listening on `listen_port`: fresh peer id and tracker key, disk
    /// threads and rate limits from `config`; events go to `events`.
    pub fn new(
        config: EngineConfig,
        listen_port: u16,
        events: mpsc::UnboundedSender<SessionEvent>,
    ) -> Arc<SessionCtx> {
        SessionCtx::with_dht(config, listen_port, events, None)
    }

    /// [`SessionCtx::new`] with a running DHT node.
    pub fn with_dht(
        config: EngineConfig,
        listen_port: u16,
        events: mpsc::UnboundedSender<SessionEvent>,
        dht: Option<crate::dht::Dht>,
    ) -> Arc<SessionCtx> {
        SessionCtx::with_peer_sources(config, listen_port, events, dht, None)
    }

    /// [`SessionCtx::new`] with a running DHT node and LSD task.
    pub fn with_peer_sources(
        config: EngineConfig,
        listen_port: u16,
        events: mpsc::UnboundedSender<SessionEvent>,
        dht: Option<crate::dht::Dht>,
        lsd: Option<crate::lsd::Lsd>,
    ) -> Arc<SessionCtx> {
        SessionCtx::with_transports(config, listen_port, events, dht, lsd, None)
    }

    /// [`SessionCtx::with_peer_sources`] with the uTP socket to dial through.
    pub fn with_transports(
        config: EngineConfig,
        listen_port: u16,
        events: mpsc::UnboundedSender<SessionEvent>,
        dht: Option<crate::dht::Dht>,
        lsd: Option<crate::lsd::Lsd>,
        utp: Option<Arc<crate::peer::utp::UtpSocket>>,
    ) -> Arc<SessionCtx> {
        let limits = Arc::new(Limits::new(
            config.download_rate_limit,
            config.upload_rate_limit,
        ));
        let peer_events = events.clone();
        let dht = Arc::new(crate::dht::DhtSlot::new(dht));
        let link = Arc::new(LinkCtx::new(
            listen_port,
            config.pex,
            config.disk_thread_count(),
            limits.clone(),
            dht.clone(),
            Box::new(move |torrent, key, event| {
                let _ = peer_events.send(SessionEvent::Peer {
                    torrent,
                    key,
                    event,
                });
            }),
        ));
        let hooks = super::hooks::HookRunner::new(events.clone(), config.hook_timeout);
        // with a filter configured, nobody is dialled or accepted until it is read
        let ip_filter = Arc::new(if config.ip_filter.is_some() {
            super::ip_filter::Blocklist::pending_first_read()
        } else {
            super::ip_filter::Blocklist::default()
        });
        Arc::new(SessionCtx {
            peer_id: PeerId::generate(),
            hooks,
            listen_port,
            tracker_key: rand::random(),
            trackers: TrackerClient::new(),
            limits,
            link,
            announce_slots: Arc::new(Semaphore::new(MAX_ANNOUNCES)),
            conns: Arc::new(ConnCounters::default()),
            next_key: AtomicU64::new(1),
            events,
            config,
            dht,
            lsd,
            utp,
            no_utp: Default::default(),
            ip_filter,
            webseed_http: std::sync::OnceLock::new(),
        })
    }

    /// The transports to dial `addr` with, in order: the configured ones, TCP first for an
    /// address that answered only TCP before.
    pub fn dial_order(&self, addr: SocketAddr) -> Vec<crate::config::engine::TransportKind> {
        use crate::config::engine::TransportKind;
        let mut order = self.config.peer.transports.clone();
        if order.first() == Some(&TransportKind::Utp)
            && order.len() > 1
            && self.no_utp.locked().contains(&addr)
        {
            order.reverse();
        }
        order
    }

    /// A dial to `addr` that preferred uTP went through over TCP.
    pub fn learnt_no_utp(&self, addr: SocketAddr) {
        let mut set = self.no_utp.locked();
        if set.len() >= MAX_NO_UTP {
            set.clear();
        }
        set.insert(addr);
    }

    /// A fresh key, unique in the session (peer keys, disk keys).
    pub fn key(&self) -> u64 {
        self.next_key.fetch_add(1, Ordering::Relaxed)
    }

    /// The HTTP client of web seeds (made on the first call).
    ///
    /// # Errors
    /// The client cannot be made (TLS set-up): why.
    pub fn webseed_client(&self) -> Result<reqwest::Client, String> {
        self.webseed_http
            .get_or_init(|| {
                // no total timeout: a range of several MiB over a slow link takes what it
                // takes; the minimum rate ([webseeds] min_rate) catches a stalled server
                crate::tracker::http::client_builder(
                    crate::tracker::http::DEFAULT_CONNECT_TIMEOUT,
                    std::time::Duration::from_secs(7 * 24 * 3600),
                )
                .build()
                .map_err(|e| crate::tracker::http::error_chain(&e))
            })
            .clone()
    }

    /// Send an event to the session task (dropped if the session is gone).
    pub fn send(&self, ev: SessionEvent) {
        let _ = self.events.send(ev);
    }
}

/// The reply channel of an add: the new torrent's id or why it was refused.
pub type AddReply = tokio::sync::oneshot::Sender<Result<TorrentId, crate::api::AddError>>;

/// Events to the session task.
#[derive(Debug)]
pub enum SessionEvent {
    /// An `on_added` / `on_complete` program ended (or could not start): one line for
    /// the torrent's log.
    HookDone {
        /// The torrent it ran for (it may have been removed since).
        torrent: TorrentId,
        /// Info for exit code 0, Warn otherwise.
        level: crate::api::EventLevel,
        /// How it ended and the tail of its stderr, made safe for a terminal.
        message: String,
    },
    /// A peer connection of `torrent`.
    Peer {
        /// The torrent.
        torrent: TorrentId,
        /// The connection.
        key: u64,
        /// What happened.
        event: PeerEvent,
    },
    /// A disk worker's result for the storage instance `disk_key` of `torrent`.
    Disk {
        /// The torrent.
        torrent: TorrentId,
        /// Which opening of its storage (results of an older one are ignored).
        disk_key: u64,
        /// The result.
        event: DiskEvent,
    },
    /// A scrape (BEP 48 / BEP 15) of `url` for `torrent` returned.
    Scraped {
        /// The torrent.
        torrent: TorrentId,
        /// The tracker's announce URL.
        url: String,
        /// Its counts, or why not.
        result: Result<crate::tracker::ScrapeStats, crate::tracker::TrackerError>,
    },
    /// An announce returned.
    Announced {
        /// The torrent.
        torrent: TorrentId,
        /// What was sent.
        job: AnnounceJob,
        /// The answer.
        result: Result<AnnounceResponse, TrackerError>,
    },
    /// A check of existing data finished (`check_key` tells which check).
    Checked {
        /// The torrent.
        torrent: TorrentId,
        /// Which check.
        check_key: u64,
        /// What the check found, or why it could not run.
        result: Result<
            (
                crate::storage::check::CheckReport,
                Vec<crate::state::FileStat>,
            ),
            StorageError,
        >,
    },
    /// A handshake completed (either direction): admit the peer or drop it.
    Handshaken {
        /// The torrent, by info hash.
        info_hash: InfoHash,
        /// Remote address.
        addr: SocketAddr,
        /// We dialled it.
        outgoing: bool,
        /// Their handshake.
        remote: Handshake,
        /// The stream, handshake done.
        stream: PeerStream,
    },
    /// An outgoing attempt of `torrent` to `addr` failed before the handshake completed.
    DialFailed {
        /// The torrent.
        torrent: TorrentId,
        /// The address.
        addr: SocketAddr,
        /// The address is ourselves.
        is_self: bool,
        /// Why.
        error: PeerError,
    },
    /// A restored torrent's resume data was checked against its files.
    Validated {
        /// The torrent.
        torrent: TorrentId,
        /// Its files are as recorded: its verified pieces count without a check.
        trusted: bool,
        /// The record says paused.
        paused: bool,
        /// Why not trusted.
        why: String,
        /// A file that holds verified pieces is missing or too short (looked at only for
        /// a torrent that starts now): it goes to Error with this, keeping its pieces.
        missing: Option<crate::api::TorrentError>,
    },
    /// A checkpoint of the session state was written (or failed).
    Checkpointed {
        /// Success, or why it failed.
        result: Result<(), String>,
        /// File stats measured for torrents whose files were synced.
        stats: Vec<(TorrentId, Vec<crate::state::FileStat>)>,
        /// Torrents whose records were in it.
        ids: Vec<TorrentId>,
        /// The session rate limits were in it.
        limits: bool,
    },
    /// Moving a torrent's files ended: the new folder, or why it failed.
    Moved {
        /// The torrent.
        torrent: TorrentId,
        /// Where the files are now, or the error (they stayed where they were).
        result: Result<std::path::PathBuf, String>,
    },
    /// A DHT lookup of `torrent` found peers (filtered and deduplicated per lookup).
    DhtPeers {
        /// The torrent.
        torrent: TorrentId,
        /// The addresses.
        peers: Vec<SocketAddr>,
    },
    /// Local Service Discovery (BEP 14) heard `peer` announce `info_hash`, one of the
    /// info hashes we announce (sender on the local network, port not 0).
    LsdPeer {
        /// The torrent's info hash.
        info_hash: InfoHash,
        /// The sender's IP with the announced TCP port.
        peer: SocketAddr,
    },
    /// The .torrent file of an add by URL was fetched (or could not be).
    Fetched {
        /// The add as asked, its source the URL.
        request: crate::api::AddRequest,
        /// Where the answer goes.
        reply: Option<AddReply>,
        /// The body or magnet link, or why nothing usable came back.
        result: Result<crate::fetch::Fetched, crate::fetch::FetchError>,
    },
    /// A torrent of a file or folder was made and written (or could not be).
    Created {
        /// The add as asked, its source the file or folder.
        request: crate::api::AddRequest,
        /// Where the answer goes.
        reply: Option<AddReply>,
        /// The torrent's bytes and where they were written, or why not.
        result: Result<(Vec<u8>, std::path::PathBuf), String>,
    },
    /// A look at the IP filter file ended (unchanged, read, or unreadable).
    IpFilter(super::ip_filter::Reload),
    /// A DHT node switched on while the session runs has started (`None`: it could not;
    /// the reason is in the log).
    DhtStarted(Option<crate::dht::Dht>),
    /// Delete-data of a removed torrent finished.
    Deleted {
        /// The torrent's name.
        name: String,
        /// What failed, if anything.
        error: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::engine::TransportKind::{Tcp, Utp};

    #[test]
    fn an_address_that_answered_only_tcp_is_dialled_over_tcp_first() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let ctx = SessionCtx::new(EngineConfig::default(), 0, tx);
        let a: SocketAddr = "127.0.0.2:6881".parse().unwrap();
        let b: SocketAddr = "127.0.0.3:6881".parse().unwrap();
        assert_eq!(ctx.dial_order(a), [Utp, Tcp]);
        ctx.learnt_no_utp(a);
        assert_eq!(ctx.dial_order(a), [Tcp, Utp]);
        assert_eq!(ctx.dial_order(b), [Utp, Tcp]);
        // bounded: forgotten all at once when full
        for i in 0..MAX_NO_UTP as u32 {
            ctx.learnt_no_utp(SocketAddr::from((
                std::net::Ipv4Addr::from(0x0a00_0000 + i),
                1,
            )));
        }
        assert!(ctx.no_utp.locked().len() <= MAX_NO_UTP);
    }
}
