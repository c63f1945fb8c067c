//! One task pair per peer connection: a reader that runs the protocol and a writer that
//! drains an outgoing queue with vectored writes.
//!
//! The reader decides nothing about the swarm: it asks the torrent's picker (under a short
//! lock, never across an await) which blocks to request, hands received blocks to the disk
//! pool, and reports to the torrent task through events. The writer sends `piece` payloads
//! straight from the buffers the disk threads filled (header and block go out in one
//! `writev`, no copy into a send buffer).

use std::collections::VecDeque;
use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;

use super::picker::{BlockOutcome, PeerKey};
use super::torrent::{Torrent, TorrentEvent};
use crate::peer::PeerId;
use crate::peer::extension;
use crate::peer::wire::{self, BlockRef, Handshake, MAX_BLOCK_SIZE, Message, WireError};
use crate::piece::{Bitfield, BitfieldError};

/// Drop a peer that sent nothing (not even a keep-alive) for this long (BEP 3 suggests 2 min).
const SILENCE_TIMEOUT: Duration = Duration::from_secs(150);
/// Send a keep-alive after this long without sending anything.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(60);
/// A peer that has requests of ours and delivers nothing for this long is snubbed: its
/// requests go back to the picker for other peers.
const SNUB_TIMEOUT: Duration = Duration::from_secs(30);
/// Requests in flight when the peer does not say (`reqq`) how many it accepts.
const DEFAULT_PEER_REQQ: u32 = 250;
/// Most requests we keep in flight to one peer.
const MAX_PIPELINE: usize = 500;
/// Fewest requests we keep in flight to an unchoking peer.
const MIN_PIPELINE: usize = 16;
/// Seconds of data to keep requested, at the measured rate (sizes the pipeline).
const PIPELINE_SECONDS: f64 = 1.0;
/// Upload requests we queue per peer before ignoring more (we advertise this as `reqq`).
const MAX_QUEUED_UPLOADS: u32 = extension::OUR_REQQ;

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
    /// Handshake or connect took too long.
    #[error("timed out during {0}")]
    Timeout(&'static str),
}

/// Peer state shared with the torrent task (choker) and the snapshot publisher.
#[derive(Debug)]
pub struct PeerInfo {
    /// Remote address.
    pub addr: SocketAddr,
    /// We dialled it (true) or it dialled us.
    pub outgoing: bool,
    /// The remote peer id.
    pub peer_id: PeerId,
    /// We refuse its requests.
    pub am_choking: AtomicBool,
    /// We want its pieces.
    pub am_interested: AtomicBool,
    /// It refuses our requests.
    pub peer_choking: AtomicBool,
    /// It wants our pieces.
    pub peer_interested: AtomicBool,
    /// Payload bytes received from it.
    pub downloaded: AtomicU64,
    /// Payload bytes sent to it.
    pub uploaded: AtomicU64,
    /// Pieces it has.
    pub pieces: AtomicU32,
    /// Client name from BEP 10 `v`, if sent.
    pub client: std::sync::Mutex<Option<String>>,
}

impl PeerInfo {
    /// Fresh state for a just-handshaken connection (both sides choking, not interested).
    pub fn new(addr: SocketAddr, outgoing: bool, peer_id: PeerId) -> PeerInfo {
        PeerInfo {
            addr,
            outgoing,
            peer_id,
            am_choking: AtomicBool::new(true),
            am_interested: AtomicBool::new(false),
            peer_choking: AtomicBool::new(true),
            peer_interested: AtomicBool::new(false),
            downloaded: AtomicU64::new(0),
            uploaded: AtomicU64::new(0),
            pieces: AtomicU32::new(0),
            client: std::sync::Mutex::new(None),
        }
    }
}

/// Orders from the torrent task to one peer task.
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
    /// Re-evaluate interest (we completed pieces).
    CheckInterest,
    /// Close the connection.
    Disconnect,
}

