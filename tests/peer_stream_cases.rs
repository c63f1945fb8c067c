//! Hostile and unusual peer streams (shared `peer_stream` cases about the base protocol, and
//! our own variants of each class) played against the real peer task over a loopback TCP
//! connection. Each stream is a 68-byte handshake followed by length-prefixed messages; the
//! handshake's info hash is rewritten to the test torrent's, whose geometry matches the
//! case's context. A protocol fault must end the connection with a clear error, never panic,
//! and never buffer an untrusted length.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ratorrent::api::{PeerSource, TorrentId, TorrentState};
use ratorrent::config::engine::{Encryption, EngineConfig};
use ratorrent::engine::ctx::{SessionCtx, SessionEvent};
use ratorrent::engine::link::ctx::Limits;
use ratorrent::engine::link::message::PeerError;
use ratorrent::engine::link::peer::PeerInfo;
use ratorrent::engine::link::shared::TorrentShared;
use ratorrent::engine::peer_conn as peer_task;
use ratorrent::engine::picker::Picker;
use ratorrent::engine::torrent::disk::open_disk;
use ratorrent::metainfo::{Metainfo, TorrentBuilder};
use ratorrent::peer::PeerId;
use ratorrent::peer::wire::{HANDSHAKE_LEN, Handshake};
use ratorrent::piece::Bitfield;
use ratorrent::storage::check::check_pieces;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/peer_stream");

/// A torrent of `len` bytes in `piece` pieces; `complete` puts the data on disk first.
struct Fixture {
    t: Arc<TorrentShared>,
    _dir: tempfile::TempDir,
    _events: tokio::sync::mpsc::UnboundedReceiver<SessionEvent>,
}

async fn fixture(len: u64, piece: u32, complete: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("src").join("data.bin");
    std::fs::create_dir_all(data.parent().unwrap()).unwrap();
    let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(&data, &bytes).unwrap();
    let torrent = TorrentBuilder::new(&data)
        .piece_length(piece)
        .build()
        .unwrap();
    let meta = Metainfo::from_bytes(&torrent).unwrap();
    let download_dir = if complete {
        dir.path().join("src")
    } else {
        dir.path().join("dst")
    };
    start(meta, &download_dir, dir).await
}

async fn start(meta: Metainfo, download_dir: &Path, dir: tempfile::TempDir) -> Fixture {
    let config = EngineConfig {
        download_dir: download_dir.to_path_buf(),
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..EngineConfig::default()
    };
    let (tx, events) = tokio::sync::mpsc::unbounded_channel();
    let ctx = SessionCtx::new(config, 0, tx);
    let id = TorrentId(1);
    let disk = open_disk(id, &meta, download_dir, &ctx).unwrap();
    let geo = meta.geometry();
    // the torrent's check: what of the data is on disk already
    let have = if disk.storage.any_data_present() {
        check_pieces(
            &disk.storage,
            geo,
            &meta.hashes(),
            2,
            &Default::default(),
            &Default::default(),
        )
    } else {
        Bitfield::new(geo.piece_count())
    };
    let picker = Picker::new(geo, have);
    let t = Arc::new(TorrentShared::new(
        id,
        meta.info_hash,
        geo,
        picker,
        disk,
        ctx.link.clone(),
        Arc::new(Limits::unlimited()),
    ));
    t.set_accepting(true);
    Fixture {
        t,
        _dir: dir,
        _events: events,
    }
}

/// Connected loopback pair: (our side, the remote peer's side).
async fn pair() -> (TcpStream, TcpStream, SocketAddr) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let remote = TcpStream::connect(addr).await.unwrap();
    let (ours, peer_addr) = l.accept().await.unwrap();
    (ours, remote, peer_addr)
}

