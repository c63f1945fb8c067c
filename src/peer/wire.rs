//! The peer wire codec (BEP 3 §peer messages, BEP 10 extended message, BEP 6 ids known,
//! BEP 52 hash request / hashes / hash reject).
//!
//! Messages are `<u32 length><u8 id><payload>` big-endian. The decoder checks the 4-byte
//! length prefix against a cap *before* buffering the payload, so a hostile length costs
//! nothing, and returns piece data as a [`Bytes`] that shares the receive buffer (no copy).

use bytes::{Buf, BufMut, Bytes, BytesMut};
use thiserror::Error;

use crate::metainfo::InfoHash;
pub use crate::piece::{BLOCK_SIZE, BlockRef};

use super::PeerId;

/// The BEP 3 protocol string.
pub const PROTOCOL: &[u8; 19] = b"BitTorrent protocol";
/// Length of a handshake in bytes: 1 + 19 + 8 reserved + 20 info hash + 20 peer id.
pub const HANDSHAKE_LEN: usize = 68;
/// Largest block we serve or accept in a `piece` message (bytes). Requests above are refused.
pub const MAX_BLOCK_SIZE: u32 = 128 * 1024;
/// Smallest message cap, bytes; covers extension messages and BEP 9 metadata pieces.
pub const MIN_MESSAGE_CAP: u32 = 256 * 1024;

/// Reserved bit (byte 5, 0x10) announcing the BEP 10 extension protocol.
pub const RESERVED_EXTENSION: (usize, u8) = (5, 0x10);
/// Reserved bit (byte 7, 0x01) announcing a DHT node (BEP 5): `port` messages welcome.
pub const RESERVED_DHT: (usize, u8) = (7, 0x01);
/// Reserved bit of the fast extension (BEP 6): byte 7, 0x04.
pub const RESERVED_FAST: (usize, u8) = (7, 0x04);
/// Reserved bit (byte 7, 0x10) saying the sender speaks BEP 52 (v2) for a hybrid torrent
/// it names by its v1 info hash; a peer that connects by the v2 hash speaks it anyway.
pub const RESERVED_V2: (usize, u8) = (7, 0x10);

/// Message ids (BEP 3, BEP 5 `port`, BEP 6 fast extension, BEP 10 `extended`).
pub mod id {
    /// BEP 3
    pub const CHOKE: u8 = 0;
    /// BEP 3
    pub const UNCHOKE: u8 = 1;
    /// BEP 3
    pub const INTERESTED: u8 = 2;
    /// BEP 3
    pub const NOT_INTERESTED: u8 = 3;
    /// BEP 3
    pub const HAVE: u8 = 4;
    /// BEP 3
    pub const BITFIELD: u8 = 5;
    /// BEP 3
    pub const REQUEST: u8 = 6;
    /// BEP 3
    pub const PIECE: u8 = 7;
    /// BEP 3
    pub const CANCEL: u8 = 8;
    /// BEP 5 (DHT port)
    pub const PORT: u8 = 9;
    /// BEP 6
    pub const SUGGEST: u8 = 0x0d;
    /// BEP 6
    pub const HAVE_ALL: u8 = 0x0e;
    /// BEP 6
    pub const HAVE_NONE: u8 = 0x0f;
    /// BEP 6
    pub const REJECT: u8 = 0x10;
    /// BEP 6
    pub const ALLOWED_FAST: u8 = 0x11;
    /// BEP 10
    pub const EXTENDED: u8 = 20;
    /// BEP 52
    pub const HASH_REQUEST: u8 = 21;
    /// BEP 52
    pub const HASHES: u8 = 22;
    /// BEP 52
    pub const HASH_REJECT: u8 = 23;
}

/// The common part of the BEP 52 `hash request`, `hashes` and `hash reject` messages:
/// `length` hashes of the level `base_layer` levels above the leaves of the file tree whose
/// root is `pieces_root`, from position `index`, with the uncle hashes of `proof_layers`
/// levels above them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HashRequest {
    /// The file's `pieces root` (SHA-256).
    pub pieces_root: [u8; 32],
    /// Level of the hashes asked for, from the leaves (0: 16 KiB blocks).
    pub base_layer: u32,
    /// Position of the first hash in that level.
    pub index: u32,
    /// Number of hashes.
    pub length: u32,
    /// Levels of uncle hashes wanted above them (to verify them against the root).
    pub proof_layers: u32,
}