/// What the writer task sends.
#[derive(Debug)]
enum Outgoing {
    Msg(Message),
    Piece(BlockRef, Bytes),
}

/// Connect to `addr`, exchange handshakes for `info_hash`, return the stream and theirs.
///
/// # Errors
/// Connect/handshake timeouts (10 s each), I/O errors, a wrong info hash or protocol string.
pub async fn connect(
    addr: SocketAddr,
    ours: Handshake,
) -> Result<(TcpStream, Handshake), PeerError> {
    let mut stream = tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(addr))
        .await
        .map_err(|_| PeerError::Timeout("connect"))??;
    stream.set_nodelay(true)?;
    stream.write_all(&ours.to_bytes()).await?;
    let mut buf = [0u8; wire::HANDSHAKE_LEN];
    tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut buf))
        .await
        .map_err(|_| PeerError::Timeout("handshake"))??;
    let theirs = Handshake::parse(&buf)?;
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
    stream.write_all(&ours.to_bytes()).await?;
    let mut pid = [0u8; 20];
    tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut pid))
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

/// Run an established connection until it ends. Cleans up its picker state itself
/// (releases requests, removes its availability) before returning.
pub async fn run(
    t: Arc<Torrent>,
    key: PeerKey,
    stream: TcpStream,
    info: Arc<PeerInfo>,
    remote: Handshake,
    ctrl: mpsc::UnboundedReceiver<PeerCtrl>,
) -> Result<(), PeerError> {
    let (rd, wr) = stream.into_split();
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(writer(wr, out_rx, t.clone(), info.clone()));
    let mut conn = Conn {
        n: t.piece_count(),
        bitfield: Bitfield::new(t.piece_count()),
        t,
        key,
        info,
        out: out_tx,
        in_flight: VecDeque::new(),
        pipeline: MIN_PIPELINE * 4,
        reqq: DEFAULT_PEER_REQQ,
        queued_uploads: Arc::new(AtomicU32::new(0)),
        pending_reads: Vec::new(),
        last_piece_at: Instant::now(),
        last_recv_at: Instant::now(),
        rate_window: (Instant::now(), 0),
        picks: Vec::new(),
        sent_bitfield_or_have: false,
        got_piece_state: false,
    };
    let result = conn.run(rd, remote, ctrl).await;
    conn.cleanup();
    drop(conn);
    // writer ends when the last sender (conn.out and pending disk replies) is gone
    writer.abort();
    result
}

struct Conn {
    t: Arc<Torrent>,
    key: PeerKey,
    info: Arc<PeerInfo>,
    out: mpsc::UnboundedSender<Outgoing>,
    n: u32,
    bitfield: Bitfield,
    /// Our requests to the peer, oldest first.
    in_flight: VecDeque<BlockRef>,
    /// Target number of requests in flight.
    pipeline: usize,
    reqq: u32,
    queued_uploads: Arc<AtomicU32>,
    pending_reads: Vec<BlockRef>,
    last_piece_at: Instant,
    last_recv_at: Instant,
    rate_window: (Instant, u64),
    picks: Vec<BlockRef>,
    sent_bitfield_or_have: bool,
    got_piece_state: bool,
}

impl Conn {
    fn send(&self, m: Message) {
        let _ = self.out.send(Outgoing::Msg(m));
    }

