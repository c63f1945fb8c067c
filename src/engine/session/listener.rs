//! The listener: incoming TCP and uTP connections are routed by the info hash of their
//! handshake (BEP 3), or of their MSE/PE handshake, off the session's task, and only a
//! finished handshake for a torrent the session serves reaches it (as
//! [`SessionEvent::Handshaken`]).

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};

use super::Session;
use super::library::Registry;
use crate::config::engine::Encryption;
use crate::engine::ctx::{
    MAX_MSE_HANDSHAKES, MAX_PENDING_INCOMING, SessionCtx, SessionEvent, SlotKind,
};
use crate::engine::link::stream::RawStream;
use crate::engine::peer_conn;
use crate::metainfo::InfoHash;
use crate::peer::mse::Policy;
use crate::peer::wire::{self, Handshake};

impl Session {
    /// A connection came in (TCP, Nagle already off, or uTP): route it on a task of its own, at most
    /// [`MAX_PENDING_INCOMING`] at once (more are closed at once).
    pub(super) fn incoming<S: RawStream>(&mut self, stream: S, addr: SocketAddr) {
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
            route_incoming(stream, addr, registry, ctx).await;
        });
    }
}

/// Read the first bytes of an incoming connection (TCP or uTP, `stream`): `19` +
/// `BitTorrent protocol` is a plaintext handshake, anything else an MSE/PE handshake
/// ([`peer_conn::mse::respond`], which finds the torrent among all the session holds, at
/// most [`MAX_MSE_HANDSHAKES`] at once, within [`peer_conn::mse::MSE_TIMEOUT`]).
/// `[peer] encryption = "require"` closes plaintext connections, `"disable"` MSE ones. If
/// the handshake names a torrent we serve, finish it and hand the stream to the session.
/// Unknown info hashes are closed at once (BEP 3: "if the receiving side does not serve
/// the info hash, it drops the connection"), and so is anything that is neither handshake
/// or does not arrive within [`peer_conn::HANDSHAKE_TIMEOUT`].
pub(super) async fn route_incoming<S: RawStream>(
    mut stream: S,
    addr: SocketAddr,
    registry: Registry,
    ctx: Arc<SessionCtx>,
) {
    let mut first = [0u8; 20];
    match tokio::time::timeout(peer_conn::HANDSHAKE_TIMEOUT, stream.read_exact(&mut first)).await {
        Ok(Ok(_)) => {}
        _ => return,
    }
    let encryption = ctx.config.peer.encryption;
    if first[0] == 19 && first[1..] == wire::PROTOCOL[..] {
        if encryption == Encryption::Require {
            tracing::debug!(%addr, "plaintext connection refused: encryption is required");
            return;
        }
        if let Some((info_hash, remote)) =
            handshake(&mut stream, &first, addr, &registry, &ctx).await
        {
            ctx.send(SessionEvent::Handshaken {
                info_hash,
                addr,
                outgoing: false,
                remote,
                stream: stream.plain(),
            });
        }
        return;
    }
    if encryption == Encryption::Disable {
        tracing::debug!(%addr, "connection is not a BitTorrent handshake (MSE is off); closing");
        return;
    }
    let Some(slot) = ctx
        .conns
        .try_take(SlotKind::MseHandshake, MAX_MSE_HANDSHAKES)
    else {
        tracing::debug!(%addr, "too many MSE handshakes at once; closing");
        return;
    };
    let policy = match encryption {
        Encryption::Require => Policy::Require,
        _ => Policy::Prefer,
    };
    let mut find = |req2: &[u8; 20]| registry.find_req2(req2);
    let mse = tokio::time::timeout(
        peer_conn::mse::MSE_TIMEOUT,
        peer_conn::mse::respond(stream, &first, policy, &mut find),
    )
    .await;
    drop(slot);
    let mut stream = match mse {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::debug!(%addr, "incoming MSE handshake failed: {e}");
            return;
        }
        Err(_) => {
            tracing::debug!(%addr, "incoming MSE handshake timed out");
            return;
        }
    };
    let mut first = [0u8; 20];
    match tokio::time::timeout(peer_conn::HANDSHAKE_TIMEOUT, stream.read_exact(&mut first)).await {
        Ok(Ok(_)) => {}
        _ => return,
    }
    if let Some((info_hash, remote)) = handshake(&mut stream, &first, addr, &registry, &ctx).await {
        if info_hash != stream.info_hash() {
            tracing::debug!(%addr, "MSE handshake and BitTorrent handshake name different torrents");
            return;
        }
        ctx.send(SessionEvent::Handshaken {
            info_hash,
            addr,
            outgoing: false,
            remote,
            stream: S::encrypted(stream),
        });
    }
}

