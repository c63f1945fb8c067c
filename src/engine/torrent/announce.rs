//! The announce schedule of one torrent: its trackers in tiers (BEP 12), what each tier
//! owes its trackers (`started`, `completed`, `stopped`), when it announces next, and what
//! each tracker last said (for the Trackers panel). A plain struct: the torrent asks it for
//! the announces that are due and feeds it the results; it never does I/O.
//!
//! Every tier announces on its own (as qBittorrent and libtorrent's
//! `announce_to_all_tiers` do). Within a tier the trackers are tried in order; the first
//! that answers moves to the front, so the next announce goes to it first (BEP 12). When
//! every tracker of a tier fails, the tier retries after 15 s, doubling up to 30 min.
//! Trackers whose URL scheme we cannot speak are shown as unsupported and skipped.

use std::time::{Duration, Instant, SystemTime};

use crate::api::{TrackerRow, TrackerStatus};
use crate::tracker::{AnnounceEvent, AnnounceResponse, ScrapeStats, TrackerError};

/// How often a tracker that answers announces is scraped for its seeder, leecher and
/// completed-download counts (qBittorrent and Transmission scrape about every 30 min).
pub const SCRAPE_INTERVAL: Duration = Duration::from_secs(30 * 60);

/// First retry delay after every tracker of a tier failed; doubles per failure.
pub const FIRST_RETRY: Duration = Duration::from_secs(15);
/// Longest retry delay.
pub const MAX_RETRY: Duration = Duration::from_secs(30 * 60);

/// Deadlines further than this from now are rounded up to a whole [`COALESCE_STEP`].
pub const COALESCE_AFTER: Duration = Duration::from_secs(2);
/// The grid later announces are rounded up to, so that thousands of torrents whose retries
/// were spread by jitter wake the session a few times a second at most, not once each.
pub const COALESCE_STEP: Duration = Duration::from_millis(500);

/// `at` rounded up to the next multiple of [`COALESCE_STEP`] since the process started,
/// when it is more than [`COALESCE_AFTER`] after `now` (regular announces and retries);
/// sooner deadlines (a first announce, the next tracker of a tier) are kept as they are.
pub fn coalesce(at: Instant, now: Instant) -> Instant {
    static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    if at <= now + COALESCE_AFTER {
        return at;
    }
    let base = *BASE.get_or_init(|| now);
    let Some(since) = at.checked_duration_since(base) else {
        return at;
    };
    let step = COALESCE_STEP.as_nanos();
    let slots = since.as_nanos().div_ceil(step);
    u64::try_from(slots * step)
        .map(|n| base + Duration::from_nanos(n))
        .unwrap_or(at)
}

/// One announce to send: to `url` of tier `tier`, with `event`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnounceJob {
    /// The tier's id: its index when the set was made (tiers added later get the next
    /// numbers), kept while tiers are edited away.
    pub tier: usize,
    /// Announce URL.
    pub url: String,
    /// Event to send (`None`: a regular re-announce).
    pub event: Option<AnnounceEvent>,
    /// The `tracker id` that tracker gave earlier, to echo.
    pub tracker_id: Option<String>,
}

#[derive(Debug, Clone)]
struct Tracker {
    url: String,
    supported: bool,
    status: TrackerStatus,
    message: Option<String>,
    last_announce: Option<SystemTime>,
    seeds: Option<u32>,
    leechers: Option<u32>,
    downloaded: Option<u32>,
    peers: u32,
    min_interval: Option<Duration>,
    last_ok: Option<Instant>,
    tracker_id: Option<String>,
    /// When we last asked it for a scrape (BEP 48 / BEP 15), answered or not.
    last_scrape: Option<Instant>,
    /// Its scrape failed for a reason that will not change (no scrape URL): never again.
    no_scrape: bool,
}

#[derive(Debug, Clone, Default)]
struct Tier {
    /// Stable id ([`AnnounceJob::tier`]).
    id: usize,
    trackers: Vec<Tracker>,
    /// Index of the tracker the current (or next) attempt goes to.
    attempt: usize,
    in_flight: bool,
    next_at: Option<Instant>,
    /// Consecutive rounds in which every tracker failed.
    fails: u32,
    /// Event for the next announce.
    event: Option<AnnounceEvent>,
    /// A tracker of this tier acknowledged `started`: `stopped` is owed at the end.
    joined: bool,
    /// `completed` not yet acknowledged.
    completed_owed: bool,
    /// `stopped` to send once the announce in flight returns.
    stop_owed: bool,
    /// A `stopped` of this tier is on its way: nothing else goes out until it returns, so a
    /// quick stop and start (a recheck, a move) cannot reach the tracker as `started` then
    /// `stopped` and leave us out of its swarm.
    stop_in_flight: bool,
}

impl Tier {
    fn first_supported_from(&self, i: usize) -> Option<usize> {
        (i..self.trackers.len()).find(|&j| self.trackers[j].supported)
    }
}

/// Every tracker of a torrent and its announce schedule.
#[derive(Debug, Clone, Default)]
pub struct TrackerSet {
    tiers: Vec<Tier>,
    /// `stopped` announces handed out and not yet finished.
    stopping: usize,
    /// The id the next tier added gets.
    next_id: usize,
}

