//! Choking (BEP 3 §choking): which interested peers we serve.
//!
//! Every round (10 s, or at once when a peer becomes interested and a slot is free) the
//! interested peers with the best rate get the regular slots — while downloading, the
//! rate they send to us (tit-for-tat); while seeding, the rate we reach sending to them —
//! and one more slot goes to an "optimistic" peer rotated every 30 s, so newcomers get a
//! chance to prove themselves.

use std::collections::HashSet;

use super::picker::PeerKey;

/// One peer as the choker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The peer.
    pub key: PeerKey,
    /// It wants pieces from us.
    pub interested: bool,
    /// Bytes/s: from the peer while we download, to the peer while we seed.
    pub rate: u64,
}

/// The peers to unchoke: the best `slots - 1` interested peers by rate, plus `optimistic`
/// if it is interested and not already chosen (or the next best when there is none).
/// With `slots == 1` only the best peer is chosen. Everyone else is choked.
pub fn choose(cands: &[Candidate], slots: usize, optimistic: Option<PeerKey>) -> HashSet<PeerKey> {
    let mut interested: Vec<&Candidate> = cands.iter().filter(|c| c.interested).collect();
    interested.sort_by(|a, b| b.rate.cmp(&a.rate).then(a.key.cmp(&b.key)));
    let regular = if slots > 1 { slots - 1 } else { slots };
    let mut chosen: HashSet<PeerKey> = interested.iter().take(regular).map(|c| c.key).collect();
    if chosen.len() < slots {
        match optimistic {
            Some(k) if interested.iter().any(|c| c.key == k) && !chosen.contains(&k) => {
                chosen.insert(k);
            }
            _ => {
                if let Some(c) = interested.iter().find(|c| !chosen.contains(&c.key)) {
                    chosen.insert(c.key);
                }
            }
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(key: PeerKey, interested: bool, rate: u64) -> Candidate {
        Candidate {
            key,
            interested,
            rate,
        }
    }

    #[test]
    fn best_rates_plus_optimistic() {
        let cands = [
            c(1, true, 10),
            c(2, true, 50),
            c(3, false, 999),
            c(4, true, 30),
            c(5, true, 0),
        ];
        let s = choose(&cands, 3, Some(5));
        assert_eq!(s, HashSet::from([2, 4, 5]));
        // optimistic not interested: next best fills the slot
        let s = choose(&cands, 3, Some(3));
        assert_eq!(s, HashSet::from([2, 4, 1]));
    }

    #[test]
    fn never_more_than_slots_and_only_interested() {
        let cands: Vec<_> = (0..20).map(|k| c(k, k % 2 == 0, k * 10)).collect();
        for slots in 1..6 {
            let s = choose(&cands, slots, Some(2));
            assert!(s.len() <= slots);
            assert!(s.iter().all(|k| k % 2 == 0));
        }
        assert!(choose(&[], 4, None).is_empty());
        assert_eq!(choose(&[c(1, true, 0)], 1, Some(1)), HashSet::from([1]));
    }
}
