//! The torrent and its swarm: dialling (per torrent, session-wide and half-open caps),
//! admitting handshaken peers (bans, duplicates, evicting a useless peer at the cap),
//! events from connections (interest, endgame cancels, PEX, departures), the choke round
//! and housekeeping sweep every 10 s while it has peers, peer exchange (BEP 11), and
//! going quiet after [`super::QUIET_AFTER`] without peers.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio::sync::mpsc;

use super::peers::PeerHandle;
use super::{Env, QUIET_AFTER, TimerKey, Torrent, TorrentTimer, choke};
use crate::api::{EventKind, EventLevel, PeerSource};
use crate::config::engine::TransportKind;
use crate::engine::ctx::{SessionEvent, SlotKind};
use crate::engine::ip_filter::Blocklist;
use crate::engine::link::message::{PeerCtrl, PeerError, PeerEvent};
use crate::engine::link::peer::PeerInfo;
use crate::engine::link::shared::TorrentShared;
use crate::engine::link::stream::PeerStream;
use crate::engine::peer_conn;
use crate::peer::pex::{self, PexPeer};
use crate::peer::wire::Handshake;

impl Torrent {
    /// No peer for a while: drop the shared state, the storage and the metainfo (the
    /// verified pieces and counters stay), unless pieces are in progress.
    pub(super) fn go_quiet(&mut self) {
        if !self.peers.is_empty()
            || !self.dialing.is_empty()
            || self.life.check_job().is_some()
            || self.web_seeds.running()
        {
            return;
        }
        if let Some(s) = self.shared() {
            let pk = s.picker();
            if pk.partial_count() > 0 || pk.pending_count() > 0 {
                return;
            }
        }
        if let Some(live) = self.life.take_live() {
            self.retire(live);
        }
        self.maybe_unload_meta();
    }

    pub(super) fn schedule_sweep(&mut self, env: &mut Env<'_>) {
        let key = TimerKey::Torrent(self.id, TorrentTimer::Sweep);
        let quiet = TimerKey::Torrent(self.id, TorrentTimer::Quiet);
        if self.peers.is_empty() {
            env.timers.cancel(key);
            if self.shared().is_some() {
                env.timers.schedule_no_later(quiet, env.now + QUIET_AFTER);
            }
        } else if env.timers.deadline(key).is_none() {
            env.timers.cancel(quiet);
            self.last_round = env.now;
            env.timers.schedule(key, env.now + choke::ROUND);
        }
    }

    /// Choke round and connection housekeeping.
    pub(super) fn sweep(&mut self, env: &mut Env<'_>) {
        let Some(shared) = self.shared().cloned() else {
            // metadata connections: keep-alives and silence only
            self.peers.broadcast(&PeerCtrl::Tick);
            self.schedule_sweep(env);
            return;
        };
        let now_ms = env.ctx.link.clock.now_ms();
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
        self.share_peers(&shared, env);
        // counters moved
        self.persist_dirty = true;
        if self.peers.on_probation(env.now) {
            env.timers.schedule_no_later(
                TimerKey::Torrent(self.id, TorrentTimer::Reclaim),
                env.now + choke::RECHECK,
            );
        }
        self.schedule_sweep(env);
        self.check_goals(env);
    }

