//! The session's side of the queue (`[queue]`): the queue order, the looks that give
//! slots ([`crate::engine::queue::decide`]) after any state change, the slow-torrent
//! looks while something waits, and the commands that move torrents in the queue or force
//! start them.
//!
//! The order lives in each torrent's record as a key ([`Torrent::queue_key`]): a new
//! torrent goes last, a move renumbers the keys densely (only the records whose key
//! changed are written), a removal changes no key. The rank shown (1 = first) is the place
//! in [`Queue::order`].

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::Session;
use crate::api::{QueueMove, TorrentId};
use crate::config::engine::QueueConfig;
use crate::engine::queue::{Candidate, QueueGate, Slots, SlowWatch, decide};
use crate::engine::torrent::TimerKey;
use crate::engine::torrent::state::Input;

/// Looks in a row after one input (a release that fails at once frees its slot again).
const MAX_ROUNDS: usize = 3;

/// The queue: its order, the slots given, the slow-torrent watch.
pub(super) struct Queue {
    /// What a torrent reads when it would run (held or not).
    pub gate: QueueGate,
    slots: Slots,
    count_slow: bool,
    /// Every torrent, first place first (sorted by key when `sorted` is false).
    order: Vec<TorrentId>,
    sorted: bool,
    /// The largest key in `order` (0: none): a new torrent takes the next one and goes
    /// last without a sort, so adding 10,000 torrents costs no sort per add.
    max_key: u64,
    /// Places from this one on may show a stale rank (a torrent before them left).
    ranks_from: Option<usize>,
    /// A state changed, or the order or the slots: look again after this input.
    pub dirty: bool,
    slow: SlowWatch,
    /// How often running torrents' rates are looked at while something waits.
    look_every: Duration,
    /// The slow looks' timer is set.
    looking: bool,
    /// The `[queue]` settings in effect (changeable while the session runs).
    config: QueueConfig,
}

impl Queue {
    /// The queue of `[queue]`.
    pub fn new(cfg: &QueueConfig) -> Queue {
        let window = Duration::from_secs(u64::from(cfg.slow_torrent_inactive_timer));
        Queue {
            gate: QueueGate {
                enabled: cfg.enabled,
                granted: HashSet::new(),
            },
            slots: Slots::of(cfg),
            count_slow: cfg.dont_count_slow_torrents,
            order: Vec::new(),
            sorted: true,
            max_key: 0,
            ranks_from: None,
            dirty: true,
            slow: SlowWatch::new(cfg),
            look_every: (window / 4).clamp(Duration::from_millis(250), Duration::from_secs(5)),
            looking: false,
            config: cfg.clone(),
        }
    }

    /// The `[queue]` settings in effect.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }
}

impl Session {
    /// A torrent joined the session: it goes last unless its record has a place. Last
    /// (a new torrent, or a record whose key is past every other) costs no sort.
    pub(super) fn queue_insert(&mut self, id: TorrentId) {
        self.queue.dirty = true;
        let Some(t) = self.torrents.get_mut(&id) else {
            return;
        };
        let key = match t.queue_key() {
            Some(k) if k <= self.queue.max_key || !self.queue.sorted => {
                // a place among the others: sorted at the end of this input
                self.queue.order.push(id);
                self.queue.sorted = false;
                self.queue.max_key = self.queue.max_key.max(k);
                return;
            }
            Some(k) => k,
            None => {
                let k = self.queue.max_key + 1;
                t.set_queue_key(k);
                if self.persist.is_on() {
                    self.checkpoint_soon();
                }
                k
            }
        };
        self.queue.max_key = key;
        self.queue.order.push(id);
        let rank = if self.queue.gate.enabled {
            u32::try_from(self.queue.order.len()).unwrap_or(u32::MAX)
        } else {
            0
        };
        if let Some(t) = self.torrents.get_mut(&id)
            && t.set_queue_rank(rank)
        {
            self.publisher.touch(id);
        }
    }

    /// A torrent left the session: the places after it move up (no key changes, no sort).
    pub(super) fn queue_remove(&mut self, id: TorrentId) {
        if let Some(i) = self.queue.order.iter().position(|x| *x == id) {
            self.queue.order.remove(i);
            self.queue.ranks_from = Some(self.queue.ranks_from.map_or(i, |f| f.min(i)));
        }
        self.queue.gate.granted.remove(&id);
        self.queue.dirty = true;
    }

