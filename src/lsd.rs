//! Local Service Discovery (BEP 14) as a peer source: one task, one UDP socket joined to
//! the IPv4 multicast group [`GROUP_V4`]`:`[`PORT`], announcing the session's public
//! torrents to the local network and handing the peers it hears about to the session.
//!
//! Off by default (`[lsd] enabled = false`): on a seedbox there is rarely a LAN to find
//! peers on, and LSD tells every host on the link which torrents run here. Only IPv4 is
//! spoken (the IPv6 group `[ff15::efc0:988f]:6771` of BEP 14 is not joined).
//!
//! # The message
//! ```text
//! BT-SEARCH * HTTP/1.1\r\n
//! Host: 239.192.152.143:6771\r\n
//! Port: <our TCP listen port>\r\n
//! Infohash: <40 hex digits>\r\n      (one line per torrent, several per datagram)
//! cookie: <random per session>\r\n
//! \r\n
//! \r\n
//! ```
//! as libtorrent, qBittorrent and Transmission send it. [`encode`] writes it (at most
//! [`MAX_DATAGRAM`] bytes: [`hashes_per_datagram`] info hashes), [`parse`] reads it,
//! tolerant of header case, whitespace and bare `\n` line ends, strict about what it
//! keeps: a `Port` of 1..=65535 and 40-digit hex info hashes; datagrams over
//! [`MAX_RECEIVE`] bytes and anything else are refused, never a panic.
//!
//! # Sending
//! A torrent that starts (or resumes) is announced within a second, then again every
//! [`ANNOUNCE_INTERVAL`]. Datagrams go out at most one per [`SEND_GAP`], each carrying
//! up to [`hashes_per_datagram`] info hashes (25 with a 5-digit port), so 10,000
//! torrents cost one 1.3 KB datagram a second, and each of them is announced every
//! 400 s instead (the queue turns as fast as the rate allows). There are no per-torrent
//! timers: one task with one queue and one wake-up ([`Schedule`]).
//! Multicast TTL is 1 (the datagrams never leave the link) and loop-back is on, so
//! two clients on one host find each other.
//!
//! # Receiving
//! A datagram is used only when it parses, does not carry our own cookie, comes from a
//! loopback, private (RFC 1918, 100.64.0.0/10) or link-local address
//! ([`crate::net::is_local`]): a global address learnt through LSD
//! is never dialled. The peer is the sender's IP with the announced `Port`, for each
//! info hash that names one of our announced (running, public) torrents; at most
//! [`MAX_PEERS_PER_SECOND`] such peers a second are passed on (the rest are dropped),
//! so a flood of datagrams costs the session little.
//!
//! # Failure
//! A socket that cannot be bound or joined (port 6771 taken without `SO_REUSEADDR`, no
//! multicast route, a wrong `[lsd] interface`) is an [`LsdError`]; the session logs it
//! once and runs without LSD. A send that fails (the route went away) is logged once at
//! `warn`, then at `debug`.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use thiserror::Error;
use tokio::sync::mpsc;

use crate::metainfo::InfoHash;
use crate::net::is_local;

/// The BEP 14 IPv4 multicast group.
pub const GROUP_V4: Ipv4Addr = Ipv4Addr::new(239, 192, 152, 143);
/// The BEP 14 UDP port (for the group and for our socket).
pub const PORT: u16 = 6771;
/// Time between two announces of the same torrent (BEP 14 asks for at most one per
/// minute per torrent; libtorrent uses 5 minutes).
pub const ANNOUNCE_INTERVAL: Duration = Duration::from_secs(5 * 60);
/// Least time between two datagrams we send.
pub const SEND_GAP: Duration = Duration::from_secs(1);
/// Largest datagram we send, bytes (fits one Ethernet frame with room for tunnels).
pub const MAX_DATAGRAM: usize = 1400;
/// Larger datagrams are ignored unread, bytes (one Ethernet frame's payload).
pub const MAX_RECEIVE: usize = 1500;
/// Most peers (info hash, address) passed to the session per second; more are dropped.
pub const MAX_PEERS_PER_SECOND: u32 = 200;
/// Bytes of one `Infohash: <40 hex>\r\n` line.
const HASH_LINE: usize = "Infohash: \r\n".len() + 40;

/// One LSD announcement, as [`parse`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announce {
    /// The announcer's TCP listen port (`Port` header), 1..=65535.
    pub port: u16,
    /// The announcer's `cookie` header, trimmed; `None` when absent.
    pub cookie: Option<String>,
    /// The valid, distinct `Infohash` headers in order: at least 1, at most 30 (a line
    /// takes 50 bytes or more of the [`MAX_RECEIVE`]). Lines whose value is not 40 hex
    /// digits are skipped.
    pub info_hashes: Vec<InfoHash>,
}