    async fn run(
        &mut self,
        mut rd: OwnedReadHalf,
        remote: Handshake,
        mut ctrl: mpsc::UnboundedReceiver<PeerCtrl>,
    ) -> Result<(), PeerError> {
        if remote.supports_extensions() {
            self.send(Message::Extended {
                ext_id: 0,
                payload: extension::encode_handshake(self.t.listen_port()),
            });
        }
        let have = self.t.have_snapshot();
        if have.count() > 0 {
            self.send(Message::Bitfield(Bytes::copy_from_slice(have.as_bytes())));
            self.sent_bitfield_or_have = true;
        }
        let cap = wire::message_cap(self.n);
        let mut buf = BytesMut::with_capacity(256 * 1024);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // when the download limit is exceeded, reading pauses until this instant; the
        // other branches (orders from the torrent) keep running meanwhile
        let mut resume_reading: Option<tokio::time::Instant> = None;
        loop {
            if buf.capacity() - buf.len() < 32 * 1024 {
                buf.reserve(256 * 1024);
            }
            // under a limit, read at most an eighth of a second's worth at a time
            let limit = self.t.limits.download.rate();
            let max_read = if limit == 0 {
                u64::MAX
            } else {
                (limit / 8).max(16 * 1024)
            };
            let mut limited = (&mut rd).take(max_read);
            tokio::select! {
                r = limited.read_buf(&mut buf), if resume_reading.is_none() => {
                    let n = r?;
                    if n == 0 {
                        return Err(PeerError::Io(std::io::ErrorKind::UnexpectedEof.into()));
                    }
                    self.last_recv_at = Instant::now();
                    while let Some(msg) = wire::decode(&mut buf, cap)? {
                        self.handle(msg).await?;
                    }
                    self.after_batch();
                    let wait = self.t.limits.download.debit(n as u64);
                    if !wait.is_zero() {
                        resume_reading = Some(tokio::time::Instant::now() + wait);
                    }
                }
                _ = sleep_until_some(resume_reading), if resume_reading.is_some() => {
                    resume_reading = None;
                }
                c = ctrl.recv() => {
                    match c {
                        None | Some(PeerCtrl::Disconnect) => return Ok(()),
                        Some(c) => self.control(c),
                    }
                    self.after_batch();
                }
                _ = tick.tick() => {
                    self.on_tick()?;
                    self.after_batch();
                }
            }
        }
    }

    fn control(&mut self, c: PeerCtrl) {
        match c {
            PeerCtrl::Have(p) => {
                // no need to tell a peer that has the piece (saves bandwidth to seeds)
                if !self.bitfield.get(p) {
                    self.send(Message::Have(p));
                    self.sent_bitfield_or_have = true;
                }
            }
            PeerCtrl::Choke => {
                if !self.info.am_choking.swap(true, Ordering::Relaxed) {
                    self.pending_reads.clear();
                    self.send(Message::Choke);
                }
            }
            PeerCtrl::Unchoke => {
                if self.info.am_choking.swap(false, Ordering::Relaxed) {
                    self.send(Message::Unchoke);
                }
            }
            PeerCtrl::Cancel(b) => {
                if let Some(i) = self.in_flight.iter().position(|x| *x == b) {
                    self.in_flight.remove(i);
                    self.send(Message::Cancel(b));
                }
            }
            PeerCtrl::CheckInterest => self.update_interest(),
            PeerCtrl::Disconnect => {}
        }
    }

    fn protocol(&self, msg: String) -> PeerError {
        PeerError::Protocol(msg)
    }

