//! Peer exchange messages (BEP 11, `ut_pex` over BEP 10).
//!
//! A message is a bencoded dictionary of compact address lists: `added` / `dropped`
//! (6 bytes per IPv4 peer: address then port, big-endian), `added6` / `dropped6` (18 bytes
//! per IPv6 peer) and one flag byte per added peer in `added.f` / `added6.f`
//! (see the `FLAG_*` constants). Each side sends at most one message a minute, the first one
//! the peers it is connected to, later ones the difference.
//!
//! Parsing is bounded: a payload above [`MAX_MESSAGE`] bytes is refused, at most
//! [`MAX_ACCEPTED`] entries per list are read (the rest is ignored), and addresses no one
//! can dial (port 0, unspecified, multicast, broadcast) are dropped.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::Bytes;
use thiserror::Error;

use crate::bencode;

/// The peer prefers encrypted connections (BEP 11 flag 0x01).
pub const FLAG_ENCRYPTION: u8 = 0x01;
/// The peer is a seed or upload-only (flag 0x02).
pub const FLAG_SEED: u8 = 0x02;
/// The peer supports uTP (flag 0x04).
pub const FLAG_UTP: u8 = 0x04;
/// The peer supports the holepunch extension (flag 0x08).
pub const FLAG_HOLEPUNCH: u8 = 0x08;
/// The sender reached the peer with an outgoing connection (flag 0x10).
pub const FLAG_REACHABLE: u8 = 0x10;

/// Most entries we put in one `added` or `dropped` list (BEP 11: no more than 50).
pub const MAX_SENT: usize = 50;
/// Most entries we read from one list of a received message; more are ignored.
pub const MAX_ACCEPTED: usize = 100;
/// Largest `ut_pex` payload we parse, bytes (a full message of 4 lists of 100 IPv6 peers
/// is under 8 KiB).
pub const MAX_MESSAGE: usize = 64 * 1024;
/// Shortest gap between two messages to the same peer (BEP 11 asks for about a minute;
/// libtorrent disconnects peers that send more often), in seconds.
pub const INTERVAL_SECS: u64 = 60;

/// One peer in an `added` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PexPeer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `FLAG_*` bits.
    pub flags: u8,
}

/// A decoded `ut_pex` message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PexMessage {
    /// Peers the sender connected to (IPv4 then IPv6), at most [`MAX_ACCEPTED`] of each.
    pub added: Vec<PexPeer>,
    /// Peers the sender is no longer connected to.
    pub dropped: Vec<SocketAddr>,
    /// Entries beyond [`MAX_ACCEPTED`] per list or undialable, which were ignored.
    pub ignored: usize,
}

/// Why a `ut_pex` payload was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PexError {
    /// Above [`MAX_MESSAGE`].
    #[error("ut_pex message of {0} bytes is too large")]
    TooLarge(usize),
    /// Not a bencoded dictionary.
    #[error("ut_pex message is not a bencoded dictionary: {0}")]
    NotBencode(String),
    /// A compact list whose length is not a multiple of its entry size.
    #[error("ut_pex `{key}` is {len} bytes, not a multiple of {entry}")]
    BadLength {
        /// The list's key.
        key: &'static str,
        /// Its length in bytes.
        len: usize,
        /// 6 (IPv4) or 18 (IPv6).
        entry: usize,
    },
}

/// Whether anyone could dial `addr`.
fn dialable(addr: &SocketAddr) -> bool {
    if addr.port() == 0 {
        return false;
    }
    match addr.ip() {
        IpAddr::V4(v4) => !(v4.is_unspecified() || v4.is_broadcast() || v4.is_multicast()),
        IpAddr::V6(v6) => !(v6.is_unspecified() || v6.is_multicast()),
    }
}

