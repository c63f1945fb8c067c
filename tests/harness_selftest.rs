//! Self-test of the integration-test infrastructure in `tests/common/`: the test tracker
//! (BEP 3 announce, BEP 23 compact peers, BEP 48 scrape), payload generation/comparison, and
//! real libtorrent peers swarming through the test tracker over loopback.

mod common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use common::payload::{self, FileSpec};
use common::{
    Event, LeechArgs, LtPeer, SeedArgs, TestTracker, compare_files, compare_trees, free_port_on,
    make_torrent, temp_dir,
};
use ratorrent::bencode::{self, Value};
use ratorrent::metainfo::InfoHash;

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const LEECHER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

/// libtorrent seeder on 127.0.0.2 → libtorrent leecher on 127.0.0.3, found only through
/// our tracker; the download is compared byte for byte and the tracker's records checked.
#[test]
fn libtorrent_seeder_serves_libtorrent_leecher_through_test_tracker() {
    let t0 = Instant::now();
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let dst = dir.path().join("dst");
    let layout = payload::multi_file_layout(5 << 20);
    let total = payload::total_len(&layout);
    payload::write_tree(&src.join("payload"), &layout, 0x5eed).expect("write payload");

    let torrent = dir.path().join("payload.torrent");
    let ih = make_torrent(
        &src.join("payload"),
        &torrent,
        &tracker.url(),
        Some(64 * 1024),
    );

    let seed_args = SeedArgs::new(&torrent, &src, SEEDER_IP, free_port_on(SEEDER_IP));
    let mut seeder = LtPeer::seed(&seed_args);
    assert_eq!(
        seeder.info_hash(),
        Some(ih),
        "READY line carries the info hash"
    );
    assert_eq!(
        tracker.peers(&ih),
        vec![seeder.addr()],
        "the tracker lists the seeder at its own loopback address:\n{}",
        tracker.describe()
    );

    let leech_args = LeechArgs::new(&torrent, &dst, LEECHER_IP, free_port_on(LEECHER_IP));
    let mut leecher = LtPeer::leech(&leech_args);
    let leecher_addr = leecher.addr();
    leecher
        .wait_done(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n--- seeder stderr ---\n{}", seeder.stderr()));
    compare_trees(&src.join("payload"), &dst.join("payload")).unwrap();

    let from = |addr: SocketAddrV4, ev: Event| {
        move |a: &common::Announce| a.info_hash == ih && a.addr == addr && a.event == ev
    };
    let wait = Duration::from_secs(5);
    let s_started = tracker
        .wait_for_announce(wait, from(seeder.addr(), Event::Started))
        .unwrap();
    assert_eq!(s_started.peer_id.len(), 20);
    let l_started = tracker
        .wait_for_announce(wait, from(leecher_addr, Event::Started))
        .unwrap();
    assert_eq!(
        l_started.left,
        Some(total),
        "leecher starts with everything left"
    );
    assert_eq!(l_started.downloaded, Some(0));
    let l_completed = tracker
        .wait_for_announce(wait, from(leecher_addr, Event::Completed))
        .unwrap();
    assert_eq!(l_completed.left, Some(0));
    assert!(
        l_completed.downloaded.unwrap_or(0) >= total,
        "completed announce reports the payload downloaded: {l_completed:?}"
    );
    // The leecher exited after DONE: its session announced `stopped` and left the swarm.
    tracker
        .wait_for_announce(wait, from(leecher_addr, Event::Stopped))
        .unwrap();
    assert_eq!(tracker.peers(&ih), vec![seeder.addr()]);

    // SIGTERM: the seeder exits cleanly and announces `stopped` too.
    let status = seeder.stop().expect("seeder exited");
    assert!(
        status.success(),
        "seeder exit status {status}\n{}",
        seeder.stderr()
    );
    let s_stopped = tracker
        .wait_for_announce(wait, from(seeder.addr(), Event::Stopped))
        .unwrap();
    assert!(
        s_stopped.uploaded.unwrap_or(0) >= total,
        "seeder reports the payload uploaded: {s_stopped:?}"
    );
    assert!(tracker.peers(&ih).is_empty());
    eprintln!("libtorrent swarm self-test: {:?}", t0.elapsed());
}

/// The seeder refuses to report READY for incomplete data, and says why.
#[test]
fn seeder_with_incomplete_data_fails_with_a_message() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let data = dir.path().join("one.bin");
    payload::write_file(&data, 300_000, 7).unwrap();
    let torrent = dir.path().join("one.torrent");
    let ih = make_torrent(&data, &torrent, &tracker.url(), Some(16 * 1024));
    // Corrupt one byte in the middle: the hash check fails for one piece.
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[150_000] ^= 0xff;
    std::fs::write(&data, &bytes).unwrap();

    let mut seeder = LtPeer::spawn_seed(&SeedArgs::new(
        &torrent,
        dir.path(),
        SEEDER_IP,
        free_port_on(SEEDER_IP),
    ));
    let err = seeder
        .wait_ready(Duration::from_secs(20))
        .expect_err("corrupt data must not become READY");
    assert!(
        err.0.contains("is not complete"),
        "the error explains the failure: {err}"
    );
    assert_eq!(
        seeder
            .wait_exit(Duration::from_secs(5))
            .and_then(|s| s.code()),
        Some(2)
    );
    assert!(
        !tracker.announces_for(&ih).iter().any(|a| a.left == Some(0)),
        "never announced as a seeder:\n{}",
        tracker.describe()
    );
}

