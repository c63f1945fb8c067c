//! The uTP packet format (BEP 29): a 20-byte header, a chain of extensions, the payload.
//!
//! ```text
//! 0       4       8               16              24              32
//! +-------+-------+---------------+---------------+---------------+
//! | type  | ver   | extension     | connection_id                 |
//! +-------+-------+---------------+---------------+---------------+
//! | timestamp_microseconds                                        |
//! | timestamp_difference_microseconds                             |
//! | wnd_size                                                      |
//! | seq_nr                        | ack_nr                        |
//! +---------------+---------------+---------------+---------------+
//! ```
//!
//! Every field is big-endian. An extension is `[next type, length, data...]`; type 1 is the
//! selective ACK (a bitmask of at least 32 bits, a multiple of 32, bit *i* standing for
//! `ack_nr + 2 + i`, least significant bit of each byte first). Other types (libtorrent's
//! close reason, 3) are skipped. [`Packet::parse`] borrows the datagram: no allocation.

/// Bytes in the fixed header.
pub const HEADER_LEN: usize = 20;
/// The only protocol version (BEP 29).
pub const VERSION: u8 = 1;
/// Extension type of the selective ACK.
pub const EXT_SACK: u8 = 1;
/// Most bytes of selective ACK bitmask we send: 256 packets past the first missing one.
pub const SACK_BYTES: usize = 32;

/// The packet type (the high nibble of the first byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketType {
    /// `ST_DATA` (0): payload.
    Data,
    /// `ST_FIN` (1): the sender's last sequence number; no more data after it.
    Fin,
    /// `ST_STATE` (2): an acknowledgement, no payload, no sequence number of its own.
    State,
    /// `ST_RESET` (3): the connection is gone.
    Reset,
    /// `ST_SYN` (4): open a connection.
    Syn,
}

impl PacketType {
    fn from_nibble(n: u8) -> Option<PacketType> {
        Some(match n {
            0 => PacketType::Data,
            1 => PacketType::Fin,
            2 => PacketType::State,
            3 => PacketType::Reset,
            4 => PacketType::Syn,
            _ => return None,
        })
    }

    fn nibble(self) -> u8 {
        match self {
            PacketType::Data => 0,
            PacketType::Fin => 1,
            PacketType::State => 2,
            PacketType::Reset => 3,
            PacketType::Syn => 4,
        }
    }
}

/// Why a datagram is not a uTP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    /// Shorter than the 20-byte header.
    #[error("shorter than the uTP header")]
    Short,
    /// Version is not 1, or the type is not 0-4.
    #[error("not uTP version 1 (type {0:#x})")]
    NotUtp(u8),
    /// An extension runs past the end of the datagram.
    #[error("an extension runs past the end")]
    Truncated,
}

/// The fixed header, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Packet type.
    pub kind: PacketType,
    /// The connection id (the receiver's id for this connection, BEP 29).
    pub conn_id: u16,
    /// The sender's clock when it sent this, µs (wraps every ~71 min).
    pub timestamp_us: u32,
    /// The sender's last one-way delay sample of our packets, µs (its receive time minus
    /// our timestamp, wrapping): what LEDBAT steers by.
    pub timestamp_diff_us: u32,
    /// Bytes the sender can still receive (its receive window).
    pub wnd_size: u32,
    /// Sequence number (of this packet; for `ST_STATE` the next one the sender uses).
    pub seq_nr: u16,
    /// The last sequence number the sender received in order.
    pub ack_nr: u16,
}

/// A parsed datagram borrowing its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The header.
    pub header: Header,
    /// The selective ACK bitmask, if sent.
    pub sack: Option<&'a [u8]>,
    /// The payload (empty but for `ST_DATA`).
    pub payload: &'a [u8],
}

