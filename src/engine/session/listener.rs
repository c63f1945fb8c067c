//! The listener: incoming TCP and uTP connections are routed by the info hash of their
//! handshake (BEP 3) off the session's task, and only a finished handshake for a torrent the
//! session serves reaches it (as [`SessionEvent::Handshaken`]).

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};

use super::Session;
use super::library::Registry;
use crate::engine::ctx::{MAX_PENDING_INCOMING, SessionCtx, SessionEvent, SlotKind};
use crate::engine::link::stream::PeerStream;
use crate::engine::peer_conn;
use crate::peer::wire::Handshake;

impl Session {
    /// A connection came in: route it on a task of its own, at most
    /// [`MAX_PENDING_INCOMING`] at once (more are closed at once).
    pub(super) fn incoming(&mut self, stream: PeerStream, addr: SocketAddr) {
        if self.ctx.ip_filter.pending() {
            tracing::debug!(%addr, "incoming connection before the IP filter is read; closing");
            return;
        }
        if self.ctx.ip_filter.check(addr.ip()) {
            // closed before a byte is read (counted; the next snapshot shows the count)
            tracing::debug!(%addr, "incoming connection blocked by the IP filter; closing");
            drop(stream);
            return;
        }
        let Some(slot) = self
            .ctx
            .conns
            .try_take(SlotKind::PendingIncoming, MAX_PENDING_INCOMING)
        else {
            tracing::debug!(%addr, "too many incoming handshakes at once; closing");
            return;
        };
        let registry = self.library.registry();
        let ctx = self.ctx.clone();
        tokio::spawn(async move {
            let _slot = slot;
            match stream {
                PeerStream::Tcp(s) => {
                    if let Err(e) = s.set_nodelay(true) {
                        tracing::debug!(%addr, "incoming connection: {e}");
                        return;
                    }
                    route_incoming(s, addr, registry, ctx, PeerStream::Tcp).await
                }
                PeerStream::Utp(s) => route_incoming(s, addr, registry, ctx, PeerStream::Utp).await,
            }
        });
    }
}

/// Read the handshake prefix of an incoming connection; if it names a torrent we serve,
/// finish the handshake and hand the stream to the session. Unknown info hashes are closed
/// at once (BEP 3: "if the receiving side does not serve the info hash, it drops the
/// connection"), and so is anything that is not a BitTorrent handshake or does not arrive
/// within [`peer_conn::HANDSHAKE_TIMEOUT`].
pub(super) async fn route_incoming<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    addr: SocketAddr,
    registry: Registry,
    ctx: Arc<SessionCtx>,
    wrap: impl FnOnce(S) -> PeerStream,
) {
    let mut prefix = [0u8; 48];
    match tokio::time::timeout(peer_conn::HANDSHAKE_TIMEOUT, stream.read_exact(&mut prefix)).await {
        Ok(Ok(_)) => {}
        _ => return,
    }
    let Ok((reserved, info_hash)) = Handshake::parse_prefix(&prefix) else {
        tracing::debug!(%addr, "incoming connection is not BitTorrent");
        return;
    };
    if !registry.contains(&info_hash) {
        tracing::debug!(%addr, %info_hash, "handshake names a torrent we do not serve; closing");
        return;
    }
    // BEP 5 reserved bit: the torrent is not known here, so private ones get it too
    // (they neither send nor act on `port` messages)
    let ours = Handshake::ours(info_hash, ctx.peer_id).with_dht(ctx.dht.is_some());
    match peer_conn::accept(&mut stream, reserved, ours).await {
        Ok(remote) => ctx.send(SessionEvent::Handshaken {
            info_hash,
            addr,
            outgoing: false,
            remote,
            stream: wrap(stream),
        }),
        Err(e) => tracing::debug!(%addr, "incoming handshake failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metainfo::InfoHash;
    use crate::peer::wire::HANDSHAKE_LEN;
    use tokio::io::AsyncWriteExt;
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::mpsc;

    /// A listener whose one accepted connection is routed with `registry`; returns the
    /// session's event channel and the address to dial.
    async fn listen(
        registry: Registry,
    ) -> (
        mpsc::UnboundedReceiver<SessionEvent>,
        SocketAddr,
        Arc<SessionCtx>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let ctx = SessionCtx::new(crate::config::engine::EngineConfig::default(), 0, tx);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let c = ctx.clone();
        tokio::spawn(async move {
            let (stream, from) = listener.accept().await.unwrap();
            route_incoming(stream, from, registry, c, PeerStream::Tcp).await;
        });
        (rx, addr, ctx)
    }

    /// The other side closed (a clean end, or a reset for the bytes it left unread)
    /// without sending a byte.
    async fn assert_closed_without_an_answer(peer: &mut TcpStream) {
        let mut buf = [0u8; 1];
        match peer.read(&mut buf).await {
            Ok(n) => assert_eq!(n, 0, "closed, nothing sent"),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        }
    }

    fn served(info_hash: InfoHash) -> Registry {
        let mut lib = super::super::library::Library::new();
        let id = lib.new_id();
        lib.list(info_hash, id);
        lib.registry()
    }

    #[tokio::test]
    async fn a_handshake_for_a_served_torrent_is_answered_and_handed_to_the_session() {
        let ih = InfoHash([7; 20]);
        let (mut events, addr, ctx) = listen(served(ih)).await;
        let mut peer = TcpStream::connect(addr).await.unwrap();
        let theirs = Handshake::ours(ih, crate::peer::PeerId([b'p'; 20]));
        peer.write_all(&theirs.to_bytes()).await.unwrap();
        let mut answer = [0u8; HANDSHAKE_LEN];
        peer.read_exact(&mut answer).await.unwrap();
        let ours = Handshake::parse(&answer).unwrap();
        assert_eq!(ours.info_hash, ih);
        assert_eq!(ours.peer_id, ctx.peer_id);
        match events.recv().await.unwrap() {
            SessionEvent::Handshaken {
                info_hash,
                outgoing,
                remote,
                addr: from,
                ..
            } => {
                assert_eq!(info_hash, ih);
                assert!(!outgoing);
                assert_eq!(remote.peer_id, theirs.peer_id);
                assert_eq!(from, peer.local_addr().unwrap());
            }
            _ => panic!("expected Handshaken"),
        }
    }

    #[tokio::test]
    async fn an_unknown_info_hash_is_closed_without_an_answer() {
        let (mut events, addr, _ctx) = listen(served(InfoHash([1; 20]))).await;
        let mut peer = TcpStream::connect(addr).await.unwrap();
        let h = Handshake::ours(InfoHash([2; 20]), crate::peer::PeerId([b'p'; 20]));
        peer.write_all(&h.to_bytes()).await.unwrap();
        assert_closed_without_an_answer(&mut peer).await;
        assert!(events.try_recv().is_err(), "the session hears nothing");
    }

    #[tokio::test]
    async fn a_stream_that_is_not_bittorrent_is_closed() {
        let (mut events, addr, _ctx) = listen(served(InfoHash([1; 20]))).await;
        let mut peer = TcpStream::connect(addr).await.unwrap();
        peer.write_all(&[b'G'; 48]).await.unwrap();
        assert_closed_without_an_answer(&mut peer).await;
        assert!(events.try_recv().is_err());
    }
}
