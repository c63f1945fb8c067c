//! The BEP 10 extension protocol handshake (extended message id 0).
//!
//! We use it to learn the peer's request-queue depth (`reqq`) and client name (`v`), and to
//! advertise ours. No extension messages are registered yet (`m` is empty).

use bendy::encoding::{Error as EncodeError, SingleItemEncoder, ToBencode};
use bytes::Bytes;

use crate::bencode;

/// Requests we accept queued from one peer (advertised as `reqq`).
pub const OUR_REQQ: u32 = 2000;

/// What we learn from a peer's extension handshake.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtHandshake {
    /// Requests the peer accepts in flight (`reqq`), when it says so and the value is sane.
    pub reqq: Option<u32>,
    /// Client name and version (`v`), lossy UTF-8, at most 64 chars, control chars removed.
    pub client: Option<String>,
    /// The peer's listen port (`p`), when given and non-zero.
    pub listen_port: Option<u16>,
}

/// Our handshake payload: `{m: {}, p: <port>, reqq: OUR_REQQ, v: "ratorrent <version>"}`.
pub fn encode_handshake(listen_port: u16) -> Bytes {
    struct Ours(u16);
    struct Empty;
    impl ToBencode for Empty {
        const MAX_DEPTH: usize = 1;
        fn encode(&self, e: SingleItemEncoder) -> Result<(), EncodeError> {
            e.emit_dict(|_| Ok(()))
        }
    }
    impl ToBencode for Ours {
        const MAX_DEPTH: usize = 2;
        fn encode(&self, e: SingleItemEncoder) -> Result<(), EncodeError> {
            e.emit_dict(|mut d| {
                d.emit_pair(b"m", Empty)?;
                if self.0 != 0 {
                    d.emit_pair(b"p", u32::from(self.0))?;
                }
                d.emit_pair(b"reqq", OUR_REQQ)?;
                d.emit_pair(b"v", concat!("ratorrent ", env!("CARGO_PKG_VERSION")))
            })
        }
    }
    Bytes::from(
        Ours(listen_port)
            .to_bencode()
            .unwrap_or_else(|_| b"de".to_vec()),
    )
}

/// Parse a peer's extension handshake. Unknown keys are ignored; values of the wrong type
/// or out of range are treated as absent (a peer's odd handshake is not fatal).
///
/// # Errors
/// The bencode error when the payload is not a bencoded dictionary.
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
        String::from_utf8_lossy(b)
            .chars()
            .filter(|c| !c.is_control())
            .take(64)
            .collect()
    });
    let listen_port = d
        .get_int(b"p")
        .filter(|&p| (1..=65535).contains(&p))
        .map(|p| p as u16);
    Ok(ExtHandshake {
        reqq,
        client,
        listen_port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_handshake_is_canonical_and_parses_back() {
        let b = encode_handshake(6881);
        let s = String::from_utf8_lossy(&b);
        assert!(s.starts_with("d1:mde1:pi6881e4:reqqi2000e1:v"), "{s}");
        let h = parse_handshake(&b).unwrap();
        assert_eq!(h.reqq, Some(OUR_REQQ));
        assert_eq!(h.listen_port, Some(6881));
        assert!(h.client.unwrap().starts_with("ratorrent "));
    }

    #[test]
    fn odd_values_are_ignored() {
        let h = parse_handshake(b"d4:reqqi-5e1:pi70000e1:v3:a\x01be").unwrap();
        assert_eq!(h.reqq, None);
        assert_eq!(h.listen_port, None);
        assert_eq!(h.client.as_deref(), Some("ab"));
        // unsorted keys and a negative metadata_size are fine here
        assert!(parse_handshake(b"d1:v1:x13:metadata_sizei-1e1:md11:ut_metadatai3eee").is_ok());
        assert!(parse_handshake(b"le").unwrap() == ExtHandshake::default());
        assert!(parse_handshake(b"d4:reqq").is_err());
    }
}