/// Play `stream` (handshake + messages) as the remote peer against the peer task and return
/// how the connection ended (None: still open after `wait`), plus the peer's shared state.
async fn play(
    f: &Fixture,
    stream: &[u8],
    wait: Duration,
) -> (Option<Result<(), PeerError>>, Arc<PeerInfo>, Vec<u8>) {
    let mut hs = [0u8; HANDSHAKE_LEN];
    hs.copy_from_slice(&stream[..HANDSHAKE_LEN]);
    let mut remote_hs = Handshake::parse(&hs).expect("case handshake parses");
    remote_hs.info_hash = f.t.info_hash;
    let (ours, mut remote, addr) = pair().await;
    let info = Arc::new(PeerInfo::new(
        addr,
        false,
        remote_hs.peer_id,
        PeerSource::Incoming,
        f.t.ctx.clock.now_ms(),
    ));
    let (_ctrl_tx, ctrl_rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(peer_task::run(
        f.t.clone(),
        99,
        ours,
        info.clone(),
        remote_hs,
        ctrl_rx,
    ));
    // the remote writes the rest of the stream (ignoring errors: we may hang up first)
    let rest = stream[HANDSHAKE_LEN..].to_vec();
    let writer = tokio::spawn(async move {
        let _ = remote.write_all(&rest).await;
        let mut got = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(3), remote.read_to_end(&mut got)).await;
        got
    });
    let result = match tokio::time::timeout(wait, task).await {
        Ok(joined) => Some(joined.expect("peer task must not panic")),
        Err(_) => None,
    };
    let sent = if result.is_some() {
        writer.await.unwrap_or_default()
    } else {
        writer.abort();
        Vec::new()
    };
    (result, info, sent)
}

fn case(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(FIXTURES).join(name)).unwrap()
}

fn expect_error(r: &Option<Result<(), PeerError>>, needle: &str) {
    match r {
        Some(Err(e)) => assert!(
            e.to_string().contains(needle),
            "error {e:?} should mention {needle:?}"
        ),
        other => panic!(
            "expected the connection to end with an error mentioning {needle:?}, got {other:?}"
        ),
    }
}

/// Context of the shared cases p01–p04: 10 pieces of 16 KiB, 162840 bytes.
async fn ten_pieces(complete: bool) -> Fixture {
    fixture(162_840, 16_384, complete).await
}

fn handshake_bytes() -> Vec<u8> {
    Handshake::ours(Default::default(), PeerId([b'x'; 20]))
        .to_bytes()
        .to_vec()
}

fn msg(id: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = ((payload.len() + 1) as u32).to_be_bytes().to_vec();
    v.push(id);
    v.extend_from_slice(payload);
    v
}

fn stream_of(msgs: &[Vec<u8>]) -> Vec<u8> {
    let mut s = handshake_bytes();
    for m in msgs {
        s.extend_from_slice(m);
    }
    s
}

// ---- message-size ---------------------------------------------------------------------

#[tokio::test]
async fn p01_huge_length_prefix_is_refused_on_the_prefix() {
    let f = ten_pieces(false).await;
    let (r, _, _) = play(
        &f,
        &case("p01-length-prefix-huge.bin"),
        Duration::from_secs(5),
    )
    .await;
    expect_error(&r, "message length 4294967280 exceeds the maximum");
}

#[tokio::test]
async fn oversized_lengths_of_every_kind_are_refused() {
    let f = ten_pieces(true).await;
    for len in [u32::MAX, 1 << 31, 16 << 20, 300 * 1024] {
        for id in [0u8, 5, 7, 20, 99] {
            let mut s = handshake_bytes();
            s.extend_from_slice(&len.to_be_bytes());
            s.push(id);
            s.extend_from_slice(&[0u8; 64]);
            let (r, _, _) = play(&f, &s, Duration::from_secs(5)).await;
            expect_error(&r, &format!("message length {len} exceeds the maximum"));
        }
    }
}

#[tokio::test]
async fn piece_message_with_oversized_block_is_refused() {
    let f = ten_pieces(false).await;
    let mut payload = vec![0u8; 8 + 200 * 1024];
    payload[..4].copy_from_slice(&0u32.to_be_bytes());
    let (r, _, _) = play(&f, &stream_of(&[msg(7, &payload)]), Duration::from_secs(5)).await;
    expect_error(&r, "larger than");
}

