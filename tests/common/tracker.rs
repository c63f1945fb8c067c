//! A tiny HTTP tracker for integration tests: BEP 3 announce, BEP 23 compact peer lists,
//! BEP 48 scrape.
//!
//! [`TestTracker::start`] binds `127.0.0.1:0` and serves every connection on its own std
//! thread (HTTP/1.0 or 1.1 `GET`, one request per connection, `Connection: close`).
//! Peers are kept per info hash, keyed by `ip:port`; the address is the announce's `ip=`
//! parameter when that is an IPv4 loopback address, otherwise the connection's source
//! address, with the `port=` parameter. `event=stopped` removes the peer. Every announce,
//! accepted or not, is recorded ([`TestTracker::announces`]) so tests can assert on what a
//! client sent. The tracker stops when dropped.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratorrent::metainfo::InfoHash;

use super::HarnessError;

/// Largest request head (request line + headers) read, bytes. Longer requests get a 400.
const MAX_REQUEST: usize = 16 * 1024;
/// How long a connection may take to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Peers returned when the announce has no `numwant` (BEP 3 suggests 50).
const DEFAULT_NUMWANT: usize = 50;

/// The `event` parameter of an announce (BEP 3; `paused` is BEP 21).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// No `event` parameter, or an empty one: a regular re-announce.
    None,
    /// `event=started`: the first announce of a torrent.
    Started,
    /// `event=completed`: the download just finished.
    Completed,
    /// `event=stopped`: the client is leaving the swarm.
    Stopped,
    /// `event=paused` (BEP 21, upload-only partial seed).
    Paused,
    /// Any other value, verbatim.
    Other(String),
}

impl Event {
    fn parse(raw: &[u8]) -> Event {
        match raw {
            b"" => Event::None,
            b"started" => Event::Started,
            b"completed" => Event::Completed,
            b"stopped" => Event::Stopped,
            b"paused" => Event::Paused,
            other => Event::Other(String::from_utf8_lossy(other).into_owned()),
        }
    }
}

/// One announce as the tracker decoded it.
#[derive(Debug, Clone)]
pub struct Announce {
    /// `info_hash`, percent-decoded (20 raw bytes).
    pub info_hash: InfoHash,
    /// `peer_id`, percent-decoded (20 bytes for a valid announce).
    pub peer_id: Vec<u8>,
    /// The peer's address as the tracker lists it: a loopback `ip=` if given, else the
    /// connection's source IP; the `port=` parameter.
    pub addr: SocketAddrV4,
    /// The TCP connection's source address.
    pub source: SocketAddr,
    /// `event`.
    pub event: Event,
    /// `left`, bytes.
    pub left: Option<u64>,
    /// `uploaded`, bytes.
    pub uploaded: Option<u64>,
    /// `downloaded`, bytes.
    pub downloaded: Option<u64>,
    /// `compact` (BEP 23): `Some(true)` for `compact=1`.
    pub compact: Option<bool>,
    /// `numwant`.
    pub numwant: Option<u64>,
    /// `key`, percent-decoded, lossy UTF-8.
    pub key: Option<String>,
    /// The raw query string (after `?`), for asserting anything not decoded above.
    pub query: String,
    /// `None` when the tracker answered with peers, else the `failure reason` it sent.
    pub failure: Option<String>,
    /// When the announce was received.
    pub at: Instant,
}

/// A peer as stored by the tracker.
#[derive(Debug, Clone)]
struct PeerEntry {
    peer_id: Vec<u8>,
    left: Option<u64>,
}

#[derive(Debug, Default)]
struct Swarm {
    peers: HashMap<SocketAddrV4, PeerEntry>,
    /// Number of `completed` announces (scrape's `downloaded`).
    completed: u64,
}

