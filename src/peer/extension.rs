//! The BEP 10 extension protocol handshake (extended message id 0).
//!
//! Ours advertises `m` (the extensions we speak, with the ids the peer must use to send
//! them to us: [`UT_METADATA_ID`], [`UT_PEX_ID`]), `p` (our listen port), `v` (client),
//! `reqq` (requests we queue), `metadata_size` (BEP 9, when we have the info dictionary) and
//! `yourip` (the peer's address as we see it). From the peer's we learn the ids to send
//! its extensions with, its `reqq`, `v`, `p`, `metadata_size` and `yourip`. Unknown keys
//! and extensions are ignored; a value of the wrong type or out of range counts as absent,
//! except a `metadata_size` that cannot be true, which [`ExtHandshake::metadata_size`]
//! refuses (the peer is then not asked for metadata).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bendy::encoding::{Error as EncodeError, SingleItemEncoder, ToBencode};
use bytes::Bytes;
use thiserror::Error;

use crate::bencode;

/// Requests we accept queued from one peer (advertised as `reqq`).
pub const OUR_REQQ: u32 = 2000;
/// The id peers send us `ut_metadata` messages with (BEP 9).
pub const UT_METADATA_ID: u8 = 3;
/// The id peers send us `ut_pex` messages with (BEP 11).
pub const UT_PEX_ID: u8 = 1;

/// What we put in our extension handshake.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OurHandshake {
    /// Our TCP listen port (`p`); 0 leaves it out.
    pub listen_port: u16,
    /// Size of the info dictionary we can serve, bytes (`metadata_size`); `None` while we
    /// have no metadata (BEP 9: then it is left out).
    pub metadata_size: Option<u32>,
    /// The peer's address as we see it (`yourip`: 4 or 16 bytes).
    pub yourip: Option<IpAddr>,
    /// Offer `ut_pex` (off for private torrents, BEP 27).
    pub pex: bool,
}

/// What we learn from a peer's extension handshake.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtHandshake {
    /// Requests the peer accepts in flight (`reqq`), when it says so and the value is sane.
    pub reqq: Option<u32>,
    /// Client name and version (`v`), lossy UTF-8, at most 64 chars, control chars removed.
    pub client: Option<String>,
    /// The peer's listen port (`p`), when given and non-zero.
    pub listen_port: Option<u16>,
    /// The id to send `ut_metadata` messages to this peer with (`m`); `None` when it does
    /// not speak BEP 9 (absent, 0 = disabled, or not 1..=255).
    pub ut_metadata: Option<u8>,
    /// The id to send `ut_pex` messages to this peer with (`m`), as for `ut_metadata`.
    pub ut_pex: Option<u8>,
    /// `metadata_size` exactly as sent (checked by [`ExtHandshake::metadata_size`]).
    pub metadata_size_raw: Option<i64>,
    /// Our address as the peer sees it (`yourip`, 4 or 16 bytes).
    pub yourip: Option<IpAddr>,
}

/// A peer's `metadata_size` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MetadataSizeError {
    /// Negative.
    #[error("extended handshake: invalid metadata_size {0}")]
    Invalid(i64),
    /// Above our cap.
    #[error(
        "extended handshake: metadata_size {size} is larger than the {cap}-byte limit (max_metadata_size)"
    )]
    TooLarge {
        /// What the peer said, bytes.
        size: i64,
        /// Our cap, bytes.
        cap: u32,
    },
}

impl ExtHandshake {
    /// The peer's info dictionary size (BEP 9), bytes: `Ok(None)` when it did not say or
    /// said 0 (it has no metadata to serve yet: keep the peer, do not ask it, and look
    /// again at its next handshake), `Ok(Some(n))` for 1 ..= `cap`.
    ///
    /// # Errors
    /// [`MetadataSizeError`] for a negative size or one above `cap`: never size a buffer
    /// from it, and do not ask this peer for metadata.
    pub fn metadata_size(&self, cap: u32) -> Result<Option<u32>, MetadataSizeError> {
        match self.metadata_size_raw {
            None | Some(0) => Ok(None),
            Some(n) if n < 0 => Err(MetadataSizeError::Invalid(n)),
            Some(n) if n > i64::from(cap) => Err(MetadataSizeError::TooLarge { size: n, cap }),
            Some(n) => Ok(Some(n as u32)),
        }
    }
}

