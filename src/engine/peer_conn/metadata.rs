//! A connection of a torrent that has no info dictionary yet (a magnet link): it speaks
//! just enough of the protocol to fetch the metadata (BEP 9 over BEP 10) and to learn the
//! peer's listen port. Once the metadata is verified and checked, the torrent sends
//! [`PeerCtrl::Upgrade`] and the connection goes on with the full protocol on the same
//! socket ([`super::handover`]).
//!
//! What the peer says about its pieces meanwhile (bitfield, have, have all, allowed fast,
//! choke, interest, its extension handshake) cannot be checked without the piece count: it
//! is kept in a [`Told`] for the hand-over. Messages are capped at
//! [`MESSAGE_CAP`] bytes, requests we send at [`crate::engine::link::metadata::PER_PEER`],
//! and the peer's own metadata requests are rejected (we have nothing to serve). A peer
//! whose extension handshake has no `metadata_size`, or 0, has none to serve yet: it is
//! kept and asked only once a later handshake announces a size.
//!
//! For a v2-only torrent the connection then asks for the piece layers (BEP 52 `hash
//! request`, [`crate::engine::link::layers`]) when the peer speaks v2; wrong hashes or a
//! flood of answers nobody asked for close it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::handover::{HandOver, Resumed, Told};
use super::{KEEPALIVE_INTERVAL, SILENCE_TIMEOUT};
use crate::engine::link::message::{PeerCtrl, PeerError};
use crate::engine::link::metadata::{DataOutcome, MetadataFetch, REQUEST_TIMEOUT};
use crate::engine::link::peer::PeerInfo;
use crate::engine::link::shared::TorrentShared;
use crate::engine::link::stream::Transport;
use crate::lock::MutexExt;
use crate::peer::extension::{self, OurHandshake, UT_METADATA_ID, UT_PEX_ID};
use crate::peer::metadata::{self, MetadataMsg};
use crate::peer::wire::{self, Handshake, Message};

/// Largest message accepted while fetching metadata, bytes: a bitfield of 8 M pieces, or a
/// metadata piece with its header.
pub const MESSAGE_CAP: u32 = 1 << 20;

