//! Metainfo (.torrent) parsing: BEP 3 (info dictionary, info hash), BEP 12 (tiers of
//! trackers), BEP 19 (`url-list` web seeds), BEP 27 (`private`), BEP 47 (padding files),
//! BEP 52 v2 torrents (`file tree`, `piece layers`: [`v2`]) and hybrids (both sides; the v2
//! side is checked against the v1 side by [`hybrid`]).
//!
//! [`Metainfo::from_bytes`] decodes with the tolerant [`crate::bencode`] decoder
//! (unsorted and repeated keys accepted, the first occurrence wins) and takes the info
//! hash over the info dictionary's bytes exactly as they appear in the file. Every name
//! and path goes through [`path`], which sanitises it as libtorrent does (nothing is refused
//! for its name) so that nothing resolves outside the download directory.
//! [`create::TorrentBuilder`] writes new v1, v2 and hybrid torrents; [`magnet`] reads magnet
//! links.

use std::fmt;

pub mod create;
mod describe;
pub mod hybrid;
pub mod magnet;
mod parse;
pub mod path;
pub mod path_change;
pub mod v2;

pub use create::{CreateError, TorrentBuilder};
pub use hybrid::HybridError;
pub use magnet::{Magnet, MagnetError};
pub use parse::{
    BLOCK_SIZE, FileInfo, MAX_PIECE_LENGTH, MAX_SYMLINK_HOPS, MAX_TORRENT_FILE_BYTES, Metainfo,
    MetainfoError, files_from_bytes,
};
pub use path_change::{PathChange, PathChanges};
pub use v2::V2Error;

/// The BEP 52 version of a torrent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum MetaVersion {
    /// BEP 3: SHA-1 piece hashes only.
    V1,
    /// BEP 52 only: a `file tree` with SHA-256 Merkle trees, no `pieces`.
    V2,
    /// Both: v1 `pieces` and the v2 `file tree` describing the same files.
    Hybrid,
}

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

    /// The 20-byte form of a v2 info hash (SHA-256): its first 20 bytes, what a v2-only
    /// torrent is known by in handshakes, trackers and the DHT (BEP 52).
    pub fn truncated(v2: &[u8; 32]) -> InfoHash {
        let mut h = [0u8; 20];
        h.copy_from_slice(&v2[..20]);
        InfoHash(h)
    }

    /// 40 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        data_encoding::HEXLOWER.encode(&self.0)
    }

    /// Parse 40 hex digits (either case).
    ///
    /// # Errors
    /// `None` when `s` is not exactly 40 hex digits.
    pub fn from_hex(s: &str) -> Option<InfoHash> {
        let mut out = [0u8; 20];
        decode_hex(s, &mut out)?;
        Some(InfoHash(out))
    }
}

/// Fills `out` from `s`, exactly `2 * out.len()` hex digits of either case (info hashes,
/// node ids, the BEP 52 SHA-256 hash).
///
/// # Errors
/// `None` when `s` has another length or a character that is not a hex digit.
pub fn decode_hex(s: &str, out: &mut [u8]) -> Option<()> {
    let hex = data_encoding::HEXLOWER_PERMISSIVE;
    if hex.decode_len(s.len()).ok()? != out.len() {
        return None;
    }
    hex.decode_mut(s.as_bytes(), out).ok()?;
    Some(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_hash_hex_round_trip() {
        let ih = InfoHash([
            0x65, 0x56, 0xa7, 0x34, 0xd0, 0x02, 0xeb, 0x01, 0x83, 0x44, 0x9c, 0x4e, 0x0f, 0xaa,
            0x35, 0xaf, 0xdf, 0x57, 0xf0, 0x85,
        ]);
        let hex = "6556a734d002eb0183449c4e0faa35afdf57f085";
        assert_eq!(ih.to_hex(), hex);
        assert_eq!(ih.to_string(), hex);
        assert_eq!(format!("{ih:?}"), format!("InfoHash({hex})"));
        assert_eq!(InfoHash::from_hex(hex), Some(ih));
        assert_eq!(InfoHash::from_hex(&hex.to_uppercase()), Some(ih));
        for n in [0u8, 1, 0x7f, 0xff] {
            let ih = InfoHash([n; 20]);
            assert_eq!(InfoHash::from_hex(&ih.to_hex()), Some(ih));
        }
    }

    #[test]
    fn hex_of_the_wrong_length_or_alphabet_is_refused() {
        let ok = "6556a734d002eb0183449c4e0faa35afdf57f085";
        for bad in [
            "",
            &ok[..39],
            &ok[..38],
            &format!("{ok}00"),
            &format!("{}g", &ok[..39]),
            &format!(" {}", &ok[..39]),
            &format!("{}é", &ok[..38]),
        ] {
            assert_eq!(InfoHash::from_hex(bad), None, "{bad:?}");
        }
        let mut two = [0u8; 2];
        assert_eq!(decode_hex("aBcD", &mut two), Some(()));
        assert_eq!(two, [0xab, 0xcd]);
        assert_eq!(decode_hex("abc", &mut two), None);
        assert_eq!(decode_hex("abcdef", &mut two), None);
    }
}
