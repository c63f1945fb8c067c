//! One peer connection: the BEP 3 handshake, then a reader task that runs the protocol and
//! an upload pump that owns the socket's write half.
//!
//! Connections are generic over the byte stream ([`Transport`]: anything that splits into an
//! `AsyncRead` and an `AsyncWrite`): TCP and uTP ([`dial`] tries them in the configured
//! order), each plain or under MSE/PE; tests drive them over in-memory pipes. What a
//! connection shares with its
//! torrent (orders, events, [`PeerInfo`], [`TorrentShared`], [`MetadataFetch`]) lives in
//! [`crate::engine::link`], below both.
//!
//! - [`protocol`]: the reader decides nothing about the swarm. It asks the torrent's picker
//!   (a short lock, never across an await) which blocks to request, hands received blocks
//!   to the disk threads, and reports to the torrent through
//!   [`PeerEvent`](crate::engine::link::message::PeerEvent)s.
//! - [`mse`]: the MSE/PE handshake on a live stream, before the BitTorrent one (dialling
//!   with `[peer] encryption`, answering a connection whose first bytes are not a
//!   BitTorrent handshake).
//! - [`upload`]: the writer sends our messages and serves the peer's requests from the disk
//!   within a byte budget (per connection and session-wide), so a peer that stops reading
//!   holds at most two batches of memory and is dropped when its socket makes no progress.
//!
//! Timers: a connection has none of its own. The torrent's sweep (every 10 s while it has
//! peers, on the session's deadline queue) sends [`PeerCtrl::Tick`], on which the
//! connection sends keep-alives, drops a silent peer, releases a snubbing peer's requests
//! and drops a peer whose socket stopped draining.

pub mod handover;
pub mod hashes;
pub mod metadata;
pub mod mse;
pub mod protocol;
pub mod upload;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::link::message::{PeerCtrl, PeerError};
use super::link::metadata::MetadataFetch;
use super::link::peer::PeerInfo;
use super::link::shared::TorrentShared;
use super::link::stream::{PeerStream, Transport};
use crate::config::engine::{Encryption, TransportKind};
use crate::engine::link::stream::RawStream;
use crate::metainfo::InfoHash;
use crate::peer::PeerId;
use crate::peer::mse::Policy;
use crate::peer::utp::UtpSocket;
use crate::peer::wire::{self, Handshake};

/// Connect timeout for outgoing connections.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time allowed for the handshake, each direction.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Drop a peer that sent nothing (not even a keep-alive) for this long (BEP 3: 2 min).
pub const SILENCE_TIMEOUT: Duration = Duration::from_secs(150);
/// Send a keep-alive after this long without sending anything.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(60);
/// A peer holding our requests that delivers nothing for this long is snubbed: its
/// requests go back to the picker for other peers.
pub const SNUB_TIMEOUT: Duration = Duration::from_secs(30);
/// A peer whose socket accepts none of the data queued for it for this long stopped
/// reading: it is dropped and its memory freed.
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// After this long with data queued and no write progress a peer counts as stalled for
/// the choker (it loses its upload slot).
pub const STALL_CHOKE: Duration = Duration::from_secs(2);

/// How long the preferred transport has alone before the next one is tried beside it.
pub const FALLBACK_AFTER: Duration = Duration::from_secs(1);

/// Dial `addr` over the `transports` in order of preference and exchange handshakes for
/// `ours.info_hash` (BEP 3), each attempt as [`connect`] does it (MSE/PE per `encryption`,
/// the peer may answer with `alias`). The first transport has [`FALLBACK_AFTER`] to get
/// through before the next one is started beside it (at once when it fails); the first
/// handshake to complete wins and the other attempt is dropped. uTP is skipped without a
/// socket.
///
/// # Errors
/// The last attempt's error: connect/handshake timeouts, I/O errors, a refused MSE
/// handshake (with `require`), a wrong info hash or protocol string, or a connection to
/// ourselves.
pub async fn dial(
    addr: SocketAddr,
    ours: Handshake,
    alias: Option<InfoHash>,
    encryption: Encryption,
    transports: &[TransportKind],
    utp: Option<&UtpSocket>,
) -> Result<(PeerStream, Handshake), PeerError> {
    let usable: Vec<TransportKind> = transports
        .iter()
        .copied()
        .filter(|t| *t == TransportKind::Tcp || utp.is_some())
        .collect();
    let one = |t: TransportKind| async move {
        match (t, utp) {
            (TransportKind::Utp, Some(u)) => connect_utp(u, addr, ours, alias, encryption).await,
            _ => connect(addr, ours, alias, encryption).await,
        }
    };
    let (first, second) = match usable.as_slice() {
        [] => return Err(PeerError::Closed("no transport to dial with")),
        [a] => return one(*a).await,
        [a, b, ..] => (one(*a), one(*b)),
    };
    tokio::pin!(first);
    let head_start = tokio::time::sleep(FALLBACK_AFTER);
    tokio::pin!(head_start);
    tokio::select! {
        r = &mut first => match r {
            Ok(x) => return Ok(x),
            Err(e) if fatal(&e) => return Err(e),
            Err(_) => return second.await,
        },
        _ = &mut head_start => {}
    }
    tokio::pin!(second);
    tokio::select! {
        r = &mut first => match r {
            Ok(x) => Ok(x),
            Err(e) if fatal(&e) => Err(e),
            Err(_) => second.await,
        },
        r = &mut second => match r {
            Ok(x) => Ok(x),
            Err(e) if fatal(&e) => Err(e),
            Err(_) => first.await,
        },
    }
}

