//! One web seed (BEP 19) at work: a task per server while its torrent downloads, the
//! HTTP counterpart of a peer connection.
//!
//! The task asks the torrent's picker for runs of blocks ([`Picker::pick_run`]: whole
//! pieces no peer took, see there) and keeps up to `[webseeds] max_connections_per_server`
//! of them in flight, each a Range GET per file it spans ([`range`]). The body is cut into
//! the picker's 16 KiB blocks and each block goes the way a peer's does: marked received in
//! the picker, written and hashed by the disk threads, verified or failed like any other
//! piece. Blocks inside one body chunk are slices of it; only a block that straddles two
//! chunks is joined (one 16 KiB copy). Padding files (BEP 47) are zeros made here: the
//! server does not hold them. The session's and the torrent's download limits apply to
//! every byte read.
//!
//! A request that fails (a status, a wrong range or length, a short or oversized body, too
//! many redirects, less than the minimum rate) backs the whole server off
//! ([`crate::webseed::backoff`]: 5 s, doubling, at most 5 min), its other requests are
//! dropped and every block not received goes back to the picker for the peers. A `404` or
//! `410` is the one file's: the server keeps serving the others, and the pieces of that
//! file come from peers. Pieces with its data that fail their hash check are counted by the
//! torrent ([`WebSeedInfo::hash_fails`]); at three (as for a peer) it stops the task for the
//! rest of the run. The torrent reads [`WebSeedInfo`] for its snapshot, as it reads a
//! peer's [`crate::engine::link::peer::PeerInfo`].
//!
//! [`Picker::pick_run`]: crate::engine::picker::Picker::pick_run

mod range;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::api::WebSeedState;
use crate::engine::link::message::PeerEvent;
use crate::engine::link::shared::TorrentShared;
use crate::lock::MutexExt;
use crate::piece::{Bitfield, BlockRef, FileLayout};
use crate::webseed::FileUrls;
use crate::webseed::fetch::MinRate;

/// Most bytes one run of blocks (one request, or one per file it spans) covers; a run is
/// one piece at least.
pub const RUN_BYTES: u64 = 4 << 20;

/// How soon a web seed with nothing to ask for looks again at the picker (the pieces peers
/// are fetching may fail, a peer may leave); doubled each time it finds nothing, up to
/// [`IDLE_POLL_MAX`], back to this once it picks something.
pub const IDLE_POLL: Duration = Duration::from_millis(250);
/// The longest wait of a web seed with nothing to ask for.
pub const IDLE_POLL_MAX: Duration = Duration::from_secs(4);

/// A web seed as its torrent sees it while the task runs: counters and state the task
/// updates (atomics; the message under a short lock) and the torrent reads for its
/// snapshot.
#[derive(Debug)]
pub struct WebSeedInfo {
    /// The URL as the torrent gives it, passkeys masked (for people).
    pub url: String,
    state: AtomicU8,
    /// Payload bytes received from it (this run).
    pub downloaded: AtomicU64,
    /// Range requests in flight.
    pub requests: AtomicU32,
    /// Failed requests in a row.
    pub failures: AtomicU32,
    /// Pieces with its data that failed their hash check.
    pub hash_fails: AtomicU32,
    /// Bytes of those pieces.
    pub bad_bytes: AtomicU64,
    /// Files it answered 404 or 410 for.
    pub missing_files: AtomicU32,
    /// While backed off: when it is tried again, Unix time in ms (0: not backed off).
    pub retry_at: AtomicU64,
    /// Its last error.
    pub message: std::sync::Mutex<Option<String>>,
    /// Which task may say what it does ([`WebSeedInfo::begin`]): one that was stopped and
    /// has not ended yet must not overwrite its successor's state.
    generation: AtomicU64,
}

impl WebSeedInfo {
    /// A web seed of URL `url` (as the torrent gives it), idle.
    pub fn new(url: &str) -> WebSeedInfo {
        WebSeedInfo {
            url: crate::net::mask_passkey(url),
            state: AtomicU8::new(0),
            downloaded: AtomicU64::new(0),
            requests: AtomicU32::new(0),
            failures: AtomicU32::new(0),
            hash_fails: AtomicU32::new(0),
            bad_bytes: AtomicU64::new(0),
            missing_files: AtomicU32::new(0),
            retry_at: AtomicU64::new(0),
            message: std::sync::Mutex::new(None),
            generation: AtomicU64::new(0),
        }
    }

