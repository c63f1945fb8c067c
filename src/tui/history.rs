//! Speed history for the graphs, sampled from snapshots in the UI.
//!
//! Each series keeps three rings of 60 buckets: one per second (the 1-minute window), one
//! per 10 s (10 minutes) and one per minute (1 hour), each bucket the average rate over its
//! span. The engine publishes a row only when it changes, so a rate holds until the next
//! one: seconds without a sample repeat the last rate. A torrent gets a series only once it
//! has had a non-zero rate, so thousands of idle torrents cost nothing.

use std::collections::HashMap;
use std::sync::Arc;

use crate::api::{Snapshot, TorrentId, TorrentRow};

/// Speed points of the Speed tab, (down, up) bytes/s oldest first: the session's, and the
/// selected torrent's when it ever moved data.
pub type SpeedPoints = (Vec<(u64, u64)>, Option<Vec<(u64, u64)>>);

/// Buckets per ring (and so points per graph).
pub const POINTS: usize = 60;

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
    /// seconds). Seconds since the previous sample repeat the previous rates; a sample for a
    /// second already recorded replaces its rates for the seconds to come.
    pub fn record(&mut self, now: u64, down: u64, up: u64) {
        match self.last {
            None => {
                self.push_second(down, up);
                self.last = Some((now, down, up));
            }
            Some((at, d, u)) if now > at => {
                // fill the gap with the old rates (at most an hour of it), then this second
                let gap = (now - at - 1).min(3600);
                for _ in 0..gap {
                    self.push_second(d, u);
                }
                self.push_second(down, up);
                self.last = Some((now, down, up));
            }
            Some((at, _, _)) => self.last = Some((at, down, up)),
        }
    }

    /// Brings the series up to second `now` without a new sample (the last rates hold).
    pub fn advance(&mut self, now: u64) {
        if let Some((_, d, u)) = self.last {
            self.record(now, d, u);
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
}

impl History {
    /// Samples `snapshot` at second `now`: the session totals, and each row that changed
    /// since the last snapshot (same `Arc` or same revision: skipped).
    pub fn sample(&mut self, snapshot: &Snapshot, now: u64) {
        self.session
            .record(now, snapshot.global.down_rate, snapshot.global.up_rate);
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
                    series.record(now, row.down_rate, row.up_rate);
                } else if row.down_rate > 0 || row.up_rate > 0 {
                    let mut series = Series::default();
                    series.record(now, row.down_rate, row.up_rate);
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

    /// The session's series, brought up to `now`.
    pub fn session(&mut self, now: u64) -> &Series {
        self.session.advance(now);
        &self.session
    }

    /// Torrent `id`'s series brought up to `now` (`None`: it never moved data).
    pub fn torrent(&mut self, id: TorrentId, now: u64) -> Option<&Series> {
        let s = self.torrents.get_mut(&id)?;
        s.advance(now);
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
        s.record(100, 10, 1);
        s.record(105, 20, 2);
        let pts = s.points(Window::Minute);
        assert_eq!(pts.len(), 6);
        assert_eq!(pts[..5], [(10, 1); 5]);
        assert_eq!(pts[5], (20, 2));
        assert!(s.points(Window::TenMinutes).is_empty());
        s.advance(114); // 9 more seconds at 20: 15 seconds in all
        let ten = s.points(Window::TenMinutes);
        assert_eq!(ten, vec![(15, 1)], "5 s at 10 and 5 s at 20");
        assert_eq!(s.points(Window::Minute).len(), 15);
        // the 1-minute ring keeps 60 points
        s.advance(1000);
        assert_eq!(s.points(Window::Minute).len(), POINTS);
        assert_eq!(s.points(Window::Hour).len(), 15);
        // same second: the new rate holds from now on
        s.record(1000, 7, 7);
        s.advance(1001);
        assert_eq!(s.points(Window::Minute).last(), Some(&(7, 7)));
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