impl<'a> Packet<'a> {
    /// Decode a datagram. Unknown extension types are skipped. A selective ACK of any
    /// length is taken: BEP 29 asks for a multiple of 4 bytes, but libtorrent sends as
    /// many bytes as its reorder buffer spans (`(span + 7) / 8`), and a packet refused
    /// for that loses the ACK it carries (a connection to libtorrent went silent that
    /// way); an empty one is no selective ACK.
    ///
    /// # Errors
    /// [`PacketError`] for a datagram shorter than the header, another version or type,
    /// or an extension chain running past the end.
    pub fn parse(buf: &'a [u8]) -> Result<Packet<'a>, PacketError> {
        if buf.len() < HEADER_LEN {
            return Err(PacketError::Short);
        }
        let kind = PacketType::from_nibble(buf[0] >> 4)
            .filter(|_| buf[0] & 0x0f == VERSION)
            .ok_or(PacketError::NotUtp(buf[0]))?;
        let be16 = |i: usize| u16::from_be_bytes([buf[i], buf[i + 1]]);
        let be32 = |i: usize| u32::from_be_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
        let header = Header {
            kind,
            conn_id: be16(2),
            timestamp_us: be32(4),
            timestamp_diff_us: be32(8),
            wnd_size: be32(12),
            seq_nr: be16(16),
            ack_nr: be16(18),
        };
        let mut next = buf[1];
        let mut at = HEADER_LEN;
        let mut sack = None;
        while next != 0 {
            if at + 2 > buf.len() {
                return Err(PacketError::Truncated);
            }
            let (ext, len) = (next, buf[at + 1] as usize);
            next = buf[at];
            let data = buf
                .get(at + 2..at + 2 + len)
                .ok_or(PacketError::Truncated)?;
            if ext == EXT_SACK && len > 0 {
                sack = Some(data);
            }
            at += 2 + len;
        }
        Ok(Packet {
            header,
            sack,
            payload: &buf[at..],
        })
    }
}

impl Header {
    /// Write the header into `out[..20]` with `ext` as the first extension type (0: none).
    ///
    /// # Panics
    /// When `out` is shorter than [`HEADER_LEN`] (a caller's bug: every buffer is sized
    /// for a full packet).
    pub fn write(&self, ext: u8, out: &mut [u8]) {
        out[0] = (self.kind.nibble() << 4) | VERSION;
        out[1] = ext;
        out[2..4].copy_from_slice(&self.conn_id.to_be_bytes());
        out[4..8].copy_from_slice(&self.timestamp_us.to_be_bytes());
        out[8..12].copy_from_slice(&self.timestamp_diff_us.to_be_bytes());
        out[12..16].copy_from_slice(&self.wnd_size.to_be_bytes());
        out[16..18].copy_from_slice(&self.seq_nr.to_be_bytes());
        out[18..20].copy_from_slice(&self.ack_nr.to_be_bytes());
    }
}

/// Write a selective ACK extension (`[0, len, mask]`, the last in the chain) at
/// `out[..2 + mask.len()]`; returns the bytes written.
pub fn write_sack(mask: &[u8], out: &mut [u8]) -> usize {
    out[0] = 0;
    out[1] = mask.len() as u8;
    out[2..2 + mask.len()].copy_from_slice(mask);
    2 + mask.len()
}

/// Whether a selective ACK `mask` (relative to `ack_nr`) marks `seq` received.
pub fn sack_has(mask: &[u8], ack_nr: u16, seq: u16) -> bool {
    let i = seq.wrapping_sub(ack_nr).wrapping_sub(2) as usize;
    i < mask.len() * 8 && mask[i / 8] & (1 << (i % 8)) != 0
}

/// `a` comes before `b` in sequence space (16-bit, wrapping).
pub fn seq_less(a: u16, b: u16) -> bool {
    (a.wrapping_sub(b) as i16) < 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: PacketType) -> Header {
        Header {
            kind,
            conn_id: 0x1234,
            timestamp_us: 0xdead_beef,
            timestamp_diff_us: 77,
            wnd_size: 1 << 20,
            seq_nr: 65535,
            ack_nr: 9,
        }
    }

    #[test]
    fn a_header_round_trips() {
        for kind in [
            PacketType::Data,
            PacketType::Fin,
            PacketType::State,
            PacketType::Reset,
            PacketType::Syn,
        ] {
            let mut buf = [0u8; 24];
            header(kind).write(0, &mut buf);
            buf[20..].copy_from_slice(b"abcd");
            let p = Packet::parse(&buf).unwrap();
            assert_eq!(p.header, header(kind));
            assert_eq!(p.payload, b"abcd");
            assert_eq!(p.sack, None);
        }
    }