fn read_list(
    d: &bencode::Dict<'_>,
    key: &'static str,
    entry: usize,
    ignored: &mut usize,
) -> Result<Vec<SocketAddr>, PexError> {
    let Some(b) = d.get_bytes(key.as_bytes()) else {
        return Ok(Vec::new());
    };
    if b.len() % entry != 0 {
        return Err(PexError::BadLength {
            key,
            len: b.len(),
            entry,
        });
    }
    let n = b.len() / entry;
    *ignored += n.saturating_sub(MAX_ACCEPTED);
    Ok(b.chunks_exact(entry)
        .take(MAX_ACCEPTED)
        .map(|c| {
            let (ip, port) = c.split_at(entry - 2);
            let port = u16::from_be_bytes([port[0], port[1]]);
            let ip = if entry == 6 {
                IpAddr::V4(Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3]))
            } else {
                let mut o = [0u8; 16];
                o.copy_from_slice(ip);
                IpAddr::V6(Ipv6Addr::from(o))
            };
            SocketAddr::new(ip, port)
        })
        .collect())
}

/// Parse a `ut_pex` payload. Flags missing or of the wrong length read as 0; undialable
/// addresses and entries past [`MAX_ACCEPTED`] per list are left out (counted in `ignored`).
///
/// # Errors
/// [`PexError`] for oversized payloads, non-dictionaries and compact lists of a wrong length.
pub fn parse(payload: &[u8]) -> Result<PexMessage, PexError> {
    if payload.len() > MAX_MESSAGE {
        return Err(PexError::TooLarge(payload.len()));
    }
    let (v, _) =
        bencode::decode_prefix(payload).map_err(|e| PexError::NotBencode(e.to_string()))?;
    let Some(d) = v.as_dict() else {
        return Err(PexError::NotBencode(format!("a {}", v.kind())));
    };
    let mut out = PexMessage::default();
    for (list, flags_key, entry) in [("added", "added.f", 6), ("added6", "added6.f", 18)] {
        let addrs = read_list(d, list, entry, &mut out.ignored)?;
        let flags = d
            .get_bytes(flags_key.as_bytes())
            .filter(|f| f.len() * entry == d.get_bytes(list.as_bytes()).map_or(0, <[u8]>::len));
        for (i, addr) in addrs.into_iter().enumerate() {
            if !dialable(&addr) {
                out.ignored += 1;
                continue;
            }
            let flags = flags.and_then(|f| f.get(i)).copied().unwrap_or(0);
            out.added.push(PexPeer { addr, flags });
        }
    }
    for (list, entry) in [("dropped", 6), ("dropped6", 18)] {
        out.dropped
            .extend(read_list(d, list, entry, &mut out.ignored)?);
    }
    Ok(out)
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(b.len().to_string().as_bytes());
    out.push(b':');
    out.extend_from_slice(b);
}

fn compact(addr: &SocketAddr, out: &mut Vec<u8>) {
    match addr.ip() {
        IpAddr::V4(v4) => out.extend_from_slice(&v4.octets()),
        IpAddr::V6(v6) => out.extend_from_slice(&v6.octets()),
    }
    out.extend_from_slice(&addr.port().to_be_bytes());
}