impl TrackerSet {
    /// The URL of the tracker that answered an announce last, else the first tracker of
    /// the first tier (qBittorrent's "current tracker"); `None` without trackers.
    pub fn current_url(&self) -> Option<&str> {
        let all = || self.tiers.iter().flat_map(|t| t.trackers.iter());
        all()
            .filter_map(|t| t.last_ok.map(|at| (at, t)))
            .max_by_key(|(at, _)| *at)
            .map(|(_, t)| t)
            .or_else(|| all().next())
            .map(|t| t.url.as_str())
    }

    /// From the metainfo's tiers (`announce-list`, or `[[announce]]`); each tier shuffled
    /// once (BEP 12); empty tiers and duplicate URLs dropped. `supported` says whether we can
    /// speak a URL's scheme.
    pub fn new(tiers: &[Vec<String>], supported: impl Fn(&str) -> bool) -> TrackerSet {
        use rand::seq::SliceRandom;
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for urls in tiers {
            let mut trackers: Vec<Tracker> = urls
                .iter()
                .filter(|u| seen.insert(u.trim().to_string()))
                .map(|u| Tracker {
                    url: u.trim().to_string(),
                    supported: supported(u.trim()),
                    status: if supported(u.trim()) {
                        TrackerStatus::Idle
                    } else {
                        TrackerStatus::Unsupported
                    },
                    message: None,
                    last_announce: None,
                    seeds: None,
                    leechers: None,
                    downloaded: None,
                    last_scrape: None,
                    no_scrape: false,
                    peers: 0,
                    min_interval: None,
                    last_ok: None,
                    tracker_id: None,
                })
                .collect();
            if trackers.is_empty() {
                continue;
            }
            trackers.shuffle(&mut rand::rng());
            // supported ones first, so an attempt starts with one we can reach
            trackers.sort_by_key(|t| !t.supported);
            out.push(Tier {
                id: out.len(),
                trackers,
                ..Tier::default()
            });
        }
        TrackerSet {
            next_id: out.len(),
            tiers: out,
            stopping: 0,
        }
    }

    /// Add `url` as a tier of its own (how a magnet link's trackers are announced to, BEP
    /// 12) unless a tier has it already. `running`: the torrent is in the swarm, so the new
    /// tier announces `started` at that time. Returns whether it was added.
    pub fn add_tracker(
        &mut self,
        url: &str,
        supported: impl Fn(&str) -> bool,
        running: Option<Instant>,
    ) -> bool {
        let url = url.trim();
        if url.is_empty()
            || self
                .tiers
                .iter()
                .any(|t| t.trackers.iter().any(|tr| tr.url == url))
        {
            return false;
        }
        let Some(mut tier) = TrackerSet::new(&[vec![url.to_owned()]], supported)
            .tiers
            .pop()
        else {
            return false;
        };
        if let Some(now) = running
            && tier.first_supported_from(0).is_some()
        {
            tier.event = Some(AnnounceEvent::Started);
            tier.next_at = Some(now);
        }
        tier.id = self.next_id;
        self.next_id += 1;
        self.tiers.push(tier);
        true
    }

    /// Whether a tier has the tracker `url`.
    pub fn contains(&self, url: &str) -> bool {
        self.tiers
            .iter()
            .any(|t| t.trackers.iter().any(|tr| tr.url == url))
    }

    /// The tracker `old` becomes `new` in its tier (a tracker edit): it starts afresh (no
    /// status, counts or tracker id). When its tier was in that tracker's swarm, the
    /// `stopped` owed to `old` is returned (unless an announce to it is out: its answer is
    /// then dropped) and nothing more goes to `old`; the tier announces `started` to `new`
    /// (at `running`, the torrent being in the swarm, once that `stopped` returned, so a
    /// tracker that sees both in one swarm sees them in order). A `new` that a tier has
    /// already removes `old` instead ([`TrackerSet::remove_tracker`]). `None` when `old`
    /// is not there.
    pub fn rename_tracker(
        &mut self,
        old: &str,
        new: &str,
        supported: impl Fn(&str) -> bool,
        running: Option<Instant>,
    ) -> Option<Option<AnnounceJob>> {
        if self.contains(new) {
            return self.remove_tracker(old, running);
        }
        let (ti, idx) = self.find(old)?;
        let tier = &mut self.tiers[ti];
        let current = idx == tier.attempt.min(tier.trackers.len() - 1);
        let stop = if current && tier.joined {
            tier.joined = false;
            tier.completed_owed = false;
            (!tier.in_flight).then(|| {
                tier.stop_in_flight = true;
                AnnounceJob {
                    tier: tier.id,
                    url: old.to_owned(),
                    event: Some(AnnounceEvent::Stopped),
                    tracker_id: tier.trackers[idx].tracker_id.clone(),
                }
            })
        } else {
            None
        };
        if stop.is_some() {
            self.stopping += 1;
        }
        let tier = &mut self.tiers[ti];
        let fresh = TrackerSet::new(&[vec![new.to_owned()]], &supported)
            .tiers
            .pop()
            .and_then(|mut t| t.trackers.pop());
        if let Some(fresh) = fresh {
            tier.trackers[idx] = fresh;
        }
        if let Some(now) = running
            && !tier.joined
            && tier.trackers[idx].supported
        {
            // announce to the new URL now (a tier backing off from a dead host included)
            tier.attempt = idx;
            tier.fails = 0;
            tier.event = Some(AnnounceEvent::Started);
            tier.next_at = Some(now);
        }
        Some(stop)
    }

