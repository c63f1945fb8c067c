//! The connected peers of one torrent: their handles, the per-round marks the choker needs,
//! and which connection to drop when the torrent is full and a new peer arrives.
//!
//! Eviction: at the connection cap, a newcomer takes the place of the least useful peer:
//! a silent one (nothing received since the handshake for [`SILENT_GRACE`]) first; then,
//! once connected for [`EVICT_GRACE`], one that does not read what we send (its socket has
//! not drained for [`STALL_CHOKE`]) or that asked us for data and received none (a peer
//! that requests while choked and never reads is not a leecher waiting for a slot), the
//! longest stall first, unless we download from it; else one where neither side is
//! interested and no payload moved for [`EVICT_IDLE`] (the longest silence first). If there
//! is none, the newcomer is refused. So connections that say nothing, or that ask and never
//! take, cannot keep a real peer out, while a peer that transfers, or a leecher waiting for
//! an upload slot, is never dropped for a stranger.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::choke::{ChokeView, PROBATION};
use crate::engine::link::clock::Millis;
use crate::engine::link::message::PeerCtrl;
use crate::engine::link::peer::PeerInfo;
use crate::engine::peer_conn::STALL_CHOKE;
use crate::engine::rate::RateMeter;

/// A peer that sent nothing at all after its handshake for this long may be evicted.
pub const SILENT_GRACE: Duration = Duration::from_secs(2);
/// A peer younger than this is evicted only if silent (it gets time to show interest).
pub const EVICT_GRACE: Duration = Duration::from_secs(5);
/// No payload for this long (either direction) makes a peer evictable.
pub const EVICT_IDLE: Duration = Duration::from_secs(60);

/// A connected peer as its torrent holds it.
#[derive(Debug)]
pub struct PeerHandle {
    /// Shared counters and flags (the connection updates them).
    pub info: Arc<PeerInfo>,
    /// Orders to the connection.
    pub ctrl: mpsc::UnboundedSender<PeerCtrl>,
    /// (downloaded, uploaded, requests seen) at the last choke round.
    marks: (u64, u64, u64),
    /// When we last unchoked it.
    pub last_unchoked: Option<Instant>,
    /// We decided to unchoke it (the torrent's view; the connection applies it).
    pub unchoked: bool,
    /// (requests seen, bytes uploaded) when it was last unchoked: its probation baseline.
    at_unchoke: (u64, u64),
    /// Unchoked during the whole last round.
    unchoked_whole_round: bool,
    /// Last time payload moved either way (ms).
    last_payload: Millis,
    /// Rate meters for the detail view (download, upload).
    pub meters: (RateMeter, RateMeter),
}

impl PeerHandle {
    /// A handle for a new connection.
    pub fn new(info: Arc<PeerInfo>, ctrl: mpsc::UnboundedSender<PeerCtrl>, now: Millis) -> Self {
        PeerHandle {
            info,
            ctrl,
            marks: (0, 0, 0),
            last_unchoked: None,
            unchoked: false,
            at_unchoke: (0, 0),
            unchoked_whole_round: false,
            last_payload: now,
            meters: Default::default(),
        }
    }

    /// Send an order (ignored if the connection is gone).
    pub fn send(&self, c: PeerCtrl) {
        let _ = self.ctrl.send(c);
    }
}

/// One peer as the eviction policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvictView {
    /// The connection.
    pub key: u64,
    /// Connected for this long, ms.
    pub connected_ms: Millis,
    /// Nothing received for this long, ms.
    pub silent_ms: Millis,
    /// Messages received since the handshake.
    pub messages: u64,
    /// No payload moved for this long, ms.
    pub idle_ms: Millis,
    /// A useful relation: we are interested and it unchokes us, or it is interested and we
    /// unchoke it.
    pub useful: bool,
    /// Either side is interested in the other (a leecher waiting for a slot, say).
    pub interest: bool,
    /// We are interested and it unchokes us: we download from it.
    pub downloading_from: bool,
    /// Data waits for its socket, which made no progress for this long, ms (0: nothing
    /// waits, or it drains).
    pub stalled_ms: Millis,
    /// It asked us for blocks and received no payload from us at all.
    pub starved: bool,
}