#[derive(Debug)]
struct State {
    interval_s: u32,
    failure: Option<String>,
    swarms: HashMap<InfoHash, Swarm>,
    announces: Vec<Announce>,
    /// Requests rejected before they could be decoded as an announce (reason, raw target).
    rejected: Vec<(String, String)>,
    /// Scrape requests answered.
    scrapes: u32,
}

/// A running test tracker. See the module docs.
pub struct TestTracker {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic in a connection thread must not hide the records from the test.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl TestTracker {
    /// Bind `127.0.0.1:0` and serve in a background thread. `interval` answered: 2 s.
    ///
    /// # Panics
    /// When the listening socket cannot be created.
    pub fn start() -> TestTracker {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind test tracker");
        let addr = listener.local_addr().expect("test tracker local_addr");
        let state = Arc::new(Mutex::new(State {
            interval_s: 2,
            failure: None,
            swarms: HashMap::new(),
            announces: Vec::new(),
            rejected: Vec::new(),
            scrapes: 0,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let state = Arc::clone(&state);
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("test-tracker".into())
                .spawn(move || accept_loop(listener, state, stop))
                .expect("spawn test tracker thread")
        };
        TestTracker {
            addr,
            state,
            stop,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT/announce`.
    pub fn url(&self) -> String {
        format!("http://{}/announce", self.addr)
    }

    /// `http://127.0.0.1:PORT/scrape` (BEP 48).
    pub fn scrape_url(&self) -> String {
        format!("http://{}/scrape", self.addr)
    }

    /// The listening address (127.0.0.1, ephemeral port).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Set the `interval` (and `min interval`) answered from now on, seconds.
    pub fn set_interval(&self, secs: u32) {
        lock(&self.state).interval_s = secs;
    }

    /// From now on answer every announce with this `failure reason` (BEP 3), or go back to
    /// normal with `None`. Failed announces are still recorded but do not join the swarm.
    pub fn set_failure(&self, reason: Option<&str>) {
        lock(&self.state).failure = reason.map(str::to_owned);
    }

    /// Every announce received so far, oldest first.
    pub fn announces(&self) -> Vec<Announce> {
        lock(&self.state).announces.clone()
    }

    /// Announces for one info hash, oldest first.
    pub fn announces_for(&self, info_hash: &InfoHash) -> Vec<Announce> {
        lock(&self.state)
            .announces
            .iter()
            .filter(|a| a.info_hash == *info_hash)
            .cloned()
            .collect()
    }

    /// Scrape requests answered so far (BEP 48).
    pub fn scrapes(&self) -> u32 {
        lock(&self.state).scrapes
    }

    /// Requests that could not be decoded as an announce or scrape: `(reason, request target)`.
    pub fn rejected(&self) -> Vec<(String, String)> {
        lock(&self.state).rejected.clone()
    }

    /// The peers currently in the swarm of `info_hash` (sorted by address).
    pub fn peers(&self, info_hash: &InfoHash) -> Vec<SocketAddrV4> {
        let st = lock(&self.state);
        let mut v: Vec<SocketAddrV4> = st
            .swarms
            .get(info_hash)
            .map(|s| s.peers.keys().copied().collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Put a peer into a swarm without an announce (e.g. a client that cannot announce).
    /// `left`: `Some(0)` lists it as a seeder.
    pub fn add_peer(&self, info_hash: InfoHash, addr: SocketAddrV4, left: Option<u64>) {
        lock(&self.state)
            .swarms
            .entry(info_hash)
            .or_default()
            .peers
            .insert(
                addr,
                PeerEntry {
                    peer_id: vec![0; 20],
                    left,
                },
            );
    }

    /// Take a peer out of a swarm (it comes back with its next announce).
    pub fn remove_peer(&self, info_hash: InfoHash, addr: SocketAddrV4) {
        if let Some(s) = lock(&self.state).swarms.get_mut(&info_hash) {
            s.peers.remove(&addr);
        }
    }

    /// Wait until an announce matching `pred` has been recorded (polling every 20 ms) and
    /// return the first such announce.
    ///
    /// # Errors
    /// After `timeout`, with the list of announces seen.
    pub fn wait_for_announce(
        &self,
        timeout: Duration,
        mut pred: impl FnMut(&Announce) -> bool,
    ) -> Result<Announce, HarnessError> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(a) = lock(&self.state).announces.iter().find(|a| pred(a)) {
                return Ok(a.clone());
            }
            if Instant::now() >= end {
                return Err(HarnessError(format!(
                    "no matching announce within {timeout:?}; announces seen:\n{}",
                    self.describe()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// One line per recorded announce (and rejected request), for failure messages.
    pub fn describe(&self) -> String {
        let st = lock(&self.state);
        let mut s = String::new();
        for a in &st.announces {
            let _ = writeln!(
                s,
                "  {} {} event={:?} left={:?} up={:?} down={:?}{}",
                a.info_hash.to_hex(),
                a.addr,
                a.event,
                a.left,
                a.uploaded,
                a.downloaded,
                a.failure
                    .as_deref()
                    .map(|f| format!(" failure={f:?}"))
                    .unwrap_or_default()
            );
        }
        for (why, target) in &st.rejected {
            let _ = writeln!(s, "  rejected {target:?}: {why}");
        }
        if s.is_empty() {
            s.push_str("  (none)\n");
        }
        s
    }
}

impl Drop for TestTracker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept().
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: TcpListener, state: Arc<Mutex<State>>, stop: Arc<AtomicBool>) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = conn else { continue };
        let state = Arc::clone(&state);
        let _ = std::thread::Builder::new()
            .name("test-tracker-conn".into())
            .spawn(move || handle_conn(stream, &state));
    }
}

fn handle_conn(mut stream: TcpStream, state: &Mutex<State>) {
    let Ok(source) = stream.peer_addr() else {
        return;
    };
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let _ = stream.set_write_timeout(Some(READ_TIMEOUT));
    let (status, body) = match read_head(&mut stream) {
        Ok(head) => route(&head, source, state),
        Err(e) => (400, failure_body(&e)),
    };
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let mut resp = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    resp.extend_from_slice(&body);
    let _ = stream.write_all(&resp);
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Write);
}

/// Read up to the blank line ending the request head.
fn read_head(stream: &mut TcpStream) -> Result<Vec<u8>, String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            return Ok(buf);
        }
        if buf.len() > MAX_REQUEST {
            return Err(format!("request head longer than {MAX_REQUEST} bytes"));
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Err("connection closed before the end of the request head".into()),
            Ok(n) => buf.extend_from_slice(chunk.get(..n).unwrap_or_default()),
            Err(e) => return Err(format!("reading the request: {e}")),
        }
    }
}

fn route(head: &[u8], source: SocketAddr, state: &Mutex<State>) -> (u16, Vec<u8>) {
    let line_end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let line = String::from_utf8_lossy(head.get(..line_end).unwrap_or_default());
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return reject(state, "malformed request line", &line);
    };
    if method != "GET" {
        return reject(state, &format!("method {method} is not GET"), target);
    }
    // Absolute-form targets ("http://host:port/announce?...") are accepted too.
    let origin = match target.find("://") {
        Some(i) => {
            let after = target.get(i + 3..).unwrap_or_default();
            after.find('/').and_then(|j| after.get(j..)).unwrap_or("/")
        }
        None => target,
    };
    let (path, query) = origin.split_once('?').unwrap_or((origin, ""));
    let params = match parse_query(query) {
        Ok(p) => p,
        Err(e) => return reject(state, &e, target),
    };
    match path {
        "/announce" => announce(&params, query, source, state),
        "/scrape" => scrape(&params, state),
        _ => {
            let (_, body) = reject(state, &format!("unknown path {path}"), target);
            (404, body)
        }
    }
}

fn reject(state: &Mutex<State>, why: &str, target: &str) -> (u16, Vec<u8>) {
    lock(state)
        .rejected
        .push((why.to_owned(), target.to_owned()));
    (400, failure_body(why))
}

/// Decoded query parameters: `(key, value)` raw bytes, in request order.
pub type Params = Vec<(Vec<u8>, Vec<u8>)>;

/// Split `a=b&c=d`, percent-decoding keys and values into raw bytes ('+' is a space, as in
/// form encoding). Repeated keys are kept in order.
///
/// # Errors
/// A `%` not followed by two hex digits.
pub fn parse_query(query: &str) -> Result<Params, String> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((percent_decode(k)?, percent_decode(v)?))
        })
        .collect()
}