    async fn handle(&mut self, msg: Message) -> Result<(), PeerError> {
        // BEP 3: bitfield (or BEP 6 have-all/none) only as the first piece-state message;
        // the BEP 10 extended handshake may come before it (libtorrent sends it first)
        let first = !self.got_piece_state;
        if matches!(
            msg,
            Message::Have(_) | Message::Bitfield(_) | Message::HaveAll | Message::HaveNone
        ) {
            self.got_piece_state = true;
        }
        match msg {
            Message::KeepAlive | Message::Port(_) | Message::Unknown { .. } => {}
            Message::Choke => {
                self.info.peer_choking.store(true, Ordering::Relaxed);
                self.release_all();
            }
            Message::Unchoke => {
                self.info.peer_choking.store(false, Ordering::Relaxed);
                self.last_piece_at = Instant::now();
            }
            Message::Interested => {
                if !self.info.peer_interested.swap(true, Ordering::Relaxed) {
                    let _ = self.t.events.send(TorrentEvent::InterestChanged);
                }
            }
            Message::NotInterested => {
                if self.info.peer_interested.swap(false, Ordering::Relaxed) {
                    let _ = self.t.events.send(TorrentEvent::InterestChanged);
                }
            }
            Message::Have(p) => {
                self.check_index("have", p)?;
                if self.bitfield.set(p) {
                    self.info
                        .pieces
                        .store(self.bitfield.count(), Ordering::Relaxed);
                    let wanted = {
                        let mut pk = self.t.picker();
                        pk.peer_has(p);
                        !pk.have().get(p)
                    };
                    if wanted && !self.info.am_interested.load(Ordering::Relaxed) {
                        self.set_interested(true);
                    }
                }
            }
            Message::Bitfield(bytes) => {
                if !first {
                    return Err(self.protocol("bitfield after have messages".into()));
                }
                let bf = Bitfield::from_payload(&bytes, self.n)?;
                self.replace_bitfield(bf);
            }
            Message::HaveAll => {
                if !first {
                    return Err(self.protocol("have-all after have messages".into()));
                }
                self.replace_bitfield(Bitfield::full(self.n));
            }
            Message::HaveNone => {}
            Message::Request(b) => self.on_request(b)?,
            Message::Cancel(b) => {
                self.check_index("cancel", b.piece)?;
                self.pending_reads.retain(|x| *x != b);
            }
            Message::Reject(b) => {
                self.check_index("reject", b.piece)?;
                if let Some(i) = self.in_flight.iter().position(|x| *x == b) {
                    self.in_flight.remove(i);
                    self.t.picker().release(&b);
                }
            }
            Message::Piece { piece, begin, data } => self.on_piece(piece, begin, data).await?,
            Message::Extended { ext_id, payload } => {
                if ext_id == 0
                    && let Ok(h) = extension::parse_handshake(&payload)
                {
                    if let Some(r) = h.reqq {
                        self.reqq = r;
                    }
                    if let Some(c) = h.client {
                        *self.info.client.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
                    }
                }
            }
        }
        Ok(())
    }

    /// A piece index from the peer must name a piece of this torrent (drop it otherwise).
    fn check_index(&self, what: &str, p: u32) -> Result<(), PeerError> {
        if p >= self.n {
            return Err(self.protocol(format!(
                "{what}: piece index {p} out of range ({} pieces)",
                self.n
            )));
        }
        Ok(())
    }

    fn replace_bitfield(&mut self, bf: Bitfield) {
        let interesting = {
            let mut pk = self.t.picker();
            pk.peer_gone(self.key, &self.bitfield);
            pk.peer_bitfield(&bf);
            pk.is_interesting(&bf)
        };
        self.bitfield = bf;
        self.info
            .pieces
            .store(self.bitfield.count(), Ordering::Relaxed);
        if interesting {
            self.set_interested(true);
        }
    }

    fn set_interested(&mut self, yes: bool) {
        if self.info.am_interested.swap(yes, Ordering::Relaxed) != yes {
            self.send(if yes {
                Message::Interested
            } else {
                Message::NotInterested
            });
        }
    }

    fn update_interest(&mut self) {
        let interesting = self.t.picker().is_interesting(&self.bitfield);
        self.set_interested(interesting);
    }

    fn on_request(&mut self, b: BlockRef) -> Result<(), PeerError> {
        self.check_index("request", b.piece)?;
        if b.length == 0
            || b.length > MAX_BLOCK_SIZE
            || b.begin
                .checked_add(b.length)
                .is_none_or(|end| end > self.t.piece_size(b.piece))
        {
            return Err(self.protocol(format!(
                "request out of bounds: piece {} begin {} length {}",
                b.piece, b.begin, b.length
            )));
        }
        if self.info.am_choking.load(Ordering::Relaxed) {
            return Ok(()); // BEP 3: requests while choked are dropped
        }
        let queued = self.queued_uploads.load(Ordering::Relaxed) + self.pending_reads.len() as u32;
        if queued >= MAX_QUEUED_UPLOADS || !self.t.have_piece(b.piece) {
            return Ok(());
        }
        self.pending_reads.push(b);
        Ok(())
    }