/// Why [`pick_victim`] may drop a peer, most droppable first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Unwanted {
    /// Interest and no payload for a long time.
    Idle,
    /// Asks and never takes, or does not read.
    Unproductive,
    /// Said nothing since the handshake.
    Silent,
}

/// Why `p` may be dropped for a newcomer, if it may.
fn unwanted(p: &EvictView) -> Option<Unwanted> {
    let grown = p.connected_ms >= EVICT_GRACE.as_millis() as u64;
    if p.messages == 0 && p.connected_ms >= SILENT_GRACE.as_millis() as u64 {
        return Some(Unwanted::Silent);
    }
    if grown && !p.downloading_from && (p.stalled_ms >= STALL_CHOKE.as_millis() as u64 || p.starved)
    {
        return Some(Unwanted::Unproductive);
    }
    let idle = grown
        && !p.useful
        && !p.interest
        && p.idle_ms >= (EVICT_IDLE.as_millis() as u64).min(p.connected_ms);
    idle.then_some(Unwanted::Idle)
}

/// The connection to drop for a newcomer, if any may be dropped.
pub fn pick_victim(peers: &[EvictView]) -> Option<u64> {
    peers
        .iter()
        .filter_map(|p| unwanted(p).map(|why| (why, p)))
        .max_by_key(|(why, p)| (*why, p.stalled_ms, p.silent_ms, p.key))
        .map(|(_, p)| p.key)
}

/// The connected peers of a torrent.
#[derive(Debug, Default)]
pub struct PeerSet {
    peers: HashMap<u64, PeerHandle>,
}

impl PeerSet {
    /// No peers.
    pub fn new() -> PeerSet {
        PeerSet::default()
    }

    /// Connected peers.
    pub fn len(&self) -> usize {
        self.peers.len()
    }

    /// No peer connected.
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    /// Add a connection.
    pub fn insert(&mut self, key: u64, h: PeerHandle) {
        self.peers.insert(key, h);
    }

    /// Remove a connection.
    pub fn remove(&mut self, key: u64) -> Option<PeerHandle> {
        self.peers.remove(&key)
    }

    /// One connection.
    pub fn get(&self, key: u64) -> Option<&PeerHandle> {
        self.peers.get(&key)
    }

    /// Every connection.
    pub fn iter(&self) -> impl Iterator<Item = (&u64, &PeerHandle)> {
        self.peers.iter()
    }

