//! Metadata exchange (BEP 9 over BEP 10) against hostile and unusual peers: the shared
//! `peer_stream` cases about metadata size (p05*) and assembly (p06*), and variants of each
//! class, played over loopback TCP against the real metadata connection of a torrent that
//! has only its info hash (a magnet link). A lying peer ends its connection with a clear
//! error and never makes us size a buffer from what it says; a whole that fails its hash is
//! fetched again, from one peer at a time until the liar is found.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ratorrent::api::{PeerSource, TorrentId};
use ratorrent::config::engine::EngineConfig;
use ratorrent::engine::ctx::{SessionCtx, SessionEvent};
use ratorrent::engine::link::message::{PeerCtrl, PeerError, PeerEvent};
use ratorrent::engine::link::metadata::MetadataFetch;
use ratorrent::engine::link::peer::PeerInfo;
use ratorrent::engine::peer_conn as peer_task;
use ratorrent::metainfo::{InfoHash, Metainfo};
use ratorrent::peer::PeerId;
use ratorrent::peer::extension::UT_METADATA_ID;
use ratorrent::peer::metadata::{self as bep9, MetadataMsg};
use ratorrent::peer::wire::{HANDSHAKE_LEN, Handshake};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::UnboundedReceiver;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/peer_stream");
/// Our cap in these tests (the default is 32 MiB).
const CAP: u32 = 16 << 20;

struct Fetch {
    fetch: Arc<MetadataFetch>,
    events: UnboundedReceiver<SessionEvent>,
}

fn fetch_for(info_hash: InfoHash, cap: u32) -> Fetch {
    let (tx, events) = tokio::sync::mpsc::unbounded_channel();
    let ctx = SessionCtx::new(EngineConfig::default(), 0, tx);
    Fetch {
        fetch: Arc::new(MetadataFetch::new(
            TorrentId(1),
            info_hash,
            cap,
            ctx.link.clone(),
        )),
        events,
    }
}

impl Fetch {
    fn completed(&mut self) -> bool {
        while let Ok(ev) = self.events.try_recv() {
            if let SessionEvent::Peer {
                event: PeerEvent::MetadataComplete,
                ..
            } = ev
            {
                return true;
            }
        }
        false
    }
}

async fn pair() -> (TcpStream, TcpStream, SocketAddr) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let remote = TcpStream::connect(addr).await.unwrap();
    let (ours, peer_addr) = l.accept().await.unwrap();
    (ours, remote, peer_addr)
}