    /// Sort the order by key (then by when added), give keys to torrents without one
    /// (after every key), and set each torrent's rank; without a sort pending, only the
    /// ranks a removal made stale are set again.
    fn queue_sort(&mut self) {
        if self.queue.sorted {
            if let Some(from) = self.queue.ranks_from.take() {
                self.queue_ranks(from);
            }
            return;
        }
        self.queue.sorted = true;
        self.queue.ranks_from = None;
        let torrents = &self.torrents;
        self.queue.order.retain(|id| torrents.contains_key(id));
        let sort_key = |id: &TorrentId| {
            torrents
                .get(id)
                .map(|t| (t.queue_key().unwrap_or(u64::MAX), t.added_order(), id.0))
        };
        self.queue.order.sort_by_cached_key(sort_key);
        let mut next = self
            .queue
            .order
            .iter()
            .filter_map(|id| self.torrents.get(id)?.queue_key())
            .max()
            .map_or(1, |k| k + 1);
        let mut keyed = false;
        for id in &self.queue.order {
            let Some(t) = self.torrents.get_mut(id) else {
                continue;
            };
            if t.queue_key().is_none() {
                t.set_queue_key(next);
                next += 1;
                keyed = true;
            }
        }
        self.queue.max_key = next - 1;
        self.queue_ranks(0);
        if keyed && self.persist.is_on() {
            self.checkpoint_soon();
        }
    }

    /// Set the rank shown of every torrent from place `from` on.
    fn queue_ranks(&mut self, from: usize) {
        let enabled = self.queue.gate.enabled;
        for (i, id) in self.queue.order.iter().enumerate().skip(from) {
            let Some(t) = self.torrents.get_mut(id) else {
                continue;
            };
            // the place is shown only while it means something (qBittorrent shows `*`)
            let rank = if enabled {
                u32::try_from(i + 1).unwrap_or(u32::MAX)
            } else {
                0
            };
            if t.set_queue_rank(rank) {
                self.publisher.touch(*id);
            }
        }
    }

    /// New queue settings while the session runs (qBittorrent's queueing preferences):
    /// switched on, torrents take their turn by place; switched off, every torrent waiting
    /// for a slot runs; new limits give the slots again. The order is kept either way.
    pub(super) fn queue_reconfigure(&mut self, cfg: QueueConfig) {
        let was_on = self.queue.gate.enabled;
        let mut fresh = Queue::new(&cfg);
        // the order and the slow watch's state carry over
        fresh.order = std::mem::take(&mut self.queue.order);
        fresh.gate.granted = std::mem::take(&mut self.queue.gate.granted);
        fresh.sorted = false;
        fresh.dirty = true;
        if self.queue.looking {
            self.timers.cancel(TimerKey::Queue);
        }
        self.queue = fresh;
        if was_on && !cfg.enabled {
            self.queue.gate.granted.clear();
            let waiting: Vec<TorrentId> = self
                .torrents
                .iter()
                .filter(|(_, t)| t.queue_candidate().is_some_and(|(_, running)| !running))
                .map(|(id, _)| *id)
                .collect();
            for id in waiting {
                self.with(id, |t, env| t.input(Input::QueueRelease, env));
            }
        }
        // the places shown (0 while off) and the slots
        self.queue_after_input();
        self.publisher.touch_all();
    }

    /// After an input: give the slots again while something changed (at most a few
    /// looks), and keep the order's ranks current.
    pub(super) fn queue_after_input(&mut self) {
        self.queue_sort();
        let mut rounds = 0;
        while self.queue.dirty && rounds < MAX_ROUNDS {
            self.queue.dirty = false;
            rounds += 1;
            self.queue_look();
        }
        self.queue.dirty = false;
    }

