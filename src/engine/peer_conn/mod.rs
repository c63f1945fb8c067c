//! One peer connection: the BEP 3 handshake, then a reader task that runs the protocol and
//! an upload pump that owns the socket's write half.
//!
//! Connections are generic over the byte stream ([`Transport`]: anything that splits into an
//! `AsyncRead` and an `AsyncWrite`), so TCP today and uTP or an encrypted stream later are
//! additions; tests drive them over in-memory pipes.
//!
//! - [`protocol`]: the reader decides nothing about the swarm. It asks the torrent's picker
//!   (a short lock, never across an await) which blocks to request, hands received blocks
//!   to the disk threads, and reports to the torrent through [`PeerEvent`]s.
//! - [`upload`]: the writer sends our messages and serves the peer's requests from the disk
//!   within a byte budget (per connection and session-wide), so a peer that stops reading
//!   holds at most two batches of memory and is dropped when its socket makes no progress.
//!
//! Timers: a connection has none of its own. The torrent's sweep (every 10 s while it has
//! peers, on the session's deadline queue) sends [`PeerCtrl::Tick`], on which the
//! connection sends keep-alives, drops a silent peer, releases a snubbing peer's requests
//! and drops a peer whose socket stopped draining.

pub mod metadata;
pub mod protocol;
pub mod upload;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::ctx::Millis;
use super::torrent::shared::TorrentShared;
use crate::api::PeerSource;
use crate::peer::PeerId;
use crate::peer::wire::{self, Handshake, WireError};
use crate::piece::{BitfieldError, BlockRef};

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

/// Why a peer connection ended.
#[derive(Debug, Error)]
pub enum PeerError {
    /// Socket error or EOF.
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    /// A malformed message.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// A bitfield of the wrong size or with spare bits.
    #[error(transparent)]
    Bitfield(#[from] BitfieldError),
    /// A message that breaks the protocol (index out of range, ...).
    #[error("{0}")]
    Protocol(String),
    /// The handshake named another torrent.
    #[error("handshake info hash does not match the torrent")]
    WrongInfoHash,
    /// We connected to ourselves.
    #[error("connected to ourselves")]
    SelfConnection,
    /// Nothing heard for too long.
    #[error("peer silent for {0} s")]
    Silent(u64),
    /// Its socket accepted none of our data for too long.
    #[error("peer stopped reading (no write progress for {0} s)")]
    Stalled(u64),
    /// Handshake or connect took too long.
    #[error("timed out during {0}")]
    Timeout(&'static str),
    /// The torrent closed the connection (pause, ban, eviction, shutdown).
    #[error("closed by us: {0}")]
    Closed(&'static str),
}

/// A byte stream a peer connection can run on: it splits into independent read and write
/// halves (TCP: `into_split`, lock-free).
pub trait Transport: Send + 'static {
    /// Read half.
    type Reader: AsyncRead + Unpin + Send + 'static;
    /// Write half.
    type Writer: AsyncWrite + Unpin + Send + 'static;
    /// Split the stream.
    fn split(self) -> (Self::Reader, Self::Writer);
}

impl Transport for TcpStream {
    type Reader = tokio::net::tcp::OwnedReadHalf;
    type Writer = tokio::net::tcp::OwnedWriteHalf;
    fn split(self) -> (Self::Reader, Self::Writer) {
        self.into_split()
    }
}

impl Transport for tokio::io::DuplexStream {
    type Reader = tokio::io::ReadHalf<tokio::io::DuplexStream>;
    type Writer = tokio::io::WriteHalf<tokio::io::DuplexStream>;
    fn split(self) -> (Self::Reader, Self::Writer) {
        tokio::io::split(self)
    }
}

/// A handshaken stream on its way from the listener or a dial to the torrent.
#[derive(Debug)]
pub enum PeerStream {
    /// Plain TCP.
    Tcp(TcpStream),
}

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
    /// It holds requests of ours and sent nothing for [`SNUB_TIMEOUT`].
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
}

impl PeerInfo {
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
        }
    }

    /// Data is queued for it and its socket made no progress for `for_ms`.
    pub fn stalled_for(&self, now: Millis) -> Option<Millis> {
        let pending = self.upload_pending.load(Ordering::Relaxed) > 0;
        let since = now.saturating_sub(self.last_write_progress.load(Ordering::Relaxed));
        pending.then_some(since)
    }
}

