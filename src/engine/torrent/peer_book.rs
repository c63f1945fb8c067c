//! The peer book of one torrent: every address we learnt (from trackers, incoming
//! connections, and later DHT and PEX), whether it is connected, when it may be dialled
//! again, and which hosts are banned. A plain struct: the torrent asks it whom to dial and
//! tells it how dials and connections ended.
//!
//! - A failed dial or a dropped connection backs the address off: 30 s, doubling per
//!   consecutive failure, at most 30 min; after [`MAX_FAILS`] failures in a row the address
//!   is forgotten (a tracker or PEX can teach it again), unless the user gave it (a magnet
//!   link's `x.pe`, added by hand): those stay, retried at the longest back-off.
//! - Addresses found to be seeds are not dialled while we seed too.
//! - A banned host (hash failures, protocol abuse) is never dialled nor accepted.
//! - An address the session's IP filter blocks is held back, not dialled, and counted as a
//!   blocked attempt; when a new filter is installed, held addresses it no longer blocks
//!   come back (and known ones it now blocks are held back at their next dial).
//! - The book holds at most [`MAX_KNOWN`] addresses, so a tracker or peer that lists
//!   thousands of addresses cannot grow it without bound; new ones are dropped when full.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use std::sync::Arc;

use crate::api::PeerSource;
use crate::engine::ip_filter::Blocklist;

/// Most addresses kept per torrent.
pub const MAX_KNOWN: usize = 2000;
/// First back-off after a failure; doubles per consecutive failure.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(30);
/// Longest back-off.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30 * 60);
/// Consecutive failures after which an address is forgotten.
pub const MAX_FAILS: u32 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Idle,
    Dialing,
    Connected,
}

#[derive(Debug, Clone)]
struct Entry {
    source: PeerSource,
    slot: Slot,
    fails: u32,
    next_try: Instant,
    seed: bool,
}

/// Known addresses of one torrent.
#[derive(Debug, Default)]
pub struct PeerBook {
    entries: HashMap<SocketAddr, Entry>,
    banned: HashSet<IpAddr>,
    /// Our own listen addresses as seen by trackers: never dialled.
    ourselves: HashSet<SocketAddr>,
    /// The session's IP filter (none in tests that do not set it).
    filter: Option<Arc<Blocklist>>,
    /// Addresses the filter blocked, with their source, at most [`MAX_KNOWN`].
    held: HashMap<SocketAddr, PeerSource>,
    /// The filter's generation when `held` was last looked at.
    filter_gen: u64,
}

impl PeerBook {
    /// An empty book.
    pub fn new() -> PeerBook {
        PeerBook::default()
    }

    /// Hold back the addresses `filter` blocks (from now on).
    pub fn set_filter(&mut self, filter: Arc<Blocklist>) {
        self.filter_gen = filter.generation();
        self.filter = Some(filter);
    }

    /// Whether the IP filter blocks `ip` now (not counted).
    pub fn is_filtered(&self, ip: IpAddr) -> bool {
        self.filter.as_ref().is_some_and(|f| f.blocks(ip))
    }

    /// Hold `addr` back if the filter blocks it (counted once per address while held).
    fn hold_if_filtered(&mut self, addr: SocketAddr, source: PeerSource) -> bool {
        let Some(f) = &self.filter else { return false };
        if let Some(s) = self.held.get_mut(&addr) {
            // the user's word outranks a tracker's, as in add_kept
            if matches!(source, PeerSource::Magnet | PeerSource::Manual) {
                *s = source;
            }
            return f.blocks(addr.ip());
        }
        if !f.check(addr.ip()) {
            return false;
        }
        if self.held.len() < MAX_KNOWN {
            self.held.insert(addr, source);
        }
        true
    }

    /// Addresses held back by the IP filter.
    pub fn held_count(&self) -> usize {
        self.held.len()
    }

