//! Hostile MSE/PE handshakes against a real `ratorrent download --seed` (issue 19): each is
//! bounded in bytes, time and memory, and the seeder keeps serving a real libtorrent
//! leecher that forces encryption.
//!
//! - a pad length over 512 (`PadC`), a wrong verification constant, a torrent the seeder
//!   does not hold: closed at once, after message 2 only;
//! - garbage that never shows the synchronisation hash: closed at the end of the spec's
//!   628-byte window, having sent nothing but `Yb` and `PadB`;
//! - a handshake that stops half-way: closed by the 10 s handshake timeout;
//! - a flood of 300 half-finished handshakes from many addresses: at most 32 are handled
//!   at once (the rest closed at once), memory stays flat, and a libtorrent leecher that
//!   forces encryption completes byte-exact meanwhile.

mod common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::time::{Duration, Instant};

use common::payload;
use common::procmem;
use common::rat::Rat;
use common::scenario::{rat_tail, scratch_dir, serial, start_rat_seeder, stop_seeder};
use common::{
    Encryption, LeechArgs, LtPeer, TestTracker, compare_files, free_port_on, make_torrent,
};
use ratorrent::metainfo::InfoHash;
use ratorrent::peer::mse::{
    self, CRYPTO_RC4, KEY_LEN, MAX_PAD, VC, public_key, req1, req2_xor_req3, shared_secret,
};

const SIZE: u64 = 24 * 1024 * 1024 + 17;

struct Seeder {
    _dir: tempfile::TempDir,
    _tracker: TestTracker,
    rat: Rat,
    addr: SocketAddr,
    ih: InfoHash,
    torrent: std::path::PathBuf,
    src: std::path::PathBuf,
    dst: std::path::PathBuf,
}

fn seeder() -> Seeder {
    let tracker = TestTracker::start();
    let dir = scratch_dir();
    let src = dir.path().join("src");
    payload::write_file(&src.join("p.bin"), SIZE, 0x4057).unwrap();
    let torrent = dir.path().join("p.torrent");
    let ih = make_torrent(
        &src.join("p.bin"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    let (rat, port) = start_rat_seeder(&tracker, &torrent, &src, ih, "");
    Seeder {
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        dst: dir.path().join("dst"),
        _dir: dir,
        _tracker: tracker,
        rat,
        ih,
        torrent,
        src,
    }
}

const XA: [u8; 20] = [0x33; 20];

/// Dial, send `Ya` and a `pad`-byte PadA, read `Yb` (96 bytes); the stream and `S`.
fn start(addr: SocketAddr, pad: usize) -> (TcpStream, [u8; KEY_LEN]) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut m1 = public_key(&XA).to_vec();
    m1.extend(std::iter::repeat_n(0u8, pad));
    s.write_all(&m1).unwrap();
    let mut yb = [0u8; KEY_LEN];
    s.read_exact(&mut yb).unwrap();
    let secret = shared_secret(&XA, &yb).expect("the seeder's public key");
    (s, secret)
}

/// Read until the seeder closes; the bytes it sent and how long it took.
fn until_closed(s: &mut TcpStream) -> (usize, Duration) {
    let t = Instant::now();
    let mut n = 0;
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("still open after {:?}: {e}", t.elapsed()),
        }
    }
    (n, t.elapsed())
}

/// Message 3 for `skey` with `body` (VC, crypto_provide, len(PadC), ...) encrypted.
fn message3(secret: &[u8; KEY_LEN], skey: &InfoHash, body: &[u8]) -> Vec<u8> {
    let mut m = req1(secret).to_vec();
    m.extend_from_slice(&req2_xor_req3(skey, secret));
    let mut enc = body.to_vec();
    mse::cipher(b"keyA", secret, skey).apply(&mut enc);
    m.extend_from_slice(&enc);
    m
}

fn body(vc: [u8; 8], pad_c: u16) -> Vec<u8> {
    let mut b = vc.to_vec();
    b.extend_from_slice(&CRYPTO_RC4.to_be_bytes());
    b.extend_from_slice(&pad_c.to_be_bytes());
    b
}

