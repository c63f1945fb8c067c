//! BEP 9 metadata exchange (`ut_metadata` over BEP 10): the message codec and the
//! assembly of an info dictionary from 16 KiB pieces sent by several peers.
//!
//! Messages are a bencoded dictionary `{msg_type, piece[, total_size]}`, followed for
//! `data` (msg_type 1) by the piece's bytes. [`parse`] checks every field's type and range
//! and never panics. [`Assembly`] holds the pieces received so far (never more than the
//! size it was created with, which the caller caps), checks each piece's length and the
//! `total_size` against that size, and verifies the SHA-1 of the whole against the info
//! hash.

use bytes::Bytes;
use thiserror::Error;

use crate::bencode;
use crate::metainfo::InfoHash;

/// Bytes per metadata piece (BEP 9); the last piece may be shorter.
pub const METADATA_PIECE: u32 = 16 * 1024;

/// One `ut_metadata` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataMsg {
    /// msg_type 0: send me piece `piece`.
    Request {
        /// Piece index.
        piece: u32,
    },
    /// msg_type 1: piece `piece` of an info dictionary of `total_size` bytes.
    Data {
        /// Piece index.
        piece: u32,
        /// `total_size` as sent (checked against the expected size by [`Assembly`]).
        total_size: i64,
        /// The piece's bytes.
        data: Bytes,
    },
    /// msg_type 2: I will not send piece `piece`.
    Reject {
        /// Piece index.
        piece: u32,
    },
}

/// A `ut_metadata` exchange that went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MetadataError {
    /// Not a bencoded dictionary.
    #[error("ut_metadata message is not a bencoded dictionary: {0}")]
    NotADict(String),
    /// `msg_type` missing, not an integer or unknown.
    #[error("ut_metadata message has no known msg_type")]
    BadType,
    /// `piece` missing, negative or too large.
    #[error("ut_metadata message has no valid piece index")]
    BadPiece,
    /// `total_size` missing or different from the peer's `metadata_size`, or a piece of the
    /// wrong length.
    #[error(
        "ut_metadata data: total_size / piece size disagree with the advertised metadata_size ({0})"
    )]
    SizeMismatch(String),
    /// A piece index past the end of the info dictionary.
    #[error("ut_metadata data: piece {piece} is outside the {count} pieces of the metadata")]
    PieceOutOfRange {
        /// The index sent.
        piece: u32,
        /// Pieces of the metadata.
        count: u32,
    },
}

/// Decode a `ut_metadata` payload (after the extended message id).
///
/// # Errors
/// [`MetadataError`] for anything but a well-formed request, data or reject.
pub fn parse(payload: &Bytes) -> Result<MetadataMsg, MetadataError> {
    let (v, used) =
        bencode::decode_prefix(payload).map_err(|e| MetadataError::NotADict(e.to_string()))?;
    let d = v
        .as_dict()
        .ok_or_else(|| MetadataError::NotADict("not a dictionary".into()))?;
    let piece = d
        .get_int(b"piece")
        .and_then(|p| u32::try_from(p).ok())
        .ok_or(MetadataError::BadPiece)?;
    match d.get_int(b"msg_type") {
        Some(0) => Ok(MetadataMsg::Request { piece }),
        Some(1) => Ok(MetadataMsg::Data {
            piece,
            total_size: d.get_int(b"total_size").unwrap_or(-1),
            data: payload.slice(used..),
        }),
        Some(2) => Ok(MetadataMsg::Reject { piece }),
        _ => Err(MetadataError::BadType),
    }
}

fn dict_prefix(msg_type: u8, piece: u32, total_size: Option<u32>) -> Vec<u8> {
    // keys in sorted order: msg_type, piece, total_size
    let mut out = format!("d8:msg_typei{msg_type}e5:piecei{piece}e").into_bytes();
    if let Some(t) = total_size {
        out.extend_from_slice(format!("10:total_sizei{t}e").as_bytes());
    }
    out.push(b'e');
    out
}

/// A request for piece `piece`.
pub fn encode_request(piece: u32) -> Bytes {
    Bytes::from(dict_prefix(0, piece, None))
}

/// A reject of piece `piece`.
pub fn encode_reject(piece: u32) -> Bytes {
    Bytes::from(dict_prefix(2, piece, None))
}

/// Piece `piece` of `info` (the whole info dictionary), or `None` when out of range.
pub fn encode_data(info: &[u8], piece: u32) -> Option<Bytes> {
    let start = piece as usize * METADATA_PIECE as usize;
    if start >= info.len() {
        return None;
    }
    let end = (start + METADATA_PIECE as usize).min(info.len());
    let mut out = dict_prefix(1, piece, Some(info.len() as u32));
    out.extend_from_slice(&info[start..end]);
    Some(Bytes::from(out))
}

/// Metadata pieces in an info dictionary of `size` bytes.
pub fn piece_count(size: u32) -> u32 {
    size.div_ceil(METADATA_PIECE)
}

