//! The mainline DHT (BEP 5, and BEP 32 on a dual-stack socket) as a peer source: a small
//! wrapper that owns one DHT node and gives the engine bounded, filtered peer lookups, the
//! routing-table size, PORT-message hints (BEP 5 `port`) and a routing table that survives
//! restarts.
//!
//! # Which crate, and why
//! Two maintained Rust implementations were read and built (October 2026):
//!
//! - **`librqbit-dht` 9.1.0** (2026-10-29, rqbit's DHT; 20 releases since 2023, 4 in
//!   2026): async on the caller's tokio runtime (no thread of its own, no polling: it
//!   sleeps until a datagram or a timer), IPv4 *and* IPv6 routing tables on one
//!   dual-stack socket (BEP 32), any bind address and port, `get_peers` that also
//!   announces our TCP port to the nodes that gave a token, cheap table statistics, and a
//!   routing table that can be handed over at start (we build it from our own
//!   `dht.dat`). Hostile input: datagrams are read into a 16 KiB buffer, decoded by a
//!   bencode parser with a nesting limit (128), the inbound queue is bounded (1),
//!   outgoing queries are rate limited (250/s), the routing table holds at most 512
//!   nodes per family, the peer store 1000 peers and 1000 tokens, a lookup remembers at
//!   most 256 nodes (about 110 bytes per table entry, 100 per lookup node: some 60 KiB
//!   per table and per lookup at most). Cost: 34 packages new to our `Cargo.lock`
//!   (chrono, dashmap, encoding_rs, librqbit-core and -bencode, network-interface, ...),
//!   about 190 s of compile time for them (`cargo build --timings`, 2 busy cores).
//! - **`mainline` 8.0.1** (2026-09-30, pubky; 44 releases since 2023): fewer packages
//!   (15 new, the BEP 44 ed25519/curve25519 stack among them; about 80 s of compile
//!   time), but IPv4 only (binding an IPv6
//!   address hits an `unimplemented!`), a dedicated OS thread whose loop wakes every 50 ms
//!   even when idle (our idle seeder is held to a wake-up budget), a blocking API with an
//!   async veneer, bootstrap names resolved synchronously at build time, and no way to
//!   restore the routing table except as a bootstrap list (so a restart with unreachable
//!   bootstrap nodes begins with 0 nodes until those nodes answer).
//!
//! Neither crate can add a node to a running table (BEP 5 `port`). We keep PORT hints in
//! a small bounded set, save them with the table, use them as bootstrap nodes at the next
//! start, and, while the table of their family is small (fewer than [`RESEED_BELOW`]
//! nodes), restart the node on the same port with the same id and table plus the hints
//! as bootstrap nodes ([`RESEED_INTERVAL`] apart at most): that is when a PORT hint
//! matters (bootstrap nodes unreachable, a private swarm). Lookups in flight carry on
//! over such a restart.
//!
//! Known limits of the crate, worked around here: it announces only to nodes whose id
//! shares 16 leading bits with the info hash (fine on the public DHT, where the closest
//! nodes share about 24; on a tiny private DHT nothing may be that close), its lookups
//! never end by themselves (we stop them after [`LOOKUP_DURATION`]), its peer stream is
//! unbounded and unfiltered (we cap, deduplicate and filter), an empty bootstrap list or
//! one that never answers within a day stops its worker (we always add our own address,
//! which answers at once), and it parses `DHT_QUERIES_PER_SECOND` from the environment
//! with a panic on garbage (checked before start).
//!
//! # Which addresses are used
//! Every address the DHT gives us (peers from `get_peers`, PORT hints) is kept only when
//! its port is not 0, it is not unspecified, multicast, broadcast, reserved or a
//! documentation range, and its *scope* ([`crate::net::Scope`]: loopback, local network,
//! global) is one the bootstrap list points into (`dht/policy.rs`): the public bootstrap
//! routers allow global addresses only, so a node on the internet cannot make us dial
//! `127.0.0.1:22` or a LAN host; a bootstrap list of `127.0.0.x` nodes (tests, a lab)
//! allows loopback only, so such a DHT never leads outside the machine. Peers are then
//! dialled through the torrent's peer book, with its caps (2000 addresses, back-off,
//! bans). The DHT node itself sends queries to whatever nodes other nodes name (that is
//! how a DHT works), within the crate's rate limit.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use futures::StreamExt;
use librqbit_dht::{DhtState, Id20};
use thiserror::Error;
use tokio::sync::{Notify, Semaphore, mpsc, watch};

