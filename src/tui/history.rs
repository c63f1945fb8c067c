//! Speed history for the graphs, sampled from snapshots in the UI.
//!
//! Each series keeps three rings of 60 buckets: one per second (the 1-minute window), one
//! per 10 s (10 minutes) and one per minute (1 hour), each bucket the average rate over its
//! span. The engine publishes a row only when it changes, so a rate holds until the next
//! one while snapshots keep coming; but it publishes at least every 0.5 s while anything
//! moves, so seconds more than [`HOLD_SECS`] after the last snapshot are 0 B/s (an idle
//! engine sends nothing, and the graphs must not repeat a finished transfer's last rate).
//! The clock is the UI's wall clock at draw time, not the time of the last snapshot. A
//! torrent gets a series only once it has had a non-zero rate, so thousands of idle
//! torrents cost nothing.

use std::collections::HashMap;
use std::sync::Arc;

use crate::api::{Snapshot, TorrentId, TorrentRow};

/// Speed points of the Speed tab, (down, up) bytes/s oldest first: the session's, and the
/// selected torrent's when it ever moved data.
pub type SpeedPoints = (Vec<(u64, u64)>, Option<Vec<(u64, u64)>>);

/// Buckets per ring (and so points per graph).
pub const POINTS: usize = 60;

/// Seconds a snapshot's rates hold without a newer snapshot, after which the graphs show
/// 0 B/s (the engine publishes every 0.5 s while anything moves; the slack covers a busy
/// machine).
pub const HOLD_SECS: u64 = 2;

/// A graph window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Window {
    /// The last minute, one point a second.
    #[default]
    Minute,
    /// The last 10 minutes, one point per 10 s.
    TenMinutes,
    /// The last hour, one point a minute.
    Hour,
}

impl Window {
    /// The next window (1 min → 10 min → 1 h → 1 min).
    pub fn next(self) -> Window {
        match self {
            Window::Minute => Window::TenMinutes,
            Window::TenMinutes => Window::Hour,
            Window::Hour => Window::Minute,
        }
    }

    /// Seconds per point.
    pub fn step_secs(self) -> u64 {
        match self {
            Window::Minute => 1,
            Window::TenMinutes => 10,
            Window::Hour => 60,
        }
    }

    /// Label, e.g. `"10 min"`.
    pub fn label(self) -> &'static str {
        match self {
            Window::Minute => "1 min",
            Window::TenMinutes => "10 min",
            Window::Hour => "1 h",
        }
    }

    fn tier(self) -> usize {
        match self {
            Window::Minute => 0,
            Window::TenMinutes => 1,
            Window::Hour => 2,
        }
    }
}

/// One ring: completed buckets (oldest first once full) plus the bucket being filled.
#[derive(Debug, Clone, Default)]
struct Ring {
    /// Completed buckets, (down, up) bytes/s, at most [`POINTS`].
    buckets: std::collections::VecDeque<(u64, u64)>,
    /// Sums and second count of the bucket being filled.
    acc: (u128, u128, u64),
}

impl Ring {
    fn add(&mut self, down: u64, up: u64, step: u64) {
        self.acc.0 += u128::from(down);
        self.acc.1 += u128::from(up);
        self.acc.2 += 1;
        if self.acc.2 >= step {
            let n = u128::from(self.acc.2);
            let bucket = ((self.acc.0 / n) as u64, (self.acc.1 / n) as u64);
            if self.buckets.len() == POINTS {
                self.buckets.pop_front();
            }
            self.buckets.push_back(bucket);
            self.acc = (0, 0, 0);
        }
    }
}

/// Rates of one torrent or of the session over the last hour.
#[derive(Debug, Clone, Default)]
pub struct Series {
    rings: [Ring; 3],
    /// The second of the last sample and its rates.
    last: Option<(u64, u64, u64)>,
}

impl Series {
    /// Records rates `down`/`up` (bytes/s) seen at second `now` (any monotonic count of
    /// seconds). Seconds since the previous sample repeat the previous rates up to second
    /// `held` (the last snapshot's second plus [`HOLD_SECS`]) and are 0 B/s after it; a
    /// sample for a second already recorded replaces its rates for the seconds to come.
    pub fn record(&mut self, now: u64, down: u64, up: u64, held: u64) {
        match self.last {
            None => {
                self.push_second(down, up);
                self.last = Some((now, down, up));
            }
            Some((at, _, _)) if now > at => {
                self.fill(now, held);
                self.push_second(down, up);
                self.last = Some((now, down, up));
            }
            Some((at, _, _)) => self.last = Some((at, down, up)),
        }
    }

