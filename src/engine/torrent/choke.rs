//! Choking (BEP 3 §choking): which interested peers we serve. A plain struct that decides
//! from plain views of the peers; the torrent sends the `choke`/`unchoke` messages.
//!
//! Every round (10 s) the interested peers with the best rate get the regular slots — while
//! downloading the rate they send to us (tit-for-tat), while seeding the rate we reach
//! sending to them — and one more slot goes to an optimistic peer, rotated every 30 s and
//! preferring peers never unchoked before, so newcomers get a chance.
//!
//! Slots are reclaimed from peers that take nothing: a peer whose socket stopped draining
//! (data queued, no write progress) or that held a slot for a whole round without asking
//! for anything is choked and ranked after everyone else, so a real leecher gets its slot
//! within one round. Between rounds, a peer that becomes interested while a slot is free is
//! unchoked at once ([`Choker::fill`]).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::engine::picker::PeerKey;

/// Time between choke rounds.
pub const ROUND: Duration = Duration::from_secs(10);
/// Time between optimistic-unchoke rotations.
pub const OPTIMISTIC_ROTATION: Duration = Duration::from_secs(30);
/// An unchoked peer that asks for nothing for this long loses its slot.
pub const PROBATION: Duration = Duration::from_secs(3);
/// While a newly unchoked peer is on probation, slots are re-checked this often.
pub const RECHECK: Duration = Duration::from_secs(1);

/// One peer as the choker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChokeView {
    /// The peer.
    pub key: PeerKey,
    /// It wants pieces from us.
    pub interested: bool,
    /// We choke it now.
    pub am_choking: bool,
    /// Bytes/s over the last round: from the peer while we download, to it while we seed.
    pub rate: u64,
    /// Data for it is queued and its socket made no write progress for a while.
    pub stalled: bool,
    /// It held a slot for the whole last round and asked for nothing.
    pub took_nothing: bool,
    /// When we last unchoked it (`None`: never).
    pub last_unchoked: Option<Instant>,
}

impl ChokeView {
    fn eligible(&self) -> bool {
        self.interested && !self.stalled && !self.took_nothing
    }
}

/// Best first: higher rate; then never unchoked (newest connection first); then unchoked
/// longest ago.
fn rank(a: &ChokeView, b: &ChokeView) -> std::cmp::Ordering {
    b.rate
        .cmp(&a.rate)
        .then_with(|| match (a.last_unchoked, b.last_unchoked) {
            (None, None) => b.key.cmp(&a.key),
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => x.cmp(&y).then(a.key.cmp(&b.key)),
        })
}

/// What [`Choker::fill`] decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fill {
    /// Peers to choke: they hold a slot and take nothing.
    pub choke: Vec<PeerKey>,
    /// Peers to unchoke into free slots.
    pub unchoke: Vec<PeerKey>,
}

/// The choker of one torrent.
#[derive(Debug, Clone)]
pub struct Choker {
    slots: usize,
    optimistic: Option<PeerKey>,
    optimistic_at: Option<Instant>,
}

impl Choker {
    /// Serve `slots` peers at once (at least 1).
    pub fn new(slots: usize) -> Choker {
        Choker {
            slots: slots.max(1),
            optimistic: None,
            optimistic_at: None,
        }
    }

    /// The peer in the optimistic slot.
    pub fn optimistic(&self) -> Option<PeerKey> {
        self.optimistic
    }

    /// A full round: the set of peers to unchoke now (everyone else is choked).
    pub fn round(&mut self, peers: &[ChokeView], now: Instant) -> HashSet<PeerKey> {
        let mut eligible: Vec<&ChokeView> = peers.iter().filter(|p| p.eligible()).collect();
        eligible.sort_by(|a, b| rank(a, b));
        let regular = if self.slots > 1 {
            self.slots - 1
        } else {
            self.slots
        };
        let mut chosen: HashSet<PeerKey> = eligible.iter().take(regular).map(|p| p.key).collect();

        // the optimistic slot
        let keep = self.optimistic.filter(|k| {
            self.optimistic_at
                .is_some_and(|at| now.duration_since(at) < OPTIMISTIC_ROTATION)
                && eligible.iter().any(|p| p.key == *k)
                && !chosen.contains(k)
        });
        self.optimistic = keep;
        if self.optimistic.is_none() {
            let rest: Vec<&&ChokeView> = eligible
                .iter()
                .filter(|p| !chosen.contains(&p.key))
                .collect();
            let never: Vec<&&ChokeView> = rest
                .iter()
                .copied()
                .filter(|p| p.last_unchoked.is_none())
                .collect();
            let pool = if never.is_empty() { rest } else { never };
            if !pool.is_empty() {
                let p = pool[rand::random_range(0..pool.len())];
                self.optimistic = Some(p.key);
                self.optimistic_at = Some(now);
            }
        }
        if let Some(k) = self.optimistic
            && chosen.len() < self.slots
        {
            chosen.insert(k);
        }
        // slots nobody eligible wants: peers that took nothing may try again (never the
        // stalled ones: their socket does not drain)
        if chosen.len() < self.slots {
            let mut again: Vec<&ChokeView> = peers
                .iter()
                .filter(|p| p.interested && !p.stalled && !chosen.contains(&p.key))
                .collect();
            again.sort_by(|a, b| {
                a.last_unchoked
                    .cmp(&b.last_unchoked)
                    .then(a.key.cmp(&b.key))
            });
            for p in again {
                if chosen.len() >= self.slots {
                    break;
                }
                chosen.insert(p.key);
            }
        }
        chosen
    }