use crate::lock::{MutexExt, RwLockExt};
use crate::metainfo::InfoHash;

mod policy;
mod slot;
mod state_file;

pub use policy::bootstrap_scope;
use policy::{Hints, Policy, unmap};
pub use slot::DhtSlot;
use state_file::{STATE_VERSION, Saved, empty_table_json, hex, load_state, table_nodes, unhex20};

/// File name of the saved routing table inside a state folder.
pub const STATE_FILE_NAME: &str = "dht.dat";
/// Most peer addresses one lookup yields (after filtering and deduplication).
pub const MAX_PEERS_PER_LOOKUP: usize = 200;
/// How long one lookup runs (the crate's lookups never end by themselves). Announces
/// (`announce_peer`) go out during this time, to the nodes that answered with a token.
pub const LOOKUP_DURATION: Duration = Duration::from_secs(15);
/// Lookups running at once, session-wide (others wait their turn).
pub const MAX_CONCURRENT_LOOKUPS: usize = 8;
/// How often the routing table is saved while running (and at shutdown).
pub const SAVE_INTERVAL: Duration = Duration::from_secs(5 * 60);
/// How often the node count is refreshed for [`Dht::watch_nodes`].
pub const COUNT_INTERVAL: Duration = Duration::from_secs(5);
/// ... while the table is empty (so the first nodes are noticed soon after bootstrap).
pub const COUNT_INTERVAL_EMPTY: Duration = Duration::from_secs(1);
/// Most PORT hints kept (one per IP address; the oldest goes first).
pub const MAX_HINTS: usize = 64;
/// A PORT hint restarts the node with the hint as bootstrap only while the hint's family
/// has fewer nodes than this.
pub const RESEED_BELOW: usize = 64;
/// At most one such restart per this long.
pub const RESEED_INTERVAL: Duration = Duration::from_secs(30);
/// A state file larger than this is ignored (ours are under 100 KiB).
pub const MAX_STATE_FILE_BYTES: u64 = 1 << 20;
/// Most nodes restored from a state file (the crate keeps 512 per family).
pub const MAX_RESTORED_NODES: usize = 1024;
/// How to start a [`Dht`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DhtOptions {
    /// UDP address to bind. `[::]:P` asks for a dual-stack socket (IPv4 and IPv6 tables,
    /// BEP 32); an IPv4 address gives an IPv4-only node. Port 0 picks a free port.
    pub bind: SocketAddr,
    /// `HOST:PORT` nodes to join through (names are resolved by the DHT task, never
    /// blocking the caller). Their scopes decide which addresses are used (module docs).
    pub bootstrap: Vec<String>,
    /// Where the routing table is saved (JSON; written as `FILE.tmp` then renamed) and
    /// restored from; `None` keeps it in memory only.
    pub state_file: Option<PathBuf>,
}

