//! BEP 52 Merkle trees: one per file, SHA-256 over 16 KiB leaves.
//!
//! A file of `n` bytes has `ceil(n / 16 KiB)` leaves, each the SHA-256 of its block (the
//! last one of the remaining bytes, not padded); the leaf row is padded to a power of two
//! with 32 zero bytes, and each node above is the SHA-256 of its two children. Its root is
//! the file's `pieces root`. The row `log2(piece length / 16 KiB)` levels above the leaves
//! is the file's piece layer (one hash per piece; `piece layers` in a .torrent); a file of
//! one piece or less has none, its root stands for its only piece.
//!
//! Levels count from the leaves (level 0) up; position `i` of level `l` covers leaves
//! `i << l .. (i + 1) << l`. A node whose leaves are all padding is [`pad`]`(l)`.
//!
//! - [`leaf`], [`pair`], [`pad`]: the three hashes everything is made of.
//! - [`reduce`]: a row of nodes to the root of their subtree, in place (the hot path: a
//!   piece's leaves to the piece hash).
//! - [`LeafHasher`]: bytes streamed in, leaves out (checking data on disk).
//! - [`LayerTree`]: every level above a piece layer, for serving `hashes` messages, and
//!   [`verify_hashes`] for a `hashes` answer to our request.

use sha2::{Digest, Sha256};

use super::BLOCK_SIZE;

/// A SHA-256 hash (a leaf, a node, a pieces root), 32 bytes.
pub type Hash32 = [u8; 32];

/// Most levels a tree can have above its leaves: 2^64 bytes of 16 KiB leaves need 50.
const MAX_LEVELS: usize = 64;

/// SHA-256 of one leaf's bytes (at most [`BLOCK_SIZE`]).
#[inline]
pub fn leaf(data: &[u8]) -> Hash32 {
    Sha256::digest(data).into()
}

/// A node: SHA-256 of its two children, left then right.
#[inline]
pub fn pair(left: &Hash32, right: &Hash32) -> Hash32 {
    let mut h = Sha256::new();
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The hash of a subtree of height `level` whose leaves are all padding: 32 zero bytes at
/// level 0, `pair(pad(l), pad(l))` above. Levels past 63 give level 63's (never reached:
/// see [`MAX_LEVELS`]).
pub fn pad(level: u32) -> Hash32 {
    static TABLE: std::sync::OnceLock<[Hash32; MAX_LEVELS]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [[0u8; 32]; MAX_LEVELS];
        for l in 1..MAX_LEVELS {
            t[l] = pair(&t[l - 1], &t[l - 1]);
        }
        t
    });
    table[(level as usize).min(MAX_LEVELS - 1)]
}

/// Leaves of a file of `length` bytes once padded: the power of two at or above its block
/// count (1 for an empty file).
pub fn leaf_count(length: u64) -> u64 {
    length
        .div_ceil(u64::from(BLOCK_SIZE))
        .max(1)
        .next_power_of_two()
}

/// Levels above the leaves of a file of `length` bytes (0 for a file of one block): its
/// root is at this level.
pub fn levels(length: u64) -> u32 {
    leaf_count(length).trailing_zeros()
}

/// The root of the subtree whose nodes at `level` are `row`, padded on the right to
/// `width` nodes (a power of two at least `row.len()`), computed in `row` itself: no
/// allocation. `row` is left holding partial results. An empty row gives the padding's
/// root.
pub fn reduce(row: &mut [Hash32], level: u32, width: u64) -> Hash32 {
    let mut n = row.len();
    let mut level = level;
    let mut width = width.max(1);
    if n == 0 {
        return pad(level + width.trailing_zeros());
    }
    while width > 1 {
        let half = n.div_ceil(2);
        for i in 0..half {
            let right = if 2 * i + 1 < n {
                row[2 * i + 1]
            } else {
                pad(level)
            };
            row[i] = pair(&row[2 * i], &right);
        }
        n = half;
        width /= 2;
        level += 1;
    }
    row[0]
}

/// The root of the tree whose level-`level` row is `row` padded to `width` nodes (see
/// [`reduce`]), leaving `row` as it was.
pub fn root_of(row: &[Hash32], level: u32, width: u64) -> Hash32 {
    let mut copy = row.to_vec();
    reduce(&mut copy, level, width)
}

/// Hashes bytes streamed in any slicing into 16 KiB leaves, then into the root of their
/// subtree. Reused across pieces (the leaf row keeps its allocation).
#[derive(Debug, Clone, Default)]
pub struct LeafHasher {
    leaves: Vec<Hash32>,
    current: Sha256,
    filled: u32,
}

