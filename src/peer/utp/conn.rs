//! One uTP connection (BEP 29) as a plain state machine: it takes packets, the time and
//! the application's reads and writes, and writes the datagrams to send through an
//! [`Out`]. No socket, no task, no lock: [`super::socket`] drives it, tests drive two of
//! them back to back.
//!
//! - **Handshake**: the initiator sends `ST_SYN` (connection id = its receive id, send id
//!   one more) up to [`SYN_ATTEMPTS`] times; the acceptor answers `ST_STATE` and is
//!   connected; `ST_STATE`s carry no sequence number of their own.
//! - **Sending**: the application's bytes go into one send buffer that keeps every byte
//!   until it is acknowledged; a packet in flight is a range of it, so a retransmission
//!   reads the buffer again and nothing is allocated per packet. A partial packet waits
//!   while others are in flight (Nagle) unless the application flushed. The window is the
//!   least of LEDBAT's ([`Ledbat`]) and the receiver's advertised window, and packets leave
//!   paced (at most [`PACE_BURST_MS`] of the window's rate at once).
//! - **Loss**: three duplicate ACKs, or a selective ACK of three packets past a missing
//!   one, resend it at once (fast retransmit) and halve the window; the retransmission
//!   timer (RTT + 4 × variance, at least [`MIN_RTO_MS`], doubling) takes everything in
//!   flight as lost and sends it again from a one-packet window; [`MAX_TIMEOUTS`] in a row
//!   with nothing heard from the peer for [`DEAD_AFTER_MS`] end the connection. A shut
//!   receive window is probed with one packet after a timeout.
//! - **Receiving**: in-order bytes go into the receive buffer, up to [`OOO_SLOTS`] packets
//!   ahead are kept out of order, and the window we advertise is the free room: a reader
//!   that stops reading (our download rate limit) closes it and the sender waits; no packet
//!   within the window is dropped. When a read reopens a window that was nearly shut we say
//!   so at once. Acknowledgements are deferred to the end of each receive batch (one per
//!   connection per batch, as libtorrent does) and carry a selective ACK when packets are
//!   missing.

use std::collections::VecDeque;
use std::io;

use super::ledbat::Ledbat;
use super::packet::{self, HEADER_LEN, Header, Packet, PacketType, SACK_BYTES, seq_less};

/// Largest datagram we send, bytes: a fixed, safe size that passes PPPoE, most VPN
/// tunnels and IPv6 without fragmentation (no path-MTU probing yet).
pub const MAX_DATAGRAM: usize = 1400;
/// Largest payload of one of our packets, bytes.
pub const MSS: usize = MAX_DATAGRAM - HEADER_LEN;
/// The receive buffer (and so the largest window we advertise), bytes.
pub const RECV_WINDOW: usize = 1 << 20;
/// Bytes the application can queue for sending beyond what is in flight.
pub const SEND_BUFFER: usize = 1 << 20;
/// Packets kept ahead of a missing one.
pub const OOO_SLOTS: usize = 1024;
/// Most packets in flight (well under half the 16-bit sequence space).
pub const MAX_IN_FLIGHT: usize = 8192;
/// SYNs sent before a connect attempt fails, the first at once, then after 0.5, 1 s.
pub const SYN_ATTEMPTS: u32 = 3;
/// Time after the last SYN before the connect fails, ms.
pub const SYN_TIMEOUT_MS: u64 = 1500;
/// Least retransmission timeout, ms (BEP 29: 500 ms).
pub const MIN_RTO_MS: u64 = 500;
/// Retransmission timeouts in a row that end the connection (with [`DEAD_AFTER_MS`]).
pub const MAX_TIMEOUTS: u32 = 6;
/// A connection whose peer sent nothing for this long while we waited for ACKs is gone, ms.
pub const DEAD_AFTER_MS: u64 = 20_000;
/// Pacing: most of the window's rate sent back to back, ms.
pub const PACE_BURST_MS: u64 = 2;

/// Where a connection's datagrams go (the socket, or a test's wire).
pub trait Out {
    /// Send one datagram; false when the socket cannot take it now (try again later).
    fn send(&mut self, datagram: &[u8]) -> bool;
}

/// A connection's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// We sent `ST_SYN` and wait for the answer.
    SynSent,
    /// Open both ways.
    Connected,
    /// Gone: reset by the peer, timed out or closed by us.
    Closed,
}

