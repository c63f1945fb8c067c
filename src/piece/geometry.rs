//! Piece and block geometry of a payload (BEP 3): one type every layer uses, so the
//! arithmetic (last piece shorter, last block of a piece shorter, offsets in u64) is written
//! once.

use thiserror::Error;

use super::{BLOCK_SIZE, Bitfield, BlockRef};

/// Why a geometry is impossible.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GeometryError {
    /// `piece length` is 0.
    #[error("piece length is 0")]
    ZeroPieceLength,
    /// The piece count does not match `ceil(total_length / piece_length)`.
    #[error(
        "{pieces} piece hashes for {total} bytes in pieces of {piece_length} bytes (expected {expected})"
    )]
    PieceCount {
        /// Pieces given (hashes in the metainfo).
        pieces: u64,
        /// Pieces the length implies.
        expected: u64,
        /// Payload bytes.
        total: u64,
        /// Bytes per piece.
        piece_length: u32,
    },
}

/// How `total_length` payload bytes split into pieces and blocks.
///
/// Every accessor is total: an index past the end gives 0 (sizes) or `None`, never a panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Geometry {
    total_length: u64,
    piece_length: u32,
    piece_count: u32,
    last_piece_length: u32,
}

impl Geometry {
    /// The geometry of `total_length` bytes in pieces of `piece_length` bytes; `piece_count`
    /// must be `ceil(total_length / piece_length)` (the number of hashes in the metainfo).
    ///
    /// # Errors
    /// [`GeometryError`] when `piece_length` is 0 or the count does not match.
    pub fn new(
        total_length: u64,
        piece_length: u32,
        piece_count: u32,
    ) -> Result<Geometry, GeometryError> {
        let expected = Geometry::pieces_for(total_length, piece_length)
            .ok_or(GeometryError::ZeroPieceLength)?;
        if expected != u64::from(piece_count) {
            return Err(GeometryError::PieceCount {
                pieces: u64::from(piece_count),
                expected,
                total: total_length,
                piece_length,
            });
        }
        let last_piece_length = if piece_count == 0 {
            0
        } else {
            (total_length - u64::from(piece_count - 1) * u64::from(piece_length)) as u32
        };
        Ok(Geometry {
            total_length,
            piece_length,
            piece_count,
            last_piece_length,
        })
    }

    /// The number of pieces of `piece_length` bytes that `total_length` bytes fill (the last
    /// one partly): `ceil(total_length / piece_length)`, the count of piece hashes the
    /// metainfo must hold (BEP 3); `None` when `piece_length` is 0.
    #[inline]
    pub fn pieces_for(total_length: u64, piece_length: u32) -> Option<u64> {
        (piece_length > 0).then(|| total_length.div_ceil(u64::from(piece_length)))
    }

    /// Payload bytes (padding files included).
    pub fn total_length(&self) -> u64 {
        self.total_length
    }

    /// Bytes per piece (BEP 3 `piece length`).
    pub fn piece_length(&self) -> u32 {
        self.piece_length
    }

    /// Number of pieces.
    pub fn piece_count(&self) -> u32 {
        self.piece_count
    }

    /// Bytes in the last piece (0 for an empty payload).
    pub fn last_piece_length(&self) -> u32 {
        self.last_piece_length
    }

    /// Bytes in piece `p`; 0 past the end.
    #[inline]
    pub fn piece_size(&self, p: u32) -> u32 {
        if p >= self.piece_count {
            0
        } else if p + 1 == self.piece_count {
            self.last_piece_length
        } else {
            self.piece_length
        }
    }

    /// Payload offset of piece `p`, bytes.
    #[inline]
    pub fn piece_offset(&self, p: u32) -> u64 {
        u64::from(p) * u64::from(self.piece_length)
    }

    /// Payload bytes of piece `p`: `piece_offset(p)..piece_offset(p) + piece_size(p)`
    /// (empty past the end).
    #[inline]
    pub fn piece_range(&self, p: u32) -> std::ops::Range<u64> {
        let start = self.piece_offset(p);
        start..start + u64::from(self.piece_size(p))
    }

    /// Number of blocks in piece `p` (0 past the end).
    #[inline]
    pub fn block_count(&self, p: u32) -> u32 {
        self.piece_size(p).div_ceil(BLOCK_SIZE)
    }

    /// Block `b` of piece `p` (`None` past the end).
    #[inline]
    pub fn block(&self, p: u32, b: u32) -> Option<BlockRef> {
        let size = self.piece_size(p);
        let begin = b.checked_mul(BLOCK_SIZE)?;
        if begin >= size {
            return None;
        }
        Some(BlockRef {
            piece: p,
            begin,
            length: (size - begin).min(BLOCK_SIZE),
        })
    }

