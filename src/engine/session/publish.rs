//! Publishing snapshots: the list of rows in list order, the detail of the focused torrent,
//! and when the next snapshot is due.
//!
//! A snapshot goes out only when something in it changed (`send_if_modified`), at most
//! every [`PUBLISH_MIN_GAP`] for a state change and every [`PUBLISH_INTERVAL`] while rows
//! change by themselves (rates, progress). Only the rows of torrents that may have changed
//! are asked for again; the others are shared (`Arc`) with the previous snapshot.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::api::{GlobalStats, Snapshot, TorrentDetail, TorrentId, TorrentRow};
use crate::engine::ctx::SessionCtx;

/// How often snapshots are published at most while something changes.
pub const PUBLISH_INTERVAL: Duration = Duration::from_millis(500);
/// Least time between two snapshots published for a state change: a burst of changes
/// (10,000 restored torrents starting one by one) is published 20 times a second, not
/// once per torrent (each snapshot costs a pass over every row).
pub const PUBLISH_MIN_GAP: Duration = Duration::from_millis(50);

/// What the publisher reads of one torrent.
pub(super) trait Listed {
    /// Its row as of `now`: the same `Arc` as last time while nothing in it changed.
    fn row(&mut self, now: Instant) -> Arc<TorrentRow>;
    /// Whether its row changes by itself (rates, progress), so it is looked at again at the
    /// next publish even when nothing happens to it.
    fn is_live(&self) -> bool;
}

impl Listed for crate::engine::torrent::Torrent {
    fn row(&mut self, now: Instant) -> Arc<TorrentRow> {
        crate::engine::torrent::Torrent::row(self, now)
    }

    fn is_live(&self) -> bool {
        crate::engine::torrent::Torrent::is_live(self)
    }
}

/// When the next snapshot is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Due {
    /// Publish now.
    Now,
    /// Publish at this time (or earlier, if already due earlier).
    At(Instant),
    /// Nothing to publish.
    Idle,
}

/// The session-wide figures that do not come from the rows: listen port, limits
/// (bytes/s) and whether they are the alternative pair, free space of the default folder
/// (bytes), DHT nodes, LSD.
pub(super) fn session_stats(
    ctx: &SessionCtx,
    free_space: Option<u64>,
    alt_speed: bool,
) -> GlobalStats {
    GlobalStats {
        listen_port: ctx.listen_port,
        down_limit: ctx.limits.download.rate(),
        up_limit: ctx.limits.upload.rate(),
        free_space,
        dht_nodes: ctx.dht.get().map(|d| d.node_count()),
        lsd: ctx.lsd.is_some(),
        ip_filter_ranges: ctx.ip_filter.ranges(),
        blocked: ctx.ip_filter.blocked(),
        alt_speed,
        ..GlobalStats::default()
    }
}

/// The snapshot publisher: the torrents in list order with their last published rows, the
/// focused torrent's detail, and which torrents to look at at the next publish.
#[derive(Debug)]
pub(super) struct Publisher {
    snapshots: watch::Sender<Arc<Snapshot>>,
    /// `seq` of the last snapshot sent.
    seq: u64,
    focus: Option<TorrentId>,
    /// Torrent ids in list order, and their last published rows (same order).
    order: Vec<TorrentId>,
    rows: Vec<Arc<TorrentRow>>,
    detail: Option<Arc<TorrentDetail>>,
    /// Torrents whose row may have changed since the last publish.
    attention: HashSet<TorrentId>,
    /// When the last snapshot was published.
    last_publish: Option<Instant>,
}

impl Publisher {
    /// A publisher of an empty list on `snapshots`.
    pub fn new(snapshots: watch::Sender<Arc<Snapshot>>) -> Publisher {
        Publisher {
            snapshots,
            seq: 0,
            focus: None,
            order: Vec::new(),
            rows: Vec::new(),
            detail: None,
            attention: HashSet::new(),
            last_publish: None,
        }
    }

    /// List torrent `id` last; its row is asked for at the next publish.
    pub fn insert(&mut self, id: TorrentId) {
        self.order.push(id);
        self.rows.push(Arc::new(TorrentRow::default()));
        self.attention.insert(id);
    }