/// An error no other transport would change: the peer is us, or serves another torrent.
fn fatal(e: &PeerError) -> bool {
    matches!(e, PeerError::SelfConnection | PeerError::WrongInfoHash)
}

/// Connect to `addr` over TCP, exchange handshakes for `ours.info_hash`, return the stream
/// and theirs.
/// The peer may answer with `alias` instead (a hybrid torrent's v2 hash cut to 20 bytes: a
/// v2 peer that heard our BEP 52 bit switches to it, as libtorrent does).
/// With `encryption` [`Encryption::Prefer`] the connection starts with an MSE/PE handshake
/// offering RC4 or plaintext, and a peer that does not complete it is dialled again in
/// plaintext; [`Encryption::Require`] offers RC4 only and never falls back;
/// [`Encryption::Disable`] dials in plaintext.
///
/// # Errors
/// Connect/handshake timeouts (10 s each), I/O errors, a refused MSE handshake (with
/// `require`), a wrong info hash or protocol string, or a connection to ourselves.
pub async fn connect(
    addr: SocketAddr,
    ours: Handshake,
    alias: Option<InfoHash>,
    encryption: Encryption,
) -> Result<(PeerStream, Handshake), PeerError> {
    connect_over(|| tcp_connect(addr), addr, ours, alias, encryption).await
}

/// [`connect`] over uTP on `socket` (BEP 29): the same handshakes, MSE/PE included, on a
/// uTP stream.
///
/// # Errors
/// As [`connect`]; a uTP connect that gets no answer (the socket's own SYN timeouts) or
/// a socket at its connection limit.
pub async fn connect_utp(
    socket: &UtpSocket,
    addr: SocketAddr,
    ours: Handshake,
    alias: Option<InfoHash>,
    encryption: Encryption,
) -> Result<(PeerStream, Handshake), PeerError> {
    let open = || async { Ok::<_, PeerError>(socket.connect(addr).await?) };
    connect_over(open, addr, ours, alias, encryption).await
}

/// [`connect`] over whatever `open` connects (called again for the plaintext retry).
async fn connect_over<S, F, Fut>(
    open: F,
    addr: SocketAddr,
    ours: Handshake,
    alias: Option<InfoHash>,
    encryption: Encryption,
) -> Result<(PeerStream, Handshake), PeerError>
where
    S: RawStream,
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<S, PeerError>>,
{
    let policy = match encryption {
        Encryption::Disable => return connect_plain(open().await?, ours, alias).await,
        Encryption::Prefer => Policy::Prefer,
        Encryption::Require => Policy::Require,
    };
    let stream = open().await?;
    let mse = tokio::time::timeout(
        mse::MSE_TIMEOUT,
        mse::initiate(stream, ours.info_hash, &ours.to_bytes(), policy),
    )
    .await
    .unwrap_or(Err(PeerError::Timeout("MSE handshake")));
    let mut stream = match mse {
        Ok(s) => s,
        Err(e) if encryption == Encryption::Prefer => {
            tracing::debug!(%addr, "MSE handshake failed ({e}); dialling again in plaintext");
            return connect_plain(open().await?, ours, alias).await;
        }
        Err(e) => return Err(e),
    };
    // our handshake went out as the initial payload
    let theirs = exchange(&mut stream, ours, alias, false).await?;
    Ok((S::encrypted(stream), theirs))
}

