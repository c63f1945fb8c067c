//! Answering a peer's BEP 52 `hash request` on an established connection: the hashes of
//! one file's Merkle tree at the level asked for, from the torrent's piece layers, with the
//! uncle hashes that prove them, or a `hash reject`.
//!
//! We hold each file's piece layer and everything above it, not the 16 KiB leaves: a
//! request below the piece layer (a peer checking single blocks after a failed piece) is
//! rejected, and so is one that names an unknown root, leaves the tree, asks for more than
//! [`MAX_HASHES`] hashes or more proof than there are levels. The uncle hashes follow
//! libtorrent's reading of BEP 52: the siblings on the way up from the subtree of the
//! requested hashes, `proof_layers` levels counted from the base level.

use bytes::{BufMut, Bytes, BytesMut};

use crate::engine::link::shared::TorrentShared;
use crate::peer::wire::{HashRequest, Message};
use crate::piece::V2File;
use crate::piece::merkle::{self, LayerTree};

/// Most hashes answered in one message (libtorrent asks for 512 at a time).
pub const MAX_HASHES: u32 = 512;

/// Most hash requests answered per connection between two ticks (10 s); past that they go
/// unanswered (a peer that asks in a loop gets nothing more for its trouble).
pub const MAX_HASH_REQUESTS_PER_TICK: u32 = 512;

/// The answer to `req`: `hashes` or `hash reject`.
pub fn answer(t: &TorrentShared, req: &HashRequest) -> Message {
    match hashes(t, req) {
        Some(hashes) => Message::Hashes { req: *req, hashes },
        None => Message::HashReject(*req),
    }
}

/// The hashes `req` asks for and their proof, or `None` when it cannot be answered.
fn hashes(t: &TorrentShared, req: &HashRequest) -> Option<Bytes> {
    let (index, file) = t.v2_file(&req.pieces_root)?;
    let piece_level = t.disk.hashes.v2.as_ref()?.piece_level();
    if !valid(file, piece_level, req) {
        return None;
    }
    hashes_from(t.layer_tree(index)?, req)
}

/// Whether `req` can be answered for `file` from its piece layer (at `piece_level` levels
/// above the leaves) and above: inside the tree, at or above the layer, at most
/// [`MAX_HASHES`] hashes, no more proof than there are levels.
pub fn valid(file: &V2File, piece_level: u32, req: &HashRequest) -> bool {
    let top = file.levels();
    let base = req.base_layer;
    let level_size = merkle::leaf_count(file.length) >> base.min(63);
    !(base < piece_level
        || base >= top
        || req.length == 0
        || req.length > MAX_HASHES
        || u64::from(req.index) + u64::from(req.length) > level_size
        || req.proof_layers >= top - base)
}

/// The hashes a [`valid`] `req` asks for, from the file's `tree`, then the uncle hashes
/// that prove them; `None` when the tree lacks a node asked for.
pub fn hashes_from(tree: &LayerTree, req: &HashRequest) -> Option<Bytes> {
    let base = req.base_layer;
    let uncles = merkle::uncle_count(req.length, req.proof_layers).max(0) as usize;
    let mut out = BytesMut::with_capacity(32 * (req.length as usize + uncles));
    for pos in u64::from(req.index)..u64::from(req.index) + u64::from(req.length) {
        out.put_slice(&tree.node(base, pos)?);
    }
    // the subtree of the hashes asked for proves itself up to its root; above it, one
    // sibling per level
    let subtree = i64::from(u64::from(req.length).next_power_of_two().trailing_zeros()) - 1;
    for k in 0..req.proof_layers {
        if i64::from(k) >= subtree {
            let level = base + k + 1;
            let pos = (u64::from(req.index) >> (k + 1)) ^ 1;
            out.put_slice(&tree.node(level, pos)?);
        }
    }
    Some(out.freeze())
}
