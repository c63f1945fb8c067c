//! Magnet links against real libtorrent peers (loopback): ratorrent fetches the metadata
//! (BEP 9 over BEP 10) from a libtorrent seeder found through a tracker or named by `x.pe`,
//! then the data, byte-exact; libtorrent fetches the metadata from a ratorrent seeder; the
//! metadata is kept in the session state, so a restart does not fetch it again.

mod common;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use common::payload::{self, FileSpec};
use common::rat::Rat;
use common::{
    LeechArgs, LtPeer, SeedArgs, TestTracker, compare_trees, free_port, free_port_on, make_torrent,
    temp_dir,
};
use ratorrent::api::{AddRequest, AddSource, TorrentRow, TorrentState};
use ratorrent::engine::session::{self, SessionHandle};
use ratorrent::metainfo::InfoHash;

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const LEECHER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

/// 700 files with long names: an info dictionary of several 16 KiB metadata pieces.
fn layout() -> Vec<FileSpec> {
    (0..700)
        .map(|i| {
            FileSpec::new(
                format!(
                    "folder-{:02}/a-rather-long-file-name-number-{i:04}.bin",
                    i / 30
                ),
                1000 + (i as u64 * 7919) % 20_000,
            )
        })
        .collect()
}

struct Swarm {
    _dir: tempfile::TempDir,
    data: std::path::PathBuf,
    torrent: std::path::PathBuf,
    dst: std::path::PathBuf,
    info_hash: InfoHash,
    tracker: TestTracker,
}

fn swarm() -> Swarm {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let data = src.join("payload");
    payload::write_tree(&data, &layout(), 0x3a9).unwrap();
    let torrent = dir.path().join("payload.torrent");
    let info_hash = make_torrent(&data, &torrent, &tracker.url(), Some(16 * 1024));
    let meta = ratorrent::metainfo::Metainfo::from_file(&torrent).unwrap();
    assert!(
        meta.info_bytes.len() > 3 * 16 * 1024,
        "the info dictionary spans several metadata pieces ({} bytes)",
        meta.info_bytes.len()
    );
    Swarm {
        dst: dir.path().join("dst"),
        _dir: dir,
        data,
        torrent,
        info_hash,
        tracker,
    }
}

fn seeder(s: &Swarm) -> LtPeer {
    LtPeer::seed(&SeedArgs::new(
        &s.torrent,
        s.data.parent().unwrap(),
        SEEDER_IP,
        free_port_on(SEEDER_IP),
    ))
}

#[test]
fn magnet_with_a_tracker_downloads_from_libtorrent() {
    let s = swarm();
    let _seeder = seeder(&s);
    let link = format!(
        "magnet:?xt=urn:btih:{}&dn=payload&tr={}",
        s.info_hash.to_hex(),
        urlencode(&s.tracker.url())
    );
    let mut rat = Rat::download(Path::new(&link), &s.dst, free_port(), &[]);
    let status = rat.wait(Duration::from_secs(90)).unwrap();
    assert!(
        status.success(),
        "ratorrent exited with {status}\n{}",
        rat.output()
    );
    compare_trees(&s.data, &s.dst.join("payload")).unwrap();
    let out = rat.output();
    assert!(out.contains("Fetching metadata"), "{out}");
    assert!(out.contains("complete: payload"), "{out}");
}

#[test]
fn magnet_with_only_a_peer_address_downloads_from_libtorrent() {
    let s = swarm();
    let seeder = seeder(&s);
    // no tracker, no DHT: the only way to the swarm is x.pe; the empty, repeated and unknown
    // parameters around it are ignored (issue 16 item 6)
    let link = format!(
        "magnet:?tr=&xt=urn:btih:{}&x.pe=&X.PE={}&x.pe={1}&so=&dn=&foo=bar&xt=urn:ed2k:00&tr",
        // base32, to cover the other spelling end to end
        data_encoding::BASE32_NOPAD.encode(&s.info_hash.0),
        seeder.addr()
    );
    let mut rat = Rat::download(Path::new(&link), &s.dst, free_port(), &[]);
    let status = rat.wait(Duration::from_secs(90)).unwrap();
    assert!(
        status.success(),
        "ratorrent exited with {status}\n{}",
        rat.output()
    );
    compare_trees(&s.data, &s.dst.join("payload")).unwrap();
}

/// Issue 15 item 6: while the magnet link's peer sends, headless progress lines never say
/// "waiting for incoming peers"; before any peer is connected they name the sources in
/// effect (the magnet link's peer).
#[test]
fn headless_progress_describes_the_magnet_peer_not_waiting_for_incoming() {
    let s = swarm();
    let seeder = seeder(&s);
    let link = format!(
        "magnet:?xt=urn:btih:{}&dn=payload&x.pe={}",
        s.info_hash.to_hex(),
        seeder.addr()
    );
    let port = free_port().to_string();
    let dst = s.dst.to_str().unwrap().to_owned();
    // slow enough for several progress lines while the peer sends
    let mut rat = Rat::spawn(
        &["download", &link, "-o", &dst, "--port", &port],
        "download_rate_limit = 1048576",
    );
    let status = rat.wait(Duration::from_secs(90)).unwrap();
    let out = rat.output();
    assert!(status.success(), "ratorrent exited with {status}\n{out}");
    assert!(
        out.matches("Downloading").count() >= 2,
        "several progress lines while downloading:\n{out}"
    );
    assert!(!out.contains("waiting for incoming peers"), "{out}");
    compare_trees(&s.data, &s.dst.join("payload")).unwrap();
}

