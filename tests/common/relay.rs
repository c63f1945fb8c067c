//! A TCP relay that records the bytes on the wire: [`Relay`] listens on 127.0.0.1, connects
//! each accepted connection to one target and copies both ways (a thread per direction),
//! keeping everything it copied, per connection and direction, for the test to inspect
//! (e.g. that the BitTorrent handshake string never crossed it in plaintext).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Bytes of each direction kept for inspection (all are counted and searched).
pub const KEEP: usize = 1 << 20;

/// What crossed one relayed connection.
#[derive(Debug, Default, Clone)]
pub struct Wire {
    /// From the dialling side to the target: the first [`KEEP`] bytes.
    pub to_target: Vec<u8>,
    /// From the target back: the first [`KEEP`] bytes.
    pub from_target: Vec<u8>,
    /// Bytes from the dialling side, all of them.
    pub to_total: u64,
    /// Bytes from the target, all of them.
    pub from_total: u64,
    /// The BitTorrent handshake string ([`HANDSHAKE`]) crossed towards the target
    /// somewhere, chunk boundaries included.
    pub to_handshake: bool,
    /// It crossed back from the target.
    pub from_handshake: bool,
}

/// `BitTorrent protocol`: in plaintext, the handshake's protocol string.
pub const HANDSHAKE: &[u8] = b"BitTorrent protocol";

/// A running relay; stops accepting when dropped (connections in flight end with their
/// sockets).
pub struct Relay {
    addr: SocketAddr,
    conns: Arc<Mutex<Vec<Arc<Mutex<Wire>>>>>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    /// Relay `127.0.0.1:<free port>` to `target`.
    ///
    /// # Panics
    /// When no socket can be bound.
    pub fn start(target: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind relay");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("relay addr");
        let conns: Arc<Mutex<Vec<Arc<Mutex<Wire>>>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (conns.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((inbound, _)) => {
                        let _ = inbound.set_nonblocking(false);
                        let Ok(outbound) =
                            TcpStream::connect_timeout(&target, Duration::from_secs(5))
                        else {
                            continue;
                        };
                        let wire = Arc::new(Mutex::new(Wire::default()));
                        c.lock().unwrap().push(wire.clone());
                        pipe(
                            inbound.try_clone().unwrap(),
                            outbound.try_clone().unwrap(),
                            wire.clone(),
                            true,
                        );
                        pipe(outbound, inbound, wire, false);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Relay { addr, conns, stop }
    }

    /// Where to dial.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What crossed each connection so far, in the order they were accepted.
    pub fn wires(&self) -> Vec<Wire> {
        self.conns
            .lock()
            .unwrap()
            .iter()
            .map(|w| w.lock().unwrap().clone())
            .collect()
    }

    /// Bytes copied so far, both ways, all connections.
    pub fn total(&self) -> u64 {
        self.wires().iter().map(|w| w.to_total + w.from_total).sum()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Copy `from` to `to` on a thread of its own, recording into `wire`.
fn pipe(mut from: TcpStream, mut to: TcpStream, wire: Arc<Mutex<Wire>>, to_target: bool) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        // the end of the previous chunk, so a string cut in two is still found
        let mut carry: Vec<u8> = Vec::new();
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            carry.extend_from_slice(&buf[..n]);
            let found = contains(&carry, HANDSHAKE);
            let keep_from = carry.len().saturating_sub(HANDSHAKE.len() - 1);
            carry.drain(..keep_from);
            {
                let mut guard = wire.lock().unwrap();
                let w = &mut *guard;
                let (v, total, seen) = if to_target {
                    (&mut w.to_target, &mut w.to_total, &mut w.to_handshake)
                } else {
                    (&mut w.from_target, &mut w.from_total, &mut w.from_handshake)
                };
                let room = KEEP.saturating_sub(v.len()).min(n);
                v.extend_from_slice(&buf[..room]);
                *total += n as u64;
                *seen |= found;
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
        let _ = from.shutdown(Shutdown::Read);
    });
}

/// Whether `needle` occurs anywhere in `hay`.
pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
