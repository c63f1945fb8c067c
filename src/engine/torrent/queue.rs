//! The torrent's side of the queue (`[queue]`, see [`crate::engine::queue`]): its place
//! (kept in the record as [`crate::state::ManageRecord::queue_pos`]), force start, and
//! what the session's queue reads of it.

use super::state::{Input, Lifecycle};
use super::{Env, Torrent};
use crate::api::TorrentState;

impl Torrent {
    /// The torrent's queue key as kept in its record (smaller runs first; `None` before the
    /// session's queue gave it one).
    pub fn queue_key(&self) -> Option<u64> {
        self.manage.queue_pos
    }

    /// Give it queue key `key` (kept at the next checkpoint when it changed).
    pub fn set_queue_key(&mut self, key: u64) {
        if self.manage.queue_pos != Some(key) {
            self.manage.queue_pos = Some(key);
            self.persist_dirty = true;
        }
    }

    /// Where it was added in the session's order: (Unix seconds, sequence within them).
    pub fn added_order(&self) -> (u64, u64) {
        (self.added_at, self.added_seq)
    }

    /// Its place in the queue as shown, 1 = first; `true` when it changed (its row must be
    /// rebuilt).
    pub fn set_queue_rank(&mut self, rank: u32) -> bool {
        let changed = self.queue_rank != rank;
        self.queue_rank = rank;
        changed
    }

    /// Its place in the queue as shown, 1 = first (0: not placed yet).
    pub fn queue_rank(&self) -> u32 {
        self.queue_rank
    }

    /// Force started: it runs whatever the queue says, and is not counted.
    pub fn forced(&self) -> bool {
        self.manage.forced
    }

    /// Force start it (`true`: a stopped torrent starts, a queued one runs now) or give it
    /// back to the queue (`false`: it keeps running until the queue needs its slot).
    /// qBittorrent's "force start".
    pub fn set_forced(&mut self, forced: bool, env: &mut Env<'_>) {
        if self.manage.forced != forced {
            self.manage.forced = forced;
            self.persist_dirty = true;
            *env.publish_now = true;
        }
        if !forced {
            return;
        }
        match self.state() {
            TorrentState::QueuedDownload | TorrentState::QueuedSeed => {
                self.input(Input::QueueRelease, env);
            }
            TorrentState::Paused | TorrentState::Error | TorrentState::Completed => {
                self.resume_by_hand(env);
            }
            _ => {}
        }
    }

    /// What the queue sees of it when it wants to run (started, not force started):
    /// `Some((seed, running))`, `seed` when complete (it wants a seeding slot), `running`
    /// when in the swarm now (else waiting as `Queued`). `None` when it does not compete
    /// for a slot (paused, checking, moving, failed, completed without seeding, forced).
    pub fn queue_candidate(&self) -> Option<(bool, bool)> {
        if self.manage.forced {
            return None;
        }
        match &self.life {
            Lifecycle::Queued { seed } => Some((*seed, false)),
            Lifecycle::FetchingMetadata { .. } | Lifecycle::Downloading { .. } => {
                Some((false, true))
            }
            Lifecycle::Seeding { .. } => Some((true, true)),
            _ => None,
        }
    }

    /// Its payload rates now, bytes/s (down, up), for the queue's slow-torrent rule.
    pub fn queue_rates(&self) -> (u64, u64) {
        (self.meters.0.rate(), self.meters.1.rate())
    }
}