    /// A new IP filter was installed since the last call: addresses it no longer blocks
    /// come back, dialable now. Returns how many came back.
    pub fn refilter(&mut self, now: Instant) -> usize {
        let Some(f) = &self.filter else { return 0 };
        let g = f.generation();
        if g == self.filter_gen {
            return 0;
        }
        self.filter_gen = g;
        let free: Vec<(SocketAddr, PeerSource)> = self
            .held
            .iter()
            .filter(|(a, _)| !f.blocks(a.ip()))
            .map(|(a, s)| (*a, *s))
            .collect();
        let mut back = 0;
        for (a, s) in free {
            self.held.remove(&a);
            back += usize::from(self.add(a, s, now));
        }
        back
    }

    /// Learn `addr` from `source`. Returns true if it is new and may be dialled (false for
    /// one the IP filter blocks: it is held back, see [`PeerBook::refilter`]).
    pub fn add(&mut self, addr: SocketAddr, source: PeerSource, now: Instant) -> bool {
        if addr.port() == 0
            || addr.ip().is_unspecified()
            || self.banned.contains(&addr.ip())
            || self.ourselves.contains(&addr)
            || self.entries.contains_key(&addr)
            || self.entries.len() >= MAX_KNOWN
            || self.hold_if_filtered(addr, source)
        {
            return false;
        }
        self.entries.insert(
            addr,
            Entry {
                source,
                slot: Slot::Idle,
                fails: 0,
                next_try: now,
                seed: false,
            },
        );
        true
    }

    /// Learn `addr` that the user gave (`source`: [`PeerSource::Magnet`] or
    /// [`PeerSource::Manual`]): like [`PeerBook::add`], but a known address takes this
    /// source (it is then never forgotten) and, when idle, may be dialled at once. Returns
    /// false for an address that can never be dialled (port 0, unspecified, banned, ours)
    /// or when the book is full, and for one the IP filter blocks (held back).
    pub fn add_kept(&mut self, addr: SocketAddr, source: PeerSource, now: Instant) -> bool {
        if self.hold_if_filtered(addr, source) {
            self.entries.remove(&addr);
            return false;
        }
        if let Some(e) = self.entries.get_mut(&addr) {
            e.source = source;
            if e.slot == Slot::Idle {
                e.next_try = now;
            }
            return true;
        }
        self.add(addr, source, now)
    }

    /// Addresses known per source, in no particular order.
    pub fn source_counts(&self) -> std::collections::HashMap<PeerSource, u32> {
        let mut m = std::collections::HashMap::new();
        for e in self.entries.values() {
            *m.entry(e.source).or_insert(0) += 1;
        }
        m
    }

    /// Addresses known.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No address known.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Where `addr` came from, if known.
    pub fn source(&self, addr: &SocketAddr) -> Option<PeerSource> {
        self.entries.get(addr).map(|e| e.source)
    }

    /// Up to `max` addresses to dial now (each is then "dialling" until
    /// [`PeerBook::dial_failed`] or [`PeerBook::connected`]). Skips connected, dialling,
    /// backed-off, banned and (when `seeding`) seed addresses. Fewest failures first.
    pub fn take_dials(&mut self, now: Instant, max: usize, seeding: bool) -> Vec<SocketAddr> {
        // the configured IP filter is not read yet: dialled once it is in force
        if max == 0 || self.filter.as_ref().is_some_and(|f| f.pending()) {
            return Vec::new();
        }
        let mut ready: Vec<(u32, SocketAddr)> = self
            .entries
            .iter()
            .filter(|(a, e)| {
                e.slot == Slot::Idle
                    && e.next_try <= now
                    && !(seeding && e.seed)
                    && !self.banned.contains(&a.ip())
            })
            .map(|(a, e)| (e.fails, *a))
            .collect();
        // a filter installed since they were learnt may block some: held back, not dialled
        if self.filter.as_ref().is_some_and(|f| f.ranges().is_some()) {
            ready.retain(|(_, a)| {
                let source = self
                    .entries
                    .get(a)
                    .map_or(PeerSource::Tracker, |e| e.source);
                if self.hold_if_filtered(*a, source) {
                    self.entries.remove(a);
                    false
                } else {
                    true
                }
            });
        }
        ready.sort_unstable();
        ready.truncate(max);
        for (_, a) in &ready {
            if let Some(e) = self.entries.get_mut(a) {
                e.slot = Slot::Dialing;
            }
        }
        ready.into_iter().map(|(_, a)| a).collect()
    }

