//! The torrent and its trackers: announces (BEP 3, tiers of BEP 12, UDP of BEP 15) and
//! scrapes (BEP 48) run as tasks, at most [`crate::engine::ctx::MAX_ANNOUNCES`] at once;
//! their answers come back as session events. The tiers and their timing are
//! [`super::announce::TrackerSet`]'s.

use super::announce::{self, AnnounceJob};
use super::{Env, TimerKey, Torrent, TorrentTimer};
use crate::api::{EventKind, EventLevel, PeerSource};
use crate::engine::ctx::{SessionCtx, SessionEvent};
use crate::tracker::{AnnounceEvent, AnnounceRequest, AnnounceResponse, TrackerError};

impl Torrent {
    /// An announce is in flight, or a `stopped` is still owed after one.
    pub fn announcing(&self) -> bool {
        self.trackers.busy()
    }

    pub(super) fn request(&self, job: &AnnounceJob) -> AnnounceRequest {
        let (downloaded, uploaded, _) = self.totals();
        AnnounceRequest {
            info_hash: self.sum.info_hash,
            // the session's parts (peer id, port, key, numwant) come in complete_request
            peer_id: crate::peer::PeerId::default(),
            port: 0,
            uploaded,
            downloaded,
            left: self.bytes_left(),
            event: job.event,
            numwant: None,
            key: 0,
            tracker_id: job.tracker_id.clone(),
        }
    }

    pub(super) fn spawn_announce(&self, job: AnnounceJob, env: &mut Env<'_>) {
        let mut req = self.request(&job);
        complete_request(&mut req, env.ctx);
        let ctx = env.ctx.clone();
        let id = self.id;
        let alias = self.v2_alias();
        tokio::spawn(async move {
            // a few announces at a time: 10,000 torrents starting do not open 10,000
            // connections at once (`stopped` goes first, it is the one a shutdown waits for)
            let _slot = if job.event == Some(AnnounceEvent::Stopped) {
                None
            } else {
                ctx.announce_slots.clone().acquire_owned().await.ok()
            };
            let result = match alias {
                // BEP 52: a hybrid is announced under both hashes (v1 and v2 peers each
                // find it by theirs); one answer stands for both
                Some(alias) => {
                    let mut v2 = req.clone();
                    v2.info_hash = alias;
                    let (a, b) = tokio::join!(
                        ctx.trackers.announce(&job.url, &req),
                        ctx.trackers.announce(&job.url, &v2)
                    );
                    merge_answers(a, b)
                }
                None => ctx.trackers.announce(&job.url, &req).await,
            };
            ctx.send(SessionEvent::Announced {
                torrent: id,
                job,
                result,
            });
        });
    }

    /// Scrape the trackers that are due (see [`TrackerSet::scrape_due`]); the answers come
    /// back as [`SessionEvent::Scraped`].
    pub(super) fn spawn_scrapes(&mut self, env: &mut Env<'_>) {
        for url in self.trackers.scrape_due(env.now) {
            let ctx = env.ctx.clone();
            let (torrent, info_hash) = (self.id, self.sum.info_hash);
            tokio::spawn(async move {
                let _slot = ctx.announce_slots.clone().acquire_owned().await.ok();
                let result = ctx.trackers.scrape(&url, info_hash).await;
                ctx.send(SessionEvent::Scraped {
                    torrent,
                    url,
                    result,
                });
            });
        }
    }

    /// A scrape returned.
    pub fn on_scraped(
        &mut self,
        url: &str,
        result: &Result<crate::tracker::ScrapeStats, crate::tracker::TrackerError>,
    ) {
        if let Err(e) = result {
            tracing::debug!(torrent = %self.sum.name, tracker = %crate::net::host_of(url), "scrape: {e}");
        }
        self.trackers.scraped(url, result);
    }

    pub(super) fn schedule_announce(&mut self, env: &mut Env<'_>) {
        let key = TimerKey::Torrent(self.id, TorrentTimer::Announce);
        match self.trackers.next_deadline() {
            Some(at) => env.timers.schedule(key, announce::coalesce(at, env.now)),
            None => env.timers.cancel(key),
        }
    }

