//! The peer sources the user gave a torrent: a magnet link's `x.pe` peers (BEP 9) and
//! peers added by hand. They are kept in the torrent's record across restarts (a magnet
//! whose only peer is its `x.pe` one is otherwise stranded after a restart), put into the
//! peer book whenever the torrent runs, and never forgotten by it. Adding a magnet link
//! that is already in the session merges its new trackers and peers here.

use std::net::SocketAddr;

use super::info::Info;
use super::{Env, Torrent};
use crate::api::{EventKind, EventLevel, PeerSource};
use crate::metainfo::Magnet;
use crate::state::{KeptPeer, PeerOrigin};
use crate::tracker::TrackerClient;

/// The peer sources the session runs for a torrent, noted when it joins the swarm (the
/// DHT and LSD when the session runs them and the torrent is public; PEX when on in the
/// config and the torrent is public).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Discovery {
    /// The DHT (BEP 5).
    pub dht: bool,
    /// Local Service Discovery (BEP 14).
    pub lsd: bool,
    /// Peer exchange (BEP 11).
    pub pex: bool,
}

/// What a magnet link added again brought in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Merged {
    /// Trackers the torrent did not have.
    pub trackers: usize,
    /// Peers the torrent did not keep.
    pub peers: usize,
}

impl Merged {
    /// For the message line, e.g. `"added 1 tracker and 2 peers from the link"`, or
    /// `"the link brings no new tracker or peer"`.
    pub fn describe(self) -> String {
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        match (self.trackers, self.peers) {
            (0, 0) => "the link brings no new tracker or peer".to_owned(),
            (t, 0) => format!("added {} from the link", plural(t, "tracker")),
            (0, p) => format!("added {} from the link", plural(p, "peer")),
            (t, p) => format!(
                "added {} and {} from the link",
                plural(t, "tracker"),
                plural(p, "peer")
            ),
        }
    }
}

/// The peer book's source for a kept peer.
fn source_of(origin: PeerOrigin) -> PeerSource {
    match origin {
        PeerOrigin::Magnet => PeerSource::Magnet,
        PeerOrigin::Manual => PeerSource::Manual,
    }
}

/// Whether `addr` can be dialled at all (a port, a specified address).
pub fn dialable(addr: &SocketAddr) -> bool {
    addr.port() != 0 && !addr.ip().is_unspecified() && !addr.ip().is_multicast()
}

/// Keep `addr` in `kept` (once). Returns whether it is new.
fn keep(kept: &mut Vec<KeptPeer>, addr: SocketAddr, origin: PeerOrigin) -> bool {
    if !dialable(&addr) || kept.iter().any(|k| k.addr == addr) {
        return false;
    }
    kept.push(KeptPeer { addr, origin });
    true
}

/// The peers of a magnet link, to keep.
pub fn kept_of(link: &Magnet) -> Vec<KeptPeer> {
    let mut kept = Vec::new();
    for a in &link.peers {
        keep(&mut kept, *a, PeerOrigin::Magnet);
    }
    kept
}

/// The headline of a running torrent without a usable tracker and without peers: where
/// peers can come from, e.g. `"no trackers: peers come from the magnet link's peer,
/// PEX and incoming connections"`.
pub fn no_tracker_headline(kept: &[KeptPeer], discovery: Discovery, private: bool) -> String {
    let magnet = kept
        .iter()
        .filter(|k| k.origin == PeerOrigin::Magnet)
        .count();
    let manual = kept.len() - magnet;
    let mut from: Vec<String> = Vec::new();
    if magnet > 0 {
        from.push(format!(
            "the magnet link's peer{}",
            if magnet == 1 { "" } else { "s" }
        ));
    }
    if manual > 0 {
        from.push(format!(
            "{manual} peer{} added by hand",
            if manual == 1 { "" } else { "s" }
        ));
    }
    if !private {
        if discovery.dht {
            from.push("the DHT".into());
        }
        if discovery.lsd {
            from.push("LSD".into());
        }
        if discovery.pex {
            from.push("PEX".into());
        }
    }
    from.push("incoming connections".into());
    let last = from.pop().unwrap_or_default();
    let list = if from.is_empty() {
        last
    } else {
        format!("{} and {last}", from.join(", "))
    };
    format!("no trackers: peers come from {list}")
}