/// Encode a message of `added` and `dropped` peers, at most [`MAX_SENT`] of each address
/// family and list (the rest is left out; the caller sends it next time). IPv4-mapped IPv6
/// addresses go in the IPv4 lists. Every key is written, possibly empty, in sorted order:
/// `{added, added.f, added6, added6.f, dropped, dropped6}`.
pub fn encode(added: &[PexPeer], dropped: &[SocketAddr]) -> Bytes {
    let canon = |a: &SocketAddr| match a.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), a.port()),
            None => *a,
        },
        IpAddr::V4(_) => *a,
    };
    let (mut a4, mut f4, mut a6, mut f6) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for p in added {
        let a = canon(&p.addr);
        if a.is_ipv4() && f4.len() < MAX_SENT {
            compact(&a, &mut a4);
            f4.push(p.flags);
        } else if a.is_ipv6() && f6.len() < MAX_SENT {
            compact(&a, &mut a6);
            f6.push(p.flags);
        }
    }
    let (mut d4, mut d6, mut n4, mut n6) = (Vec::new(), Vec::new(), 0, 0);
    for a in dropped.iter().map(canon) {
        if a.is_ipv4() && n4 < MAX_SENT {
            compact(&a, &mut d4);
            n4 += 1;
        } else if a.is_ipv6() && n6 < MAX_SENT {
            compact(&a, &mut d6);
            n6 += 1;
        }
    }
    let mut out = Vec::with_capacity(64 + a4.len() + a6.len() + d4.len() + d6.len());
    out.push(b'd');
    for (k, v) in [
        (&b"added"[..], &a4),
        (b"added.f", &f4),
        (b"added6", &a6),
        (b"added6.f", &f6),
        (b"dropped", &d4),
        (b"dropped6", &d6),
    ] {
        put_bytes(&mut out, k);
        put_bytes(&mut out, v);
    }
    out.push(b'e');
    Bytes::from(out)
}

