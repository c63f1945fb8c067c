//! A peer that sends corrupt data: the piece fails its SHA-1 check, is fetched again, the
//! peer is counted against and, after repeated failures, dropped and banned; the download
//! still completes byte-exact from an honest libtorrent seeder.

mod common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use common::payload;
use common::rat::Rat;
use common::{LtPeer, SeedArgs, TestTracker, free_port, free_port_on, make_torrent, temp_dir};
use ratorrent::metainfo::{InfoHash, Metainfo};
use ratorrent::peer::PeerId;
use ratorrent::peer::wire::{self, Handshake, Message};
use ratorrent::piece::Bitfield;

const PIECE: u32 = 32 * 1024;
const CORRUPT_PIECE: u32 = 0;

#[derive(Default)]
struct FakeLog {
    /// Times the last block of the corrupt piece was served.
    corrupt_deliveries: u32,
    /// Connections that opened with a BitTorrent handshake.
    connections: u32,
    closed_by_client: u32,
}

/// A seeder that serves every piece correctly except `CORRUPT_PIECE`, whose first byte it
/// flips every time.
fn fake_seeder(listener: TcpListener, data: Arc<Vec<u8>>, ih: InfoHash, log: Arc<Mutex<FakeLog>>) {
    let pieces = (data.len() as u32).div_ceil(PIECE);
    for conn in listener.incoming() {
        let Ok(mut s) = conn else { return };
        let mut hs = [0u8; wire::HANDSHAKE_LEN];
        if s.read_exact(&mut hs).is_err() {
            continue;
        }
        // a plaintext-only peer: an MSE handshake (ratorrent's first try with encryption
        // "prefer") is not a BitTorrent handshake, and is closed
        let Ok(theirs) = Handshake::parse(&hs) else {
            continue;
        };
        log.lock().unwrap().connections += 1;
        assert_eq!(theirs.info_hash, ih);
        let mut out = BytesMut::new();
        out.extend_from_slice(&Handshake::ours(ih, PeerId(*b"-FK0001-corruptpeer1")).to_bytes());
        Message::Bitfield(Bytes::copy_from_slice(Bitfield::full(pieces).as_bytes()))
            .encode(&mut out);
        Message::Unchoke.encode(&mut out);
        s.write_all(&out).unwrap();
        let mut buf = BytesMut::new();
        let mut chunk = [0u8; 65536];
        'conn: loop {
            let n = match s.read(&mut chunk) {
                Ok(0) | Err(_) => {
                    log.lock().unwrap().closed_by_client += 1;
                    break;
                }
                Ok(n) => n,
            };
            buf.extend_from_slice(&chunk[..n]);
            while let Ok(Some(m)) = wire::decode(&mut buf, wire::message_cap(pieces)) {
                if let Message::Request(b) = m {
                    let start = (b.piece * PIECE + b.begin) as usize;
                    let mut block = data[start..start + b.length as usize].to_vec();
                    if b.piece == CORRUPT_PIECE {
                        block[0] ^= 0xff;
                        if b.begin + b.length == PIECE {
                            log.lock().unwrap().corrupt_deliveries += 1;
                        }
                    }
                    let mut out = BytesMut::new();
                    Message::Piece {
                        piece: b.piece,
                        begin: b.begin,
                        data: block.into(),
                    }
                    .encode(&mut out);
                    if s.write_all(&out).is_err() {
                        // the client closed the connection while we were answering
                        log.lock().unwrap().closed_by_client += 1;
                        break 'conn;
                    }
                }
            }
        }
    }
}

#[test]
fn corrupt_piece_is_refetched_and_the_sender_banned() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(
        &src,
        &[payload::FileSpec::new("d.bin", 8 * u64::from(PIECE) - 1000)],
        3,
    )
    .unwrap();
    let torrent = dir.path().join("d.torrent");
    let ih = make_torrent(&src.join("d.bin"), &torrent, &tracker.url(), Some(PIECE));
    assert_eq!(Metainfo::from_file(&torrent).unwrap().piece_length, PIECE);
    let data = Arc::new(std::fs::read(src.join("d.bin")).unwrap());

    let listener = TcpListener::bind("127.0.0.4:0").unwrap();
    let fake_addr = match listener.local_addr().unwrap() {
        std::net::SocketAddr::V4(a) => a,
        _ => unreachable!(),
    };
    let log = Arc::new(Mutex::new(FakeLog::default()));
    {
        let (data, log) = (data.clone(), log.clone());
        std::thread::spawn(move || fake_seeder(listener, data, ih, log));
    }
    tracker.add_peer(ih, fake_addr, Some(0));

    let port = free_port();
    let dst = dir.path().join("dst");
    let mut rat = Rat::download(&torrent, &dst, port, &[]);

    // three bad copies, then the connection is dropped and not re-opened (banned)
    let start = Instant::now();
    while log.lock().unwrap().closed_by_client == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "corrupt peer never dropped\n{}",
            rat.output()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    {
        let l = log.lock().unwrap();
        // re-requested after each of the 3 failures; one more copy may already be on its
        // way when the third failure bans the peer
        assert!(
            (3..=4).contains(&l.corrupt_deliveries),
            "piece re-requested after each failure, until the ban: {} copies",
            l.corrupt_deliveries
        );
        assert_eq!(l.connections, 1, "a banned peer is not dialled again");
    }
    assert!(
        rat.stderr().contains("failed its hash check"),
        "{}",
        rat.output()
    );
    assert!(rat.stderr().contains("banning peer"), "{}", rat.output());

    // an honest seeder dials in; the download completes byte-exact
    let seeder_ip = Ipv4Addr::new(127, 0, 0, 2);
    let mut args = SeedArgs::new(&torrent, &src, seeder_ip, free_port_on(seeder_ip));
    args.connect = vec![SocketAddrV4::new(Ipv4Addr::LOCALHOST, port).into()];
    let _seeder = LtPeer::seed(&args);
    let st = rat.wait(Duration::from_secs(60)).unwrap();
    assert!(st.success(), "{st}\n{}", rat.output());
    common::compare_files(&src.join("d.bin"), &dst.join("d.bin")).unwrap();
}