/// Why a datagram is not an LSD announcement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ParseError {
    /// Longer than [`MAX_RECEIVE`] bytes.
    #[error("datagram of {0} bytes is too long")]
    TooLong(usize),
    /// Not UTF-8 text.
    #[error("not text")]
    NotText,
    /// The first line is not `BT-SEARCH * HTTP/1.x`.
    #[error("not a BT-SEARCH request")]
    NotBtSearch,
    /// No `Port` header.
    #[error("no Port header")]
    NoPort,
    /// A `Port` header that is not 1..=65535.
    #[error("bad Port header")]
    BadPort,
    /// No `Infohash` header of 40 hex digits.
    #[error("no valid Infohash header")]
    NoInfoHash,
}

/// Read an LSD datagram (see the module docs for what is accepted).
///
/// # Errors
/// [`ParseError`] saying why the datagram is not used.
pub fn parse(datagram: &[u8]) -> Result<Announce, ParseError> {
    if datagram.len() > MAX_RECEIVE {
        return Err(ParseError::TooLong(datagram.len()));
    }
    let text = std::str::from_utf8(datagram).map_err(|_| ParseError::NotText)?;
    let mut lines = text.split('\n').map(|l| l.trim());
    let first = lines.next().unwrap_or("");
    let mut words = first.split_ascii_whitespace();
    let method_ok = words
        .next()
        .is_some_and(|w| w.eq_ignore_ascii_case("BT-SEARCH"));
    let target_ok = words.next() == Some("*");
    let version_ok = words
        .next()
        .is_some_and(|w| w.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("HTTP/")));
    if !(method_ok && target_ok && version_ok) {
        return Err(ParseError::NotBtSearch);
    }
    let mut port: Option<Result<u16, ParseError>> = None;
    let mut cookie = None;
    let mut info_hashes: Vec<InfoHash> = Vec::new();
    for line in lines {
        if line.is_empty() {
            break; // end of the headers
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("port") {
            if port.is_none() {
                port = Some(match value.parse::<u16>() {
                    Ok(p) if p > 0 => Ok(p),
                    _ => Err(ParseError::BadPort),
                });
            }
        } else if name.eq_ignore_ascii_case("infohash") {
            if let Some(ih) = InfoHash::from_hex(value)
                && !info_hashes.contains(&ih)
            {
                info_hashes.push(ih);
            }
        } else if name.eq_ignore_ascii_case("cookie") && cookie.is_none() {
            cookie = Some(value.to_string());
        }
    }
    let port = port.ok_or(ParseError::NoPort)??;
    if info_hashes.is_empty() {
        return Err(ParseError::NoInfoHash);
    }
    Ok(Announce {
        port,
        cookie,
        info_hashes,
    })
}

/// How many info hashes fit in one datagram of at most [`MAX_DATAGRAM`] bytes with this
/// port and cookie (at least 1 while the cookie is under 1 KB).
pub fn hashes_per_datagram(port: u16, cookie: &str) -> usize {
    let fixed = encode(port, cookie, &[]).len();
    (MAX_DATAGRAM.saturating_sub(fixed) / HASH_LINE).max(1)
}

/// The announcement of `info_hashes` (all of them: take at most [`hashes_per_datagram`]
/// to stay under [`MAX_DATAGRAM`]) for TCP `port`, with our `cookie`.
pub fn encode(port: u16, cookie: &str, info_hashes: &[InfoHash]) -> Vec<u8> {
    let mut s = String::with_capacity(96 + info_hashes.len() * HASH_LINE + cookie.len());
    s.push_str("BT-SEARCH * HTTP/1.1\r\n");
    s.push_str(&format!("Host: {GROUP_V4}:{PORT}\r\n"));
    s.push_str(&format!("Port: {port}\r\n"));
    for ih in info_hashes {
        s.push_str("Infohash: ");
        s.push_str(&ih.to_hex());
        s.push_str("\r\n");
    }
    s.push_str(&format!("cookie: {cookie}\r\n\r\n\r\n"));
    s.into_bytes()
}