    #[test]
    fn the_wire_layout_is_bep_29() {
        let mut buf = [0u8; 20];
        header(PacketType::Syn).write(0, &mut buf);
        assert_eq!(buf[0], 0x41, "type 4 in the high nibble, version 1");
        assert_eq!(&buf[2..4], &[0x12, 0x34]);
        assert_eq!(&buf[16..20], &[0xff, 0xff, 0, 9]);
    }

    #[test]
    fn a_selective_ack_is_read_and_unknown_extensions_are_skipped() {
        let mut buf = vec![0u8; 20];
        header(PacketType::State).write(3, &mut buf);
        // type 3 (close reason, 4 bytes) then type 1 (SACK, 4 bytes), then payload
        buf.extend_from_slice(&[1, 4, 0, 0, 0, 7]);
        buf.extend_from_slice(&[0, 4, 0b101, 0, 0, 0x80]);
        buf.extend_from_slice(b"x");
        let p = Packet::parse(&buf).unwrap();
        let mask = p.sack.unwrap();
        assert_eq!(p.payload, b"x");
        assert!(sack_has(mask, 9, 11), "bit 0 = ack_nr + 2");
        assert!(!sack_has(mask, 9, 12));
        assert!(sack_has(mask, 9, 13));
        assert!(sack_has(mask, 9, 11 + 31));
        assert!(!sack_has(mask, 9, 11 + 32), "past the mask");
        assert!(!sack_has(mask, 9, 9), "before the mask");
    }

    #[test]
    fn malformed_datagrams_are_errors() {
        assert_eq!(Packet::parse(&[0x41; 19]), Err(PacketError::Short));
        let mut buf = [0u8; 20];
        header(PacketType::Data).write(0, &mut buf);
        buf[0] = 0x02;
        assert_eq!(Packet::parse(&buf), Err(PacketError::NotUtp(2)));
        buf[0] = 0x51;
        assert_eq!(Packet::parse(&buf), Err(PacketError::NotUtp(0x51)));
        let mut buf = vec![0u8; 20];
        header(PacketType::Data).write(1, &mut buf);
        assert_eq!(Packet::parse(&buf), Err(PacketError::Truncated));
        buf.extend_from_slice(&[0, 8, 1, 2]);
        assert_eq!(Packet::parse(&buf), Err(PacketError::Truncated));
    }

    #[test]
    fn a_selective_ack_of_any_length_is_read_and_an_empty_one_is_none() {
        // libtorrent sends (span + 7) / 8 bytes: 1, 3, 10, ... (seen from qBittorrent 4.5)
        for len in [1usize, 3, 5, 10, 31, 32, 255] {
            let mut buf = vec![0u8; 20];
            header(PacketType::State).write(EXT_SACK, &mut buf);
            buf.extend_from_slice(&[0, len as u8]);
            let mask: Vec<u8> = (0..len).map(|i| i as u8 | 1).collect();
            buf.extend_from_slice(&mask);
            let p = Packet::parse(&buf).unwrap();
            assert_eq!(p.sack, Some(&mask[..]), "{len} bytes");
            assert!(p.payload.is_empty());
        }
        let mut buf = vec![0u8; 20];
        header(PacketType::State).write(EXT_SACK, &mut buf);
        buf.extend_from_slice(&[0, 0]);
        assert_eq!(Packet::parse(&buf).unwrap().sack, None);
    }

    #[test]
    fn a_long_chain_of_empty_extensions_ends() {
        let mut buf = vec![0u8; 20];
        header(PacketType::Data).write(9, &mut buf);
        for _ in 0..1000 {
            buf.extend_from_slice(&[9, 0]);
        }
        buf.extend_from_slice(&[0, 0]);
        let p = Packet::parse(&buf).unwrap();
        assert!(p.payload.is_empty());
    }

    #[test]
    fn sequence_numbers_wrap() {
        assert!(seq_less(65535, 0));
        assert!(seq_less(1, 2));
        assert!(!seq_less(2, 1));
        assert!(!seq_less(0, 65535));
        let mut mask = [0u8; 4];
        mask[0] = 1;
        assert!(sack_has(&mask, 65534, 0));
    }
}