/// Bytes of a [`HashRequest`] on the wire: 32 + 4 × 4.
pub const HASH_REQUEST_LEN: usize = 48;

impl HashRequest {
    fn read(payload: &mut BytesMut) -> HashRequest {
        let mut root = [0u8; 32];
        root.copy_from_slice(&payload[..32]);
        payload.advance(32);
        HashRequest {
            pieces_root: root,
            base_layer: payload.get_u32(),
            index: payload.get_u32(),
            length: payload.get_u32(),
            proof_layers: payload.get_u32(),
        }
    }

    fn write(&self, out: &mut BytesMut) {
        out.put_slice(&self.pieces_root);
        out.put_u32(self.base_layer);
        out.put_u32(self.index);
        out.put_u32(self.length);
        out.put_u32(self.proof_layers);
    }
}

/// One decoded peer message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// Zero-length message; keeps the connection open.
    KeepAlive,
    /// We will not serve your requests.
    Choke,
    /// We will serve your requests.
    Unchoke,
    /// We want pieces you have.
    Interested,
    /// We want nothing from you.
    NotInterested,
    /// The sender completed and verified a piece.
    Have(u32),
    /// The sender's pieces, raw payload (validated against the piece count elsewhere).
    Bitfield(Bytes),
    /// Ask for a block.
    Request(BlockRef),
    /// A block of data: `data.len()` is the block length.
    Piece {
        /// Piece index.
        piece: u32,
        /// Byte offset within the piece.
        begin: u32,
        /// Block bytes, sharing the receive buffer.
        data: Bytes,
    },
    /// Withdraw a request.
    Cancel(BlockRef),
    /// The sender's DHT port (BEP 5).
    Port(u16),
    /// BEP 6 have-all.
    HaveAll,
    /// BEP 6 have-none.
    HaveNone,
    /// BEP 6 reject-request.
    Reject(BlockRef),
    /// BEP 6 suggest-piece: the sender would like us to download this piece.
    Suggest(u32),
    /// BEP 6 allowed-fast: we may request this piece even while choked.
    AllowedFast(u32),
    /// BEP 52: send hashes of a file's Merkle tree.
    HashRequest(HashRequest),
    /// BEP 52: the hashes asked for (`req.length` of them, then the uncle hashes), 32 bytes
    /// each, sharing the receive buffer.
    Hashes {
        /// The request answered.
        req: HashRequest,
        /// The hashes, back to back (a multiple of 32 bytes).
        hashes: Bytes,
    },
    /// BEP 52: the request will not be answered.
    HashReject(HashRequest),
    /// BEP 10 extended message: `ext_id` 0 is the extension handshake.
    Extended {
        /// Extended message id (0 = handshake).
        ext_id: u8,
        /// Bencoded dictionary, possibly followed by raw data.
        payload: Bytes,
    },
    /// A message id we do not act on (BEP 6 suggest/allowed-fast, unknown ids): ignored.
    Unknown {
        /// The message id.
        id: u8,
    },
}

/// A protocol violation by the remote peer. Every variant means: drop the connection.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// The length prefix is above the cap; refused before buffering the payload.
    #[error(
        "message length {len} exceeds the maximum of {max} bytes; disconnect before buffering the payload"
    )]
    TooLong {
        /// Declared length.
        len: u32,
        /// Our cap for this torrent.
        max: u32,
    },
    /// A fixed-size message with the wrong payload size.
    #[error("{name} message has a {got}-byte payload, expected {expected}")]
    BadLength {
        /// Message name, e.g. `"have"`.
        name: &'static str,
        /// Payload bytes received.
        got: usize,
        /// Payload bytes required.
        expected: usize,
    },
    /// A `piece` message shorter than its 8-byte header.
    #[error("piece message is too short ({got} bytes)")]
    ShortPiece {
        /// Payload bytes received.
        got: usize,
    },
    /// The handshake does not start with the BEP 3 protocol string.
    #[error("not a BitTorrent handshake (protocol string mismatch)")]
    NotBitTorrent,
}

/// Message-length cap for a torrent of `piece_count` pieces: room for its bitfield and for the
/// largest block we accept, never below [`MIN_MESSAGE_CAP`].
pub fn message_cap(piece_count: u32) -> u32 {
    let bitfield = crate::piece::Bitfield::byte_len(piece_count) as u32 + 1;
    bitfield.max(MAX_BLOCK_SIZE + 9).max(MIN_MESSAGE_CAP)
}