    /// Every block of piece `p`, in order.
    pub fn blocks(&self, p: u32) -> impl Iterator<Item = BlockRef> + '_ {
        (0..self.block_count(p)).filter_map(move |b| self.block(p, b))
    }

    /// Whether `b` is exactly one of the blocks of this geometry (a request or piece message
    /// that names anything else is refused).
    #[inline]
    pub fn is_block(&self, b: &BlockRef) -> bool {
        b.begin.is_multiple_of(BLOCK_SIZE)
            && self
                .block(b.piece, b.begin / BLOCK_SIZE)
                .is_some_and(|x| x.length == b.length)
    }

    /// Whether `length` bytes at `begin` lie inside piece `piece` (a looser check than
    /// [`Geometry::is_block`], for serving requests of other sizes).
    #[inline]
    pub fn in_piece(&self, piece: u32, begin: u32, length: u32) -> bool {
        length > 0
            && begin
                .checked_add(length)
                .is_some_and(|end| end <= self.piece_size(piece))
    }

    /// Bytes in the pieces set in `pieces` (a bitfield of `piece_count` bits), in O(1):
    /// whole pieces, with the last piece counted at its own size.
    pub fn bytes_in(&self, pieces: &Bitfield) -> u64 {
        let n = self.piece_count;
        let mut bytes = u64::from(pieces.count().min(n)) * u64::from(self.piece_length);
        if n > 0 && pieces.get(n - 1) {
            bytes -= u64::from(self.piece_length - self.last_piece_length);
        }
        bytes.min(self.total_length)
    }

    /// The pieces that hold any byte of `offset..offset+len` (payload offsets), as an
    /// inclusive-exclusive range of piece indices; empty for `len == 0`.
    pub fn pieces_of_range(&self, offset: u64, len: u64) -> std::ops::Range<u32> {
        if len == 0 || self.piece_count == 0 || offset >= self.total_length {
            return 0..0;
        }
        let pl = u64::from(self.piece_length);
        let first = (offset / pl) as u32;
        let end = offset.saturating_add(len).min(self.total_length);
        let last = ((end - 1) / pl) as u32;
        first..last + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_offsets_and_blocks() {
        let g = Geometry::new(100_000, 32_768, 4).unwrap();
        assert_eq!(g.piece_size(0), 32_768);
        assert_eq!(g.piece_size(3), 100_000 - 3 * 32_768);
        assert_eq!(g.piece_size(4), 0);
        assert_eq!(g.piece_offset(3), 98_304);
        assert_eq!(g.piece_range(0), 0..32_768);
        assert_eq!(g.piece_range(3), 98_304..100_000);
        assert!(g.piece_range(4).is_empty());
        assert_eq!(g.block_count(0), 2);
        assert_eq!(g.block_count(3), 1);
        assert_eq!(g.block(3, 0).unwrap().length, 1_696);
        assert!(g.block(3, 1).is_none());
        assert!(g.block(0, u32::MAX).is_none());
        let total: u64 = (0..4)
            .flat_map(|p| g.blocks(p))
            .map(|b| u64::from(b.length))
            .sum();
        assert_eq!(total, 100_000);
        assert!(g.is_block(&BlockRef {
            piece: 3,
            begin: 0,
            length: 1_696
        }));
        assert!(!g.is_block(&BlockRef {
            piece: 3,
            begin: 0,
            length: 1_697
        }));
        assert!(!g.is_block(&BlockRef {
            piece: 0,
            begin: 1,
            length: 16_384
        }));
        assert!(!g.is_block(&BlockRef {
            piece: 9,
            begin: 0,
            length: 16_384
        }));
        assert!(g.in_piece(0, 100, 200));
        assert!(!g.in_piece(0, u32::MAX, 2));
        assert!(!g.in_piece(0, 0, 0));
    }

    #[test]
    fn piece_length_not_a_multiple_of_the_block() {
        let g = Geometry::new(2 * 270_544 + 1000, 270_544, 3).unwrap();
        assert_eq!(g.block_count(0), 17);
        assert_eq!(g.block(0, 16).unwrap().length, 270_544 - 16 * BLOCK_SIZE);
    }

    #[test]
    fn pieces_for_a_length() {
        assert_eq!(Geometry::pieces_for(100_000, 32_768), Some(4));
        assert_eq!(Geometry::pieces_for(98_304, 32_768), Some(3));
        assert_eq!(Geometry::pieces_for(1, 32_768), Some(1));
        assert_eq!(Geometry::pieces_for(0, 32_768), Some(0));
        assert_eq!(Geometry::pieces_for(u64::MAX, 1), Some(u64::MAX));
        assert_eq!(Geometry::pieces_for(10, 0), None);
    }

    #[test]
    fn invalid_geometry_is_refused() {
        assert_eq!(Geometry::new(10, 0, 1), Err(GeometryError::ZeroPieceLength));
        assert!(Geometry::new(100, 10, 9).is_err());
        assert!(Geometry::new(100, 10, 11).is_err());
        let empty = Geometry::new(0, 16_384, 0).unwrap();
        assert_eq!(empty.piece_size(0), 0);
        assert_eq!(empty.pieces_of_range(0, 10), 0..0);
    }

    #[test]
    fn bytes_in_a_set_of_pieces() {
        let g = Geometry::new(100_000, 32_768, 4).unwrap();
        let mut have = Bitfield::new(4);
        assert_eq!(g.bytes_in(&have), 0);
        have.set(1);
        assert_eq!(g.bytes_in(&have), 32_768);
        have.set(3);
        assert_eq!(
            g.bytes_in(&have),
            32_768 + 1_696,
            "the last piece at its size"
        );
        assert_eq!(g.bytes_in(&Bitfield::full(4)), 100_000);
        let sum: u64 = (0..4)
            .filter(|&p| have.get(p))
            .map(|p| u64::from(g.piece_size(p)))
            .sum();
        assert_eq!(g.bytes_in(&have), sum);
        let empty = Geometry::new(0, 16_384, 0).unwrap();
        assert_eq!(empty.bytes_in(&Bitfield::new(0)), 0);
    }

    #[test]
    fn pieces_of_a_byte_range() {
        let g = Geometry::new(100_000, 32_768, 4).unwrap();
        assert_eq!(g.pieces_of_range(0, 1), 0..1);
        assert_eq!(g.pieces_of_range(32_767, 2), 0..2);
        assert_eq!(g.pieces_of_range(32_768, 32_768), 1..2);
        assert_eq!(g.pieces_of_range(90_000, u64::MAX), 2..4);
        assert_eq!(g.pieces_of_range(100_000, 5), 0..0);
        assert_eq!(g.pieces_of_range(5, 0), 0..0);
    }
}