/// What to announce and when: the announced info hashes and one queue of
/// (info hash, due time) in due order. The task wakes once, at [`Schedule::wake_at`];
/// there is no timer per torrent. Pure (no I/O, time passed in), so the rate and the
/// cost are testable with thousands of torrents.
#[derive(Debug)]
pub struct Schedule {
    /// Info hashes announced (running public torrents), with the generation of their live
    /// queue entry; received peers count only for these.
    active: HashMap<InfoHash, u64>,
    /// (info hash, generation, due): entries of removed (or removed and added again)
    /// info hashes are dropped when they come up.
    queue: VecDeque<(InfoHash, u64, Instant)>,
    next_generation: u64,
    /// The next datagram may go at this time.
    next_send: Instant,
}

impl Schedule {
    /// An empty schedule; the first datagram may go at `now`.
    pub fn new(now: Instant) -> Schedule {
        Schedule {
            active: HashMap::new(),
            queue: VecDeque::new(),
            next_generation: 0,
            next_send: now,
        }
    }

    /// Announce `ih` from `now` on: it goes in the next datagram (ahead of torrents
    /// already waiting) and then every [`ANNOUNCE_INTERVAL`] or so. Known already: nothing
    /// changes.
    pub fn add(&mut self, ih: InfoHash, now: Instant) {
        if self.active.contains_key(&ih) {
            return;
        }
        let generation = self.next_generation;
        self.next_generation += 1;
        self.active.insert(ih, generation);
        self.queue.push_front((ih, generation, now));
    }

    /// Stop announcing `ih` and ignore its peers.
    pub fn remove(&mut self, ih: &InfoHash) {
        self.active.remove(ih);
    }

    /// `ih` is announced (its received peers are used).
    pub fn contains(&self, ih: &InfoHash) -> bool {
        self.active.contains_key(ih)
    }

    /// Info hashes announced.
    pub fn len(&self) -> usize {
        self.active.len()
    }

    /// No info hash is announced.
    pub fn is_empty(&self) -> bool {
        self.active.is_empty()
    }

    /// The info hashes of the datagram to send at `now`: at most `max` of those due, or
    /// `None` when none is due or the last datagram was less than [`SEND_GAP`] ago. Each
    /// one sent is due again [`ANNOUNCE_INTERVAL`] later; when more are due than the rate
    /// allows, they wait their turn (10,000 torrents: each every 400 s).
    pub fn due(&mut self, now: Instant, max: usize) -> Option<Vec<InfoHash>> {
        if now < self.next_send {
            return None;
        }
        let mut batch = Vec::new();
        while batch.len() < max.max(1) {
            match self.queue.front() {
                Some((_, _, due)) if *due <= now => {}
                _ => break,
            }
            let Some((ih, generation, _)) = self.queue.pop_front() else {
                break;
            };
            if self.active.get(&ih) == Some(&generation) {
                batch.push(ih);
                self.queue
                    .push_back((ih, generation, now + ANNOUNCE_INTERVAL));
            }
        }
        if batch.is_empty() {
            return None;
        }
        self.next_send = now + SEND_GAP;
        Some(batch)
    }

    /// When [`Schedule::due`] may next return a batch: `None` while nothing is announced
    /// (the task then sleeps until a command or a datagram).
    pub fn wake_at(&self) -> Option<Instant> {
        if self.active.is_empty() {
            return None;
        }
        self.queue
            .front()
            .map(|(_, _, due)| (*due).max(self.next_send))
    }
}

/// How to start [`Lsd`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LsdOptions {
    /// IPv4 address of the interface to join the group on and send from;
    /// `0.0.0.0` = the kernel's choice (the interface of the multicast or default route).
    pub interface: Ipv4Addr,
    /// Our TCP listen port, announced in `Port`.
    pub listen_port: u16,
}

/// Why LSD could not start.
#[derive(Debug, Error)]
pub enum LsdError {
    /// The UDP socket could not be made or bound to `0.0.0.0:6771`.
    #[error("LSD (BEP 14) is off: cannot bind UDP port {PORT}: {0}")]
    Bind(std::io::Error),
    /// The group could not be joined on the interface (no multicast route, no such
    /// address on this host).
    #[error("LSD (BEP 14) is off: cannot join {GROUP_V4} on interface {interface}: {error}")]
    Join {
        /// The `[lsd] interface` (`0.0.0.0` = the kernel's choice).
        interface: Ipv4Addr,
        /// The OS error.
        error: std::io::Error,
    },
}

/// Figures of a running [`Lsd`] (all since start).
#[derive(Debug, Default)]
pub struct LsdStats {
    /// Datagrams sent.
    pub sent: AtomicU64,
    /// Datagrams received (any content, our own included).
    pub received: AtomicU64,
    /// Peers (info hash, address) passed on.
    pub peers: AtomicU64,
    /// Datagrams refused (unparsable, too long, out of scope); our own are not counted.
    pub refused: AtomicU64,
}