/// Percent-encode every byte except ASCII letters and digits.
fn pct(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// One HTTP GET to the tracker with a raw std TcpStream: (status code, body).
fn get(tracker: &TestTracker, target: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(tracker.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: {}\r\nUser-Agent: selftest\r\n\r\n",
        tracker.addr()
    )
    .unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    let split = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("response has a head");
    let head = String::from_utf8_lossy(&resp[..split]).into_owned();
    let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = resp[split + 4..].to_vec();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("Content-Length")
        .parse()
        .unwrap();
    assert_eq!(len, body.len(), "Content-Length matches the body");
    (status, body)
}

fn announce_target(ih: &[u8], peer_id: &[u8], port: u16, extra: &str) -> String {
    format!(
        "/announce?info_hash={}&peer_id={}&port={port}&uploaded=10&downloaded=20&compact=1{extra}",
        pct(ih),
        pct(peer_id)
    )
}

fn dict_int(v: &Value<'_>, key: &str) -> i64 {
    v.as_dict()
        .and_then(|d| d.get_int(key.as_bytes()))
        .unwrap_or_else(|| panic!("no integer {key} in {v:?}"))
}

fn dict_bytes<'a>(v: &Value<'a>, key: &str) -> &'a [u8] {
    v.as_dict()
        .and_then(|d| d.get_bytes(key.as_bytes()))
        .unwrap_or_else(|| panic!("no byte string {key} in {v:?}"))
}

