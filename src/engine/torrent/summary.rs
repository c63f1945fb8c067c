//! What a torrent keeps of its metainfo at all times: enough to list it, announce it and
//! plan its pieces, without the piece hashes or file paths (a few hundred bytes instead of
//! tens of KiB). The full metainfo is loaded when the torrent needs its files (a check, a
//! peer, the detail view) and dropped again when it goes quiet.

use crate::metainfo::{InfoHash, Metainfo};
use crate::piece::Geometry;

/// One file's place in the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileSpan {
    /// Payload offset, bytes.
    pub offset: u64,
    /// Length, bytes.
    pub length: u64,
    /// A BEP 47 padding file.
    pub pad: bool,
}

/// The always-resident part of a torrent's metainfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// v1 info hash.
    pub info_hash: InfoHash,
    /// Display name: the name used on disk ([`Metainfo::saved_name`]), or a magnet's
    /// `dn` until its metadata arrives.
    pub name: String,
    /// Piece and block geometry (padding included).
    pub geometry: Geometry,
    /// Payload bytes without padding files.
    pub payload_size: u64,
    /// Tiers of announce URLs (BEP 12).
    pub trackers: Vec<Vec<String>>,
    /// BEP 27 private torrent.
    pub private: bool,
    /// Multi-file form (a top folder named after the torrent).
    pub multi_file: bool,
    /// The files in payload order, padding files included.
    pub files: Box<[FileSpan]>,
}

impl Summary {
    /// The summary of `meta`.
    pub fn of(meta: &Metainfo) -> Summary {
        Summary {
            info_hash: meta.info_hash,
            // the name used on disk, never the torrent's raw one (`..`, `/`, controls)
            name: meta.saved_name().to_owned(),
            geometry: meta.geometry(),
            payload_size: meta.payload_size(),
            trackers: meta.trackers.clone(),
            private: meta.private,
            multi_file: meta.multi_file,
            files: meta
                .files
                .iter()
                .map(|f| FileSpan {
                    offset: f.offset,
                    length: f.length,
                    pad: f.pad,
                })
                .collect(),
        }
    }

    /// Number of pieces.
    pub fn piece_count(&self) -> u32 {
        self.geometry.piece_count()
    }

    /// Payload bytes, padding included.
    pub fn total_length(&self) -> u64 {
        self.geometry.total_length()
    }
}