/// What a data message did to an [`Assembly`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Stored; `have` of `of` pieces now.
    Stored {
        /// Pieces held.
        have: u32,
        /// Pieces in all.
        of: u32,
    },
    /// A piece we already had (ignored).
    Duplicate,
    /// The last piece arrived and the whole hashes to the info hash (and to the v2 info
    /// hash, when one was given): the info dictionary.
    Complete(Vec<u8>),
    /// Every piece arrived but the whole does not hash to the info hash; the pieces are
    /// dropped (the assembly starts over).
    HashMismatch,
}

/// An info dictionary being put together from its pieces.
#[derive(Debug)]
pub struct Assembly {
    info_hash: InfoHash,
    /// The v2 info hash (BEP 52) the whole must also hash to (SHA-256), when known.
    info_hash_v2: Option<[u8; 32]>,
    size: u32,
    pieces: Vec<Option<Box<[u8]>>>,
    have: u32,
}

impl Assembly {
    /// An empty assembly of an info dictionary of `size` bytes (1 ..= the caller's cap:
    /// see [`crate::peer::extension::ExtHandshake::metadata_size`]). Memory grows only as
    /// pieces arrive.
    pub fn new(info_hash: InfoHash, size: u32) -> Assembly {
        let n = piece_count(size.max(1));
        Assembly {
            info_hash,
            info_hash_v2: None,
            size: size.max(1),
            pieces: (0..n).map(|_| None).collect(),
            have: 0,
        }
    }

    /// This assembly, checked against the v2 info hash too (BEP 52: SHA-256 of the whole).
    /// When `info_hash` is that hash cut to 20 bytes (a v2-only magnet link), only the v2
    /// hash is checked.
    #[must_use]
    pub fn with_v2(mut self, info_hash_v2: Option<[u8; 32]>) -> Assembly {
        self.info_hash_v2 = info_hash_v2;
        self
    }

    /// Whether `whole` hashes to the info hash(es) asked for.
    fn verifies(&self, whole: &[u8]) -> bool {
        use sha2::{Digest, Sha256};
        let v2_only = self
            .info_hash_v2
            .is_some_and(|h| InfoHash::truncated(&h) == self.info_hash);
        let v2 = self
            .info_hash_v2
            .is_none_or(|h| <[u8; 32]>::from(Sha256::digest(whole)) == h);
        v2 && (v2_only || InfoHash::of_info_bytes(whole) == self.info_hash)
    }

    /// Size of the info dictionary, bytes.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Pieces in all.
    pub fn piece_count(&self) -> u32 {
        self.pieces.len() as u32
    }

    /// Pieces received.
    pub fn have(&self) -> u32 {
        self.have
    }

    /// Whether piece `p` is still missing.
    pub fn missing(&self, p: u32) -> bool {
        self.pieces.get(p as usize).is_some_and(Option::is_none)
    }

    fn piece_len(&self, p: u32) -> usize {
        let start = p as usize * METADATA_PIECE as usize;
        (self.size as usize - start).min(METADATA_PIECE as usize)
    }