/// Decode one message from the front of `buf`, consuming it.
///
/// Returns `Ok(None)` when more bytes are needed; in that case it reserves room in `buf`
/// for the rest of the message (bounded by `max_len`) so the next read can fill it.
///
/// # Errors
/// [`WireError`] for a length over `max_len` or a malformed fixed-size message.
pub fn decode(buf: &mut BytesMut, max_len: u32) -> Result<Option<Message>, WireError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if len > max_len {
        return Err(WireError::TooLong { len, max: max_len });
    }
    let total = 4 + len as usize;
    if buf.len() < total {
        buf.reserve(total - buf.len());
        return Ok(None);
    }
    buf.advance(4);
    if len == 0 {
        return Ok(Some(Message::KeepAlive));
    }
    let id = buf[0];
    buf.advance(1);
    let mut payload = buf.split_to(len as usize - 1);
    let fixed = |name: &'static str, expected: usize, got: usize| {
        if got == expected {
            Ok(())
        } else {
            Err(WireError::BadLength {
                name,
                got,
                expected,
            })
        }
    };
    let n = payload.len();
    let msg = match id {
        id::CHOKE => fixed("choke", 0, n).map(|_| Message::Choke)?,
        id::UNCHOKE => fixed("unchoke", 0, n).map(|_| Message::Unchoke)?,
        id::INTERESTED => fixed("interested", 0, n).map(|_| Message::Interested)?,
        id::NOT_INTERESTED => fixed("not interested", 0, n).map(|_| Message::NotInterested)?,
        id::HAVE => {
            fixed("have", 4, n)?;
            Message::Have(payload.get_u32())
        }
        id::BITFIELD => Message::Bitfield(payload.freeze()),
        id::REQUEST | id::CANCEL | id::REJECT => {
            let name = match id {
                id::REQUEST => "request",
                id::CANCEL => "cancel",
                _ => "reject",
            };
            fixed(name, 12, n)?;
            let block = BlockRef {
                piece: payload.get_u32(),
                begin: payload.get_u32(),
                length: payload.get_u32(),
            };
            match id {
                id::REQUEST => Message::Request(block),
                id::CANCEL => Message::Cancel(block),
                _ => Message::Reject(block),
            }
        }
        id::PIECE => {
            if n < 8 {
                return Err(WireError::ShortPiece { got: n });
            }
            let piece = payload.get_u32();
            let begin = payload.get_u32();
            Message::Piece {
                piece,
                begin,
                data: payload.freeze(),
            }
        }
        id::PORT => {
            fixed("port", 2, n)?;
            Message::Port(payload.get_u16())
        }
        id::SUGGEST => {
            fixed("suggest", 4, n)?;
            Message::Suggest(payload.get_u32())
        }
        id::ALLOWED_FAST => {
            fixed("allowed fast", 4, n)?;
            Message::AllowedFast(payload.get_u32())
        }
        id::HAVE_ALL => fixed("have all", 0, n).map(|_| Message::HaveAll)?,
        id::HAVE_NONE => fixed("have none", 0, n).map(|_| Message::HaveNone)?,
        id::HASH_REQUEST | id::HASH_REJECT => {
            let name = if id == id::HASH_REQUEST {
                "hash request"
            } else {
                "hash reject"
            };
            fixed(name, HASH_REQUEST_LEN, n)?;
            let req = HashRequest::read(&mut payload);
            if id == id::HASH_REQUEST {
                Message::HashRequest(req)
            } else {
                Message::HashReject(req)
            }
        }
        id::HASHES => {
            if n < HASH_REQUEST_LEN || !(n - HASH_REQUEST_LEN).is_multiple_of(32) {
                return Err(WireError::BadLength {
                    name: "hashes",
                    got: n,
                    expected: HASH_REQUEST_LEN + 32 * ((n.saturating_sub(HASH_REQUEST_LEN)) / 32),
                });
            }
            let req = HashRequest::read(&mut payload);
            Message::Hashes {
                req,
                hashes: payload.freeze(),
            }
        }
        id::EXTENDED => {
            if n < 1 {
                return Err(WireError::BadLength {
                    name: "extended",
                    got: n,
                    expected: 1,
                });
            }
            let ext_id = payload.get_u8();
            Message::Extended {
                ext_id,
                payload: payload.freeze(),
            }
        }
        other => Message::Unknown { id: other },
    };
    Ok(Some(msg))
}

