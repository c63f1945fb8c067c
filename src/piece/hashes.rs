//! What each piece must hash to: the v1 SHA-1 of the whole piece (BEP 3 `pieces`), the v2
//! SHA-256 Merkle hash of its file's bytes (BEP 52: the piece layer entry, or the file's
//! `pieces root` for a file of one piece or less), or both (a hybrid torrent: a piece is
//! verified when both sides match).
//!
//! v2 lays every file out from a piece boundary, so a piece holds bytes of one file only
//! (then padding up to the next file). [`V2Hashes`] keeps, per file, its first piece, its
//! root and, once known, its piece layer; [`V2Hashes::piece`] says what a piece's leaves
//! must hash to.

use super::BLOCK_SIZE;
use super::merkle::{self, Hash32};

/// One file's v2 hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V2File {
    /// Index of the file in the torrent's file list (padding files included).
    pub file: usize,
    /// Its first piece (the payload is laid out so that it starts a piece).
    pub first_piece: u32,
    /// Length in bytes (> 0: empty files have no tree).
    pub length: u64,
    /// `pieces root`: the root of its Merkle tree.
    pub root: Hash32,
    /// Its piece layer, one hash per piece, when known; always `None` for a file of one
    /// piece or less (its root is its only piece hash). A magnet link's torrent gets the
    /// layers from peers (BEP 52 hash request).
    pub layer: Option<Box<[Hash32]>>,
}

impl V2File {
    /// Pieces the file spans, for `piece_length`-byte pieces.
    pub fn piece_count(&self, piece_length: u32) -> u32 {
        u32::try_from(self.length.div_ceil(u64::from(piece_length))).unwrap_or(u32::MAX)
    }

    /// Whether it needs a piece layer (it is longer than one piece).
    pub fn needs_layer(&self, piece_length: u32) -> bool {
        self.length > u64::from(piece_length)
    }

    /// Levels of its tree above the leaves (its root is there).
    pub fn levels(&self) -> u32 {
        merkle::levels(self.length)
    }
}

/// What one piece's v2 side must hash to (see [`V2Hashes::piece`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V2Piece {
    /// Bytes of the file in the piece, from its start (the rest of the piece is padding).
    pub data_len: u32,
    /// Leaves the piece's subtree is padded to (a power of two).
    pub width: u64,
    /// The hash the subtree must have; `None` while the file's piece layer is unknown.
    pub expected: Option<Hash32>,
}

/// The v2 hashes of a torrent: per file with data, in payload order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct V2Hashes {
    /// Bytes per piece: a power of two of at least 16 KiB.
    pub piece_length: u32,
    /// Files with data (not empty, not padding, not symlinks), in payload order.
    pub files: Vec<V2File>,
}

impl V2Hashes {
    /// Levels from the leaves to the piece layer: `log2(piece_length / 16 KiB)`.
    pub fn piece_level(&self) -> u32 {
        (self.piece_length / BLOCK_SIZE).max(1).trailing_zeros()
    }

    /// The file whose bytes piece `p` holds.
    pub fn file_of_piece(&self, p: u32) -> Option<&V2File> {
        let i = self
            .files
            .partition_point(|f| f.first_piece <= p)
            .checked_sub(1)?;
        let f = &self.files[i];
        (p - f.first_piece < f.piece_count(self.piece_length)).then_some(f)
    }

    /// The file whose `pieces root` is `root`.
    pub fn file_by_root(&self, root: &Hash32) -> Option<&V2File> {
        self.files.iter().find(|f| &f.root == root)
    }

    /// What piece `p` must hash to on its v2 side; `None` for a piece that holds no file
    /// data (nothing to check on this side).
    pub fn piece(&self, p: u32) -> Option<V2Piece> {
        let f = self.file_of_piece(p)?;
        let pl = u64::from(self.piece_length);
        let i = p - f.first_piece;
        let start = u64::from(i) * pl;
        let data_len = (f.length - start).min(pl) as u32;
        if !f.needs_layer(self.piece_length) {
            return Some(V2Piece {
                data_len,
                width: merkle::leaf_count(f.length),
                expected: Some(f.root),
            });
        }
        Some(V2Piece {
            data_len,
            width: u64::from(self.piece_length / BLOCK_SIZE),
            expected: f.layer.as_ref().and_then(|l| l.get(i as usize)).copied(),
        })
    }

    /// Every file that needs a piece layer has it.
    pub fn complete(&self) -> bool {
        self.files
            .iter()
            .all(|f| !f.needs_layer(self.piece_length) || f.layer.is_some())
    }
}

/// What every piece of a torrent must hash to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PieceHashes {
    /// SHA-1 per piece (BEP 3); empty for a v2-only torrent.
    pub v1: Vec<[u8; 20]>,
    /// The v2 side (BEP 52), for v2-only and hybrid torrents.
    pub v2: Option<V2Hashes>,
}

impl PieceHashes {
    /// A v1 torrent's hashes.
    pub fn v1(hashes: Vec<[u8; 20]>) -> PieceHashes {
        PieceHashes {
            v1: hashes,
            v2: None,
        }
    }

    /// Whether pieces have a SHA-1 to match.
    pub fn has_v1(&self) -> bool {
        !self.v1.is_empty()
    }

    /// The SHA-1 piece `p` must have, `None` for a v2-only torrent or an index past the end.
    pub fn sha1(&self, p: u32) -> Option<&[u8; 20]> {
        self.v1.get(p as usize)
    }