/// Percent-decode one query component into raw bytes (RFC 3986 §2.1; '+' → space).
///
/// # Errors
/// A `%` not followed by two hex digits.
pub fn percent_decode(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'%' => {
                let hex = |j: usize| b.get(j).and_then(|&h| (h as char).to_digit(16));
                match (hex(i + 1), hex(i + 2)) {
                    (Some(hi), Some(lo)) => out.push((hi * 16 + lo) as u8),
                    _ => return Err(format!("bad percent-encoding at byte {i} of {s:?}")),
                }
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

fn param<'a>(params: &'a Params, key: &str) -> Option<&'a [u8]> {
    params
        .iter()
        .find(|(k, _)| k == key.as_bytes())
        .map(|(_, v)| v.as_slice())
}

fn param_u64(params: &Params, key: &str) -> Result<Option<u64>, String> {
    match param(params, key) {
        None => Ok(None),
        Some(v) => std::str::from_utf8(v)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .map(Some)
            .ok_or_else(|| format!("{key} is not a non-negative integer")),
    }
}

fn info_hash_of(raw: &[u8]) -> Result<InfoHash, String> {
    <[u8; 20]>::try_from(raw)
        .map(InfoHash)
        .map_err(|_| format!("info_hash is {} bytes, not 20", raw.len()))
}

