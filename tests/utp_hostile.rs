//! A hostile sender over UDP: the ratorrent binary, seeding with uTP on, gets a flood of
//! `ST_SYN`s from many ports that never send data, datagrams of garbage, uTP packets with
//! malformed extension chains and data for connections that do not exist. Its anonymous
//! memory must stay bounded (a cap on half-open uTP connections, nothing kept for
//! garbage), and afterwards a real libtorrent peer that can only use uTP still downloads
//! from it byte-exact.

mod common;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::Duration;

use common::payload::{self, FileSpec};
use common::procmem::mem_kib;
use common::rat::Rat;
use common::{
    LeechArgs, LtPeer, TestTracker, compare_files, free_port, free_port_on, make_torrent, temp_dir,
};

const LEECHER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

/// A uTP header (BEP 29) with `ext` as its first extension type.
fn header(kind: u8, ext: u8, conn_id: u16, seq: u16, ack: u16) -> Vec<u8> {
    let mut h = vec![(kind << 4) | 1, ext];
    h.extend_from_slice(&conn_id.to_be_bytes());
    h.extend_from_slice(&1234u32.to_be_bytes());
    h.extend_from_slice(&0u32.to_be_bytes());
    h.extend_from_slice(&(1u32 << 20).to_be_bytes());
    h.extend_from_slice(&seq.to_be_bytes());
    h.extend_from_slice(&ack.to_be_bytes());
    h
}

/// One round of the flood from `socks` to `to`: a SYN from each, garbage, broken
/// extension chains, data for unknown connections.
fn flood(socks: &[UdpSocket], to: SocketAddr, round: u16) {
    let mut x: u32 = 0x9e37_79b9 ^ u32::from(round);
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    for (i, s) in socks.iter().enumerate() {
        let id = (i as u16).wrapping_mul(7).wrapping_add(round);
        let _ = s.send_to(&header(4, 0, id, 1, 0), to);
        let garbage: Vec<u8> = (0..(next() % 1400) as usize)
            .map(|_| next() as u8)
            .collect();
        let _ = s.send_to(&garbage, to);
        // an extension chain that runs past the end, one that never ends, a bad SACK
        let mut h = header(0, 1, id, 2, 0);
        h.extend_from_slice(&[0, 200, 1, 2]);
        let _ = s.send_to(&h, to);
        let mut h = header(2, 7, id, 2, 0);
        h.extend(std::iter::repeat_n([7u8, 0], 600).flatten());
        let _ = s.send_to(&h, to);
        let mut h = header(2, 1, id, 2, 0);
        h.extend_from_slice(&[0, 3, 1, 2, 3]);
        let _ = s.send_to(&h, to);
        // data for a connection nobody opened
        let mut h = header(0, 0, id ^ 0x5555, 9, 9);
        h.extend_from_slice(&[0x13; 1000]);
        let _ = s.send_to(&h, to);
        // a DHT-looking datagram
        let _ = s.send_to(
            b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:aa1:y1:qe",
            to,
        );
    }
}

#[test]
fn a_syn_flood_and_garbage_leave_memory_bounded_and_utp_working() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("h.bin", 24 << 20)], 0x4057).unwrap();
    let torrent = dir.path().join("h.torrent");
    let ih = make_torrent(&src.join("h.bin"), &torrent, &tracker.url(), None);
    let port = free_port();
    let (t, o, p) = (
        torrent.to_str().unwrap(),
        src.to_str().unwrap(),
        port.to_string(),
    );
    let mut rat = Rat::spawn(&["download", t, "-o", o, "--port", &p, "--seed"], "");
    tracker
        .wait_for_announce(Duration::from_secs(30), |a| {
            a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    let pid = rat.pid();
    let to = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let socks: Vec<UdpSocket> = (0..500)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    // a first round settles the allocator and the tables
    flood(&socks, to, 0);
    std::thread::sleep(Duration::from_secs(2));
    let (_, anon0) = mem_kib(pid).expect("ratorrent runs");
    let mut peak = anon0;
    for round in 1..=20u16 {
        flood(&socks, to, round);
        std::thread::sleep(Duration::from_millis(100));
        let (_, anon) = mem_kib(pid).expect("ratorrent survives the flood");
        peak = peak.max(anon);
    }
    std::thread::sleep(Duration::from_secs(1));
    let (_, anon1) = mem_kib(pid).expect("ratorrent survives the flood");
    eprintln!(
        "anonymous memory: {} KiB after the first round, peak {} KiB over 20 rounds of 500 \
         SYNs + 3,000 other datagrams, {} KiB after",
        anon0, peak, anon1
    );
    assert!(
        peak < anon0 + 16 * 1024,
        "memory grew under the flood: {anon0} -> {peak} KiB\n{}",
        rat.output()
    );
    // a real peer still gets through
    let dst = dir.path().join("dst");
    let mut la = LeechArgs::new(&torrent, &dst, LEECHER_IP, free_port_on(LEECHER_IP));
    la.extra = vec!["--transport".into(), "utp".into()];
    let mut leecher = LtPeer::leech(&la);
    leecher
        .wait_done(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    compare_files(&src.join("h.bin"), &dst.join("h.bin")).unwrap();
    assert!(
        rat.terminate().is_some_and(|s| s.success()),
        "{}",
        rat.output()
    );
}