    /// Take torrent `id` off the list (and out of focus).
    pub fn remove(&mut self, id: TorrentId) {
        if let Some(i) = self.order.iter().position(|x| *x == id) {
            self.order.remove(i);
            self.rows.remove(i);
        }
        self.attention.remove(&id);
        if self.focus == Some(id) {
            self.focus = None;
            self.detail = None;
        }
    }

    /// Publish the detail of torrent `id` from now on (`None`: no detail).
    pub fn focus(&mut self, id: Option<TorrentId>) {
        self.focus = id;
        self.detail = None;
        if let Some(id) = id {
            self.attention.insert(id);
        }
    }

    /// Look at torrent `id`'s row at the next publish.
    pub fn touch(&mut self, id: TorrentId) {
        self.attention.insert(id);
    }

    /// Look at every listed torrent's row at the next publish.
    pub fn touch_all(&mut self) {
        self.attention.extend(self.order.iter().copied());
    }

    /// When the next snapshot is due at `now`; `state_changed`: something shown changed
    /// state and should be published as soon as [`PUBLISH_MIN_GAP`] allows.
    pub fn due(&self, now: Instant, state_changed: bool) -> Due {
        if state_changed {
            match self.last_publish {
                Some(at) if now < at + PUBLISH_MIN_GAP => Due::At(at + PUBLISH_MIN_GAP),
                _ => Due::Now,
            }
        } else if self.attention.is_empty() {
            Due::Idle
        } else {
            Due::At(now + PUBLISH_INTERVAL)
        }
    }