    /// A new task takes the web seed up (or, from the torrent, the last one is stopped):
    /// the tasks before it no longer say what it does. Returns the new generation.
    pub fn begin(&self) -> u64 {
        self.generation.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Whether the task of `generation` is the current one.
    pub fn is_current(&self, generation: u64) -> bool {
        self.generation.load(Ordering::Relaxed) == generation
    }

    /// What it does now.
    pub fn state(&self) -> WebSeedState {
        match self.state.load(Ordering::Relaxed) {
            1 => WebSeedState::Active,
            2 => WebSeedState::BackedOff,
            3 => WebSeedState::Dropped,
            _ => WebSeedState::Idle,
        }
    }

    /// Say what it does now. Dropped is for the rest of the run: it is never changed.
    pub fn set_state(&self, s: WebSeedState) {
        let v = match s {
            WebSeedState::Idle => 0,
            WebSeedState::Active => 1,
            WebSeedState::BackedOff => 2,
            WebSeedState::Dropped => 3,
        };
        let _ = self
            .state
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                (old != 3).then_some(v)
            });
    }

    /// Keep `m` as its last error.
    pub fn set_message(&self, m: String) {
        *self.message.locked() = Some(m);
    }

    /// Its last error.
    pub fn message(&self) -> Option<String> {
        self.message.locked().clone()
    }
}

/// What a web seed's task works with.
pub struct Seed {
    /// The torrent's shared state (picker, disk, limits, counters).
    pub t: Arc<TorrentShared>,
    /// Its key in the picker (as a connection's: affinity, contributors of failed pieces).
    pub key: u64,
    /// Where each file is on the server.
    pub urls: Arc<FileUrls>,
    /// The torrent's file layout (padding files included).
    pub layout: Arc<FileLayout>,
    /// The files' names as the user sees them (for messages), in torrent order.
    pub names: Arc<[String]>,
    /// Its counters and state.
    pub info: Arc<WebSeedInfo>,
    /// The session's HTTP client for web seeds.
    pub client: reqwest::Client,
    /// Range requests in flight at most.
    pub connections: usize,
    /// The minimum rate a request must keep up.
    pub rate: MinRate,
    /// Becomes true (or its sender is dropped) when the torrent stops the web seed.
    pub stop: watch::Receiver<bool>,
    /// Its generation ([`WebSeedInfo::begin`]): its state and counts of requests are shown
    /// only while it is the current task.
    pub generation: u64,
}

impl Seed {
    /// Say what the web seed does, unless a later task took it up.
    fn set_state(&self, st: WebSeedState) {
        if self.info.is_current(self.generation) {
            self.info.set_state(st);
        }
    }

    /// Say how many requests are in flight, unless a later task took it up.
    fn set_requests(&self, n: usize) {
        if self.info.is_current(self.generation) {
            self.info.requests.store(n as u32, Ordering::Relaxed);
        }
    }

    /// Say when it is tried again (Unix ms, 0 = not backed off), unless a later task took
    /// it up.
    fn set_retry_at(&self, ms: u64) {
        if self.info.is_current(self.generation) {
            self.info.retry_at.store(ms, Ordering::Relaxed);
        }
    }
}

/// Wait for `f`, unless `stop` says stop first (then `None`). A dropped sender is a stop.
pub(crate) async fn or_stop<F: std::future::Future>(
    stop: &mut watch::Receiver<bool>,
    f: F,
) -> Option<F::Output> {
    tokio::select! {
        biased;
        _ = stop.wait_for(|v| *v) => None,
        r = f => Some(r),
    }
}