impl Torrent {
    /// Note which peer sources the session runs for it (it joins the swarm).
    pub(super) fn note_discovery(&mut self, env: &Env<'_>) {
        self.discovery = Discovery {
            dht: self.dht_allowed(env),
            lsd: self.lsd_allowed(env),
            pex: env.ctx.config.pex && !self.sum.private,
        };
    }

    /// Whether `source` gives this torrent peers now (or would, once it runs).
    pub(super) fn in_effect(&self, source: PeerSource) -> bool {
        let given = |o| self.kept_peers.iter().any(|k| k.origin == o);
        match source {
            PeerSource::Tracker => !self.trackers.is_empty(),
            PeerSource::Incoming => true,
            PeerSource::Dht => self.discovery.dht && !self.sum.private,
            PeerSource::Lsd => self.discovery.lsd && !self.sum.private,
            PeerSource::Pex => self.discovery.pex && !self.sum.private,
            PeerSource::Magnet => given(PeerOrigin::Magnet),
            PeerSource::Manual => given(PeerOrigin::Manual),
            PeerSource::WebSeed => self.web_seeds.in_effect(),
        }
    }

    /// The peers the user gave, for the detail view.
    pub(super) fn given_peers(&self) -> Vec<(SocketAddr, PeerSource)> {
        self.kept_peers
            .iter()
            .map(|k| (k.addr, source_of(k.origin)))
            .collect()
    }

    /// The message of a running torrent: its trackers' headline (a warning, all failing);
    /// without a usable tracker, where peers come from while none is connected and no web
    /// seed works (never "waiting" while a peer or a web seed sends).
    pub(super) fn sources_headline(&self) -> Option<String> {
        if self.trackers.any_supported() {
            return self.trackers.headline();
        }
        if !self.peers.is_empty() || self.web_seeds.active() > 0 {
            return None;
        }
        Some(no_tracker_headline(
            &self.kept_peers,
            self.discovery,
            self.sum.private,
        ))
    }

    /// The peers the user gave, in the order given.
    pub fn kept_peers(&self) -> &[KeptPeer] {
        &self.kept_peers
    }

    /// Into the peer book (the torrent joins the swarm).
    pub(super) fn book_kept_peers(&mut self, env: &mut Env<'_>) {
        for k in &self.kept_peers {
            self.book.add_kept(k.addr, source_of(k.origin), env.now);
        }
    }

    /// A peer added by hand: kept across restarts and dialled now if the torrent runs.
    /// Returns false (and logs why) for an address that cannot be dialled or that the IP
    /// filter blocks (counted as a blocked attempt).
    pub fn add_peer(&mut self, addr: SocketAddr, env: &mut Env<'_>) -> bool {
        if !dialable(&addr) {
            self.log(
                env,
                EventLevel::Warn,
                EventKind::PeerRefused,
                format!("peer {addr} not added: it has no port or no address to dial"),
            );
            return false;
        }
        if env.ctx.ip_filter.check(addr.ip()) {
            self.log(
                env,
                EventLevel::Warn,
                EventKind::PeerRefused,
                format!("peer {addr} not added: the IP filter blocks it"),
            );
            return false;
        }
        let new = keep(&mut self.kept_peers, addr, PeerOrigin::Manual);
        if let Some(k) = self.kept_peers.iter_mut().find(|k| k.addr == addr) {
            // given by hand now: shown as such
            k.origin = PeerOrigin::Manual;
        }
        // kept within a second (not at the next minute's checkpoint)
        self.persist_dirty = true;
        *env.publish_now = true;
        let running = self.life.is_running();
        if running {
            self.book.add_kept(addr, PeerSource::Manual, env.now);
            self.connect_more(env);
        }
        self.log(
            env,
            EventLevel::Info,
            EventKind::Added,
            format!(
                "peer {addr} {} by hand{}",
                if new { "added" } else { "given again" },
                if running {
                    "; dialling it"
                } else {
                    "; dialled when the torrent runs"
                }
            ),
        );
        true
    }