#[test]
fn libtorrent_fetches_the_metadata_from_a_ratorrent_seeder() {
    let s = swarm();
    // ratorrent seeds the complete data (found complete by its check)
    let port = free_port();
    let mut rat = Rat::download(&s.torrent, s.data.parent().unwrap(), port, &["--seed"]);
    rat.wait_stdout("seeding until interrupted", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    // libtorrent knows only the magnet link and our address
    let save = s.dst.clone();
    let link = format!("magnet:?xt=urn:btih:{}&dn=payload", s.info_hash.to_hex());
    let mut args = LeechArgs::new(&s.torrent, &save, LEECHER_IP, free_port_on(LEECHER_IP));
    args.magnet = Some(link);
    args.connect = vec![SocketAddr::from((Ipv4Addr::LOCALHOST, port))];
    let mut leecher = LtPeer::leech(&args);
    leecher
        .wait_line("METADATA", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", leecher.stderr(), rat.output()));
    leecher
        .wait_done(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", leecher.stderr(), rat.output()));
    compare_trees(&s.data, &save.join("payload")).unwrap();
    rat.terminate();
}

fn config(dir: &Path) -> ratorrent::config::engine::EngineConfig {
    ratorrent::config::engine::EngineConfig {
        download_dir: dir.to_path_buf(),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    }
}

async fn add_magnet(h: &SessionHandle, link: &str) -> ratorrent::api::TorrentId {
    let request = AddRequest::new(AddSource::Magnet(link.to_string()));
    h.client.add(request).await.unwrap()
}

async fn wait_rows(
    h: &SessionHandle,
    what: &str,
    ok: impl Fn(&[std::sync::Arc<TorrentRow>]) -> bool,
) {
    common::client::wait_rows(&h.client, what, Duration::from_secs(60), ok).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_after_the_metadata_arrived_does_not_fetch_it_again() {
    let s = swarm();
    let mut seeder = seeder(&s);
    let state = temp_dir();
    let h = session::start_with_state(config(&s.dst), state.path())
        .await
        .unwrap();
    let link = format!(
        "magnet:?xt=urn:btih:{}&dn=from-the-link&x.pe={}",
        s.info_hash.to_hex(),
        seeder.addr()
    );
    add_magnet(&h, &link).await;
    // a second magnet nobody can serve: it must come back still fetching, with its name
    let lonely = "magnet:?xt=urn:btih:0123456789abcdef0123456789abcdef01234567&dn=nobody+has+it";
    add_magnet(&h, lonely).await;
    wait_rows(&h, "fetching shown", |rows| {
        rows.iter()
            .any(|r| r.name == "nobody has it" && r.state == TorrentState::FetchingMetadata)
    })
    .await;
    wait_rows(&h, "downloaded", |rows| {
        rows.iter()
            .any(|r| r.name == "payload" && r.state == TorrentState::Seeding && r.pieces_total > 0)
    })
    .await;
    h.shutdown().await.unwrap();
    assert!(
        state
            .path()
            .join("torrents")
            .join(format!("{}.torrent", s.info_hash.to_hex()))
            .exists(),
        "the fetched metadata is kept as a .torrent in the state folder"
    );
    // no peer at all now: whatever the new session knows comes from the state
    seeder.stop();
    let h = session::start_with_state(config(&s.dst), state.path())
        .await
        .unwrap();
    wait_rows(&h, "restored with its metadata", |rows| {
        rows.iter().any(|r| {
            r.name == "payload"
                && r.pieces_total > 0
                && r.size > 0
                && r.pieces_have == r.pieces_total
                && r.state == TorrentState::Seeding
        }) && rows
            .iter()
            .any(|r| r.name == "nobody has it" && r.state == TorrentState::FetchingMetadata)
    })
    .await;
    h.shutdown().await.unwrap();
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A magnet link's `so=` (select only, BEP 53) downloads just those files, and `download`
/// exits 0 once they are verified (it waited for the skipped files' pieces for ever).
#[test]
fn magnet_select_only_downloads_its_files_and_download_exits() {
    let s = swarm();
    let seeder = seeder(&s);
    let meta = ratorrent::metainfo::Metainfo::from_file(&s.torrent).unwrap();
    let link = format!(
        "magnet:?xt=urn:btih:{}&dn=payload&x.pe={}&so=0-2,5",
        s.info_hash.to_hex(),
        seeder.addr()
    );
    let mut rat = Rat::download(Path::new(&link), &s.dst, free_port(), &[]);
    let status = rat.wait(Duration::from_secs(90)).unwrap();
    assert!(
        status.success(),
        "ratorrent exited with {status}\n{}",
        rat.output()
    );
    for i in [0, 1, 2, 5] {
        let rel = &meta.files[i].path;
        let src = s.data.parent().unwrap().join(rel);
        let got = s.dst.join(rel);
        assert_eq!(
            std::fs::read(&src).unwrap(),
            std::fs::read(&got).unwrap_or_default(),
            "{}",
            rel.display()
        );
    }
    assert!(
        rat.output().contains("complete: payload"),
        "{}",
        rat.output()
    );
}
