//! What a torrent keeps of its metainfo at all times: enough to list it, announce it and
//! plan its pieces, without the piece hashes or file paths (a few hundred bytes instead of
//! tens of KiB), and the progress arithmetic on it (bytes of a file verified, payload
//! done). The full metainfo is loaded when the torrent needs its files (a check, a peer,
//! the detail view) and dropped again when it goes quiet.

use crate::metainfo::{InfoHash, Metainfo};
use crate::piece::{Bitfield, FileLayout, FileSpan, Geometry};

/// The always-resident part of a torrent's metainfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// v1 info hash.
    pub info_hash: InfoHash,
    /// v2 info hash (BEP 52) of a hybrid torrent, once known (from its metainfo; not kept
    /// in its record: a restored torrent learns it when its metainfo is loaded).
    pub info_hash_v2: Option<[u8; 32]>,
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
    /// Where the files lie in the payload, in payload order, padding files included.
    pub files: FileLayout,
    /// Web seed URLs (BEP 19 `url-list`); `None` while not known (a record older than
    /// format 7: read from the .torrent when it is next loaded).
    pub web_seeds: Option<Vec<String>>,
}

impl Summary {
    /// The summary of `meta`.
    pub fn of(meta: &Metainfo) -> Summary {
        Summary {
            info_hash: meta.info_hash,
            info_hash_v2: meta.info_hash_v2,
            // the name used on disk, never the torrent's raw one (`..`, `/`, controls)
            name: meta.saved_name().to_owned(),
            geometry: meta.geometry(),
            payload_size: meta.payload_size(),
            trackers: meta.trackers.clone(),
            private: meta.private,
            multi_file: meta.multi_file,
            files: meta.layout(),
            web_seeds: Some(meta.web_seeds.clone()),
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

    /// Bytes of file `f` inside the pieces of `have`.
    pub fn file_done(&self, f: &FileSpan, have: &Bitfield) -> u64 {
        let geo = &self.geometry;
        f.pieces(geo)
            .filter(|&p| have.get(p))
            .map(|p| f.bytes_in_piece(geo, p))
            .sum()
    }

    /// Payload bytes done (padding left out) when `left` bytes of the whole are missing:
    /// the verified bytes scaled by payload / total (exact without padding files).
    pub fn payload_done(&self, left: u64) -> u64 {
        let total = self.total_length();
        if total == 0 {
            return 0;
        }
        let verified = total.saturating_sub(left);
        ((verified as u128 * self.payload_size as u128) / total as u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 300 bytes in pieces of 64: a file of 100 bytes, 28 of padding, 172 bytes.
    fn sum() -> Summary {
        let files = FileLayout::from_lengths([(100, false), (28, true), (172, false)]).unwrap();
        Summary {
            info_hash: InfoHash([0; 20]),
            info_hash_v2: None,
            name: "s".into(),
            geometry: Geometry::new(300, 64, 5).unwrap(),
            payload_size: 272,
            trackers: Vec::new(),
            private: false,
            multi_file: true,
            files,
            web_seeds: Some(Vec::new()),
        }
    }

    fn have(pieces: &[u32]) -> Bitfield {
        let mut b = Bitfield::new(5);
        for &p in pieces {
            b.set(p);
        }
        b
    }

    #[test]
    fn file_done_counts_the_files_bytes_in_verified_pieces() {
        let s = sum();
        let [a, _, b] = s.files.spans() else { panic!() };
        assert_eq!(s.file_done(a, &have(&[])), 0);
        // piece 1 holds bytes 64..128: 36 of the first file
        assert_eq!(s.file_done(a, &have(&[1])), 36);
        assert_eq!(s.file_done(a, &have(&[0, 1])), 100);
        // the last piece is 44 bytes long (256..300)
        assert_eq!(s.file_done(b, &have(&[4])), 44);
        assert_eq!(s.file_done(b, &have(&[2, 3, 4])), 172);
    }

    #[test]
    fn payload_done_scales_verified_bytes_to_leave_padding_out() {
        let s = sum();
        assert_eq!(s.payload_done(300), 0);
        assert_eq!(s.payload_done(0), 272);
        // half of the whole verified: half of the payload
        assert_eq!(s.payload_done(150), 136);
        let empty = Summary {
            geometry: Geometry::default(),
            payload_size: 0,
            files: FileLayout::default(),
            ..sum()
        };
        assert_eq!(empty.payload_done(0), 0);
    }
}