struct Dict<F: Fn(&mut bendy::encoding::SortedDictEncoder) -> Result<(), EncodeError>>(F);

impl<F: Fn(&mut bendy::encoding::SortedDictEncoder) -> Result<(), EncodeError>> ToBencode
    for Dict<F>
{
    const MAX_DEPTH: usize = 2;
    fn encode(&self, e: SingleItemEncoder) -> Result<(), EncodeError> {
        e.emit_dict(|mut d| (self.0)(&mut d))
    }
}

/// Our handshake payload, e.g.
/// `{m: {ut_metadata: 3, ut_pex: 1}, metadata_size: N, p: <port>, reqq: 2000,
/// v: "ratorrent <version>", yourip: <4 or 16 bytes>}`.
pub fn encode_handshake(ours: &OurHandshake) -> Bytes {
    let pex = ours.pex;
    let m = Dict(move |d| {
        d.emit_pair(b"ut_metadata", u32::from(UT_METADATA_ID))?;
        if pex {
            d.emit_pair(b"ut_pex", u32::from(UT_PEX_ID))?;
        }
        Ok(())
    });
    let yourip: Option<Vec<u8>> = ours.yourip.map(|ip| match ip {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => v6.octets().to_vec(),
    });
    let top = Dict(|d| {
        d.emit_pair(b"m", &m)?;
        if let Some(n) = ours.metadata_size {
            d.emit_pair(b"metadata_size", n)?;
        }
        if ours.listen_port != 0 {
            d.emit_pair(b"p", u32::from(ours.listen_port))?;
        }
        d.emit_pair(b"reqq", OUR_REQQ)?;
        d.emit_pair(b"v", concat!("ratorrent ", env!("CARGO_PKG_VERSION")))?;
        if let Some(ip) = &yourip {
            d.emit_pair_with(b"yourip", |e| e.emit_bytes(ip))?;
        }
        Ok(())
    });
    Bytes::from(top.to_bencode().unwrap_or_else(|_| b"de".to_vec()))
}

fn ext_id(v: Option<i64>) -> Option<u8> {
    v.filter(|&i| (1..=255).contains(&i)).map(|i| i as u8)
}