/// A packet in flight: a range of the send stream (or our FIN).
#[derive(Debug, Clone, Copy)]
struct Sent {
    /// Stream offset of its first byte.
    off: u64,
    len: u32,
    /// Last (re)transmission, µs.
    sent_us: u64,
    transmissions: u8,
    /// Selectively acknowledged.
    sacked: bool,
    /// Lost: send it again; no longer counted in flight.
    lost: bool,
    /// Lost by fast retransmit: resent at once, whatever the window.
    fast: bool,
    fin: bool,
}

impl Sent {
    fn counted(&self) -> bool {
        !self.sacked && !self.lost
    }
}

/// One uTP connection. Times: `now_us`, µs on the socket's clock (its low 32 bits are the
/// packets' timestamps).
#[derive(Debug)]
pub struct Conn {
    state: State,
    error: Option<io::ErrorKind>,
    recv_id: u16,
    send_id: u16,
    /// Got a packet past the handshake from the peer (an incoming connection is no longer
    /// half-open).
    pub established: bool,
    // ---- sending
    /// Next sequence number to use.
    seq_nr: u16,
    /// Sequence number of `inflight[0]`.
    oldest_seq: u16,
    inflight: VecDeque<Sent>,
    flight_bytes: u32,
    /// Bytes from the first unacknowledged one on; `send_off` is the stream offset of
    /// `send_buf[0]`, `sent_off` how far packets reach.
    send_buf: VecDeque<u8>,
    send_off: u64,
    sent_off: u64,
    /// The application flushed: send a partial packet even with others in flight.
    push: bool,
    fin_queued: bool,
    fin_sent: bool,
    fin_acked: bool,
    peer_wnd: u32,
    cc: Ledbat,
    srtt_us: Option<u64>,
    rttvar_us: u64,
    rto_ms: u64,
    rto_at_us: Option<u64>,
    timeouts: u32,
    last_ack: u16,
    dup_acks: u32,
    /// Pacing: bytes we may send back to back now, and when they were topped up.
    pace_tokens: f64,
    pace_at_us: u64,
    pace_wait_us: Option<u64>,
    /// The socket would not take a datagram: try again on the next tick.
    blocked: bool,
    /// The receiver's window is shut with nothing in flight: send one packet anyway at
    /// this time (a window probe), and whether it is due.
    probe_at_us: Option<u64>,
    probe: bool,
    /// When the peer's last packet came, µs.
    last_recv_us: u64,
    // ---- the handshake
    syn_attempts: u32,
    syn_at_us: u64,
    // ---- receiving
    /// Last sequence number received in order.
    ack_nr: u16,
    recv_buf: VecDeque<u8>,
    /// Packets ahead of the next expected one: slot i is `ack_nr + 1 + i` (slot 0 is
    /// always empty).
    ooo: VecDeque<Option<Vec<u8>>>,
    ooo_bytes: usize,
    /// Buffers of packets taken out of `ooo`, for the next ones (no allocation in steady
    /// state).
    spare: Vec<Vec<u8>>,
    eof_seq: Option<u16>,
    eof: bool,
    /// Data came since our last ACK; an ACK is wanted now (out of order, duplicate, FIN,
    /// window update).
    ack_pending: bool,
    ack_now: bool,
    /// Our last one-way delay sample of their packets (µs, wrapping), sent back to them.
    reply_micro: u32,
    /// The window we advertised last.
    wnd_sent: usize,
}

/// Copy `dst.len()` bytes from `start` of the ring whose halves are `a` and `b`.
fn copy_range(a: &[u8], b: &[u8], start: usize, dst: &mut [u8]) {
    let len = dst.len();
    if start >= a.len() {
        let s = start - a.len();
        dst.copy_from_slice(&b[s..s + len]);
    } else {
        let na = (a.len() - start).min(len);
        dst[..na].copy_from_slice(&a[start..start + na]);
        dst[na..].copy_from_slice(&b[..len - na]);
    }
}

fn ts(now_us: u64) -> u32 {
    now_us as u32
}