impl LeafHasher {
    /// A hasher with no bytes in.
    pub fn new() -> LeafHasher {
        LeafHasher::default()
    }

    /// Add `data` after the bytes before it.
    pub fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let take = ((BLOCK_SIZE - self.filled) as usize).min(data.len());
            self.current.update(&data[..take]);
            self.filled += take as u32;
            data = &data[take..];
            if self.filled == BLOCK_SIZE {
                self.leaves.push(self.current.finalize_reset().into());
                self.filled = 0;
            }
        }
    }

    /// The root of the leaves so far (the last one partial, if bytes are left over) padded
    /// to `width` leaves; the hasher is empty afterwards.
    pub fn finish(&mut self, width: u64) -> Hash32 {
        if self.filled > 0 {
            self.leaves.push(self.current.finalize_reset().into());
            self.filled = 0;
        }
        let root = reduce(&mut self.leaves, 0, width);
        self.leaves.clear();
        root
    }
}

/// Every level of a file's tree from its piece layer up to the root, the padding left out
/// (a node past the stored ones is [`pad`] of its level): what answering a BEP 52 hash
/// request needs.
#[derive(Debug, Clone)]
pub struct LayerTree {
    /// `rows[k]` holds the nodes of level `base + k` that cover data.
    rows: Vec<Vec<Hash32>>,
    base: u32,
}

impl LayerTree {
    /// The tree above `layer`, the nodes at `base` levels above the leaves, of a file
    /// whose root is at level `top` (see [`levels`]).
    pub fn new(layer: &[Hash32], base: u32, top: u32) -> LayerTree {
        let mut rows = vec![layer.to_vec()];
        for level in base..top {
            let below = rows.last().map(Vec::as_slice).unwrap_or_default();
            let row: Vec<Hash32> = below
                .chunks(2)
                .map(|c| pair(&c[0], c.get(1).unwrap_or(&pad(level))))
                .collect();
            rows.push(row);
        }
        LayerTree { rows, base }
    }

    /// The node at position `pos` of `level` (at or above the layer), padding past the data.
    pub fn node(&self, level: u32, pos: u64) -> Option<Hash32> {
        let row = self.rows.get(level.checked_sub(self.base)? as usize)?;
        Some(match usize::try_from(pos).ok().and_then(|i| row.get(i)) {
            Some(h) => *h,
            None => pad(level),
        })
    }

    /// The root.
    pub fn root(&self) -> Option<Hash32> {
        self.rows.last().and_then(|r| r.first()).copied()
    }
}

/// Uncle hashes in a `hashes` message that answers (`count`, `proof_layers`), as
/// libtorrent counts them: the proof layers above the subtree of the `count` base hashes
/// (`count` rounded up to a power of two). May be negative for a meaningless request.
pub fn uncle_count(count: u32, proof_layers: u32) -> i64 {
    let subtree = u64::from(count.max(1)).next_power_of_two().trailing_zeros();
    i64::from(proof_layers) - i64::from(subtree) + 1
}

