//! What the torrent knows of one connected peer while its connection runs: flags and
//! counters the connection updates (atomics, no lock) and the torrent reads for choking,
//! housekeeping, eviction and the snapshot.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use super::clock::Millis;
use crate::api::PeerSource;
use crate::peer::PeerId;
use crate::peer::mse::Method;

/// Peer state shared with the torrent (choker, sweep, eviction) and the snapshot publisher.
/// Times are ms on the session clock.
#[derive(Debug)]
pub struct PeerInfo {
    /// Remote address.
    pub addr: SocketAddr,
    /// We dialled it (true) or it dialled us.
    pub outgoing: bool,
    /// The remote peer id.
    pub peer_id: PeerId,
    /// Where we learnt of it.
    pub source: PeerSource,
    /// When the handshake completed.
    pub connected_at: Instant,
    /// We refuse its requests.
    pub am_choking: AtomicBool,
    /// We want its pieces.
    pub am_interested: AtomicBool,
    /// It refuses our requests.
    pub peer_choking: AtomicBool,
    /// It wants our pieces.
    pub peer_interested: AtomicBool,
    /// It holds requests of ours and sent nothing for the connection's snub timeout (30 s).
    pub snubbed: AtomicBool,
    /// Payload bytes received from it.
    pub downloaded: AtomicU64,
    /// Payload bytes sent to it.
    pub uploaded: AtomicU64,
    /// Pieces it has.
    pub pieces: AtomicU32,
    /// Messages received after the handshake.
    pub messages: AtomicU64,
    /// Last time anything arrived from it.
    pub last_recv: AtomicU64,
    /// Last time we sent it anything.
    pub last_send: AtomicU64,
    /// Last time its socket accepted bytes while data was queued for it.
    pub last_write_progress: AtomicU64,
    /// Upload bytes read for it and not yet written (at most two batches).
    pub upload_pending: AtomicU32,
    /// Its requests queued, not yet read from disk.
    pub upload_queued: AtomicU32,
    /// Requests it sent since the last choke round (took nothing = 0 while unchoked).
    pub requests_seen: AtomicU64,
    /// Client name from BEP 10 `v`, if sent.
    pub client: std::sync::Mutex<Option<String>>,
    /// The peer's listen port from BEP 10 `p` (0 = not sent): where an incoming peer can be
    /// dialled later, and what PEX tells others.
    pub listen_port: AtomicU16,
    /// The connection runs over uTP (BEP 29), not TCP.
    pub utp: bool,
    /// What its MSE/PE handshake selected (RC4, or plaintext after it); `None`: a
    /// plaintext BitTorrent connection.
    pub mse: Option<Method>,
}

impl PeerInfo {
    /// Whether this connection is with the peer listening at `addr`: the address we dialled,
    /// an incoming peer's own address, or an incoming peer's address with the listen port
    /// it told (BEP 10 `p`).
    pub fn reaches(&self, addr: SocketAddr) -> bool {
        if self.addr == addr {
            return true;
        }
        let port = self.listen_port.load(Ordering::Relaxed);
        !self.outgoing && port != 0 && self.addr.ip() == addr.ip() && port == addr.port()
    }

    /// Fresh state for a just-handshaken connection (both sides choking, not interested).
    pub fn new(
        addr: SocketAddr,
        outgoing: bool,
        peer_id: PeerId,
        source: PeerSource,
        now: Millis,
    ) -> PeerInfo {
        PeerInfo {
            addr,
            outgoing,
            peer_id,
            source,
            connected_at: Instant::now(),
            am_choking: AtomicBool::new(true),
            am_interested: AtomicBool::new(false),
            peer_choking: AtomicBool::new(true),
            peer_interested: AtomicBool::new(false),
            snubbed: AtomicBool::new(false),
            downloaded: AtomicU64::new(0),
            uploaded: AtomicU64::new(0),
            pieces: AtomicU32::new(0),
            messages: AtomicU64::new(0),
            last_recv: AtomicU64::new(now),
            last_send: AtomicU64::new(now),
            last_write_progress: AtomicU64::new(now),
            upload_pending: AtomicU32::new(0),
            upload_queued: AtomicU32::new(0),
            requests_seen: AtomicU64::new(0),
            client: std::sync::Mutex::new(None),
            listen_port: AtomicU16::new(0),
            utp: false,
            mse: None,
        }
    }

    /// The same, over uTP when `utp`.
    pub fn over_utp(mut self, utp: bool) -> PeerInfo {
        self.utp = utp;
        self
    }

    /// The same, with what its MSE/PE handshake selected (`None`: plaintext BitTorrent).
    pub fn with_mse(mut self, mse: Option<Method>) -> PeerInfo {
        self.mse = mse;
        self
    }

    /// Data is queued for it and its socket made no progress for `for_ms`.
    pub fn stalled_for(&self, now: Millis) -> Option<Millis> {
        let pending = self.upload_pending.load(Ordering::Relaxed) > 0;
        let since = now.saturating_sub(self.last_write_progress.load(Ordering::Relaxed));
        pending.then_some(since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(now: Millis) -> PeerInfo {
        PeerInfo::new(
            "127.0.0.1:6881".parse().unwrap(),
            true,
            PeerId([7; 20]),
            PeerSource::Tracker,
            now,
        )
    }

    #[test]
    fn a_new_peer_is_choked_both_ways_and_uninterested() {
        let i = info(1_000);
        assert!(i.am_choking.load(Ordering::Relaxed));
        assert!(i.peer_choking.load(Ordering::Relaxed));
        assert!(!i.am_interested.load(Ordering::Relaxed));
        assert!(!i.peer_interested.load(Ordering::Relaxed));
        assert_eq!(i.last_recv.load(Ordering::Relaxed), 1_000);
        assert_eq!(i.last_send.load(Ordering::Relaxed), 1_000);
        assert_eq!(i.listen_port.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_connection_reaches_its_dialled_address_or_an_incoming_peers_listen_port() {
        let out = info(0);
        assert!(out.reaches("127.0.0.1:6881".parse().unwrap()));
        assert!(!out.reaches("127.0.0.1:6882".parse().unwrap()));
        let inc = PeerInfo::new(
            "127.0.0.9:40000".parse().unwrap(),
            false,
            PeerId([8; 20]),
            PeerSource::Incoming,
            0,
        );
        assert!(
            !inc.reaches("127.0.0.9:6881".parse().unwrap()),
            "port not told yet"
        );
        inc.listen_port.store(6881, Ordering::Relaxed);
        assert!(inc.reaches("127.0.0.9:6881".parse().unwrap()));
        assert!(inc.reaches("127.0.0.9:40000".parse().unwrap()));
        assert!(
            !inc.reaches("127.0.0.10:6881".parse().unwrap()),
            "another host"
        );
        // an outgoing connection's listen port (never stored) does not widen it
        out.listen_port.store(7000, Ordering::Relaxed);
        assert!(!out.reaches("127.0.0.1:7000".parse().unwrap()));
    }

    #[test]
    fn stalled_only_while_data_waits_for_the_socket() {
        let i = info(1_000);
        assert_eq!(i.stalled_for(5_000), None, "nothing queued: not stalled");
        i.upload_pending.store(16_384, Ordering::Relaxed);
        assert_eq!(i.stalled_for(5_000), Some(4_000));
        i.last_write_progress.store(4_500, Ordering::Relaxed);
        assert_eq!(i.stalled_for(5_000), Some(500));
        // a clock reading older than the last progress does not underflow
        assert_eq!(i.stalled_for(4_000), Some(0));
    }
}