#[test]
fn bad_handshakes_are_closed_at_once_or_at_the_end_of_their_window() {
    let _serial = serial();
    let mut sd = seeder();

    // a well-formed handshake works (the baseline for the cases below)
    let (mut s, secret) = start(sd.addr, 0);
    let mut m3 = message3(&secret, &sd.ih, &body(VC, 0));
    let ia = ratorrent::peer::wire::Handshake::ours(sd.ih, ratorrent::peer::PeerId([b'h'; 20]))
        .to_bytes();
    let mut tail = (ia.len() as u16).to_be_bytes().to_vec();
    tail.extend_from_slice(&ia);
    let mut c = mse::cipher(b"keyA", &secret, &sd.ih);
    let mut skip = body(VC, 0);
    c.apply(&mut skip);
    c.apply(&mut tail);
    m3.extend_from_slice(&tail);
    s.write_all(&m3).unwrap();
    let mut answer = vec![0u8; 512 + 14 + 68];
    let n = s.read(&mut answer).unwrap();
    assert!(n > 0, "a well-formed handshake is answered");
    drop(s);

    // PadC of 513 bytes, a wrong VC, a torrent the seeder does not hold: each on a
    // connection of its own
    for (what, skey, b) in [
        ("PadC of 513", sd.ih, body(VC, 513)),
        ("wrong VC", sd.ih, body([1; 8], 0)),
        ("unknown torrent", InfoHash([0xEE; 20]), body(VC, 0)),
    ] {
        let (mut s, secret) = start(sd.addr, 0);
        s.write_all(&message3(&secret, &skey, &b)).unwrap();
        let (n, took) = until_closed(&mut s);
        assert!(
            n <= MAX_PAD,
            "{what}: only PadB after Yb, got {n} more bytes"
        );
        assert!(
            took < Duration::from_secs(3),
            "{what}: closed at once, took {took:?}"
        );
    }

    // garbage: no synchronisation hash within 512 bytes after Ya
    let (mut s, _) = start(sd.addr, 0);
    s.write_all(&[0x5Au8; 600]).unwrap();
    let (n, took) = until_closed(&mut s);
    assert!(
        n <= MAX_PAD && took < Duration::from_secs(3),
        "{n} bytes, {took:?}"
    );

    // half a handshake, then silence: the 10 s handshake timeout
    let mut s = TcpStream::connect(sd.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(&public_key(&XA)[..50]).unwrap();
    let (n, took) = until_closed(&mut s);
    assert_eq!(n, 0, "nothing sent before the public key is whole");
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(14),
        "closed by the handshake timeout, after {took:?}"
    );
    stop_seeder(&mut sd.rat).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_flood_of_half_finished_handshakes_is_bounded_and_a_real_leecher_completes() {
    let _serial = serial();
    let mut sd = seeder();
    let pid = sd.rat.pid();
    let anon = || procmem::status_kib(pid, "RssAnon");
    let before = anon().expect("RssAnon");
    // 300 connections from 127.66.x.y, each sending Ya and a pad, then nothing
    let mut flood = Vec::new();
    for i in 0..300u32 {
        let ip = Ipv4Addr::new(127, 66, (i / 200) as u8, (i % 200) as u8 + 1);
        let sock =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        sock.bind(&SocketAddr::V4(SocketAddrV4::new(ip, 0)).into())
            .unwrap();
        if sock.connect(&sd.addr.into()).is_err() {
            continue;
        }
        let mut s: TcpStream = sock.into();
        let mut m1 = public_key(&[(i % 250) as u8 + 1; 20]).to_vec();
        m1.extend(std::iter::repeat_n(7u8, 100));
        if s.write_all(&m1).is_err() {
            continue;
        }
        s.set_nonblocking(true).unwrap();
        flood.push(s);
    }
    // beyond the cap of MSE handshakes at once they are closed at once
    std::thread::sleep(Duration::from_secs(2));
    let open_after_2s = count_open(&mut flood);
    assert!(
        open_after_2s <= ratorrent::engine::ctx::MAX_MSE_HANDSHAKES,
        "{open_after_2s} of {} handshakes still open after 2 s",
        flood.len()
    );
    // a real leecher that forces encryption, meanwhile
    let leecher_ip = Ipv4Addr::new(127, 0, 0, 3);
    let mut args = LeechArgs::new(&sd.torrent, &sd.dst, leecher_ip, free_port_on(leecher_ip));
    args.encryption = Encryption::Forced;
    args.timeout_s = 90;
    args.connect = vec![sd.addr];
    let mut leecher = LtPeer::leech(&args);
    let mut peak = before;
    let t = Instant::now();
    let done = loop {
        if let Some(kib) = anon() {
            peak = peak.max(kib);
        }
        match common::scenario::poll_lt(&mut leecher, Duration::from_millis(500)) {
            common::scenario::LeechState::Done => break true,
            common::scenario::LeechState::Failed(e) => panic!("leecher failed: {e}"),
            common::scenario::LeechState::Running => {}
        }
        if t.elapsed() > Duration::from_secs(90) {
            break false;
        }
    };
    assert!(
        done,
        "the leecher completes during the flood\n{}",
        rat_tail(&sd.rat)
    );
    compare_files(&sd.src.join("p.bin"), &sd.dst.join("p.bin")).unwrap();
    // every flood connection is closed by now or within the handshake timeout
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut open = flood.len();
    while open > 0 && Instant::now() < deadline {
        open = count_open(&mut flood);
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(open, 0, "half-finished handshakes are all closed");
    let grew = peak.saturating_sub(before);
    assert!(
        grew < 32 * 1024,
        "RssAnon grew by {grew} KiB during the flood (before {before} KiB)"
    );
    eprintln!(
        "flood of {} half-finished MSE handshakes: {open_after_2s} open after 2 s, all closed \
         by the timeout; RssAnon {before} -> peak {peak} KiB",
        flood.len(),
    );
    stop_seeder(&mut sd.rat).unwrap_or_else(|e| panic!("{e}"));
}

/// Connections of `flood` the seeder has not closed yet (non-blocking reads: end of stream
/// or a reset is closed; bytes or nothing to read yet is open).
fn count_open(flood: &mut [TcpStream]) -> usize {
    let mut open = 0;
    for s in flood {
        let mut b = [0u8; 1024];
        loop {
            match s.read(&mut b) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    open += 1;
                    break;
                }
                Err(_) => break,
            }
        }
    }
    open
}
