//! The uTP socket: one UDP socket per listen address carrying every uTP connection, and
//! the task that drives them.
//!
//! - **Receiving**: the task drains the socket in batches (up to [`BATCH`] datagrams, read
//!   32 at a time by `recvmmsg`, [`super::recv`]),
//!   routes each packet by (sender, connection id) to its [`Conn`] under that connection's
//!   own lock (never held across an await), and once the batch is read sends each touched
//!   connection's pending ACK (libtorrent's "socket drained" ACK) and wakes its reader
//!   and writer, once per batch. A datagram that is not
//!   uTP is dropped; a `ST_SYN` opens an incoming connection while fewer than
//!   [`UtpLimits::max_half_open`] are half-open (no data yet) and the table has room;
//!   data for a connection we do not know gets a `ST_RESET`.
//! - **Sending**: whoever changes a connection sends its datagrams at once (the task on an
//!   ACK, a stream's writer on a write) with a non-blocking `send_to`; a full socket buffer
//!   is retried on the next tick. The socket's buffers are raised to [`SOCKET_BUFFER`]
//!   (the kernel caps them at `net.core.{r,w}mem_max`).
//! - **Timers**: the task sleeps until the earliest connection deadline (SYN resend,
//!   retransmission, pacing), then runs every connection's due timers; with no deadline it
//!   sleeps until a datagram comes.
//! - **Memory**: bounded by the table's size ([`UtpLimits::max_connections`]) times a
//!   connection's buffers; a half-open incoming connection holds no buffer and is reset
//!   after [`HALF_OPEN_TIMEOUT`]; a connection both stream halves let go of is removed once
//!   its FIN is acknowledged or after [`LINGER`].

use std::collections::HashMap;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;
use tokio::sync::{Notify, mpsc};

use super::conn::{Conn, Out, State};
use super::packet::{HEADER_LEN, Header, Packet, PacketType};
use super::recv::RecvBatch;
use super::stream::UtpStream;
use crate::lock::MutexExt;

/// Most datagrams read before the batch's ACKs go out.
pub const BATCH: usize = 256;
/// Socket send and receive buffer asked for, bytes (Debian's default of 208 KiB drops
/// datagrams whenever the task is late on two busy cores).
pub const SOCKET_BUFFER: usize = 4 << 20;
/// An incoming connection that sent no data within this long is reset.
pub const HALF_OPEN_TIMEOUT: Duration = Duration::from_secs(10);
/// A closed connection is kept at most this long to deliver its last bytes and FIN.
pub const LINGER: Duration = Duration::from_secs(10);
/// Incoming connections queued for the session, at most.
pub const ACCEPT_QUEUE: usize = 64;

/// Limits of one socket.
#[derive(Debug, Clone, Copy)]
pub struct UtpLimits {
    /// Incoming connections that sent no data yet, at most (more `ST_SYN`s are dropped).
    pub max_half_open: usize,
    /// Connections in the table, at most (incoming `ST_SYN`s and dials past it are
    /// refused).
    pub max_connections: usize,
}

impl Default for UtpLimits {
    fn default() -> UtpLimits {
        UtpLimits {
            max_half_open: 64,
            max_connections: 1024,
        }
    }
}

/// A connection's state behind its lock, with the wakers of the tasks waiting on it.
#[derive(Debug)]
pub(super) struct Slot {
    pub(super) conn: Conn,
    pub(super) reader: Option<Waker>,
    pub(super) writer: Option<Waker>,
    pub(super) connect: Option<Waker>,
    /// Incoming and no data yet (counted in the table's half-open number).
    half_open: bool,
    /// Touched in the current receive batch.
    in_batch: bool,
    /// Both stream halves are gone: when.
    orphaned: Option<Instant>,
    created: Instant,
}

impl Slot {
    /// Wake the tasks that can make progress now.
    pub(super) fn wake(&mut self) {
        let closed = self.conn.state() == State::Closed;
        if (self.conn.readable() > 0 || self.conn.at_eof() || closed)
            && let Some(w) = self.reader.take()
        {
            w.wake();
        }
        if (self.conn.writable() > 0 || closed)
            && let Some(w) = self.writer.take()
        {
            w.wake();
        }
        if self.conn.state() != State::SynSent
            && let Some(w) = self.connect.take()
        {
            w.wake();
        }
    }
}

/// One connection as the socket and its streams share it.
#[derive(Debug)]
pub(super) struct Cell {
    pub(super) addr: SocketAddr,
    pub(super) slot: Mutex<Slot>,
    /// Stream handles alive.
    pub(super) handles: AtomicUsize,
}

#[derive(Debug, Default)]
struct Table {
    map: HashMap<(SocketAddr, u16), Arc<Cell>>,
    half_open: usize,
}