impl Message {
    /// Append the wire form of this message to `out`.
    pub fn encode(&self, out: &mut BytesMut) {
        fn header(out: &mut BytesMut, len: usize, id: u8) {
            out.put_u32(len as u32 + 1);
            out.put_u8(id);
        }
        fn block(out: &mut BytesMut, id: u8, b: &BlockRef) {
            header(out, 12, id);
            out.put_u32(b.piece);
            out.put_u32(b.begin);
            out.put_u32(b.length);
        }
        match self {
            Message::KeepAlive => out.put_u32(0),
            Message::Choke => header(out, 0, id::CHOKE),
            Message::Unchoke => header(out, 0, id::UNCHOKE),
            Message::Interested => header(out, 0, id::INTERESTED),
            Message::NotInterested => header(out, 0, id::NOT_INTERESTED),
            Message::Have(i) => {
                header(out, 4, id::HAVE);
                out.put_u32(*i);
            }
            Message::Bitfield(b) => {
                header(out, b.len(), id::BITFIELD);
                out.put_slice(b);
            }
            Message::Request(b) => block(out, id::REQUEST, b),
            Message::Cancel(b) => block(out, id::CANCEL, b),
            Message::Reject(b) => block(out, id::REJECT, b),
            Message::Piece { piece, begin, data } => {
                header(out, 8 + data.len(), id::PIECE);
                out.put_u32(*piece);
                out.put_u32(*begin);
                out.put_slice(data);
            }
            Message::Port(p) => {
                header(out, 2, id::PORT);
                out.put_u16(*p);
            }
            Message::Suggest(i) => {
                header(out, 4, id::SUGGEST);
                out.put_u32(*i);
            }
            Message::AllowedFast(i) => {
                header(out, 4, id::ALLOWED_FAST);
                out.put_u32(*i);
            }
            Message::HaveAll => header(out, 0, id::HAVE_ALL),
            Message::HaveNone => header(out, 0, id::HAVE_NONE),
            Message::HashRequest(r) => {
                header(out, HASH_REQUEST_LEN, id::HASH_REQUEST);
                r.write(out);
            }
            Message::HashReject(r) => {
                header(out, HASH_REQUEST_LEN, id::HASH_REJECT);
                r.write(out);
            }
            Message::Hashes { req, hashes } => {
                header(out, HASH_REQUEST_LEN + hashes.len(), id::HASHES);
                req.write(out);
                out.put_slice(hashes);
            }
            Message::Extended { ext_id, payload } => {
                header(out, 1 + payload.len(), id::EXTENDED);
                out.put_u8(*ext_id);
                out.put_slice(payload);
            }
            Message::Unknown { id } => header(out, 0, *id),
        }
    }
}

/// Write only the 13-byte header of a `piece` message (length, id, index, begin) for a block
/// of `len` bytes; the caller sends the block bytes after it without copying them.
pub fn piece_header(piece: u32, begin: u32, len: u32) -> [u8; 13] {
    let mut h = [0u8; 13];
    h[..4].copy_from_slice(&(len + 9).to_be_bytes());
    h[4] = id::PIECE;
    h[5..9].copy_from_slice(&piece.to_be_bytes());
    h[9..13].copy_from_slice(&begin.to_be_bytes());
    h
}

/// The 68-byte BEP 3 handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    /// Reserved bytes (extension bits, BEP 4).
    pub reserved: [u8; 8],
    /// Torrent the connection is for.
    pub info_hash: InfoHash,
    /// The sender's peer id.
    pub peer_id: PeerId,
}

impl Handshake {
    /// Our handshake: the BEP 10 extension and BEP 6 fast bits set.
    pub fn ours(info_hash: InfoHash, peer_id: PeerId) -> Handshake {
        let mut reserved = [0u8; 8];
        reserved[RESERVED_EXTENSION.0] |= RESERVED_EXTENSION.1;
        reserved[RESERVED_FAST.0] |= RESERVED_FAST.1;
        Handshake {
            reserved,
            info_hash,
            peer_id,
        }
    }