/// What to tell one peer next: the peers connected now that it has not been told about
/// (`added`) and those it was told about that are gone (`dropped`), each at most
/// [`MAX_SENT`]. `told` is updated to what the peer will know after the message, so
/// entries left out go in a later one. Returns `None` when there is nothing to say.
pub fn diff(
    told: &mut std::collections::HashSet<SocketAddr>,
    now: &[PexPeer],
    recipient: SocketAddr,
) -> Option<(Vec<PexPeer>, Vec<SocketAddr>)> {
    let current: std::collections::HashSet<SocketAddr> = now.iter().map(|p| p.addr).collect();
    let dropped: Vec<SocketAddr> = told
        .iter()
        .filter(|a| !current.contains(a))
        .take(MAX_SENT)
        .copied()
        .collect();
    let added: Vec<PexPeer> = now
        .iter()
        .filter(|p| p.addr != recipient && !told.contains(&p.addr))
        .take(MAX_SENT)
        .copied()
        .collect();
    if added.is_empty() && dropped.is_empty() {
        return None;
    }
    for a in &dropped {
        told.remove(a);
    }
    told.extend(added.iter().map(|p| p.addr));
    Some((added, dropped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn v4(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn round_trip_both_families_with_flags() {
        let added = [
            PexPeer {
                addr: v4("10.0.0.1:6881"),
                flags: FLAG_SEED | FLAG_REACHABLE,
            },
            PexPeer {
                addr: "[2001:db8::1]:51413".parse().unwrap(),
                flags: FLAG_UTP,
            },
            PexPeer {
                addr: "[::ffff:192.0.2.7]:7000".parse().unwrap(),
                flags: 0,
            },
        ];
        let dropped = [v4("10.0.0.9:1"), "[2001:db8::2]:2".parse().unwrap()];
        let b = encode(&added, &dropped);
        assert!(
            b.starts_with(b"d5:added12:"),
            "{:?}",
            String::from_utf8_lossy(&b)
        );
        let m = parse(&b).unwrap();
        assert_eq!(m.added.len(), 3);
        assert_eq!(m.added[0], added[0]);
        assert_eq!(
            m.added[1].addr,
            v4("192.0.2.7:7000"),
            "mapped address goes in added"
        );
        assert_eq!(m.added[2], added[1]);
        assert_eq!(m.dropped, dropped.to_vec());
        assert_eq!(m.ignored, 0);
    }

    #[test]
    fn known_libtorrent_shape_parses() {
        // what libtorrent sends: all six keys, empty ones included
        let mut p = b"d5:added6:".to_vec();
        p.extend_from_slice(&[127, 0, 0, 4, 0x1a, 0xe1]);
        p.extend_from_slice(b"7:added.f1:\x02");
        p.extend_from_slice(b"6:added60:8:added6.f0:7:dropped0:8:dropped60:e");
        let m = parse(&p).unwrap();
        assert_eq!(
            m.added,
            vec![PexPeer {
                addr: v4("127.0.0.4:6881"),
                flags: FLAG_SEED
            }]
        );
        assert!(m.dropped.is_empty());
    }

    #[test]
    fn hostile_payloads_are_refused_or_bounded() {
        assert!(matches!(
            parse(&vec![b'x'; MAX_MESSAGE + 1]),
            Err(PexError::TooLarge(_))
        ));
        assert!(matches!(parse(b"i42e"), Err(PexError::NotBencode(_))));
        assert!(matches!(parse(b"d5:added"), Err(PexError::NotBencode(_))));
        assert!(matches!(
            parse(b"d5:added5:abcdee"),
            Err(PexError::BadLength { key: "added", .. })
        ));
        assert!(matches!(
            parse(b"d8:dropped67:aaaaaaae"),
            Err(PexError::BadLength {
                key: "dropped6",
                ..
            })
        ));
        // 1,000 entries: only MAX_ACCEPTED read
        let mut many = Vec::new();
        for i in 0..1000u32 {
            many.extend_from_slice(&(0x0a00_0000 + i).to_be_bytes());
            many.extend_from_slice(&1234u16.to_be_bytes());
        }
        let mut p = format!("d5:added{}:", many.len()).into_bytes();
        p.extend_from_slice(&many);
        p.push(b'e');
        let m = parse(&p).unwrap();
        assert_eq!(m.added.len(), MAX_ACCEPTED);
        assert_eq!(m.ignored, 1000 - MAX_ACCEPTED);
        // undialable addresses are ignored, flags of a wrong length read as 0
        let mut p = b"d5:added24:".to_vec();
        for (ip, port) in [
            ([0, 0, 0, 0], 1u16),
            ([1, 2, 3, 4], 0),
            ([224, 0, 0, 1], 5),
            ([1, 2, 3, 4], 5),
        ] {
            p.extend_from_slice(&ip);
            p.extend_from_slice(&port.to_be_bytes());
        }
        p.extend_from_slice(b"7:added.f2:\xff\xffe");
        let m = parse(&p).unwrap();
        assert_eq!(
            m.added,
            vec![PexPeer {
                addr: v4("1.2.3.4:5"),
                flags: 0
            }]
        );
        assert_eq!(m.ignored, 3);
    }

    #[test]
    fn diff_sends_news_once_and_drops_the_gone() {
        let me = v4("127.0.0.9:9");
        let peers = |list: &[&str]| -> Vec<PexPeer> {
            list.iter()
                .map(|s| PexPeer {
                    addr: v4(s),
                    flags: 0,
                })
                .collect()
        };
        let mut told = HashSet::new();
        let (a, d) = diff(&mut told, &peers(&["1.1.1.1:1", "127.0.0.9:9"]), me).unwrap();
        assert_eq!(a, peers(&["1.1.1.1:1"]), "never the recipient itself");
        assert!(d.is_empty());
        assert_eq!(diff(&mut told, &peers(&["1.1.1.1:1"]), me), None);
        let (a, d) = diff(&mut told, &peers(&["2.2.2.2:2"]), me).unwrap();
        assert_eq!(a, peers(&["2.2.2.2:2"]));
        assert_eq!(d, vec![v4("1.1.1.1:1")]);
        // 120 new peers: 50 now, 50 next time, 20 after
        let many: Vec<PexPeer> = (0..120u32)
            .map(|i| PexPeer {
                addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::from(0x0b00_0000 + i)), 1),
                flags: 0,
            })
            .collect();
        let sizes: Vec<usize> =
            std::iter::from_fn(|| diff(&mut told, &many, me).map(|(a, d)| a.len() + d.len()))
                .take(5)
                .collect();
        assert_eq!(sizes, vec![51, 50, 20], "first one also drops 2.2.2.2");
        let b = encode(&many, &[]);
        assert_eq!(
            parse(&b).unwrap().added.len(),
            MAX_SENT,
            "encode caps at 50"
        );
    }
}