/// Orders from the torrent to one connection.
#[derive(Debug, Clone)]
pub enum PeerCtrl {
    /// We verified a piece: tell the peer (BEP 3 `have`).
    Have(u32),
    /// Stop serving the peer.
    Choke,
    /// Serve the peer.
    Unchoke,
    /// Another peer delivered this block first (endgame): cancel our request.
    Cancel(BlockRef),
    /// Re-evaluate interest (we completed or lost pieces).
    CheckInterest,
    /// The peers this torrent is connected to now, as dialable addresses: the connection
    /// tells its peer what changed (BEP 11), at most once a minute
    /// ([`crate::peer::pex::INTERVAL_SECS`]) and only when both sides offered `ut_pex`.
    Pex(Arc<Vec<crate::peer::pex::PexPeer>>),
    /// Housekeeping: keep-alive, silence, snubbing, write stalls (every 10 s).
    Tick,
    /// Close the connection.
    Disconnect(&'static str),
}

/// Connect to `addr`, exchange handshakes for `ours.info_hash`, return the stream and theirs.
///
/// # Errors
/// Connect/handshake timeouts (10 s each), I/O errors, a wrong info hash or protocol
/// string, or a connection to ourselves.
pub async fn connect(
    addr: SocketAddr,
    ours: Handshake,
) -> Result<(TcpStream, Handshake), PeerError> {
    let mut stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
        .await
        .map_err(|_| PeerError::Timeout("connect"))??;
    stream.set_nodelay(true)?;
    let theirs = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
        stream.write_all(&ours.to_bytes()).await?;
        let mut buf = [0u8; wire::HANDSHAKE_LEN];
        stream.read_exact(&mut buf).await?;
        Ok::<_, PeerError>(Handshake::parse(&buf)?)
    })
    .await
    .map_err(|_| PeerError::Timeout("handshake"))??;
    if theirs.info_hash != ours.info_hash {
        return Err(PeerError::WrongInfoHash);
    }
    if theirs.peer_id == ours.peer_id {
        return Err(PeerError::SelfConnection);
    }
    Ok((stream, theirs))
}

/// Finish an incoming handshake whose first 48 bytes (up to the info hash) were read by the
/// listener: send ours, read their peer id.
///
/// # Errors
/// I/O errors, a 10 s timeout, or a self-connection.
pub async fn accept(
    stream: &mut TcpStream,
    reserved: [u8; 8],
    ours: Handshake,
) -> Result<Handshake, PeerError> {
    stream.set_nodelay(true)?;
    let pid = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
        stream.write_all(&ours.to_bytes()).await?;
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

/// Run a connection of a torrent that has no metadata yet: fetch it (BEP 9) and end.
///
/// # Errors
/// Why the connection ended; `Ok` once the metadata is complete.
pub async fn run_metadata<T: Transport>(
    fetch: Arc<super::torrent::metadata::MetadataFetch>,
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
        pex: false,
    };
    metadata::run(fetch, key, stream, info, remote, ctrl, ours).await
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
    let (rd, wr) = stream.split();
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let fast = remote.supports_fast();
    let writer = tokio::spawn(upload::run(wr, out_rx, t.clone(), key, info.clone(), fast));
    let mut conn = protocol::Conn::new(t, key, info, out_tx);
    let result = conn.run(rd, remote, ctrl, writer).await;
    conn.cleanup();
    result
}