    async fn on_piece(&mut self, piece: u32, begin: u32, data: Bytes) -> Result<(), PeerError> {
        self.check_index("piece", piece)?;
        if data.len() > MAX_BLOCK_SIZE as usize {
            return Err(self.protocol(format!(
                "piece: block of {} bytes is larger than {MAX_BLOCK_SIZE}",
                data.len()
            )));
        }
        let len = data.len() as u32;
        let block = BlockRef {
            piece,
            begin,
            length: len,
        };
        if let Some(i) = self.in_flight.iter().position(|x| *x == block) {
            self.in_flight.remove(i);
        }
        self.last_piece_at = Instant::now();
        self.info
            .downloaded
            .fetch_add(u64::from(len), Ordering::Relaxed);
        self.t
            .stats
            .downloaded
            .fetch_add(u64::from(len), Ordering::Relaxed);
        let outcome = self.t.picker().on_block(self.key, piece, begin, len);
        match outcome {
            BlockOutcome::New {
                requested_elsewhere,
                ..
            } => {
                if requested_elsewhere {
                    let _ = self.t.events.send(TorrentEvent::CancelElsewhere {
                        block,
                        except: self.key,
                    });
                }
                self.t.write_block(piece, begin, data).await;
            }
            BlockOutcome::Duplicate | BlockOutcome::Unexpected => {
                self.t
                    .stats
                    .wasted
                    .fetch_add(u64::from(len), Ordering::Relaxed);
            }
        }
        Ok(())
    }

    fn release_all(&mut self) {
        if self.in_flight.is_empty() {
            return;
        }
        let mut pk = self.t.picker();
        for b in self.in_flight.drain(..) {
            pk.release(&b);
        }
    }

    fn on_tick(&mut self) -> Result<(), PeerError> {
        let now = Instant::now();
        let silent = now.duration_since(self.last_recv_at);
        if silent > SILENCE_TIMEOUT {
            return Err(PeerError::Silent(silent.as_secs()));
        }
        if !self.in_flight.is_empty() && now.duration_since(self.last_piece_at) > SNUB_TIMEOUT {
            // snubbed: let other peers fetch these blocks
            self.release_all();
            self.last_piece_at = now;
        }
        // size the pipeline from the rate over the last window
        let (at, bytes) = self.rate_window;
        let dt = now.duration_since(at).as_secs_f64();
        if dt >= 1.0 {
            let total = self.info.downloaded.load(Ordering::Relaxed);
            let rate = total.saturating_sub(bytes) as f64 / dt;
            let want = (rate * PIPELINE_SECONDS / f64::from(wire::BLOCK_SIZE)) as usize;
            let cap = (self.reqq as usize).clamp(MIN_PIPELINE, MAX_PIPELINE);
            self.pipeline = want
                .clamp(MIN_PIPELINE, cap)
                .max(self.pipeline.min(cap) / 2);
            self.rate_window = (now, total);
        }
        Ok(())
    }