#[test]
fn tracker_decodes_raw_info_hash_and_answers_compact_peers() {
    let tracker = TestTracker::start();
    // Bytes that must survive percent-decoding: NUL, space, '%', '+', '&', '=', '?', 0xFF.
    let raw: [u8; 20] = [
        0x00, b' ', b'%', b'+', b'&', b'=', b'?', 0xff, b'A', b'z', b'0', 0x80, 0x7f, b'/', b'#',
        0x01, 0xfe, b'9', b'.', b'~',
    ];
    let ih = InfoHash(raw);
    let peer_a = *b"-AA0001-\x00\xff%&=+abcdef";
    let peer_b = *b"-BB0001-abcdefghijkl";

    // A: seeder announcing a loopback ip= → listed at that ip.
    let (status, body) = get(
        &tracker,
        &announce_target(
            &raw,
            &peer_a,
            6001,
            "&left=0&event=started&ip=127.0.0.5&key=k%2B1",
        ),
    );
    assert_eq!(status, 200);
    let v = bencode::decode(&body).unwrap();
    assert_eq!(dict_int(&v, "interval"), 2);
    assert_eq!(dict_int(&v, "complete"), 1);
    assert_eq!(dict_int(&v, "incomplete"), 0);
    assert_eq!(
        dict_bytes(&v, "peers"),
        b"",
        "the requester is not sent to itself"
    );

    // B: leecher without ip= → listed at the connection's source (127.0.0.1); gets A.
    tracker.set_interval(7);
    let (status, body) = get(&tracker, &announce_target(&raw, &peer_b, 6002, "&left=100"));
    assert_eq!(status, 200);
    let v = bencode::decode(&body).unwrap();
    assert_eq!(dict_int(&v, "interval"), 7);
    assert_eq!(dict_int(&v, "min interval"), 7);
    assert_eq!(dict_int(&v, "complete"), 1);
    assert_eq!(dict_int(&v, "incomplete"), 1);
    assert_eq!(
        dict_bytes(&v, "peers"),
        &[127, 0, 0, 5, 0x17, 0x71],
        "BEP 23: 127.0.0.5:6001"
    );

    // A non-loopback ip= is ignored in favour of the source address.
    let (status, _) = get(
        &tracker,
        &announce_target(&raw, &peer_b, 6003, "&left=5&ip=10.1.2.3"),
    );
    assert_eq!(status, 200);

    let recs = tracker.announces_for(&ih);
    assert_eq!(recs.len(), 3);
    let a = &recs[0];
    assert_eq!(
        a.info_hash.0, raw,
        "info hash percent-decoded to the raw 20 bytes"
    );
    assert_eq!(a.peer_id, peer_a);
    assert_eq!(a.addr, SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 5), 6001));
    assert_eq!(a.event, Event::Started);
    assert_eq!(
        (a.left, a.uploaded, a.downloaded),
        (Some(0), Some(10), Some(20))
    );
    assert_eq!(a.compact, Some(true));
    assert_eq!(a.key.as_deref(), Some("k+1"));
    assert_eq!(recs[1].addr, SocketAddrV4::new(Ipv4Addr::LOCALHOST, 6002));
    assert_eq!(recs[1].event, Event::None);
    assert_eq!(recs[2].addr, SocketAddrV4::new(Ipv4Addr::LOCALHOST, 6003));
    assert_eq!(
        tracker.peers(&ih),
        vec![
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, 6002),
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, 6003),
            SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 5), 6001),
        ]
    );

    // compact=0: the BEP 3 list of dictionaries (ip, peer id, port).
    let (_, body) = get(
        &tracker,
        &announce_target(&raw, &peer_b, 6002, "&left=100").replace("compact=1", "compact=0"),
    );
    let v = bencode::decode(&body).unwrap();
    let peers = v.as_dict().unwrap().get_list(b"peers").expect("peer list");
    let listed: Vec<(&[u8], i64, &[u8])> = peers
        .iter()
        .map(|p| {
            let d = p.as_dict().unwrap();
            (
                d.get_bytes(b"ip").unwrap(),
                d.get_int(b"port").unwrap(),
                d.get_bytes(b"peer id").unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            (&b"127.0.0.1"[..], 6003, &peer_b[..]),
            (&b"127.0.0.5"[..], 6001, &peer_a[..])
        ]
    );

    // stopped removes the peer; completed is counted by scrape (BEP 48).
    get(
        &tracker,
        &announce_target(&raw, &peer_a, 6001, "&left=0&event=stopped&ip=127.0.0.5"),
    );
    get(
        &tracker,
        &announce_target(&raw, &peer_b, 6003, "&left=0&event=completed"),
    );
    assert!(
        !tracker
            .peers(&ih)
            .contains(&SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 5), 6001))
    );
    let (status, body) = get(&tracker, &format!("/scrape?info_hash={}", pct(&raw)));
    assert_eq!(status, 200);
    let v = bencode::decode(&body).unwrap();
    let files = v.as_dict().unwrap().get_dict(b"files").expect("files");
    let entry = Value::Dict(
        files
            .get_dict(&raw)
            .expect("scrape entry for the raw hash")
            .clone(),
    );
    assert_eq!(dict_int(&entry, "complete"), 1);
    assert_eq!(dict_int(&entry, "incomplete"), 1);
    assert_eq!(dict_int(&entry, "downloaded"), 1);

    // Malformed requests: a failure reason, nothing added to a swarm, recorded as rejected.
    let (status, body) = get(
        &tracker,
        &announce_target(&raw[..19], &peer_b, 6009, "&left=1"),
    );
    assert_eq!(status, 400);
    let v = bencode::decode(&body).unwrap();
    assert_eq!(
        dict_bytes(&v, "failure reason"),
        b"info_hash is 19 bytes, not 20"
    );
    let (status, _) = get(&tracker, "/announce?info_hash=%G1&port=1");
    assert_eq!(status, 400);
    let (status, _) = get(&tracker, "/nothing-here");
    assert_eq!(status, 404);
    assert_eq!(tracker.rejected().len(), 3);
    assert_eq!(tracker.announces_for(&ih).len(), 6);

    // Configured failure: answered with a failure reason, recorded, not added.
    tracker.set_failure(Some("go away"));
    let (status, body) = get(&tracker, &announce_target(&raw, &peer_a, 6010, "&left=0"));
    assert_eq!(status, 200);
    let v = bencode::decode(&body).unwrap();
    assert_eq!(dict_bytes(&v, "failure reason"), b"go away");
    assert_eq!(
        tracker.announces().last().unwrap().failure.as_deref(),
        Some("go away")
    );
    assert!(!tracker.peers(&ih).iter().any(|p| p.port() == 6010));
}