    /// Every connection, mutable (rate meters).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&u64, &mut PeerHandle)> {
        self.peers.iter_mut()
    }

    /// Whether a connection with this peer id exists already.
    pub fn has_peer_id(&self, id: &crate::peer::PeerId) -> bool {
        self.peers.values().any(|p| p.info.peer_id == *id)
    }

    /// Whether a connection to this address exists already.
    pub fn has_addr(&self, addr: &std::net::SocketAddr) -> bool {
        self.peers.values().any(|p| p.info.reaches(*addr))
    }

    /// Send an order to every connection.
    pub fn broadcast(&self, c: &PeerCtrl) {
        for p in self.peers.values() {
            p.send(c.clone());
        }
    }

    /// Views for a choke round, with rates over the round that ends now (`round_secs` long),
    /// and the round marks advanced.
    pub fn choke_views(
        &mut self,
        seeding: bool,
        round_secs: f64,
        now_ms: Millis,
    ) -> Vec<ChokeView> {
        let mut out = Vec::with_capacity(self.peers.len());
        for (k, p) in &mut self.peers {
            let down = p.info.downloaded.load(Ordering::Relaxed);
            let up = p.info.uploaded.load(Ordering::Relaxed);
            let req = p.info.requests_seen.load(Ordering::Relaxed);
            let (d0, u0, r0) = p.marks;
            p.marks = (down, up, req);
            if down != d0 || up != u0 {
                p.last_payload = now_ms;
            }
            let delta = if seeding {
                up - u0.min(up)
            } else {
                down - d0.min(down)
            };
            let am_choking = !p.unchoked;
            let took_nothing = p.unchoked_whole_round && up == u0 && req == r0;
            p.unchoked_whole_round = !am_choking;
            out.push(ChokeView {
                key: *k,
                interested: p.info.peer_interested.load(Ordering::Relaxed),
                am_choking,
                rate: (delta as f64 / round_secs.max(1.0)) as u64,
                stalled: p
                    .info
                    .stalled_for(now_ms)
                    .is_some_and(|ms| ms >= STALL_CHOKE.as_millis() as u64),
                took_nothing,
                last_unchoked: p.last_unchoked,
            });
        }
        out
    }

    /// Views for [`super::choke::Choker::fill`] between rounds (no marks advanced): a slot
    /// holder took nothing when it asked for nothing and got nothing since its unchoke, and
    /// its probation ([`PROBATION`]) is over.
    pub fn fill_views(&self, now: Instant, now_ms: Millis) -> Vec<ChokeView> {
        self.peers
            .iter()
            .map(|(k, p)| {
                let req = p.info.requests_seen.load(Ordering::Relaxed);
                let up = p.info.uploaded.load(Ordering::Relaxed);
                let took_nothing = p.unchoked
                    && p.last_unchoked
                        .is_some_and(|at| now.duration_since(at) >= PROBATION)
                    && (req, up) == p.at_unchoke;
                ChokeView {
                    key: *k,
                    interested: p.info.peer_interested.load(Ordering::Relaxed),
                    am_choking: !p.unchoked,
                    rate: 0,
                    stalled: p
                        .info
                        .stalled_for(now_ms)
                        .is_some_and(|ms| ms >= STALL_CHOKE.as_millis() as u64),
                    took_nothing,
                    last_unchoked: p.last_unchoked,
                }
            })
            .collect()
    }

    /// A peer unchoked less than [`PROBATION`] ago (its slot is re-checked soon).
    pub fn on_probation(&self, now: Instant) -> bool {
        self.peers.values().any(|p| {
            p.unchoked
                && p.last_unchoked
                    .is_some_and(|at| now.duration_since(at) < PROBATION)
        })
    }

    /// Unchoke `key` (recording when), if connected and choked.
    pub fn unchoke(&mut self, key: u64, now: Instant) {
        if let Some(p) = self.peers.get_mut(&key)
            && !p.unchoked
        {
            p.unchoked = true;
            p.last_unchoked = Some(now);
            p.at_unchoke = (
                p.info.requests_seen.load(Ordering::Relaxed),
                p.info.uploaded.load(Ordering::Relaxed),
            );
            p.send(PeerCtrl::Unchoke);
        }
    }

    /// Choke `key`, if connected and unchoked.
    pub fn choke(&mut self, key: u64) {
        if let Some(p) = self.peers.get_mut(&key)
            && p.unchoked
        {
            p.unchoked = false;
            p.send(PeerCtrl::Choke);
        }
    }

    /// Peers we unchoke now.
    pub fn unchoked_count(&self) -> usize {
        self.peers.values().filter(|p| p.unchoked).count()
    }

    /// The connection to drop for a newcomer, if any.
    pub fn victim(&self, now_ms: Millis) -> Option<u64> {
        let views: Vec<EvictView> = self
            .peers
            .iter()
            .map(|(k, p)| {
                let i = &p.info;
                let connected_ms = i.connected_at.elapsed().as_millis() as Millis;
                let am_interested = i.am_interested.load(Ordering::Relaxed);
                let peer_interested = i.peer_interested.load(Ordering::Relaxed);
                let downloading_from = am_interested && !i.peer_choking.load(Ordering::Relaxed);
                let useful = downloading_from || (peer_interested && p.unchoked);
                EvictView {
                    key: *k,
                    connected_ms,
                    silent_ms: now_ms.saturating_sub(i.last_recv.load(Ordering::Relaxed)),
                    messages: i.messages.load(Ordering::Relaxed),
                    idle_ms: now_ms.saturating_sub(p.last_payload),
                    useful,
                    interest: am_interested || peer_interested,
                    downloading_from,
                    stalled_ms: i.stalled_for(now_ms).unwrap_or(0),
                    starved: i.requests_seen.load(Ordering::Relaxed) > 0
                        && i.uploaded.load(Ordering::Relaxed) == 0,
                }
            })
            .collect();
        pick_victim(&views)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(key: u64, connected_s: u64, silent_s: u64, messages: u64, useful: bool) -> EvictView {
        EvictView {
            key,
            connected_ms: connected_s * 1000,
            silent_ms: silent_s * 1000,
            messages,
            idle_ms: connected_s * 1000,
            useful,
            interest: useful,
            downloading_from: false,
            stalled_ms: 0,
            starved: false,
        }
    }

    #[test]
    fn silent_connections_go_first_useful_ones_never() {
        let peers = [
            v(1, 100, 1, 50, true),   // transferring
            v(2, 100, 90, 10, false), // quiet for 90 s
            v(3, 30, 30, 0, false),   // said nothing since the handshake
            v(4, 1, 1, 0, false),     // too young even to be called silent
        ];
        assert_eq!(pick_victim(&peers), Some(3));
        assert_eq!(pick_victim(&peers[..2]), Some(2));
        assert_eq!(pick_victim(&peers[..1]), None, "useful peers stay");
        assert_eq!(pick_victim(&[v(4, 1, 1, 0, false)]), None);
        assert_eq!(
            pick_victim(&[v(5, 3, 3, 0, false)]),
            Some(5),
            "silent after 2 s"
        );
        assert_eq!(pick_victim(&[]), None);
        // a leecher waiting for a slot (interested, choked) is never evicted
        let mut waiting = v(6, 300, 10, 40, false);
        waiting.interest = true;
        assert_eq!(pick_victim(&[waiting]), None);
    }

    /// Issue 16: a peer that asks and never reads fills the cap as "interested"; it is
    /// not a leecher waiting for a slot and gives its place to a newcomer.
    #[test]
    fn peers_that_do_not_read_or_get_nothing_they_asked_for_make_room() {
        // interested, requests while choked, never received a byte: starved
        let mut asker = v(1, 10, 0, 5000, false);
        asker.interest = true;
        asker.idle_ms = 10_000;
        asker.starved = true;
        assert_eq!(pick_victim(&[asker]), Some(1));
        // unchoked once, took a little, then its socket stopped draining
        let mut stuck = v(2, 10, 0, 5000, true);
        stuck.stalled_ms = STALL_CHOKE.as_millis() as u64;
        assert_eq!(pick_victim(&[stuck]), Some(2));
        stuck.stalled_ms -= 1;
        assert_eq!(
            pick_victim(&[stuck]),
            None,
            "a short stall is not a verdict"
        );
        // the longest stall goes first; silent peers before both
        let mut longer = stuck;
        longer.key = 3;
        longer.stalled_ms = 9_000;
        stuck.stalled_ms = 5_000;
        assert_eq!(pick_victim(&[stuck, longer, asker]), Some(3));
        assert_eq!(pick_victim(&[stuck, v(4, 30, 30, 0, false)]), Some(4));
        // young peers get their grace; a peer we download from stays
        let mut young = asker;
        young.connected_ms = EVICT_GRACE.as_millis() as u64 - 1;
        assert_eq!(pick_victim(&[young]), None);
        let mut source = asker;
        source.downloading_from = true;
        source.stalled_ms = 60_000;
        assert_eq!(pick_victim(&[source]), None);
        // a leecher that waits for a slot without asking is still never dropped
        let mut waiting = v(6, 300, 10, 40, false);
        waiting.interest = true;
        assert_eq!(pick_victim(&[waiting, source]), None);
    }

    #[test]
    fn a_peer_that_moved_payload_recently_stays() {
        let mut busy = v(5, 100, 1, 500, false);
        busy.idle_ms = 1000;
        assert_eq!(pick_victim(&[busy]), None);
        busy.idle_ms = EVICT_IDLE.as_millis() as u64;
        assert_eq!(pick_victim(&[busy]), Some(5));
    }
}
