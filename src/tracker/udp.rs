//! UDP trackers (BEP 15): connect, announce and scrape over UDP, IPv4 and IPv6.
//!
//! Two layers:
//! - the codec ([`encode_connect`], [`parse_connect`], [`encode_announce`],
//!   [`parse_announce`], [`encode_scrape`], [`parse_scrape`]): pure functions over byte
//!   slices that check sizes, actions and transaction ids and never panic on any input;
//! - [`UdpTracker`]: the exchange. A connection id is reused for a minute per tracker
//!   address (BEP 15 §connect); a request not answered is sent again after 15·2ⁿ s
//!   (BEP 15 §time outs), here for n = 0..3 (15 + 30 + 60 + 120 s) before the announce is
//!   given up as timed out, so the tier can try its next tracker instead of waiting the
//!   BEP's full hour. An `error` answer (action 3) is shown as the tracker's message; one
//!   saying the connection id is wrong drops the cached id and connects again once.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{
    AnnounceEvent, AnnounceRequest, AnnounceResponse, MAX_INTERVAL_SECS, MIN_INTERVAL_SECS,
    ScrapeStats, TrackerError, sanitize_message,
};
use crate::lock::MutexExt;
use crate::metainfo::InfoHash;

/// BEP 15 magic `protocol_id` of a connect request.
pub const PROTOCOL_ID: u64 = 0x0417_2710_1980;
/// BEP 15 actions.
pub mod action {
    /// connect
    pub const CONNECT: u32 = 0;
    /// announce
    pub const ANNOUNCE: u32 = 1;
    /// scrape
    pub const SCRAPE: u32 = 2;
    /// error
    pub const ERROR: u32 = 3;
}
/// How long a connection id may be used (BEP 15: one minute).
pub const CONNECTION_ID_TTL: Duration = Duration::from_secs(60);
/// First retransmission timeout (BEP 15: 15 s, doubling).
pub const FIRST_TIMEOUT: Duration = Duration::from_secs(15);
/// Sends of one request before giving up (15, 30, 60, 120 s).
pub const ATTEMPTS: u32 = 4;
/// Largest datagram read, bytes (a bigger one is cut and parsed as far as it is whole).
pub const MAX_DATAGRAM: usize = 65_536;
/// Most info hashes in one scrape (BEP 15: about 74 fit in a 1500-byte datagram).
pub const MAX_SCRAPE: usize = 74;

/// A connect request (16 bytes).
pub fn encode_connect(transaction_id: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&PROTOCOL_ID.to_be_bytes());
    b[8..12].copy_from_slice(&action::CONNECT.to_be_bytes());
    b[12..].copy_from_slice(&transaction_id.to_be_bytes());
    b
}