impl Conn {
    fn new(state: State, recv_id: u16, send_id: u16, seq_nr: u16, now_us: u64) -> Conn {
        Conn {
            state,
            error: None,
            recv_id,
            send_id,
            established: false,
            seq_nr,
            oldest_seq: seq_nr,
            inflight: VecDeque::new(),
            flight_bytes: 0,
            send_buf: VecDeque::new(),
            send_off: 0,
            sent_off: 0,
            push: false,
            fin_queued: false,
            fin_sent: false,
            fin_acked: false,
            peer_wnd: MSS as u32,
            cc: Ledbat::new(MSS as u32, now_us / 1000),
            srtt_us: None,
            rttvar_us: 0,
            rto_ms: 1000,
            rto_at_us: None,
            timeouts: 0,
            last_ack: seq_nr.wrapping_sub(1),
            dup_acks: 0,
            pace_tokens: (MSS * 4) as f64,
            pace_at_us: now_us,
            pace_wait_us: None,
            blocked: false,
            probe_at_us: None,
            probe: false,
            last_recv_us: now_us,
            syn_attempts: 0,
            syn_at_us: now_us,
            ack_nr: 0,
            recv_buf: VecDeque::new(),
            ooo: VecDeque::new(),
            ooo_bytes: 0,
            spare: Vec::new(),
            eof_seq: None,
            eof: false,
            ack_pending: false,
            ack_now: false,
            reply_micro: 0,
            wnd_sent: RECV_WINDOW,
        }
    }

    /// Open a connection with receive id `recv_id` and first sequence number `seq_nr`:
    /// sends the first `ST_SYN`.
    pub fn connect(recv_id: u16, seq_nr: u16, now_us: u64, out: &mut dyn Out) -> Conn {
        let mut c = Conn::new(
            State::SynSent,
            recv_id,
            recv_id.wrapping_add(1),
            seq_nr,
            now_us,
        );
        c.send_syn(now_us, out);
        c
    }

    /// Accept the `ST_SYN` `syn` (its connection id is the id we send with; we receive on
    /// one more), our first sequence number `seq_nr`: answers `ST_STATE`, connected.
    pub fn accept(syn: &Header, seq_nr: u16, now_us: u64, out: &mut dyn Out) -> Conn {
        let mut c = Conn::new(
            State::Connected,
            syn.conn_id.wrapping_add(1),
            syn.conn_id,
            seq_nr,
            now_us,
        );
        c.ack_nr = syn.seq_nr;
        c.peer_wnd = syn.wnd_size;
        c.reply_micro = ts(now_us).wrapping_sub(syn.timestamp_us);
        c.send_state(now_us, out);
        c
    }

    /// The id this connection's packets arrive with.
    pub fn recv_id(&self) -> u16 {
        self.recv_id
    }

    /// The id we send with (what a `ST_RESET` from the peer may carry).
    pub fn send_id(&self) -> u16 {
        self.send_id
    }

    /// The state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Why the connection ended, if it did by an error.
    pub fn error(&self) -> Option<io::ErrorKind> {
        self.error
    }

    /// LEDBAT's window, bytes (diagnostics and tests).
    pub fn cwnd(&self) -> u32 {
        self.cc.window()
    }

    /// Bytes sent and not yet acknowledged.
    pub fn flight(&self) -> u32 {
        self.flight_bytes
    }

    /// The smoothed round-trip time, µs, once measured.
    pub fn rtt_us(&self) -> Option<u64> {
        self.srtt_us
    }

    fn fail(&mut self, kind: io::ErrorKind) {
        if self.state != State::Closed {
            self.state = State::Closed;
            self.error.get_or_insert(kind);
        }
    }

    fn our_window(&self) -> usize {
        RECV_WINDOW.saturating_sub(self.recv_buf.len() + self.ooo_bytes)
    }

    fn header(&mut self, kind: PacketType, seq_nr: u16, now_us: u64) -> Header {
        let wnd = self.our_window();
        self.wnd_sent = wnd;
        Header {
            kind,
            conn_id: if kind == PacketType::Syn {
                self.recv_id
            } else {
                self.send_id
            },
            timestamp_us: ts(now_us),
            timestamp_diff_us: self.reply_micro,
            wnd_size: wnd as u32,
            seq_nr,
            ack_nr: self.ack_nr,
        }
    }

    fn send_syn(&mut self, now_us: u64, out: &mut dyn Out) {
        let h = self.header(PacketType::Syn, self.seq_nr, now_us);
        let mut buf = [0u8; HEADER_LEN];
        h.write(0, &mut buf);
        out.send(&buf);
        self.syn_attempts += 1;
        self.syn_at_us = now_us;
    }

