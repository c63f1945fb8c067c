//! Scripted hostile BitTorrent peers in plain Rust (std threads + std::net + libc), for
//! testing how a seeder copes with peers that waste its resources.
//!
//! Every [`HostilePeer`] runs on its own thread: it connects from a chosen 127.x.y.z source
//! address ([`connect_from`], so many peers look like distinct hosts), does a correct BEP 3
//! handshake for the torrent's info hash (peer id `-XX0001-` + 12 random characters) and
//! then follows one [`Behaviour`]. The wire format is written here byte by byte (not taken
//! from the engine under test). Each peer records what it saw in atomics the test reads at
//! any time: connected, handshake answered, unchoked, closed by the remote side (and when),
//! payload bytes received, requests sent. Dropping a peer stops its thread (within ~100 ms)
//! and closes its socket.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratorrent::metainfo::{InfoHash, Metainfo};

/// BEP 3 block size, bytes.
pub const BLOCK: u32 = 16 * 1024;
/// Length of a BEP 3 handshake, bytes.
const HANDSHAKE_LEN: usize = 68;
/// The protocol string of the handshake.
const PSTR: &[u8; 19] = b"BitTorrent protocol";
/// `SO_RCVBUF` a [`Behaviour::NonReader`] asks for (the kernel doubles it and applies its
/// minimum): its receive window stays tiny, so the seeder's sends back up at once.
pub const NON_READER_RCVBUF: i32 = 4096;
/// Requests a [`Behaviour::NonReader`] sends per second, blindly, whether choked or not.
pub const NON_READER_REQUESTS_PER_SEC: usize = 2048;
/// Extra requests a [`Behaviour::NonReader`] sends at once when it sees the unchoke.
pub const NON_READER_UNCHOKE_BURST: usize = 4096;
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the remote handshake may take to arrive.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);
/// Poll period of every peer loop (stop flag, remote close).
const TICK: Duration = Duration::from_millis(50);
/// A [`Behaviour::TakesNothing`] peer sends a keep-alive this often (BEP 3 suggests 2 min).
const KEEPALIVE: Duration = Duration::from_secs(30);
/// Largest message a reading peer accepts (a 16 KiB block plus header, with slack).
const MAX_MESSAGE: u32 = 1 << 20;

/// What a [`HostilePeer`] does once connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Small `SO_RCVBUF` set before connect; handshake; `interested`; then
    /// [`NON_READER_REQUESTS_PER_SEC`] `request`s a second for every block of the torrent in
    /// turn (plus a burst of [`NON_READER_UNCHOKE_BURST`] when the unchoke is seen), and
    /// NEVER reads from the socket after the handshake. It only peeks (`MSG_PEEK`, which
    /// leaves the bytes in the kernel buffer and so does not open the TCP window) at the
    /// start of the stream to notice the unchoke, for the report.
    NonReader,
    /// Handshake, then nothing at all: no message, no read, until dropped.
    Silent,
    /// A TCP connection that never even sends the handshake, and never reads.
    HalfOpen,
    /// Handshake, `interested`, reads everything (TCP never blocks), a keep-alive every
    /// 30 s, and never sends a `request`.
    TakesNothing,
}

/// The torrent as a hostile peer needs it: info hash and piece/block geometry.
#[derive(Debug, Clone, Copy)]
pub struct TorrentShape {
    /// v1 info hash.
    pub info_hash: InfoHash,
    /// Piece length, bytes.
    pub piece_length: u32,
    /// Total length of the payload, bytes.
    pub total_length: u64,
}

