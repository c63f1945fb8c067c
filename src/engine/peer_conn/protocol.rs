//! The reading side of a connection: decodes the peer's messages, keeps its bitfield and
//! choke/interest state, requests blocks the picker chooses, and hands received blocks to
//! the disk threads without copying them (a `piece` payload is a slice of the receive
//! buffer).

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;

use super::handover::Resumed;
use super::upload::Outgoing;
use super::{KEEPALIVE_INTERVAL, SILENCE_TIMEOUT, SNUB_TIMEOUT, WRITE_STALL_TIMEOUT};
use crate::engine::link::message::{PeerCtrl, PeerError, PeerEvent};
use crate::engine::link::peer::PeerInfo;
use crate::engine::link::shared::TorrentShared;
use crate::engine::picker::BlockOutcome;
use crate::lock::MutexExt;
use crate::peer::extension::{self, OurHandshake, UT_METADATA_ID, UT_PEX_ID};
use crate::peer::metadata::{self as bep9, MetadataMsg};
use crate::peer::pex::{self, PexPeer};
use crate::peer::wire::{self, Handshake, MAX_BLOCK_SIZE, Message};
use crate::piece::{BLOCK_SIZE, Bitfield, BlockRef};

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
/// Receive buffer growth step while we download from the peer, bytes.
const RECV_CHUNK: usize = 256 * 1024;
/// Receive buffer of a connection we download nothing from, bytes (its messages are small:
/// a block, when it comes, is 16 KiB and a header). A crowd of peers that only send
/// requests costs this much each, not [`RECV_CHUNK`].
const RECV_SMALL: usize = 32 * 1024;
/// Most allowed-fast pieces (BEP 6) we keep from one peer.
const MAX_PEER_ALLOWED_FAST: usize = 64;
/// Rejects from an unchoking peer after which we stop asking it until it unchokes us again
/// (a peer that rejects everything must not make us ask in a loop).
const MAX_REJECTS_UNCHOKED: u32 = 256;
/// Rejects (BEP 6) we send one peer between two ticks (10 s); its requests past that are
/// dropped unanswered (BEP 3). A peer that asks while choked and never reads would
/// otherwise pile up a reject per request behind its full socket.
const MAX_REJECTS_PER_TICK: u32 = 256;
/// Requests in flight to a peer that chokes us, for its allowed-fast pieces only.
const ALLOWED_FAST_PIPELINE: usize = MIN_PIPELINE;
/// Metadata pieces (BEP 9) we send one peer, as a multiple of the metadata's piece count:
/// enough to fetch it a few times over, not a way to make us send without end.
const METADATA_SERVE_ROUNDS: u32 = 4;

/// The reader's state of one connection.
pub struct Conn {
    t: Arc<TorrentShared>,
    key: u64,
    info: Arc<PeerInfo>,
    out: mpsc::UnboundedSender<Outgoing>,
    n: u32,
    bitfield: Bitfield,
    /// Our requests to the peer, oldest first.
    in_flight: VecDeque<BlockRef>,
    /// Target number of requests in flight.
    pipeline: usize,
    reqq: u32,
    last_piece_at: Instant,
    rate_window: (Instant, u64),
    picks: Vec<BlockRef>,
    /// The peer's pieces are counted in the picker's availability.
    in_picker: bool,
    /// The id to send the peer `ut_metadata` messages with (its BEP 10 `m`).
    peer_ut_metadata: Option<u8>,
    /// Metadata pieces sent to this peer.
    metadata_served: u32,
    /// Both sides speak the fast extension (BEP 6).
    fast: bool,
    /// Pieces we let this peer request while we choke it (BEP 6 allowed fast).
    our_allowed: Vec<u32>,
    /// Pieces the peer lets us request while it chokes us.
    peer_allowed: Vec<u32>,
    /// Rejects received since the peer last unchoked us.
    rejects: u32,
    /// Rejects we sent since the last tick (at most [`MAX_REJECTS_PER_TICK`]).
    rejects_sent: u32,
    /// BEP 52 hash requests answered since the last tick (at most
    /// [`super::hashes::MAX_HASH_REQUESTS_PER_TICK`]).
    hash_requests: u32,
    /// We offer `ut_pex` on this connection (config `pex`, not a private torrent, BEP 27).
    pex_on: bool,
    /// The id to send the peer `ut_pex` messages with.
    peer_ut_pex: Option<u8>,
    /// Peers this peer has been told about (BEP 11 diffs are against this).
    pex_told: HashSet<std::net::SocketAddr>,
    /// When we last sent / accepted a `ut_pex` message.
    pex_sent_at: Option<Instant>,
    pex_recv_at: Option<Instant>,
}