enum Cmd {
    Announce(InfoHash),
    Withdraw(InfoHash),
}

/// The running LSD task. Dropping it (or [`Lsd::shutdown`]) ends the task and closes the
/// socket.
#[derive(Debug)]
pub struct Lsd {
    cmds: mpsc::UnboundedSender<Cmd>,
    task: tokio::task::AbortHandle,
    cookie: String,
    stats: Arc<LsdStats>,
}

impl std::fmt::Debug for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cmd::Announce(ih) => write!(f, "Announce({ih})"),
            Cmd::Withdraw(ih) => write!(f, "Withdraw({ih})"),
        }
    }
}

/// The socket: `0.0.0.0:6771` with `SO_REUSEADDR` (other clients on the host share the
/// port), joined to [`GROUP_V4`] on `interface`, loop-back on, TTL 1, outgoing interface
/// `interface` unless unspecified.
fn open_socket(interface: Ipv4Addr) -> Result<std::net::UdpSocket, LsdError> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).map_err(LsdError::Bind)?;
    s.set_reuse_address(true).map_err(LsdError::Bind)?;
    s.set_nonblocking(true).map_err(LsdError::Bind)?;
    s.bind(&SocketAddr::from((Ipv4Addr::UNSPECIFIED, PORT)).into())
        .map_err(LsdError::Bind)?;
    let join = |error| LsdError::Join { interface, error };
    s.join_multicast_v4(&GROUP_V4, &interface).map_err(join)?;
    s.set_multicast_loop_v4(true).map_err(join)?;
    s.set_multicast_ttl_v4(1).map_err(join)?;
    if !interface.is_unspecified() {
        s.set_multicast_if_v4(&interface).map_err(join)?;
    }
    Ok(s.into())
}

impl Lsd {
    /// Bind, join and start the task (on the current tokio runtime). Each peer heard for
    /// an announced info hash is passed to `on_peer` (from the task; it must not block),
    /// at most [`MAX_PEERS_PER_SECOND`] a second.
    ///
    /// # Errors
    /// [`LsdError`] when the socket cannot be bound or the group joined.
    pub fn start(
        opts: LsdOptions,
        on_peer: impl Fn(InfoHash, SocketAddr) + Send + 'static,
    ) -> Result<Lsd, LsdError> {
        let std_socket = open_socket(opts.interface)?;
        let socket = tokio::net::UdpSocket::from_std(std_socket).map_err(LsdError::Bind)?;
        let cookie = format!("{:016x}", rand::random::<u64>());
        let stats = Arc::new(LsdStats::default());
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(
            socket,
            opts,
            cookie.clone(),
            rx,
            stats.clone(),
            Box::new(on_peer),
        ));
        Ok(Lsd {
            cmds: tx,
            task: task.abort_handle(),
            cookie,
            stats,
        })
    }

    /// Announce `info_hash` (a public torrent started) within a second and every
    /// [`ANNOUNCE_INTERVAL`], and pass on peers heard for it. Never blocks.
    pub fn announce(&self, info_hash: InfoHash) {
        let _ = self.cmds.send(Cmd::Announce(info_hash));
    }

    /// Stop announcing `info_hash` (the torrent stopped, was removed or is private) and
    /// ignore its peers. Never blocks.
    pub fn withdraw(&self, info_hash: InfoHash) {
        let _ = self.cmds.send(Cmd::Withdraw(info_hash));
    }

    /// Our cookie (16 hex digits, random per session).
    pub fn cookie(&self) -> &str {
        &self.cookie
    }

    /// Figures since start.
    pub fn stats(&self) -> &LsdStats {
        &self.stats
    }

    /// End the task and close the socket (no "goodbye" exists in BEP 14).
    pub fn shutdown(&self) {
        self.task.abort();
    }
}