fn announce(
    params: &Params,
    query: &str,
    source: SocketAddr,
    state: &Mutex<State>,
) -> (u16, Vec<u8>) {
    let decoded = (|| -> Result<Announce, String> {
        let info_hash = info_hash_of(param(params, "info_hash").ok_or("info_hash missing")?)?;
        let peer_id = param(params, "peer_id").ok_or("peer_id missing")?.to_vec();
        if peer_id.len() != 20 {
            return Err(format!("peer_id is {} bytes, not 20", peer_id.len()));
        }
        let port = param_u64(params, "port")?.ok_or("port missing")?;
        let port = u16::try_from(port)
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| format!("port {port} out of range"))?;
        let announced_ip = param(params, "ip")
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|s| s.parse::<Ipv4Addr>().ok())
            .filter(Ipv4Addr::is_loopback);
        let ip = match (announced_ip, source.ip()) {
            (Some(ip), _) => ip,
            (None, IpAddr::V4(ip)) => ip,
            (None, IpAddr::V6(ip)) => ip.to_ipv4_mapped().unwrap_or(Ipv4Addr::LOCALHOST),
        };
        Ok(Announce {
            info_hash,
            peer_id,
            addr: SocketAddrV4::new(ip, port),
            source,
            event: Event::parse(param(params, "event").unwrap_or_default()),
            left: param_u64(params, "left")?,
            uploaded: param_u64(params, "uploaded")?,
            downloaded: param_u64(params, "downloaded")?,
            compact: param(params, "compact").map(|v| v == b"1"),
            numwant: param_u64(params, "numwant")?,
            key: param(params, "key").map(|v| String::from_utf8_lossy(v).into_owned()),
            query: query.to_owned(),
            failure: None,
            at: Instant::now(),
        })
    })();
    let mut ann = match decoded {
        Ok(a) => a,
        Err(e) => return reject(state, &e, &format!("/announce?{query}")),
    };

    let mut st = lock(state);
    if let Some(reason) = st.failure.clone() {
        ann.failure = Some(reason.clone());
        st.announces.push(ann);
        return (200, failure_body(&reason));
    }
    let interval = st.interval_s;
    let swarm = st.swarms.entry(ann.info_hash).or_default();
    match ann.event {
        Event::Stopped => {
            swarm.peers.remove(&ann.addr);
        }
        _ => {
            if ann.event == Event::Completed {
                swarm.completed += 1;
            }
            swarm.peers.insert(
                ann.addr,
                PeerEntry {
                    peer_id: ann.peer_id.clone(),
                    left: ann.left,
                },
            );
        }
    }
    let complete = swarm.peers.values().filter(|p| p.left == Some(0)).count();
    let incomplete = swarm.peers.len() - complete;
    let numwant = ann
        .numwant
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(DEFAULT_NUMWANT);
    let mut others: Vec<(&SocketAddrV4, &PeerEntry)> = swarm
        .peers
        .iter()
        .filter(|(a, _)| **a != ann.addr)
        .collect();
    others.sort_by_key(|(a, _)| **a);
    others.truncate(numwant);

    // Keys in sorted order, as bencode requires (BEP 3).
    let mut body = format!(
        "d8:completei{complete}e10:incompletei{incomplete}e8:intervali{interval}e12:min intervali{interval}e5:peers"
    )
    .into_bytes();
    if ann.compact == Some(false) {
        // Original BEP 3 list of dictionaries (only when the client asked with compact=0).
        let no_peer_id = param(params, "no_peer_id") == Some(b"1");
        body.push(b'l');
        for (addr, p) in &others {
            let ip = addr.ip().to_string();
            body.extend_from_slice(format!("d2:ip{}:{ip}", ip.len()).as_bytes());
            if !no_peer_id {
                body.extend_from_slice(format!("7:peer id{}:", p.peer_id.len()).as_bytes());
                body.extend_from_slice(&p.peer_id);
            }
            body.extend_from_slice(format!("4:porti{}ee", addr.port()).as_bytes());
        }
        body.push(b'e');
    } else {
        // BEP 23: 6 bytes per peer, IPv4 then port, network byte order.
        body.extend_from_slice(format!("{}:", others.len() * 6).as_bytes());
        for (addr, _) in &others {
            body.extend_from_slice(&addr.ip().octets());
            body.extend_from_slice(&addr.port().to_be_bytes());
        }
    }
    body.push(b'e');
    st.announces.push(ann);
    (200, body)
}