/// What the task and the streams share.
#[derive(Debug)]
pub(super) struct Inner {
    udp: UdpSocket,
    /// The same socket for sending without the reactor's readiness cache.
    tx: std::net::UdpSocket,
    epoch: Instant,
    table: Mutex<Table>,
    /// The earliest deadline the task sleeps until, µs (`u64::MAX`: none).
    next_tick_us: AtomicU64,
    wake: Notify,
    closed: AtomicBool,
    accept: Option<mpsc::Sender<UtpStream>>,
    limits: UtpLimits,
}

/// Sends a connection's datagrams to its peer.
pub(super) struct UdpOut<'a> {
    tx: &'a std::net::UdpSocket,
    to: SocketAddr,
}

impl Out for UdpOut<'_> {
    fn send(&mut self, d: &[u8]) -> bool {
        match self.tx.send_to(d, self.to) {
            Ok(_) => true,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => false,
            // unreachable, refused, filtered: the datagram is lost, as on the wire
            Err(_) => true,
        }
    }
}

impl Inner {
    pub(super) fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    pub(super) fn out(&self, to: SocketAddr) -> UdpOut<'_> {
        UdpOut { tx: &self.tx, to }
    }

    /// A connection's deadline may be earlier than the task's next wake-up.
    pub(super) fn schedule(&self, deadline: Option<u64>) {
        if let Some(d) = deadline
            && self.next_tick_us.fetch_min(d, Ordering::AcqRel) > d
        {
            self.wake.notify_one();
        }
    }

    /// A stream handle was dropped; the last one closes the connection.
    pub(super) fn release(&self, cell: &Arc<Cell>) {
        if cell.handles.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let now = self.now_us();
        let mut s = cell.slot.locked();
        s.conn.close(now, &mut self.out(cell.addr));
        s.orphaned = Some(Instant::now());
        let d = s.conn.deadline();
        drop(s);
        // the task removes it (now, or once the FIN is acknowledged)
        self.schedule(Some(d.map_or(now, |d| d.min(now + 1000))));
    }
}

/// A bound uTP socket: dial with [`UtpSocket::connect`], take incoming connections from
/// the receiver [`UtpSocket::bind`] returns. Dropping it stops its task; streams already
/// open stop with it.
#[derive(Debug)]
pub struct UtpSocket {
    inner: Arc<Inner>,
}

impl Drop for UtpSocket {
    fn drop(&mut self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.wake.notify_one();
    }
}

impl UtpSocket {
    /// Bind UDP `addr` with [`SOCKET_BUFFER`]-sized buffers and start the socket's task on
    /// the current tokio runtime. With `accept`, incoming connections come on the returned
    /// receiver (at most [`ACCEPT_QUEUE`] waiting; more are reset).
    ///
    /// # Errors
    /// The address cannot be bound (in use, no permission).
    pub fn bind(
        addr: SocketAddr,
        limits: UtpLimits,
        accept: bool,
    ) -> io::Result<(UtpSocket, Option<mpsc::Receiver<UtpStream>>)> {
        use socket2::{Domain, Protocol, Socket, Type};
        let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        // the kernel caps both at rmem_max / wmem_max: not an error
        let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
        let _ = s.set_send_buffer_size(SOCKET_BUFFER);
        s.set_nonblocking(true)?;
        s.bind(&addr.into())?;
        let std: std::net::UdpSocket = s.into();
        let tx = std.try_clone()?;
        let udp = UdpSocket::from_std(std)?;
        let (atx, arx) = if accept {
            let (t, r) = mpsc::channel(ACCEPT_QUEUE);
            (Some(t), Some(r))
        } else {
            (None, None)
        };
        let inner = Arc::new(Inner {
            udp,
            tx,
            epoch: Instant::now(),
            table: Mutex::new(Table::default()),
            next_tick_us: AtomicU64::new(u64::MAX),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
            accept: atx,
            limits,
        });
        tokio::spawn(run(inner.clone()));
        Ok((UtpSocket { inner }, arx))
    }