    /// Send an `ST_STATE` (an ACK, with a selective ACK when packets are missing).
    fn send_state(&mut self, now_us: u64, out: &mut dyn Out) -> bool {
        let h = self.header(PacketType::State, self.seq_nr, now_us);
        let mut buf = [0u8; HEADER_LEN + 2 + SACK_BYTES];
        let mut mask = [0u8; SACK_BYTES];
        let mut mask_len = 0;
        for (i, slot) in self.ooo.iter().enumerate().skip(1).take(SACK_BYTES * 8) {
            if slot.is_some() {
                let bit = i - 1;
                mask[bit / 8] |= 1 << (bit % 8);
                mask_len = (bit / 32 + 1) * 4;
            }
        }
        let len = if mask_len > 0 {
            h.write(packet::EXT_SACK, &mut buf);
            HEADER_LEN + packet::write_sack(&mask[..mask_len], &mut buf[HEADER_LEN..])
        } else {
            h.write(0, &mut buf);
            HEADER_LEN
        };
        let sent = out.send(&buf[..len]);
        if sent {
            self.ack_pending = false;
            self.ack_now = false;
        }
        sent
    }

    /// Send an `ST_RESET` and close.
    pub fn reset(&mut self, now_us: u64, out: &mut dyn Out) {
        if self.state == State::Closed {
            return;
        }
        let h = self.header(PacketType::Reset, self.seq_nr, now_us);
        let mut buf = [0u8; HEADER_LEN];
        h.write(0, &mut buf);
        out.send(&buf);
        self.fail(io::ErrorKind::ConnectionAborted);
    }

    // ------------------------------------------------------------------ receiving

    /// Handle a packet for this connection.
    pub fn on_packet(&mut self, p: &Packet<'_>, now_us: u64, out: &mut dyn Out) {
        let h = p.header;
        if self.state == State::Closed {
            return;
        }
        if h.kind == PacketType::Reset {
            tracing::debug!(recv_id = self.recv_id, "uTP reset by the peer");
            self.fail(io::ErrorKind::ConnectionReset);
            return;
        }
        if h.kind == PacketType::Syn {
            // our answer got lost: the same SYN again
            if h.seq_nr == self.ack_nr && !self.established {
                self.send_state(now_us, out);
            }
            return;
        }
        self.last_recv_us = now_us;
        if h.timestamp_us != 0 {
            self.reply_micro = ts(now_us).wrapping_sub(h.timestamp_us);
        }
        if self.state == State::SynSent {
            if h.kind != PacketType::State || h.ack_nr != self.seq_nr {
                return;
            }
            self.state = State::Connected;
            self.established = true;
            // the acceptor's first data packet carries the number of its ST_STATE
            self.ack_nr = h.seq_nr.wrapping_sub(1);
            self.seq_nr = self.seq_nr.wrapping_add(1);
            self.oldest_seq = self.seq_nr;
            self.last_ack = h.ack_nr;
            self.peer_wnd = h.wnd_size;
            if let Some(rtt) = now_us.checked_sub(self.syn_at_us)
                && self.syn_attempts == 1
            {
                self.rtt_sample(rtt);
            }
            return;
        }
        self.peer_wnd = h.wnd_size;
        self.on_ack(p, now_us);
        match h.kind {
            PacketType::Data => {
                self.established = true;
                self.on_data(h.seq_nr, p.payload);
            }
            PacketType::Fin => {
                self.established = true;
                if self.eof_seq.is_none() {
                    self.eof_seq = Some(h.seq_nr);
                }
                self.ack_now = true;
                self.check_eof();
            }
            _ => {}
        }
        self.flush(now_us, out);
    }

    fn on_data(&mut self, seq: u16, payload: &[u8]) {
        let next = self.ack_nr.wrapping_add(1);
        if seq == next {
            if payload.len() > self.our_window() {
                // past the window we advertised: the sender must wait (and hear so)
                self.ack_now = true;
                return;
            }
            self.recv_buf.extend(payload);
            self.ack_nr = seq;
            self.ack_pending = true;
            self.ooo.pop_front();
            while let Some(Some(_)) = self.ooo.front() {
                if let Some(Some(buf)) = self.ooo.pop_front() {
                    self.ooo_bytes -= buf.len();
                    self.recv_buf.extend(&buf[..]);
                    self.ack_nr = self.ack_nr.wrapping_add(1);
                    self.spare.push(buf);
                }
            }
            if self.ooo.iter().all(Option::is_none) {
                self.ooo.clear();
            } else {
                // still missing packets: tell the sender with a selective ACK now
                self.ack_now = true;
            }
            self.check_eof();
        } else if seq_less(self.ack_nr, seq) {
            let i = seq.wrapping_sub(next) as usize;
            if i >= OOO_SLOTS
                || self.eof_seq.is_some_and(|e| !seq_less(seq, e))
                || payload.len() > self.our_window()
            {
                self.ack_now = true;
                return;
            }
            if self.ooo.len() <= i {
                self.ooo.resize(i + 1, None);
            }
            if self.ooo[i].is_none() {
                let mut buf = self.spare.pop().unwrap_or_default();
                buf.clear();
                buf.extend_from_slice(payload);
                self.ooo_bytes += buf.len();
                self.ooo[i] = Some(buf);
            }
            self.ack_now = true;
        } else {
            // a duplicate: our ACK was lost
            self.ack_now = true;
        }
    }

