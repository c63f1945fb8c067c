//! A fixed-length set of piece indices, one bit per piece, high bit first (BEP 3 §bitfield).

use thiserror::Error;

/// Why a peer's bitfield message is unacceptable (BEP 3: "spare bits at the end are set to
/// zero; clients should drop the connection if they receive bitfields that are not of the
/// correct size, or if the bitfield has any of the spare bits set").
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BitfieldError {
    /// Wrong byte length for the torrent's piece count.
    #[error("bitfield is {got} bytes, expected {expected} for {pieces} pieces")]
    WrongLength {
        /// Bytes received.
        got: usize,
        /// `ceil(pieces / 8)`.
        expected: usize,
        /// Piece count of the torrent.
        pieces: u32,
    },
    /// A bit past the last piece is set.
    #[error("bitfield has spare bits set beyond piece {pieces}")]
    SpareBits {
        /// Piece count of the torrent.
        pieces: u32,
    },
}

/// One bit per piece with a cached count of set bits.
#[derive(Clone, PartialEq, Eq)]
pub struct Bitfield {
    bytes: Box<[u8]>,
    len: u32,
    ones: u32,
}

impl std::fmt::Debug for Bitfield {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bitfield({}/{})", self.ones, self.len)
    }
}

impl Bitfield {
    /// Bytes a bitfield of `len` pieces takes on the wire and in the state store:
    /// `ceil(len / 8)` (BEP 3: spare bits of the last byte are zero).
    #[inline]
    pub fn byte_len(len: u32) -> usize {
        (len as usize).div_ceil(8)
    }

    /// All-zero bitfield for `len` pieces.
    pub fn new(len: u32) -> Bitfield {
        Bitfield {
            bytes: vec![0u8; Bitfield::byte_len(len)].into_boxed_slice(),
            len,
            ones: 0,
        }
    }

    /// All-one bitfield for `len` pieces (a seeder's).
    pub fn full(len: u32) -> Bitfield {
        let mut b = Bitfield::new(len);
        b.bytes.fill(0xff);
        b.clear_spare();
        b.ones = len;
        b
    }

    /// Parse a peer's bitfield payload for a torrent of `len` pieces.
    ///
    /// # Errors
    /// [`BitfieldError`] when the length is wrong or a spare bit is set.
    pub fn from_payload(payload: &[u8], len: u32) -> Result<Bitfield, BitfieldError> {
        let expected = Bitfield::byte_len(len);
        if payload.len() != expected {
            return Err(BitfieldError::WrongLength {
                got: payload.len(),
                expected,
                pieces: len,
            });
        }
        let mut b = Bitfield {
            bytes: payload.into(),
            len,
            ones: 0,
        };
        let spare = (expected * 8) as u32 - len;
        if spare > 0 {
            let mask = (1u8 << spare) - 1;
            if b.bytes[expected - 1] & mask != 0 {
                return Err(BitfieldError::SpareBits { pieces: len });
            }
        }
        b.ones = b.bytes.iter().map(|x| x.count_ones()).sum();
        Ok(b)
    }

    fn clear_spare(&mut self) {
        let spare = (self.bytes.len() * 8) as u32 - self.len;
        if spare > 0
            && let Some(last) = self.bytes.last_mut()
        {
            *last &= !((1u8 << spare) - 1);
        }
    }

    /// Number of pieces this bitfield covers.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// True when it covers no pieces.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of set bits.
    pub fn count(&self) -> u32 {
        self.ones
    }

    /// Every bit set (a seeder, or a finished download).
    pub fn is_full(&self) -> bool {
        self.ones == self.len
    }

    /// Whether piece `i` is set; out-of-range indices read as unset.
    #[inline]
    pub fn get(&self, i: u32) -> bool {
        if i >= self.len {
            return false;
        }
        self.bytes[(i / 8) as usize] & (0x80 >> (i % 8)) != 0
    }

    /// Set piece `i`; returns true if it was newly set. Out of range is ignored (false).
    #[inline]
    pub fn set(&mut self, i: u32) -> bool {
        if i >= self.len || self.get(i) {
            return false;
        }
        self.bytes[(i / 8) as usize] |= 0x80 >> (i % 8);
        self.ones += 1;
        true
    }

    /// Clear piece `i`; returns true if it was set.
    pub fn unset(&mut self, i: u32) -> bool {
        if i >= self.len || !self.get(i) {
            return false;
        }
        self.bytes[(i / 8) as usize] &= !(0x80 >> (i % 8));
        self.ones -= 1;
        true
    }

    /// The wire form (BEP 3 bitfield payload), `ceil(len / 8)` bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Indices of set bits, ascending.
    pub fn ones(&self) -> impl Iterator<Item = u32> + '_ {
        self.bytes.iter().enumerate().flat_map(move |(bi, &byte)| {
            (0..8u32)
                .filter(move |bit| byte & (0x80 >> bit) != 0)
                .map(move |bit| bi as u32 * 8 + bit)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_count() {
        let mut b = Bitfield::new(10);
        assert_eq!(b.as_bytes().len(), 2);
        assert!(b.set(0));
        assert!(!b.set(0));
        assert!(b.set(9));
        assert!(!b.set(10));
        assert_eq!(b.count(), 2);
        assert_eq!(b.as_bytes(), &[0x80, 0x40]);
        assert_eq!(b.ones().collect::<Vec<_>>(), vec![0, 9]);
        assert!(b.unset(0));
        assert_eq!(b.count(), 1);
    }

    #[test]
    fn byte_length_of_a_bitfield() {
        assert_eq!(Bitfield::byte_len(0), 0);
        assert_eq!(Bitfield::byte_len(1), 1);
        assert_eq!(Bitfield::byte_len(8), 1);
        assert_eq!(Bitfield::byte_len(9), 2);
        assert_eq!(Bitfield::byte_len(u32::MAX), 536_870_912);
        assert_eq!(Bitfield::new(17).as_bytes().len(), Bitfield::byte_len(17));
    }

    #[test]
    fn full_has_no_spare_bits() {
        let b = Bitfield::full(10);
        assert_eq!(b.as_bytes(), &[0xff, 0xc0]);
        assert!(b.is_full());
        assert!(Bitfield::from_payload(b.as_bytes(), 10).is_ok());
    }

    #[test]
    fn spare_bits_and_length_are_checked() {
        assert_eq!(
            Bitfield::from_payload(&[0xff, 0xc1], 10),
            Err(BitfieldError::SpareBits { pieces: 10 })
        );
        assert_eq!(
            Bitfield::from_payload(&[0xff, 0xe0], 10)
                .unwrap_err()
                .to_string(),
            "bitfield has spare bits set beyond piece 10"
        );
        assert!(matches!(
            Bitfield::from_payload(&[0xff], 10),
            Err(BitfieldError::WrongLength { .. })
        ));
        assert!(matches!(
            Bitfield::from_payload(&[0xff, 0xc0, 0], 10),
            Err(BitfieldError::WrongLength { .. })
        ));
        // exact multiple of 8: no spare bits to check
        assert_eq!(Bitfield::from_payload(&[0xff], 8).unwrap().count(), 8);
    }

    #[test]
    fn large_bitfield() {
        let n = 600_000;
        let payload = vec![0xffu8; 75_000];
        let b = Bitfield::from_payload(&payload, n).unwrap();
        assert!(b.is_full());
        assert_eq!(b.count(), n);
    }
}
