//! "Skip hash check" (cross-seeding, issue 17) against real libtorrent peers over loopback:
//! complete data added without a check seeds at once (no check runs: the event log has no
//! check and the only state it went through is Seeding), keeps its unchecked pieces across
//! a restart, and a libtorrent leecher downloads it byte-exact while each piece is hashed
//! before its first upload; with one piece corrupt on disk, the leecher never receives the
//! corrupt bytes (libtorrent counts no failed byte), the torrent stops claiming that piece
//! and says why, downloads it again from a good seeder, and the leecher completes.

mod common;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::client::{wait_row, wait_rows};
use common::payload::{self, FileSpec};
use common::{LeechArgs, LtPeer, SeedArgs, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{
    AddRequest, Client, EngineEvent, EventKind, PieceState, TorrentId, TorrentState,
};
use ratorrent::config::engine::{DhtConfig, EngineConfig};
use ratorrent::engine::session::{self, SessionHandle};
use ratorrent::metainfo::InfoHash;

const PIECE: u64 = 32 * 1024;

fn config(download_dir: PathBuf) -> EngineConfig {
    EngineConfig {
        download_dir,
        listen_port: 0,
        dht: DhtConfig::off(),
        ..EngineConfig::default()
    }
}

/// A two-file payload (`pack/a.bin`, `pack/b.bin`) under `root` and its torrent, with its
/// info hash.
fn pack_with_hash(dir: &Path, root: &Path, tracker: &str) -> (PathBuf, InfoHash) {
    let files = [
        FileSpec::new("pack/a.bin", 45 * PIECE + 1000),
        FileSpec::new("pack/b.bin", 20 * PIECE - 300),
    ];
    payload::write_tree(root, &files, 41).unwrap();
    let torrent = dir.join("pack.torrent");
    let ih = make_torrent(&root.join("pack"), &torrent, tracker, Some(PIECE as u32));
    (torrent, ih)
}

/// [`pack_with_hash`] without the hash.
fn pack(dir: &Path, root: &Path, tracker: &str) -> PathBuf {
    pack_with_hash(dir, root, tracker).0
}

async fn events_of(client: &Client, id: TorrentId) -> Vec<EngineEvent> {
    client
        .recent_events()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.torrent == Some(id))
        .collect()
}

/// No check ran for torrent `id`: no check event, no check state, and Seeding the only
/// state it went through.
async fn assert_no_check(client: &Client, id: TorrentId) {
    let events = events_of(client, id).await;
    let states: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == EventKind::StateChanged)
        .map(|e| e.message.rsplit(": ").next().unwrap_or(""))
        .collect();
    assert_eq!(states, ["Seeding"], "{events:#?}");
    assert!(
        !events.iter().any(|e| e.kind == EventKind::Checked),
        "{events:#?}"
    );
}

async fn only_id(h: &SessionHandle) -> TorrentId {
    wait_rows(&h.client, "listed", Duration::from_secs(10), |rows| {
        rows.len() == 1
    })
    .await
    .rows[0]
        .id
}

