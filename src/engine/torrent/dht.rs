//! A torrent's use of the DHT (BEP 5): while a public torrent runs (downloading or
//! seeding, not paused), a lookup that also announces our TCP port starts at once and
//! then every [`INTERVAL`] ([`INTERVAL_FEW_PEERS`] while it has fewer than [`FEW_PEERS`]
//! peers connected); the addresses found go into the peer book as [`PeerSource::Dht`],
//! within its caps. Private torrents (BEP 27, `private=1`) never touch the DHT: no lookup,
//! no announce, no DHT bit in the handshakes we dial with, no `port` messages (an
//! incoming handshake is answered before the torrent is known, with the bit set; no
//! `port` follows and a peer's `port` is ignored).
//!
//! One lookup at a time per torrent: a lookup still running when the next is due is left
//! to finish and the next one waits a round. Lookups queue session-wide for one of
//! [`crate::dht::MAX_CONCURRENT_LOOKUPS`] slots, so thousands of torrents do not flood
//! the DHT. With an empty routing table no lookup starts and the torrent waits
//! [`INTERVAL`] (an offline node costs one timer per torrent per 5 minutes); when the
//! table gets its first nodes the session kicks every waiting torrent ([`Torrent::dht_kick`]).

use std::net::SocketAddr;
use std::time::Duration;

use super::{Env, TimerKey, Torrent, TorrentTimer};
use crate::api::PeerSource;
use crate::engine::ctx::SessionEvent;

/// Time between lookups of a torrent with enough peers (BEP 5 tokens last about 10 min;
/// announcing every 5 keeps us listed).
pub const INTERVAL: Duration = Duration::from_secs(5 * 60);
/// Time between lookups while the torrent has few peers.
pub const INTERVAL_FEW_PEERS: Duration = Duration::from_secs(30);
/// Fewer connected peers than this is "few".
pub const FEW_PEERS: usize = 5;

/// The DHT state of one torrent.
#[derive(Debug, Default)]
pub struct DhtLookups {
    /// The lookup running, if any (aborted when the torrent stops).
    task: Option<tokio::task::AbortHandle>,
    /// Lookups started (for diagnostics).
    pub started: u64,
}

impl Torrent {
    /// The torrent may use the DHT: the session runs a node and the torrent is public.
    pub(super) fn dht_allowed(&self, env: &Env<'_>) -> bool {
        env.ctx.dht.is_on() && !self.sum.private
    }

    /// The torrent started (or resumed): look up peers now.
    pub(super) fn dht_start(&mut self, env: &mut Env<'_>) {
        if self.dht_allowed(env) {
            env.timers
                .schedule(TimerKey::Torrent(self.id, TorrentTimer::Dht), env.now);
        }
    }

    /// The torrent stopped: end its lookup and cancel the next.
    pub(super) fn dht_stop(&mut self, env: &mut Env<'_>) {
        if let Some(t) = self.dht.task.take() {
            t.abort();
        }
        env.timers
            .cancel(TimerKey::Torrent(self.id, TorrentTimer::Dht));
    }

    /// The lookup timer fired: start a lookup (unless one still runs) and schedule the
    /// next one.
    pub(super) fn dht_due(&mut self, env: &mut Env<'_>) {
        let Some(dht) = env.ctx.dht.get() else {
            return;
        };
        if self.sum.private || !self.life.is_running() {
            return;
        }
        let running = self.dht.task.as_ref().is_some_and(|t| !t.is_finished());
        let empty = dht.node_count() == 0;
        if !running && !empty {
            self.dht.started += 1;
            let ctx = env.ctx.clone();
            let torrent = self.id;
            // BEP 52: a hybrid is looked up and announced under both hashes
            let lookups: Vec<_> = self
                .swarm_hashes()
                .map(|h| dht.lookup(h, Some(ctx.listen_port)))
                .collect();
            let task = tokio::spawn(async move {
                // the lookups run at once; their peers are read one lookup after the other
                for mut found in lookups {
                    while let Some(a) = found.recv().await {
                        let mut peers = vec![a];
                        while let Ok(a) = found.try_recv() {
                            peers.push(a);
                        }
                        ctx.send(SessionEvent::DhtPeers { torrent, peers });
                    }
                }
            });
            self.dht.task = Some(task.abort_handle());
        }
        let every = if self.peers.len() < FEW_PEERS && !empty {
            INTERVAL_FEW_PEERS
        } else {
            INTERVAL
        };
        env.timers.schedule(
            TimerKey::Torrent(self.id, TorrentTimer::Dht),
            env.now + every,
        );
    }

    /// The session switched the DHT on or off while it runs: a running public torrent
    /// starts looking up peers (or stops), its connections may use the node (or not), and
    /// its peer sources say so.
    pub fn dht_switched(&mut self, env: &mut Env<'_>) {
        let allowed = self.dht_allowed(env);
        if let Some(s) = self.shared() {
            s.set_dht(allowed);
        }
        if !self.life.is_running() {
            return;
        }
        self.note_discovery(env);
        if allowed {
            self.dht_start(env);
        } else {
            self.dht_stop(env);
        }
    }

    /// The DHT's routing table just got its first nodes: a torrent that skipped its
    /// lookup for want of nodes looks up now.
    pub fn dht_kick(&mut self, env: &mut Env<'_>) {
        let key = TimerKey::Torrent(self.id, TorrentTimer::Dht);
        if self.dht_allowed(env)
            && self.life.is_running()
            && self.dht.task.as_ref().is_none_or(|t| t.is_finished())
            && env.timers.deadline(key).is_some()
        {
            env.timers.schedule(key, env.now);
        }
    }

    /// A DHT lookup found `peers`: into the peer book (it drops port 0, known, banned and
    /// our own addresses, and keeps at most its cap), then dial if there is room.
    pub fn on_dht_peers(&mut self, peers: &[SocketAddr], env: &mut Env<'_>) {
        if !self.life.is_running() || !self.dht_allowed(env) {
            return;
        }
        let mut new = 0;
        for a in peers {
            new += usize::from(self.book.add(*a, PeerSource::Dht, env.now));
        }
        tracing::debug!(torrent = %self.sum.name, peers = peers.len(), new, "DHT peers");
        if new > 0 {
            self.connect_more(env);
        }
    }
}