    /// An announce returned.
    pub fn on_announced(
        &mut self,
        job: AnnounceJob,
        result: Result<AnnounceResponse, TrackerError>,
        env: &mut Env<'_>,
    ) {
        let was_error = self.trackers.has_message(&job.url);
        let follow = self.trackers.finished(&job, &result, env.now);
        if let Some(f) = follow {
            self.spawn_announce(f, env);
        }
        match &result {
            Ok(resp) => {
                if let Some(w) = &resp.warning {
                    self.log(
                        env,
                        EventLevel::Warn,
                        EventKind::TrackerWarning,
                        format!("tracker {}: {w}", crate::net::host_of(&job.url)),
                    );
                }
                if self.life.is_running() {
                    let mut new = 0;
                    for a in &resp.peers {
                        new += usize::from(self.book.add(*a, PeerSource::Tracker, env.now));
                    }
                    tracing::debug!(torrent = %self.sum.name, peers = resp.peers.len(), new, "announce ok");
                    self.connect_more(env);
                }
            }
            Err(e) => {
                // one line per change, not one per retry
                if !was_error && job.event != Some(AnnounceEvent::Stopped) {
                    self.log(
                        env,
                        EventLevel::Warn,
                        EventKind::TrackerError,
                        format!("tracker {}: {e}", crate::net::host_of(&job.url)),
                    );
                }
            }
        }
        if self.life.is_running() {
            // right after a tracker answers, and then at most every 30 min
            if result.is_ok() && job.event != Some(AnnounceEvent::Stopped) {
                self.spawn_scrapes(env);
            }
            self.schedule_announce(env);
        }
    }

    /// Announce to every tracker now (as far as `min interval` allows).
    pub fn reannounce(&mut self, env: &mut Env<'_>) {
        if self.life.is_running() {
            self.trackers.reannounce(env.now);
            self.schedule_announce(env);
        }
    }

    /// The announce timer fired: announce to the trackers that are due.
    pub(super) fn announce_due(&mut self, env: &mut Env<'_>) {
        let mut skipped = Vec::new();
        for job in self.trackers.due(env.now) {
            // a tracker endpoint known to be unreachable fails here and now: no
            // task, no connection, no round trip through the session's channel
            // (10,000 torrents on one dead tracker retry at the cost of a lookup)
            match env.ctx.trackers.down_error(&job.url, env.now) {
                Some(e) => skipped.push((job, e)),
                None => self.spawn_announce(job, env),
            }
        }
        self.schedule_announce(env);
        for (job, e) in skipped {
            self.on_announced(job, Err(e), env);
        }
    }
}

/// Fill in the session-wide parts of an announce: peer id, port, key, numwant.
pub(super) fn complete_request(req: &mut AnnounceRequest, ctx: &SessionCtx) {
    req.peer_id = ctx.peer_id;
    req.port = ctx.listen_port;
    req.key = ctx.tracker_key;
    req.numwant = if req.event == Some(AnnounceEvent::Stopped) {
        Some(0)
    } else {
        ctx.config.announce_numwant()
    };
}

/// The answers to a hybrid's two announces (v1 hash, then the v2 hash cut to 20 bytes) as
/// one: the v1 answer with the peers of both (each once); the v2 one when only it came.
fn merge_answers(
    v1: Result<AnnounceResponse, TrackerError>,
    v2: Result<AnnounceResponse, TrackerError>,
) -> Result<AnnounceResponse, TrackerError> {
    match (v1, v2) {
        (Ok(mut a), Ok(b)) => {
            for p in b.peers {
                if !a.peers.contains(&p) {
                    a.peers.push(p);
                }
            }
            Ok(a)
        }
        (Ok(a), Err(e)) => {
            tracing::debug!("announce under the v2 hash failed: {e}");
            Ok(a)
        }
        (Err(_), Ok(b)) => Ok(b),
        (Err(e), Err(_)) => Err(e),
    }
}