    /// The earliest time a backed-off address may be dialled, if any is waiting.
    pub fn next_wakeup(&self, seeding: bool) -> Option<Instant> {
        self.entries
            .iter()
            .filter(|(a, e)| {
                e.slot == Slot::Idle && !(seeding && e.seed) && !self.banned.contains(&a.ip())
            })
            .map(|(_, e)| e.next_try)
            .min()
    }

    /// Whether an entry is forgotten after this many failures (never one the user gave).
    fn given_up(e: &Entry) -> bool {
        e.fails >= MAX_FAILS && !matches!(e.source, PeerSource::Magnet | PeerSource::Manual)
    }

    fn back_off(e: &mut Entry, now: Instant) {
        let d = FIRST_BACKOFF
            .saturating_mul(1 << e.fails.min(10))
            .min(MAX_BACKOFF);
        e.fails += 1;
        e.next_try = now + d;
        e.slot = Slot::Idle;
    }

    /// A dial of `addr` failed: back it off (or forget it after [`MAX_FAILS`]).
    pub fn dial_failed(&mut self, addr: SocketAddr, now: Instant) {
        if let Some(e) = self.entries.get_mut(&addr) {
            Self::back_off(e, now);
            if Self::given_up(e) {
                self.entries.remove(&addr);
            }
        }
    }

    /// `addr` turned out to be ourselves: never dial it again.
    pub fn is_ourselves(&mut self, addr: SocketAddr) {
        self.entries.remove(&addr);
        self.ourselves.insert(addr);
    }

    /// A connection to or from `addr` was established. An incoming peer is learnt here too.
    pub fn connected(&mut self, addr: SocketAddr, source: PeerSource, now: Instant) {
        if !self.entries.contains_key(&addr) && self.entries.len() < MAX_KNOWN {
            self.add(addr, source, now);
        }
        if let Some(e) = self.entries.get_mut(&addr) {
            e.slot = Slot::Connected;
            e.fails = 0;
        }
    }

    /// The connection to `addr` ended: it may be redialled after a back-off (an incoming
    /// peer's address is its outgoing port, often not its listen port: it is forgotten).
    /// `was_seed`: it had every piece.
    pub fn disconnected(&mut self, addr: SocketAddr, incoming: bool, was_seed: bool, now: Instant) {
        if incoming {
            self.entries.remove(&addr);
            return;
        }
        if let Some(e) = self.entries.get_mut(&addr) {
            e.seed |= was_seed;
            Self::back_off(e, now);
            if Self::given_up(e) {
                self.entries.remove(&addr);
            }
        }
    }

    /// Our connection to `addr` was closed by us for a reason that is not the peer's fault
    /// (the torrent changed phase): it may be dialled again at once, no failure counted.
    pub fn release(&mut self, addr: SocketAddr, now: Instant) {
        if let Some(e) = self.entries.get_mut(&addr) {
            e.slot = Slot::Idle;
            e.next_try = now;
        }
    }

    /// Ban a host: never dial nor accept it again (for this torrent).
    pub fn ban(&mut self, ip: IpAddr) {
        self.banned.insert(ip);
        self.entries.retain(|a, _| a.ip() != ip);
    }

    /// Whether `ip` is banned.
    pub fn is_banned(&self, ip: &IpAddr) -> bool {
        self.banned.contains(ip)
    }