    /// The bound address.
    ///
    /// # Errors
    /// As `getsockname`.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.udp.local_addr()
    }

    /// The socket's send and receive buffer sizes as the kernel set them, bytes.
    pub fn buffer_sizes(&self) -> (usize, usize) {
        let s = socket2::SockRef::from(&self.inner.udp);
        (
            s.send_buffer_size().unwrap_or(0),
            s.recv_buffer_size().unwrap_or(0),
        )
    }

    /// Connections in the table and the incoming ones of them still half-open.
    pub fn counts(&self) -> (usize, usize) {
        let t = self.inner.table.locked();
        (t.map.len(), t.half_open)
    }

    /// Open a connection to `addr` (BEP 29 handshake: up to three `ST_SYN`s over 3 s).
    ///
    /// # Errors
    /// `TimedOut` when no answer came, `ConnectionReset` when the peer refused, `Other`
    /// when the table is full ([`UtpLimits::max_connections`]).
    pub async fn connect(&self, addr: SocketAddr) -> io::Result<UtpStream> {
        let inner = &self.inner;
        let cell = {
            let mut t = inner.table.locked();
            if t.map.len() >= inner.limits.max_connections {
                return Err(io::Error::other("too many uTP connections"));
            }
            let mut id: u16 = rand::random();
            while t.map.contains_key(&(addr, id)) {
                id = id.wrapping_add(2);
            }
            let now = inner.now_us();
            let conn = Conn::connect(id, rand::random(), now, &mut inner.out(addr));
            let cell = new_cell(addr, conn, false);
            t.map.insert((addr, id), cell.clone());
            cell
        };
        let stream = UtpStream::new(inner.clone(), cell.clone());
        inner.schedule(cell.slot.locked().conn.deadline());
        poll_fn(|cx| {
            let mut s = cell.slot.locked();
            match s.conn.state() {
                State::Connected => Poll::Ready(Ok(())),
                State::Closed => Poll::Ready(Err(io::Error::from(
                    s.conn.error().unwrap_or(io::ErrorKind::ConnectionAborted),
                ))),
                State::SynSent => {
                    s.connect = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await?;
        Ok(stream)
    }
}

fn new_cell(addr: SocketAddr, conn: Conn, half_open: bool) -> Arc<Cell> {
    Arc::new(Cell {
        addr,
        slot: Mutex::new(Slot {
            conn,
            reader: None,
            writer: None,
            connect: None,
            half_open,
            in_batch: false,
            orphaned: None,
            created: Instant::now(),
        }),
        handles: AtomicUsize::new(0),
    })
}

/// The socket's task: receive batches, timers, until the socket is dropped.
async fn run(inner: Arc<Inner>) {
    let mut buf = RecvBatch::new();
    let mut touched: Vec<Arc<Cell>> = Vec::with_capacity(BATCH);
    let mut all: Vec<Arc<Cell>> = Vec::new();
    loop {
        if inner.closed.load(Ordering::Acquire) {
            break;
        }
        let next = inner.next_tick_us.load(Ordering::Acquire);
        let sleep = async {
            if next == u64::MAX {
                std::future::pending::<()>().await;
            }
            let at = inner.epoch + Duration::from_micros(next);
            tokio::time::sleep_until(at.into()).await;
        };
        tokio::select! {
            r = inner.udp.readable() => {
                if r.is_err() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                receive_batch(&inner, &mut buf, &mut touched);
            }
            _ = sleep => tick(&inner, &mut all),
            _ = inner.wake.notified() => {}
        }
    }
    // the socket is gone: end every connection
    let cells: Vec<Arc<Cell>> = inner.table.locked().map.drain().map(|(_, c)| c).collect();
    let now = inner.now_us();
    for c in cells {
        let mut s = c.slot.locked();
        s.conn.reset(now, &mut inner.out(c.addr));
        s.wake();
    }
}

fn receive_batch(inner: &Arc<Inner>, rb: &mut RecvBatch, touched: &mut Vec<Arc<Cell>>) {
    let mut read = 0;
    while read < BATCH {
        match rb.read(&inner.udp) {
            Ok(n) => {
                for i in 0..n {
                    if let Some((d, from)) = rb.datagram(i) {
                        on_datagram(inner, d, from, touched);
                    }
                }
                read += n.max(1);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(_) => read += 1, // an ICMP error for an earlier datagram
        }
    }
    let now = inner.now_us();
    for cell in touched.drain(..) {
        let mut s = cell.slot.locked();
        s.in_batch = false;
        s.conn.ack_if_pending(now, &mut inner.out(cell.addr));
        s.wake();
        let d = s.conn.deadline();
        drop(s);
        inner.schedule(d);
    }
}

fn on_datagram(inner: &Arc<Inner>, d: &[u8], from: SocketAddr, touched: &mut Vec<Arc<Cell>>) {
    let Ok(p) = Packet::parse(d) else {
        return;
    };
    let h = p.header;
    let now = inner.now_us();
    let cell = {
        let mut t = inner.table.locked();
        if h.kind == PacketType::Syn {
            let key = (from, h.conn_id.wrapping_add(1));
            match t.map.get(&key) {
                Some(c) => c.clone(),
                None => {
                    accept_syn(inner, &mut t, &h, from, now);
                    return;
                }
            }
        } else if let Some(c) = t.map.get(&(from, h.conn_id)) {
            c.clone()
        } else if h.kind == PacketType::Reset {
            // libtorrent resets with the id it sends with
            let Some(c) = t
                .map
                .values()
                .find(|c| c.addr == from && c.slot.locked().conn.send_id() == h.conn_id)
            else {
                return;
            };
            c.clone()
        } else {
            drop(t);
            if matches!(h.kind, PacketType::Data | PacketType::Fin) {
                send_reset(inner, &h, from, now);
            }
            return;
        }
    };
    let mut s = cell.slot.locked();
    s.conn.on_packet(&p, now, &mut inner.out(from));
    if s.half_open && s.conn.established {
        s.half_open = false;
        inner.table.locked().half_open -= 1;
    }
    // the reader and writer are woken once the batch is read: woken per packet, they
    // would run beside this task and wake it again for every packet
    if !s.in_batch {
        s.in_batch = true;
        drop(s);
        touched.push(cell);
    }
}

/// A `ST_SYN` for a connection we do not have: accept it if there is room.
fn accept_syn(inner: &Arc<Inner>, t: &mut Table, h: &Header, from: SocketAddr, now: u64) {
    let Some(accept) = &inner.accept else {
        return;
    };
    if t.half_open >= inner.limits.max_half_open || t.map.len() >= inner.limits.max_connections {
        tracing::debug!(%from, "uTP SYN dropped: too many half-open connections");
        return;
    }
    let conn = Conn::accept(h, rand::random(), now, &mut inner.out(from));
    let key = (from, conn.recv_id());
    let cell = new_cell(from, conn, true);
    let stream = UtpStream::new(inner.clone(), cell.clone());
    t.map.insert(key, cell);
    t.half_open += 1;
    if let Err(e) = accept.try_send(stream) {
        // the session is not taking them: the stream's drop closes the connection
        tracing::debug!(%from, "uTP accept queue full; closing");
        drop(e);
    }
}

/// Answer a data packet for a connection we do not have with `ST_RESET`. A reset must
/// carry the id the peer receives on (libtorrent ignores any other), which is one less
/// than the packet's id if the peer dialled us and one more if we dialled it; which one,
/// the forgotten connection no longer says, so both go (the peer ignores the other).
fn send_reset(inner: &Inner, h: &Header, to: SocketAddr, now: u64) {
    for conn_id in [h.conn_id.wrapping_sub(1), h.conn_id.wrapping_add(1)] {
        let r = Header {
            kind: PacketType::Reset,
            conn_id,
            timestamp_us: now as u32,
            timestamp_diff_us: 0,
            wnd_size: 0,
            seq_nr: rand::random(),
            ack_nr: h.seq_nr,
        };
        let mut b = [0u8; HEADER_LEN];
        r.write(0, &mut b);
        inner.out(to).send(&b);
    }
}

/// Run every connection's due timers; drop the connections that are done.
fn tick(inner: &Arc<Inner>, all: &mut Vec<Arc<Cell>>) {
    inner.next_tick_us.store(u64::MAX, Ordering::Release);
    all.clear();
    all.extend(inner.table.locked().map.values().cloned());
    let now = inner.now_us();
    let wall = Instant::now();
    let mut next = u64::MAX;
    let mut gone = Vec::new();
    for cell in all.iter() {
        let mut s = cell.slot.locked();
        let mut out = inner.out(cell.addr);
        if s.half_open && wall.duration_since(s.created) >= HALF_OPEN_TIMEOUT {
            s.conn.reset(now, &mut out);
        }
        if s.conn.deadline().is_some_and(|d| d <= now) {
            s.conn.on_tick(now, &mut out);
        }
        let done = match s.orphaned {
            Some(at) => {
                // a half-open one never said a word: nothing to deliver
                s.half_open
                    || s.conn.fin_done()
                    || s.conn.state() == State::Closed
                    || wall.duration_since(at) >= LINGER
            }
            None => false,
        };
        if done {
            gone.push((cell.clone(), s.half_open));
            continue;
        }
        s.wake();
        if let Some(d) = s.conn.deadline() {
            next = next.min(d);
        }
        if s.half_open {
            let expiry = now
                + (HALF_OPEN_TIMEOUT.saturating_sub(wall.duration_since(s.created))).as_micros()
                    as u64;
            next = next.min(expiry);
        }
        if let Some(at) = s.orphaned {
            let expiry = now + LINGER.saturating_sub(wall.duration_since(at)).as_micros() as u64;
            next = next.min(expiry);
        }
    }
    if !gone.is_empty() {
        let mut t = inner.table.locked();
        for (cell, half_open) in gone {
            let id = cell.slot.locked().conn.recv_id();
            t.map.remove(&(cell.addr, id));
            if half_open {
                t.half_open -= 1;
            }
        }
    }
    all.clear();
    inner.schedule(Some(next).filter(|n| *n != u64::MAX));
}

#[cfg(test)]
#[path = "socket/tests.rs"]
mod tests;
