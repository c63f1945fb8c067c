//! The domain's units, below storage, the peer protocol and the picker: piece geometry,
//! blocks and bitfields (BEP 3).
//!
//! - [`Geometry`]: how a payload of `total_length` bytes splits into pieces of
//!   `piece_length` bytes (the last one shorter) and each piece into [`BLOCK_SIZE`] blocks.
//! - [`BlockRef`]: one block's address, as `request`, `cancel` and `piece` messages name it.
//! - [`Bitfield`]: one bit per piece, high bit first, as the `bitfield` message carries it.
//! - [`FileLayout`]: where each file lies in the payload ([`FileSpan`]), and which file
//!   bytes a piece or any byte range covers.
//! - [`HaveBits`]: the verified pieces of a torrent, readable without a lock (the upload
//!   path asks "do we have piece p?" for every request).
//! - [`PieceHashes`]: what each piece must hash to, v1 (SHA-1) and v2 (BEP 52 Merkle
//!   trees, [`merkle`]).

mod bitfield;
mod geometry;
mod hashes;
mod have;
mod layout;
pub mod merkle;

pub use bitfield::{Bitfield, BitfieldError};
pub use geometry::{Geometry, GeometryError};
pub use hashes::{PieceHashes, PieceVerifier, V2File, V2Hashes, V2Piece, v2_piece_hash};
pub use have::HaveBits;
pub use layout::{FileLayout, FileSpan, LayoutError, Segment, Segments};

/// Transfer unit: 16 KiB (BEP 3 recommends 2^14; most clients refuse larger requests).
pub const BLOCK_SIZE: u32 = 16 * 1024;

/// A block address: `length` bytes at `begin` within piece `piece` (BEP 3 request/cancel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockRef {
    /// Piece index.
    pub piece: u32,
    /// Byte offset within the piece.
    pub begin: u32,
    /// Length in bytes (16 KiB except the last block of a piece).
    pub length: u32,
}