    /// One look: who may run now. Held torrents leave the swarm before released ones join.
    fn queue_look(&mut self) {
        if !self.queue.gate.enabled {
            return;
        }
        let now = Instant::now();
        let count_slow = self.queue.count_slow;
        let slow = &self.queue.slow;
        let candidates: Vec<Candidate> = self
            .queue
            .order
            .iter()
            .filter_map(|id| {
                let (seed, running) = self.torrents.get(id)?.queue_candidate()?;
                Some(Candidate {
                    id: *id,
                    seed,
                    running,
                    slow: running && count_slow && slow.is_slow(*id),
                })
            })
            .collect();
        let d = decide(&candidates, self.queue.slots);
        self.queue.gate.granted = d.granted;
        for id in d.hold {
            self.with(id, |t, env| t.input(Input::QueueHold, env));
        }
        for id in d.release {
            self.with(id, |t, env| t.input(Input::QueueRelease, env));
        }
        // slow torrents matter while something waits for a slot, and while one runs
        // slow (it counts again once it speeds up)
        let any_slow = candidates.iter().any(|c| c.slow);
        let wants_looks = count_slow && (d.waiting > 0 || any_slow);
        if wants_looks && !self.queue.looking {
            self.queue.looking = true;
            self.queue.slow.clear();
            self.slow_look_now(now);
            self.timers
                .schedule(TimerKey::Queue, now + self.queue.look_every);
        } else if !wants_looks && self.queue.looking {
            self.queue.looking = false;
            self.queue.slow.clear();
            self.timers.cancel(TimerKey::Queue);
        }
    }

    /// Note the rates of the torrents holding slots; `true` when one became slow or
    /// stopped being slow.
    fn slow_look_now(&mut self, now: Instant) -> bool {
        let mut changed = false;
        let granted = &self.queue.gate.granted;
        for id in granted {
            let Some(t) = self.torrents.get(id) else {
                continue;
            };
            let (down, up) = t.queue_rates();
            let was = self.queue.slow.is_slow(*id);
            if self.queue.slow.look(*id, down, up, now) != was {
                changed = true;
            }
        }
        self.queue.slow.retain(|id| granted.contains(&id));
        changed
    }

    /// The slow looks' timer: look at the rates; a change gives the slots again.
    pub(super) fn queue_timer(&mut self) {
        if !self.queue.looking {
            return;
        }
        let now = Instant::now();
        if self.slow_look_now(now) {
            self.queue.dirty = true;
        }
        self.timers
            .schedule(TimerKey::Queue, now + self.queue.look_every);
    }

    /// Move torrents `ids` in the queue (several keep their order among themselves), then
    /// renumber the keys that changed.
    pub(super) fn queue_move(&mut self, ids: &[TorrentId], to: QueueMove) {
        self.queue_sort();
        let sel: HashSet<TorrentId> = ids.iter().copied().collect();
        let order = &mut self.queue.order;
        match to {
            QueueMove::Up => {
                for i in 1..order.len() {
                    if sel.contains(&order[i]) && !sel.contains(&order[i - 1]) {
                        order.swap(i, i - 1);
                    }
                }
            }
            QueueMove::Down => {
                for i in (0..order.len().saturating_sub(1)).rev() {
                    if sel.contains(&order[i]) && !sel.contains(&order[i + 1]) {
                        order.swap(i, i + 1);
                    }
                }
            }
            QueueMove::Top | QueueMove::Bottom => {
                let (mut picked, rest): (Vec<TorrentId>, Vec<TorrentId>) =
                    order.iter().partition(|id| sel.contains(id));
                if to == QueueMove::Top {
                    picked.extend(rest);
                    *order = picked;
                } else {
                    let mut v = rest;
                    v.extend(picked);
                    *order = v;
                }
            }
        }
        let mut changed = false;
        self.queue.ranks_from = None;
        self.queue.max_key = self.queue.max_key.max(self.queue.order.len() as u64);
        for (i, id) in self.queue.order.iter().enumerate() {
            let Some(t) = self.torrents.get_mut(id) else {
                continue;
            };
            let rank = i as u64 + 1;
            if t.queue_key() != Some(rank) {
                t.set_queue_key(rank);
                changed = true;
            }
            let shown = if self.queue.gate.enabled {
                u32::try_from(rank).unwrap_or(u32::MAX)
            } else {
                0
            };
            if t.set_queue_rank(shown) {
                self.publisher.touch(*id);
            }
        }
        if changed {
            self.queue.dirty = true;
            self.publish_now = true;
            if self.persist.is_on() {
                self.checkpoint_soon();
            }
        }
    }

    /// Force start torrents `ids`, or give them back to the queue.
    pub(super) fn set_force_start(&mut self, ids: &[TorrentId], forced: bool) {
        for id in ids {
            self.with(*id, |t, env| t.set_forced(forced, env));
        }
        self.queue.dirty = true;
    }
}