    /// Remove the tracker `url` (a tracker edit), and its tier when it was the last. When
    /// its tier was in that tracker's swarm, the `stopped` owed to it is returned (unless
    /// an announce to it is out: its answer is then dropped), and the tier's next tracker
    /// announces `started` (at `running`). `None` when `url` is not there.
    pub fn remove_tracker(
        &mut self,
        url: &str,
        running: Option<Instant>,
    ) -> Option<Option<AnnounceJob>> {
        let (ti, idx) = self.find(url)?;
        let tier = &mut self.tiers[ti];
        let current = idx == tier.attempt.min(tier.trackers.len() - 1);
        let mut stop = None;
        if current && tier.joined {
            tier.joined = false;
            tier.completed_owed = false;
            if !tier.in_flight {
                stop = Some(AnnounceJob {
                    tier: tier.id,
                    url: url.to_owned(),
                    event: Some(AnnounceEvent::Stopped),
                    tracker_id: tier.trackers[idx].tracker_id.clone(),
                });
                tier.stop_in_flight = true;
            }
        }
        tier.trackers.remove(idx);
        if tier.trackers.is_empty() {
            self.tiers.remove(ti);
        } else {
            if idx < tier.attempt || tier.attempt >= tier.trackers.len() {
                tier.attempt = tier.attempt.saturating_sub(1);
            }
            if current {
                tier.attempt = tier
                    .first_supported_from(tier.attempt)
                    .or_else(|| tier.first_supported_from(0))
                    .unwrap_or(0);
                if let Some(now) = running
                    && tier.first_supported_from(0).is_some()
                {
                    tier.fails = 0;
                    tier.event = Some(AnnounceEvent::Started);
                    tier.next_at = Some(now);
                }
            }
        }
        if stop.is_some() {
            self.stopping += 1;
        }
        Some(stop)
    }

    /// Where the tracker `url` is: (tier index, index in the tier).
    fn find(&self, url: &str) -> Option<(usize, usize)> {
        self.tiers.iter().enumerate().find_map(|(ti, t)| {
            t.trackers
                .iter()
                .position(|tr| tr.url == url)
                .map(|i| (ti, i))
        })
    }

    /// No trackers at all.
    pub fn is_empty(&self) -> bool {
        self.tiers.is_empty()
    }

    /// Whether any tracker can be contacted.
    pub fn any_supported(&self) -> bool {
        self.tiers
            .iter()
            .any(|t| t.trackers.iter().any(|tr| tr.supported))
    }

    /// The torrent joins the swarm: every tier announces `started` now.
    pub fn start(&mut self, now: Instant) {
        for tier in &mut self.tiers {
            tier.stop_owed = false;
            tier.attempt = tier.first_supported_from(0).unwrap_or(0);
            if tier.first_supported_from(0).is_none() {
                tier.next_at = None;
                continue;
            }
            if !tier.joined {
                tier.event = Some(AnnounceEvent::Started);
            }
            tier.fails = 0;
            tier.next_at = Some(now);
        }
    }

    /// The torrent leaves the swarm: the announces owed now — `stopped`, or first a
    /// `completed` not yet acknowledged (its `stopped` follows from
    /// [`TrackerSet::finished`]); tiers whose announce is in flight send theirs when it
    /// returns. No regular announces follow.
    pub fn stop(&mut self) -> Vec<AnnounceJob> {
        let mut jobs = Vec::new();
        for tier in &mut self.tiers {
            tier.next_at = None;
            if tier.in_flight {
                tier.stop_owed = true;
                tier.event = None;
                continue;
            }
            if tier.joined && tier.completed_owed {
                tier.in_flight = true;
                tier.stop_owed = true;
                tier.event = None;
                let t = &tier.trackers[tier.attempt.min(tier.trackers.len() - 1)];
                jobs.push(AnnounceJob {
                    tier: tier.id,
                    url: t.url.clone(),
                    event: Some(AnnounceEvent::Completed),
                    tracker_id: t.tracker_id.clone(),
                });
                continue;
            }
            tier.event = None;
            tier.completed_owed = false;
            if tier.joined {
                tier.joined = false;
                tier.stop_in_flight = true;
                self.stopping += 1;
                let t = &tier.trackers[tier.attempt.min(tier.trackers.len() - 1)];
                jobs.push(AnnounceJob {
                    tier: tier.id,
                    url: t.url.clone(),
                    event: Some(AnnounceEvent::Stopped),
                    tracker_id: t.tracker_id.clone(),
                });
            }
        }
        jobs
    }

    /// The download just completed: tiers that know us announce `completed` now.
    pub fn complete(&mut self, now: Instant) {
        for tier in &mut self.tiers {
            if tier.joined {
                tier.completed_owed = true;
                tier.event = Some(AnnounceEvent::Completed);
                if !tier.in_flight {
                    tier.next_at = Some(now);
                }
            }
        }
    }

    /// Announce every tier again now, or as soon as its tracker's `min interval` allows.
    pub fn reannounce(&mut self, now: Instant) {
        for tier in &mut self.tiers {
            if tier.in_flight || tier.next_at.is_none() {
                continue;
            }
            let t = &tier.trackers[tier.attempt.min(tier.trackers.len() - 1)];
            let earliest = match (t.last_ok, t.min_interval) {
                (Some(at), Some(min)) => at + min,
                _ => now,
            };
            tier.next_at = Some(earliest.max(now));
        }
    }