    /// Whether the sender supports the BEP 10 extension protocol.
    pub fn supports_extensions(&self) -> bool {
        self.reserved[RESERVED_EXTENSION.0] & RESERVED_EXTENSION.1 != 0
    }

    /// This handshake with the BEP 5 DHT bit set (`on`) or cleared.
    #[must_use]
    pub fn with_dht(mut self, on: bool) -> Handshake {
        if on {
            self.reserved[RESERVED_DHT.0] |= RESERVED_DHT.1;
        } else {
            self.reserved[RESERVED_DHT.0] &= !RESERVED_DHT.1;
        }
        self
    }

    /// Whether the sender runs a DHT node (BEP 5 reserved bit): it accepts our `port`.
    pub fn supports_dht(&self) -> bool {
        self.reserved[RESERVED_DHT.0] & RESERVED_DHT.1 != 0
    }

    /// This handshake with the BEP 52 reserved bit set (`on`) or cleared: we speak v2 for
    /// the hybrid torrent it names by its v1 hash.
    #[must_use]
    pub fn with_v2(mut self, on: bool) -> Handshake {
        if on {
            self.reserved[RESERVED_V2.0] |= RESERVED_V2.1;
        } else {
            self.reserved[RESERVED_V2.0] &= !RESERVED_V2.1;
        }
        self
    }

    /// Whether the sender set the BEP 52 reserved bit (it speaks v2).
    pub fn supports_v2(&self) -> bool {
        self.reserved[RESERVED_V2.0] & RESERVED_V2.1 != 0
    }

    /// Whether the sender supports the BEP 6 fast extension (both sides must, for its
    /// messages to be used).
    pub fn supports_fast(&self) -> bool {
        self.reserved[RESERVED_FAST.0] & RESERVED_FAST.1 != 0
    }

    /// Wire form, 68 bytes.
    pub fn to_bytes(&self) -> [u8; HANDSHAKE_LEN] {
        let mut b = [0u8; HANDSHAKE_LEN];
        b[0] = 19;
        b[1..20].copy_from_slice(PROTOCOL);
        b[20..28].copy_from_slice(&self.reserved);
        b[28..48].copy_from_slice(&self.info_hash.0);
        b[48..68].copy_from_slice(&self.peer_id.0);
        b
    }

    /// Parse the first 48 bytes (everything up to the peer id): the info hash is needed to
    /// pick the torrent before we answer an incoming connection.
    ///
    /// # Errors
    /// [`WireError::NotBitTorrent`] when the protocol string does not match.
    pub fn parse_prefix(b: &[u8; 48]) -> Result<([u8; 8], InfoHash), WireError> {
        if b[0] != 19 || &b[1..20] != PROTOCOL {
            return Err(WireError::NotBitTorrent);
        }
        let mut reserved = [0u8; 8];
        reserved.copy_from_slice(&b[20..28]);
        let mut ih = [0u8; 20];
        ih.copy_from_slice(&b[28..48]);
        Ok((reserved, InfoHash(ih)))
    }

