//! Metainfo (.torrent) parsing: BEP 3 (info dictionary, info hash), BEP 12 (tiers of
//! trackers), BEP 19 (`url-list` web seeds), BEP 27 (`private`), BEP 47 (padding files),
//! BEP 52 hybrid torrents (the v1 side, plus the SHA-256 info hash; the v2 side is checked
//! against the v1 side by [`hybrid`]).
//!
//! [`Metainfo::from_bytes`] decodes with the tolerant [`crate::bencode`] decoder
//! (unsorted and repeated keys accepted, the first occurrence wins) and takes the info
//! hash over the info dictionary's bytes exactly as they appear in the file. Every name
//! and path goes through [`path`], which sanitises it as libtorrent does (nothing is refused
//! for its name) so that nothing resolves outside the download directory.
//! [`create::TorrentBuilder`] writes new v1 torrents; [`magnet`] reads magnet links.

use std::fmt;

pub mod create;
mod describe;
pub mod hybrid;
pub mod magnet;
mod parse;
pub mod path;
pub mod path_change;

pub use create::{CreateError, TorrentBuilder};
pub use describe::human_size;
pub use hybrid::HybridError;
pub use magnet::{Magnet, MagnetError};
pub use parse::{
    BLOCK_SIZE, FileInfo, MAX_PIECE_LENGTH, MAX_SYMLINK_HOPS, MAX_TORRENT_FILE_BYTES, Metainfo,
    MetainfoError, files_from_bytes,
};
pub use path_change::{PathChange, PathChanges};

/// A v1 info hash: SHA-1 of the bencoded `info` dictionary exactly as it appears in the
/// .torrent file (BEP 3). 20 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct InfoHash(pub [u8; 20]);

impl InfoHash {
    /// SHA-1 of `info_bytes` (the raw bencoded info dictionary).
    pub fn of_info_bytes(info_bytes: &[u8]) -> InfoHash {
        use sha1::{Digest, Sha1};
        InfoHash(Sha1::digest(info_bytes).into())
    }

    /// 40 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parse 40 hex digits (either case).
    ///
    /// # Errors
    /// `None` when `s` is not exactly 40 hex digits.
    pub fn from_hex(s: &str) -> Option<InfoHash> {
        let s = s.as_bytes();
        if s.len() != 40 {
            return None;
        }
        let mut out = [0u8; 20];
        for (i, pair) in s.chunks(2).enumerate() {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            out[i] = (hi * 16 + lo) as u8;
        }
        Some(InfoHash(out))
    }
}

impl fmt::Display for InfoHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for InfoHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InfoHash({})", self.to_hex())
    }
}