    /// Take the announces due at `now` (each tier is then in flight until
    /// [`TrackerSet::finished`]).
    pub fn due(&mut self, now: Instant) -> Vec<AnnounceJob> {
        let mut jobs = Vec::new();
        for tier in &mut self.tiers {
            if tier.in_flight || tier.stop_in_flight || tier.next_at.is_none_or(|at| at > now) {
                continue;
            }
            let Some(a) = tier.first_supported_from(tier.attempt) else {
                tier.next_at = None;
                continue;
            };
            tier.attempt = a;
            tier.in_flight = true;
            tier.next_at = None;
            let t = &mut tier.trackers[a];
            t.status = TrackerStatus::Announcing;
            jobs.push(AnnounceJob {
                tier: tier.id,
                url: t.url.clone(),
                event: tier.event,
                tracker_id: t.tracker_id.clone(),
            });
        }
        jobs
    }

    /// Whether the tracker `url` shows a message (an error or a warning) now.
    pub fn has_message(&self, url: &str) -> bool {
        self.tiers
            .iter()
            .flat_map(|t| &t.trackers)
            .any(|t| t.url == url && t.message.is_some())
    }

    /// An announce is in flight (a `stopped` may still follow it).
    pub fn busy(&self) -> bool {
        self.stopping > 0 || self.tiers.iter().any(|t| t.in_flight)
    }

    /// The earliest time an announce is due, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.tiers
            .iter()
            .filter(|t| !t.in_flight && !t.stop_in_flight)
            .filter_map(|t| t.next_at)
            .min()
    }

    /// An announce from [`TrackerSet::due`] (or [`TrackerSet::stop`]) returned. Returns a
    /// `stopped` announce to send now if one became owed while it was in flight.
    pub fn finished(
        &mut self,
        job: &AnnounceJob,
        result: &Result<AnnounceResponse, TrackerError>,
        now: Instant,
    ) -> Option<AnnounceJob> {
        if job.event == Some(AnnounceEvent::Stopped) {
            self.stopping = self.stopping.saturating_sub(1);
            if let Some(tier) = self.tiers.iter_mut().find(|t| t.id == job.tier) {
                tier.stop_in_flight = false;
            }
        }
        let tier = self.tiers.iter_mut().find(|t| t.id == job.tier)?;
        let Some(idx) = tier.trackers.iter().position(|t| t.url == job.url) else {
            // its tracker was edited away while the announce was out: the tier is free
            // again (what the old URL said is not ours to keep)
            if job.event != Some(AnnounceEvent::Stopped) {
                tier.in_flight = false;
                if tier.stop_owed {
                    tier.stop_owed = false;
                    tier.next_at = None;
                    tier.event = None;
                }
            }
            return None;
        };
        if job.event == Some(AnnounceEvent::Stopped) {
            // fire and forget: record what the tracker said, nothing else follows
            let t = &mut tier.trackers[idx];
            t.last_announce = Some(SystemTime::now());
            t.status = if result.is_ok() {
                TrackerStatus::Idle
            } else {
                TrackerStatus::Error
            };
            return None;
        }
        tier.in_flight = false;
        match result {
            Ok(resp) => {
                let t = &mut tier.trackers[idx];
                t.status = TrackerStatus::Working;
                t.message = resp.warning.clone();
                t.last_announce = Some(SystemTime::now());
                t.seeds = resp.complete;
                t.leechers = resp.incomplete;
                t.peers = resp.peers.len() as u32;
                t.min_interval = resp.min_interval.map(|s| Duration::from_secs(u64::from(s)));
                t.last_ok = Some(now);
                if resp.tracker_id.is_some() {
                    t.tracker_id = resp.tracker_id.clone();
                }
                // BEP 12: the tracker that answered moves to the front of its tier
                let t = tier.trackers.remove(idx);
                tier.trackers.insert(0, t);
                tier.attempt = 0;
                tier.fails = 0;
                tier.joined = true;
                if job.event == Some(AnnounceEvent::Completed) {
                    tier.completed_owed = false;
                }
                tier.event = tier.completed_owed.then_some(AnnounceEvent::Completed);
                let interval = Duration::from_secs(u64::from(resp.regular_interval()));
                tier.next_at = Some(if tier.completed_owed {
                    now
                } else {
                    now + interval + jitter(interval / 4)
                });
            }
            Err(e) => {
                let t = &mut tier.trackers[idx];
                t.status = TrackerStatus::Error;
                t.message = Some(e.to_string());
                t.last_announce = Some(SystemTime::now());
                match tier.first_supported_from(idx + 1) {
                    Some(next) => {
                        // try the next tracker of the tier at once (BEP 12)
                        tier.attempt = next;
                        tier.next_at = Some(now);
                    }
                    None => {
                        tier.attempt = tier.first_supported_from(0).unwrap_or(0);
                        let backoff = FIRST_RETRY
                            .saturating_mul(1 << tier.fails.min(10))
                            .min(MAX_RETRY);
                        tier.fails += 1;
                        // up to a tenth later, so torrents that failed together spread out
                        tier.next_at = Some(now + backoff + jitter(backoff));
                    }
                }
            }
        }
        if tier.stop_owed {
            tier.stop_owed = false;
            tier.completed_owed = false;
            tier.next_at = None;
            tier.event = None;
            if tier.joined {
                tier.joined = false;
                tier.stop_in_flight = true;
                self.stopping += 1;
                let t = &tier.trackers[0];
                return Some(AnnounceJob {
                    tier: job.tier,
                    url: t.url.clone(),
                    event: Some(AnnounceEvent::Stopped),
                    tracker_id: t.tracker_id.clone(),
                });
            }
        }
        None
    }

    /// Seeders and leechers in the swarm: the largest counts any working tracker reported.
    pub fn swarm(&self) -> (Option<u32>, Option<u32>) {
        let working = || {
            self.tiers
                .iter()
                .flat_map(|t| &t.trackers)
                .filter(|t| t.last_ok.is_some())
        };
        (
            working().filter_map(|t| t.seeds).max(),
            working().filter_map(|t| t.leechers).max(),
        )
    }

    /// The first warning or error of the trackers worth showing in the torrent list (a
    /// warning, every tracker failing); `None` otherwise, and for a set without a usable
    /// tracker, whose message is where its peers come from instead.
    pub fn headline(&self) -> Option<String> {
        let all: Vec<&Tracker> = self
            .tiers
            .iter()
            .flat_map(|t| &t.trackers)
            .filter(|t| t.supported)
            .collect();
        if let Some(w) = all
            .iter()
            .find(|t| t.status == TrackerStatus::Working && t.message.is_some())
        {
            return w.message.as_ref().map(|m| format!("tracker warning: {m}"));
        }
        if !all.is_empty() && all.iter().all(|t| t.status == TrackerStatus::Error) {
            return all[0]
                .message
                .as_ref()
                .map(|m| format!("tracker {}: {m}", crate::net::host_of(&all[0].url)));
        }
        // without a usable tracker the torrent's sources speak (sources_headline)
        None
    }

    /// The trackers to scrape now (BEP 48, BEP 15 §scrape): those that answered an announce
    /// and were not asked in the last [`SCRAPE_INTERVAL`]. They are marked as asked.
    pub fn scrape_due(&mut self, now: Instant) -> Vec<String> {
        let mut due = Vec::new();
        for t in self.tiers.iter_mut().flat_map(|t| t.trackers.iter_mut()) {
            if t.supported
                && !t.no_scrape
                && t.last_ok.is_some()
                && t.last_scrape
                    .is_none_or(|at| now.saturating_duration_since(at) >= SCRAPE_INTERVAL)
            {
                t.last_scrape = Some(now);
                due.push(t.url.clone());
            }
        }
        due
    }

    /// A scrape of `url` returned: its counts replace what announces said (a scrape's are
    /// the tracker's own totals). Errors are not shown over the announce's status; a
    /// tracker without a scrape URL is not asked again.
    pub fn scraped(&mut self, url: &str, result: &Result<ScrapeStats, TrackerError>) {
        let Some(t) = self
            .tiers
            .iter_mut()
            .flat_map(|t| t.trackers.iter_mut())
            .find(|t| t.url == url)
        else {
            return;
        };
        match result {
            Ok(s) => {
                t.seeds = s.complete.or(t.seeds);
                t.leechers = s.incomplete.or(t.leechers);
                t.downloaded = s.downloaded.or(t.downloaded);
            }
            Err(TrackerError::InvalidUrl(_)) => t.no_scrape = true,
            Err(_) => {}
        }
    }

    /// Rows for the Trackers panel; `next` times are turned into wall-clock times with
    /// `now` / `wall_now`.
    pub fn rows(&self, now: Instant, wall_now: SystemTime) -> Vec<TrackerRow> {
        let mut rows = Vec::new();
        for (ti, tier) in self.tiers.iter().enumerate() {
            for (i, t) in tier.trackers.iter().enumerate() {
                let next_announce = (i == tier.attempt)
                    .then_some(tier.next_at)
                    .flatten()
                    .map(|at| wall_now + at.saturating_duration_since(now));
                rows.push(TrackerRow {
                    url: crate::net::mask_passkey(&t.url),
                    announce_url: t.url.clone(),
                    tier: ti as u32,
                    status: t.status,
                    message: t.message.clone(),
                    last_announce: t.last_announce,
                    next_announce,
                    seeds: t.seeds,
                    leechers: t.leechers,
                    downloaded: t.downloaded,
                    peers: t.peers,
                });
            }
        }
        rows
    }
}