    fn check_eof(&mut self) {
        if let Some(e) = self.eof_seq
            && e == self.ack_nr.wrapping_add(1)
        {
            self.ack_nr = e;
            self.eof = true;
            self.ack_now = true;
        }
    }

    fn rtt_sample(&mut self, rtt_us: u64) {
        match self.srtt_us {
            None => {
                self.srtt_us = Some(rtt_us);
                self.rttvar_us = rtt_us / 2;
            }
            Some(s) => {
                let d = s.abs_diff(rtt_us);
                self.rttvar_us = (3 * self.rttvar_us + d) / 4;
                self.srtt_us = Some((7 * s + rtt_us) / 8);
            }
        }
        let s = self.srtt_us.unwrap_or(rtt_us);
        self.rto_ms = ((s + 4 * self.rttvar_us) / 1000).max(MIN_RTO_MS);
    }

    fn on_ack(&mut self, p: &Packet<'_>, now_us: u64) {
        let h = p.header;
        let flight_before = self.flight_bytes;
        let mut acked = 0u32;
        let mut rtt = None;
        // cumulative: every packet up to ack_nr
        let n = h.ack_nr.wrapping_sub(self.oldest_seq).wrapping_add(1) as usize;
        if n <= self.inflight.len() {
            for _ in 0..n {
                if let Some(s) = self.inflight.pop_front() {
                    if s.counted() {
                        self.flight_bytes -= s.len;
                    }
                    if !s.sacked {
                        acked += s.len.max(1);
                    }
                    if s.transmissions == 1 {
                        rtt = Some(now_us.saturating_sub(s.sent_us));
                    }
                    if s.fin {
                        self.fin_acked = true;
                    }
                }
            }
            self.oldest_seq = self.oldest_seq.wrapping_add(n as u16);
        }
        // selective: packets past ack_nr + 1
        let mut any_sacked = false;
        if let Some(mask) = p.sack {
            let base = h.ack_nr.wrapping_add(2).wrapping_sub(self.oldest_seq) as usize;
            for bit in 0..mask.len() * 8 {
                if mask[bit / 8] & (1 << (bit % 8)) == 0 {
                    continue;
                }
                let Some(s) = self.inflight.get_mut(base + bit) else {
                    break;
                };
                any_sacked = true;
                if !s.sacked {
                    if s.counted() {
                        self.flight_bytes -= s.len;
                    }
                    s.sacked = true;
                    s.lost = false;
                    s.fast = false;
                    acked += s.len;
                    if s.transmissions == 1 {
                        rtt = Some(now_us.saturating_sub(s.sent_us));
                    }
                }
            }
        }
        if let Some(r) = rtt {
            self.rtt_sample(r);
        }
        self.cc.sample(now_us / 1000, h.timestamp_diff_us);
        if acked > 0 {
            self.cc.on_ack(acked, flight_before);
            self.timeouts = 0;
            self.probe_at_us = None;
            self.rto_at_us = (!self.inflight.is_empty()).then(|| now_us + self.rto_ms * 1000);
            self.dup_acks = 0;
        } else if h.kind == PacketType::State
            && h.ack_nr == self.last_ack
            && !self.inflight.is_empty()
        {
            self.dup_acks += 1;
        }
        self.last_ack = h.ack_nr;
        // fast retransmit: three duplicate ACKs, or a packet that three packets sent after
        // it overtook (selective ACK); each is resent once this way, then by its timer
        let mut lost = false;
        if self.dup_acks == 3
            && let Some(s) = self.inflight.front_mut()
            && s.counted()
            && s.transmissions == 1
        {
            s.lost = true;
            s.fast = true;
            self.flight_bytes -= s.len;
            lost = true;
        }
        if any_sacked {
            let mut seen = 0;
            for s in self.inflight.iter_mut().rev() {
                if s.sacked {
                    seen += 1;
                } else if seen >= 3 && s.counted() && s.transmissions == 1 {
                    s.lost = true;
                    s.fast = true;
                    self.flight_bytes -= s.len;
                    lost = true;
                }
            }
        }
        if lost {
            let rtt_ms = self.srtt_us.map_or(100, |s| s / 1000);
            self.cc.on_loss(now_us / 1000, rtt_ms);
        }
        self.trim_send_buf();
    }