// ---- bitfield-validation ---------------------------------------------------------------

#[tokio::test]
async fn p02_bitfield_with_spare_bits_is_refused() {
    let f = ten_pieces(false).await;
    let (r, _, _) = play(
        &f,
        &case("p02-bitfield-spare-bits.bin"),
        Duration::from_secs(5),
    )
    .await;
    expect_error(&r, "bitfield has spare bits set beyond piece 10");
}

#[tokio::test]
async fn bitfields_of_wrong_size_or_with_any_spare_bit_are_refused() {
    // piece counts with 1..7 spare bits, and an exact multiple of 8
    for pieces in [1u32, 7, 9, 15, 17, 16] {
        let f = fixture(u64::from(pieces) * 16_384 - 100, 16_384, false).await;
        let bytes = (pieces as usize).div_ceil(8);
        let spare = bytes * 8 - pieces as usize;
        for bit in 0..spare {
            let mut bf = vec![0u8; bytes];
            bf[bytes - 1] |= 1 << bit;
            let (r, _, _) = play(&f, &stream_of(&[msg(5, &bf)]), Duration::from_secs(5)).await;
            expect_error(&r, &format!("spare bits set beyond piece {pieces}"));
        }
        for wrong in [bytes - 1, bytes + 1, bytes + 100] {
            let bf = vec![0u8; wrong];
            let (r, _, _) = play(&f, &stream_of(&[msg(5, &bf)]), Duration::from_secs(5)).await;
            expect_error(&r, &format!("expected {bytes} for {pieces} pieces"));
        }
    }
}

/// aria2 sends `have` messages for pieces it completes and its bitfield later (BEP 3 asks
/// for the bitfield first; libtorrent accepts it late too): the late bitfield replaces what
/// the peer has, still validated (size, spare bits).
#[tokio::test]
async fn late_bitfield_replaces_the_peers_pieces() {
    let f = ten_pieces(false).await;
    let s = stream_of(&[
        msg(4, &1u32.to_be_bytes()),
        msg(4, &7u32.to_be_bytes()),
        msg(5, &[0xff, 0x00]),
    ]);
    let (r, info, _) = play(&f, &s, Duration::from_secs(2)).await;
    assert!(r.is_none(), "connection stays open: {r:?}");
    assert_eq!(
        info.pieces.load(Ordering::Relaxed),
        8,
        "the bitfield's 8 pieces"
    );
    // a late bitfield is checked like a first one
    let s = stream_of(&[msg(4, &1u32.to_be_bytes()), msg(5, &[0xff, 0xc1])]);
    let (r, _, _) = play(&f, &s, Duration::from_secs(5)).await;
    expect_error(&r, "spare bits");
}

#[tokio::test]
async fn p07_large_legit_bitfield_is_accepted() {
    // 600000 pieces of 16 KiB: a 75000-byte bitfield (> 64 KiB) must pass the message cap
    let dir = tempfile::tempdir().unwrap();
    let meta = big_metainfo(600_000, 16_384, 9_830_400_000);
    let f = start(meta, &dir.path().join("dst"), dir).await;
    let (r, info, _) = play(
        &f,
        &case("p07-bitfield-large-legit.bin"),
        Duration::from_secs(2),
    )
    .await;
    assert!(r.is_none(), "connection must stay open, ended with {r:?}");
    assert_eq!(
        info.pieces.load(Ordering::Relaxed),
        600_000,
        "peer is a seed"
    );
    assert!(
        info.am_interested.load(Ordering::Relaxed),
        "we are interested in a seed"
    );
}