/// Why the DHT could not start or save.
#[derive(Debug, Error)]
pub enum DhtError {
    /// The UDP socket could not be bound (port in use, address not on this host).
    #[error("cannot bind the DHT's UDP socket to {addr}: {message}")]
    Bind {
        /// What we tried to bind.
        addr: SocketAddr,
        /// The OS error, as the crate words it.
        message: String,
    },
    /// The environment or the crate refused the setup.
    #[error("cannot start the DHT: {0}")]
    Setup(String),
    /// The state file could not be written.
    #[error("cannot save the DHT routing table to {path}: {error}")]
    Save {
        /// The state file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

struct Inner {
    current: RwLock<Arc<DhtState>>,
    /// Bumped on every restart (lookups move to the new node).
    generation: watch::Sender<u64>,
    id: [u8; 20],
    /// The bound address (port resolved).
    bound: SocketAddr,
    bootstrap: Vec<String>,
    state_file: Option<PathBuf>,
    policy: Policy,
    hints: Mutex<Hints>,
    hint_arrived: Notify,
    lookups: Semaphore,
    nodes: watch::Sender<usize>,
    stop: watch::Sender<bool>,
    last_reseed: Mutex<Option<Instant>>,
    restarts: AtomicU64,
}

/// A running DHT node. Cheap to clone (all clones are the same node); the node stops at
/// [`Dht::shutdown`] or when the runtime ends.
#[derive(Clone)]
pub struct Dht {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Dht {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dht")
            .field("bound", &self.inner.bound)
            .field("nodes", &self.node_count())
            .finish()
    }
}

/// Our own address as a bootstrap entry: the crate's worker stops when no bootstrap node
/// answers (an empty list, or a day of failures); we answer ourselves at once.
fn self_entry(bound: SocketAddr) -> String {
    let ip: IpAddr = match bound.ip() {
        IpAddr::V4(a) if a.is_unspecified() => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(a) if a.is_unspecified() => Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    SocketAddr::new(ip, bound.port()).to_string()
}

/// A free UDP port on `ip` (for a bind to port 0: the crate needs the port before it
/// binds, for our own bootstrap entry).
fn free_udp_port(ip: IpAddr) -> std::io::Result<u16> {
    let s = std::net::UdpSocket::bind(SocketAddr::new(ip, 0))?;
    Ok(s.local_addr()?.port())
}

/// Start one crate node on `bound` with id `id`, the `nodes` as its tables and
/// `bootstrap` (plus our own address) as bootstrap entries.
async fn start_node(
    bound: SocketAddr,
    id: [u8; 20],
    nodes: &[([u8; 20], SocketAddr)],
    bootstrap: &[String],
    policy: Policy,
) -> Result<Arc<DhtState>, DhtError> {
    let mut boot: Vec<String> = bootstrap.to_vec();
    boot.push(self_entry(bound));
    let mut cfg = librqbit_dht::DhtConfig {
        peer_id: Some(Id20::new(id)),
        bootstrap_addrs: Some(boot),
        listen_addr: Some(bound),
        ..Default::default()
    };
    let template = empty_table_json(&id);
    cfg.routing_table = Some(
        serde_json::from_str(&template)
            .map_err(|e| DhtError::Setup(format!("routing table form changed: {e}")))?,
    );
    cfg.routing_table_v6 = Some(
        serde_json::from_str(&template)
            .map_err(|e| DhtError::Setup(format!("routing table form changed: {e}")))?,
    );
    for (nid, addr) in nodes {
        let addr = unmap(*addr);
        if !policy.allows(addr) || *nid == id {
            continue;
        }
        let table = if addr.is_ipv4() {
            cfg.routing_table.as_mut()
        } else {
            cfg.routing_table_v6.as_mut()
        };
        if let Some(t) = table {
            t.add_node(Id20::new(*nid), addr);
        }
    }
    librqbit_dht::DhtState::with_config(cfg)
        .await
        .map_err(|e| DhtError::Bind {
            addr: bound,
            message: format!("{e:#}"),
        })
}

impl Dht {
    /// Bind the UDP socket and start the node: the routing table (and our node id) come
    /// back from `opts.state_file` when it holds one; bootstrap names are resolved by the
    /// node's own task, so this returns at once and never blocks on DNS. Spawns the
    /// node's tasks and a housekeeping task (node count every [`COUNT_INTERVAL`], save
    /// every [`SAVE_INTERVAL`], PORT-hint restarts) on the current tokio runtime.
    ///
    /// # Errors
    /// [`DhtError::Bind`] when the socket cannot be bound, [`DhtError::Setup`] when
    /// `DHT_QUERIES_PER_SECOND` is set to something that is not a number (the crate would
    /// panic on it).
    pub async fn start(opts: DhtOptions) -> Result<Dht, DhtError> {
        if let Ok(v) = std::env::var("DHT_QUERIES_PER_SECOND")
            && v.parse::<usize>().is_err()
        {
            return Err(DhtError::Setup(format!(
                "DHT_QUERIES_PER_SECOND={v:?} is not a number"
            )));
        }
        let saved = match &opts.state_file {
            Some(p) => {
                let p = p.clone();
                tokio::task::spawn_blocking(move || load_state(&p))
                    .await
                    .ok()
                    .flatten()
            }
            None => None,
        };
        let saved = saved.unwrap_or_default();
        let id = unhex20(&saved.id).unwrap_or_else(rand::random);
        let mut bound = opts.bind;
        if bound.port() == 0 {
            bound.set_port(free_udp_port(bound.ip()).map_err(|e| DhtError::Bind {
                addr: opts.bind,
                message: e.to_string(),
            })?);
        }
        let ipv6 = bound.is_ipv6();
        let restored: Vec<([u8; 20], SocketAddr)> = saved
            .nodes
            .iter()
            .take(MAX_RESTORED_NODES)
            .filter_map(|(nid, a)| Some((unhex20(nid)?, unmap(*a))))
            .collect();
        let restored_addrs: Vec<SocketAddr> = restored.iter().map(|(_, a)| *a).collect();
        // no bootstrap list: the scopes of the nodes we had decide
        let scope_from: &[SocketAddr] = if opts.bootstrap.is_empty() {
            &restored_addrs
        } else {
            &[]
        };
        let policy = Policy::from_bootstrap(&opts.bootstrap, scope_from, ipv6);
        let mut hints = Hints::default();
        for h in saved.hints.iter().take(MAX_HINTS) {
            if policy.allows(*h) {
                hints.add(unmap(*h));
            }
        }
        hints.fresh = false;
        let mut boot = opts.bootstrap.clone();
        boot.extend(hints.list.iter().map(SocketAddr::to_string));
        let node = start_node(bound, id, &restored, &boot, policy).await?;
        let bound = node.listen_addr();
        let inner = Arc::new(Inner {
            current: RwLock::new(node),
            generation: watch::Sender::new(0),
            id,
            bound,
            bootstrap: opts.bootstrap,
            state_file: opts.state_file,
            policy,
            hints: Mutex::new(hints),
            hint_arrived: Notify::new(),
            lookups: Semaphore::new(MAX_CONCURRENT_LOOKUPS),
            nodes: watch::Sender::new(0),
            stop: watch::Sender::new(false),
            last_reseed: Mutex::new(None),
            restarts: AtomicU64::new(0),
        });
        let n = inner.node_count();
        inner.nodes.send_replace(n);
        tracing::info!(
            "DHT: listening on UDP {bound}, {n} nodes restored, {} bootstrap nodes",
            inner.bootstrap.len()
        );
        tokio::spawn(housekeeping(inner.clone()));
        Ok(Dht { inner })
    }

    /// The bound UDP address (port resolved when 0 was asked for). Its port goes into
    /// our BEP 5 `port` messages.
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.bound
    }

    /// Our node id (20 bytes; kept across restarts in the state file).
    pub fn node_id(&self) -> [u8; 20] {
        self.inner.id
    }

    /// Nodes in the routing tables now (IPv4 + IPv6), counted entry by entry (at most
    /// 1024; the crate's own counter can drift). Cheap: two read locks, no I/O.
    pub fn node_count(&self) -> usize {
        self.inner.node_count()
    }

    /// The node count, refreshed every [`COUNT_INTERVAL`] ([`COUNT_INTERVAL_EMPTY`] while
    /// 0) when it changed: a front end or the session can wait on it instead of polling.
    pub fn watch_nodes(&self) -> watch::Receiver<usize> {
        self.inner.nodes.subscribe()
    }

    /// Times the node was restarted for PORT hints (see the module docs).
    pub fn restarts(&self) -> u64 {
        self.inner.restarts.load(Ordering::Relaxed)
    }

    /// Whether the DHT could lead us to `addr` (port, family and scope rules of the
    /// module docs). Every address from [`Dht::lookup`] passed this.
    pub fn allows(&self, addr: SocketAddr) -> bool {
        self.inner.policy.allows(addr)
    }

    /// Look up peers of `info_hash` (BEP 5 `get_peers`), and when `announce_port` is
    /// given announce that TCP port (BEP 5 `announce_peer`) to the nodes that answered
    /// with a token. The lookup runs for [`LOOKUP_DURATION`] (or until the receiver is
    /// dropped) once one of the [`MAX_CONCURRENT_LOOKUPS`] slots is free, and yields at
    /// most [`MAX_PEERS_PER_LOOKUP`] distinct addresses that pass [`Dht::allows`]
    /// (IPv4-mapped addresses as IPv4). The receiver closes when the lookup ends; with
    /// an empty routing table it ends at once.
    pub fn lookup(
        &self,
        info_hash: InfoHash,
        announce_port: Option<u16>,
    ) -> mpsc::Receiver<SocketAddr> {
        let (tx, rx) = mpsc::channel(MAX_PEERS_PER_LOOKUP);
        tokio::spawn(self.inner.clone().run_lookup(info_hash, announce_port, tx));
        rx
    }

    /// [`Dht::lookup`] without announcing: peers of `info_hash` only.
    pub fn get_peers(&self, info_hash: InfoHash) -> mpsc::Receiver<SocketAddr> {
        self.lookup(info_hash, None)
    }

    /// Announce that we serve `info_hash` on TCP `port` (a lookup whose peers are
    /// dropped; it runs in the background for [`LOOKUP_DURATION`]).
    pub fn announce(&self, info_hash: InfoHash, port: u16) {
        let mut rx = self.lookup(info_hash, Some(port));
        tokio::spawn(async move { while rx.recv().await.is_some() {} });
    }

    /// A node learnt from a peer's BEP 5 `port` message (the peer's IP, the given UDP
    /// port). Ignored (returns false) for port 0, for IPv6 on an IPv4-only node, for
    /// addresses outside the allowed scopes (module docs), for our own address, and
    /// when already known; otherwise kept as a hint (see the module docs) and true. Never
    /// blocks, never fails.
    pub fn add_node(&self, addr: SocketAddr) -> bool {
        let addr = unmap(addr);
        if !self.inner.policy.allows(addr) || addr == self.inner.bound {
            return false;
        }
        let added = self.inner.hints.locked().add(addr);
        if added {
            self.inner.hint_arrived.notify_one();
        }
        added
    }

    /// Save the routing table (and hints) to the state file now; nothing to do without
    /// one. The file is written beside itself and renamed over the old one, on a blocking
    /// thread.
    ///
    /// # Errors
    /// [`DhtError::Save`] when the file cannot be written.
    pub async fn save(&self) -> Result<(), DhtError> {
        self.inner.save().await
    }

    /// Stop the node: save the table, stop lookups and housekeeping, close the socket.
    /// Later lookups end at once.
    ///
    /// # Errors
    /// [`DhtError::Save`], as [`Dht::save`] (the node stops anyway).
    pub async fn shutdown(&self) -> Result<(), DhtError> {
        self.inner.stop.send_replace(true);
        self.inner.lookups.close();
        let r = self.inner.save().await;
        self.inner.current().cancellation_token().cancel();
        r
    }
}

impl Inner {
    fn current(&self) -> Arc<DhtState> {
        self.current.read_locked().clone()
    }

    /// Table entries other than ourselves (the crate may list its own id, learnt through
    /// our self bootstrap entry).
    fn node_count(&self) -> usize {
        let me = Id20::new(self.id);
        self.current().with_routing_tables(|v4, v6| {
            v4.iter().chain(v6.iter()).filter(|n| n.id() != me).count()
        })
    }

    fn family_count(&self, v6: bool) -> usize {
        let me = Id20::new(self.id);
        self.current().with_routing_tables(|v4, t6| {
            let t = if v6 { t6 } else { v4 };
            t.iter().filter(|n| n.id() != me).count()
        })
    }

    async fn save(&self) -> Result<(), DhtError> {
        let Some(path) = self.state_file.clone() else {
            return Ok(());
        };
        let nodes = table_nodes(&self.current(), &self.id);
        let in_table: HashSet<SocketAddr> = nodes.iter().map(|(_, a)| *a).collect();
        let hints: Vec<SocketAddr> = self
            .hints
            .locked()
            .list
            .iter()
            .filter(|a| !in_table.contains(a))
            .copied()
            .collect();
        let saved = Saved {
            version: STATE_VERSION,
            id: hex(&self.id),
            port: self.bound.port(),
            nodes: nodes.iter().map(|(i, a)| (hex(i), *a)).collect(),
            hints,
        };
        let data = serde_json::to_vec(&saved).unwrap_or_default();
        let p = path.clone();
        match tokio::task::spawn_blocking(move || {
            crate::atomic_write::write(&p, &data, crate::atomic_write::Durability::Synced)
        })
        .await
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(DhtError::Save { path, error }),
            Err(e) => Err(DhtError::Save {
                path,
                error: std::io::Error::other(e.to_string()),
            }),
        }
    }

    /// Restart the node on the same address with the same id and table, the fresh hints
    /// as bootstrap nodes. The old node's socket closes first (its task is cancelled).
    async fn reseed(&self) {
        let hints: Vec<String> = {
            let mut h = self.hints.locked();
            h.fresh = false;
            h.list.iter().map(SocketAddr::to_string).collect()
        };
        *self.last_reseed.locked() = Some(Instant::now());
        let old = self.current();
        let nodes = table_nodes(&old, &self.id);
        old.cancellation_token().cancel();
        drop(old);
        let mut boot = self.bootstrap.clone();
        boot.extend(hints);
        // the cancelled task lets go of its socket on its next poll
        let mut last = None;
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(25)).await;
            match start_node(self.bound, self.id, &nodes, &boot, self.policy).await {
                Ok(node) => {
                    *self.current.write_locked() = node;
                    self.restarts.fetch_add(1, Ordering::Relaxed);
                    self.generation.send_modify(|g| *g += 1);
                    tracing::debug!("DHT: restarted with {} PORT hints", boot.len());
                    return;
                }
                Err(e) => last = Some(e),
            }
        }
        if let Some(e) = last {
            tracing::error!("DHT: restart for PORT hints failed: {e}");
        }
    }

    async fn run_lookup(
        self: Arc<Self>,
        info_hash: InfoHash,
        announce_port: Option<u16>,
        tx: mpsc::Sender<SocketAddr>,
    ) {
        let Ok(_slot) = self.lookups.acquire().await else {
            return;
        };
        let deadline = tokio::time::Instant::now() + LOOKUP_DURATION;
        let mut seen: HashSet<SocketAddr> = HashSet::new();
        let mut generation = self.generation.subscribe();
        let mut stop = self.stop.subscribe();
        'node: loop {
            if *stop.borrow() || self.node_count() == 0 {
                return;
            }
            generation.mark_unchanged();
            let mut peers = self
                .current()
                .get_peers(Id20::new(info_hash.0), announce_port);
            loop {
                tokio::select! {
                    p = peers.next() => {
                        let Some(a) = p else { return };
                        let a = unmap(a);
                        if seen.len() < MAX_PEERS_PER_LOOKUP
                            && self.policy.allows(a)
                            && seen.insert(a)
                            && tx.send(a).await.is_err()
                        {
                            return;
                        }
                    }
                    _ = tokio::time::sleep_until(deadline) => return,
                    _ = tx.closed() => return,
                    _ = stop.changed() => return,
                    r = generation.changed() => {
                        if r.is_err() {
                            return;
                        }
                        continue 'node;
                    }
                }
            }
        }
    }
}