/// A TCP connection to `addr` within [`CONNECT_TIMEOUT`], Nagle off.
async fn tcp_connect(addr: SocketAddr) -> Result<TcpStream, PeerError> {
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
        .await
        .map_err(|_| PeerError::Timeout("connect"))??;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// [`connect`]'s plaintext handshake on a connected `stream`.
async fn connect_plain<S: RawStream>(
    mut stream: S,
    ours: Handshake,
    alias: Option<InfoHash>,
) -> Result<(PeerStream, Handshake), PeerError> {
    let theirs = exchange(&mut stream, ours, alias, true).await?;
    Ok((stream.plain(), theirs))
}

/// Send our handshake (unless it went out already) and read theirs, within
/// [`HANDSHAKE_TIMEOUT`]; check it is for our torrent (its hash or `alias`) and not from
/// ourselves.
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    ours: Handshake,
    alias: Option<InfoHash>,
    send: bool,
) -> Result<Handshake, PeerError> {
    let theirs = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
        if send {
            stream.write_all(&ours.to_bytes()).await?;
            stream.flush().await?;
        }
        let mut buf = [0u8; wire::HANDSHAKE_LEN];
        stream.read_exact(&mut buf).await?;
        Ok::<_, PeerError>(Handshake::parse(&buf)?)
    })
    .await
    .map_err(|_| PeerError::Timeout("handshake"))??;
    if theirs.info_hash != ours.info_hash && Some(theirs.info_hash) != alias {
        return Err(PeerError::WrongInfoHash);
    }
    if theirs.peer_id == ours.peer_id {
        return Err(PeerError::SelfConnection);
    }
    Ok(theirs)
}

/// Finish an incoming handshake whose first 48 bytes (up to the info hash) were read by the
/// listener: send ours, read their peer id.
///
/// # Errors
/// I/O errors, a 10 s timeout, or a self-connection.
pub async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    reserved: [u8; 8],
    ours: Handshake,
) -> Result<Handshake, PeerError> {
    let pid = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
        stream.write_all(&ours.to_bytes()).await?;
        stream.flush().await?;
        let mut pid = [0u8; 20];
        stream.read_exact(&mut pid).await?;
        Ok::<_, PeerError>(pid)
    })
    .await
    .map_err(|_| PeerError::Timeout("handshake"))??;
    if pid == ours.peer_id.0 {
        return Err(PeerError::SelfConnection);
    }
    Ok(Handshake {
        reserved,
        info_hash: ours.info_hash,
        peer_id: PeerId(pid),
    })
}

/// Run a connection of a torrent that has no metadata yet: fetch it (BEP 9), then, when
/// the torrent has its pieces, go on as an established connection on the same socket with
/// what the peer said before ([`handover`]), until it ends.
///
/// # Errors
/// Why the connection ended.
pub async fn run_metadata<T: Transport>(
    fetch: Arc<MetadataFetch>,
    key: u64,
    stream: T,
    info: Arc<PeerInfo>,
    remote: Handshake,
    ctrl: mpsc::UnboundedReceiver<PeerCtrl>,
) -> Result<(), PeerError> {
    let ours = crate::peer::extension::OurHandshake {
        listen_port: fetch.ctx.listen_port,
        metadata_size: None,
        yourip: Some(info.addr.ip()),
        // offered now because this connection goes on with the full protocol: a peer that
        // saw no `ut_pex` in the first handshake drops PEX for the connection (libtorrent
        // does). Whether it is used is decided after the metadata (never for a private
        // torrent, BEP 27).
        pex: fetch.ctx.pex,
    };
    let h = metadata::run(fetch, key, stream, info.clone(), remote, ctrl, ours).await?;
    tracing::debug!(peer = %info.addr, "metadata connection goes on with the full protocol");
    run_halves(
        h.shared,
        key,
        (h.rd, h.wr),
        info,
        remote,
        h.ctrl,
        Some(h.resumed),
    )
    .await
}

/// Run an established connection until it ends: the reader here, the upload pump on its
/// own task. Cleans up its picker state (releases requests, removes its availability)
/// before returning.
pub async fn run<T: Transport>(
    t: Arc<TorrentShared>,
    key: u64,
    stream: T,
    info: Arc<PeerInfo>,
    remote: Handshake,
    ctrl: mpsc::UnboundedReceiver<PeerCtrl>,
) -> Result<(), PeerError> {
    run_halves(t, key, stream.split(), info, remote, ctrl, None).await
}

/// [`run`] on a split stream; `resumed`: the connection continues a metadata connection.
async fn run_halves<R, W>(
    t: Arc<TorrentShared>,
    key: u64,
    (rd, wr): (R, W),
    info: Arc<PeerInfo>,
    remote: Handshake,
    ctrl: mpsc::UnboundedReceiver<PeerCtrl>,
    resumed: Option<handover::Resumed>,
) -> Result<(), PeerError>
where
    R: tokio::io::AsyncRead + Unpin + Send,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let fast = remote.supports_fast();
    let writer = tokio::spawn(upload::run(wr, out_rx, t.clone(), key, info.clone(), fast));
    let mut conn = protocol::Conn::new(t, key, info, out_tx);
    let result = conn.run(rd, remote, ctrl, writer, resumed).await;
    conn.cleanup();
    result
}
