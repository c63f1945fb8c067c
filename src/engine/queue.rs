//! The download and seeding queue (`[queue]`, qBittorrent's "torrent queueing",
//! libtorrent's auto-managed torrents): which started torrents may run now.
//!
//! This file is the pure part: [`decide`] walks the started torrents in queue order and
//! gives slots, downloads first (magnet links fetching their metadata count as downloads),
//! then seeds, within `max_active_downloads`, `max_active_uploads` and
//! `max_active_torrents`. A force-started torrent is never a candidate (it runs and is not
//! counted); a slow one keeps running without taking a slot; [`SlowWatch`] says which
//! are slow. [`QueueGate`] is what a torrent reads when it would start running: held, or
//! free to go. The session applies the decision (`engine/session/queue.rs`).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::api::TorrentId;
use crate::config::engine::QueueConfig;

/// A started torrent as the queue sees it (one per torrent that wants to run, in queue
/// order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The torrent.
    pub id: TorrentId,
    /// Complete: it wants a seeding slot (else a download slot).
    pub seed: bool,
    /// In the swarm now (else it waits as `Queued`).
    pub running: bool,
    /// Running and slow (see [`SlowWatch`]): it goes on without taking a slot.
    pub slow: bool,
}

/// The limits of `[queue]`, `None` = no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slots {
    /// Most downloads running.
    pub downloads: Option<u64>,
    /// Most seeds running.
    pub uploads: Option<u64>,
    /// Most torrents running, downloads and seeds together.
    pub total: Option<u64>,
}

impl Slots {
    /// The limits of `cfg` (-1 = none).
    pub fn of(cfg: &QueueConfig) -> Slots {
        Slots {
            downloads: QueueConfig::limit(cfg.max_active_downloads),
            uploads: QueueConfig::limit(cfg.max_active_uploads),
            total: QueueConfig::limit(cfg.max_active_torrents),
        }
    }
}

/// What the queue does after one look.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decision {
    /// Running torrents that lose their place: they wait as `Queued` (in queue order).
    pub hold: Vec<TorrentId>,
    /// Queued torrents that get a slot: they run (in queue order).
    pub release: Vec<TorrentId>,
    /// Every candidate that may run (slots given and slow ones).
    pub granted: HashSet<TorrentId>,
    /// Candidates left waiting.
    pub waiting: usize,
}

/// Give the slots: `candidates` in queue order (first = highest place). Downloads take
/// slots first, then seeds, so a full `total` keeps seeds waiting before downloads (as
/// libtorrent does). A slow running candidate is granted without counting.
pub fn decide(candidates: &[Candidate], slots: Slots) -> Decision {
    let mut d = Decision::default();
    let mut total = 0u64;
    let under = |n: u64, max: Option<u64>| max.is_none_or(|m| n < m);
    for seeds in [false, true] {
        let mut n = 0u64;
        let max = if seeds {
            slots.uploads
        } else {
            slots.downloads
        };
        for c in candidates.iter().filter(|c| c.seed == seeds) {
            if c.running && c.slow {
                d.granted.insert(c.id);
            } else if under(n, max) && under(total, slots.total) {
                n += 1;
                total += 1;
                d.granted.insert(c.id);
                if !c.running {
                    d.release.push(c.id);
                }
            } else {
                d.waiting += 1;
                if c.running {
                    d.hold.push(c.id);
                }
            }
        }
    }
    d
}

/// What a torrent that would start running reads: whether the queue holds it.
#[derive(Debug, Clone, Default)]
pub struct QueueGate {
    /// Queueing on (`[queue] enabled`).
    pub enabled: bool,
    /// Torrents given a slot at the last look (see [`Decision::granted`]).
    pub granted: HashSet<TorrentId>,
}

impl QueueGate {
    /// Whether torrent `id` must wait as `Queued` instead of running: queueing is on, it
    /// is not force started (`forced`) and it holds no slot.
    pub fn holds(&self, id: TorrentId, forced: bool) -> bool {
        self.enabled && !forced && !self.granted.contains(&id)
    }
}

/// Which running torrents are slow: under both rate thresholds (bytes/s) for a whole
/// `window` of looks. A torrent's first look starts its window, so one just started is
/// not slow before `window` has passed (a dead torrent is slow `window` after it starts).
#[derive(Debug, Clone)]
pub struct SlowWatch {
    down: u64,
    up: u64,
    window: Duration,
    /// Since when each torrent looked at has been under both thresholds.
    since: HashMap<TorrentId, Instant>,
    /// Those found slow at their last look.
    slow: HashSet<TorrentId>,
}

impl SlowWatch {
    /// Thresholds from `cfg` (`slow_download_rate_threshold`, `slow_upload_rate_threshold`,
    /// `slow_torrent_inactive_timer`).
    pub fn new(cfg: &QueueConfig) -> SlowWatch {
        SlowWatch {
            down: cfg.slow_download_rate_threshold,
            up: cfg.slow_upload_rate_threshold,
            window: Duration::from_secs(u64::from(cfg.slow_torrent_inactive_timer)),
            since: HashMap::new(),
            slow: HashSet::new(),
        }
    }

    /// Note torrent `id`'s rates (bytes/s) at `now`; returns whether it is slow.
    pub fn look(&mut self, id: TorrentId, down: u64, up: u64, now: Instant) -> bool {
        let slow = if down >= self.down || up >= self.up {
            self.since.remove(&id);
            false
        } else {
            let since = *self.since.entry(id).or_insert(now);
            now.saturating_duration_since(since) >= self.window
        };
        if slow {
            self.slow.insert(id);
        } else {
            self.slow.remove(&id);
        }
        slow
    }