    /// Between choke rounds: give the slots of peers that take nothing to waiting peers, and
    /// free slots to newcomers; while someone is on probation, look again in a moment.
    pub(super) fn fill_slots(&mut self, env: &mut Env<'_>) {
        if self.shared().is_none() {
            return;
        }
        let views = self.peers.fill_views(env.now, env.ctx.link.clock.now_ms());
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
    pub(super) fn connect_more(&mut self, env: &mut Env<'_>) {
        if !self.life.is_running() {
            return;
        }
        let seeding = self.have_all();
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
            // BEP 52: a hybrid is dialled by its v1 hash with the v2 bit set; the peer may
            // answer by the v2 hash
            let ours = Handshake::ours(self.sum.info_hash, ctx.peer_id)
                .with_dht(self.dht_allowed(env))
                .with_v2(self.sum.info_hash_v2.is_some());
            let alias = self.v2_alias();
            tokio::spawn(async move {
                let _slot = slot;
                let order = ctx.dial_order(addr);
                let encryption = ctx.config.peer.encryption;
                let utp = ctx.utp.as_deref();
                match peer_conn::dial(addr, ours, alias, encryption, &order, utp).await {
                    Ok((stream, remote)) => {
                        if order.first() == Some(&TransportKind::Utp) && !stream.is_utp() {
                            ctx.learnt_no_utp(addr);
                        }
                        ctx.send(SessionEvent::Handshaken {
                            info_hash: ours.info_hash,
                            addr,
                            outgoing: true,
                            remote,
                            stream,
                        })
                    }
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

    /// Hold back the peers the session's IP filter blocks (set once, when the torrent
    /// joins the session).
    pub fn use_ip_filter(&mut self, filter: Arc<Blocklist>) {
        self.book.set_filter(filter);
    }

    /// A new IP filter is in force: connections it blocks are closed, addresses held back
    /// that it no longer blocks may be dialled again, and dialling goes on.
    pub fn ip_filter_changed(&mut self, env: &mut Env<'_>) {
        for (_, p) in self.peers.iter() {
            if env.ctx.ip_filter.check(p.info.addr.ip()) {
                tracing::info!(addr = %p.info.addr, "closing a connection the new IP filter blocks");
                p.send(PeerCtrl::Disconnect("blocked by the IP filter"));
            }
        }
        let back = self.book.refilter(env.now);
        if back > 0 {
            tracing::info!(torrent = %self.sum.name, back, "peers the IP filter no longer blocks may be dialled");
        }
        self.connect_more(env);
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
        if !self.life.is_running() {
            if outgoing {
                // dialled before the torrent stopped running (e.g. the metadata arrived)
                self.book.release(addr, env.now);
            }
            return;
        }
        let fetch = self.life.fetch().map(|f| f.get().clone());
        let shared = if fetch.is_some() {
            None
        } else {
            match self.ensure_shared(env) {
                Some(s) => Some(s),
                None => return,
            }
        };
        let refuse = |why: &str| tracing::debug!(%addr, "peer refused: {why}");
        if self.book.is_banned(&addr.ip()) {
            return refuse("banned");
        }
        // handshaken before a new filter came into force
        if env.ctx.ip_filter.check(addr.ip()) {
            if outgoing {
                self.book.release(addr, env.now);
            }
            return refuse("blocked by the IP filter");
        }
        // one peer, two connections (each end dialled the other): keep the one
        // libtorrent's rule keeps, as the peer will (see `keeps_outgoing`). The twin of a
        // new outgoing connection is an incoming one from that address or that told it as
        // its listen port; the twin of a new incoming one is the connection we dialled at
        // its address, which is how an incoming uTP connection arrives (its UDP socket is
        // on its listen port), whatever the two transports are.
        let twin = self.peers.iter().find_map(|(k, p)| {
            let reaches = if outgoing {
                !p.info.outgoing && p.info.reaches(addr)
            } else {
                p.info.outgoing && p.info.addr == addr
            };
            reaches.then_some(*k)
        });
        if let Some(twin) = twin {
            match resolve_twin(outgoing, env.ctx.listen_port, addr.port()) {
                Twin::CloseOld => {
                    if let Some(p) = self.peers.remove(twin) {
                        tracing::debug!(%addr, outgoing, "peer connected twice: the older connection closed");
                        p.send(PeerCtrl::Disconnect("connected twice"));
                        self.book
                            .disconnected(p.info.addr, !p.info.outgoing, false, env.now);
                        self.choker.peer_gone(twin);
                    }
                    // (the connection admitted now has asked for nothing yet)
                }
                Twin::RefuseNew => {
                    if outgoing {
                        self.book.connected(addr, PeerSource::Tracker, env.now);
                    }
                    return refuse("connected twice (the peer keeps the other connection)");
                }
            }
        }
        // the peer came back from the very endpoint of a connection of ours: its end of that
        // one is gone (a TCP 4-tuple is never open twice, and a client opens one uTP
        // connection per torrent between two sockets), however alive ours still looks. Keep
        // the new one: refused, the peer would retry a few times and then give up on us
        // while we wait out the dead one (a uTP connection times out after a minute)
        let stale = (!outgoing)
            .then(|| {
                self.peers.iter().find_map(|(k, p)| {
                    (!p.info.outgoing && p.info.addr == addr && p.info.utp == stream.is_utp())
                        .then_some(*k)
                })
            })
            .flatten();
        if let Some(stale) = stale
            && let Some(p) = self.peers.remove(stale)
        {
            tracing::debug!(%addr, "peer reconnected from the same endpoint: the older connection closed");
            p.send(PeerCtrl::Disconnect("reconnected"));
            self.book.disconnected(p.info.addr, true, false, env.now);
            self.choker.peer_gone(stale);
        }
        if self.peers.has_peer_id(&remote.peer_id) || self.peers.has_addr(&addr) {
            if outgoing {
                self.book.connected(addr, PeerSource::Tracker, env.now);
            }
            return refuse("already connected");
        }
        let now_ms = env.ctx.link.clock.now_ms();
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
        let info = Arc::new(
            PeerInfo::new(addr, outgoing, remote.peer_id, source, now_ms)
                .over_utp(stream.is_utp())
                .with_mse(stream.mse()),
        );
        let (ctrl_tx, ctrl_rx) = mpsc::unbounded_channel();
        self.peers
            .insert(key, PeerHandle::new(info.clone(), ctrl_tx, now_ms));
        tracing::debug!(torrent = %self.sum.name, %addr, outgoing, utp = info.utp, source = source.label(), "peer connected");
        match (shared, fetch) {
            (Some(t), _) => {
                tokio::spawn(async move {
                    let _slot = slot;
                    let r = match stream {
                        PeerStream::Tcp(s) => {
                            peer_conn::run(t.clone(), key, s, info, remote, ctrl_rx).await
                        }
                        PeerStream::Utp(s) => {
                            peer_conn::run(t.clone(), key, s, info, remote, ctrl_rx).await
                        }
                        PeerStream::TcpMse(s) => {
                            peer_conn::run(t.clone(), key, *s, info, remote, ctrl_rx).await
                        }
                        PeerStream::UtpMse(s) => {
                            peer_conn::run(t.clone(), key, *s, info, remote, ctrl_rx).await
                        }
                    };
                    t.peer_event(key, PeerEvent::Gone { error: r.err() });
                });
            }
            (None, Some(f)) => {
                tokio::spawn(async move {
                    let _slot = slot;
                    let r = match stream {
                        PeerStream::Tcp(s) => {
                            peer_conn::run_metadata(f.clone(), key, s, info, remote, ctrl_rx).await
                        }
                        PeerStream::Utp(s) => {
                            peer_conn::run_metadata(f.clone(), key, s, info, remote, ctrl_rx).await
                        }
                        PeerStream::TcpMse(s) => {
                            peer_conn::run_metadata(f.clone(), key, *s, info, remote, ctrl_rx).await
                        }
                        PeerStream::UtpMse(s) => {
                            peer_conn::run_metadata(f.clone(), key, *s, info, remote, ctrl_rx).await
                        }
                    };
                    f.peer_event(key, PeerEvent::Gone { error: r.err() });
                });
            }
            (None, None) => return,
        }
        self.schedule_sweep(env);
    }

    /// An incoming peer that told its listen port (BEP 10 `p`) can be dialled there.
    pub(super) fn learn_listen_addr(&mut self, info: &PeerInfo, now: Instant) {
        let port = info.listen_port.load(Ordering::Relaxed);
        if !info.outgoing && port != 0 {
            self.book.add(
                SocketAddr::new(info.addr.ip(), port),
                PeerSource::Incoming,
                now,
            );
        }
    }

    pub(super) fn evict(&mut self, key: u64, env: &mut Env<'_>) {
        if let Some(p) = self.peers.remove(key) {
            tracing::debug!(addr = %p.info.addr, "evicting an idle peer for a newcomer");
            p.send(PeerCtrl::Disconnect("evicted for a newcomer"));
            self.book
                .disconnected(p.info.addr, !p.info.outgoing, false, env.now);
            self.choker.peer_gone(key);
        }
    }

    /// Incoming connection `key` gave its listen port: if another connection reaches the
    /// same address, both ends opened a connection at once and one must go. Both ends have
    /// to close the same one, so the rule is the one libtorrent applies (and ours on the
    /// other end): the side whose listen port is lower keeps the connection it dialled
    /// (equal ports: we keep ours). Two incoming connections from
    /// one listener: the later one goes. The closed connection's requests go back to the
    /// picker, which hands them to the connection kept before anything new.
    fn drop_if_connected_twice(&mut self, key: u64, env: &mut Env<'_>) {
        let Some(info) = self.peers.get(key).map(|p| p.info.clone()) else {
            return;
        };
        let port = info.listen_port.load(Ordering::Relaxed);
        if port == 0 {
            return;
        }
        let dial = SocketAddr::new(info.addr.ip(), port);
        let twin = self.peers.iter().find_map(|(k, p)| {
            (*k != key
                && p.info.reaches(dial)
                && (p.info.outgoing || p.info.connected_at <= info.connected_at))
                .then(|| (*k, p.info.outgoing))
        });
        let Some((twin, twin_outgoing)) = twin else {
            return;
        };
        let close = if twin_outgoing && keeps_outgoing(env.ctx.listen_port, dial.port()) {
            key
        } else if twin_outgoing {
            twin
        } else {
            key
        };
        if let Some(p) = self.peers.remove(close) {
            tracing::debug!(addr = %p.info.addr, %dial, "peer connected twice: one connection closed");
            p.send(PeerCtrl::Disconnect("connected twice"));
            self.book
                .disconnected(p.info.addr, !p.info.outgoing, false, env.now);
            self.choker.peer_gone(close);
            let kept = if close == key { twin } else { key };
            self.twins.push((close, kept));
        }
    }

    /// Peer exchange (BEP 11): hand every connection the list of peers connected now
    /// (dialable addresses: the one we dialled, or an incoming peer's listen port); each
    /// connection sends its peer the difference at most once a minute. Off for private
    /// torrents (BEP 27) and with `pex = false`.
    pub(super) fn share_peers(&self, shared: &TorrentShared, env: &Env<'_>) {
        if !env.ctx.config.pex || shared.is_private() || self.peers.len() < 2 {
            return;
        }
        let n = shared.piece_count();
        let list: Vec<PexPeer> = self
            .peers
            .iter()
            .filter_map(|(_, p)| pex_entry(&p.info, n))
            .collect();
        if !list.is_empty() {
            self.peers.broadcast(&PeerCtrl::Pex(Arc::new(list)));
        }
    }

    /// Pieces that failed their hash check had blocks from `peers`: a peer that sent data of
    /// [`MAX_HASH_FAILS`] failed pieces is dropped and its IP banned for this torrent.
    pub(super) fn strike(&mut self, peers: Vec<u64>, env: &mut Env<'_>) {
        for key in peers {
            let Some(n) = self.strikes.strike(key) else {
                continue;
            };
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

    /// An event from connection `key`.
    pub fn on_peer(&mut self, key: u64, ev: PeerEvent, env: &mut Env<'_>) {
        match ev {
            PeerEvent::InterestChanged => {
                self.fill_slots(env);
                // a leecher that lost interest may have the last bytes: the ratio moved
                self.check_goals(env);
            }
            PeerEvent::CancelElsewhere(block) => {
                for (k, p) in self.peers.iter() {
                    if *k != key {
                        p.send(PeerCtrl::Cancel(block));
                    }
                }
            }
            PeerEvent::PieceUnreadable { piece, error } => self.piece_lost(piece, &error, env),
            PeerEvent::MetadataComplete => self.metadata_arrived(env),
            PeerEvent::WebSeedNote(note) => self.web_seed_note(key, note, env),
            PeerEvent::ListenPort => self.drop_if_connected_twice(key, env),
            PeerEvent::Pex(added) => {
                // a seed has no use for other seeds
                let seeding = self.shared().is_some_and(|s| s.is_complete());
                let mut new = 0;
                for p in added {
                    if seeding && p.flags & crate::peer::pex::FLAG_SEED != 0 {
                        continue;
                    }
                    new += usize::from(self.book.add(p.addr, PeerSource::Pex, env.now));
                }
                if new > 0 {
                    tracing::debug!(torrent = %self.sum.name, new, "peers from ut_pex");
                    self.connect_more(env);
                }
            }
            PeerEvent::Gone { error } => {
                if let Some(i) = self.twins.iter().position(|(closed, _)| *closed == key) {
                    let (_, kept) = self.twins.swap_remove(i);
                    if let Some(k) = self.peers.get(kept) {
                        k.send(PeerCtrl::Repick);
                    }
                }
                self.strikes.forget(key);
                self.choker.peer_gone(key);
                if let Some(p) = self.peers.remove(key) {
                    let n = self.sum.piece_count();
                    let was_seed = p.info.pieces.load(Ordering::Relaxed) == n && n > 0;
                    self.book
                        .disconnected(p.info.addr, !p.info.outgoing, was_seed, env.now);
                    self.learn_listen_addr(&p.info, env.now);
                    if let Some(e) = &error {
                        tracing::debug!(torrent = %self.sum.name, addr = %p.info.addr, "peer closed: {e}");
                    }
                    // a slot may have opened
                    self.fill_slots(env);
                    self.schedule_sweep(env);
                    self.connect_more(env);
                    // what it took before leaving counts toward the ratio
                    self.check_goals(env);
                }
            }
        }
    }
}

/// Hash failures after which a peer is dropped and its address banned for this torrent.
pub const MAX_HASH_FAILS: u32 = 3;

/// Hash failures per connection: how many failed pieces each peer sent blocks of.
#[derive(Debug, Default)]
pub struct Strikes {
    counts: HashMap<u64, u32>,
}

impl Strikes {
    /// Count a failed piece against connection `key`; its count when that reaches
    /// [`MAX_HASH_FAILS`] (it is banned), else `None`.
    pub fn strike(&mut self, key: u64) -> Option<u32> {
        let n = self.counts.entry(key).or_default();
        *n += 1;
        (*n >= MAX_HASH_FAILS).then_some(*n)
    }

    /// Connection `key` ended: its count goes with it.
    pub fn forget(&mut self, key: u64) {
        self.counts.remove(&key);
    }

    /// The torrent left the swarm: every count goes.
    pub fn clear(&mut self) {
        self.counts.clear();
    }
}

/// Of two connections with one peer (one dialled by each side), whether we keep the one
/// we dialled: our listen port `ours` is lower than the peer's `theirs` (equal: we keep
/// ours, where libtorrent picks at random). libtorrent applies the same rule, so both
/// ends close the same connection and not one each.
fn keeps_outgoing(ours: u16, theirs: u16) -> bool {
    ours <= theirs
}

/// Of a new connection and its twin (one peer, two connections), which goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Twin {
    /// The connection there already is closed; the new one is admitted.
    CloseOld,
    /// The new connection is refused.
    RefuseNew,
}

/// A new connection (`new_outgoing`: we dialled it) has a twin in the other direction:
/// the outgoing one of the two stays when [`keeps_outgoing`] (`ours`: our listen port,
/// `theirs`: the peer's), the incoming one otherwise.
fn resolve_twin(new_outgoing: bool, ours: u16, theirs: u16) -> Twin {
    if keeps_outgoing(ours, theirs) == new_outgoing {
        Twin::CloseOld
    } else {
        Twin::RefuseNew
    }
}

/// What PEX (BEP 11) tells others of a connected peer: the address it can be dialled at
/// (the one we dialled, or an incoming peer's listen port; `None` without either), seed
/// when it has all `count` pieces, reachable when we dialled it.
pub fn pex_entry(i: &PeerInfo, count: u32) -> Option<PexPeer> {
    let port = i.listen_port.load(Ordering::Relaxed);
    let addr = if i.outgoing {
        i.addr
    } else if port != 0 {
        SocketAddr::new(i.addr.ip(), port)
    } else {
        return None;
    };
    let mut flags = 0;
    if count > 0 && i.pieces.load(Ordering::Relaxed) == count {
        flags |= pex::FLAG_SEED;
    }
    if i.outgoing {
        flags |= pex::FLAG_REACHABLE;
    }
    Some(PexPeer { addr, flags })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::PeerId;

    #[test]
    fn a_peer_is_banned_at_the_third_failed_piece_and_forgotten_when_gone() {
        let mut s = Strikes::default();
        assert_eq!(s.strike(1), None);
        assert_eq!(s.strike(2), None);
        assert_eq!(s.strike(1), None);
        assert_eq!(s.strike(1), Some(3));
        assert_eq!(s.strike(1), Some(4), "still banned if it sends more");
        s.forget(1);
        assert_eq!(s.strike(1), None, "a new connection starts over");
        assert_eq!(s.strike(2), None);
        s.clear();
        assert_eq!(s.strike(2), None);
    }

    fn info(outgoing: bool) -> PeerInfo {
        PeerInfo::new(
            "127.0.0.1:6881".parse().unwrap(),
            outgoing,
            PeerId([1; 20]),
            PeerSource::Tracker,
            0,
        )
    }

    #[test]
    fn of_twins_the_lower_listen_port_keeps_its_outgoing_whichever_arrives_second() {
        // our port lower: we keep the connection we dialled
        assert_eq!(resolve_twin(true, 6881, 6890), Twin::CloseOld);
        assert_eq!(resolve_twin(false, 6881, 6890), Twin::RefuseNew);
        // theirs lower: the peer keeps its outgoing, our incoming
        assert_eq!(resolve_twin(true, 6890, 6881), Twin::RefuseNew);
        assert_eq!(resolve_twin(false, 6890, 6881), Twin::CloseOld);
        // equal: ours
        assert_eq!(resolve_twin(true, 6881, 6881), Twin::CloseOld);
        assert_eq!(resolve_twin(false, 6881, 6881), Twin::RefuseNew);
    }

    #[test]
    fn an_incoming_utp_connection_reaches_the_address_we_dial_over_tcp() {
        // uTP's UDP socket is on the listen port's number, so an incoming uTP connection
        // comes from the address a TCP dial goes to: the two are twins before any
        // BEP 10 listen port is told
        let listen: SocketAddr = "10.0.0.2:6881".parse().unwrap();
        let inc_utp =
            PeerInfo::new(listen, false, PeerId([2; 20]), PeerSource::Incoming, 0).over_utp(true);
        assert!(inc_utp.reaches(listen));
        let out_tcp = PeerInfo::new(listen, true, PeerId([3; 20]), PeerSource::Tracker, 0);
        assert!(out_tcp.reaches(inc_utp.addr));
        // an incoming TCP connection (an ephemeral port) only once it tells its port
        let inc_tcp = PeerInfo::new(
            "10.0.0.2:40000".parse().unwrap(),
            false,
            PeerId([4; 20]),
            PeerSource::Incoming,
            0,
        );
        assert!(!inc_tcp.reaches(listen));
        inc_tcp.listen_port.store(6881, Ordering::Relaxed);
        assert!(inc_tcp.reaches(listen));
    }

    #[test]
    fn pex_tells_the_dialled_address_or_the_listen_port_of_an_incoming_peer() {
        let out = info(true);
        out.pieces.store(10, Ordering::Relaxed);
        let e = pex_entry(&out, 10).unwrap();
        assert_eq!(e.addr, "127.0.0.1:6881".parse().unwrap());
        assert_eq!(e.flags, pex::FLAG_SEED | pex::FLAG_REACHABLE);

        let inc = info(false);
        assert_eq!(pex_entry(&inc, 10), None, "incoming without a listen port");
        inc.listen_port.store(51413, Ordering::Relaxed);
        inc.pieces.store(3, Ordering::Relaxed);
        let e = pex_entry(&inc, 10).unwrap();
        assert_eq!(e.addr, "127.0.0.1:51413".parse().unwrap());
        assert_eq!(e.flags, 0);
        // no pieces known yet (a magnet link): nobody is a seed
        assert_eq!(pex_entry(&out, 0).unwrap().flags, pex::FLAG_REACHABLE);
    }
}
