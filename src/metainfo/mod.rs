//! Metainfo (.torrent) parsing, BEP 3 and BEP 12.

use std::fmt;

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