    /// Drop acknowledged bytes from the front of the send buffer.
    fn trim_send_buf(&mut self) {
        let upto = self.inflight.front().map_or(self.sent_off, |s| s.off);
        let n = (upto - self.send_off) as usize;
        if n > 0 {
            self.send_buf.drain(..n);
            self.send_off = upto;
        }
    }

    // ------------------------------------------------------------------ sending

    fn window(&self) -> u32 {
        self.cc.window().min(self.peer_wnd)
    }

    /// Send what the windows and pacing allow: lost packets first, then new data, then
    /// our FIN; an ACK that is due when no packet carried it.
    pub fn flush(&mut self, now_us: u64, out: &mut dyn Out) {
        if self.state != State::Connected {
            return;
        }
        self.blocked = false;
        self.refill_pace(now_us);
        let mut buf = [0u8; MAX_DATAGRAM];
        let window = self.window();
        // lost packets: fast retransmits at once, the rest as the window allows
        for i in 0..self.inflight.len() {
            let s = self.inflight[i];
            if !s.lost {
                continue;
            }
            if !s.fast && self.flight_bytes + s.len > window {
                break;
            }
            if !self.transmit(i, now_us, &mut buf, out) {
                return;
            }
        }
        // new data
        loop {
            let end = self.send_off + self.send_buf.len() as u64;
            let left = end - self.sent_off;
            if left == 0 || self.inflight.len() >= MAX_IN_FLIGHT {
                break;
            }
            let len = left.min(MSS as u64) as u32;
            if self.flight_bytes + len > window {
                if self.probe && self.flight_bytes == 0 {
                    self.probe = false;
                } else {
                    if self.flight_bytes == 0 && self.probe_at_us.is_none() {
                        // the receiver's window is shut: probe it after a timeout
                        self.probe_at_us = Some(now_us + self.rto_ms * 1000);
                    }
                    break;
                }
            }
            if len < MSS as u32 && self.flight_bytes > 0 && !self.push {
                break; // Nagle: wait for a full packet or the ACKs
            }
            if self.pace_tokens < f64::from(len) {
                self.pace_wait(len, now_us);
                break;
            }
            self.inflight.push_back(Sent {
                off: self.sent_off,
                len,
                sent_us: now_us,
                transmissions: 0,
                sacked: false,
                lost: true,
                fast: false,
                fin: false,
            });
            self.sent_off += u64::from(len);
            self.seq_nr = self.seq_nr.wrapping_add(1);
            let i = self.inflight.len() - 1;
            if !self.transmit(i, now_us, &mut buf, out) {
                return;
            }
        }
        let all_out = self.sent_off == self.send_off + self.send_buf.len() as u64;
        if all_out {
            self.push = false;
        }
        // our FIN, once every byte went out
        if self.fin_queued && !self.fin_sent && all_out && self.inflight.len() < MAX_IN_FLIGHT {
            self.fin_sent = true;
            self.inflight.push_back(Sent {
                off: self.sent_off,
                len: 0,
                sent_us: now_us,
                transmissions: 0,
                sacked: false,
                lost: true,
                fast: true,
                fin: true,
            });
            self.seq_nr = self.seq_nr.wrapping_add(1);
            let i = self.inflight.len() - 1;
            if !self.transmit(i, now_us, &mut buf, out) {
                return;
            }
        }
        if self.ack_now || self.wnd_update_due() {
            self.send_state(now_us, out);
        }
    }

    /// Everything read was acknowledged by a packet of ours, but an ACK is pending: send
    /// it (the end of a receive batch).
    pub fn ack_if_pending(&mut self, now_us: u64, out: &mut dyn Out) {
        if self.state == State::Connected
            && (self.ack_pending || self.ack_now)
            && !self.send_state(now_us, out)
        {
            self.blocked = true;
        }
    }

    /// A window that was nearly shut (under 1/8 of the buffer) is open again (at least a
    /// quarter): the sender waits for us to say so.
    fn wnd_update_due(&self) -> bool {
        self.wnd_sent < RECV_WINDOW / 8 && self.our_window() >= RECV_WINDOW / 4
    }