    /// Take piece `piece` of `total_size` bytes in all.
    ///
    /// # Errors
    /// [`MetadataError::SizeMismatch`] when `total_size` is not the assembly's size or the
    /// piece has the wrong length; [`MetadataError::PieceOutOfRange`]. The assembly is
    /// unchanged (the peer is at fault).
    pub fn on_data(
        &mut self,
        piece: u32,
        total_size: i64,
        data: &[u8],
    ) -> Result<Progress, MetadataError> {
        if total_size != i64::from(self.size) {
            return Err(MetadataError::SizeMismatch(format!(
                "total_size {total_size}, metadata_size {}",
                self.size
            )));
        }
        if piece >= self.piece_count() {
            return Err(MetadataError::PieceOutOfRange {
                piece,
                count: self.piece_count(),
            });
        }
        let want = self.piece_len(piece);
        if data.len() != want {
            return Err(MetadataError::SizeMismatch(format!(
                "piece {piece} has {} bytes, {want} expected",
                data.len()
            )));
        }
        let slot = &mut self.pieces[piece as usize];
        if slot.is_some() {
            return Ok(Progress::Duplicate);
        }
        *slot = Some(data.into());
        self.have += 1;
        if self.have < self.piece_count() {
            return Ok(Progress::Stored {
                have: self.have,
                of: self.piece_count(),
            });
        }
        let mut whole = Vec::with_capacity(self.size as usize);
        for p in self.pieces.iter_mut() {
            if let Some(b) = p.take() {
                whole.extend_from_slice(&b);
            }
        }
        self.have = 0;
        if self.verifies(&whole) {
            Ok(Progress::Complete(whole))
        } else {
            Ok(Progress::HashMismatch)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(len: usize) -> Vec<u8> {
        // a bencoded string standing in for an info dictionary (any bytes do for the hash)
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn messages_round_trip() {
        let r = encode_request(5);
        assert_eq!(&r[..], b"d8:msg_typei0e5:piecei5ee");
        assert_eq!(parse(&r), Ok(MetadataMsg::Request { piece: 5 }));
        assert_eq!(
            parse(&encode_reject(2)),
            Ok(MetadataMsg::Reject { piece: 2 })
        );
        let inf = info(40_000);
        let d = encode_data(&inf, 2).unwrap();
        match parse(&d).unwrap() {
            MetadataMsg::Data {
                piece,
                total_size,
                data,
            } => {
                assert_eq!((piece, total_size), (2, 40_000));
                assert_eq!(&data[..], &inf[32_768..]);
            }
            m => panic!("{m:?}"),
        }
        assert!(encode_data(&inf, 3).is_none());
    }

    #[test]
    fn malformed_messages_are_errors() {
        for bad in [
            &b""[..],
            b"le",
            b"d8:msg_typei0ee",
            b"d8:msg_typei9e5:piecei0ee",
            b"d8:msg_type1:x5:piecei0ee",
            b"d8:msg_typei0e5:piecei-1ee",
            b"d8:msg_typei0e5:piecei4294967296ee",
            b"d8:msg_typei0e5:piece",
        ] {
            assert!(parse(&Bytes::copy_from_slice(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn pieces_in_any_order_assemble_and_verify() {
        let inf = info(41_665);
        let ih = InfoHash::of_info_bytes(&inf);
        let mut a = Assembly::new(ih, inf.len() as u32);
        assert_eq!(a.piece_count(), 3);
        let piece = |p: u32| {
            let s = p as usize * 16384;
            inf[s..(s + 16384).min(inf.len())].to_vec()
        };
        assert_eq!(
            a.on_data(2, 41_665, &piece(2)),
            Ok(Progress::Stored { have: 1, of: 3 })
        );
        assert_eq!(a.on_data(2, 41_665, &piece(2)), Ok(Progress::Duplicate));
        a.on_data(0, 41_665, &piece(0)).unwrap();
        assert_eq!(a.on_data(1, 41_665, &piece(1)), Ok(Progress::Complete(inf)));
    }

    #[test]
    fn v2_and_hybrid_metadata_verify_by_their_sha256() {
        use sha2::{Digest, Sha256};
        let inf = info(20_000);
        let v2: [u8; 32] = Sha256::digest(&inf).into();
        let feed = |a: &mut Assembly, data: &[u8]| {
            a.on_data(0, 20_000, &data[..16_384]).unwrap();
            a.on_data(1, 20_000, &data[16_384..]).unwrap()
        };
        // v2-only: known by the cut v2 hash; the SHA-256 decides
        let mut a = Assembly::new(InfoHash::truncated(&v2), 20_000).with_v2(Some(v2));
        assert_eq!(feed(&mut a, &inf), Progress::Complete(inf.clone()));
        let mut wrong = inf.clone();
        wrong[3] ^= 1;
        assert_eq!(feed(&mut a, &wrong), Progress::HashMismatch);
        // hybrid: both must match
        let ih = InfoHash::of_info_bytes(&inf);
        let mut a = Assembly::new(ih, 20_000).with_v2(Some(v2));
        assert_eq!(feed(&mut a, &inf), Progress::Complete(inf.clone()));
        let mut a = Assembly::new(ih, 20_000).with_v2(Some([1; 32]));
        assert_eq!(feed(&mut a, &inf), Progress::HashMismatch);
    }

    #[test]
    fn lies_are_refused_and_a_bad_whole_starts_over() {
        let inf = info(41_665);
        let ih = InfoHash::of_info_bytes(&inf);
        let mut a = Assembly::new(ih, 41_665);
        // another total size, a short or long piece, an index past the end
        assert!(matches!(
            a.on_data(0, 166_660, &inf[..16384]),
            Err(MetadataError::SizeMismatch(_))
        ));
        assert!(a.on_data(0, 41_665, &inf[..100]).is_err());
        assert!(
            a.on_data(2, 41_665, &inf[..16384]).is_err(),
            "last piece is short"
        );
        assert!(matches!(
            a.on_data(3, 41_665, &inf[..1]),
            Err(MetadataError::PieceOutOfRange { .. })
        ));
        assert_eq!(a.have(), 0);
        // a whole that does not hash right
        let mut wrong = inf.clone();
        wrong[5] ^= 1;
        for p in 0..3u32 {
            let s = p as usize * 16384;
            let r = a.on_data(p, 41_665, &wrong[s..(s + 16384).min(wrong.len())]);
            if p == 2 {
                assert_eq!(r, Ok(Progress::HashMismatch));
            }
        }
        assert_eq!(a.have(), 0);
        assert!(a.missing(0) && a.missing(2));
    }
}