/// Messages from one peer closer together than this are ignored (BEP 11 asks for one a
/// minute; a little slack for timers).
const PEX_MIN_GAP: std::time::Duration = std::time::Duration::from_secs(45);

impl Conn {
    /// A reader for connection `key` of torrent `t`; messages to the peer go to `out`.
    pub fn new(
        t: Arc<TorrentShared>,
        key: u64,
        info: Arc<PeerInfo>,
        out: mpsc::UnboundedSender<Outgoing>,
    ) -> Conn {
        let n = t.piece_count();
        Conn {
            n,
            bitfield: Bitfield::new(n),
            t,
            key,
            info,
            out,
            in_flight: VecDeque::new(),
            pipeline: MIN_PIPELINE * 4,
            reqq: DEFAULT_PEER_REQQ,
            last_piece_at: Instant::now(),
            rate_window: (Instant::now(), 0),
            picks: Vec::new(),
            in_picker: false,
            peer_ut_metadata: None,
            metadata_served: 0,
            fast: false,
            our_allowed: Vec::new(),
            peer_allowed: Vec::new(),
            rejects: 0,
            rejects_sent: 0,
            hash_requests: 0,
            pex_on: false,
            peer_ut_pex: None,
            pex_told: HashSet::new(),
            pex_sent_at: None,
            pex_recv_at: None,
        }
    }

    fn send(&self, m: Message) {
        let _ = self.out.send(Outgoing::Msg(m));
    }

    /// Read and handle messages until the connection ends, an order closes it, or the
    /// upload pump fails.
    pub async fn run<R: AsyncRead + Unpin>(
        &mut self,
        mut rd: R,
        remote: Handshake,
        mut ctrl: mpsc::UnboundedReceiver<PeerCtrl>,
        mut writer: tokio::task::JoinHandle<Result<(), PeerError>>,
        resumed: Option<Resumed>,
    ) -> Result<(), PeerError> {
        let result = self
            .run_inner(&mut rd, remote, &mut ctrl, &mut writer, resumed)
            .await;
        // the writer ends when the last sender (ours) is dropped; make sure it does
        writer.abort();
        result
    }

