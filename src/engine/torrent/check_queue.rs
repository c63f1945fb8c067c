//! The session's check slots: only a few torrents hash their data at once (the session's
//! `MAX_CONCURRENT_CHECKS`), the others wait in the order they asked.

use std::collections::{HashSet, VecDeque};

use crate::api::TorrentId;

/// Only a few torrents hash their data at once; the others wait here, in order.
#[derive(Debug)]
pub struct CheckQueue {
    waiting: VecDeque<TorrentId>,
    running: HashSet<TorrentId>,
    max: usize,
}

impl CheckQueue {
    /// At most `max` checks at once (at least 1).
    pub fn new(max: usize) -> CheckQueue {
        CheckQueue {
            waiting: VecDeque::new(),
            running: HashSet::new(),
            max: max.max(1),
        }
    }

    /// Wait for a slot (once: a torrent already waiting or checking is not queued again).
    pub fn enqueue(&mut self, id: TorrentId) {
        if !self.waiting.contains(&id) && !self.running.contains(&id) {
            self.waiting.push_back(id);
        }
    }

    /// Leave the queue or give the slot back.
    pub fn remove(&mut self, id: TorrentId) {
        self.waiting.retain(|x| *x != id);
        self.running.remove(&id);
    }

    /// Torrents that may start their check now (they hold a slot from here on).
    pub fn grant(&mut self) -> Vec<TorrentId> {
        let mut out = Vec::new();
        while self.running.len() < self.max {
            let Some(id) = self.waiting.pop_front() else {
                break;
            };
            self.running.insert(id);
            out.push(id);
        }
        out
    }

    /// Checks running.
    pub fn running(&self) -> usize {
        self.running.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_go_in_order_up_to_the_limit() {
        let mut q = CheckQueue::new(2);
        for i in 1..=4 {
            q.enqueue(TorrentId(i));
        }
        assert_eq!(q.grant(), [TorrentId(1), TorrentId(2)]);
        assert_eq!(q.running(), 2);
        assert!(q.grant().is_empty(), "no slot free");
        q.remove(TorrentId(1));
        assert_eq!(q.grant(), [TorrentId(3)]);
        assert_eq!(q.running(), 2);
    }

    #[test]
    fn a_torrent_waits_once_and_can_leave_before_its_turn() {
        let mut q = CheckQueue::new(1);
        q.enqueue(TorrentId(1));
        q.enqueue(TorrentId(1));
        q.enqueue(TorrentId(2));
        assert_eq!(q.grant(), [TorrentId(1)]);
        q.enqueue(TorrentId(1));
        q.remove(TorrentId(2));
        q.remove(TorrentId(1));
        assert!(
            q.grant().is_empty(),
            "1 was checking, not waiting; 2 left the queue"
        );
        assert_eq!(q.running(), 0);
    }

    #[test]
    fn at_least_one_slot() {
        let mut q = CheckQueue::new(0);
        q.enqueue(TorrentId(5));
        assert_eq!(q.grant(), [TorrentId(5)]);
    }
}