/// The last `failed=N` (bytes that failed libtorrent's hash check) in a peer's status lines.
fn lt_failed_bytes(stderr: &str) -> Option<u64> {
    stderr.lines().rev().find_map(|l| {
        l.split_whitespace()
            .find_map(|w| w.strip_prefix("failed="))
            .and_then(|n| n.parse().ok())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_data_added_without_a_check_seeds_at_once_and_a_leecher_gets_every_byte() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let data = dir.path().join("data");
    let torrent = pack(dir.path(), &data, &tracker.url());
    let state = dir.path().join("state");

    let h = session::start_with_state(config(data.clone()), &state)
        .await
        .unwrap();
    let id = h
        .client
        .add(AddRequest::new(torrent.clone()).skip_check(true))
        .await
        .unwrap();
    let row = wait_row(&h.client, id, "seeding", Duration::from_secs(10), |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    assert_eq!(row.pieces_have, row.pieces_total);
    assert_eq!(row.unchecked, row.pieces_total, "all had, none checked");
    // complete as added: completed now (the Web API's `completion_on`; it read 0)
    let completed = row.completed_at.expect("a completion time");
    assert!(completed >= row.added_at, "{completed} < {}", row.added_at);
    assert_no_check(&h.client, id).await;
    h.shutdown().await.unwrap();

    // a restart keeps them unchecked, and trusts the files: no check either
    let h = session::start_with_state(config(data.clone()), &state)
        .await
        .unwrap();
    let id = only_id(&h).await;
    let row = wait_row(
        &h.client,
        id,
        "seeding again",
        Duration::from_secs(10),
        |r| r.state == TorrentState::Seeding,
    )
    .await;
    assert_eq!(row.unchecked, row.pieces_total, "kept across the restart");
    assert_eq!(row.completed_at, Some(completed), "kept across the restart");
    let events = events_of(&h.client, id).await;
    assert!(
        !events.iter().any(|e| e.kind == EventKind::Checked),
        "{events:#?}"
    );

    // a libtorrent leecher takes every piece: each is hashed before its first upload
    let upload_from = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let ip = Ipv4Addr::new(127, 0, 0, 41);
    let dst = dir.path().join("leech");
    let (t2, d2) = (torrent.clone(), dst.clone());
    let stderr = tokio::task::spawn_blocking(move || {
        let mut l = LtPeer::leech(&LeechArgs::new(&t2, &d2, ip, free_port_on(ip)));
        l.wait_done(Duration::from_secs(60)).unwrap();
        l.stderr()
    })
    .await
    .unwrap();
    payload::assert_trees_equal(&data, &dst);
    assert!(!stderr.contains("hash for piece"), "{stderr}");
    let row = wait_row(
        &h.client,
        id,
        "all verified",
        Duration::from_secs(10),
        |r| r.unchecked == 0,
    )
    .await;
    assert_eq!(
        (row.pieces_have, row.unchecked_failed),
        (row.pieces_total, 0)
    );
    assert!(row.uploaded >= 65 * PIECE - PIECE, "{}", row.uploaded);
    // the upload is the last activity (the Web API's `last_activity`)
    assert!(
        row.last_activity >= upload_from,
        "{} < {upload_from}",
        row.last_activity
    );
    let events = events_of(&h.client, id).await;
    assert!(
        events.iter().any(|e| e
            .message
            .contains("every piece added without a check has now been verified")),
        "{events:#?}"
    );
    h.shutdown().await.unwrap();

    // verified pieces stay verified
    let h = session::start_with_state(config(data.clone()), &state)
        .await
        .unwrap();
    let id = only_id(&h).await;
    let row = wait_row(&h.client, id, "seeding", Duration::from_secs(10), |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    assert_eq!(row.unchecked, 0);
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_piece_added_without_a_check_is_never_sent_and_is_downloaded_again() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let good = dir.path().join("good");
    let torrent = pack(dir.path(), &good, &tracker.url());
    // our copy has one byte wrong in piece 30 (in a.bin)
    let ours = dir.path().join("ours");
    payload::write_tree(
        &ours,
        &[
            FileSpec::new("pack/a.bin", 45 * PIECE + 1000),
            FileSpec::new("pack/b.bin", 20 * PIECE - 300),
        ],
        41,
    )
    .unwrap();
    let bad_piece = 30u32;
    let a = ours.join("pack/a.bin");
    let mut bytes = std::fs::read(&a).unwrap();
    bytes[(u64::from(bad_piece) * PIECE + 777) as usize] ^= 0x5a;
    std::fs::write(&a, &bytes).unwrap();

    let h = session::start(config(ours.clone())).await.unwrap();
    let id = h
        .client
        .add(AddRequest::new(torrent.clone()).skip_check(true))
        .await
        .unwrap();
    h.client.focus(Some(id)).await.unwrap();
    wait_row(&h.client, id, "seeding", Duration::from_secs(10), |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    assert_no_check(&h.client, id).await;
    let port = h.client.snapshot().global.listen_port;
    let rat: SocketAddr = (Ipv4Addr::LOCALHOST, port).into();

    // a libtorrent leecher: everything but the corrupt piece comes from us
    let ip = Ipv4Addr::new(127, 0, 0, 42);
    let leech_port = free_port_on(ip);
    let dst = dir.path().join("leech");
    let mut largs = LeechArgs::new(&torrent, &dst, ip, leech_port);
    largs.timeout_s = 120;
    let mut leecher = LtPeer::leech(&largs);
    let row = wait_row(
        &h.client,
        id,
        "the corrupt piece found",
        Duration::from_secs(40),
        |r| r.unchecked_failed == 1,
    )
    .await;
    let events = events_of(&h.client, id).await;
    assert!(
        events.iter().any(|e| e.kind == EventKind::HashFailed
            && e.message.contains(&format!(
                "piece {bad_piece} does not match its hash (added without a check): not sent"
            ))),
        "{events:#?}"
    );
    // it no longer claims the piece: incomplete, downloading
    assert_eq!(row.pieces_have, row.pieces_total - 1, "{row:?}");
    let row = wait_row(&h.client, id, "downloading", Duration::from_secs(5), |r| {
        r.state == TorrentState::Downloading
    })
    .await;
    assert!(row.unchecked < row.pieces_total);
    let snap = common::client::wait_snapshot(&h.client, "detail", Duration::from_secs(5), |s| {
        s.detail.as_ref().is_some_and(|d| d.id == id)
    })
    .await;
    let detail = snap.detail.clone().unwrap();
    assert_ne!(detail.pieces[bad_piece as usize], PieceState::Have);
    // the leecher got the rest from us, never the bad piece (no failed byte)
    let total = 65 * PIECE + 700;
    let row = wait_row(
        &h.client,
        id,
        "the rest sent",
        Duration::from_secs(30),
        |r| r.uploaded >= total - PIECE,
    )
    .await;
    println!(
        "sent {} of {total} bytes before a good seeder came",
        row.uploaded
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        lt_failed_bytes(&leecher.stderr()),
        Some(0),
        "{}",
        leecher.stderr()
    );
    assert!(!leecher.stderr().contains("hash for piece"));

    // a good seeder comes: we download the piece again, the leecher completes
    let sip = Ipv4Addr::new(127, 0, 0, 43);
    let mut sargs = SeedArgs::new(&torrent, &good, sip, free_port_on(sip));
    sargs.connect = vec![rat, SocketAddr::from((ip, leech_port))];
    let _seeder = LtPeer::seed(&sargs);
    let stderr = tokio::task::spawn_blocking(move || {
        leecher.wait_done(Duration::from_secs(60)).unwrap();
        leecher.stderr()
    })
    .await
    .unwrap();
    assert!(!stderr.contains("hash for piece"), "{stderr}");
    payload::assert_trees_equal(&good, &dst);
    let row = wait_row(
        &h.client,
        id,
        "seeding again",
        Duration::from_secs(30),
        |r| r.state == TorrentState::Seeding,
    )
    .await;
    assert_eq!(row.pieces_have, row.pieces_total);
    // our copy is whole now: the piece was written again
    payload::assert_trees_equal(&good, &ours);
    h.shutdown().await.unwrap();
}

/// `ratorrent download --skip-check --seed` on complete data: it announces itself as a seed
/// without hashing first, and a libtorrent leecher gets every byte.
#[test]
fn download_skip_check_seed_serves_a_libtorrent_leecher() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let data = dir.path().join("data");
    let (torrent, ih) = pack_with_hash(dir.path(), &data, &tracker.url());
    let (mut rat, port) = common::scenario::spawn_rat_on_free_port(|port| {
        common::rat::Rat::spawn(
            &[
                "download",
                torrent.to_str().unwrap(),
                "-o",
                data.to_str().unwrap(),
                "--seed",
                "--skip-check",
                "--port",
                &port.to_string(),
            ],
            "",
        )
    });
    tracker
        .wait_for_announce(Duration::from_secs(30), |a| {
            a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    let ip = Ipv4Addr::new(127, 0, 0, 44);
    let dst = dir.path().join("leech");
    let mut l = LtPeer::leech(&LeechArgs::new(&torrent, &dst, ip, free_port_on(ip)));
    l.wait_done(Duration::from_secs(60)).unwrap();
    payload::assert_trees_equal(&data, &dst);
    assert!(!l.stderr().contains("hash for piece"));
    rat.terminate();
    let out = rat.output();
    assert!(!out.contains("checked:"), "{out}");
}

/// Skip hash check on data that is not there (a wrong folder): the torrent claims nothing,
/// it stops with "files missing" before it announces a piece, and resuming checks the data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_check_on_missing_data_fails_as_files_missing_and_announces_nothing() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let (torrent, ih) = pack_with_hash(dir.path(), &dir.path().join("data"), &tracker.url());
    let empty = dir.path().join("elsewhere");
    std::fs::create_dir_all(&empty).unwrap();
    let h = session::start(config(empty.clone())).await.unwrap();
    let id = h
        .client
        .add(AddRequest::new(torrent).skip_check(true))
        .await
        .unwrap();
    let row = wait_row(&h.client, id, "failed", Duration::from_secs(10), |r| {
        r.state == TorrentState::Error
    })
    .await;
    let e = row.error.expect("an error");
    assert_eq!(
        e.kind,
        ratorrent::api::TorrentErrorKind::FilesMissing,
        "{e:?}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        tracker.announces_for(&ih).is_empty(),
        "nothing announced: {}",
        tracker.describe()
    );
    // resuming checks what is there (nothing) and downloads
    h.client.resume(id).await.unwrap();
    let row = wait_row(&h.client, id, "downloading", Duration::from_secs(10), |r| {
        r.state == TorrentState::Downloading
    })
    .await;
    assert_eq!((row.pieces_have, row.unchecked), (0, 0), "{row:?}");
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_data_found_by_the_check_at_add_has_a_completion_time() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let data = dir.path().join("data");
    let torrent = pack(dir.path(), &data, &tracker.url());
    let h = session::start_with_state(config(data.clone()), &dir.path().join("state"))
        .await
        .unwrap();
    let id = h.client.add(AddRequest::new(torrent)).await.unwrap();
    let row = wait_row(&h.client, id, "seeding", Duration::from_secs(30), |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    assert_eq!(row.pieces_have, row.pieces_total);
    let completed = row.completed_at.expect("a completion time");
    assert!(completed >= row.added_at, "{completed} < {}", row.added_at);
    h.shutdown().await.unwrap();
}
