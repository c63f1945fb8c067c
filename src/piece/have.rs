//! The verified pieces of a torrent, shared between the torrent (which sets and clears bits
//! as pieces pass or lose verification) and peer connections (which ask for every upload
//! request whether we have the piece): atomic words, no lock.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::Bitfield;

/// One atomic bit per piece plus a count of set bits.
#[derive(Debug)]
pub struct HaveBits {
    words: Box<[AtomicU64]>,
    len: u32,
    count: AtomicU32,
}

impl HaveBits {
    /// `len` pieces, none set.
    pub fn new(len: u32) -> HaveBits {
        HaveBits::from_bitfield(&Bitfield::new(len))
    }

    /// The pieces set in `have`.
    pub fn from_bitfield(have: &Bitfield) -> HaveBits {
        let len = have.len();
        let words: Box<[AtomicU64]> = (0..(len as usize).div_ceil(64))
            .map(|_| AtomicU64::new(0))
            .collect();
        for p in have.ones() {
            words[(p / 64) as usize].fetch_or(1 << (p % 64), Ordering::Relaxed);
        }
        HaveBits {
            words,
            len,
            count: AtomicU32::new(have.count()),
        }
    }

    /// Number of pieces.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// No pieces at all (an empty torrent).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether piece `p` is verified (false past the end).
    #[inline]
    pub fn get(&self, p: u32) -> bool {
        p < self.len && self.words[(p / 64) as usize].load(Ordering::Acquire) & (1 << (p % 64)) != 0
    }

    /// Mark `p` verified; true if it was not.
    pub fn set(&self, p: u32) -> bool {
        if p >= self.len {
            return false;
        }
        let old = self.words[(p / 64) as usize].fetch_or(1 << (p % 64), Ordering::AcqRel);
        let new = old & (1 << (p % 64)) == 0;
        if new {
            self.count.fetch_add(1, Ordering::AcqRel);
        }
        new
    }

    /// Mark `p` not verified (its data was found missing); true if it was set.
    pub fn clear(&self, p: u32) -> bool {
        if p >= self.len {
            return false;
        }
        let old = self.words[(p / 64) as usize].fetch_and(!(1 << (p % 64)), Ordering::AcqRel);
        let was = old & (1 << (p % 64)) != 0;
        if was {
            self.count.fetch_sub(1, Ordering::AcqRel);
        }
        was
    }

    /// Verified pieces.
    pub fn count(&self) -> u32 {
        self.count.load(Ordering::Acquire)
    }

    /// Every piece verified.
    pub fn is_full(&self) -> bool {
        self.count() == self.len
    }

    /// A plain copy (for a peer's initial `bitfield` message, or resume data).
    pub fn to_bitfield(&self) -> Bitfield {
        let mut b = Bitfield::new(self.len);
        for (wi, w) in self.words.iter().enumerate() {
            let mut bits = w.load(Ordering::Acquire);
            while bits != 0 {
                let i = bits.trailing_zeros();
                b.set(wi as u32 * 64 + i);
                bits &= bits - 1;
            }
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_clear_count_and_copy() {
        let mut b = Bitfield::new(130);
        b.set(0);
        b.set(129);
        let h = HaveBits::from_bitfield(&b);
        assert_eq!(h.count(), 2);
        assert!(h.get(129) && h.get(0) && !h.get(1) && !h.get(130));
        assert!(h.set(64));
        assert!(!h.set(64));
        assert!(!h.set(130));
        assert!(h.clear(0));
        assert!(!h.clear(0));
        assert_eq!(h.count(), 2);
        assert_eq!(h.to_bitfield().ones().collect::<Vec<_>>(), vec![64, 129]);
        assert!(!h.is_full());
        let full = HaveBits::from_bitfield(&Bitfield::full(70));
        assert!(full.is_full());
        assert_eq!(full.to_bitfield(), Bitfield::full(70));
    }
}