fn scrape(params: &Params, state: &Mutex<State>) -> (u16, Vec<u8>) {
    let mut st = lock(state);
    st.scrapes += 1;
    let mut wanted: Vec<InfoHash> = Vec::new();
    for (k, v) in params {
        if k == b"info_hash" {
            match info_hash_of(v) {
                Ok(h) => wanted.push(h),
                Err(e) => {
                    drop(st);
                    return reject(state, &e, "/scrape");
                }
            }
        }
    }
    if wanted.is_empty() {
        wanted = st.swarms.keys().copied().collect();
    }
    wanted.sort();
    wanted.dedup();
    let mut body = b"d5:filesd".to_vec();
    for h in wanted {
        let (complete, incomplete, downloaded) = match st.swarms.get(&h) {
            Some(s) => {
                let c = s.peers.values().filter(|p| p.left == Some(0)).count();
                (c, s.peers.len() - c, s.completed)
            }
            None => (0, 0, 0),
        };
        body.extend_from_slice(b"20:");
        body.extend_from_slice(&h.0);
        body.extend_from_slice(
            format!(
                "d8:completei{complete}e10:downloadedi{downloaded}e10:incompletei{incomplete}ee"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(b"ee");
    (200, body)
}

fn failure_body(reason: &str) -> Vec<u8> {
    let mut b = format!("d14:failure reason{}:", reason.len()).into_bytes();
    b.extend_from_slice(reason.as_bytes());
    b.push(b'e');
    b
}