impl TorrentShape {
    /// Read a .torrent with `ratorrent::metainfo::Metainfo::from_file`.
    ///
    /// # Panics
    /// When the file does not parse.
    pub fn from_torrent(path: &Path) -> TorrentShape {
        let m = Metainfo::from_file(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        TorrentShape {
            info_hash: m.info_hash,
            piece_length: m.piece_length,
            total_length: m.total_length,
        }
    }

    /// Number of pieces.
    pub fn piece_count(&self) -> u32 {
        u32::try_from(self.total_length.div_ceil(u64::from(self.piece_length))).unwrap_or(u32::MAX)
    }

    /// Size of piece `p`, bytes (the last piece may be shorter).
    pub fn piece_size(&self, p: u32) -> u32 {
        let start = u64::from(p) * u64::from(self.piece_length);
        let rest = self.total_length.saturating_sub(start);
        u32::try_from(rest.min(u64::from(self.piece_length))).unwrap_or(0)
    }

    /// Every block of the torrent as `(piece, begin, length)`, in order.
    pub fn blocks(&self) -> Vec<(u32, u32, u32)> {
        let mut v = Vec::new();
        for p in 0..self.piece_count() {
            let size = self.piece_size(p);
            let mut begin = 0;
            while begin < size {
                let len = (size - begin).min(BLOCK);
                v.push((p, begin, len));
                begin += len;
            }
        }
        v
    }
}

/// A distinct loopback source address for hostile peer number `n` (0, 1, ...):
/// `127.66.(n / 250).(n % 250 + 1)`, away from the 127.0.0.x used by seeders and leechers.
pub fn hostile_ip(n: u16) -> Ipv4Addr {
    Ipv4Addr::new(127, 66, (n / 250) as u8, (n % 250 + 1) as u8)
}

/// A random BEP 20 style peer id: `-XX0001-` + 12 alphanumerics.
pub fn random_peer_id() -> [u8; 20] {
    const ALNUM: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut id = [0u8; 20];
    id[..8].copy_from_slice(b"-XX0001-");
    for b in &mut id[8..] {
        *b = ALNUM[rand::random_range(0..ALNUM.len())];
    }
    id
}

/// The 68-byte BEP 3 handshake for `info_hash` and `peer_id` (no reserved bits set).
pub fn handshake(info_hash: &InfoHash, peer_id: &[u8; 20]) -> [u8; HANDSHAKE_LEN] {
    let mut h = [0u8; HANDSHAKE_LEN];
    h[0] = 19;
    h[1..20].copy_from_slice(PSTR);
    h[28..48].copy_from_slice(&info_hash.0);
    h[48..68].copy_from_slice(peer_id);
    h
}

/// Append a length-prefixed message `id` + `payload`.
fn push_msg(out: &mut Vec<u8>, id: u8, payload: &[u8]) {
    let len = u32::try_from(payload.len() + 1).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.push(id);
    out.extend_from_slice(payload);
}

/// Append a `request` (id 6) for `(piece, begin, length)`.
fn push_request(out: &mut Vec<u8>, (piece, begin, length): (u32, u32, u32)) {
    let mut p = [0u8; 12];
    p[..4].copy_from_slice(&piece.to_be_bytes());
    p[4..8].copy_from_slice(&begin.to_be_bytes());
    p[8..].copy_from_slice(&length.to_be_bytes());
    push_msg(out, 6, &p);
}

fn last_os_error(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    // SAFETY: sockaddr_in is plain old data; all-zero is a valid value.
    let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    sa.sin_family = libc::AF_INET as libc::sa_family_t;
    sa.sin_port = a.port().to_be();
    sa.sin_addr = libc::in_addr {
        s_addr: u32::from(*a.ip()).to_be(),
    };
    sa
}

/// Connect to `target` from `source` (any 127.x.y.z; port chosen by the kernel), with an
/// optional `SO_RCVBUF` set before connecting (so the TCP window is negotiated small), within
/// `timeout`. The stream is returned in blocking mode.
///
/// # Errors
/// Any socket, bind or connect error, or the timeout.
pub fn connect_from(
    source: Ipv4Addr,
    target: SocketAddrV4,
    rcvbuf: Option<i32>,
    timeout: Duration,
) -> io::Result<TcpStream> {
    // SAFETY: socket(2) with constant arguments; the fd is owned by `stream` right away.
    let fd: RawFd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    if fd < 0 {
        return Err(last_os_error("socket"));
    }
    // SAFETY: fd is a fresh socket we own; TcpStream closes it on drop.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    if let Some(size) = rcvbuf {
        // SAFETY: setsockopt on our fd with a pointer to a live c_int of the right size.
        let r = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                std::ptr::from_ref(&size).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(last_os_error("setsockopt(SO_RCVBUF)"));
        }
    }
    let src = sockaddr(SocketAddrV4::new(source, 0));
    // SAFETY: bind on our fd with a valid sockaddr_in and its size.
    let r = unsafe {
        libc::bind(
            fd,
            std::ptr::from_ref(&src).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(last_os_error(&format!("bind {source}")));
    }
    let dst = sockaddr(target);
    // SAFETY: connect on our fd with a valid sockaddr_in and its size.
    let r = unsafe {
        libc::connect(
            fd,
            std::ptr::from_ref(&dst).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if r != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(io::Error::new(e.kind(), format!("connect {target}: {e}")));
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: poll on one valid pollfd.
        let n = unsafe { libc::poll(&raw mut pfd, 1, ms) };
        if n < 0 {
            return Err(last_os_error("poll(connect)"));
        }
        if n == 0 {
            return Err(io::Error::new(
                ErrorKind::TimedOut,
                format!("connect {target}: no answer within {timeout:?}"),
            ));
        }
        if let Some(e) = stream.take_error()? {
            return Err(io::Error::new(e.kind(), format!("connect {target}: {e}")));
        }
    }
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// Whether the remote side has closed (FIN or RST), checked with `poll(POLLRDHUP)` so that
/// nothing is read from the socket.
fn remote_closed(fd: RawFd) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: poll on one valid pollfd, no wait.
    let n = unsafe { libc::poll(&raw mut pfd, 1, 0) };
    n > 0 && pfd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

/// Bytes received by the kernel and not (yet) read by us (`FIONREAD`).
fn unread_bytes(fd: RawFd) -> u64 {
    let mut n: libc::c_int = 0;
    // SAFETY: ioctl(FIONREAD) on our socket writes one c_int.
    let r = unsafe { libc::ioctl(fd, libc::FIONREAD, &raw mut n) };
    if r == 0 {
        u64::try_from(n).unwrap_or(0)
    } else {
        0
    }
}

/// Peek (without consuming) up to `buf.len()` bytes at the head of the receive queue.
fn peek(fd: RawFd, buf: &mut [u8]) -> usize {
    // SAFETY: recv into a live buffer of the given length.
    let n = unsafe {
        libc::recv(
            fd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(n).unwrap_or(0)
}

/// Walk the messages at the start of `buf`: is there an `unchoke` (id 1) among them?
fn unchoked_in(buf: &[u8]) -> bool {
    let mut at = 0usize;
    while let Some(head) = buf.get(at..at + 4) {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        if len > 0 && buf.get(at + 4) == Some(&1) {
            return true;
        }
        at += 4 + len;
    }
    false
}

/// What a peer recorded (all readable while it runs).
#[derive(Debug, Default)]
struct Shared {
    stop: AtomicBool,
    /// TCP connection established.
    connected: AtomicBool,
    /// The remote's handshake arrived, for our info hash.
    handshaken: AtomicBool,
    /// The remote side closed the connection (FIN/RST, a failed send, EOF).
    closed_by_remote: AtomicBool,
    /// Milliseconds since spawn when the close was seen (valid when `closed_by_remote`).
    closed_at_ms: AtomicU64,
    /// An `unchoke` was seen (read, or peeked by a non-reader).
    unchoked: AtomicBool,
    /// Currently unchoked (reading peers only).
    unchoked_now: AtomicBool,
    /// Payload bytes received in `piece` messages (reading peers only).
    payload_bytes: AtomicU64,
    /// `request` messages written to the socket (fully).
    requests_sent: AtomicU64,
    /// Last `FIONREAD` figure of a non-reader: bytes waiting unread in its kernel buffer.
    unread: AtomicU64,
    /// The peer thread has returned.
    ended: AtomicBool,
    /// First error that ended the peer's script, if not a close by the remote.
    error: Mutex<Option<String>>,
}

/// One scripted peer on its own thread. Stopped (socket closed) on drop.
pub struct HostilePeer {
    /// What it does.
    pub behaviour: Behaviour,
    /// Its source address.
    pub source: Ipv4Addr,
    started: Instant,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl HostilePeer {
    /// Start a peer that connects from `source` to `target` and behaves as `behaviour` for
    /// the torrent `shape`. Returns at once; see [`HostilePeer::connected`] and friends.
    pub fn spawn(
        behaviour: Behaviour,
        source: Ipv4Addr,
        target: SocketAddrV4,
        shape: &TorrentShape,
    ) -> HostilePeer {
        let shared = Arc::new(Shared::default());
        let started = Instant::now();
        let thread = {
            let shared = Arc::clone(&shared);
            let shape = *shape;
            std::thread::Builder::new()
                .name(format!("hostile-{source}"))
                .spawn(move || {
                    let r = run(behaviour, source, target, &shape, &shared, started);
                    if let Err(e) = r {
                        let mut slot = shared.error.lock().unwrap_or_else(|e| e.into_inner());
                        slot.get_or_insert(e);
                    }
                    shared.ended.store(true, Ordering::SeqCst);
                })
                .expect("spawn hostile peer thread")
        };
        HostilePeer {
            behaviour,
            source,
            started,
            shared,
            thread: Some(thread),
        }
    }

    /// The TCP connection was established.
    pub fn connected(&self) -> bool {
        self.shared.connected.load(Ordering::SeqCst)
    }

    /// The remote answered with a handshake for our info hash.
    pub fn handshaken(&self) -> bool {
        self.shared.handshaken.load(Ordering::SeqCst)
    }

    /// The remote side closed the connection (seen as FIN/RST via poll, a failed send, or
    /// EOF on read).
    pub fn closed_by_remote(&self) -> bool {
        self.shared.closed_by_remote.load(Ordering::SeqCst)
    }

    /// Time from spawn to the remote close, if it happened.
    pub fn closed_after(&self) -> Option<Duration> {
        self.closed_by_remote()
            .then(|| Duration::from_millis(self.shared.closed_at_ms.load(Ordering::SeqCst)))
    }

    /// An `unchoke` was seen.
    pub fn unchoked(&self) -> bool {
        self.shared.unchoked.load(Ordering::SeqCst)
    }

    /// Currently unchoked (reading peers).
    pub fn unchoked_now(&self) -> bool {
        self.shared.unchoked_now.load(Ordering::SeqCst)
    }

    /// Payload bytes received in `piece` messages (0 for peers that never read).
    pub fn payload_bytes(&self) -> u64 {
        self.shared.payload_bytes.load(Ordering::SeqCst)
    }

    /// `request` messages sent.
    pub fn requests_sent(&self) -> u64 {
        self.shared.requests_sent.load(Ordering::SeqCst)
    }

    /// A non-reader's unread bytes in its kernel receive buffer (last sample).
    pub fn unread_bytes(&self) -> u64 {
        self.shared.unread.load(Ordering::SeqCst)
    }

    /// The error that ended the peer's script, if any (a remote close is not an error).
    pub fn error(&self) -> Option<String> {
        self.shared
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The peer is still connected (connected, not closed by the remote, thread running).
    pub fn alive(&self) -> bool {
        self.connected() && !self.closed_by_remote() && !self.shared.ended.load(Ordering::SeqCst)
    }

    /// Time since the peer was spawned.
    pub fn age(&self) -> Duration {
        self.started.elapsed()
    }

    /// One line describing the peer's state.
    pub fn describe(&self) -> String {
        format!("{} from {}", self.state_line(), self.source)
    }

    /// The peer's state without its address (times rounded to 0.1 s).
    fn state_line(&self) -> String {
        format!(
            "{:?}: connected={} handshaken={} unchoked={} closed_by_remote={} payload={} B \
             requests_sent={} unread={} B error={}",
            self.behaviour,
            self.connected(),
            self.handshaken(),
            self.unchoked(),
            self.closed_after().map_or_else(
                || "no".into(),
                |d| format!("after {:.1} s", d.as_secs_f64())
            ),
            self.payload_bytes(),
            self.requests_sent(),
            self.unread_bytes(),
            self.error().unwrap_or_else(|| "-".into()),
        )
    }

    /// Stop the thread and close the socket (idempotent).
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for HostilePeer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A group of hostile peers with the same behaviour, each from its own source address.
pub struct Crowd {
    /// The peers, in spawn order.
    pub peers: Vec<HostilePeer>,
}

impl Crowd {
    /// Spawn `n` peers behaving as `behaviour`, from [`hostile_ip`]`(first..first + n)`.
    pub fn spawn(
        behaviour: Behaviour,
        n: u16,
        first: u16,
        target: SocketAddrV4,
        shape: &TorrentShape,
    ) -> Crowd {
        let peers = (first..first + n)
            .map(|i| HostilePeer::spawn(behaviour, hostile_ip(i), target, shape))
            .collect();
        Crowd { peers }
    }

    /// How many peers satisfy `f`.
    pub fn count(&self, f: impl Fn(&HostilePeer) -> bool) -> usize {
        self.peers.iter().filter(|p| f(p)).count()
    }

    /// One line of totals.
    pub fn summary(&self) -> String {
        let kind = self
            .peers
            .first()
            .map_or_else(|| "-".into(), |p| format!("{:?}", p.behaviour));
        format!(
            "{} {kind} peers: {} connected, {} handshaken, {} saw an unchoke, {} closed by the \
             seeder, {} still connected, {} with errors; {} payload bytes received, {} requests sent",
            self.peers.len(),
            self.count(HostilePeer::connected),
            self.count(HostilePeer::handshaken),
            self.count(HostilePeer::unchoked),
            self.count(HostilePeer::closed_by_remote),
            self.count(HostilePeer::alive),
            self.count(|p| p.error().is_some()),
            self.peers
                .iter()
                .map(HostilePeer::payload_bytes)
                .sum::<u64>(),
            self.peers
                .iter()
                .map(HostilePeer::requests_sent)
                .sum::<u64>(),
        )
    }

    /// One line per peer, peers in the same state grouped (`N× state (from a, b, ...)`).
    pub fn details(&self) -> String {
        let mut groups: Vec<(String, Vec<Ipv4Addr>)> = Vec::new();
        for p in &self.peers {
            let line = p.state_line();
            match groups.iter_mut().find(|(l, _)| *l == line) {
                Some((_, from)) => from.push(p.source),
                None => groups.push((line, vec![p.source])),
            }
        }
        groups
            .iter()
            .map(|(line, from)| {
                let mut who: Vec<String> = from.iter().take(4).map(ToString::to_string).collect();
                if from.len() > 4 {
                    who.push(format!("... {} more", from.len() - 4));
                }
                format!("{}x {line} (from {})", from.len(), who.join(", "))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Stop every peer.
    pub fn stop(&mut self) {
        for p in &self.peers {
            p.shared.stop.store(true, Ordering::SeqCst);
        }
        for p in &mut self.peers {
            p.stop();
        }
    }
}

fn mark_closed(shared: &Shared, started: Instant) {
    if !shared.closed_by_remote.swap(true, Ordering::SeqCst) {
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        shared.closed_at_ms.store(ms, Ordering::SeqCst);
    }
}

fn is_close(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::BrokenPipe
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::UnexpectedEof
            | ErrorKind::NotConnected
    )
}

/// The peer's script. `Err` = an unexpected failure (recorded); a remote close is `Ok`.
fn run(
    behaviour: Behaviour,
    source: Ipv4Addr,
    target: SocketAddrV4,
    shape: &TorrentShape,
    shared: &Shared,
    started: Instant,
) -> Result<(), String> {
    let rcvbuf = (behaviour == Behaviour::NonReader).then_some(NON_READER_RCVBUF);
    let mut s = connect_from(source, target, rcvbuf, CONNECT_TIMEOUT).map_err(|e| e.to_string())?;
    shared.connected.store(true, Ordering::SeqCst);
    let fd = s.as_raw_fd();
    let stopped = || shared.stop.load(Ordering::SeqCst);

    if behaviour == Behaviour::HalfOpen {
        while !stopped() {
            if remote_closed(fd) {
                mark_closed(shared, started);
                return Ok(());
            }
            std::thread::sleep(TICK);
        }
        return Ok(());
    }

    // handshake: ours, then theirs (68 bytes, nothing more is read here)
    s.set_write_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(|e| e.to_string())?;
    if let Err(e) = s.write_all(&handshake(&shape.info_hash, &random_peer_id())) {
        if is_close(&e) {
            mark_closed(shared, started);
            return Ok(());
        }
        return Err(format!("sending handshake: {e}"));
    }
    s.set_read_timeout(Some(TICK)).map_err(|e| e.to_string())?;
    let mut hs = [0u8; HANDSHAKE_LEN];
    let mut got = 0;
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    while got < HANDSHAKE_LEN {
        if stopped() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "no handshake from the seeder within {HANDSHAKE_TIMEOUT:?} ({got} bytes)"
            ));
        }
        match s.read(&mut hs[got..]) {
            Ok(0) => {
                mark_closed(shared, started);
                return Ok(());
            }
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if is_close(&e) => {
                mark_closed(shared, started);
                return Ok(());
            }
            Err(e) => return Err(format!("reading handshake: {e}")),
        }
    }
    if hs[0] != 19 || &hs[1..20] != PSTR {
        return Err(format!("bad handshake from the seeder: {:02x?}", &hs[..20]));
    }
    if hs[28..48] != shape.info_hash.0 {
        return Err("the seeder's handshake names another info hash".into());
    }
    shared.handshaken.store(true, Ordering::SeqCst);

    match behaviour {
        Behaviour::Silent => {
            while !stopped() {
                if remote_closed(fd) {
                    mark_closed(shared, started);
                    return Ok(());
                }
                std::thread::sleep(TICK);
            }
            Ok(())
        }
        Behaviour::NonReader => non_reader(&mut s, shape, shared, started),
        Behaviour::TakesNothing => takes_nothing(&mut s, shared, started),
        Behaviour::HalfOpen => Ok(()),
    }
}

fn non_reader(
    s: &mut TcpStream,
    shape: &TorrentShape,
    shared: &Shared,
    started: Instant,
) -> Result<(), String> {
    let fd = s.as_raw_fd();
    s.set_nonblocking(true).map_err(|e| e.to_string())?;
    let blocks = shape.blocks();
    if blocks.is_empty() {
        return Err("torrent has no blocks".into());
    }
    let mut next = 0usize;
    // bytes still to write, and how many whole requests they end with
    let mut pending: Vec<u8> = Vec::new();
    push_msg(&mut pending, 2, &[]); // interested
    let mut pending_requests: Vec<usize> = Vec::new(); // end offset of each request in `pending`
    let mut last_batch: Option<Instant> = None;
    let mut burst_done = false;
    let mut peek_buf = vec![0u8; 64 * 1024];
    let mut add = |pending: &mut Vec<u8>, ends: &mut Vec<usize>, n: usize| {
        for _ in 0..n {
            push_request(pending, blocks[next % blocks.len()]);
            ends.push(pending.len());
            next += 1;
        }
    };
    while !shared.stop.load(Ordering::SeqCst) {
        if remote_closed(fd) {
            mark_closed(shared, started);
            return Ok(());
        }
        shared.unread.store(unread_bytes(fd), Ordering::SeqCst);
        if !shared.unchoked.load(Ordering::SeqCst) {
            let n = peek(fd, &mut peek_buf);
            if unchoked_in(&peek_buf[..n]) {
                shared.unchoked.store(true, Ordering::SeqCst);
            }
        }
        if shared.unchoked.load(Ordering::SeqCst) && !burst_done {
            burst_done = true;
            add(
                &mut pending,
                &mut pending_requests,
                NON_READER_UNCHOKE_BURST,
            );
        }
        if last_batch.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
            last_batch = Some(Instant::now());
            // keep at most a few seconds of requests buffered on our side
            if pending.len() < 4 * NON_READER_REQUESTS_PER_SEC * 17 {
                add(
                    &mut pending,
                    &mut pending_requests,
                    NON_READER_REQUESTS_PER_SEC,
                );
            }
        }
        // write as much as the socket takes without blocking
        let mut written = 0usize;
        while written < pending.len() {
            match s.write(&pending[written..]) {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if is_close(&e) => {
                    mark_closed(shared, started);
                    return Ok(());
                }
                Err(e) => return Err(format!("sending requests: {e}")),
            }
        }
        if written > 0 {
            pending.drain(..written);
            let done = pending_requests.partition_point(|&end| end <= written);
            shared
                .requests_sent
                .fetch_add(done as u64, Ordering::SeqCst);
            pending_requests.drain(..done);
            for end in &mut pending_requests {
                *end -= written;
            }
        }
        std::thread::sleep(TICK);
    }
    Ok(())
}

fn takes_nothing(s: &mut TcpStream, shared: &Shared, started: Instant) -> Result<(), String> {
    s.set_write_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    push_msg(&mut out, 2, &[]); // interested
    if let Err(e) = s.write_all(&out) {
        if is_close(&e) {
            mark_closed(shared, started);
            return Ok(());
        }
        return Err(format!("sending interested: {e}"));
    }
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut last_keepalive = Instant::now();
    while !shared.stop.load(Ordering::SeqCst) {
        match s.read(&mut chunk) {
            Ok(0) => {
                mark_closed(shared, started);
                return Ok(());
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if is_close(&e) => {
                mark_closed(shared, started);
                return Ok(());
            }
            Err(e) => return Err(format!("reading: {e}")),
        }
        // parse every complete message
        let mut at = 0usize;
        while let Some(head) = buf.get(at..at + 4) {
            let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
            if len > MAX_MESSAGE {
                return Err(format!("the seeder sent a message of {len} bytes"));
            }
            let end = at + 4 + len as usize;
            if buf.len() < end {
                break;
            }
            if len > 0 {
                match buf[at + 4] {
                    0 => shared.unchoked_now.store(false, Ordering::SeqCst),
                    1 => {
                        shared.unchoked.store(true, Ordering::SeqCst);
                        shared.unchoked_now.store(true, Ordering::SeqCst);
                    }
                    7 if len >= 9 => {
                        shared
                            .payload_bytes
                            .fetch_add(u64::from(len - 9), Ordering::SeqCst);
                    }
                    _ => {}
                }
            }
            at = end;
        }
        buf.drain(..at);
        if last_keepalive.elapsed() >= KEEPALIVE {
            last_keepalive = Instant::now();
            if let Err(e) = s.write_all(&[0, 0, 0, 0]) {
                if is_close(&e) {
                    mark_closed(shared, started);
                    return Ok(());
                }
                return Err(format!("sending keep-alive: {e}"));
            }
        }
    }
    Ok(())
}