/// Parse a peer's extension handshake. Unknown keys are ignored; values of the wrong type
/// or out of range are treated as absent (a peer's odd handshake is not fatal).
///
/// # Errors
/// The bencode error when the payload is not bencode.
pub fn parse_handshake(payload: &[u8]) -> Result<ExtHandshake, bencode::DecodeError> {
    let (v, _) = bencode::decode_prefix(payload)?;
    let Some(d) = v.as_dict() else {
        return Ok(ExtHandshake::default());
    };
    let reqq = d
        .get_int(b"reqq")
        .filter(|&r| r > 0)
        .map(|r| r.min(100_000) as u32);
    let client = d.get_bytes(b"v").map(|b| {
        crate::untrusted::line_from_bytes(b)
            .chars()
            .take(64)
            .collect()
    });
    let listen_port = d
        .get_int(b"p")
        .filter(|&p| (1..=65535).contains(&p))
        .map(|p| p as u16);
    let m = d.get_dict(b"m");
    let ut_metadata = ext_id(m.and_then(|m| m.get_int(b"ut_metadata")));
    let ut_pex = ext_id(m.and_then(|m| m.get_int(b"ut_pex")));
    let yourip = d.get_bytes(b"yourip").and_then(|b| match b.len() {
        4 => Some(IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))),
        16 => {
            let mut o = [0u8; 16];
            o.copy_from_slice(b);
            Some(IpAddr::V6(Ipv6Addr::from(o)))
        }
        _ => None,
    });
    Ok(ExtHandshake {
        reqq,
        client,
        listen_port,
        ut_metadata,
        ut_pex,
        metadata_size_raw: d.get_int(b"metadata_size"),
        yourip,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_handshake_is_canonical_and_parses_back() {
        let b = encode_handshake(&OurHandshake {
            listen_port: 6881,
            metadata_size: Some(41665),
            yourip: Some("127.0.0.2".parse().unwrap()),
            pex: true,
        });
        let s = String::from_utf8_lossy(&b);
        assert!(
            s.starts_with(
                "d1:md11:ut_metadatai3e6:ut_pexi1ee13:metadata_sizei41665e1:pi6881e4:reqqi2000e1:v"
            ),
            "{s}"
        );
        let h = parse_handshake(&b).unwrap();
        assert_eq!(h.reqq, Some(OUR_REQQ));
        assert_eq!(h.listen_port, Some(6881));
        assert!(h.client.as_deref().unwrap().starts_with("ratorrent "));
        assert_eq!(h.ut_metadata, Some(UT_METADATA_ID));
        assert_eq!(h.ut_pex, Some(UT_PEX_ID));
        assert_eq!(h.metadata_size(1 << 20), Ok(Some(41665)));
        assert_eq!(h.yourip, Some("127.0.0.2".parse().unwrap()));
        // without metadata nor pex (a private torrent being fetched)
        let b = encode_handshake(&OurHandshake::default());
        let s = String::from_utf8_lossy(&b);
        assert!(s.starts_with("d1:md11:ut_metadatai3ee4:reqq"), "{s}");
        let h = parse_handshake(&b).unwrap();
        assert_eq!(h.ut_pex, None);
        assert_eq!(h.metadata_size(1 << 20), Ok(None));
    }

    #[test]
    fn odd_values_are_ignored() {
        let h = parse_handshake(b"d4:reqqi-5e1:pi70000e1:v3:a\x01b6:yourip3:abce").unwrap();
        assert_eq!(h.reqq, None);
        assert_eq!(h.listen_port, None);
        assert_eq!(h.client.as_deref(), Some("a\u{fffd}b"));
        assert_eq!(h.yourip, None);
        // ids out of range or disabled (0), m of the wrong type
        let h = parse_handshake(b"d1:md11:ut_metadatai0e6:ut_pexi256eee").unwrap();
        assert_eq!((h.ut_metadata, h.ut_pex), (None, None));
        let h = parse_handshake(b"d1:mli1eee").unwrap();
        assert_eq!(h.ut_metadata, None);
        // unsorted keys; the ids are the peer's own
        let h = parse_handshake(b"d1:v1:x13:metadata_sizei7e1:md6:ut_pexi9e11:ut_metadatai42eee")
            .unwrap();
        assert_eq!((h.ut_metadata, h.ut_pex), (Some(42), Some(9)));
        assert!(parse_handshake(b"le").unwrap() == ExtHandshake::default());
        assert!(parse_handshake(b"d4:reqq").is_err());
    }

    #[test]
    fn metadata_sizes_that_cannot_be_true_are_refused() {
        let size = |raw: &[u8]| parse_handshake(raw).unwrap().metadata_size(32 << 20);
        assert_eq!(
            size(b"d13:metadata_sizei-1ee").unwrap_err().to_string(),
            "extended handshake: invalid metadata_size -1"
        );
        // 0: it has none to serve yet (issue 16), like no size at all
        assert_eq!(size(b"d13:metadata_sizei0ee"), Ok(None));
        assert!(size(b"d13:metadata_sizei-9223372036854775808ee").is_err());
        assert!(matches!(
            size(b"d13:metadata_sizei9223372036854775807ee"),
            Err(MetadataSizeError::TooLarge { .. })
        ));
        // a large legitimate info dictionary (14 MB, many files) is fine
        assert_eq!(size(b"d13:metadata_sizei14292960ee"), Ok(Some(14_292_960)));
        // wrong type: absent
        assert_eq!(size(b"d13:metadata_size3:abce"), Ok(None));
    }
}