    /// What piece `p` must hash to on the v2 side, if the torrent has one and the piece
    /// holds file data.
    pub fn v2_piece(&self, p: u32) -> Option<V2Piece> {
        self.v2.as_ref()?.piece(p)
    }
}

/// Hashes one piece's bytes streamed in order, on every side the torrent has, and says
/// whether they match: SHA-1 over the whole piece (padding included), the v2 Merkle hash
/// over the file's bytes in it. For checking data on disk; received blocks are hashed as
/// they arrive instead (the disk threads).
#[derive(Debug, Clone)]
pub struct PieceVerifier {
    sha1: Option<sha1::Sha1>,
    v2: Option<(merkle::LeafHasher, V2Piece)>,
    fed: u64,
}

impl PieceVerifier {
    /// A verifier for piece `p` of a torrent with `hashes`.
    pub fn new(hashes: &PieceHashes, p: u32) -> PieceVerifier {
        use sha1::Digest;
        PieceVerifier {
            sha1: hashes.has_v1().then(sha1::Sha1::new),
            v2: hashes.v2_piece(p).map(|vp| (merkle::LeafHasher::new(), vp)),
            fed: 0,
        }
    }

    /// Add the piece's next bytes.
    pub fn update(&mut self, data: &[u8]) {
        use sha1::Digest;
        if let Some(h) = &mut self.sha1 {
            h.update(data);
        }
        if let Some((h, vp)) = &mut self.v2 {
            let left = u64::from(vp.data_len).saturating_sub(self.fed);
            let n = (data.len() as u64).min(left) as usize;
            h.update(&data[..n]);
        }
        self.fed += data.len() as u64;
    }

    /// Whether the bytes fed match piece `p`'s hashes on every side.
    pub fn matches(self, hashes: &PieceHashes, p: u32) -> bool {
        use sha1::Digest;
        let v1 = match (self.sha1, hashes.sha1(p)) {
            (Some(h), Some(want)) => h.finalize().as_slice() == want,
            (None, None) => true,
            _ => false,
        };
        let v2 = match self.v2 {
            Some((mut h, vp)) => match vp.expected {
                Some(want) => h.finish(vp.width) == want,
                // the piece layer is not known: the v1 side vouches alone (a hybrid)
                None => hashes.has_v1(),
            },
            None => true,
        };
        // a piece with no hash on either side (past the end) never matches
        v1 && v2 && (hashes.sha1(p).is_some() || hashes.v2_piece(p).is_some())
    }
}

/// The hash of a piece's v2 subtree from its bytes (`data`: the file's bytes in the piece,
/// without padding), in pieces of leaves `width` wide. Allocates the leaf row once per call.
pub fn v2_piece_hash(data: &[u8], width: u64) -> Hash32 {
    let mut h = merkle::LeafHasher::new();
    h.update(data);
    h.finish(width)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(files: &[(u32, u64)], pl: u32) -> V2Hashes {
        V2Hashes {
            piece_length: pl,
            files: files
                .iter()
                .enumerate()
                .map(|(i, &(first_piece, length))| V2File {
                    file: i * 2,
                    first_piece,
                    length,
                    root: [i as u8 + 1; 32],
                    layer: (length > u64::from(pl)).then(|| {
                        (0..length.div_ceil(u64::from(pl)))
                            .map(|k| [k as u8 + 100; 32])
                            .collect()
                    }),
                })
                .collect(),
        }
    }

    #[test]
    fn each_piece_finds_its_file_and_expected_hash() {
        let pl = 4 * BLOCK_SIZE;
        // a: 1 piece (3 leaves), b: 3 pieces (the last of 1 byte), c: 1 piece
        let h = v2(&[(0, 40_000), (1, 2 * 65_536 + 1), (4, 65_536)], pl);
        assert_eq!(h.piece_level(), 2);
        let a = h.piece(0).unwrap();
        assert_eq!(
            (a.data_len, a.width, a.expected),
            (40_000, 4, Some([1; 32]))
        );
        let b0 = h.piece(1).unwrap();
        assert_eq!(
            (b0.data_len, b0.width, b0.expected),
            (65_536, 4, Some([100; 32]))
        );
        let b2 = h.piece(3).unwrap();
        assert_eq!((b2.data_len, b2.expected), (1, Some([102; 32])));
        assert_eq!(h.piece(4).unwrap().expected, Some([3; 32]));
        assert_eq!(h.piece(5), None);
        assert!(h.complete());
        let mut partial = h.clone();
        partial.files[1].layer = None;
        assert!(!partial.complete());
        assert_eq!(partial.piece(2).unwrap().expected, None);
        assert_eq!(h.file_by_root(&[2; 32]).map(|f| f.file), Some(2));
    }

    #[test]
    fn a_small_files_tree_is_padded_to_its_own_leaf_count() {
        // one leaf and a bit: 2 leaves wide, not the piece's 64
        let data: Vec<u8> = (0..20_000u32).map(|i| i as u8).collect();
        let h = v2_piece_hash(&data, merkle::leaf_count(20_000));
        let want = merkle::pair(
            &merkle::leaf(&data[..16_384]),
            &merkle::leaf(&data[16_384..]),
        );
        assert_eq!(h, want);
        assert_eq!(v2_piece_hash(&data[..100], 1), merkle::leaf(&data[..100]));
    }
}