    /// Ask the torrents that may have changed for their rows, build the focused torrent's
    /// detail with `detail` when it may have changed, add the rows' rates, totals and peers
    /// to `global`, and send a snapshot if anything differs from the last one. Returns when
    /// the next publish is due while live torrents keep changing.
    pub fn publish<T: Listed>(
        &mut self,
        now: Instant,
        torrents: &mut BTreeMap<TorrentId, T>,
        mut global: GlobalStats,
        detail: impl FnOnce(&mut T) -> TorrentDetail,
    ) -> Option<Instant> {
        self.last_publish = Some(now);
        let mut changed = false;
        let mut still = HashSet::new();
        let index: HashMap<TorrentId, usize> = if self.attention.len() > 8 {
            self.order
                .iter()
                .enumerate()
                .map(|(i, id)| (*id, i))
                .collect()
        } else {
            HashMap::new()
        };
        let mut focus_touched = false;
        for id in std::mem::take(&mut self.attention) {
            let Some(t) = torrents.get_mut(&id) else {
                continue;
            };
            let row = t.row(now);
            let i = match index.get(&id) {
                Some(i) => Some(*i),
                None => self.order.iter().position(|x| *x == id),
            };
            if let Some(i) = i
                && !Arc::ptr_eq(&self.rows[i], &row)
            {
                self.rows[i] = row;
                changed = true;
            }
            if t.is_live() {
                still.insert(id);
            }
            if self.focus == Some(id) {
                focus_touched = true;
            }
        }
        self.attention = still;
        if let Some(f) = self.focus
            && (focus_touched || self.detail.is_none())
            && let Some(t) = torrents.get_mut(&f)
        {
            let d = detail(t);
            if self.detail.as_deref() != Some(&d) {
                self.detail = Some(Arc::new(d));
                changed = true;
            }
        }
        for r in &self.rows {
            global.down_rate += r.down_rate;
            global.up_rate += r.up_rate;
            global.downloaded += r.downloaded;
            global.uploaded += r.uploaded;
            global.peers += r.peers;
        }
        let seq = self.seq + 1;
        let rows = &self.rows;
        let detail = self.detail.clone();
        let sent = self.snapshots.send_if_modified(|cur| {
            if !changed
                && cur.global == global
                && cur.rows.len() == rows.len()
                && cur.detail.as_ref().map(Arc::as_ptr) == detail.as_ref().map(Arc::as_ptr)
            {
                return false;
            }
            *cur = Arc::new(Snapshot {
                seq,
                global,
                rows: Arc::from(rows.as_slice()),
                detail,
            });
            true
        });
        if sent {
            self.seq = seq;
        }
        (!self.attention.is_empty()).then(|| now + PUBLISH_INTERVAL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::TorrentState;

    /// A torrent as the publisher sees it: a row that changes when the test says so.
    struct Fake {
        row: Arc<TorrentRow>,
        live: bool,
        asked: usize,
    }

    impl Listed for Fake {
        fn row(&mut self, _now: Instant) -> Arc<TorrentRow> {
            self.asked += 1;
            self.row.clone()
        }

        fn is_live(&self) -> bool {
            self.live
        }
    }

    fn fake(id: u64, name: &str, down_rate: u64) -> Fake {
        Fake {
            row: Arc::new(TorrentRow {
                id: TorrentId(id),
                name: name.into(),
                down_rate,
                peers: 2,
                ..TorrentRow::default()
            }),
            live: false,
            asked: 0,
        }
    }

    fn setup(
        n: u64,
    ) -> (
        Publisher,
        watch::Receiver<Arc<Snapshot>>,
        BTreeMap<TorrentId, Fake>,
    ) {
        let (tx, rx) = watch::channel(Arc::new(Snapshot::default()));
        let mut p = Publisher::new(tx);
        let mut torrents = BTreeMap::new();
        for i in 1..=n {
            torrents.insert(TorrentId(i), fake(i, &format!("t{i}"), 100 * i));
            p.insert(TorrentId(i));
        }
        (p, rx, torrents)
    }

    fn no_detail(_: &mut Fake) -> TorrentDetail {
        panic!("no torrent is focused")
    }

    #[test]
    fn rows_go_out_in_list_order_with_totals_and_an_unchanged_list_is_not_sent_again() {
        let (mut p, mut rx, mut torrents) = setup(3);
        let now = Instant::now();
        let global = GlobalStats {
            listen_port: 6881,
            ..GlobalStats::default()
        };
        let next = p.publish(now, &mut torrents, global.clone(), no_detail);
        assert_eq!(next, None, "nothing live: no publish due");
        assert!(rx.has_changed().unwrap());
        let s = rx.borrow_and_update().clone();
        assert_eq!(s.seq, 1);
        let names: Vec<&str> = s.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["t1", "t2", "t3"]);
        assert_eq!(s.global.down_rate, 600);
        assert_eq!(s.global.peers, 6);
        assert_eq!(s.global.listen_port, 6881);
        // nothing touched, nothing changed: no snapshot, no row asked for
        p.publish(now, &mut torrents, global.clone(), no_detail);
        assert!(!rx.has_changed().unwrap());
        assert!(torrents.values().all(|t| t.asked == 1));
        // touched but the same row: still nothing sent
        p.touch(TorrentId(2));
        p.publish(now, &mut torrents, global, no_detail);
        assert!(!rx.has_changed().unwrap());
        assert_eq!(torrents[&TorrentId(2)].asked, 2);
    }

    #[test]
    fn only_touched_rows_are_rebuilt_and_the_others_are_shared() {
        let (mut p, mut rx, mut torrents) = setup(12);
        let now = Instant::now();
        p.publish(now, &mut torrents, GlobalStats::default(), no_detail);
        let first = rx.borrow_and_update().clone();
        torrents.get_mut(&TorrentId(5)).unwrap().row = Arc::new(TorrentRow {
            id: TorrentId(5),
            state: TorrentState::Paused,
            ..TorrentRow::default()
        });
        // a change nobody was told about is not seen
        p.publish(now, &mut torrents, GlobalStats::default(), no_detail);
        assert!(!rx.has_changed().unwrap());
        p.touch(TorrentId(5));
        p.publish(now, &mut torrents, GlobalStats::default(), no_detail);
        let second = rx.borrow_and_update().clone();
        assert_eq!(second.seq, 2);
        for (i, (a, b)) in first.rows.iter().zip(second.rows.iter()).enumerate() {
            assert_eq!(Arc::ptr_eq(a, b), i != 4, "row {i}");
        }
        assert_eq!(second.rows[4].state, TorrentState::Paused);
        // touch_all asks every row again
        p.touch_all();
        p.publish(now, &mut torrents, GlobalStats::default(), no_detail);
        assert!(torrents.values().all(|t| t.asked >= 2));
    }

    #[test]
    fn live_torrents_stay_watched_and_keep_a_publish_due() {
        let (mut p, _rx, mut torrents) = setup(2);
        torrents.get_mut(&TorrentId(1)).unwrap().live = true;
        let now = Instant::now();
        let next = p.publish(now, &mut torrents, GlobalStats::default(), no_detail);
        assert_eq!(next, Some(now + PUBLISH_INTERVAL));
        let later = now + Duration::from_secs(1);
        p.publish(later, &mut torrents, GlobalStats::default(), no_detail);
        assert_eq!(
            torrents[&TorrentId(1)].asked,
            2,
            "the live one is asked again"
        );
        assert_eq!(torrents[&TorrentId(2)].asked, 1, "the quiet one is not");
        torrents.get_mut(&TorrentId(1)).unwrap().live = false;
        assert_eq!(
            p.publish(later, &mut torrents, GlobalStats::default(), no_detail),
            None
        );
    }

    #[test]
    fn the_focused_torrent_gets_a_detail_until_it_leaves() {
        let (mut p, mut rx, mut torrents) = setup(3);
        let now = Instant::now();
        p.focus(Some(TorrentId(2)));
        let detail = |t: &mut Fake| TorrentDetail {
            id: t.row.id,
            info_hash: "ab".repeat(20),
            ..TorrentDetail::default()
        };
        p.publish(now, &mut torrents, GlobalStats::default(), detail);
        let s = rx.borrow_and_update().clone();
        assert_eq!(s.detail.as_ref().map(|d| d.id), Some(TorrentId(2)));
        // the same detail again: the snapshot keeps the one it had, nothing is sent
        p.touch(TorrentId(2));
        p.publish(now, &mut torrents, GlobalStats::default(), detail);
        assert!(!rx.has_changed().unwrap());
        // the focused torrent is removed: its row and its detail go
        p.remove(TorrentId(2));
        p.publish(now, &mut torrents, GlobalStats::default(), no_detail);
        let s = rx.borrow_and_update().clone();
        assert!(s.detail.is_none());
        assert_eq!(s.rows.len(), 2);
        assert!(s.row(TorrentId(2)).is_none());
        // no focus: no detail
        p.focus(None);
        p.touch_all();
        p.publish(now, &mut torrents, GlobalStats::default(), no_detail);
    }

    #[test]
    fn state_changes_are_published_at_most_every_min_gap() {
        let (mut p, _rx, mut torrents) = setup(1);
        let t0 = Instant::now();
        assert_eq!(p.due(t0, true), Due::Now, "never published: at once");
        assert_eq!(
            p.due(t0, false),
            Due::At(t0 + PUBLISH_INTERVAL),
            "a new row waits for the interval"
        );
        p.publish(t0, &mut torrents, GlobalStats::default(), no_detail);
        assert_eq!(p.due(t0, false), Due::Idle, "nothing to look at");
        let soon = t0 + PUBLISH_MIN_GAP / 2;
        assert_eq!(p.due(soon, true), Due::At(t0 + PUBLISH_MIN_GAP));
        assert_eq!(p.due(t0 + PUBLISH_MIN_GAP, true), Due::Now);
    }

    #[tokio::test]
    async fn session_stats_come_from_the_context() {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let ctx = SessionCtx::new(crate::config::engine::EngineConfig::default(), 6881, tx);
        ctx.limits.download.set_rate(1000);
        let g = session_stats(&ctx, Some(5), false);
        assert_eq!(g.listen_port, 6881);
        assert_eq!(g.down_limit, 1000);
        assert_eq!(g.up_limit, 0);
        assert_eq!(g.free_space, Some(5));
        assert_eq!(g.dht_nodes, None);
        assert!(!g.lsd);
    }
}