fn invalid(reason: &str, body: &[u8]) -> TrackerError {
    TrackerError::InvalidResponse {
        reason: format!("tracker response {reason}"),
        excerpt: super::excerpt(body),
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// Check the header of an answer: an `error` (action 3) becomes
/// [`TrackerError::Failure`] with its message; a wrong transaction id or action is refused.
fn check_header(b: &[u8], transaction_id: u32, want: u32) -> Result<(), TrackerError> {
    let (Some(act), Some(tid)) = (u32_at(b, 0), u32_at(b, 4)) else {
        return Err(invalid("is shorter than its 8-byte header", b));
    };
    if tid != transaction_id {
        return Err(invalid("answers another transaction", b));
    }
    if act == action::ERROR {
        let text = &b[8..];
        let text = text.strip_suffix(&[0]).unwrap_or(text);
        return Err(TrackerError::Failure(sanitize_message(text)));
    }
    if act != want {
        return Err(invalid(&format!("has action {act}, expected {want}"), b));
    }
    Ok(())
}

/// The connection id from a connect answer.
///
/// # Errors
/// A short datagram, another transaction or action, or the tracker's error message.
pub fn parse_connect(b: &[u8], transaction_id: u32) -> Result<u64, TrackerError> {
    check_header(b, transaction_id, action::CONNECT)?;
    let id = b
        .get(8..16)
        .ok_or_else(|| invalid("(connect) is shorter than 16 bytes", b))?;
    Ok(u64::from_be_bytes([
        id[0], id[1], id[2], id[3], id[4], id[5], id[6], id[7],
    ]))
}

fn event_code(e: Option<AnnounceEvent>) -> u32 {
    match e {
        None => 0,
        Some(AnnounceEvent::Completed) => 1,
        Some(AnnounceEvent::Started) => 2,
        Some(AnnounceEvent::Stopped) => 3,
    }
}

/// An announce request (98 bytes). `numwant: None` sends -1 (the tracker's default).
pub fn encode_announce(connection_id: u64, transaction_id: u32, req: &AnnounceRequest) -> [u8; 98] {
    let mut b = [0u8; 98];
    b[..8].copy_from_slice(&connection_id.to_be_bytes());
    b[8..12].copy_from_slice(&action::ANNOUNCE.to_be_bytes());
    b[12..16].copy_from_slice(&transaction_id.to_be_bytes());
    b[16..36].copy_from_slice(&req.info_hash.0);
    b[36..56].copy_from_slice(&req.peer_id.0);
    b[56..64].copy_from_slice(&req.downloaded.to_be_bytes());
    b[64..72].copy_from_slice(&req.left.to_be_bytes());
    b[72..80].copy_from_slice(&req.uploaded.to_be_bytes());
    b[80..84].copy_from_slice(&event_code(req.event).to_be_bytes());
    // ip 0: the sender's address
    b[88..92].copy_from_slice(&req.key.to_be_bytes());
    let numwant: i32 = req.numwant.map_or(-1, |n| n.min(i32::MAX as u32) as i32);
    b[92..96].copy_from_slice(&numwant.to_be_bytes());
    b[96..98].copy_from_slice(&req.port.to_be_bytes());
    b
}

/// An announce answer. `v6`: the tracker was reached over IPv6, so its peers are 18-byte
/// entries (BEP 15: the peer format follows the address family of the request).
///
/// # Errors
/// A short datagram, another transaction or action, or the tracker's error message.
pub fn parse_announce(
    b: &[u8],
    transaction_id: u32,
    v6: bool,
) -> Result<AnnounceResponse, TrackerError> {
    check_header(b, transaction_id, action::ANNOUNCE)?;
    if b.len() == 8 {
        // opentracker's answer for an info hash outside its whitelist
        return Err(TrackerError::Failure(
            "empty announce answer: the torrent is not registered with this tracker".into(),
        ));
    }
    let (Some(interval), Some(leechers), Some(seeders)) =
        (u32_at(b, 8), u32_at(b, 12), u32_at(b, 16))
    else {
        return Err(invalid("(announce) is shorter than 20 bytes", b));
    };
    let interval = if interval == 0 || interval > i32::MAX as u32 {
        super::DEFAULT_INTERVAL_SECS
    } else {
        interval.clamp(MIN_INTERVAL_SECS, MAX_INTERVAL_SECS)
    };
    let size = if v6 { 18 } else { 6 };
    let mut peers = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for c in b[20..].chunks_exact(size) {
        let (ip, port) = if v6 {
            let mut o = [0u8; 16];
            o.copy_from_slice(&c[..16]);
            let ip = Ipv6Addr::from(o);
            let ip = ip.to_ipv4_mapped().map_or(IpAddr::V6(ip), IpAddr::V4);
            (ip, u16::from_be_bytes([c[16], c[17]]))
        } else {
            (
                IpAddr::V4(Ipv4Addr::new(c[0], c[1], c[2], c[3])),
                u16::from_be_bytes([c[4], c[5]]),
            )
        };
        if port == 0 || ip.is_unspecified() {
            continue;
        }
        let a = SocketAddr::new(ip, port);
        if seen.insert(a) {
            peers.push(a);
        }
    }
    let count = |n: u32| (n <= i32::MAX as u32).then_some(n);
    Ok(AnnounceResponse {
        interval,
        min_interval: None,
        peers,
        complete: count(seeders),
        incomplete: count(leechers),
        warning: None,
        tracker_id: None,
    })
}

/// A scrape request for up to [`MAX_SCRAPE`] info hashes (the rest are left out).
pub fn encode_scrape(connection_id: u64, transaction_id: u32, hashes: &[InfoHash]) -> Vec<u8> {
    let hashes = &hashes[..hashes.len().min(MAX_SCRAPE)];
    let mut b = Vec::with_capacity(16 + 20 * hashes.len());
    b.extend_from_slice(&connection_id.to_be_bytes());
    b.extend_from_slice(&action::SCRAPE.to_be_bytes());
    b.extend_from_slice(&transaction_id.to_be_bytes());
    for h in hashes {
        b.extend_from_slice(&h.0);
    }
    b
}

/// A scrape answer: one entry per hash asked, in order (fewer if the datagram is short).
///
/// # Errors
/// A short header, another transaction or action, or the tracker's error message.
pub fn parse_scrape(
    b: &[u8],
    transaction_id: u32,
    asked: &[InfoHash],
) -> Result<Vec<(InfoHash, ScrapeStats)>, TrackerError> {
    check_header(b, transaction_id, action::SCRAPE)?;
    let count = |n: u32| (n <= i32::MAX as u32).then_some(n);
    Ok(b[8..]
        .chunks_exact(12)
        .zip(asked)
        .map(|(c, h)| {
            let v = |i: usize| u32::from_be_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]);
            (
                *h,
                ScrapeStats {
                    complete: count(v(0)),
                    downloaded: count(v(4)),
                    incomplete: count(v(8)),
                },
            )
        })
        .collect())
}