    /// Brings the series up to second `now` (included) without a new sample: the last
    /// rates hold up to second `held`, later seconds are 0 B/s.
    pub fn advance(&mut self, now: u64, held: u64) {
        if let Some((at, d, u)) = self.last
            && now > at
        {
            self.fill(now, held);
            let (d, u) = if now <= held { (d, u) } else { (0, 0) };
            self.push_second(d, u);
            self.last = Some((now, d, u));
        }
    }

    /// Pushes the seconds after the last sample and before `end` (at most an hour of
    /// them): the last rates up to `held`, 0 B/s after.
    fn fill(&mut self, end: u64, held: u64) {
        let Some((at, d, u)) = self.last else {
            return;
        };
        let first = (at + 1).max(end.saturating_sub(3600));
        for second in first..end {
            if second <= held {
                self.push_second(d, u);
            } else {
                self.push_second(0, 0);
            }
        }
    }

    fn push_second(&mut self, down: u64, up: u64) {
        for (ring, window) in
            self.rings
                .iter_mut()
                .zip([Window::Minute, Window::TenMinutes, Window::Hour])
        {
            ring.add(down, up, window.step_secs());
        }
    }

    /// The points of `window`, oldest first: (down, up) bytes/s, at most [`POINTS`].
    pub fn points(&self, window: Window) -> Vec<(u64, u64)> {
        self.rings[window.tier()].buckets.iter().copied().collect()
    }

    /// The latest rates.
    pub fn current(&self) -> (u64, u64) {
        self.last.map_or((0, 0), |(_, d, u)| (d, u))
    }
}

/// Hashes a [`TorrentId`] as itself: ids are small distinct integers, so SipHash's work is
/// wasted on them (this map is touched for every changed row of every snapshot).
#[derive(Debug, Default, Clone, Copy)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        // spread the bits so hashbrown's top-7-bit groups differ
        self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A map keyed by torrent id with [`IdHasher`].
pub type IdMap<V> = HashMap<TorrentId, V, std::hash::BuildHasherDefault<IdHasher>>;

/// Series for the session and for each torrent that ever moved data.
#[derive(Debug, Default)]
pub struct History {
    session: Series,
    torrents: IdMap<Series>,
    /// Rows of the last snapshot sampled (to skip unchanged rows by pointer).
    previous: Option<Arc<[Arc<TorrentRow>]>>,
    /// Second of the last snapshot sampled.
    seen: Option<u64>,
}

impl History {
    /// Samples `snapshot` at second `now`: the session totals, and each row that changed
    /// since the last snapshot (same `Arc` or same revision: skipped).
    pub fn sample(&mut self, snapshot: &Snapshot, now: u64) {
        // rates of rows left out of this snapshot (unchanged) held while snapshots came
        let held = self.seen.map_or(now, |s| s + HOLD_SECS);
        self.seen = Some(self.seen.map_or(now, |s| s.max(now)));
        self.session.record(
            now,
            snapshot.global.down_rate,
            snapshot.global.up_rate,
            held,
        );
        let previous = self.previous.take();
        let same_list = previous
            .as_ref()
            .is_some_and(|p| Arc::ptr_eq(p, &snapshot.rows));
        if !same_list {
            for (i, row) in snapshot.rows.iter().enumerate() {
                let unchanged = previous.as_ref().and_then(|p| p.get(i)).is_some_and(|old| {
                    Arc::ptr_eq(old, row) || (old.id == row.id && old.rev == row.rev)
                });
                if unchanged {
                    continue;
                }
                if let Some(series) = self.torrents.get_mut(&row.id) {
                    series.record(now, row.down_rate, row.up_rate, held);
                } else if row.down_rate > 0 || row.up_rate > 0 {
                    let mut series = Series::default();
                    series.record(now, row.down_rate, row.up_rate, held);
                    self.torrents.insert(row.id, series);
                }
            }
            if self.torrents.len() > snapshot.rows.len() {
                let ids: std::collections::HashSet<TorrentId> =
                    snapshot.rows.iter().map(|r| r.id).collect();
                self.torrents.retain(|id, _| ids.contains(id));
            }
        }
        self.previous = Some(snapshot.rows.clone());
    }

    /// The second up to which the last snapshot's rates hold.
    fn held(&self) -> u64 {
        self.seen.map_or(0, |s| s + HOLD_SECS)
    }

    /// The session's series, brought up to second `now` (the clock at draw time: seconds
    /// more than [`HOLD_SECS`] after the last snapshot are 0 B/s).
    pub fn session(&mut self, now: u64) -> &Series {
        let held = self.held();
        self.session.advance(now, held);
        &self.session
    }