    /// Parse a full 68-byte handshake.
    ///
    /// # Errors
    /// [`WireError::NotBitTorrent`] when the protocol string does not match.
    pub fn parse(b: &[u8; HANDSHAKE_LEN]) -> Result<Handshake, WireError> {
        let mut prefix = [0u8; 48];
        prefix.copy_from_slice(&b[..48]);
        let (reserved, info_hash) = Handshake::parse_prefix(&prefix)?;
        let mut pid = [0u8; 20];
        pid.copy_from_slice(&b[48..68]);
        Ok(Handshake {
            reserved,
            info_hash,
            peer_id: PeerId(pid),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(m: Message) {
        let mut buf = BytesMut::new();
        m.encode(&mut buf);
        let got = decode(&mut buf, MIN_MESSAGE_CAP).unwrap().unwrap();
        assert_eq!(got, m);
        assert!(buf.is_empty());
    }

    #[test]
    fn every_message_roundtrips() {
        let b = BlockRef {
            piece: 7,
            begin: 16384,
            length: 16384,
        };
        for m in [
            Message::KeepAlive,
            Message::Choke,
            Message::Unchoke,
            Message::Interested,
            Message::NotInterested,
            Message::Have(42),
            Message::Bitfield(Bytes::from_static(&[0xff, 0x80])),
            Message::Request(b),
            Message::Cancel(b),
            Message::Reject(b),
            Message::Piece {
                piece: 1,
                begin: 0,
                data: Bytes::from(vec![9u8; 100]),
            },
            Message::Port(6881),
            Message::HaveAll,
            Message::HaveNone,
            Message::HashRequest(HashRequest {
                pieces_root: [7; 32],
                base_layer: 2,
                index: 512,
                length: 512,
                proof_layers: 9,
            }),
            Message::HashReject(HashRequest {
                pieces_root: [1; 32],
                base_layer: 0,
                index: 0,
                length: 2,
                proof_layers: 0,
            }),
            Message::Hashes {
                req: HashRequest {
                    pieces_root: [3; 32],
                    base_layer: 1,
                    index: 0,
                    length: 2,
                    proof_layers: 1,
                },
                hashes: Bytes::from(vec![5u8; 96]),
            },
            Message::Extended {
                ext_id: 0,
                payload: Bytes::from_static(b"de"),
            },
        ] {
            roundtrip(m);
        }
    }

    #[test]
    fn partial_input_waits() {
        let mut full = BytesMut::new();
        Message::Have(3).encode(&mut full);
        for cut in 0..full.len() {
            let mut part = BytesMut::from(&full[..cut]);
            assert_eq!(decode(&mut part, MIN_MESSAGE_CAP).unwrap(), None);
            assert_eq!(part.len(), cut, "nothing consumed on partial input");
        }
    }

    #[test]
    fn huge_length_refused_on_prefix_alone() {
        let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0xf0][..]);
        let err = decode(&mut buf, message_cap(10)).unwrap_err();
        assert!(matches!(
            err,
            WireError::TooLong {
                len: 4294967280,
                ..
            }
        ));
        assert!(buf.capacity() < 1 << 20, "no buffer sized from the prefix");
    }

    #[test]
    fn fixed_size_messages_checked() {
        for (id, len) in [
            (id::HAVE, 3usize),
            (id::HAVE, 5),
            (id::CHOKE, 1),
            (id::REQUEST, 11),
            (id::CANCEL, 13),
            (id::PORT, 1),
        ] {
            let mut buf = BytesMut::new();
            buf.put_u32(len as u32 + 1);
            buf.put_u8(id);
            buf.put_bytes(0, len);
            assert!(
                matches!(
                    decode(&mut buf, MIN_MESSAGE_CAP),
                    Err(WireError::BadLength { .. })
                ),
                "id {id} len {len}"
            );
        }
        let mut buf = BytesMut::new();
        buf.put_u32(5);
        buf.put_u8(id::PIECE);
        buf.put_u32(0);
        assert!(matches!(
            decode(&mut buf, MIN_MESSAGE_CAP),
            Err(WireError::ShortPiece { got: 4 })
        ));
    }

    #[test]
    fn cap_fits_large_bitfields() {
        // 600000 pieces -> 75000-byte bitfield must fit
        assert!(message_cap(600_000) >= 75_001);
        assert!(message_cap(10) >= MAX_BLOCK_SIZE + 9);
        // a cap far above any legit bitfield does not grow unbounded
        assert!(message_cap(u32::MAX) <= (u32::MAX / 8) + 2);
    }

    #[test]
    fn unknown_ids_are_skipped_not_fatal() {
        let mut buf = BytesMut::new();
        buf.put_u32(3);
        buf.put_u8(0x42);
        buf.put_u16(7);
        Message::Have(1).encode(&mut buf);
        assert_eq!(
            decode(&mut buf, MIN_MESSAGE_CAP).unwrap(),
            Some(Message::Unknown { id: 0x42 })
        );
        assert_eq!(
            decode(&mut buf, MIN_MESSAGE_CAP).unwrap(),
            Some(Message::Have(1))
        );
    }

    #[test]
    fn handshake_roundtrip_and_validation() {
        let h = Handshake::ours(InfoHash([7; 20]), PeerId([b'a'; 20]));
        let b = h.to_bytes();
        assert_eq!(Handshake::parse(&b).unwrap(), h);
        assert!(h.supports_extensions());
        assert!(!h.supports_dht());
        let d = h.with_dht(true);
        assert!(d.supports_dht() && d.supports_extensions() && d.supports_fast());
        // byte 7: the DHT bit (BEP 5) beside the fast bit (BEP 6)
        assert_eq!(d.to_bytes()[20 + 7], 0x01 | 0x04);
        assert_eq!(Handshake::parse(&d.to_bytes()).unwrap(), d);
        assert_eq!(d.with_dht(false), h);
        let mut bad = b;
        bad[3] = b'X';
        assert_eq!(Handshake::parse(&bad), Err(WireError::NotBitTorrent));
    }

    #[test]
    fn piece_header_matches_encoder() {
        let data = Bytes::from(vec![1u8; 16384]);
        let mut buf = BytesMut::new();
        Message::Piece {
            piece: 3,
            begin: 32768,
            data: data.clone(),
        }
        .encode(&mut buf);
        assert_eq!(&buf[..13], &piece_header(3, 32768, 16384));
    }
}

/// Pieces in the allowed-fast set we give a peer (BEP 6 suggests 10).
pub const ALLOWED_FAST_COUNT: usize = 10;

/// The allowed-fast set (BEP 6 §allowed fast) of a peer at `ip` for a torrent of
/// `piece_count` pieces: `k` piece indices derived from the peer's /24 and the info hash,
/// so a peer reconnecting from a neighbouring address gets the same set. Every piece when
/// the torrent has no more than `k`. IPv6 peers get none (the BEP defines IPv4 only).
pub fn allowed_fast_set(
    ip: std::net::IpAddr,
    info_hash: &InfoHash,
    piece_count: u32,
    k: usize,
) -> Vec<u32> {
    use sha1::{Digest, Sha1};
    let ip = match ip {
        std::net::IpAddr::V4(v4) => v4,
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4,
            None => return Vec::new(),
        },
    };
    if piece_count as usize <= k {
        return (0..piece_count).collect();
    }
    let masked = u32::from(ip) & 0xffff_ff00;
    let mut x: Vec<u8> = masked.to_be_bytes().to_vec();
    x.extend_from_slice(&info_hash.0);
    let mut out: Vec<u32> = Vec::with_capacity(k);
    while out.len() < k {
        let h: [u8; 20] = Sha1::digest(&x).into();
        for i in 0..5 {
            if out.len() >= k {
                break;
            }
            let y = u32::from_be_bytes([h[4 * i], h[4 * i + 1], h[4 * i + 2], h[4 * i + 3]]);
            let index = y % piece_count;
            if !out.contains(&index) {
                out.push(index);
            }
        }
        x = h.to_vec();
    }
    out
}