#[test]
fn payload_is_deterministic_and_comparison_reports_the_first_difference() {
    let dir = temp_dir();
    // A length that is neither a multiple of 8 nor of the 1 MiB write chunk.
    let len = (1 << 20) + 12_345;
    let f = dir.path().join("x/y.bin");
    payload::write_file(&f, len, 42).unwrap();
    let on_disk = std::fs::read(&f).unwrap();
    assert_eq!(
        on_disk,
        payload::bytes(len as usize, 42),
        "write_file == bytes"
    );
    assert_ne!(
        payload::bytes(64, 42),
        payload::bytes(64, 43),
        "seeds differ"
    );

    let layout = payload::multi_file_layout(600_000);
    assert_eq!(payload::total_len(&layout), 600_000);
    assert!(layout.iter().any(|f| f.len == 0), "has a zero-length file");
    assert!(layout.iter().any(|f| f.len > 0 && f.len < payload::BLOCK));
    assert!(
        layout.iter().any(|f| f.path.components().count() >= 4),
        "nested dirs"
    );
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    payload::write_tree(&a, &layout, 9).unwrap();
    payload::write_tree(&b, &layout, 9).unwrap();
    compare_trees(&a, &b).unwrap();

    // One flipped byte is reported with its file and offset.
    let big = layout.iter().find(|f| f.len > 100_000).unwrap();
    let path = b.join(&big.path);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[77_777] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let err = compare_trees(&a, &b).unwrap_err().0;
    assert!(err.contains("at byte offset 77777"), "{err}");
    assert!(err.contains(&big.path.display().to_string()), "{err}");

    // Truncation, and missing / unexpected files.
    let short = dir.path().join("short.bin");
    std::fs::write(&short, &on_disk[..1000]).unwrap();
    let err = compare_files(&f, &short).unwrap_err().0;
    assert!(err.contains("has 1000 bytes"), "{err}");
    std::fs::remove_file(b.join("empty.bin")).unwrap();
    payload::write_tree(&b, &[FileSpec::new("extra.bin", 1)], 1).unwrap();
    let err = compare_trees(&a, &b).unwrap_err().0;
    assert!(err.contains("missing [\"empty.bin\"]"), "{err}");
    assert!(err.contains("unexpected [\"extra.bin\"]"), "{err}");
    assert!(Path::new(&a).join("empty.bin").exists());
}