    /// (Re)send `inflight[i]` (marked lost: not counted in flight). False when the socket
    /// would block (it stays marked).
    fn transmit(&mut self, i: usize, now_us: u64, buf: &mut [u8], out: &mut dyn Out) -> bool {
        let s = self.inflight[i];
        let seq = self.oldest_seq.wrapping_add(i as u16);
        let kind = if s.fin {
            PacketType::Fin
        } else {
            PacketType::Data
        };
        let h = self.header(kind, seq, now_us);
        h.write(0, buf);
        let start = (s.off - self.send_off) as usize;
        let len = s.len as usize;
        let (a, b) = self.send_buf.as_slices();
        copy_range(a, b, start, &mut buf[HEADER_LEN..HEADER_LEN + len]);
        if !out.send(&buf[..HEADER_LEN + len]) {
            self.blocked = true;
            return false;
        }
        let s = &mut self.inflight[i];
        s.sent_us = now_us;
        s.transmissions = s.transmissions.saturating_add(1);
        s.lost = false;
        s.fast = false;
        self.flight_bytes += s.len;
        self.pace_tokens -= f64::from(s.len.max(1));
        self.ack_pending = false;
        self.ack_now = false;
        if self.rto_at_us.is_none() {
            self.rto_at_us = Some(now_us + self.rto_ms * 1000);
        }
        true
    }

    /// The window's rate: cwnd per RTT, bytes/µs (None before an RTT is known).
    fn pace_rate(&self) -> Option<f64> {
        let rtt = self.srtt_us?.max(100) as f64;
        Some(f64::from(self.window().max(MSS as u32)) * 1.5 / rtt)
    }

    fn refill_pace(&mut self, now_us: u64) {
        let Some(rate) = self.pace_rate() else {
            self.pace_tokens = f64::INFINITY;
            return;
        };
        let burst = (rate * (PACE_BURST_MS * 1000) as f64).max((4 * MSS) as f64);
        let dt = now_us.saturating_sub(self.pace_at_us) as f64;
        self.pace_tokens = if self.pace_tokens.is_finite() {
            (self.pace_tokens + dt * rate).min(burst)
        } else {
            burst
        };
        self.pace_at_us = now_us;
        self.pace_wait_us = None;
    }

    fn pace_wait(&mut self, len: u32, now_us: u64) {
        if let Some(rate) = self.pace_rate() {
            let need = f64::from(len) - self.pace_tokens;
            let wait = (need / rate).ceil().max(1000.0) as u64;
            self.pace_wait_us = Some(now_us + wait);
        }
    }

    // ------------------------------------------------------------------ timers