    /// The magnet link of this torrent was added again: take its trackers and peers that
    /// are new (a magnet still fetching its metadata keeps them in its link too).
    pub fn merge_magnet(&mut self, link: &Magnet, env: &mut Env<'_>) -> Merged {
        let mut merged = Merged::default();
        let running = self.life.is_running().then_some(env.now);
        for url in &link.trackers {
            if self
                .trackers
                .add_tracker(url, TrackerClient::supports, running)
            {
                merged.trackers += 1;
                self.sum.trackers.push(vec![url.clone()]);
                if let Info::Magnet(link) = &mut self.info
                    && !link.trackers.contains(url)
                {
                    link.trackers.push(url.clone());
                }
            }
        }
        for a in &link.peers {
            if keep(&mut self.kept_peers, *a, PeerOrigin::Magnet) {
                merged.peers += 1;
                if running.is_some() {
                    self.book.add_kept(*a, PeerSource::Magnet, env.now);
                }
            }
        }
        if merged != Merged::default() {
            self.persist_dirty = true;
            *env.publish_now = true;
            self.log(
                env,
                EventLevel::Info,
                EventKind::Added,
                format!("added again from a magnet link: {}", merged.describe()),
            );
            if running.is_some() {
                self.schedule_announce(env);
                self.connect_more(env);
            }
        }
        merged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_trackers_the_headline_names_the_sources_in_effect() {
        let magnet = KeptPeer {
            addr: "127.0.0.1:1".parse().unwrap(),
            origin: PeerOrigin::Magnet,
        };
        let manual = KeptPeer {
            addr: "127.0.0.1:2".parse().unwrap(),
            origin: PeerOrigin::Manual,
        };
        let all = Discovery {
            dht: true,
            lsd: true,
            pex: true,
        };
        assert_eq!(
            no_tracker_headline(&[magnet], Discovery::default(), false),
            "no trackers: peers come from the magnet link's peer and incoming connections"
        );
        assert_eq!(
            no_tracker_headline(&[magnet, manual, manual], all, false),
            "no trackers: peers come from the magnet link's peer, 2 peers added by hand, the DHT, LSD, PEX and incoming connections"
        );
        // a private torrent takes no DHT, LSD nor PEX peers
        assert_eq!(
            no_tracker_headline(&[], all, true),
            "no trackers: peers come from incoming connections"
        );
    }

    #[test]
    fn merged_says_what_came_in() {
        let m = |trackers, peers| Merged { trackers, peers }.describe();
        assert_eq!(m(0, 0), "the link brings no new tracker or peer");
        assert_eq!(m(1, 0), "added 1 tracker from the link");
        assert_eq!(m(0, 2), "added 2 peers from the link");
        assert_eq!(m(2, 1), "added 2 trackers and 1 peer from the link");
    }

    #[test]
    fn a_magnets_peers_are_kept_once_and_only_dialable_ones() {
        let mut link = Magnet::parse(&format!(
            "magnet:?xt=urn:btih:{}&x.pe=127.0.0.1:6881&x.pe=127.0.0.1:6881&x.pe=[::1]:7000",
            "ab".repeat(20)
        ))
        .unwrap();
        link.peers.push("0.0.0.0:1".parse().unwrap());
        link.peers.push("127.0.0.2:0".parse().unwrap());
        let kept = kept_of(&link);
        let addrs: Vec<String> = kept.iter().map(|k| k.addr.to_string()).collect();
        assert_eq!(addrs, ["127.0.0.1:6881", "[::1]:7000"]);
        assert!(kept.iter().all(|k| k.origin == PeerOrigin::Magnet));
    }
}