/// Single-file torrent, no usable tracker for the leecher: it finds the seeder through
/// `--connect` only. The seeder's upload limit applies to loopback peers, and a
/// `keep_seeding` leecher is still running after `DONE`.
#[test]
fn direct_connect_upload_limit_and_keep_seeding() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let len: u64 = 2 << 20;
    payload::write_file(&src.join("single.bin"), len, 11).unwrap();
    let torrent = dir.path().join("single.torrent");
    let ih = make_torrent(
        &src.join("single.bin"),
        &torrent,
        &tracker.url(),
        Some(32 * 1024),
    );

    let mut seed_args = SeedArgs::new(&torrent, &src, SEEDER_IP, free_port_on(SEEDER_IP));
    seed_args.upload_limit = Some(1 << 20);
    seed_args.seed_mode = true;
    let seeder = LtPeer::seed(&seed_args);

    // From now on the tracker refuses everyone: the leecher can only dial.
    tracker.set_failure(Some("closed"));
    let dst = dir.path().join("dst");
    let mut leech_args = LeechArgs::new(&torrent, &dst, LEECHER_IP, free_port_on(LEECHER_IP));
    leech_args.connect = vec![std::net::SocketAddr::V4(seeder.addr())];
    leech_args.keep_seeding = true;
    let start = Instant::now();
    let mut leecher = LtPeer::leech(&leech_args);
    leecher
        .wait_done(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n--- seeder stderr ---\n{}", seeder.stderr()));
    let took = start.elapsed();
    compare_files(&src.join("single.bin"), &dst.join("single.bin")).unwrap();
    // Unlimited, this whole leech takes ~0.8 s (start-up, dial, 2 MiB in ~10 ms); at the
    // limit (libtorrent delivers ~0.6 of it to a single loopback peer) it takes ~4 s.
    assert!(
        took >= Duration::from_secs(2),
        "2 MiB at a 1 MiB/s upload limit took only {took:?}"
    );
    assert!(
        tracker
            .announces_for(&ih)
            .iter()
            .filter(|a| a.addr.ip() == &LEECHER_IP)
            .all(|a| a.failure.is_some()),
        "the leecher never got a peer list:\n{}",
        tracker.describe()
    );
    assert!(
        leecher.is_running(),
        "keep_seeding: still running after DONE"
    );
    let status = leecher.stop().expect("leecher exited");
    assert!(status.success(), "leecher exit status {status}");
}

/// A panicking test still ends its peers (LtPeer's Drop runs during unwinding).
#[test]
fn peers_are_ended_when_a_test_panics() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let data = dir.path().join("p.bin");
    payload::write_file(&data, 50_000, 3).unwrap();
    let torrent = dir.path().join("p.torrent");
    make_torrent(&data, &torrent, &tracker.url(), None);
    let args = SeedArgs::new(&torrent, dir.path(), SEEDER_IP, free_port_on(SEEDER_IP));
    let pid = std::sync::Mutex::new(None);
    let result = std::panic::catch_unwind(|| {
        let seeder = LtPeer::seed(&args);
        *pid.lock().unwrap() = Some(seeder.pid());
        panic!("deliberate panic with a live seeder");
    });
    assert!(result.is_err());
    let pid = pid.lock().unwrap().expect("seeder started");
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "seeder process {pid} survived the panic"
    );
}