    /// When [`Conn::on_tick`] wants to run next, µs.
    pub fn deadline(&self) -> Option<u64> {
        let syn = (self.state == State::SynSent).then(|| {
            self.syn_at_us
                + if self.syn_attempts >= SYN_ATTEMPTS {
                    SYN_TIMEOUT_MS * 1000
                } else {
                    500_000 << (self.syn_attempts - 1)
                }
        });
        let blocked = self.blocked.then_some(self.pace_at_us + 1000);
        [
            syn,
            self.rto_at_us,
            self.pace_wait_us,
            blocked,
            self.probe_at_us,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn silent_for(&self, now_us: u64) -> bool {
        now_us.saturating_sub(self.last_recv_us) >= DEAD_AFTER_MS * 1000
    }

    /// Run the timers due at `now_us`: resend a SYN, fail a connect, retransmit on
    /// timeout (and end the connection after [`MAX_TIMEOUTS`]), probe a shut window, send
    /// paced or blocked packets.
    pub fn on_tick(&mut self, now_us: u64, out: &mut dyn Out) {
        match self.state {
            State::Closed => return,
            State::SynSent => {
                if self.deadline().is_some_and(|d| now_us >= d) {
                    if self.syn_attempts >= SYN_ATTEMPTS {
                        self.fail(io::ErrorKind::TimedOut);
                    } else {
                        self.send_syn(now_us, out);
                    }
                }
                return;
            }
            State::Connected => {}
        }
        if let Some(at) = self.rto_at_us
            && now_us >= at
        {
            self.rto_at_us = None;
            if !self.inflight.is_empty() {
                self.timeouts += 1;
                if self.timeouts > MAX_TIMEOUTS && self.silent_for(now_us) {
                    self.fail(io::ErrorKind::TimedOut);
                    return;
                }
                tracing::debug!(
                    recv_id = self.recv_id,
                    timeouts = self.timeouts,
                    rto_ms = self.rto_ms,
                    in_flight = self.inflight.len(),
                    flight = self.flight_bytes,
                    peer_wnd = self.peer_wnd,
                    cwnd = self.cc.window(),
                    silent_ms = now_us.saturating_sub(self.last_recv_us) / 1000,
                    seq_nr = self.seq_nr,
                    oldest = self.oldest_seq,
                    ack_nr = self.ack_nr,
                    "uTP retransmission timeout"
                );
                // everything in flight is presumed lost: go back, one packet's window
                self.cc.on_timeout();
                self.dup_acks = 0;
                for s in self.inflight.iter_mut() {
                    if s.counted() {
                        s.lost = true;
                        self.flight_bytes -= s.len;
                    }
                }
                self.rto_ms = (self.rto_ms * 2).min(60_000);
            }
        }
        if let Some(at) = self.probe_at_us
            && now_us >= at
        {
            self.probe_at_us = None;
            self.probe = true;
        }
        self.flush(now_us, out);
    }

    // ------------------------------------------------------------------ the application

    /// Bytes ready to read.
    pub fn readable(&self) -> usize {
        self.recv_buf.len()
    }

    /// The peer sent FIN and every byte before it was read.
    pub fn at_eof(&self) -> bool {
        self.eof && self.recv_buf.is_empty()
    }

    /// Move up to `dst.len()` received bytes into `dst`; returns how many. Sends a window
    /// update when the read reopened a shut window.
    pub fn read(&mut self, dst: &mut [u8], now_us: u64, out: &mut dyn Out) -> usize {
        let n = dst.len().min(self.recv_buf.len());
        let (a, b) = self.recv_buf.as_slices();
        copy_range(a, b, 0, &mut dst[..n]);
        self.consume(n, now_us, out);
        n
    }

    /// The received bytes ready to read, as the two halves of the ring.
    pub fn recv_slices(&self) -> (&[u8], &[u8]) {
        self.recv_buf.as_slices()
    }

    /// `n` received bytes were read (see [`Conn::recv_slices`]). Sends a window update
    /// when the read reopened a shut window.
    pub fn consume(&mut self, n: usize, now_us: u64, out: &mut dyn Out) {
        self.recv_buf.drain(..n.min(self.recv_buf.len()));
        if self.state == State::Connected && self.wnd_update_due() {
            self.send_state(now_us, out);
        }
    }

    /// Room in the send buffer, bytes.
    pub fn writable(&self) -> usize {
        let queued = (self.send_off + self.send_buf.len() as u64 - self.sent_off) as usize;
        SEND_BUFFER
            .saturating_sub(queued)
            .min((SEND_BUFFER + MAX_IN_FLIGHT * MSS).saturating_sub(self.send_buf.len()))
    }

    /// Queue up to [`Conn::writable`] bytes of `src` and send what the windows allow;
    /// returns how many were taken.
    pub fn write(&mut self, src: &[u8], now_us: u64, out: &mut dyn Out) -> usize {
        if self.fin_queued {
            return 0;
        }
        let n = src.len().min(self.writable());
        self.send_buf.extend(&src[..n]);
        self.flush(now_us, out);
        n
    }

    /// Send a partial packet now rather than wait for more bytes.
    pub fn push(&mut self, now_us: u64, out: &mut dyn Out) {
        self.push = true;
        self.flush(now_us, out);
    }

    /// No more writes: a FIN follows the queued bytes.
    pub fn shutdown_write(&mut self, now_us: u64, out: &mut dyn Out) {
        self.fin_queued = true;
        self.push = true;
        self.flush(now_us, out);
    }

    /// Our FIN went out and was acknowledged (or never will be: the connection is gone).
    pub fn fin_done(&self) -> bool {
        self.fin_acked || self.state == State::Closed
    }

    /// Bytes queued and not yet acknowledged.
    pub fn unacked(&self) -> usize {
        self.send_buf.len()
    }

    /// The application let go of the connection: send our FIN (queued bytes first) and
    /// close for reading; unread bytes are dropped.
    pub fn close(&mut self, now_us: u64, out: &mut dyn Out) {
        if self.state == State::SynSent {
            self.state = State::Closed;
            return;
        }
        self.recv_buf = VecDeque::new();
        self.ooo = VecDeque::new();
        self.ooo_bytes = 0;
        self.spare = Vec::new();
        if !self.fin_queued {
            self.shutdown_write(now_us, out);
        }
    }
}

#[cfg(test)]
#[path = "conn/tests.rs"]
mod tests;