/// The BitTorrent handshake of an incoming connection whose first 20 bytes are `first`:
/// read up to the info hash, answer if we serve it, read the peer id. `None` (logged) when
/// the connection is to be closed.
async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    first: &[u8; 20],
    addr: SocketAddr,
    registry: &Registry,
    ctx: &SessionCtx,
) -> Option<(InfoHash, Handshake)> {
    let mut prefix = [0u8; 48];
    prefix[..20].copy_from_slice(first);
    match tokio::time::timeout(
        peer_conn::HANDSHAKE_TIMEOUT,
        stream.read_exact(&mut prefix[20..]),
    )
    .await
    {
        Ok(Ok(_)) => {}
        _ => return None,
    }
    let Ok((reserved, info_hash)) = Handshake::parse_prefix(&prefix) else {
        tracing::debug!(%addr, "incoming connection is not BitTorrent");
        return None;
    };
    if !registry.contains(&info_hash) {
        tracing::debug!(%addr, %info_hash, "handshake names a torrent we do not serve; closing");
        return None;
    }
    // BEP 5 reserved bit: the torrent is not known here, so private ones get it too
    // (they neither send nor act on `port` messages)
    let ours = Handshake::ours(info_hash, ctx.peer_id).with_dht(ctx.dht.is_on());
    match peer_conn::accept(stream, reserved, ours).await {
        Ok(remote) => Some((info_hash, remote)),
        Err(e) => {
            tracing::debug!(%addr, "incoming handshake failed: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::mse::Method;
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
        listen_with(registry, Encryption::Prefer).await
    }

    /// [`listen`] with `[peer] encryption`; every accepted connection is routed, each on a
    /// task of its own.
    async fn listen_with(
        registry: Registry,
        encryption: Encryption,
    ) -> (
        mpsc::UnboundedReceiver<SessionEvent>,
        SocketAddr,
        Arc<SessionCtx>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut config = crate::config::engine::EngineConfig::default();
        config.peer.encryption = encryption;
        let ctx = SessionCtx::new(config, 0, tx);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let c = ctx.clone();
        tokio::spawn(async move {
            loop {
                let (stream, from) = listener.accept().await.unwrap();
                tokio::spawn(route_incoming(stream, from, registry.clone(), c.clone()));
            }
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
        // with encryption off at once
        let (mut events, addr, _ctx) =
            listen_with(served(InfoHash([1; 20])), Encryption::Disable).await;
        let mut peer = TcpStream::connect(addr).await.unwrap();
        peer.write_all(&[b'G'; 48]).await.unwrap();
        assert_closed_without_an_answer(&mut peer).await;
        assert!(events.try_recv().is_err());

        // otherwise it is taken for an MSE handshake, answered with Yb and PadB, and closed
        // when the synchronisation hash is not within 628 bytes, long before the timeout
        let (mut events, addr, ctx) = listen(served(InfoHash([1; 20]))).await;
        let mut peer = TcpStream::connect(addr).await.unwrap();
        let started = std::time::Instant::now();
        let garbage: Vec<u8> = (0..700u32).map(|i| (i * 31 + 7) as u8).collect();
        peer.write_all(&garbage).await.unwrap();
        let mut answer = Vec::new();
        let _ = peer.read_to_end(&mut answer).await;
        assert!(
            (96..=96 + 512).contains(&answer.len()),
            "Yb and PadB only: {} bytes",
            answer.len()
        );
        assert!(started.elapsed() < peer_conn::mse::MSE_TIMEOUT / 2);
        assert!(events.try_recv().is_err());
        assert_eq!(ctx.conns.get(SlotKind::MseHandshake), 0, "slot given back");
    }

    /// Dial `addr` with MSE for `ih` (`policy`), our BitTorrent handshake as the initial
    /// payload; returns the stream after reading the answer's handshake.
    async fn dial_mse(
        addr: SocketAddr,
        ih: InfoHash,
        policy: Policy,
    ) -> Result<
        (
            crate::engine::link::encrypted::MseStream<TcpStream>,
            Handshake,
        ),
        crate::engine::link::message::PeerError,
    > {
        let peer = TcpStream::connect(addr).await.unwrap();
        let ours = Handshake::ours(ih, crate::peer::PeerId([b'm'; 20]));
        let mut s = peer_conn::mse::initiate(peer, ih, &ours.to_bytes(), policy).await?;
        let mut answer = [0u8; HANDSHAKE_LEN];
        s.read_exact(&mut answer).await?;
        Ok((s, Handshake::parse(&answer).unwrap()))
    }

    #[tokio::test]
    async fn an_mse_handshake_finds_the_torrent_and_hands_an_encrypted_stream_over() {
        for (encryption, policy, method) in [
            (Encryption::Prefer, Policy::Prefer, Method::Rc4),
            (Encryption::Prefer, Policy::Require, Method::Rc4),
            (Encryption::Require, Policy::Prefer, Method::Rc4),
        ] {
            let ih = InfoHash([0x42; 20]);
            // a second torrent in the session: the right one is found among all
            let mut lib = super::super::library::Library::new();
            for h in [InfoHash([0x41; 20]), ih] {
                let id = lib.new_id();
                lib.list(h, id);
            }
            let (mut events, addr, ctx) = listen_with(lib.registry(), encryption).await;
            let (s, theirs) = dial_mse(addr, ih, policy).await.unwrap();
            assert_eq!(s.method(), method);
            assert_eq!((theirs.info_hash, theirs.peer_id), (ih, ctx.peer_id));
            match events.recv().await.unwrap() {
                SessionEvent::Handshaken {
                    info_hash, stream, ..
                } => {
                    assert_eq!(info_hash, ih);
                    assert_eq!(stream.mse(), Some(method), "{encryption:?}");
                }
                _ => panic!("expected Handshaken"),
            }
        }
    }

    #[tokio::test]
    async fn require_closes_plaintext_and_disable_closes_mse() {
        let ih = InfoHash([7; 20]);
        let (mut events, addr, _ctx) = listen_with(served(ih), Encryption::Require).await;
        let mut peer = TcpStream::connect(addr).await.unwrap();
        let theirs = Handshake::ours(ih, crate::peer::PeerId([b'p'; 20]));
        peer.write_all(&theirs.to_bytes()).await.unwrap();
        assert_closed_without_an_answer(&mut peer).await;
        assert!(events.try_recv().is_err());

        let (mut events, addr, _ctx) = listen_with(served(ih), Encryption::Disable).await;
        assert!(dial_mse(addr, ih, Policy::Prefer).await.is_err());
        assert!(events.try_recv().is_err());
    }

    #[tokio::test]
    async fn mse_handshakes_beyond_the_cap_are_closed_at_once() {
        let ih = InfoHash([7; 20]);
        let (_events, addr, ctx) = listen(served(ih)).await;
        let mut held = Vec::new();
        for _ in 0..MAX_MSE_HANDSHAKES {
            let mut p = TcpStream::connect(addr).await.unwrap();
            // the start of a public key, then nothing
            p.write_all(&[0x5a; 40]).await.unwrap();
            held.push(p);
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while ctx.conns.get(SlotKind::MseHandshake) < MAX_MSE_HANDSHAKES {
            assert!(std::time::Instant::now() < deadline, "slots not taken");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let mut late = TcpStream::connect(addr).await.unwrap();
        late.write_all(&[0x5a; 96]).await.unwrap();
        let started = std::time::Instant::now();
        assert_closed_without_an_answer(&mut late).await;
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        // a plaintext handshake still gets through
        let mut peer = TcpStream::connect(addr).await.unwrap();
        let theirs = Handshake::ours(ih, crate::peer::PeerId([b'p'; 20]));
        peer.write_all(&theirs.to_bytes()).await.unwrap();
        let mut answer = [0u8; HANDSHAKE_LEN];
        peer.read_exact(&mut answer).await.unwrap();
        drop(held);
    }
}