/// Run a metadata connection until the torrent hands it over to the full protocol
/// ([`PeerCtrl::Upgrade`] once the metadata is complete and checked: `Ok` with the
/// [`HandOver`]), the peer offers no metadata, it misbehaves, or the torrent closes it.
///
/// # Errors
/// [`PeerError`] saying why it ended (the torrent logs it at debug level).
pub async fn run<T: Transport>(
    fetch: Arc<MetadataFetch>,
    key: u64,
    stream: T,
    info: Arc<PeerInfo>,
    remote: Handshake,
    mut ctrl: mpsc::UnboundedReceiver<PeerCtrl>,
    ours: OurHandshake,
) -> Result<HandOver<T::Reader, T::Writer>, PeerError> {
    if !remote.supports_extensions() {
        return Err(PeerError::Protocol(
            "peer does not speak the extension protocol (BEP 10): it cannot send metadata".into(),
        ));
    }
    let (mut rd, mut wr) = stream.split();
    let mut out = BytesMut::new();
    Message::Extended {
        ext_id: 0,
        payload: extension::encode_handshake(&ours),
    }
    .encode(&mut out);
    // BEP 5: a peer that runs a DHT node learns where ours listens (a magnet link is
    // public until its info dictionary says otherwise)
    if remote.supports_dht()
        && let Some(dht) = fetch.ctx.dht.get()
    {
        Message::Port(dht.local_addr().port()).encode(&mut out);
    }
    wr.write_all(&out).await?;
    wr.flush().await?;
    info.last_send
        .store(fetch.ctx.clock.now_ms(), Ordering::Relaxed);
    out.clear();

    // the peer's ut_metadata id while it announces a size we fetch (we ask it then)
    let mut peer_id: Option<u8> = None;
    // its ut_metadata id, to refuse its own metadata requests
    let mut reject_id: Option<u8> = None;
    let mut in_flight: Vec<(u32, Instant)> = Vec::new();
    // BEP 52: the peer speaks v2 (it named the torrent by its v2 hash, or set the bit)
    let v2_peer = remote.supports_v2()
        || fetch
            .info_hash_v2
            .is_some_and(|v| crate::metainfo::InfoHash::truncated(&v) == remote.info_hash);
    let mut hash_in_flight: Vec<(wire::HashRequest, Instant)> = Vec::new();
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut told = Told::default();
    let result: Result<Arc<TorrentShared>, PeerError> = async {
        loop {
            if buf.capacity() - buf.len() < 16 * 1024 {
                buf.reserve(64 * 1024);
            }
            tokio::select! {
                r = rd.read_buf(&mut buf) => {
                    if r? == 0 {
                        return Err(PeerError::Io(std::io::ErrorKind::UnexpectedEof.into()));
                    }
                    info.last_recv.store(fetch.ctx.clock.now_ms(), Ordering::Relaxed);
                    while let Some(msg) = wire::decode(&mut buf, MESSAGE_CAP)? {
                        info.messages.fetch_add(1, Ordering::Relaxed);
                        let (ext_id, payload) = match msg {
                            Message::Extended { ext_id, payload } => (ext_id, payload),
                            // BEP 5: the peer's DHT node, at its IP
                            Message::Port(p) => {
                                if let Some(dht) = fetch.ctx.dht.get() {
                                    dht.add_node(std::net::SocketAddr::new(info.addr.ip(), p));
                                }
                                continue;
                            }
                            // BEP 52: the piece layers of a v2-only torrent
                            Message::Hashes { req, hashes } => {
                                let before = hash_in_flight.len();
                                hash_in_flight.retain(|(r, _)| *r != req);
                                if fetch
                                    .on_hashes(key, &req, &hashes)
                                    .map_err(|e| PeerError::Protocol(e.to_string()))?
                                    && before == hash_in_flight.len()
                                {
                                    tracing::debug!(peer = %info.addr, "hashes after their request timed out");
                                }
                                continue;
                            }
                            Message::HashReject(req) => {
                                hash_in_flight.retain(|(r, _)| *r != req);
                                fetch
                                    .on_hash_reject(key, &req)
                                    .map_err(|e| PeerError::Protocol(e.to_string()))?;
                                continue;
                            }
                            // nothing to serve yet
                            Message::HashRequest(_) => continue,
                            // availability and state, for the hand-over
                            other => {
                                told.record(&other);
                                continue;
                            }
                        };
                        if ext_id == 0 {
                            let Ok(h) = extension::parse_handshake(&payload) else {
                                return Err(PeerError::Protocol(
                                    "extended handshake is not bencode".into(),
                                ));
                            };
                            told.ext_handshake(payload.clone());
                            if let Some(c) = &h.client {
                                *info.client.locked() =
                                    Some(c.clone());
                            }
                            if let Some(p) = h.listen_port {
                                info.listen_port.store(p, Ordering::Relaxed);
                            }
                            reject_id = h.ut_metadata;
                            if fetch.is_done() {
                                // nothing more to fetch: what it says about metadata no
                                // longer matters
                                peer_id = None;
                                continue;
                            }
                            let size = h
                                .metadata_size(fetch.cap)
                                .map_err(|e| PeerError::Protocol(e.to_string()))?;
                            match (h.ut_metadata, size) {
                                (None, _) => {
                                    return Err(PeerError::Protocol(
                                        "peer does not offer ut_metadata (BEP 9)".into(),
                                    ));
                                }
                                // no size, or 0: it has none to serve yet; keep it, do not
                                // ask it, and look again at its next handshake
                                (Some(_), None) => peer_id = None,
                                (Some(id), Some(size)) => {
                                    if !fetch.offer_size(key, size) {
                                        return Err(PeerError::Protocol(format!(
                                            "peer's metadata_size {size} is not the one being fetched"
                                        )));
                                    }
                                    peer_id = Some(id);
                                }
                            }
                        } else if ext_id == UT_METADATA_ID {
                            match metadata::parse(&payload)
                                .map_err(|e| PeerError::Protocol(e.to_string()))?
                            {
                                MetadataMsg::Request { piece } => {
                                    if let Some(id) = reject_id {
                                        Message::Extended {
                                                ext_id: id,
                                                payload: metadata::encode_reject(piece),
                                            }
.encode(&mut out);
                                    }
                                }
                                MetadataMsg::Reject { piece } => {
                                    in_flight.retain(|(p, _)| *p != piece);
                                    fetch.on_reject(key, piece);
                                }
                                MetadataMsg::Data { piece, total_size, data } => {
                                    in_flight.retain(|(p, _)| *p != piece);
                                    match fetch
                                        .on_data(key, piece, total_size, &data)
                                        .map_err(|e| PeerError::Protocol(e.to_string()))?
                                    {
                                        // done: the connection stays for the hand-over
                                        DataOutcome::More
                                        | DataOutcome::Retry
                                        | DataOutcome::Done => {}
                                        DataOutcome::DropPeer => {
                                            return Err(PeerError::Protocol(
                                                "metadata from this peer failed its hash check".into(),
                                            ));
                                        }
                                    }
                                }
                            }
                        }
                        else if ext_id == UT_PEX_ID {
                            // the peer's first PEX message: kept for the full protocol,
                            // which decides whether to use it (the next comes in 60 s)
                            told.ut_pex(payload);
                        }
                        // other extensions are ignored here
                    }
                }
                c = ctrl.recv() => match c {
                    None => return Err(PeerError::Closed("torrent gone")),
                    Some(PeerCtrl::Disconnect(why)) => return Err(PeerError::Closed(why)),
                    Some(PeerCtrl::Upgrade) => {
                        if let Some(t) = fetch.handed_over() {
                            if !out.is_empty() {
                                wr.write_all(&out).await?;
    wr.flush().await?;
                                out.clear();
                            }
                            return Ok(t);
                        }
                    }
                    Some(PeerCtrl::Tick) => {
                        let now_ms = fetch.ctx.clock.now_ms();
                        let silent = now_ms.saturating_sub(info.last_recv.load(Ordering::Relaxed));
                        if silent > SILENCE_TIMEOUT.as_millis() as u64 {
                            return Err(PeerError::Silent(silent / 1000));
                        }
                        let idle = now_ms.saturating_sub(info.last_send.load(Ordering::Relaxed));
                        if idle >= KEEPALIVE_INTERVAL.as_millis() as u64 {
                            Message::KeepAlive.encode(&mut out);
                        }
                        let now = Instant::now();
                        in_flight.retain(|(_, at)| now.duration_since(*at) < REQUEST_TIMEOUT);
                        hash_in_flight.retain(|(_, at)| {
                            now.duration_since(*at) < crate::engine::link::layers::REQUEST_TIMEOUT
                        });
                    }
                    Some(_) => {}
                },
            }
            if let Some(id) = peer_id {
                let now = Instant::now();
                for piece in fetch.next_requests(key, in_flight.len(), now) {
                    in_flight.push((piece, now));
                    Message::Extended {
                            ext_id: id,
                            payload: metadata::encode_request(piece),
                        }
.encode(&mut out);
                }
            }
            if v2_peer {
                let now = Instant::now();
                for req in fetch.next_hash_requests(key, hash_in_flight.len(), now) {
                    hash_in_flight.push((req, now));
                    Message::HashRequest(req).encode(&mut out);
                }
            }
            if !out.is_empty() {
                wr.write_all(&out).await?;
    wr.flush().await?;
                info.last_send.store(fetch.ctx.clock.now_ms(), Ordering::Relaxed);
                out.clear();
            }
        }
    }
    .await;
    fetch.peer_gone(key);
    let shared = result?;
    Ok(HandOver {
        shared,
        rd,
        wr,
        ctrl,
        resumed: Resumed { told, rest: buf },
    })
}