/// A metainfo with placeholder hashes (never verified in this test), built by hand.
fn big_metainfo(pieces: u32, piece_length: u32, total: u64) -> Metainfo {
    let mut info = Vec::new();
    info.extend_from_slice(
        format!(
            "d6:lengthi{total}e4:name7:big.bin12:piece lengthi{piece_length}e6:pieces{}:",
            pieces as usize * 20
        )
        .as_bytes(),
    );
    info.extend(std::iter::repeat_n(0u8, pieces as usize * 20));
    info.push(b'e');
    let mut t = b"d4:info".to_vec();
    t.extend_from_slice(&info);
    t.push(b'e');
    Metainfo::from_bytes(&t).unwrap()
}

// ---- index-bounds -----------------------------------------------------------------------

#[tokio::test]
async fn p03_have_index_out_of_range_is_refused() {
    let f = ten_pieces(false).await;
    let (r, _, _) = play(
        &f,
        &case("p03-have-index-out-of-range.bin"),
        Duration::from_secs(5),
    )
    .await;
    expect_error(&r, "have: piece index 10 out of range (10 pieces)");
}

#[tokio::test]
async fn every_index_out_of_range_is_refused() {
    let f = ten_pieces(true).await;
    for idx in [10u32, 11, 1 << 31, u32::MAX] {
        let i = idx.to_be_bytes();
        let block = |p: &[u8; 4]| [&p[..], &0u32.to_be_bytes(), &16_384u32.to_be_bytes()].concat();
        for (id, name, payload) in [
            (4u8, "have", i.to_vec()),
            (6, "request", block(&i)),
            (8, "cancel", block(&i)),
            (7, "piece", [&i[..], &[0u8; 4], &[1u8; 100]].concat()),
        ] {
            let (r, _, _) =
                play(&f, &stream_of(&[msg(id, &payload)]), Duration::from_secs(5)).await;
            expect_error(
                &r,
                &format!("{name}: piece index {idx} out of range (10 pieces)"),
            );
        }
    }
}

#[tokio::test]
async fn requests_outside_a_piece_are_refused() {
    let f = ten_pieces(true).await;
    let req = |p: u32, b: u32, l: u32| {
        msg(
            6,
            &[p.to_be_bytes(), b.to_be_bytes(), l.to_be_bytes()].concat(),
        )
    };
    // last piece is 162840 - 9*16384 = 15384 bytes
    for m in [
        req(0, 16_384, 1),
        req(0, 0, 16_385),
        req(9, 0, 15_385),
        req(9, 15_000, 1_000),
        req(0, u32::MAX, 2),
        req(0, 0, 0),
        req(0, 0, 200 * 1024),
    ] {
        let (r, _, _) = play(&f, &stream_of(&[m]), Duration::from_secs(5)).await;
        expect_error(&r, "request out of bounds");
    }
}

#[tokio::test]
async fn malformed_fixed_size_messages_are_refused() {
    let f = ten_pieces(false).await;
    for (m, needle) in [
        (msg(4, &[0, 0, 1]), "have message has a 3-byte payload"),
        (msg(0, &[1]), "choke message has a 1-byte payload"),
        (msg(6, &[0; 11]), "request message has a 11-byte payload"),
        (msg(7, &[0; 5]), "piece message is too short"),
    ] {
        let (r, _, _) = play(&f, &stream_of(&[m]), Duration::from_secs(5)).await;
        expect_error(&r, needle);
    }
}

#[tokio::test]
async fn valid_streams_keep_the_connection_open() {
    let f = ten_pieces(true).await;
    let s = stream_of(&[
        msg(20, b"\x00d1:md11:ut_metadatai3ee1:v4:teste"),
        msg(5, &[0xff, 0x80]),
        msg(4, &9u32.to_be_bytes()),
        msg(2, &[]),
        0u32.to_be_bytes().to_vec(), // keep-alive
        msg(0x42, b"unknown extension id is ignored"),
    ]);
    let (r, info, _) = play(&f, &s, Duration::from_secs(1)).await;
    assert!(r.is_none(), "ended with {r:?}");
    assert_eq!(info.pieces.load(Ordering::Relaxed), 10);
    assert!(info.peer_interested.load(Ordering::Relaxed));
    assert_eq!(info.client.lock().unwrap().as_deref(), Some("test"));
}