/// Check a `hashes` answer: `base` are the nodes at `level`, positions `index ..
/// index + base.len()` (a power of two, `index` a multiple of it), of the file whose root
/// is `root` at level `top`; `uncles` the siblings on the way from their subtree to the
/// root, lowest first. Nodes past `real` (the count of positions that cover data at that
/// level) are taken as padding, whatever was sent.
///
/// # Errors
/// `None` when the counts do not fit or the hashes do not lead to `root`; else the base
/// nodes that cover data (at most `real - index` of them).
pub fn verify_hashes(
    base: &[Hash32],
    uncles: &[Hash32],
    index: u64,
    level: u32,
    real: u64,
    top: u32,
    root: &Hash32,
) -> Option<Vec<Hash32>> {
    let count = base.len() as u64;
    if count == 0 || !count.is_power_of_two() || !index.is_multiple_of(count) {
        return None;
    }
    let sub = count.trailing_zeros();
    if level + sub + uncles.len() as u32 != top {
        return None;
    }
    let keep = real.saturating_sub(index).min(count) as usize;
    let mut row: Vec<Hash32> = base[..keep].to_vec();
    let mut node = reduce(&mut row, level, count);
    let mut pos = index >> sub;
    for u in uncles {
        node = if pos.is_multiple_of(2) {
            pair(&node, u)
        } else {
            pair(u, &node)
        };
        pos /= 2;
    }
    (node == *root).then(|| base[..keep].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(parts: &[&[u8]]) -> Hash32 {
        let mut h = Sha256::new();
        parts.iter().for_each(|p| h.update(p));
        h.finalize().into()
    }

    /// The root of `data` the long way: leaves padded with zeros to a power of two.
    fn long_root(data: &[u8]) -> Hash32 {
        let mut level: Vec<Hash32> = data
            .chunks(BLOCK_SIZE as usize)
            .map(|c| sha(&[c]))
            .collect();
        level.resize(level.len().max(1).next_power_of_two(), [0; 32]);
        while level.len() > 1 {
            level = level.chunks(2).map(|p| sha(&[&p[0], &p[1]])).collect();
        }
        level[0]
    }

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[test]
    fn pads_are_hashes_of_zero_subtrees() {
        assert_eq!(pad(0), [0; 32]);
        assert_eq!(pad(1), sha(&[&[0; 32], &[0; 32]]));
        assert_eq!(pad(2), sha(&[&pad(1), &pad(1)]));
        assert_eq!(pad(500), pad(63));
    }

    #[test]
    fn streamed_leaves_give_the_long_root_whatever_the_slicing() {
        for len in [1usize, 100, 16_384, 16_385, 3 * 16_384 + 7, 9 * 16_384] {
            let d = data(len);
            let mut h = LeafHasher::new();
            for chunk in d.chunks(5_000) {
                h.update(chunk);
            }
            assert_eq!(h.finish(leaf_count(len as u64)), long_root(&d), "{len}");
            // reused
            h.update(&d);
            assert_eq!(h.finish(leaf_count(len as u64)), long_root(&d), "{len}");
        }
        assert_eq!(levels(16_384), 0);
        assert_eq!(levels(16_385), 1);
        assert_eq!(levels(5 * 16_384), 3);
    }

    #[test]
    fn a_piece_layer_hashes_up_to_the_root() {
        // 5 pieces of 4 leaves, the last short: the layer padded with pad(2)
        let pl = 4 * 16_384;
        let d = data(4 * pl + 20_000);
        let layer: Vec<Hash32> = d
            .chunks(pl)
            .map(|p| {
                let mut h = LeafHasher::new();
                h.update(p);
                h.finish(4)
            })
            .collect();
        let top = levels(d.len() as u64);
        assert_eq!(root_of(&layer, 2, 1 << (top - 2)), long_root(&d));
        let tree = LayerTree::new(&layer, 2, top);
        assert_eq!(tree.root(), Some(long_root(&d)));
        assert_eq!(tree.node(2, 4), Some(layer[4]));
        assert_eq!(tree.node(2, 7), Some(pad(2)));
        assert_eq!(tree.node(1, 0), None);
    }

    #[test]
    fn hashes_with_uncles_verify_against_the_root_and_nothing_else() {
        // 1100 pieces of one leaf each: three chunks of 512 with uncles
        let leaves: Vec<Hash32> = (0..1100u32).map(|i| leaf(&i.to_be_bytes())).collect();
        let top = 11; // 2048 leaves
        let tree = LayerTree::new(&leaves, 0, top);
        let root = tree.root().unwrap();
        for index in [0u64, 512, 1024] {
            let count = if index == 1024 { 128 } else { 512 };
            let base: Vec<Hash32> = (index..index + count)
                .map(|i| tree.node(0, i).unwrap())
                .collect();
            let sub = (count as u32).trailing_zeros();
            let uncles: Vec<Hash32> = (sub..top)
                .map(|l| tree.node(l, (index >> l) ^ 1).unwrap())
                .collect();
            assert_eq!(uncle_count(count as u32, top - 1), uncles.len() as i64);
            let got = verify_hashes(&base, &uncles, index, 0, 1100, top, &root).unwrap();
            assert_eq!(got.len() as u64, count.min(1100 - index));
            let mut bad = base.clone();
            bad[3][0] ^= 1;
            assert!(verify_hashes(&bad, &uncles, index, 0, 1100, top, &root).is_none());
            let mut bad = uncles.clone();
            bad[0][0] ^= 1;
            assert!(verify_hashes(&base, &bad, index, 0, 1100, top, &root).is_none());
            assert!(verify_hashes(&base, &uncles[1..], index, 0, 1100, top, &root).is_none());
        }
        // padding positions are ours, not the sender's
        let base: Vec<Hash32> = (1024..1152).map(|i| tree.node(0, i).unwrap()).collect();
        let mut junk = base.clone();
        junk[100] = [9; 32];
        let uncles: Vec<Hash32> = (7..top)
            .map(|l| tree.node(l, (1024 >> l) ^ 1).unwrap())
            .collect();
        assert!(verify_hashes(&junk, &uncles, 1024, 0, 1100, top, &root).is_some());
    }
}
