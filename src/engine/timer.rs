//! One deadline queue for the whole session: announces, choke rounds, redials, peer
//! keep-alive sweeps and snapshot publishing all live here, so the session task sleeps
//! until the earliest deadline and an idle or paused torrent (one with nothing scheduled)
//! costs no wakeups at all.
//!
//! Each key has at most one deadline: scheduling a key again replaces its deadline.
//! Replaced and cancelled entries stay in the heap until they surface (lazy deletion) and
//! are skipped then; the heap is rebuilt when stale entries outnumber live ones.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::Hash;
use std::time::Instant;

/// A set of keyed deadlines.
#[derive(Debug)]
pub struct Timers<K> {
    heap: BinaryHeap<Reverse<(Instant, u64, K)>>,
    live: HashMap<K, (Instant, u64)>,
    seq: u64,
}

impl<K> Default for Timers<K> {
    fn default() -> Self {
        Timers {
            heap: BinaryHeap::new(),
            live: HashMap::new(),
            seq: 0,
        }
    }
}

impl<K: Copy + Eq + Hash + Ord> Timers<K> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fire `key` at `at`, replacing any deadline it had.
    pub fn schedule(&mut self, key: K, at: Instant) {
        self.seq += 1;
        self.live.insert(key, (at, self.seq));
        self.heap.push(Reverse((at, self.seq, key)));
        if self.heap.len() > 64 && self.heap.len() > 2 * self.live.len() {
            self.compact();
        }
    }

    /// Fire `key` at `at` unless it is already due sooner.
    pub fn schedule_no_later(&mut self, key: K, at: Instant) {
        match self.live.get(&key) {
            Some(&(cur, _)) if cur <= at => {}
            _ => self.schedule(key, at),
        }
    }

    /// Remove `key`'s deadline, if any.
    pub fn cancel(&mut self, key: K) {
        self.live.remove(&key);
    }

    /// Remove every key for which `f` is true (e.g. all timers of a removed torrent).
    pub fn cancel_where(&mut self, mut f: impl FnMut(&K) -> bool) {
        self.live.retain(|k, _| !f(k));
    }

    /// When `key` fires, if scheduled.
    pub fn deadline(&self, key: K) -> Option<Instant> {
        self.live.get(&key).map(|&(at, _)| at)
    }

    /// Number of keys scheduled.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Nothing scheduled.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The earliest deadline, if any (drops stale entries on the way).
    pub fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(Reverse((at, seq, key))) = self.heap.peek() {
            if self.live.get(key) == Some(&(*at, *seq)) {
                return Some(*at);
            }
            self.heap.pop();
        }
        None
    }

    /// Take one key whose deadline is at or before `now` (it is unscheduled), if any.
    pub fn pop_due(&mut self, now: Instant) -> Option<K> {
        let at = self.next_deadline()?;
        if at > now {
            return None;
        }
        let Reverse((_, _, key)) = self.heap.pop()?;
        self.live.remove(&key);
        Some(key)
    }

    fn compact(&mut self) {
        self.heap = self
            .live
            .iter()
            .map(|(k, &(at, seq))| Reverse((at, seq, *k)))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn fires_in_order_and_replaces() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut t = Timers::new();
        t.schedule(1u32, t0 + s(5));
        t.schedule(2, t0 + s(1));
        t.schedule(3, t0 + s(3));
        t.schedule(1, t0 + s(2)); // replaces 5 s
        assert_eq!(t.len(), 3);
        assert_eq!(t.next_deadline(), Some(t0 + s(1)));
        assert_eq!(t.pop_due(t0), None);
        let mut fired = Vec::new();
        while let Some(k) = t.pop_due(t0 + s(10)) {
            fired.push(k);
        }
        assert_eq!(fired, vec![2, 1, 3], "key 1 fires once, at its new time");
        assert!(t.is_empty());
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn cancel_and_no_later() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut t = Timers::new();
        t.schedule((1u64, 'a'), t0 + s(1));
        t.schedule((1, 'b'), t0 + s(2));
        t.schedule((2, 'a'), t0 + s(3));
        t.cancel((2, 'a'));
        t.schedule_no_later((1, 'b'), t0 + s(9));
        assert_eq!(t.deadline((1, 'b')), Some(t0 + s(2)));
        t.schedule_no_later((1, 'b'), t0);
        assert_eq!(t.deadline((1, 'b')), Some(t0));
        t.cancel_where(|k| k.0 == 1);
        assert!(t.is_empty());
        assert_eq!(t.pop_due(t0 + s(100)), None);
    }

    #[test]
    fn stale_entries_are_compacted() {
        let t0 = Instant::now();
        let mut t = Timers::new();
        for i in 0..10_000u32 {
            t.schedule(7u32, t0 + Duration::from_millis(u64::from(i)));
        }
        assert!(t.heap.len() < 200, "heap {}", t.heap.len());
        assert_eq!(t.pop_due(t0 + Duration::from_secs(100)), Some(7));
        assert_eq!(t.pop_due(t0 + Duration::from_secs(100)), None);
    }
}