// ---- handshake --------------------------------------------------------------------------

#[tokio::test]
async fn p04_incoming_handshake_for_unknown_torrent_is_closed_without_answer() {
    use ratorrent::api::AddRequest;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.bin");
    std::fs::write(&data, vec![7u8; 162_840]).unwrap();
    let tfile = dir.path().join("t.torrent");
    std::fs::write(
        &tfile,
        TorrentBuilder::new(&data)
            .piece_length(16_384)
            .build()
            .unwrap(),
    )
    .unwrap();
    let config = EngineConfig {
        download_dir: dir.path().to_path_buf(),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..EngineConfig::default()
    };
    let h = ratorrent::engine::session::start(config).await.unwrap();
    let id = h.client.add(AddRequest::new(tfile)).await.unwrap();
    let seeding =
        |s: &ratorrent::api::Snapshot| s.row(id).is_some_and(|r| r.state == TorrentState::Seeding);
    tokio::time::timeout(Duration::from_secs(10), h.client.wait_for(seeding))
        .await
        .expect("torrent seeding after its check")
        .unwrap();
    let addr = format!("127.0.0.1:{}", h.listen_port);
    // p04 names a torrent we do not serve: closed, no handshake in reply
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(&case("p04-handshake-wrong-infohash.bin"))
        .await
        .unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut got))
        .await
        .expect("closed promptly")
        .ok();
    assert!(
        got.is_empty(),
        "no handshake is sent for an unknown info hash"
    );
    // not BitTorrent at all: taken for an MSE handshake (encryption "prefer"), answered
    // with a public key and pad only, and closed when no synchronisation hash shows within
    // the spec's 628 bytes
    let mut s = TcpStream::connect(&addr).await.unwrap();
    let mut http = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    http.resize(700, b'x');
    s.write_all(&http).await.unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut got))
        .await
        .expect("closed promptly")
        .ok();
    assert!(
        got.len() <= 96 + 512,
        "{} bytes: no BitTorrent handshake",
        got.len()
    );
    assert!(!got.windows(19).any(|w| w == b"BitTorrent protocol"));
    // the session still serves its torrent afterwards
    let ih = Metainfo::from_file(&dir.path().join("t.torrent"))
        .unwrap()
        .info_hash;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(&Handshake::ours(ih, PeerId([b'y'; 20])).to_bytes())
        .await
        .unwrap();
    let mut back = [0u8; HANDSHAKE_LEN];
    tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut back))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(Handshake::parse(&back).unwrap().info_hash, ih);
}

#[tokio::test]
async fn outgoing_handshake_with_wrong_info_hash_or_protocol_is_refused() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let wrong = case("p04-handshake-wrong-infohash.bin");
    let server = tokio::spawn(async move {
        for reply in [wrong, b"\x13BitTorrent protocoX".repeat(4)[..68].to_vec()] {
            let (mut s, _) = l.accept().await.unwrap();
            let mut hs = [0u8; HANDSHAKE_LEN];
            s.read_exact(&mut hs).await.unwrap();
            s.write_all(&reply).await.unwrap();
        }
    });
    let ours = Handshake::ours(
        ratorrent::metainfo::InfoHash::from_hex("a91c6d8d1608108c2e9177eb00f4b4cc5bdb64f1")
            .unwrap(),
        PeerId::generate(),
    );
    let e = peer_task::connect(addr, ours, None, Encryption::Disable)
        .await
        .expect_err("refused");
    assert!(matches!(e, PeerError::WrongInfoHash), "{e}");
    let e = peer_task::connect(addr, ours, None, Encryption::Disable)
        .await
        .expect_err("refused");
    assert!(e.to_string().contains("not a BitTorrent handshake"), "{e}");
    server.await.unwrap();
}

// ---- BEP 6 fast extension ---------------------------------------------------------------