/// `host:port` of a `udp://host:port[/path]` URL.
///
/// # Errors
/// [`TrackerError::InvalidUrl`] without a host or a valid port.
pub fn host_port(url: &str) -> Result<(String, u16), TrackerError> {
    let bad = || TrackerError::InvalidUrl(crate::net::host_of(url));
    let rest = url
        .trim()
        .split_once("://")
        .map(|(_, r)| r)
        .ok_or_else(bad)?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, p) = v6.split_once(']').ok_or_else(bad)?;
        (h.to_string(), p.strip_prefix(':').ok_or_else(bad)?)
    } else {
        let (h, p) = authority.rsplit_once(':').ok_or_else(bad)?;
        (h.to_string(), p)
    };
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.is_empty() || port == 0 {
        return Err(bad());
    }
    Ok((host, port))
}

/// The session's UDP tracker client (connection ids shared by all its announces).
#[derive(Debug, Clone, Default)]
pub struct UdpTracker {
    ids: Arc<Mutex<HashMap<SocketAddr, (u64, Instant)>>>,
    first_timeout: Option<Duration>,
}

impl UdpTracker {
    /// A client with the BEP's timeouts.
    pub fn new() -> UdpTracker {
        UdpTracker::default()
    }

    /// A client whose first retransmission timeout is `t` (tests), doubling as usual.
    pub fn with_first_timeout(t: Duration) -> UdpTracker {
        UdpTracker {
            first_timeout: Some(t),
            ..UdpTracker::default()
        }
    }