/// A random delay of up to a tenth of `d`.
fn jitter(d: Duration) -> Duration {
    let max = d.as_millis() as u64 / 10;
    if max == 0 {
        Duration::ZERO
    } else {
        Duration::from_millis(rand::random_range(0..=max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `at` is `base` plus up to `slack` (the jitter).
    fn assert_between(at: Option<Instant>, base: Instant, slack: Duration) {
        let at = at.expect("a deadline");
        assert!(
            at >= base && at <= base + slack,
            "{at:?} not in {base:?} + {slack:?}"
        );
    }

    fn ok(interval: u32) -> Result<AnnounceResponse, TrackerError> {
        Ok(AnnounceResponse {
            interval,
            min_interval: Some(60),
            peers: vec![],
            complete: Some(3),
            incomplete: Some(5),
            warning: None,
            tracker_id: None,
        })
    }

    fn fail() -> Result<AnnounceResponse, TrackerError> {
        Err(TrackerError::Transport("refused".into()))
    }

    fn set(tiers: &[&[&str]]) -> TrackerSet {
        let tiers: Vec<Vec<String>> = tiers
            .iter()
            .map(|t| t.iter().map(|s| s.to_string()).collect())
            .collect();
        TrackerSet::new(&tiers, |u| u.starts_with("http"))
    }

    #[test]
    fn a_tracker_added_later_is_a_tier_of_its_own_and_announces_when_running() {
        let t0 = Instant::now();
        let mut s = set(&[&["http://a/announce"]]);
        assert!(!s.add_tracker("http://a/announce", |_| true, None), "known");
        assert!(!s.add_tracker("  ", |_| true, None));
        // stopped: added, nothing due
        assert!(s.add_tracker("http://b/announce", |u| u.starts_with("http"), None));
        assert!(s.due(t0).is_empty());
        // running: it announces `started` at once
        assert!(s.add_tracker("http://c/announce", |u| u.starts_with("http"), Some(t0)));
        let jobs = s.due(t0);
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].url, "http://c/announce");
        assert_eq!(jobs[0].event, Some(AnnounceEvent::Started));
        assert_eq!(s.rows(t0, SystemTime::now()).len(), 3);
    }

    #[test]
    fn a_renamed_tracker_gets_stopped_then_the_new_url_started() {
        let t0 = Instant::now();
        let http = |u: &str| u.starts_with("http");
        let mut s = set(&[&["http://a/announce?pk=P1"], &["http://b/announce"]]);
        s.start(t0);
        let jobs = s.due(t0);
        for j in &jobs {
            s.finished(j, &ok(1800), t0);
        }
        // tier 0 is in a's swarm: a gets `stopped`, then the new URL `started`
        let stop = s
            .rename_tracker(
                "http://a/announce?pk=P1",
                "http://a/announce?pk=P2",
                http,
                Some(t0),
            )
            .expect("found")
            .expect("a stopped is owed");
        assert_eq!(stop.url, "http://a/announce?pk=P1");
        assert_eq!(stop.event, Some(AnnounceEvent::Stopped));
        assert!(s.due(t0).is_empty(), "nothing before the stopped returns");
        assert!(s.finished(&stop, &ok(1800), t0).is_none());
        let jobs = s.due(t0);
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].url, "http://a/announce?pk=P2");
        assert_eq!(jobs[0].event, Some(AnnounceEvent::Started));
        s.finished(&jobs[0], &ok(1800), t0);
        assert!(!s.contains("http://a/announce?pk=P1"));
        // much later every announce goes to the new URL, none to the old
        let later = t0 + Duration::from_secs(4000);
        let urls: Vec<String> = s.due(later).into_iter().map(|j| j.url).collect();
        assert_eq!(urls.len(), 2);
        assert!(
            urls.contains(&"http://a/announce?pk=P2".to_owned()),
            "{urls:?}"
        );
        assert!(
            s.rename_tracker("http://zz/", "http://yy/", http, None)
                .is_none()
        );
    }

    #[test]
    fn an_edit_while_an_announce_is_out_drops_its_answer_and_frees_the_tier() {
        let t0 = Instant::now();
        let http = |u: &str| u.starts_with("http");
        let mut s = set(&[&["http://a/announce"]]);
        s.start(t0);
        let out = s.due(t0);
        assert_eq!(out.len(), 1);
        // renamed while the `started` to a is out: no stopped now (nothing joined yet)
        let stop = s.rename_tracker("http://a/announce", "http://b/announce", http, Some(t0));
        assert_eq!(stop, Some(None));
        assert!(s.due(t0).is_empty(), "the tier is still busy");
        assert!(s.finished(&out[0], &ok(1800), t0).is_none());
        assert!(!s.busy());
        let jobs = s.due(t0);
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].url, "http://b/announce");
        assert_eq!(jobs[0].event, Some(AnnounceEvent::Started));
    }

    #[test]
    fn removing_trackers_stops_them_and_the_next_of_the_tier_starts() {
        let t0 = Instant::now();
        let mut s = set(&[&["http://a/x"], &["http://b/y"]]);
        s.start(t0);
        for j in s.due(t0) {
            s.finished(&j, &ok(1800), t0);
        }
        let stop = s.remove_tracker("http://a/x", Some(t0)).unwrap().unwrap();
        assert_eq!(stop.event, Some(AnnounceEvent::Stopped));
        assert!(s.busy(), "the stopped is owed");
        s.finished(&stop, &ok(1800), t0);
        assert!(!s.busy());
        assert_eq!(
            s.rows(t0, SystemTime::now()).len(),
            1,
            "its tier went with it"
        );
        // an added tier after a removal gets an id of its own: answers find their tier
        assert!(s.add_tracker("http://c/z", |u| u.starts_with("http"), Some(t0)));
        let jobs = s.due(t0);
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].url, "http://c/z");
        s.finished(&jobs[0], &ok(1800), t0);
        assert!(!s.busy());
        assert!(s.remove_tracker("http://nope/", None).is_none());
        // removed while not running: no stopped (nothing joined)
        let mut s = set(&[&["http://a/x", "http://a2/x"]]);
        assert_eq!(s.remove_tracker("http://a/x", None), Some(None));
        assert!(s.contains("http://a2/x"));
    }

    #[test]
    fn started_regular_completed_stopped() {
        let t0 = Instant::now();
        let mut s = set(&[&["http://a/announce"]]);
        s.start(t0);
        let jobs = s.due(t0);
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].event, Some(AnnounceEvent::Started));
        assert!(s.due(t0).is_empty(), "one announce in flight per tier");
        assert_eq!(s.next_deadline(), None);
        assert_eq!(s.finished(&jobs[0], &ok(1800), t0), None);
        assert_between(
            s.next_deadline(),
            t0 + Duration::from_secs(1800),
            Duration::from_secs(45),
        );
        assert_eq!(s.swarm(), (Some(3), Some(5)));
        // regular re-announce carries no event
        let t1 = s.next_deadline().unwrap();
        let jobs = s.due(t1);
        assert_eq!(jobs[0].event, None);
        s.finished(&jobs[0], &ok(1800), t1);
        // completion: at once
        s.complete(t1);
        let jobs = s.due(t1);
        assert_eq!(jobs[0].event, Some(AnnounceEvent::Completed));
        s.finished(&jobs[0], &ok(1800), t1);
        assert_eq!(s.due(t1 + Duration::from_secs(1900))[0].event, None);
        // stop while that announce is in flight: stopped follows it
        assert!(s.stop().is_empty());
        let stopped = s
            .finished(
                &AnnounceJob {
                    tier: 0,
                    url: "http://a/announce".into(),
                    event: None,
                    tracker_id: None,
                },
                &ok(1800),
                t1,
            )
            .expect("stopped owed");
        assert_eq!(stopped.event, Some(AnnounceEvent::Stopped));
        assert_eq!(s.next_deadline(), None, "nothing after stopped");
        assert!(s.stop().is_empty(), "stopped sent once");
    }

    #[test]
    fn scrapes_follow_a_first_answer_then_every_half_hour_and_fill_the_row() {
        let t0 = Instant::now();
        let mut s = set(&[&["http://a/announce"], &["http://b/announce"]]);
        assert!(s.scrape_due(t0).is_empty(), "nobody answered yet");
        s.start(t0);
        let jobs = s.due(t0);
        let a = jobs.iter().find(|j| j.url == "http://a/announce").unwrap();
        s.finished(a, &ok(1800), t0);
        assert_eq!(s.scrape_due(t0), vec!["http://a/announce".to_string()]);
        assert!(s.scrape_due(t0).is_empty(), "asked once");
        s.scraped(
            "http://a/announce",
            &Ok(ScrapeStats {
                complete: Some(7),
                downloaded: Some(42),
                incomplete: Some(3),
            }),
        );
        let row = s
            .rows(t0, SystemTime::now())
            .into_iter()
            .find(|r| r.url == "http://a/announce")
            .unwrap();
        assert_eq!(
            (row.seeds, row.leechers, row.downloaded),
            (Some(7), Some(3), Some(42))
        );
        assert!(s.scrape_due(t0 + SCRAPE_INTERVAL / 2).is_empty());
        assert_eq!(s.scrape_due(t0 + SCRAPE_INTERVAL).len(), 1);
        // a tracker with no scrape URL is not asked again
        s.scraped(
            "http://a/announce",
            &Err(TrackerError::InvalidUrl("no scrape".into())),
        );
        assert!(s.scrape_due(t0 + SCRAPE_INTERVAL * 3).is_empty());
    }

    #[test]
    fn a_start_right_after_a_stop_waits_for_the_stopped_to_return() {
        // a recheck or a move stops and starts the torrent within milliseconds: `started`
        // must not overtake `stopped`, or the tracker drops us after adding us
        let t0 = Instant::now();
        let mut s = set(&[&["http://a/announce"], &["http://b/announce"]]);
        s.start(t0);
        for job in s.due(t0) {
            s.finished(&job, &ok(1800), t0);
        }
        let stopped = s.stop();
        assert_eq!(stopped.len(), 2);
        assert!(
            stopped
                .iter()
                .all(|j| j.event == Some(AnnounceEvent::Stopped))
        );
        s.start(t0);
        assert!(s.due(t0).is_empty(), "started waits for stopped");
        assert_eq!(s.next_deadline(), None, "no wake-up while stopped is out");
        assert!(s.busy());
        // tier a's stopped returns (even as an error): its started goes out, b still waits
        let a = stopped
            .iter()
            .find(|j| j.url == "http://a/announce")
            .unwrap();
        assert_eq!(
            s.finished(a, &Err(TrackerError::InvalidUrl("gone".into())), t0),
            None
        );
        assert_eq!(s.next_deadline(), Some(t0));
        let jobs = s.due(t0);
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].url, "http://a/announce");
        assert_eq!(jobs[0].event, Some(AnnounceEvent::Started));
        let b = stopped
            .iter()
            .find(|j| j.url == "http://b/announce")
            .unwrap();
        s.finished(b, &ok(1800), t0);
        let jobs = s.due(t0);
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].url, "http://b/announce");
        assert_eq!(jobs[0].event, Some(AnnounceEvent::Started));
    }

    #[test]
    fn stopping_right_after_completion_sends_completed_then_stopped() {
        let t0 = Instant::now();
        let mut s = set(&[&["http://a/announce"]]);
        s.start(t0);
        let j = s.due(t0).remove(0);
        s.finished(&j, &ok(1800), t0);
        s.complete(t0);
        let jobs = s.stop();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].event, Some(AnnounceEvent::Completed));
        assert!(s.busy());
        let stopped = s.finished(&jobs[0], &ok(1800), t0).unwrap();
        assert_eq!(stopped.event, Some(AnnounceEvent::Stopped));
        s.finished(&stopped, &ok(1800), t0);
        assert!(!s.busy());
        assert!(s.stop().is_empty());
        assert_eq!(s.next_deadline(), None);
    }

    #[test]
    fn completed_is_retried_until_acknowledged() {
        let t0 = Instant::now();
        let mut s = set(&[&["http://a/announce"]]);
        s.start(t0);
        let j = s.due(t0).remove(0);
        s.finished(&j, &ok(1800), t0);
        s.complete(t0);
        let j = s.due(t0).remove(0);
        s.finished(&j, &fail(), t0);
        let t1 = s.next_deadline().unwrap();
        assert_between(Some(t1), t0 + FIRST_RETRY, FIRST_RETRY / 10);
        assert_eq!(s.due(t1)[0].event, Some(AnnounceEvent::Completed));
    }

    #[test]
    fn stop_sends_stopped_only_where_started_was_acknowledged() {
        let t0 = Instant::now();
        let mut s = set(&[&["http://a/announce"], &["http://b/announce"]]);
        s.start(t0);
        let jobs = s.due(t0);
        assert_eq!(jobs.len(), 2, "every tier announces");
        s.finished(&jobs[0], &ok(1800), t0);
        s.finished(&jobs[1], &fail(), t0);
        let stops = s.stop();
        assert_eq!(stops.len(), 1);
        assert_eq!(stops[0].url, jobs[0].url);
        assert_eq!(s.next_deadline(), None);
    }

    #[test]
    fn tier_fails_over_then_backs_off_and_promotes_the_one_that_answered() {
        let t0 = Instant::now();
        let mut s = set(&[&["http://a/announce", "http://b/announce", "wss://c:1"]]);
        s.start(t0);
        let first = s.due(t0).remove(0);
        s.finished(&first, &fail(), t0);
        let second = s.due(t0).remove(0);
        assert_ne!(first.url, second.url, "next tracker of the tier at once");
        assert!(second.url.starts_with("http"), "unsupported scheme skipped");
        assert_eq!(second.event, Some(AnnounceEvent::Started));
        s.finished(&second, &fail(), t0);
        // every supported tracker failed: back off, doubling
        assert_between(s.next_deadline(), t0 + FIRST_RETRY, FIRST_RETRY / 10);
        let t1 = s.next_deadline().unwrap();
        let a = s.due(t1).remove(0);
        s.finished(&a, &fail(), t1);
        let b = s.due(t1).remove(0);
        s.finished(&b, &fail(), t1);
        assert_between(s.next_deadline(), t1 + 2 * FIRST_RETRY, FIRST_RETRY / 5);
        // b answers: it moves to the front and is asked first next time
        let t2 = s.next_deadline().unwrap();
        let a = s.due(t2).remove(0);
        s.finished(&a, &fail(), t2);
        let b = s.due(t2).remove(0);
        s.finished(&b, &ok(900), t2);
        let next = s.due(t2 + Duration::from_secs(1000)).remove(0);
        assert_eq!(next.url, b.url);
        let rows = s.rows(t2, SystemTime::now());
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows.iter()
                .filter(|r| r.status == TrackerStatus::Unsupported)
                .count(),
            1
        );
    }

    #[test]
    fn later_deadlines_land_on_a_coarse_grid_sooner_ones_do_not_move() {
        let now = Instant::now();
        for ms in [0u64, 10, 1999] {
            let at = now + Duration::from_millis(ms);
            assert_eq!(coalesce(at, now), at, "{ms} ms must not be delayed");
        }
        let mut slots = std::collections::HashSet::new();
        for ms in (2_001..12_000u64).step_by(7) {
            let at = now + Duration::from_millis(ms);
            let c = coalesce(at, now);
            assert!(
                c >= at && c < at + COALESCE_STEP,
                "{ms} ms: moved by {:?}",
                c - at
            );
            slots.insert(c);
        }
        // ~1,400 spread deadlines over 10 s share about 20 wake-ups
        assert!(slots.len() <= 21, "{} distinct wake-ups", slots.len());
    }

    #[test]
    fn backoff_is_capped() {
        let t0 = Instant::now();
        let mut s = set(&[&["http://a/announce"]]);
        s.start(t0);
        let mut now = t0;
        for _ in 0..40 {
            let j = s.due(now).remove(0);
            s.finished(&j, &fail(), now);
            let next = s.next_deadline().unwrap();
            assert!(next - now <= MAX_RETRY + MAX_RETRY / 10);
            now = next;
        }
        let j = s.due(now).remove(0);
        s.finished(&j, &fail(), now);
        assert_between(s.next_deadline(), now + MAX_RETRY, MAX_RETRY / 10);
    }

    #[test]
    fn reannounce_honours_min_interval_and_no_trackers_is_quiet() {
        let t0 = Instant::now();
        let mut s = set(&[&["http://a/announce"]]);
        s.start(t0);
        let j = s.due(t0).remove(0);
        s.finished(&j, &ok(1800), t0);
        s.reannounce(t0 + Duration::from_secs(10));
        assert_eq!(s.next_deadline(), Some(t0 + Duration::from_secs(60)));
        let mut empty = set(&[]);
        empty.start(t0);
        assert!(empty.due(t0).is_empty());
        assert_eq!(empty.next_deadline(), None);
        assert_eq!(
            empty.headline(),
            None,
            "the sources speak for a set without trackers"
        );
        let mut wss_only = set(&[&["wss://x:1"]]);
        wss_only.start(t0);
        assert!(wss_only.due(t0).is_empty());
        assert_eq!(
            wss_only.next_deadline(),
            None,
            "an unsupported tier never wakes us"
        );
    }
}