/// Read messages the peer task sends until `stop` says so or `limit` passes.
async fn read_until(
    remote: &mut TcpStream,
    buf: &mut bytes::BytesMut,
    limit: Duration,
    mut stop: impl FnMut(&ratorrent::peer::wire::Message) -> bool,
) -> Vec<ratorrent::peer::wire::Message> {
    use ratorrent::peer::wire;
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        while let Some(m) = wire::decode(buf, 1 << 20).expect("our own stream decodes") {
            let done = stop(&m);
            got.push(m);
            if done {
                return got;
            }
        }
        let mut chunk = [0u8; 65536];
        match tokio::time::timeout_at(deadline, remote.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return got,
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Start the peer task against a fast-capable remote; returns the remote's socket.
async fn fast_remote(f: &Fixture) -> (TcpStream, tokio::task::JoinHandle<Result<(), PeerError>>) {
    let mut remote_hs = Handshake::parse(
        &handshake_bytes()[..HANDSHAKE_LEN]
            .try_into()
            .expect("68 bytes"),
    )
    .unwrap();
    remote_hs.info_hash = f.t.info_hash;
    assert!(remote_hs.supports_fast());
    let (ours, remote, addr) = pair().await;
    let info = Arc::new(PeerInfo::new(
        addr,
        false,
        remote_hs.peer_id,
        PeerSource::Incoming,
        f.t.ctx.clock.now_ms(),
    ));
    let (ctrl_tx, ctrl_rx) = tokio::sync::mpsc::unbounded_channel();
    // the control channel must stay open for the task's lifetime
    let t = f.t.clone();
    let task = tokio::spawn(async move {
        let r = peer_task::run(t, 7, ours, info, remote_hs, ctrl_rx).await;
        drop(ctrl_tx);
        r
    });
    (remote, task)
}

#[tokio::test]
async fn fast_seeder_sends_have_all_and_allowed_fast_and_serves_only_those_while_choked() {
    use ratorrent::peer::wire::{self, BlockRef, Message};
    // 64 pieces of 16 KiB, complete: we are the seeder
    let f = fixture(64 * 16_384, 16_384, true).await;
    let (mut remote, task) = fast_remote(&f).await;
    let mut buf = bytes::BytesMut::new();
    let expect_allowed = wire::allowed_fast_set(
        "127.0.0.1".parse().unwrap(),
        &f.t.info_hash,
        64,
        wire::ALLOWED_FAST_COUNT,
    );
    let got = read_until(&mut remote, &mut buf, Duration::from_secs(5), |_| false).await;
    assert!(
        got.contains(&Message::HaveAll),
        "a fast seeder announces HaveAll, sent {got:?}"
    );
    assert!(
        !got.iter().any(|m| matches!(m, Message::Bitfield(_))),
        "HaveAll replaces the bitfield"
    );
    let allowed: Vec<u32> = got
        .iter()
        .filter_map(|m| match m {
            Message::AllowedFast(p) => Some(*p),
            _ => None,
        })
        .collect();
    assert_eq!(
        allowed, expect_allowed,
        "the BEP 6 allowed-fast set for 127.0.0.1"
    );
    assert!(
        !got.contains(&Message::Unchoke),
        "not interested: stays choked"
    );
    // while choked (we never said interested): one allowed piece, one other piece
    let other = (0..64).find(|p| !allowed.contains(p)).unwrap();
    let ok = BlockRef {
        piece: allowed[0],
        begin: 0,
        length: 16_384,
    };
    let no = BlockRef {
        piece: other,
        begin: 0,
        length: 16_384,
    };
    let mut out = bytes::BytesMut::new();
    Message::Request(ok).encode(&mut out);
    Message::Request(no).encode(&mut out);
    remote.write_all(&out).await.unwrap();
    let mut piece_seen = false;
    let mut reject_seen = false;
    let got = read_until(&mut remote, &mut buf, Duration::from_secs(5), |m| {
        match m {
            Message::Piece {
                piece,
                begin: 0,
                data,
            } if *piece == ok.piece => {
                assert_eq!(data.len(), 16_384);
                piece_seen = true;
            }
            Message::Reject(b) if *b == no => reject_seen = true,
            Message::Piece { piece, .. } if *piece == other => {
                panic!("served a piece outside the allowed-fast set while choked")
            }
            _ => {}
        }
        piece_seen && reject_seen
    })
    .await;
    assert!(
        piece_seen,
        "allowed-fast request served while choked: {got:?}"
    );
    assert!(reject_seen, "other request rejected, not ignored: {got:?}");
    drop(remote);
    let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
}

#[tokio::test]
async fn fast_leecher_requests_only_allowed_pieces_while_choked_and_rerequests_rejected_blocks() {
    use ratorrent::peer::wire::{BlockRef, Message};
    // 64 pieces of 16 KiB, nothing on disk: we are the leecher
    let f = fixture(64 * 16_384, 16_384, false).await;
    let (mut remote, task) = fast_remote(&f).await;
    let mut buf = bytes::BytesMut::new();
    let mut out = bytes::BytesMut::new();
    Message::HaveAll.encode(&mut out);
    Message::AllowedFast(5).encode(&mut out);
    Message::AllowedFast(9).encode(&mut out);
    remote.write_all(&out).await.unwrap();
    // choked: our requests may only be for pieces 5 and 9
    let mut requested = Vec::new();
    let got = read_until(&mut remote, &mut buf, Duration::from_secs(5), |m| {
        if let Message::Request(b) = m {
            requested.push(*b);
        }
        requested.len() >= 2
    })
    .await;
    assert!(
        got.contains(&Message::HaveNone),
        "a fast leecher with nothing announces HaveNone: {got:?}"
    );
    assert!(got.contains(&Message::Interested));
    assert!(
        !requested.is_empty(),
        "allowed-fast pieces requested while choked"
    );
    for b in &requested {
        assert!(
            b.piece == 5 || b.piece == 9,
            "request {b:?} outside the allowed-fast set while choked"
        );
    }
    // reject the first request, then unchoke: that block must be asked for again
    let rejected: BlockRef = requested[0];
    let mut out = bytes::BytesMut::new();
    for b in &requested {
        Message::Reject(*b).encode(&mut out);
    }
    Message::Unchoke.encode(&mut out);
    remote.write_all(&out).await.unwrap();
    let mut again = false;
    let mut others = 0;
    read_until(&mut remote, &mut buf, Duration::from_secs(10), |m| {
        if let Message::Request(b) = m {
            if *b == rejected {
                again = true;
            } else {
                others += 1;
            }
        }
        again
    })
    .await;
    assert!(
        again,
        "a rejected block is requested again once unchoked ({others} other requests seen)"
    );
    drop(remote);
    let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
}

// ---- BEP 11 / BEP 27: ut_pex offered for public torrents only ---------------------------

async fn our_extension_handshake(private: bool) -> ratorrent::peer::extension::ExtHandshake {
    use ratorrent::peer::wire::Message;
    let f = fixture(64 * 16_384, 16_384, true).await;
    f.t.set_private(private);
    let (mut remote, task) = fast_remote(&f).await;
    let mut buf = bytes::BytesMut::new();
    let got = read_until(&mut remote, &mut buf, Duration::from_secs(5), |m| {
        matches!(m, Message::Extended { ext_id: 0, .. })
    })
    .await;
    drop(remote);
    let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    match got.last() {
        Some(Message::Extended { ext_id: 0, payload }) => {
            ratorrent::peer::extension::parse_handshake(payload).unwrap()
        }
        other => panic!("no extension handshake; last message {other:?}"),
    }
}

#[tokio::test]
async fn ut_pex_is_offered_for_public_torrents_and_never_for_private_ones() {
    assert!(our_extension_handshake(false).await.ut_pex.is_some());
    assert_eq!(
        our_extension_handshake(true).await.ut_pex,
        None,
        "BEP 27: no peer exchange for a private torrent"
    );
}