    /// Forget every address (the torrent left the swarm: its connections are closing);
    /// bans and our own addresses stay.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.held.clear();
    }

    /// Count of addresses waiting to be dialled (not connected, not dialling).
    pub fn idle_count(&self) -> usize {
        self.entries
            .values()
            .filter(|e| e.slot == Slot::Idle)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_the_user_gave_are_never_forgotten_and_a_known_one_is_retried_at_once() {
        let t0 = Instant::now();
        let mut b = PeerBook::new();
        assert!(b.add_kept(a(1), PeerSource::Manual, t0));
        b.add(a(2), PeerSource::Tracker, t0);
        for i in 0..MAX_FAILS + 2 {
            let now = t0 + MAX_BACKOFF * (i + 1);
            let dials = b.take_dials(now, 10, false);
            for d in dials {
                b.dial_failed(d, now);
            }
        }
        assert_eq!(b.source(&a(1)), Some(PeerSource::Manual), "kept");
        assert_eq!(b.source(&a(2)), None, "a tracker's address is forgotten");
        // known from a tracker and backed off: given by hand, it is dialled now
        let t1 = t0 + MAX_BACKOFF * 20;
        b.add(a(3), PeerSource::Tracker, t1);
        let d = b.take_dials(t1, 10, false);
        assert!(d.contains(&a(3)));
        b.dial_failed(a(3), t1);
        assert!(!b.take_dials(t1, 10, false).contains(&a(3)), "backed off");
        assert!(b.add_kept(a(3), PeerSource::Magnet, t1));
        assert_eq!(b.source(&a(3)), Some(PeerSource::Magnet));
        assert!(b.take_dials(t1, 10, false).contains(&a(3)));
        assert!(!b.add_kept(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            PeerSource::Manual,
            t1
        ));
    }

    fn a(n: u8) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, n], 6881))
    }

    /// Blocks 127.0.0.2..=127.0.0.3 (and nothing else).
    fn blocking_2_and_3() -> crate::net::ip_filter::IpFilter {
        crate::net::ip_filter::IpFilter::from_ranges(vec![(0x7f00_0002, 0x7f00_0003)], vec![])
    }

    #[test]
    fn addresses_the_ip_filter_blocks_are_held_back_and_come_back_when_it_changes() {
        let t0 = Instant::now();
        let filter = Arc::new(Blocklist::default());
        let mut b = PeerBook::new();
        b.set_filter(filter.clone());
        // learnt before the filter is read: known, and held back at the dial
        assert!(b.add(a(2), PeerSource::Dht, t0));
        filter.install(Some(blocking_2_and_3()));
        assert_eq!(b.take_dials(t0, 10, false), Vec::<SocketAddr>::new());
        assert_eq!((b.len(), b.held_count(), filter.blocked()), (0, 1, 1));
        // from every source, kept ones too: not dialled, counted once per address
        assert!(!b.add(a(3), PeerSource::Tracker, t0));
        assert!(!b.add(a(3), PeerSource::Tracker, t0));
        assert!(!b.add_kept(a(2), PeerSource::Manual, t0));
        assert!(b.add(a(4), PeerSource::Pex, t0));
        assert!(b.is_filtered(a(3).ip()) && !b.is_filtered(a(4).ip()));
        assert_eq!(b.take_dials(t0, 10, false), vec![a(4)]);
        assert_eq!((b.held_count(), filter.blocked()), (2, 2));
        // no new filter: nothing comes back
        assert_eq!(b.refilter(t0), 0);
        // the filter no longer blocks them: dialled with their source
        filter.install(Some(crate::net::ip_filter::IpFilter::default()));
        assert_eq!(b.refilter(t0), 2);
        assert_eq!(b.held_count(), 0);
        let mut d = b.take_dials(t0, 10, false);
        d.sort();
        assert_eq!(d, vec![a(2), a(3)]);
        assert_eq!(
            b.source(&a(2)),
            Some(PeerSource::Manual),
            "given by hand last"
        );
        assert_eq!(b.source(&a(3)), Some(PeerSource::Tracker));
        // an IPv4 peer written as IPv4-mapped IPv6 is the same host
        filter.install(Some(blocking_2_and_3()));
        let mapped: SocketAddr = "[::ffff:127.0.0.2]:6881".parse().unwrap();
        assert!(!b.add(mapped, PeerSource::Incoming, t0));
    }

    #[test]
    fn dial_back_off_and_forget() {
        let t0 = Instant::now();
        let mut b = PeerBook::new();
        assert!(b.add(a(1), PeerSource::Tracker, t0));
        assert!(!b.add(a(1), PeerSource::Tracker, t0), "known already");
        assert!(!b.add(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            PeerSource::Tracker,
            t0
        ));
        assert!(!b.add(SocketAddr::from(([0, 0, 0, 0], 1)), PeerSource::Tracker, t0));
        assert_eq!(b.take_dials(t0, 10, false), vec![a(1)]);
        assert!(b.take_dials(t0, 10, false).is_empty(), "dialling");
        b.dial_failed(a(1), t0);
        assert!(b.take_dials(t0, 10, false).is_empty(), "backed off");
        assert_eq!(b.next_wakeup(false), Some(t0 + FIRST_BACKOFF));
        for i in 1..MAX_FAILS {
            let now = b.next_wakeup(false).unwrap();
            assert_eq!(b.take_dials(now, 10, false), vec![a(1)], "round {i}");
            b.dial_failed(a(1), now);
        }
        assert!(b.is_empty(), "forgotten after {MAX_FAILS} failures");
        assert_eq!(b.next_wakeup(false), None);
    }

    #[test]
    fn connected_peers_are_not_dialled_and_seeds_not_while_seeding() {
        let t0 = Instant::now();
        let mut b = PeerBook::new();
        b.add(a(1), PeerSource::Tracker, t0);
        b.add(a(2), PeerSource::Tracker, t0);
        let mut d = b.take_dials(t0, 1, false);
        assert_eq!(d.len(), 1);
        let first = d.remove(0);
        b.connected(first, PeerSource::Tracker, t0);
        let other = b.take_dials(t0, 5, false);
        assert_eq!(other.len(), 1);
        assert_ne!(other[0], first);
        b.disconnected(first, false, true, t0);
        let later = t0 + MAX_BACKOFF;
        assert!(
            b.take_dials(later, 5, true).is_empty(),
            "a seed while we seed"
        );
        assert_eq!(b.take_dials(later, 5, false), vec![first]);
    }

    #[test]
    fn bans_ourselves_incoming_and_the_cap() {
        let t0 = Instant::now();
        let mut b = PeerBook::new();
        b.add(a(1), PeerSource::Tracker, t0);
        b.ban(a(1).ip());
        assert!(b.is_banned(&a(1).ip()));
        assert!(!b.add(a(1), PeerSource::Tracker, t0));
        assert!(b.take_dials(t0, 5, false).is_empty());
        b.is_ourselves(a(9));
        assert!(!b.add(a(9), PeerSource::Tracker, t0));
        // incoming peers are forgotten when they leave
        b.connected(a(3), PeerSource::Incoming, t0);
        assert_eq!(b.source(&a(3)), Some(PeerSource::Incoming));
        b.disconnected(a(3), true, false, t0);
        assert!(b.is_empty());
        for i in 0..(MAX_KNOWN as u32 + 100) {
            let addr = SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 1000));
            b.add(addr, PeerSource::Pex, t0);
        }
        assert_eq!(b.len(), MAX_KNOWN);
        assert_eq!(b.take_dials(t0, 50, false).len(), 50);
        b.clear();
        assert!(
            b.is_empty(),
            "dialling entries are dropped too; their results are ignored"
        );
        assert!(
            !b.add(a(9), PeerSource::Tracker, t0),
            "ourselves stays known"
        );
    }
}