    /// After a burst of messages: issue the upload reads and top up our requests.
    fn after_batch(&mut self) {
        if !self.pending_reads.is_empty() {
            let blocks = std::mem::take(&mut self.pending_reads);
            let out = self.out.clone();
            let queued = self.queued_uploads.clone();
            queued.fetch_add(blocks.len() as u32, Ordering::Relaxed);
            let events = self.t.events.clone();
            self.t.read_blocks(
                blocks,
                Box::new(move |r| match r {
                    Ok(blocks) => {
                        for (b, data) in blocks {
                            let _ = out.send(Outgoing::Piece(b, data));
                        }
                    }
                    Err(e) => {
                        let _ = events.send(TorrentEvent::StorageError(e.to_string()));
                    }
                }),
            );
        }
        if self.info.peer_choking.load(Ordering::Relaxed)
            || !self.info.am_interested.load(Ordering::Relaxed)
        {
            return;
        }
        let cap = (self.reqq as usize).min(MAX_PIPELINE);
        let target = self.pipeline.min(cap);
        if self.in_flight.len() >= target {
            return;
        }
        // top up in batches of at least a quarter pipeline to keep lock traffic low
        let room = target - self.in_flight.len();
        if room < target / 4 && !self.in_flight.is_empty() {
            return;
        }
        self.picks.clear();
        let in_flight = self.in_flight.make_contiguous();
        self.t
            .picker()
            .pick(self.key, &self.bitfield, in_flight, room, &mut self.picks);
        if self.picks.is_empty() {
            if self.in_flight.is_empty() {
                self.update_interest();
            }
            return;
        }
        for b in &self.picks {
            let _ = self.out.send(Outgoing::Msg(Message::Request(*b)));
        }
        self.in_flight.extend(self.picks.iter().copied());
    }

    fn cleanup(&mut self) {
        let mut pk = self.t.picker();
        for b in self.in_flight.drain(..) {
            pk.release(&b);
        }
        pk.peer_gone(self.key, &self.bitfield);
    }
}

async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at).await;
    }
}

async fn writer(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    t: Arc<Torrent>,
    info: Arc<PeerInfo>,
) -> std::io::Result<()> {
    let mut small = BytesMut::with_capacity(16 * 1024);
    let mut chunks: VecDeque<Bytes> = VecDeque::new();
    loop {
        let first = match tokio::time::timeout(KEEPALIVE_INTERVAL, rx.recv()).await {
            Ok(Some(m)) => m,
            Ok(None) => break,
            Err(_) => Outgoing::Msg(Message::KeepAlive),
        };
        let mut upload = 0u64;
        let mut next = Some(first);
        let mut batched = 0usize;
        while let Some(m) = next.take() {
            match m {
                Outgoing::Msg(m) => m.encode(&mut small),
                Outgoing::Piece(b, data) => {
                    if info.am_choking.load(Ordering::Relaxed) {
                        // choked since the read was issued: drop it (BEP 3)
                    } else {
                        small.extend_from_slice(&wire::piece_header(b.piece, b.begin, b.length));
                        chunks.push_back(small.split().freeze());
                        batched += data.len();
                        upload += data.len() as u64;
                        chunks.push_back(data);
                    }
                }
            }
            if batched < 1 << 20 {
                next = rx.try_recv().ok();
            }
        }
        if !small.is_empty() {
            chunks.push_back(small.split().freeze());
        }
        write_chunks(&mut wr, &mut chunks).await?;
        if upload > 0 {
            info.uploaded.fetch_add(upload, Ordering::Relaxed);
            t.stats.uploaded.fetch_add(upload, Ordering::Relaxed);
            t.limits.upload.consume(upload).await;
        }
    }
    let _ = wr.shutdown().await;
    Ok(())
}

async fn write_chunks(
    wr: &mut OwnedWriteHalf,
    chunks: &mut VecDeque<Bytes>,
) -> std::io::Result<()> {
    while !chunks.is_empty() {
        let n = {
            let slices: Vec<IoSlice<'_>> =
                chunks.iter().take(64).map(|c| IoSlice::new(c)).collect();
            wr.write_vectored(&slices).await?
        };
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        let mut left = n;
        while left > 0 {
            let Some(front) = chunks.front_mut() else {
                break;
            };
            if front.len() <= left {
                left -= front.len();
                chunks.pop_front();
            } else {
                front.advance(left);
                left = 0;
            }
        }
    }
    Ok(())
}