    /// Between rounds: choke slot holders that take nothing (stalled, or idle past their
    /// probation) and unchoke the best waiting candidates into the free slots. Nobody
    /// useful is choked.
    pub fn fill(&self, peers: &[ChokeView]) -> Fill {
        let choke: Vec<PeerKey> = peers
            .iter()
            .filter(|p| !p.am_choking && (p.stalled || p.took_nothing || !p.interested))
            .map(|p| p.key)
            .collect();
        let held = peers
            .iter()
            .filter(|p| !p.am_choking && !choke.contains(&p.key))
            .count();
        let mut want: Vec<&ChokeView> = peers
            .iter()
            .filter(|p| p.am_choking && p.eligible())
            .collect();
        want.sort_by(|a, b| rank(a, b));
        let unchoke: Vec<PeerKey> = want
            .into_iter()
            .take(self.slots.saturating_sub(held))
            .map(|p| p.key)
            .collect();
        // an idle slot holder keeps its slot while nobody else wants it
        let choke = if unchoke.is_empty() {
            peers
                .iter()
                .filter(|p| !p.am_choking && p.stalled)
                .map(|p| p.key)
                .collect()
        } else {
            choke
        };
        Fill { choke, unchoke }
    }

    /// A peer left: forget it if it held the optimistic slot.
    pub fn peer_gone(&mut self, key: PeerKey) {
        if self.optimistic == Some(key) {
            self.optimistic = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(key: PeerKey, interested: bool, rate: u64) -> ChokeView {
        ChokeView {
            key,
            interested,
            am_choking: true,
            rate,
            stalled: false,
            took_nothing: false,
            last_unchoked: None,
        }
    }

    #[test]
    fn best_rates_plus_an_optimistic_slot() {
        let now = Instant::now();
        let mut c = Choker::new(3);
        let peers = [
            v(1, true, 10),
            v(2, true, 50),
            v(3, false, 999),
            v(4, true, 30),
            v(5, true, 0),
        ];
        let s = c.round(&peers, now);
        assert_eq!(s.len(), 3);
        assert!(s.contains(&2) && s.contains(&4), "{s:?}");
        assert!(!s.contains(&3), "not interested");
        let opt = c.optimistic().unwrap();
        assert!(opt == 1 || opt == 5);
        // the optimistic peer keeps its slot until the rotation
        let s2 = c.round(&peers, now + ROUND);
        assert!(s2.contains(&opt));
        let s3 = c.round(&peers, now + OPTIMISTIC_ROTATION + ROUND);
        assert_eq!(s3.len(), 3);
    }

    #[test]
    fn never_more_than_slots_and_only_interested() {
        let now = Instant::now();
        for slots in 1..6 {
            let mut c = Choker::new(slots);
            let peers: Vec<_> = (0..20).map(|k| v(k, k % 2 == 0, k * 10)).collect();
            let s = c.round(&peers, now);
            assert!(s.len() <= slots);
            assert!(s.iter().all(|k| k % 2 == 0));
        }
        assert!(Choker::new(4).round(&[], now).is_empty());
    }

    #[test]
    fn stalled_and_idle_peers_lose_their_slots_to_a_real_leecher() {
        let now = Instant::now();
        let mut c = Choker::new(4);
        // four hogs held the slots: three stalled (not reading), one asked for nothing
        let mut peers: Vec<ChokeView> = (1..=3)
            .map(|k| ChokeView {
                am_choking: false,
                stalled: true,
                last_unchoked: Some(now),
                ..v(k, true, 0)
            })
            .collect();
        peers.push(ChokeView {
            am_choking: false,
            took_nothing: true,
            last_unchoked: Some(now),
            ..v(4, true, 0)
        });
        peers.push(v(10, true, 0)); // the real leecher, choked so far
        let s = c.round(&peers, now + ROUND);
        assert!(s.contains(&10), "{s:?}");
        assert!(
            !s.contains(&1) && !s.contains(&2) && !s.contains(&3),
            "stalled never"
        );
        // fill gives a free slot to a newcomer at once
        let mut peers = vec![v(20, true, 0)];
        peers.push(ChokeView {
            am_choking: false,
            ..v(21, true, 100)
        });
        assert_eq!(c.fill(&peers).unchoke, vec![20]);
        let full: Vec<_> = (0..4)
            .map(|k| ChokeView {
                am_choking: false,
                ..v(k, true, 1)
            })
            .collect();
        let mut with_new = full.clone();
        with_new.push(v(9, true, 0));
        assert_eq!(
            c.fill(&with_new),
            Fill::default(),
            "no free slot, nobody to reclaim"
        );
        // a stalled or idle slot holder gives its slot to the newcomers between rounds
        let mut hogged = full.clone();
        hogged[0].stalled = true;
        hogged[1].took_nothing = true;
        hogged.push(v(9, true, 0));
        hogged.push(v(10, true, 0));
        let f = c.fill(&hogged);
        assert_eq!(f.choke, vec![0, 1]);
        assert_eq!(f.unchoke, vec![10, 9], "newest first");
        // nobody waiting: the idle holder keeps its slot, the stalled one is choked
        let f = c.fill(&hogged[..4]);
        assert_eq!(
            f,
            Fill {
                choke: vec![0],
                unchoke: vec![]
            }
        );
    }

    #[test]
    fn newcomers_get_the_optimistic_slot_first() {
        let now = Instant::now();
        let mut c = Choker::new(2);
        let peers = [
            ChokeView {
                last_unchoked: Some(now),
                ..v(1, true, 100)
            },
            ChokeView {
                last_unchoked: Some(now),
                ..v(2, true, 0)
            },
            v(3, true, 0),
        ];
        let s = c.round(&peers, now);
        assert_eq!(s, HashSet::from([1, 3]));
        c.peer_gone(3);
        assert_eq!(c.optimistic(), None);
    }
}