impl Drop for Lsd {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type OnPeer = Box<dyn Fn(InfoHash, SocketAddr) + Send>;

async fn run(
    socket: tokio::net::UdpSocket,
    opts: LsdOptions,
    cookie: String,
    mut cmds: mpsc::UnboundedReceiver<Cmd>,
    stats: Arc<LsdStats>,
    on_peer: OnPeer,
) {
    let group = SocketAddr::V4(SocketAddrV4::new(GROUP_V4, PORT));
    let per_datagram = hashes_per_datagram(opts.listen_port, &cookie);
    let mut schedule = Schedule::new(Instant::now());
    // one byte more than accepted: a longer datagram shows as MAX_RECEIVE + 1
    let mut buf = vec![0u8; MAX_RECEIVE + 1];
    let mut window = (Instant::now(), 0u32);
    let mut send_failed = false;
    loop {
        let wake = schedule.wake_at().map(tokio::time::Instant::from_std);
        tokio::select! {
            c = cmds.recv() => match c {
                None => return,
                Some(Cmd::Announce(ih)) => schedule.add(ih, Instant::now()),
                Some(Cmd::Withdraw(ih)) => schedule.remove(&ih),
            },
            r = socket.recv_from(&mut buf) => match r {
                Ok((n, from)) => {
                    stats.received.fetch_add(1, Ordering::Relaxed);
                    let peers = accept(&buf[..n], from, &cookie, &schedule);
                    match peers {
                        Accepted::Ours => {}
                        Accepted::Refused(why) => {
                            stats.refused.fetch_add(1, Ordering::Relaxed);
                            tracing::trace!(%from, "LSD: datagram ignored: {why}");
                        }
                        Accepted::Peers(list) => {
                            let now = Instant::now();
                            if now.duration_since(window.0) >= Duration::from_secs(1) {
                                window = (now, 0);
                            }
                            for (ih, peer) in list {
                                if window.1 >= MAX_PEERS_PER_SECOND {
                                    break;
                                }
                                window.1 += 1;
                                stats.peers.fetch_add(1, Ordering::Relaxed);
                                tracing::debug!(info_hash = %ih, %peer, "LSD: peer");
                                on_peer(ih, peer);
                            }
                        }
                    }
                }
                Err(e) => {
                    // e.g. ICMP errors reported on the socket: never fatal
                    tracing::debug!("LSD: receive failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = sleep_until(wake), if wake.is_some() => {
                let now = Instant::now();
                if let Some(batch) = schedule.due(now, per_datagram) {
                    let datagram = encode(opts.listen_port, &cookie, &batch);
                    match socket.send_to(&datagram, group).await {
                        Ok(_) => {
                            stats.sent.fetch_add(1, Ordering::Relaxed);
                            tracing::debug!(info_hashes = batch.len(), "LSD: announced");
                        }
                        Err(e) if !send_failed => {
                            send_failed = true;
                            tracing::warn!("LSD: cannot send to {group}: {e}");
                        }
                        Err(e) => tracing::debug!("LSD: cannot send to {group}: {e}"),
                    }
                }
            }
        }
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What a received datagram gives.
#[derive(Debug, PartialEq, Eq)]
enum Accepted {
    /// Our own announcement, looped back.
    Ours,
    /// Not used, and why.
    Refused(&'static str),
    /// Peers for announced info hashes (possibly none).
    Peers(Vec<(InfoHash, SocketAddr)>),
}

/// The peers a datagram from `from` names, under the rules of the module docs.
fn accept(datagram: &[u8], from: SocketAddr, cookie: &str, schedule: &Schedule) -> Accepted {
    let a = match parse(datagram) {
        Ok(a) => a,
        Err(_) => return Accepted::Refused("not an LSD announcement"),
    };
    if a.cookie.as_deref() == Some(cookie) {
        return Accepted::Ours;
    }
    let ip = match from.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        ip => ip,
    };
    if !is_local(ip) {
        return Accepted::Refused("sender outside the local network");
    }
    let peer = SocketAddr::new(ip, a.port);
    Accepted::Peers(
        a.info_hashes
            .into_iter()
            .filter(|ih| schedule.contains(ih))
            .map(|ih| (ih, peer))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ih(n: u32) -> InfoHash {
        let mut b = [0u8; 20];
        b[..4].copy_from_slice(&n.to_be_bytes());
        b[19] = 0xab;
        InfoHash(b)
    }

    #[test]
    fn encode_is_the_bep_14_message_and_parses_back() {
        let m = encode(6881, "c00kie", &[ih(1)]);
        let text = String::from_utf8(m.clone()).unwrap();
        assert_eq!(
            text,
            format!(
                "BT-SEARCH * HTTP/1.1\r\nHost: 239.192.152.143:6771\r\nPort: 6881\r\n\
                 Infohash: {}\r\ncookie: c00kie\r\n\r\n\r\n",
                ih(1).to_hex()
            )
        );
        let a = parse(&m).unwrap();
        assert_eq!(a.port, 6881);
        assert_eq!(a.cookie.as_deref(), Some("c00kie"));
        assert_eq!(a.info_hashes, [ih(1)]);
    }

    #[test]
    fn several_info_hashes_fit_under_the_datagram_limit() {
        let cookie = format!("{:016x}", u64::MAX);
        let n = hashes_per_datagram(65535, &cookie);
        assert_eq!(n, 25);
        let all: Vec<InfoHash> = (0..n as u32).map(ih).collect();
        let m = encode(65535, &cookie, &all);
        assert!(m.len() <= MAX_DATAGRAM, "{}", m.len());
        assert!(
            encode(65535, &cookie, &(0..=n as u32).map(ih).collect::<Vec<_>>()).len()
                > MAX_DATAGRAM
        );
        assert_eq!(parse(&m).unwrap().info_hashes, all);
    }

    #[test]
    fn libtorrent_message_parses() {
        // as libtorrent 2.0.8 sends it (captured on lo)
        let m = b"BT-SEARCH * HTTP/1.1\r\nHost: 239.192.152.143:6771\r\nPort: 7001\r\n\
                  Infohash: fba77e1fc2074bf16a51550ff500021c6ff13b85\r\ncookie: 5ec93956\r\n\r\n\r\n";
        let a = parse(m).unwrap();
        assert_eq!(a.port, 7001);
        assert_eq!(a.cookie.as_deref(), Some("5ec93956"));
        assert_eq!(
            a.info_hashes[0].to_hex(),
            "fba77e1fc2074bf16a51550ff500021c6ff13b85"
        );
    }

    #[test]
    fn parse_is_tolerant_of_case_and_whitespace() {
        let hex = ih(7).to_hex().to_uppercase();
        let m = format!(
            "bt-search  *   http/1.1\nHOST:239.192.152.143:6771\n  port :   51413  \r\n\
             INFOHASH:\t{hex}\t\r\ninfohash: {hex}\nCookie:x\n\n"
        );
        let a = parse(m.as_bytes()).unwrap();
        assert_eq!(a.port, 51413);
        assert_eq!(a.info_hashes, [ih(7)], "duplicates dropped, case ignored");
        assert_eq!(a.cookie.as_deref(), Some("x"));
        // no cookie at all is fine (Transmission before 2.x, others)
        let m = format!("BT-SEARCH * HTTP/1.1\r\nPort: 1\r\nInfohash: {hex}\r\n\r\n");
        assert_eq!(parse(m.as_bytes()).unwrap().cookie, None);
    }

    #[test]
    fn bad_messages_are_refused() {
        let good = ih(3).to_hex();
        let cases: Vec<(String, ParseError)> = vec![
            (
                format!("NOTIFY * HTTP/1.1\r\nPort: 1\r\nInfohash: {good}\r\n\r\n"),
                ParseError::NotBtSearch,
            ),
            (
                format!("BT-SEARCH / HTTP/1.1\r\nPort: 1\r\nInfohash: {good}\r\n\r\n"),
                ParseError::NotBtSearch,
            ),
            (
                format!("BT-SEARCH *\r\nPort: 1\r\nInfohash: {good}\r\n\r\n"),
                ParseError::NotBtSearch,
            ),
            (String::new(), ParseError::NotBtSearch),
            (
                format!("BT-SEARCH * HTTP/1.1\r\nInfohash: {good}\r\n\r\n"),
                ParseError::NoPort,
            ),
            (
                format!("BT-SEARCH * HTTP/1.1\r\nPort: 0\r\nInfohash: {good}\r\n\r\n"),
                ParseError::BadPort,
            ),
            (
                format!("BT-SEARCH * HTTP/1.1\r\nPort: 65536\r\nInfohash: {good}\r\n\r\n"),
                ParseError::BadPort,
            ),
            (
                format!("BT-SEARCH * HTTP/1.1\r\nPort: -1\r\nInfohash: {good}\r\n\r\n"),
                ParseError::BadPort,
            ),
            (
                format!("BT-SEARCH * HTTP/1.1\r\nPort: x\r\nInfohash: {good}\r\n\r\n"),
                ParseError::BadPort,
            ),
            (
                "BT-SEARCH * HTTP/1.1\r\nPort: 1\r\n\r\n".into(),
                ParseError::NoInfoHash,
            ),
            (
                format!(
                    "BT-SEARCH * HTTP/1.1\r\nPort: 1\r\nInfohash: {}\r\n\r\n",
                    &good[..39]
                ),
                ParseError::NoInfoHash,
            ),
            (
                format!(
                    "BT-SEARCH * HTTP/1.1\r\nPort: 1\r\nInfohash: {}zz\r\n\r\n",
                    &good[..38]
                ),
                ParseError::NoInfoHash,
            ),
            (
                format!("BT-SEARCH * HTTP/1.1\r\nPort: 1\r\nInfohash: {good}0\r\n\r\n"),
                ParseError::NoInfoHash,
            ),
            // headers after the blank line are the body: not read
            (
                format!("BT-SEARCH * HTTP/1.1\r\nPort: 1\r\n\r\nInfohash: {good}\r\n\r\n"),
                ParseError::NoInfoHash,
            ),
        ];
        for (m, want) in cases {
            assert_eq!(parse(m.as_bytes()), Err(want), "{m:?}");
        }
        assert_eq!(parse(&[0xff, 0xfe, b'\n']), Err(ParseError::NotText));
        // a bad Infohash line among good ones is skipped, the rest is used
        let m = format!(
            "BT-SEARCH * HTTP/1.1\r\nPort: 9\r\nInfohash: nothex\r\nInfohash: {good}\r\n\r\n"
        );
        assert_eq!(parse(m.as_bytes()).unwrap().info_hashes, [ih(3)]);
        // the first Port counts
        let m = format!("BT-SEARCH * HTTP/1.1\r\nPort: 9\r\nPort: 0\r\nInfohash: {good}\r\n\r\n");
        assert_eq!(parse(m.as_bytes()).unwrap().port, 9);
    }

    #[test]
    fn oversized_datagrams_and_hash_floods_are_bounded() {
        let mut m = encode(1, "c", &[ih(1)]);
        m.resize(MAX_RECEIVE + 1, b' ');
        assert_eq!(parse(&m), Err(ParseError::TooLong(MAX_RECEIVE + 1)));
        // at the limit it is read (padding after the headers is the body)
        m.truncate(MAX_RECEIVE);
        assert!(parse(&m).is_ok());
        // the shortest hash lines: as many as fit in the limit, all read
        let mut s = String::from("BT-SEARCH * HTTP/1.1\nPort:1\n");
        let mut i = 0;
        while s.len() + 50 <= MAX_RECEIVE {
            s.push_str(&format!("infohash:{}\n", ih(i).to_hex()));
            i += 1;
        }
        let a = parse(s.as_bytes()).unwrap();
        assert_eq!(a.info_hashes.len(), i as usize);
        assert!(i <= 30, "{i}");
        // every prefix of a good message and random garbage: no panic
        let good = encode(6881, "abc", &[ih(1), ih(2)]);
        for n in 0..good.len() {
            let _ = parse(&good[..n]);
        }
        const ALPHABET: &[u8] = b"BT-SEARCH *HTP/1.\r\n:Portinfohasc0123456789abcdef \t\xff";
        let mut x: u32 = 1;
        for _ in 0..2000 {
            let len = (x % 300) as usize;
            let mut d = Vec::with_capacity(len);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                d.push(ALPHABET[x as usize % ALPHABET.len()]);
            }
            let _ = parse(&d);
        }
    }

    #[test]
    fn own_cookie_foreign_senders_and_unknown_hashes_are_ignored() {
        let now = Instant::now();
        let mut s = Schedule::new(now);
        s.add(ih(1), now);
        let lan: SocketAddr = "192.168.1.20:6771".parse().unwrap();
        let m = encode(7000, "theirs", &[ih(1), ih(2)]);
        assert_eq!(
            accept(&m, lan, "ours", &s),
            Accepted::Peers(vec![(ih(1), "192.168.1.20:7000".parse().unwrap())]),
            "only our announced info hash, at the sender's IP and the Port header"
        );
        assert_eq!(accept(&m, lan, "theirs", &s), Accepted::Ours);
        for from in [
            "8.8.8.8:6771",
            "[2001:4860::1]:6771",
            "0.0.0.0:6771",
            "224.0.0.1:6771",
        ] {
            assert!(
                matches!(
                    accept(&m, from.parse().unwrap(), "ours", &s),
                    Accepted::Refused(_)
                ),
                "{from}"
            );
        }
        for from in [
            "127.0.0.1:1",
            "10.1.2.3:6771",
            "172.16.0.9:6771",
            "169.254.3.4:6771",
            "[::ffff:10.0.0.1]:6771",
        ] {
            assert!(
                matches!(accept(&m, from.parse().unwrap(), "ours", &s), Accepted::Peers(p) if p.len() == 1),
                "{from}"
            );
        }
        s.remove(&ih(1));
        assert_eq!(accept(&m, lan, "ours", &s), Accepted::Peers(vec![]));
        assert!(matches!(
            accept(b"junk", lan, "ours", &s),
            Accepted::Refused(_)
        ));
    }

    #[test]
    fn schedule_of_10000_torrents_sends_one_datagram_a_second() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        assert_eq!(s.wake_at(), None, "nothing announced: no wake-up at all");
        assert_eq!(s.due(t0, 25), None);
        for i in 0..10_000 {
            s.add(ih(i), t0);
        }
        s.add(ih(1), t0);
        assert_eq!(s.len(), 10_000, "adding twice changes nothing");
        // the task's loop for 1000 s: wake at wake_at, send what is due
        let mut last: HashMap<InfoHash, Instant> = HashMap::new();
        let mut gaps = Vec::new();
        let mut times = Vec::new();
        let mut added_late = None;
        let end = t0 + Duration::from_secs(1000);
        while let Some(at) = s.wake_at() {
            if at > end {
                break;
            }
            if added_late.is_none() && at >= t0 + Duration::from_secs(100) {
                // a torrent started in the middle of a round goes in the next datagram
                s.add(ih(20_000), at);
                added_late = Some(at);
            }
            let batch = s.due(at, 25).expect("something is due at wake_at");
            assert!(s.due(at, 25).is_none(), "at most one datagram per SEND_GAP");
            assert!(batch.len() <= 25);
            if added_late == Some(at) {
                assert_eq!(batch[0], ih(20_000));
            }
            times.push(at);
            for h in batch {
                if let Some(prev) = last.insert(h, at) {
                    gaps.push(at - prev);
                }
            }
        }
        for w in times.windows(2) {
            assert_eq!(
                w[1] - w[0],
                SEND_GAP,
                "busy: one datagram a second, no more"
            );
        }
        assert_eq!(times.len(), 1001);
        assert_eq!(last.len(), 10_001, "every torrent announced");
        // each one again after a full turn of 10,001 / 25 datagrams
        let (lo, hi) = (gaps.iter().min().unwrap(), gaps.iter().max().unwrap());
        assert!(
            *lo >= Duration::from_secs(400) && *hi <= Duration::from_secs(401),
            "{lo:?} {hi:?}"
        );
        assert!(gaps.len() >= 10_000, "{}", gaps.len());
        // a stopped torrent is not announced any more; one started again goes next
        s.remove(&ih(5));
        s.remove(&ih(6));
        let t = *times.last().unwrap() + SEND_GAP;
        s.add(ih(6), t);
        assert_eq!(s.due(t, 25).unwrap()[0], ih(6));
        let mut six = vec![t];
        for _ in 0..1000 {
            let t = s.wake_at().unwrap();
            let b = s.due(t, 25).unwrap();
            assert!(!b.contains(&ih(5)));
            if b.contains(&ih(6)) {
                six.push(t);
            }
        }
        assert!(six.len() >= 3, "{six:?}");
        assert!(
            six.windows(2).all(|w| w[1] - w[0] >= ANNOUNCE_INTERVAL),
            "{six:?}"
        );
    }

    #[test]
    fn schedule_of_few_torrents_announces_each_every_interval() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        for i in 0..60 {
            s.add(ih(i), t0);
        }
        // three datagrams a second apart, then quiet until the interval is over
        assert_eq!(s.due(t0, 25).unwrap().len(), 25);
        assert_eq!(s.wake_at(), Some(t0 + SEND_GAP));
        assert_eq!(s.due(t0 + SEND_GAP, 25).unwrap().len(), 25);
        assert_eq!(s.due(t0 + SEND_GAP * 2, 25).unwrap().len(), 10);
        assert_eq!(s.wake_at(), Some(t0 + ANNOUNCE_INTERVAL));
        assert_eq!(s.due(t0 + Duration::from_secs(60), 25), None);
        let r = t0 + ANNOUNCE_INTERVAL;
        assert_eq!(s.due(r, 25).unwrap().len(), 25);
        // one torrent alone: every interval exactly
        let mut s = Schedule::new(t0);
        s.add(ih(1), t0);
        assert_eq!(s.wake_at(), Some(t0));
        assert_eq!(s.due(t0, 25), Some(vec![ih(1)]));
        assert_eq!(s.wake_at(), Some(t0 + ANNOUNCE_INTERVAL));
        assert_eq!(s.due(t0 + ANNOUNCE_INTERVAL, 25), Some(vec![ih(1)]));
        s.remove(&ih(1));
        assert_eq!(s.wake_at(), None);
        assert!(s.is_empty());
    }
}