/// Node count, saves and PORT-hint restarts, until [`Dht::shutdown`].
async fn housekeeping(inner: Arc<Inner>) {
    let mut stop = inner.stop.subscribe();
    let mut save_at = tokio::time::Instant::now() + SAVE_INTERVAL;
    let mut save_failed = false;
    loop {
        let every = if *inner.nodes.borrow() == 0 {
            COUNT_INTERVAL_EMPTY
        } else {
            COUNT_INTERVAL
        };
        tokio::select! {
            _ = stop.changed() => return,
            _ = inner.hint_arrived.notified() => {}
            _ = tokio::time::sleep(every) => {}
        }
        if *stop.borrow() {
            return;
        }
        let n = inner.node_count();
        inner
            .nodes
            .send_if_modified(|c| std::mem::replace(c, n) != n);
        let due = {
            let h = inner.hints.locked();
            let recent = inner
                .last_reseed
                .locked()
                .is_some_and(|t| t.elapsed() < RESEED_INTERVAL);
            h.fresh
                && !recent
                && h.list
                    .iter()
                    .any(|a| inner.family_count(a.is_ipv6()) < RESEED_BELOW)
        };
        if due {
            inner.reseed().await;
            let n = inner.node_count();
            inner
                .nodes
                .send_if_modified(|c| std::mem::replace(c, n) != n);
        }
        if tokio::time::Instant::now() >= save_at {
            save_at = tokio::time::Instant::now() + SAVE_INTERVAL;
            match inner.save().await {
                Ok(()) => save_failed = false,
                Err(e) => {
                    // one line per failure streak, not one per save
                    if !save_failed {
                        tracing::warn!("{e}");
                    }
                    save_failed = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn empty_table_template_matches_the_crate_and_restores_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(STATE_FILE_NAME);
        let id = [0x42u8; 20];
        let nodes: Vec<(String, SocketAddr)> = (1..=40u8)
            .map(|i| {
                let mut nid = [0u8; 20];
                nid[0] = i.wrapping_mul(37);
                nid[19] = i;
                (
                    hex(&nid),
                    SocketAddr::new(Ipv4Addr::new(127, 0, 1, i).into(), 1),
                )
            })
            .collect();
        let saved = Saved {
            version: STATE_VERSION,
            id: hex(&id),
            port: 0,
            nodes,
            hints: vec!["127.0.2.1:9".parse().unwrap(), "8.8.8.8:1".parse().unwrap()],
        };
        std::fs::write(&file, serde_json::to_vec(&saved).unwrap()).unwrap();
        let dht = Dht::start(DhtOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            // an unreachable bootstrap node: what comes back is the saved table
            bootstrap: vec!["127.0.0.1:1".into()],
            state_file: Some(file.clone()),
        })
        .await
        .unwrap();
        assert_eq!(dht.node_id(), id);
        let n = dht.node_count();
        assert!(n >= 8, "restored {n} nodes");
        dht.shutdown().await.unwrap();
        let back: Saved = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(back.id, hex(&id));
        assert_eq!(back.nodes.len(), n);
        assert_eq!(back.hints, ["127.0.2.1:9".parse::<SocketAddr>().unwrap()]);
    }

    #[tokio::test]
    async fn damaged_state_file_starts_empty_and_add_node_filters() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(STATE_FILE_NAME);
        std::fs::write(&file, b"{\"version\": 1, \"id\": [1,2,3]").unwrap();
        let dht = Dht::start(DhtOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            bootstrap: vec!["127.0.0.1:1".into()],
            state_file: Some(file.clone()),
        })
        .await
        .unwrap();
        assert_eq!(dht.node_count(), 0);
        let a = |t: &str| t.parse::<SocketAddr>().unwrap();
        assert!(!dht.add_node(a("127.0.0.5:0")), "port 0");
        assert!(!dht.add_node(a("[::1]:6881")), "IPv6 on an IPv4-only node");
        assert!(!dht.add_node(a("8.8.8.8:6881")), "outside the loopback DHT");
        assert!(!dht.add_node(dht.local_addr()), "ourselves");
        assert!(dht.add_node(a("127.0.0.5:6881")));
        assert!(!dht.add_node(a("127.0.0.5:6881")), "known");
        // an empty table: lookups end at once
        let mut rx = dht.get_peers(InfoHash([1; 20]));
        assert_eq!(rx.recv().await, None);
        dht.shutdown().await.unwrap();
        assert!(load_state(&file).is_some(), "rewritten at shutdown");
    }
}