#[cfg(test)]
mod fast_tests {
    use super::*;

    #[test]
    fn allowed_fast_matches_the_bep_example() {
        // BEP 6's worked example: 80.4.4.200, info hash of 0xaa bytes, 1313 pieces
        let ih = InfoHash([0xaa; 20]);
        let ip: std::net::IpAddr = "80.4.4.200".parse().unwrap();
        assert_eq!(
            allowed_fast_set(ip, &ih, 1313, 7),
            vec![1059, 431, 808, 1217, 287, 376, 1188]
        );
        assert_eq!(
            allowed_fast_set(ip, &ih, 1313, 9),
            vec![1059, 431, 808, 1217, 287, 376, 1188, 353, 508]
        );
        // the same /24 gets the same set; small torrents give every piece; v6 none
        let near: std::net::IpAddr = "80.4.4.1".parse().unwrap();
        assert_eq!(
            allowed_fast_set(near, &ih, 1313, 7),
            allowed_fast_set(ip, &ih, 1313, 7)
        );
        assert_eq!(allowed_fast_set(ip, &ih, 5, 10), vec![0, 1, 2, 3, 4]);
        assert!(allowed_fast_set("::1".parse().unwrap(), &ih, 100, 10).is_empty());
    }

    #[test]
    fn fast_messages_round_trip() {
        for m in [
            Message::Suggest(7),
            Message::AllowedFast(9),
            Message::HaveAll,
            Message::HaveNone,
        ] {
            let mut b = BytesMut::new();
            m.encode(&mut b);
            assert_eq!(decode(&mut b, 1 << 20).unwrap(), Some(m));
        }
        let mut b = BytesMut::from(&[0u8, 0, 0, 3, id::ALLOWED_FAST, 1, 2][..]);
        assert!(
            decode(&mut b, 1 << 20).is_err(),
            "allowed fast must be 4 bytes"
        );
        let h = Handshake::ours(InfoHash([1; 20]), crate::peer::PeerId([2; 20]));
        assert!(h.supports_fast() && h.supports_extensions());
    }
}