/// Start a metadata connection of `f` with `remote_hs`; returns the task and the remote
/// end of the socket.
async fn connect(
    f: &Fetch,
    key: u64,
    remote_hs: Handshake,
) -> (
    tokio::task::JoinHandle<Result<(), PeerError>>,
    TcpStream,
    tokio::sync::mpsc::UnboundedSender<PeerCtrl>,
) {
    let (ours, remote, addr) = pair().await;
    let info = Arc::new(PeerInfo::new(
        addr,
        false,
        remote_hs.peer_id,
        PeerSource::Incoming,
        f.fetch.ctx.clock.now_ms(),
    ));
    let (ctrl_tx, ctrl_rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(peer_task::run_metadata(
        f.fetch.clone(),
        key,
        ours,
        info,
        remote_hs,
        ctrl_rx,
    ));
    (task, remote, ctrl_tx)
}

/// Play a scripted stream (a 68-byte handshake, then messages) as the remote peer; returns
/// how the connection ended (`None`: still open after `wait`) and what we sent.
async fn play(
    f: &Fetch,
    stream: &[u8],
    wait: Duration,
) -> (Option<Result<(), PeerError>>, Vec<u8>) {
    let mut hs = [0u8; HANDSHAKE_LEN];
    hs.copy_from_slice(&stream[..HANDSHAKE_LEN]);
    let mut remote_hs = Handshake::parse(&hs).expect("case handshake parses");
    remote_hs.info_hash = f.fetch.info_hash;
    let (task, mut remote, ctrl) = connect(f, 7, remote_hs).await;
    let rest = stream[HANDSHAKE_LEN..].to_vec();
    let writer = tokio::spawn(async move {
        let _ = remote.write_all(&rest).await;
        // read what we send until we hang up or the wait is over (keeping the socket open)
        let mut got = Vec::new();
        let mut buf = [0u8; 65536];
        let end = tokio::time::Instant::now() + wait + Duration::from_millis(300);
        loop {
            match tokio::time::timeout_at(end, remote.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
        got
    });
    let result = match tokio::time::timeout(wait, task).await {
        Ok(joined) => Some(joined.expect("metadata task must not panic")),
        Err(_) => {
            let _ = ctrl.send(PeerCtrl::Disconnect("test over"));
            None
        }
    };
    (result, writer.await.unwrap_or_default())
}

fn case(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(FIXTURES).join(name)).unwrap()
}

fn expect_error(r: &Option<Result<(), PeerError>>, needle: &str) {
    match r {
        Some(Err(e)) => assert!(
            e.to_string().contains(needle),
            "error {e} should mention {needle:?}"
        ),
        other => panic!("expected an error mentioning {needle:?}, got {other:?}"),
    }
}

fn handshake_bytes(ih: InfoHash, extensions: bool) -> Vec<u8> {
    let mut h = Handshake::ours(ih, PeerId([b'r'; 20]));
    if !extensions {
        h.reserved = [0; 8];
    }
    h.to_bytes().to_vec()
}

fn ext(id: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = ((payload.len() + 2) as u32).to_be_bytes().to_vec();
    v.push(20);
    v.push(id);
    v.extend_from_slice(payload);
    v
}

fn ext_handshake(ut_metadata: Option<i64>, size: Option<&str>) -> Vec<u8> {
    let mut d = String::from("d1:md");
    if let Some(id) = ut_metadata {
        d.push_str(&format!("11:ut_metadatai{id}e"));
    }
    d.push('e');
    if let Some(s) = size {
        d.push_str(&format!("13:metadata_size{s}"));
    }
    d.push('e');
    ext(0, d.as_bytes())
}

fn data_msg(piece: u32, total: i64, data: &[u8]) -> Vec<u8> {
    let mut p = format!("d8:msg_typei1e5:piecei{piece}e10:total_sizei{total}ee").into_bytes();
    p.extend_from_slice(data);
    ext(UT_METADATA_ID, &p)
}

/// Our messages in `sent`: (extended id, payload) of each extended message.
fn extended_sent(sent: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 4 <= sent.len() {
        let n = u32::from_be_bytes(sent[i..i + 4].try_into().unwrap()) as usize;
        if i + 4 + n > sent.len() {
            break;
        }
        let m = &sent[i + 4..i + 4 + n];
        if n >= 2 && m[0] == 20 {
            out.push((m[1], m[2..].to_vec()));
        }
        i += 4 + n;
    }
    out
}

fn requests_sent(sent: &[u8], peer_id: u8) -> Vec<u32> {
    extended_sent(sent)
        .into_iter()
        .filter(|(id, _)| *id == peer_id)
        .filter_map(|(_, p)| match bep9::parse(&bytes::Bytes::from(p)) {
            Ok(MetadataMsg::Request { piece }) => Some(piece),
            _ => None,
        })
        .collect()
}

/// A synthetic info dictionary of `len` bytes (a valid single-file torrent, padded with an
/// extra key), and its info hash.
fn info_dict(len: usize) -> (Vec<u8>, InfoHash) {
    let head =
        b"d6:lengthi1e4:name6:sample12:piece lengthi16384e6:pieces20:aaaaaaaaaaaaaaaaaaaa5:x-pad";
    let pad = len - head.len() - 2 - 1;
    let digits = pad.to_string().len();
    let pad = pad - digits - 1;
    let mut v = head.to_vec();
    v.extend_from_slice(format!("{pad}:").as_bytes());
    v.extend(std::iter::repeat_n(b'z', pad));
    v.push(b'e');
    let len_now = v.len();
    assert!(len_now <= len && len - len_now < 4, "{len_now} vs {len}");
    let ih = InfoHash::of_info_bytes(&v);
    (v, ih)
}

fn pieces(info: &[u8]) -> Vec<&[u8]> {
    info.chunks(16 * 1024).collect()
}

// ---- metadata-size ---------------------------------------------------------------------

#[tokio::test]
async fn p05_negative_metadata_size_is_refused() {
    let f = fetch_for(
        InfoHash::from_hex("a91c6d8d1608108c2e9177eb00f4b4cc5bdb64f1").unwrap(),
        CAP,
    );
    let (r, sent) = play(
        &f,
        &case("p05-metadata-size-negative.bin"),
        Duration::from_secs(5),
    )
    .await;
    expect_error(&r, "extended handshake: invalid metadata_size -1");
    assert!(requests_sent(&sent, 3).is_empty(), "nothing asked of it");
    assert_eq!(f.fetch.total.load(std::sync::atomic::Ordering::Relaxed), 0);
}

#[tokio::test]
async fn metadata_sizes_that_cannot_be_true_are_refused() {
    let ih = InfoHash([1; 20]);
    for (size, needle) in [
        ("i-1e", "invalid metadata_size -1"),
        ("i-9223372036854775808e", "invalid metadata_size"),
        (
            "i9223372036854775807e",
            "larger than the 16777216-byte limit",
        ),
        ("i16777217e", "larger than"),
    ] {
        let f = fetch_for(ih, CAP);
        let mut s = handshake_bytes(ih, true);
        s.extend(ext_handshake(Some(3), Some(size)));
        let (r, _) = play(&f, &s, Duration::from_secs(5)).await;
        expect_error(&r, needle);
    }
    // no ut_metadata, or the extension bit not set at all
    let f = fetch_for(ih, CAP);
    let mut s = handshake_bytes(ih, true);
    s.extend(ext_handshake(None, Some("i100e")));
    let (r, _) = play(&f, &s, Duration::from_secs(5)).await;
    expect_error(&r, "does not offer ut_metadata");
    let f = fetch_for(ih, CAP);
    let (r, _) = play(&f, &handshake_bytes(ih, false), Duration::from_secs(5)).await;
    expect_error(&r, "extension protocol (BEP 10)");
}

/// Issue 16: no `metadata_size`, 0, or not an integer: the peer has none to serve yet. It
/// is kept and not asked; a later handshake that announces the size makes it asked.
#[tokio::test]
async fn a_peer_without_metadata_yet_is_kept_and_asked_once_it_has_some() {
    let (info, ih) = info_dict(40_000);
    for first in [None, Some("i0e"), Some("3:abc")] {
        let f = fetch_for(ih, CAP);
        let mut s = handshake_bytes(ih, true);
        s.extend(ext_handshake(Some(3), first));
        let (r, sent) = play(&f, &s, Duration::from_millis(1500)).await;
        assert!(r.is_none(), "{first:?}: the peer is kept, got {r:?}");
        assert!(requests_sent(&sent, 3).is_empty(), "{first:?}: not asked");
        // then it announces the size: it is asked for every piece
        let f = fetch_for(ih, CAP);
        let mut s = handshake_bytes(ih, true);
        s.extend(ext_handshake(Some(3), first));
        s.extend(ext_handshake(Some(3), Some(&format!("i{}e", info.len()))));
        let (r, sent) = play(&f, &s, Duration::from_millis(1500)).await;
        assert!(r.is_none(), "{first:?} then a size: kept, got {r:?}");
        let mut asked = requests_sent(&sent, 3);
        asked.sort_unstable();
        assert_eq!(
            asked,
            vec![0, 1, 2],
            "{first:?} then a size: asked for each piece"
        );
    }
}

#[tokio::test]
async fn p05b_a_large_legitimate_info_dictionary_is_fetched() {
    let f = fetch_for(
        InfoHash::from_hex("a91c6d8d1608108c2e9177eb00f4b4cc5bdb64f1").unwrap(),
        32 << 20,
    );
    let (r, sent) = play(
        &f,
        &case("p05b-metadata-size-large-legit.bin"),
        Duration::from_secs(2),
    )
    .await;
    assert!(r.is_none(), "the connection stays open: {r:?}");
    assert_eq!(
        f.fetch.total.load(std::sync::atomic::Ordering::Relaxed),
        873
    );
    // asked with the peer's id (3), a few pieces at a time, never all 873 at once
    let asked = requests_sent(&sent, 3);
    assert_eq!(asked, (0..8).collect::<Vec<u32>>());
}

// ---- metadata-assembly -----------------------------------------------------------------

#[tokio::test]
async fn p06_pieces_out_of_order_assemble_and_verify() {
    let ih = InfoHash::from_hex("7d71e2d7ec6432a749a1a55490680db10914f7c1").unwrap();
    let mut f = fetch_for(ih, CAP);
    let (r, _) = play(
        &f,
        &case("p06-ut-metadata-out-of-order.bin"),
        Duration::from_secs(3),
    )
    .await;
    // complete; the connection stays for the hand-over to the full protocol (issue 16)
    assert!(r.is_none(), "the connection stays: {r:?}");
    assert!(f.completed(), "the torrent is told");
    let info = f.fetch.take_done().unwrap();
    let meta =
        Metainfo::from_bytes(&ratorrent::metainfo::create::torrent_from_info(&info, &[])).unwrap();
    assert_eq!(meta.info_hash, ih);
    assert_eq!(meta.name, "sample-meta");
    assert_eq!(meta.files.len(), 700);
    assert_eq!(meta.total_length, 944_650);
    assert_eq!(info.len(), 41_665);
}

#[tokio::test]
async fn p06b_total_size_that_disagrees_is_refused() {
    let ih = InfoHash::from_hex("7d71e2d7ec6432a749a1a55490680db10914f7c1").unwrap();
    let f = fetch_for(ih, CAP);
    let (r, _) = play(
        &f,
        &case("p06b-ut-metadata-size-mismatch.bin"),
        Duration::from_secs(5),
    )
    .await;
    expect_error(
        &r,
        "ut_metadata data: total_size / piece size disagree with the advertised metadata_size",
    );
    assert!(f.fetch.take_done().is_none());
}

#[tokio::test]
async fn assembly_variants() {
    let (info, ih) = info_dict(50_000);
    let ps = pieces(&info);
    assert_eq!(ps.len(), 4);
    let total = info.len() as i64;
    let size = format!("i{total}e");

    // reversed, with a duplicate and an unknown extension message in between: complete
    let mut f = fetch_for(ih, CAP);
    let mut s = handshake_bytes(ih, true);
    s.extend(ext_handshake(Some(9), Some(&size)));
    for p in (0..4).rev() {
        s.extend(data_msg(p as u32, total, ps[p]));
        if p == 2 {
            s.extend(data_msg(2, total, ps[2]));
            s.extend(ext(77, b"garbage"));
        }
    }
    let (r, sent) = play(&f, &s, Duration::from_secs(3)).await;
    assert!(r.is_none(), "complete, the connection stays: {r:?}");
    assert!(f.completed());
    assert_eq!(&f.fetch.take_done().unwrap()[..], &info[..]);
    assert!(
        !requests_sent(&sent, 9).is_empty(),
        "requests use the peer's id"
    );

    // faults, each ends the connection with the class's message
    let mut short = ps[1].to_vec();
    short.pop();
    for (msgs, needle) in [
        (vec![data_msg(1, total, &short)], "disagree"),
        (vec![data_msg(3, total, ps[0])], "disagree"),
        (vec![data_msg(4, total, ps[3])], "outside the 4 pieces"),
        (vec![data_msg(0, total + 1, ps[0])], "disagree"),
        (vec![data_msg(0, -1, ps[0])], "disagree"),
        (vec![ext(UT_METADATA_ID, b"d8:msg_typei1ee")], "piece index"),
        (
            vec![ext(UT_METADATA_ID, b"d8:msg_typei7e5:piecei0ee")],
            "msg_type",
        ),
        (vec![ext(UT_METADATA_ID, b"i1e")], "not a dictionary"),
        (vec![ext(UT_METADATA_ID, b"d8:msg_ty")], "not a bencoded"),
    ] {
        let f = fetch_for(ih, CAP);
        let mut s = handshake_bytes(ih, true);
        s.extend(ext_handshake(Some(3), Some(&size)));
        for m in msgs {
            s.extend(m);
        }
        let (r, _) = play(&f, &s, Duration::from_secs(5)).await;
        expect_error(&r, needle);
        assert!(f.fetch.take_done().is_none());
    }

    // a whole that does not hash right: not accepted, fetched again (the connection stays)
    let f = fetch_for(ih, CAP);
    let mut s = handshake_bytes(ih, true);
    s.extend(ext_handshake(Some(3), Some(&size)));
    let mut bad = ps[2].to_vec();
    bad[10] ^= 0xff;
    for (p, d) in [(0, ps[0]), (1, ps[1]), (2, &bad[..]), (3, ps[3])] {
        s.extend(data_msg(p, total, d));
    }
    let (r, sent) = play(&f, &s, Duration::from_secs(2)).await;
    assert!(r.is_none(), "{r:?}");
    assert_eq!(f.fetch.failures(), 1);
    assert!(f.fetch.take_done().is_none());
    // every piece is asked for again (the stream sent them all before we asked anything)
    assert_eq!(requests_sent(&sent, 3), vec![0, 1, 2, 3]);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Honest,
    /// Piece 1 corrupted.
    Lie,
    /// Every request rejected.
    Reject,
}

/// A peer that answers our metadata requests as `mode` says; returns the requests it got.
async fn responder(mut remote: TcpStream, info: Vec<u8>, mode: Mode) -> Vec<u32> {
    let mut asked = Vec::new();
    let total = info.len() as i64;
    let mut out = Vec::new();
    out.extend(ext_handshake(Some(5), Some(&format!("i{total}e"))));
    if remote.write_all(&out).await.is_err() {
        return asked;
    }
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        let n = match remote.read(&mut chunk).await {
            Ok(0) | Err(_) => return asked,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut answers = Vec::new();
        loop {
            if buf.len() < 4 {
                break;
            }
            let len = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
            if buf.len() < 4 + len {
                break;
            }
            let m: Vec<u8> = buf.drain(..4 + len).skip(4).collect();
            if m.len() >= 2
                && m[0] == 20
                && m[1] == 5
                && let Ok(MetadataMsg::Request { piece }) =
                    bep9::parse(&bytes::Bytes::from(m[2..].to_vec()))
            {
                {
                    asked.push(piece);
                    if mode == Mode::Reject {
                        answers.extend(ext(UT_METADATA_ID, &bep9::encode_reject(piece)));
                        continue;
                    }
                    let start = piece as usize * 16384;
                    let mut d = info[start..(start + 16384).min(info.len())].to_vec();
                    if mode == Mode::Lie && piece == 1 {
                        d[0] ^= 1;
                    }
                    answers.extend(data_msg(piece, total, &d));
                }
            }
        }
        if !answers.is_empty() && remote.write_all(&answers).await.is_err() {
            return asked;
        }
    }
}

#[tokio::test]
async fn a_liar_among_honest_peers_is_found_and_the_metadata_still_arrives() {
    let (info, ih) = info_dict(200_000);
    let mut f = fetch_for(ih, CAP);
    let hs = |b: u8| {
        let mut h = Handshake::ours(ih, PeerId([b; 20]));
        h.info_hash = ih;
        h
    };
    // the liar connects first, so it is asked for pieces
    let (liar_task, liar_remote, _c1) = connect(&f, 1, hs(b'l')).await;
    tokio::spawn(responder(liar_remote, info.clone(), Mode::Lie));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (honest_task, honest_remote, _c2) = connect(&f, 2, hs(b'h')).await;
    tokio::spawn(responder(honest_remote, info.clone(), Mode::Honest));
    let done = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Some(i) = f.fetch.take_done() {
                return i;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the metadata arrives despite the liar");
    assert_eq!(&done[..], &info[..]);
    assert!(f.completed());
    assert!(
        f.fetch.failures() >= 1,
        "the liar's piece failed the whole once"
    );
    // the honest peer's connection stays for the hand-over until the torrent closes it;
    // the liar's ends with the hash failure (when the single-source attempt was its own)
    // or stays too
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!honest_task.is_finished(), "the honest peer is kept");
    let _ = _c2.send(PeerCtrl::Disconnect("test over"));
    let _ = _c1.send(PeerCtrl::Disconnect("test over"));
    let h = tokio::time::timeout(Duration::from_secs(5), honest_task).await;
    assert!(
        matches!(h, Ok(Ok(Err(PeerError::Closed("test over"))))),
        "{h:?}"
    );
    let l = tokio::time::timeout(Duration::from_secs(5), liar_task).await;
    assert!(matches!(l, Ok(Ok(Err(_)))), "{l:?}");
}

#[tokio::test]
async fn a_reject_goes_to_another_peer() {
    let (info, ih) = info_dict(40_000);
    let mut f = fetch_for(ih, CAP);
    let hs = |b: u8| {
        let mut h = Handshake::ours(ih, PeerId([b; 20]));
        h.info_hash = ih;
        h
    };
    // peer 1 rejects everything it is asked: a reject is not a fault, the connection stays
    let (rejecter, remote, _c1) = connect(&f, 1, hs(b'r')).await;
    let rejected = tokio::spawn(responder(remote, info.clone(), Mode::Reject));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!rejecter.is_finished());
    // an honest peer then gets every piece
    let (task, remote, c2) = connect(&f, 2, hs(b'h')).await;
    let honest = tokio::spawn(responder(remote, info.clone(), Mode::Honest));
    let done = tokio::time::timeout(Duration::from_secs(10), async {
        while f.fetch.take_done().is_none() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(done.is_ok(), "the honest peer gives every piece");
    // the connection stays for the hand-over until the torrent closes it
    assert!(!task.is_finished());
    let _ = c2.send(PeerCtrl::Disconnect("test over"));
    let r = tokio::time::timeout(Duration::from_secs(10), task).await;
    assert!(matches!(r, Ok(Ok(Err(PeerError::Closed(_))))), "{r:?}");
    assert!(f.completed());
    assert_eq!(&f.fetch.take_done().unwrap()[..], &info[..]);
    drop(rejecter);
    let _ = _c1.send(PeerCtrl::Disconnect("test over"));
    // the rejecter was asked each piece once, never again; the honest peer got them all
    assert_eq!(rejected.await.unwrap(), vec![0, 1, 2]);
    let mut got = honest.await.unwrap();
    got.sort_unstable();
    assert_eq!(got, vec![0, 1, 2]);
}

#[tokio::test]
async fn random_extension_traffic_never_panics() {
    let (info, ih) = info_dict(20_000);
    let total = info.len() as i64;
    let mut x = 0x9e37_79b9u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..60 {
        let f = fetch_for(ih, CAP);
        let mut s = handshake_bytes(ih, true);
        if round % 2 == 0 {
            s.extend(ext_handshake(Some(3), Some(&format!("i{total}e"))));
        }
        for _ in 0..20 {
            let len = (rnd() % 200) as usize;
            let mut p: Vec<u8> = (0..len).map(|_| rnd() as u8).collect();
            if rnd() % 3 == 0 {
                // mostly well-formed prefixes with junk after
                let mut d =
                    format!("d8:msg_typei{}e5:piecei{}e", rnd() % 4, rnd() % 6).into_bytes();
                d.append(&mut p);
                p = d;
            }
            let id = [0u8, UT_METADATA_ID, 1, (rnd() % 256) as u8][(rnd() % 4) as usize];
            s.extend(ext(id, &p));
        }
        let (_r, _) = play(&f, &s, Duration::from_millis(300)).await;
    }
}
