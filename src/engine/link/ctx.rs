//! What a peer connection uses of the session: the clock, the disk threads, the rate limits,
//! the upload budget, the DHT node, two settings, and the way back to the session task for
//! its [`PeerEvent`]s. One per session, shared by every connection of every torrent; the
//! session's own context (`engine::ctx::SessionCtx`) holds it as `link`.

use std::fmt;
use std::sync::Arc;

use tokio::sync::Semaphore;

use super::clock::Clock;
use super::message::PeerEvent;
use crate::api::TorrentId;
use crate::engine::rate::RateLimiter;
use crate::piece::BLOCK_SIZE;
use crate::storage::disk::DiskPool;

/// Bytes of upload data (read from disk, not yet written to a socket) allowed session-wide.
pub const UPLOAD_BUDGET_BYTES: usize = 16 << 20;
/// Bytes of received blocks allowed to wait for the disk, session-wide.
pub const DISK_QUEUE_BYTES: usize = 4 << 20;

/// A pair of download and upload limits: the session's, or one torrent's on top of them.
#[derive(Debug)]
pub struct Limits {
    /// Payload + protocol bytes read from peers, bytes/s (0 = unlimited).
    pub download: RateLimiter,
    /// Payload bytes sent to peers, bytes/s (0 = unlimited).
    pub upload: RateLimiter,
}

impl Limits {
    /// Limits of `download` and `upload` bytes/s (0 = unlimited).
    pub fn new(download: u64, upload: u64) -> Limits {
        Limits {
            download: RateLimiter::new(download),
            upload: RateLimiter::new(upload),
        }
    }

    /// No limit either way (a torrent's own limits until the user sets some).
    pub fn unlimited() -> Limits {
        Limits::new(0, 0)
    }
}

/// Where connections' events go: the session task, given the torrent and the connection's
/// key with each [`PeerEvent`].
pub type PeerEventSink = Box<dyn Fn(TorrentId, u64, PeerEvent) + Send + Sync>;

/// The session as its connections see it.
pub struct LinkCtx {
    /// Port we accept peers on (sent in the BEP 10 handshake as `p`).
    pub listen_port: u16,
    /// Peer exchange (BEP 11) is on in the config (a private torrent still says no).
    pub pex: bool,
    /// The session's monotonic clock.
    pub clock: Clock,
    /// Disk/hash threads: received blocks are written and hashed there, upload reads made.
    pub pool: DiskPool,
    /// Session-wide rate limits (the session changes them live through the same `Arc`).
    pub limits: Arc<Limits>,
    /// Upload data in memory, one permit per 16 KiB block (see [`UPLOAD_BUDGET_BYTES`]).
    pub upload_budget: Arc<Semaphore>,
    /// The DHT node (BEP 5) while it runs (the session's slot).
    pub dht: Arc<crate::dht::DhtSlot>,
    events: PeerEventSink,
}

impl LinkCtx {
    /// The connections' context: `threads` disk threads with a [`DISK_QUEUE_BYTES`] write
    /// queue, an upload budget of [`UPLOAD_BUDGET_BYTES`], events to `events`.
    pub fn new(
        listen_port: u16,
        pex: bool,
        threads: usize,
        limits: Arc<Limits>,
        dht: Arc<crate::dht::DhtSlot>,
        events: PeerEventSink,
    ) -> LinkCtx {
        LinkCtx {
            listen_port,
            pex,
            clock: Clock::new(),
            pool: DiskPool::new(threads, DISK_QUEUE_BYTES),
            limits,
            upload_budget: Arc::new(Semaphore::new(UPLOAD_BUDGET_BYTES / BLOCK_SIZE as usize)),
            dht,
            events,
        }
    }

    /// Tell the session that connection `key` of `torrent` has news (dropped if the
    /// session is gone).
    pub fn peer_event(&self, torrent: TorrentId, key: u64, event: PeerEvent) {
        (self.events)(torrent, key, event);
    }
}

impl fmt::Debug for LinkCtx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinkCtx")
            .field("listen_port", &self.listen_port)
            .field("pex", &self.pex)
            .field("pool", &self.pool)
            .field("limits", &self.limits)
            .field("dht", &self.dht.is_on())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn unlimited_limits_are_zero_and_new_sets_both() {
        let l = Limits::unlimited();
        assert_eq!((l.download.rate(), l.upload.rate()), (0, 0));
        let l = Limits::new(1_000, 2_000);
        assert_eq!((l.download.rate(), l.upload.rate()), (1_000, 2_000));
    }

    #[test]
    fn peer_events_reach_the_sink_with_torrent_and_key() {
        let seen: Arc<Mutex<Vec<(TorrentId, u64, String)>>> = Arc::default();
        let s = seen.clone();
        let ctx = LinkCtx::new(
            6881,
            true,
            1,
            Arc::new(Limits::unlimited()),
            Default::default(),
            Box::new(move |t, k, e| s.lock().unwrap().push((t, k, format!("{e:?}")))),
        );
        ctx.peer_event(TorrentId(7), 42, PeerEvent::InterestChanged);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].0, TorrentId(7));
        assert_eq!(seen[0].1, 42);
        assert_eq!(seen[0].2, "InterestChanged");
        assert_eq!(
            ctx.upload_budget.available_permits(),
            UPLOAD_BUDGET_BYTES / BLOCK_SIZE as usize
        );
    }
}