    /// Whether `id` was slow at its last look.
    pub fn is_slow(&self, id: TorrentId) -> bool {
        self.slow.contains(&id)
    }

    /// Forget torrents not in `keep` (no longer running under the queue).
    pub fn retain(&mut self, keep: impl Fn(TorrentId) -> bool) {
        self.since.retain(|id, _| keep(*id));
        self.slow.retain(|id| keep(*id));
    }

    /// Forget every window (the looks paused: their rates are no longer known).
    pub fn clear(&mut self) {
        self.since.clear();
        self.slow.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: u64, seed: bool, running: bool) -> Candidate {
        Candidate {
            id: TorrentId(id),
            seed,
            running,
            slow: false,
        }
    }

    fn ids(v: &[TorrentId]) -> Vec<u64> {
        v.iter().map(|i| i.0).collect()
    }

    const ONE_DOWNLOAD: Slots = Slots {
        downloads: Some(1),
        uploads: Some(3),
        total: Some(5),
    };

    #[test]
    fn slots_go_in_queue_order_and_the_rest_wait() {
        let d = decide(
            &[c(1, false, false), c(2, false, false), c(3, false, false)],
            ONE_DOWNLOAD,
        );
        assert_eq!(ids(&d.release), [1]);
        assert!(d.hold.is_empty());
        assert_eq!(d.waiting, 2);
        // 1 completes and seeds: 2 gets the download slot, 1 keeps a seeding one
        let d = decide(
            &[c(1, true, true), c(2, false, false), c(3, false, false)],
            ONE_DOWNLOAD,
        );
        assert_eq!(ids(&d.release), [2]);
        assert!(d.granted.contains(&TorrentId(1)));
        assert_eq!(d.waiting, 1);
    }

    #[test]
    fn a_running_torrent_below_a_higher_queued_one_gives_its_slot_up() {
        // 3 runs; 1 (moved to the top) waits: 1 takes the slot, 3 is held
        let d = decide(&[c(1, false, false), c(3, false, true)], ONE_DOWNLOAD);
        assert_eq!(ids(&d.release), [1]);
        assert_eq!(ids(&d.hold), [3]);
    }

    #[test]
    fn a_slow_torrent_runs_without_taking_a_slot() {
        let mut dead = c(1, false, true);
        dead.slow = true;
        let d = decide(
            &[dead, c(2, false, false), c(3, false, false)],
            ONE_DOWNLOAD,
        );
        assert_eq!(
            ids(&d.release),
            [2],
            "the dead one does not block the queue"
        );
        assert!(d.granted.contains(&TorrentId(1)) && d.hold.is_empty());
        // it wakes up (not slow any more): it counts again and, being first, keeps its
        // place; 2 goes back to waiting
        let d = decide(&[c(1, false, true), c(2, false, true)], ONE_DOWNLOAD);
        assert_eq!(ids(&d.hold), [2]);
    }

    #[test]
    fn downloads_take_the_total_first_and_minus_one_is_no_limit() {
        let slots = Slots {
            downloads: None,
            uploads: None,
            total: Some(2),
        };
        let d = decide(
            &[c(1, true, true), c(2, false, false), c(3, false, false)],
            slots,
        );
        assert_eq!(ids(&d.release), [2, 3]);
        assert_eq!(
            ids(&d.hold),
            [1],
            "the seed waits while downloads fill the total"
        );
        let d = decide(&[c(1, true, false), c(2, false, false)], Slots::default());
        assert_eq!(ids(&d.release), [2, 1], "downloads first, then seeds");
        assert_eq!(d.waiting, 0);
        let zero = Slots {
            downloads: Some(0),
            uploads: Some(0),
            total: None,
        };
        let d = decide(&[c(1, true, true), c(2, false, true)], zero);
        assert_eq!(ids(&d.hold), [2, 1], "downloads are looked at first");
    }

    #[test]
    fn the_gate_holds_only_what_has_no_slot_and_is_not_forced() {
        let mut g = QueueGate::default();
        assert!(
            !g.holds(TorrentId(1), false),
            "queueing off: nothing is held"
        );
        g.enabled = true;
        assert!(g.holds(TorrentId(1), false));
        assert!(!g.holds(TorrentId(1), true), "force started");
        g.granted.insert(TorrentId(1));
        assert!(!g.holds(TorrentId(1), false));
    }

    #[test]
    fn slow_means_under_both_thresholds_for_the_whole_window() {
        let cfg = QueueConfig {
            slow_torrent_inactive_timer: 60,
            ..QueueConfig::default()
        };
        let mut w = SlowWatch::new(&cfg);
        let t0 = Instant::now();
        let id = TorrentId(7);
        assert!(!w.look(id, 0, 0, t0), "a window starts at the first look");
        assert!(!w.look(id, 100, 100, t0 + Duration::from_secs(59)));
        assert!(!w.is_slow(id));
        assert!(w.look(id, 100, 100, t0 + Duration::from_secs(60)));
        assert!(w.is_slow(id), "as its last look said");
        // uploading at 2 KiB/s (the threshold) is not slow: the window starts again
        assert!(!w.look(id, 0, 2048, t0 + Duration::from_secs(62)));
        assert!(!w.look(id, 0, 0, t0 + Duration::from_secs(100)));
        assert!(w.look(id, 0, 0, t0 + Duration::from_secs(160)));
        w.retain(|i| i != id);
        assert!(!w.is_slow(id));
    }
}