    async fn resolve(url: &str) -> Result<SocketAddr, TrackerError> {
        let (host, port) = host_port(url)?;
        let mut addrs = tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| TrackerError::Transport(format!("cannot resolve {host}: {e}")))?;
        addrs
            .next()
            .ok_or_else(|| TrackerError::Transport(format!("{host} has no address")))
    }

    /// Send `req` and wait for the answer with the BEP's retransmissions.
    async fn exchange(
        &self,
        sock: &tokio::net::UdpSocket,
        req: &[u8],
        mut check: impl FnMut(&[u8]) -> Option<Result<Vec<u8>, TrackerError>>,
    ) -> Result<Vec<u8>, TrackerError> {
        let mut timeout = self.first_timeout.unwrap_or(FIRST_TIMEOUT);
        let mut buf = vec![0u8; MAX_DATAGRAM];
        for _ in 0..ATTEMPTS {
            sock.send(req)
                .await
                .map_err(|e| TrackerError::Transport(e.to_string()))?;
            let deadline = tokio::time::Instant::now() + timeout;
            loop {
                match tokio::time::timeout_at(deadline, sock.recv(&mut buf)).await {
                    Err(_) => break,
                    Ok(Err(e)) => return Err(TrackerError::Transport(e.to_string())),
                    // not ours (another transaction, garbage): keep waiting
                    Ok(Ok(n)) => match check(&buf[..n]) {
                        Some(r) => return r,
                        None => continue,
                    },
                }
            }
            timeout *= 2;
        }
        Err(TrackerError::Transport("no answer (timed out)".into()))
    }

    /// A fresh or cached connection id for `addr`.
    async fn connection_id(
        &self,
        sock: &tokio::net::UdpSocket,
        addr: SocketAddr,
    ) -> Result<u64, TrackerError> {
        if let Some(&(id, at)) = self.ids.locked().get(&addr)
            && at.elapsed() < CONNECTION_ID_TTL
        {
            return Ok(id);
        }
        let tid: u32 = rand::random();
        let body = self
            .exchange(sock, &encode_connect(tid), |b| {
                match parse_connect(b, tid) {
                    Ok(_) => Some(Ok(b.to_vec())),
                    Err(TrackerError::InvalidResponse { .. }) if u32_at(b, 4) != Some(tid) => None,
                    Err(e) => Some(Err(e)),
                }
            })
            .await?;
        let id = parse_connect(&body, tid)?;
        self.ids.locked().insert(addr, (id, Instant::now()));
        Ok(id)
    }

    async fn socket(addr: SocketAddr) -> Result<tokio::net::UdpSocket, TrackerError> {
        let local: SocketAddr = if addr.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let sock = tokio::net::UdpSocket::bind(local)
            .await
            .map_err(|e| TrackerError::Transport(e.to_string()))?;
        sock.connect(addr)
            .await
            .map_err(|e| TrackerError::Transport(e.to_string()))?;
        Ok(sock)
    }

    /// Announce `req` to the UDP tracker at `url` (BEP 15).
    ///
    /// # Errors
    /// [`TrackerError`]: the tracker's error message, a malformed answer, or no answer.
    pub async fn announce(
        &self,
        url: &str,
        req: &AnnounceRequest,
    ) -> Result<AnnounceResponse, TrackerError> {
        let addr = Self::resolve(url).await?;
        let sock = Self::socket(addr).await?;
        let v6 =
            addr.is_ipv6() && !matches!(addr.ip(), IpAddr::V6(a) if a.to_ipv4_mapped().is_some());
        for retry in 0..2 {
            let conn = self.connection_id(&sock, addr).await?;
            let tid: u32 = rand::random();
            let msg = encode_announce(conn, tid, req);
            let r = self
                .exchange(&sock, &msg, |b| {
                    (u32_at(b, 4) == Some(tid)).then(|| Ok(b.to_vec()))
                })
                .await
                .and_then(|b| parse_announce(&b, tid, v6));
            match r {
                // a stale connection id: connect again once
                Err(TrackerError::Failure(m))
                    if retry == 0 && m.to_ascii_lowercase().contains("connection id") =>
                {
                    self.ids.locked().remove(&addr);
                }
                r => return r,
            }
        }
        Err(TrackerError::Transport(
            "connection id refused twice".into(),
        ))
    }

    /// Scrape up to [`MAX_SCRAPE`] torrents at the UDP tracker `url` (BEP 15 §scrape).
    ///
    /// # Errors
    /// As [`UdpTracker::announce`].
    pub async fn scrape(
        &self,
        url: &str,
        hashes: &[InfoHash],
    ) -> Result<Vec<(InfoHash, ScrapeStats)>, TrackerError> {
        let addr = Self::resolve(url).await?;
        let sock = Self::socket(addr).await?;
        let conn = self.connection_id(&sock, addr).await?;
        let tid: u32 = rand::random();
        let asked = &hashes[..hashes.len().min(MAX_SCRAPE)];
        let b = self
            .exchange(&sock, &encode_scrape(conn, tid, asked), |b| {
                (u32_at(b, 4) == Some(tid)).then(|| Ok(b.to_vec()))
            })
            .await?;
        parse_scrape(&b, tid, asked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::PeerId;

    fn req() -> AnnounceRequest {
        AnnounceRequest {
            info_hash: InfoHash([7; 20]),
            peer_id: PeerId([b'p'; 20]),
            port: 6881,
            uploaded: 3,
            downloaded: 2,
            left: 1,
            event: Some(AnnounceEvent::Started),
            numwant: Some(50),
            key: 0xdead_beef,
            tracker_id: None,
        }
    }

    #[test]
    fn requests_have_the_bep_layout() {
        let c = encode_connect(0x1122_3344);
        assert_eq!(&c[..8], &PROTOCOL_ID.to_be_bytes());
        assert_eq!(&c[8..12], &[0, 0, 0, 0]);
        assert_eq!(&c[12..], &[0x11, 0x22, 0x33, 0x44]);
        let a = encode_announce(42, 9, &req());
        assert_eq!(u64::from_be_bytes(a[..8].try_into().unwrap()), 42);
        assert_eq!(u32_at(&a, 8), Some(1));
        assert_eq!(&a[16..36], &[7; 20]);
        assert_eq!(u32_at(&a, 80), Some(2), "started = 2");
        assert_eq!(u32_at(&a, 88), Some(0xdead_beef));
        assert_eq!(i32::from_be_bytes(a[92..96].try_into().unwrap()), 50);
        assert_eq!(u16::from_be_bytes([a[96], a[97]]), 6881);
        let mut none = req();
        none.numwant = None;
        assert_eq!(
            i32::from_be_bytes(encode_announce(1, 1, &none)[92..96].try_into().unwrap()),
            -1
        );
        let s = encode_scrape(1, 2, &vec![InfoHash([1; 20]); 100]);
        assert_eq!(s.len(), 16 + 20 * MAX_SCRAPE);
    }

    #[test]
    fn u01_error_action_is_the_trackers_message() {
        let b = include_bytes!("../../tests/fixtures/tracker_udp/u01-udp-error-action.bin");
        let e = parse_announce(b, 305_441_741, false).unwrap_err();
        assert_eq!(e.to_string(), "tracker failure: Connection ID missmatch.");
        // the same datagram for another transaction is not ours
        assert!(matches!(
            parse_announce(b, 1, false),
            Err(TrackerError::InvalidResponse { .. })
        ));
        // an error without text, with control characters
        let mut x = vec![0, 0, 0, 3, 0, 0, 0, 5];
        x.extend_from_slice(b"bad\x1b[31m\n");
        assert_eq!(
            parse_connect(&x, 5).unwrap_err().to_string(),
            "tracker failure: bad\u{FFFD}[31m"
        );
    }

    #[test]
    fn announce_answers_v4_and_v6_and_every_truncation() {
        let mut b = vec![0, 0, 0, 1, 0, 0, 0, 9];
        b.extend_from_slice(&900u32.to_be_bytes());
        b.extend_from_slice(&5u32.to_be_bytes()); // leechers
        b.extend_from_slice(&3u32.to_be_bytes()); // seeders
        b.extend_from_slice(&[127, 0, 0, 2, 0x1a, 0xe1]);
        b.extend_from_slice(&[127, 0, 0, 2, 0x1a, 0xe1]); // duplicate
        b.extend_from_slice(&[0, 0, 0, 0, 1, 1]); // unspecified
        b.extend_from_slice(&[10, 0, 0, 1, 0, 0]); // port 0
        b.extend_from_slice(&[10, 0, 0, 3, 0x1f]); // cut short
        let r = parse_announce(&b, 9, false).unwrap();
        assert_eq!(r.interval, 900);
        assert_eq!((r.complete, r.incomplete), (Some(3), Some(5)));
        assert_eq!(r.peers, vec!["127.0.0.2:6881".parse().unwrap()]);
        for cut in 0..b.len() {
            let _ = parse_announce(&b[..cut], 9, false);
            let _ = parse_announce(&b[..cut], 9, true);
        }
        assert!(parse_announce(&b[..19], 9, false).is_err());
        // IPv6 entries, a v4-mapped one given as v4
        let mut v6 = vec![0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        v6.extend_from_slice(&"::1".parse::<Ipv6Addr>().unwrap().octets());
        v6.extend_from_slice(&[0, 80]);
        v6.extend_from_slice(&"::ffff:10.1.2.3".parse::<Ipv6Addr>().unwrap().octets());
        v6.extend_from_slice(&[0, 81]);
        let r = parse_announce(&v6, 1, true).unwrap();
        assert_eq!(
            r.interval,
            super::super::DEFAULT_INTERVAL_SECS,
            "0 means default"
        );
        assert_eq!(
            r.peers,
            vec!["[::1]:80".parse().unwrap(), "10.1.2.3:81".parse().unwrap()]
        );
        // a wrong action is refused
        let mut wrong = b.clone();
        wrong[3] = 2;
        assert!(parse_announce(&wrong, 9, false).is_err());
    }

    #[test]
    fn junk_never_panics() {
        let mut x = 0x1234_5678u32;
        for len in 0..200 {
            let junk: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            let tid = u32_at(&junk, 4).unwrap_or(0);
            let _ = parse_connect(&junk, tid);
            let _ = parse_announce(&junk, tid, false);
            let _ = parse_announce(&junk, tid, true);
            let _ = parse_scrape(&junk, tid, &[InfoHash([0; 20]); 3]);
        }
    }

    #[test]
    fn urls() {
        assert_eq!(
            host_port("udp://t.example:1337/announce").unwrap(),
            ("t.example".into(), 1337)
        );
        assert_eq!(host_port("udp://[::1]:6969").unwrap(), ("::1".into(), 6969));
        assert!(host_port("udp://t.example/announce").is_err());
        assert!(host_port("udp://t.example:0").is_err());
        assert!(host_port("udp://:80").is_err());
        assert!(host_port("udp://t.example:99999").is_err());
    }

    /// A scripted tracker on loopback: answers a connect, then an error for the stale id,
    /// then (after a new connect) the announce; drops the first datagram to exercise the
    /// retransmission.
    #[tokio::test]
    async fn exchange_with_retransmission_cached_ids_and_a_stale_id() {
        let server = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let url = format!("udp://{}/announce", server.local_addr().unwrap());
        tokio::spawn(async move {
            let mut buf = [0u8; 2048];
            let mut connects = 0u64;
            let mut announces = 0;
            let mut dropped = false;
            loop {
                let (n, from) = server.recv_from(&mut buf).await.unwrap();
                let b = &buf[..n];
                if !dropped {
                    dropped = true;
                    continue; // lost on the way
                }
                let tid = u32_at(b, 12).unwrap();
                if u32_at(b, 8) == Some(action::CONNECT) && n == 16 {
                    connects += 1;
                    let mut r = vec![0, 0, 0, 0];
                    r.extend_from_slice(&tid.to_be_bytes());
                    r.extend_from_slice(&(1000 + connects).to_be_bytes());
                    server.send_to(&r, from).await.unwrap();
                } else if u32_at(b, 8) == Some(action::ANNOUNCE) {
                    announces += 1;
                    let conn = u64::from_be_bytes(b[..8].try_into().unwrap());
                    let mut r;
                    if announces == 2 && conn == 1001 {
                        r = vec![0, 0, 0, 3];
                        r.extend_from_slice(&tid.to_be_bytes());
                        r.extend_from_slice(b"Connection ID missmatch.\0");
                    } else {
                        r = vec![0, 0, 0, 1];
                        r.extend_from_slice(&tid.to_be_bytes());
                        r.extend_from_slice(&60u32.to_be_bytes());
                        r.extend_from_slice(&conn.to_be_bytes()[4..]); // leechers = conn id
                        r.extend_from_slice(&0u32.to_be_bytes());
                        r.extend_from_slice(&[127, 0, 0, 9, 0, 9]);
                    }
                    server.send_to(&r, from).await.unwrap();
                }
            }
        });
        let t = UdpTracker::with_first_timeout(Duration::from_millis(200));
        let r = t.announce(&url, &req()).await.unwrap();
        assert_eq!(r.peers, vec!["127.0.0.9:9".parse().unwrap()]);
        assert_eq!(r.incomplete, Some(1001), "first connection id");
        // the second announce reuses id 1001, is told it is stale, connects again
        let r = t.announce(&url, &req()).await.unwrap();
        assert_eq!(
            r.incomplete,
            Some(1002),
            "a new connection id after the error"
        );
    }

    #[tokio::test]
    async fn silence_times_out() {
        let server = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let url = format!("udp://{}", server.local_addr().unwrap());
        let t = UdpTracker::with_first_timeout(Duration::from_millis(20));
        let e = t.announce(&url, &req()).await.unwrap_err();
        assert!(e.to_string().contains("timed out"), "{e}");
        drop(server);
    }
}