    async fn run_inner<R: AsyncRead + Unpin>(
        &mut self,
        rd: &mut R,
        remote: Handshake,
        ctrl: &mut mpsc::UnboundedReceiver<PeerCtrl>,
        writer: &mut tokio::task::JoinHandle<Result<(), PeerError>>,
        resumed: Option<Resumed>,
    ) -> Result<(), PeerError> {
        self.pex_on = self.t.ctx.pex && !self.t.is_private();
        if remote.supports_extensions() {
            let ours = OurHandshake {
                listen_port: self.t.ctx.listen_port,
                metadata_size: self.t.metadata().map(|m| m.len() as u32),
                yourip: Some(self.info.addr.ip()),
                pex: self.pex_on,
            };
            self.send(Message::Extended {
                ext_id: 0,
                payload: extension::encode_handshake(&ours),
            });
        }
        self.fast = remote.supports_fast();
        // BEP 5: tell a peer that runs a DHT node where ours listens (a metadata
        // connection did)
        if resumed.is_none()
            && remote.supports_dht()
            && let Some(dht) = self.t.dht()
        {
            self.send(Message::Port(dht.local_addr().port()));
        }
        let have = self.t.have.to_bitfield();
        if resumed.is_some() {
            // the bitfield (or have all / have none) may only be the first message; on a
            // connection that fetched the metadata, `have` each piece we have
            for p in have.ones() {
                self.send(Message::Have(p));
            }
            if self.fast {
                self.offer_allowed_fast();
            }
        } else if self.fast {
            // BEP 6: have-all / have-none stand for the bitfield
            if have.is_full() {
                self.send(Message::HaveAll);
            } else if have.count() == 0 {
                self.send(Message::HaveNone);
            } else {
                self.send(Message::Bitfield(Bytes::copy_from_slice(have.as_bytes())));
            }
            self.offer_allowed_fast();
        } else if have.count() > 0 {
            self.send(Message::Bitfield(Bytes::copy_from_slice(have.as_bytes())));
        }
        let cap = wire::message_cap(self.n);
        let mut buf = match resumed {
            // what the peer said while we fetched the metadata, checked like the rest
            Some(r) => {
                for m in r.told.into_messages() {
                    self.handle(m).await?;
                }
                self.after_batch();
                let mut buf = r.rest;
                buf.reserve(RECV_SMALL);
                buf
            }
            None => BytesMut::with_capacity(RECV_SMALL),
        };
        // when the download limit is exceeded, reading pauses until this instant; orders
        // from the torrent keep being handled meanwhile
        let mut resume_reading: Option<tokio::time::Instant> = None;
        loop {
            if buf.capacity() - buf.len() < 32 * 1024 {
                // large reads while blocks come in; small ones for a peer that only asks
                let step = if self.in_flight.is_empty() {
                    RECV_SMALL
                } else {
                    RECV_CHUNK
                };
                buf.reserve(step);
            }
            // under a limit, read at most an eighth of a second's worth at a time
            let limit = self.t.download_limit();
            let max_read = if limit == 0 {
                u64::MAX
            } else {
                (limit / 8).max(16 * 1024)
            };
            let mut limited = (&mut *rd).take(max_read);
            tokio::select! {
                r = limited.read_buf(&mut buf), if resume_reading.is_none() => {
                    let n = r?;
                    if n == 0 {
                        return Err(PeerError::Io(std::io::ErrorKind::UnexpectedEof.into()));
                    }
                    self.info.last_recv.store(self.t.ctx.clock.now_ms(), Ordering::Relaxed);
                    while let Some(msg) = wire::decode(&mut buf, cap)? {
                        self.info.messages.fetch_add(1, Ordering::Relaxed);
                        self.handle(msg).await?;
                    }
                    self.after_batch();
                    let wait = self.t.debit_download(n as u64);
                    if !wait.is_zero() {
                        resume_reading = Some(tokio::time::Instant::now() + wait);
                    }
                }
                _ = sleep_until_some(resume_reading), if resume_reading.is_some() => {
                    resume_reading = None;
                }
                c = ctrl.recv() => {
                    match c {
                        None => return Err(PeerError::Closed("torrent gone")),
                        Some(PeerCtrl::Disconnect(why)) => return Err(PeerError::Closed(why)),
                        Some(PeerCtrl::Tick) => self.on_tick()?,
                        Some(c) => self.control(c),
                    }
                    self.after_batch();
                }
                w = &mut *writer => {
                    return match w {
                        Ok(Err(e)) => Err(e),
                        Ok(Ok(())) => Err(PeerError::Closed("writer ended")),
                        Err(_) => Err(PeerError::Closed("writer task failed")),
                    };
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
                }
            }
            PeerCtrl::Choke => {
                if !self.info.am_choking.swap(true, Ordering::Relaxed) {
                    // the pump drops the peer's queued requests (BEP 3) and sends `choke`
                    let _ = self.out.send(Outgoing::Choke);
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
            PeerCtrl::Repick => {
                let cancelled: Vec<BlockRef> = self.in_flight.iter().copied().collect();
                self.release_all();
                self.t.picker().disown(self.key);
                for b in cancelled {
                    self.send(Message::Cancel(b));
                }
            }
            PeerCtrl::Pex(now) => self.send_pex(&now),
            PeerCtrl::Tick | PeerCtrl::Disconnect(_) | PeerCtrl::Upgrade => {}
        }
    }

    fn protocol(&self, msg: String) -> PeerError {
        PeerError::Protocol(msg)
    }

    async fn handle(&mut self, msg: Message) -> Result<(), PeerError> {
        if !matches!(msg, Message::Piece { .. } | Message::Request(_)) {
            tracing::trace!(peer = %self.info.addr, ?msg, "message");
        }
        match msg {
            // BEP 5: the peer's DHT node, at its IP (bad ports are ignored, never fatal)
            Message::Port(p) => {
                if let Some(dht) = self.t.dht() {
                    dht.add_node(std::net::SocketAddr::new(self.info.addr.ip(), p));
                }
            }
            Message::KeepAlive | Message::Unknown { .. } | Message::Suggest(_) => {}
            Message::Choke => {
                self.info.peer_choking.store(true, Ordering::Relaxed);
                // BEP 6: with the fast extension the peer rejects what it will not serve
                // (and may still serve allowed-fast pieces); the snub timeout catches a
                // peer that does neither
                if !self.fast {
                    self.release_all();
                }
            }
            Message::AllowedFast(p) => {
                self.check_index("allowed fast", p)?;
                if self.fast
                    && self.peer_allowed.len() < MAX_PEER_ALLOWED_FAST
                    && !self.peer_allowed.contains(&p)
                {
                    self.peer_allowed.push(p);
                }
            }
            Message::Unchoke => {
                self.info.peer_choking.store(false, Ordering::Relaxed);
                self.rejects = 0;
                self.last_piece_at = Instant::now();
            }
            Message::Interested => {
                if !self.info.peer_interested.swap(true, Ordering::Relaxed) {
                    self.t.peer_event(self.key, PeerEvent::InterestChanged);
                }
            }
            Message::NotInterested => {
                if self.info.peer_interested.swap(false, Ordering::Relaxed) {
                    self.t.peer_event(self.key, PeerEvent::InterestChanged);
                }
            }
            Message::Have(p) => {
                self.check_index("have", p)?;
                if self.bitfield.set(p) {
                    self.info
                        .pieces
                        .store(self.bitfield.count(), Ordering::Relaxed);
                    if !self.in_picker && !self.t.is_complete() {
                        // count the pieces it announced before this one too
                        let mut prior = self.bitfield.clone();
                        prior.unset(p);
                        self.t.picker().peer_bitfield(&prior);
                        self.in_picker = true;
                    }
                    if self.in_picker {
                        self.t.picker().peer_has(p);
                        if !self.t.have.get(p) && !self.info.am_interested.load(Ordering::Relaxed) {
                            self.set_interested(true);
                        }
                    }
                }
            }
            // BEP 3 wants the bitfield first; aria2 sends it after `have` messages, so a
            // later one is taken as the peer's whole set (validated the same way)
            Message::Bitfield(bytes) => {
                let bf = Bitfield::from_payload(&bytes, self.n)?;
                self.replace_bitfield(bf);
            }
            Message::HaveAll => self.replace_bitfield(Bitfield::full(self.n)),
            Message::HaveNone => {}
            Message::Request(b) => self.on_request(b)?,
            Message::Cancel(b) => {
                self.check_index("cancel", b.piece)?;
                let _ = self.out.send(Outgoing::Cancel(b));
            }
            // BEP 6: the request is freed at once for another peer
            Message::Reject(b) => {
                self.check_index("reject", b.piece)?;
                if let Some(i) = self.in_flight.iter().position(|x| *x == b) {
                    self.in_flight.remove(i);
                    self.t.picker().release(&b);
                }
                if self.info.peer_choking.load(Ordering::Relaxed) {
                    // not served while choked after all: stop asking for that piece
                    self.peer_allowed.retain(|p| *p != b.piece);
                } else {
                    self.rejects += 1;
                }
            }
            Message::Piece { piece, begin, data } => self.on_piece(piece, begin, data).await?,
            Message::Extended { ext_id, payload } => self.on_extended(ext_id, &payload),
            // BEP 52: the hashes of a file's tree, from our piece layers (a bounded number
            // a tick; past that the peer gets no answer)
            Message::HashRequest(r) => {
                if self.hash_requests < super::hashes::MAX_HASH_REQUESTS_PER_TICK {
                    self.hash_requests += 1;
                    self.send(super::hashes::answer(&self.t, &r));
                }
            }
            // we ask for hashes only while fetching a magnet link's metadata: answers here
            // were not asked for and are dropped
            Message::Hashes { .. } | Message::HashReject(_) => {}
        }
        Ok(())
    }

    /// A BEP 10 message: the handshake (possibly again, updating), or one of ours by the
    /// id we assigned. Malformed extension messages are ignored (the base protocol goes on).
    fn on_extended(&mut self, ext_id: u8, payload: &Bytes) {
        if ext_id == 0 {
            let Ok(h) = extension::parse_handshake(payload) else {
                return;
            };
            if let Some(r) = h.reqq {
                self.reqq = r;
            }
            if let Some(c) = h.client {
                *self.info.client.locked() = Some(c);
            }
            if let Some(p) = h.listen_port
                && !self.info.outgoing
                && self.info.listen_port.swap(p, Ordering::Relaxed) != p
            {
                self.t.peer_event(self.key, PeerEvent::ListenPort);
            }
            self.peer_ut_metadata = h.ut_metadata;
            self.peer_ut_pex = h.ut_pex;
        } else if ext_id == UT_PEX_ID && self.pex_on {
            self.on_pex(payload);
        } else if ext_id == UT_METADATA_ID
            && let Ok(MetadataMsg::Request { piece }) = bep9::parse(payload)
        {
            self.serve_metadata(piece);
        }
    }

    /// A `ut_pex` message (BEP 11): new peers go to the torrent's peer book. More than one
    /// message in [`PEX_MIN_GAP`] or a malformed one is ignored; a peer on the Internet
    /// does not get to point us at local addresses.
    fn on_pex(&mut self, payload: &Bytes) {
        let now = Instant::now();
        if self
            .pex_recv_at
            .is_some_and(|t| now.duration_since(t) < PEX_MIN_GAP)
        {
            tracing::debug!(addr = %self.info.addr, "ut_pex: message too soon, ignored");
            return;
        }
        self.pex_recv_at = Some(now);
        let m = match pex::parse(payload) {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(addr = %self.info.addr, "{e}: ignored");
                return;
            }
        };
        let sender_local = crate::net::is_local(self.info.addr.ip());
        let added: Vec<PexPeer> = m
            .added
            .into_iter()
            .filter(|p| sender_local || !crate::net::is_local(p.addr.ip()))
            .collect();
        if !added.is_empty() {
            self.t.peer_event(self.key, PeerEvent::Pex(added));
        }
    }

    /// Tell the peer what changed among our connections since the last message, at most
    /// once every [`pex::INTERVAL_SECS`].
    fn send_pex(&mut self, now_connected: &[PexPeer]) {
        let Some(id) = self.peer_ut_pex.filter(|_| self.pex_on) else {
            return;
        };
        let now = Instant::now();
        if self
            .pex_sent_at
            .is_some_and(|t| now.duration_since(t).as_secs() < pex::INTERVAL_SECS)
        {
            return;
        }
        let port = self.info.listen_port.load(Ordering::Relaxed);
        let recipient = if self.info.outgoing || port == 0 {
            self.info.addr
        } else {
            std::net::SocketAddr::new(self.info.addr.ip(), port)
        };
        if let Some((added, dropped)) = pex::diff(&mut self.pex_told, now_connected, recipient) {
            self.pex_sent_at = Some(now);
            self.send(Message::Extended {
                ext_id: id,
                payload: pex::encode(&added, &dropped),
            });
        }
    }

    /// Answer a BEP 9 request: the piece, or a reject when we have no metadata, the index is
    /// out of range, or the peer asked too often.
    fn serve_metadata(&mut self, piece: u32) {
        let Some(id) = self.peer_ut_metadata else {
            return;
        };
        let data = self.t.metadata().and_then(|m| {
            let limit = bep9::piece_count(m.len() as u32).saturating_mul(METADATA_SERVE_ROUNDS);
            (self.metadata_served < limit)
                .then(|| bep9::encode_data(m, piece))
                .flatten()
        });
        let payload = match data {
            Some(d) => {
                self.metadata_served += 1;
                d
            }
            None => bep9::encode_reject(piece),
        };
        self.send(Message::Extended {
            ext_id: id,
            payload,
        });
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
        // a seed does not track availability (nothing to pick); a torrent that completes
        // later keeps the counts until the connection ends
        let interesting = if self.t.is_complete() && !self.in_picker {
            false
        } else {
            let mut pk = self.t.picker();
            if self.in_picker {
                pk.peer_gone(self.key, &self.bitfield);
            }
            pk.peer_bitfield(&bf);
            self.in_picker = true;
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
        let interesting = !self.t.is_complete() && self.t.picker().is_interesting(&self.bitfield);
        self.set_interested(interesting);
    }

    /// BEP 6: the pieces this peer may request while choked (derived from its address and
    /// the info hash, [`wire::ALLOWED_FAST_COUNT`] of them), remembered and sent.
    fn offer_allowed_fast(&mut self) {
        self.our_allowed = wire::allowed_fast_set(
            self.info.addr.ip(),
            &self.t.info_hash,
            self.n,
            wire::ALLOWED_FAST_COUNT,
        );
        for &p in &self.our_allowed {
            self.send(Message::AllowedFast(p));
        }
    }

    fn on_request(&mut self, b: BlockRef) -> Result<(), PeerError> {
        self.check_index("request", b.piece)?;
        if b.length > MAX_BLOCK_SIZE || !self.t.geometry.in_piece(b.piece, b.begin, b.length) {
            return Err(self.protocol(format!(
                "request out of bounds: piece {} begin {} length {}",
                b.piece, b.begin, b.length
            )));
        }
        self.info.requests_seen.fetch_add(1, Ordering::Relaxed);
        let choked = self.info.am_choking.load(Ordering::Relaxed);
        let allowed = choked && self.fast && self.our_allowed.contains(&b.piece);
        if (choked && !allowed)
            || !self.t.accepting()
            || self.info.upload_queued.load(Ordering::Relaxed) >= MAX_QUEUED_UPLOADS
            || !self.t.have.get(b.piece)
        {
            // BEP 3: dropped; BEP 6: rejected, so the peer can ask elsewhere at once (a
            // bounded number a tick)
            if self.fast && self.rejects_sent < MAX_REJECTS_PER_TICK {
                self.rejects_sent += 1;
                self.send(Message::Reject(b));
            }
            return Ok(());
        }
        // counted here too: while the pump waits on a socket that does not drain it takes
        // nothing from its channel, and the cap above must still hold
        self.info.upload_queued.fetch_add(1, Ordering::Relaxed);
        let _ = self.out.send(Outgoing::Request(b));
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
        let now = Instant::now();
        self.last_piece_at = now;
        self.info.snubbed.store(false, Ordering::Relaxed);
        let total = self
            .info
            .downloaded
            .fetch_add(u64::from(len), Ordering::Relaxed)
            + u64::from(len);
        self.t
            .stats
            .downloaded
            .fetch_add(u64::from(len), Ordering::Relaxed);
        self.resize_pipeline(now, total);
        let outcome = if self.t.is_complete() {
            BlockOutcome::Duplicate
        } else {
            self.t.picker().on_block(self.key, piece, begin, len)
        };
        match outcome {
            BlockOutcome::New {
                requested_elsewhere,
                ..
            } => {
                if requested_elsewhere {
                    self.t
                        .peer_event(self.key, PeerEvent::CancelElsewhere(block));
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

    /// Size the pipeline from the rate over the last second (checked as blocks arrive: no
    /// timer needed).
    fn resize_pipeline(&mut self, now: Instant, total: u64) {
        let (at, bytes) = self.rate_window;
        let dt = now.duration_since(at).as_secs_f64();
        if dt < 1.0 {
            return;
        }
        let rate = total.saturating_sub(bytes) as f64 / dt;
        let want = (rate * PIPELINE_SECONDS / f64::from(BLOCK_SIZE)) as usize;
        let cap = (self.reqq as usize).clamp(MIN_PIPELINE, MAX_PIPELINE);
        self.pipeline = want
            .clamp(MIN_PIPELINE, cap)
            .max(self.pipeline.min(cap) / 2);
        self.rate_window = (now, total);
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
        self.rejects_sent = 0;
        self.hash_requests = 0;
        let now_ms = self.t.ctx.clock.now_ms();
        let silent = now_ms.saturating_sub(self.info.last_recv.load(Ordering::Relaxed));
        if silent > SILENCE_TIMEOUT.as_millis() as u64 {
            return Err(PeerError::Silent(silent / 1000));
        }
        if let Some(stalled) = self.info.stalled_for(now_ms)
            && stalled > WRITE_STALL_TIMEOUT.as_millis() as u64
        {
            return Err(PeerError::Stalled(stalled / 1000));
        }
        let idle_send = now_ms.saturating_sub(self.info.last_send.load(Ordering::Relaxed));
        if idle_send >= KEEPALIVE_INTERVAL.as_millis() as u64 {
            self.send(Message::KeepAlive);
        }
        let now = Instant::now();
        if !self.in_flight.is_empty() && now.duration_since(self.last_piece_at) > SNUB_TIMEOUT {
            // snubbed: let other peers fetch these blocks
            self.info.snubbed.store(true, Ordering::Relaxed);
            self.release_all();
            self.last_piece_at = now;
        }
        Ok(())
    }

    /// After a burst of messages or an order: top up our requests.
    fn after_batch(&mut self) {
        if !self.info.am_interested.load(Ordering::Relaxed) || !self.t.accepting() {
            return;
        }
        let choked = self.info.peer_choking.load(Ordering::Relaxed);
        if (choked && self.peer_allowed.is_empty()) || self.rejects >= MAX_REJECTS_UNCHOKED {
            return;
        }
        let cap = (self.reqq as usize).min(MAX_PIPELINE);
        let target = if choked {
            ALLOWED_FAST_PIPELINE.min(cap)
        } else {
            self.pipeline.min(cap)
        };
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
        if choked {
            // BEP 6: only the pieces the peer allows while it chokes us
            let mut allowed = Bitfield::new(self.n);
            for &p in &self.peer_allowed {
                if self.bitfield.get(p) {
                    allowed.set(p);
                }
            }
            self.t
                .picker()
                .pick(self.key, &allowed, in_flight, room, &mut self.picks);
            if self.picks.is_empty() {
                return;
            }
        } else {
            self.t
                .picker()
                .pick(self.key, &self.bitfield, in_flight, room, &mut self.picks);
        }
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

    /// Give the picker back what this connection held: requests and availability.
    pub fn cleanup(&mut self) {
        if !self.in_picker && self.in_flight.is_empty() {
            return;
        }
        let mut pk = self.t.picker();
        for b in self.in_flight.drain(..) {
            pk.release(&b);
        }
        if self.in_picker {
            pk.peer_gone(self.key, &self.bitfield);
            self.in_picker = false;
        }
    }
}

async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at).await;
    }
}