/// Run web seed `s` until its torrent says stop ([`Seed::stop`]): it stops downloading,
/// or drops the server. Requests in flight end at their next network wait (never between
/// a block given to the picker and its write), and every block not received goes back to
/// the picker.
pub async fn run(s: Seed) {
    let s = Arc::new(s);
    let mut stop = s.stop.clone();
    let n = s.t.piece_count();
    let mut has = Bitfield::full(n);
    let mut missing: Vec<usize> = Vec::new();
    let mut blocks: Vec<BlockRef> = Vec::new();
    let mut next_id = 0u64;
    let mut idle = IDLE_POLL;
    // files found missing are looked for again each time the server is taken up
    s.info.missing_files.store(0, Ordering::Relaxed);
    s.set_state(WebSeedState::Active);
    'rounds: loop {
        // one round: requests until the server fails (then all of them stop) or the torrent
        // says stop
        let (jobs_stop, jobs_rx) = watch::channel(false);
        let mut jobs: JoinSet<(u64, Result<(), range::JobError>)> = JoinSet::new();
        let mut busy: HashMap<u64, Vec<u32>> = HashMap::new();
        let failed = loop {
            while jobs.len() < s.connections && s.t.accepting() && !s.t.is_complete() {
                let pieces: Vec<u32> = busy.values().flatten().copied().collect();
                blocks.clear();
                s.t.picker()
                    .pick_run(s.key, &has, &pieces, RUN_BYTES, &mut blocks);
                if blocks.is_empty() {
                    break;
                }
                let mut held: Vec<u32> = blocks.iter().map(|b| b.piece).collect();
                held.dedup();
                next_id += 1;
                busy.insert(next_id, held);
                let claim = range::Claim::new(s.t.clone(), std::mem::take(&mut blocks));
                let (id, seed, rx) = (next_id, s.clone(), jobs_rx.clone());
                jobs.spawn(async move { (id, range::run(&seed, claim, rx).await) });
            }
            s.set_requests(jobs.len());
            let room = jobs.len() < s.connections;
            let wait = if room { idle } else { IDLE_POLL };
            // nothing picked while there was room: look again later and later
            idle = if room {
                (idle * 2).min(IDLE_POLL_MAX)
            } else {
                IDLE_POLL
            };
            let done = or_stop(&mut stop, async {
                if jobs.is_empty() {
                    tokio::time::sleep(wait).await;
                    return None;
                }
                tokio::select! {
                    done = jobs.join_next() => done,
                    // room for more: the picker may have some now
                    _ = tokio::time::sleep(wait), if room => None,
                }
            })
            .await;
            let Some(done) = done else {
                // the torrent says stop
                let _ = jobs_stop.send(true);
                while jobs.join_next().await.is_some() {}
                break 'rounds;
            };
            let Some(done) = done else {
                continue;
            };
            let (id, result) = match done {
                Ok(r) => r,
                Err(e) => {
                    let error = range::JobError::Internal(format!("request task ended: {e}"));
                    (0, Err(error))
                }
            };
            busy.remove(&id);
            match result {
                Ok(()) => s.info.failures.store(0, Ordering::Relaxed),
                Err(range::JobError::Stopped) => {}
                Err(range::JobError::Fetch { file, error }) if error.is_file_missing() => {
                    if !missing.contains(&file) {
                        missing.push(file);
                        file_missing(&s, &mut has, file, &error);
                    }
                }
                Err(e) => break e,
            }
        };
        // the server failed: stop what is in flight (its blocks go back to the picker for
        // the peers) and wait
        let _ = jobs_stop.send(true);
        while jobs.join_next().await.is_some() {}
        s.set_requests(0);
        let failures = s.info.failures.fetch_add(1, Ordering::Relaxed) + 1;
        let wait = crate::webseed::backoff(failures);
        let at = std::time::SystemTime::now() + wait;
        let at_ms = at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        s.set_retry_at(at_ms);
        s.set_state(WebSeedState::BackedOff);
        let what = failed.describe(&s.names);
        s.info.set_message(what.clone());
        s.t.peer_event(
            s.key,
            PeerEvent::WebSeedNote(format!(
                "{what}; tried again in {}",
                crate::units::duration(wait.as_secs())
            )),
        );
        if or_stop(&mut stop, tokio::time::sleep(wait)).await.is_none() {
            break;
        }
        s.set_retry_at(0);
        s.set_state(WebSeedState::Active);
    }
    s.set_requests(0);
    s.set_retry_at(0);
    s.set_state(WebSeedState::Idle);
}

/// The server has no file `file` (404, 410): its pieces are left to peers.
fn file_missing(s: &Seed, has: &mut Bitfield, file: usize, error: &crate::webseed::WebSeedError) {
    let Some(span) = s.layout.spans().get(file) else {
        return;
    };
    for p in span.pieces(&s.t.geometry) {
        has.unset(p);
    }
    s.info.missing_files.fetch_add(1, Ordering::Relaxed);
    let name = s.names.get(file).map_or("?", String::as_str);
    let what = format!("{name}: {error}: its pieces come from peers");
    s.info.set_message(what.clone());
    s.t.peer_event(s.key, PeerEvent::WebSeedNote(what));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_web_seed_stays_dropped_and_its_url_is_masked() {
        let i = WebSeedInfo::new("http://h/pub/0123456789abcdef0123/?passkey=s3cr3t");
        assert_eq!(i.state(), WebSeedState::Idle);
        assert!(!i.url.contains("s3cr3t"), "{}", i.url);
        for s in [
            WebSeedState::Active,
            WebSeedState::BackedOff,
            WebSeedState::Idle,
        ] {
            i.set_state(s);
            assert_eq!(i.state(), s);
        }
        i.set_state(WebSeedState::Dropped);
        for s in [
            WebSeedState::Active,
            WebSeedState::BackedOff,
            WebSeedState::Idle,
        ] {
            i.set_state(s);
            assert_eq!(i.state(), WebSeedState::Dropped, "dropped for the run");
        }
        assert_eq!(i.message(), None);
        i.set_message("HTTP 503".into());
        assert_eq!(i.message().as_deref(), Some("HTTP 503"));
    }
}