    /// Torrent `id`'s series brought up to `now` like [`History::session`] (`None`: it
    /// never moved data).
    pub fn torrent(&mut self, id: TorrentId, now: u64) -> Option<&Series> {
        let held = self.held();
        let s = self.torrents.get_mut(&id)?;
        s.advance(now, held);
        Some(s)
    }

    /// Torrents with a series (memory use check).
    pub fn tracked(&self) -> usize {
        self.torrents.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_repeat_the_last_rate_and_windows_average() {
        let mut s = Series::default();
        s.record(100, 10, 1, 104);
        s.record(105, 20, 2, 104);
        let pts = s.points(Window::Minute);
        assert_eq!(pts.len(), 6);
        assert_eq!(pts[..5], [(10, 1); 5]);
        assert_eq!(pts[5], (20, 2));
        assert!(s.points(Window::TenMinutes).is_empty());
        s.advance(114, 114); // 9 more seconds at 20: 15 seconds in all
        let ten = s.points(Window::TenMinutes);
        assert_eq!(ten, vec![(15, 1)], "5 s at 10 and 5 s at 20");
        assert_eq!(s.points(Window::Minute).len(), 15);
        // the 1-minute ring keeps 60 points
        s.advance(1000, 1000);
        assert_eq!(s.points(Window::Minute).len(), POINTS);
        assert_eq!(s.points(Window::Hour).len(), 15);
        // same second: the new rate holds from now on
        s.record(1000, 7, 7, 1000);
        s.advance(1001, 1001);
        assert_eq!(s.points(Window::Minute).last(), Some(&(7, 7)));
    }

    fn session_snapshot(up: u64) -> Snapshot {
        let mut snap = Snapshot::default();
        snap.global.up_rate = up;
        snap
    }

    #[test]
    fn seconds_without_snapshots_are_zero_not_the_last_rate() {
        let mut h = History::default();
        for second in 10..=20 {
            h.sample(&session_snapshot(228 * 1024), second);
        }
        // the last snapshot (second 20) said 228 KiB/s; nothing came since: a minute later
        // the graph has the rate held HOLD_SECS seconds, then zeros, and "now" is 0
        let pts = h.session(80).points(Window::Minute);
        assert_eq!(pts.len(), POINTS, "seconds 21..=80 of 10..=80");
        assert_eq!(pts.last(), Some(&(0, 0)));
        let held: Vec<u64> = pts.iter().map(|p| p.1).filter(|&u| u > 0).collect();
        assert_eq!(
            held,
            [228 * 1024; 2],
            "seconds 21 and 22 (HOLD_SECS) at 228 KiB/s"
        );
        assert_eq!(h.session(80).current(), (0, 0));
        // a snapshot after the silence fills the gap with zeros, not the old rate
        let mut h = History::default();
        h.sample(&session_snapshot(100), 1);
        h.sample(&session_snapshot(50), 30);
        let pts = h.session(30).points(Window::Minute);
        assert_eq!(pts.len(), 30);
        assert_eq!(pts[..3], [(0, 100); 3], "second 1 and the 2 held seconds");
        assert!(pts[3..29].iter().all(|&p| p == (0, 0)), "{pts:?}");
        assert_eq!(pts[29], (0, 50));
    }

    #[test]
    fn rows_left_out_of_snapshots_hold_their_rate_while_snapshots_come() {
        let row = Arc::new(TorrentRow {
            id: TorrentId(1),
            up_rate: 500,
            rev: 1,
            ..TorrentRow::default()
        });
        let snap = Snapshot {
            rows: vec![row].into(),
            ..Snapshot::default()
        };
        let mut h = History::default();
        for second in 1..=30 {
            // the same rows (unchanged, skipped by pointer) in every snapshot
            h.sample(&snap, second);
        }
        let pts = h.torrent(TorrentId(1), 30).unwrap().points(Window::Minute);
        assert_eq!(pts.len(), 30);
        assert!(pts.iter().all(|&p| p == (0, 500)), "{pts:?}");
    }

    #[test]
    fn idle_torrents_get_no_series() {
        let rows: Vec<Arc<TorrentRow>> = (0..1000)
            .map(|i| {
                Arc::new(TorrentRow {
                    id: TorrentId(i),
                    up_rate: u64::from(i == 7) * 100,
                    ..TorrentRow::default()
                })
            })
            .collect();
        let snap = Snapshot {
            rows: rows.into(),
            ..Snapshot::default()
        };
        let mut h = History::default();
        h.sample(&snap, 1);
        h.sample(&snap, 2);
        assert_eq!(h.tracked(), 1);
        assert_eq!(
            h.torrent(TorrentId(7), 3).map(Series::current),
            Some((0, 100))
        );
        assert!(h.torrent(TorrentId(8), 3).is_none());
    }
}
