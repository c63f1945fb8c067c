//! Web seeds (BEP 19): torrents made by libtorrent with a `url-list`, served by an HTTP
//! server with Range support on loopback ([`common::webseed::WebSeedServer`]).
//! - The server as the only source: single- and multi-file torrents (odd sizes, empty
//!   files, padding files, names that need percent-encoding) download byte-exact with
//!   `ratorrent download`.
//! - A server that sends another range, data of the wrong bytes, a 404 for one file, or a
//!   trickle: nothing corrupt is kept, a libtorrent seeder carries the download, and the
//!   error is in the snapshot (Trackers and Peers tabs, General).
//! - Hostile answers (a huge `Content-Length`, a body that never ends, a 200 with the
//!   whole file for part of it): refused, bounded, no panic.
//! - The session's download limit applies to web seeds.

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::client::wait_row;
use common::payload::{self, FileSpec};
use common::rat::Rat;
use common::webseed::{Fault, WebSeedServer};
use common::{LtPeer, SeedArgs, TestTracker, free_port, free_port_on, temp_dir};
use ratorrent::api::{
    AddRequest, PeerSource, TorrentDetail, TorrentId, TorrentState, WebSeedState,
};
use ratorrent::config::engine::{DhtConfig, EngineConfig, WebSeedConfig};
use ratorrent::engine::session::{self, SessionHandle};

/// The multi-file layout of the download tests, with names that need percent-encoding.
fn multi_layout() -> Vec<FileSpec> {
    let mut v = payload::multi_file_layout(3 << 20);
    v.push(FileSpec::new("with space/é & #1%.bin", 77_777));
    v
}

/// A payload under `dir/src/NAME`.
struct Made {
    /// The folder the server serves (holds the file, or the top folder).
    served: PathBuf,
    /// The payload: the file, or the top folder.
    data: PathBuf,
}

fn make(dir: &Path, name: &str, layout: &[FileSpec]) -> Made {
    let served = dir.join("src");
    let data = if layout.len() == 1 {
        payload::write_tree(&served, &[FileSpec::new(name, layout[0].len)], 0x5eed).unwrap();
        served.join(name)
    } else {
        payload::write_tree(&served.join(name), layout, 0x5eed).unwrap();
        served.join(name)
    };
    Made { served, data }
}

fn same(made: &Made, dst: &Path) {
    let name = made.data.file_name().unwrap();
    if made.data.is_dir() {
        common::compare_trees(&made.data, &dst.join(name)).unwrap();
    } else {
        common::compare_files(&made.data, &dst.join(name)).unwrap();
    }
}

#[test]
fn a_single_file_from_a_web_seed_alone_is_byte_exact() {
    let dir = temp_dir();
    // the server holds the file in a folder; the URL names the folder (ends in /), so the
    // torrent's name is appended (BEP 19)
    let server_root = dir.path().join("srv");
    let made = make(
        dir.path(),
        "odd size.bin",
        &[FileSpec::new("x", 3 * 1024 * 1024 + 12_345)],
    );
    std::fs::create_dir_all(server_root.join("pub")).unwrap();
    std::fs::rename(&made.data, server_root.join("pub/odd size.bin")).unwrap();
    let server = WebSeedServer::start(&server_root);
    // the torrent names the folder
    let torrent = dir.path().join("t.torrent");
    let data = server_root.join("pub/odd size.bin");
    common::lt::make_web_seed_torrent(
        &data,
        &torrent,
        "",
        Some(64 * 1024),
        false,
        &[format!("{}pub/", server.url())],
    );
    let dst = dir.path().join("dst");
    let mut rat = Rat::download(&torrent, &dst, free_port(), &["--no-dht"]);
    let st = rat.wait(Duration::from_secs(60)).unwrap();
    assert!(st.success(), "{st}\n{}", rat.output());
    common::compare_files(&data, &dst.join("odd size.bin")).unwrap();
    let reqs = server.requests();
    assert!(!reqs.is_empty());
    assert!(
        reqs.iter()
            .all(|r| r.path == "/pub/odd size.bin" && r.range.is_some()),
        "{reqs:?}"
    );
}

#[test]
fn a_multi_file_torrent_with_pads_and_empty_files_from_a_web_seed_alone_is_byte_exact() {
    for hybrid in [false, true] {
        let dir = temp_dir();
        let layout = multi_layout();
        let made = make(dir.path(), "set é", &layout);
        let server = WebSeedServer::start(&made.served);
        // no trailing slash: a multi-file torrent's URL is a folder all the same
        let torrent = dir.path().join("w.torrent");
        common::lt::make_web_seed_torrent(
            &made.data,
            &torrent,
            "",
            Some(32 * 1024),
            hybrid,
            &[server.url().trim_end_matches('/').to_owned()],
        );
        let dst = dir.path().join("dst");
        let mut rat = Rat::download(&torrent, &dst, free_port(), &["--no-dht"]);
        let st = rat.wait(Duration::from_secs(60)).unwrap();
        assert!(st.success(), "hybrid {hybrid}: {st}\n{}", rat.output());
        same(&made, &dst);
        let paths: std::collections::BTreeSet<String> =
            server.requests().into_iter().map(|r| r.path).collect();
        assert!(paths.contains("/set é/with space/é & #1%.bin"), "{paths:?}");
        assert!(
            !paths
                .iter()
                .any(|p| p.contains("empty") || p.contains(".pad")),
            "no request for empty or padding files: {paths:?}"
        );
        for f in ["empty.bin", "nested/a/empty_too.bin"] {
            assert_eq!(
                std::fs::metadata(dst.join("set é").join(f)).unwrap().len(),
                0
            );
        }
    }
}

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

async fn start(webseeds: WebSeedConfig, download_limit: u64) -> SessionHandle {
    let config = EngineConfig {
        listen_port: 0,
        dht: DhtConfig::off(),
        webseeds,
        download_rate_limit: download_limit,
        ..EngineConfig::default()
    };
    session::start(config).await.unwrap()
}

fn detail_of(h: &SessionHandle) -> Option<std::sync::Arc<TorrentDetail>> {
    h.client.snapshot().detail.clone()
}

/// Wait until the focused torrent's detail satisfies `ok`.
async fn wait_detail(
    h: &SessionHandle,
    what: &str,
    within: Duration,
    ok: impl Fn(&TorrentDetail) -> bool,
) -> std::sync::Arc<TorrentDetail> {
    let end = Instant::now() + within;
    loop {
        if let Some(d) = detail_of(h)
            && ok(&d)
        {
            return d;
        }
        assert!(
            Instant::now() < end,
            "{what}: not reached in {within:?}; detail {:#?}",
            detail_of(h).map(|d| (d.web_seeds.clone(), d.peer_sources.clone()))
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A 4 MiB multi-file torrent with a tracker and web seed `server`, a libtorrent seeder
/// at `limit` bytes/s, and a session downloading it with the web seed misbehaving as
/// `fault` for paths containing `part`. Waits until the web seed's trouble shows (`shows`)
/// in the detail, then for the download to complete byte-exact.
async fn fault_case(
    fault: Fault,
    part: &str,
    limit: u64,
    cfg: WebSeedConfig,
    shows: impl Fn(&TorrentDetail) -> bool,
) -> (std::sync::Arc<TorrentDetail>, TorrentDetail) {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let layout = vec![
        FileSpec::new("a.bin", 1_500_000),
        FileSpec::new("b/empty", 0),
        FileSpec::new("b/c.bin", 2_700_001),
    ];
    let made = make(dir.path(), "faulty", &layout);
    let server = WebSeedServer::start(&made.served);
    server.fault(part, fault);
    let torrent = dir.path().join("f.torrent");
    common::lt::make_web_seed_torrent(
        &made.data,
        &torrent,
        &tracker.url(),
        Some(64 * 1024),
        false,
        &[server.url()],
    );
    let mut args = SeedArgs::new(&torrent, &made.served, SEEDER_IP, free_port_on(SEEDER_IP));
    args.upload_limit = Some(limit);
    let _seeder = LtPeer::seed(&args);
    let h = start(cfg, 0).await;
    let dst = dir.path().join("dst");
    let id: TorrentId = h
        .client
        .add(AddRequest::new(torrent.clone()).download_dir(Some(dst.clone())))
        .await
        .unwrap();
    h.client.focus(Some(id)).await.unwrap();
    let troubled = wait_detail(
        &h,
        "the web seed's trouble shown",
        Duration::from_secs(60),
        &shows,
    )
    .await;
    let row = wait_row(&h.client, id, "complete", Duration::from_secs(120), |r| {
        r.state == TorrentState::Seeding || r.error.is_some()
    })
    .await;
    assert_eq!(row.state, TorrentState::Seeding, "{row:#?}");
    same(&made, &dst);
    let end = detail_of(&h).map(|d| (*d).clone()).unwrap();
    h.shutdown().await.unwrap();
    drop(server);
    (troubled, end)
}

fn quick() -> WebSeedConfig {
    WebSeedConfig {
        min_rate_window: 2,
        ..WebSeedConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_sending_another_range_is_refused_and_backed_off_while_a_peer_carries_on() {
    let (d, end) = fault_case(Fault::OtherRange(65_536), "", 1 << 20, quick(), |d| {
        d.web_seeds.first().is_some_and(|w| {
            w.state == WebSeedState::BackedOff
                && w.message
                    .as_deref()
                    .is_some_and(|m| m.contains("wrong Content-Range"))
        })
    })
    .await;
    let w = &d.web_seeds[0];
    assert!(w.retry_at.is_some(), "{w:?}");
    assert!(w.failures >= 1);
    assert_eq!(w.hash_fails, 0, "refused before a byte was used");
    // General's sources name the web seed; the peers came from the tracker
    assert!(
        d.peer_sources
            .iter()
            .any(|c| c.source == PeerSource::WebSeed && c.known == 1)
    );
    assert!(
        end.web_seeds[0].state != WebSeedState::Active,
        "stopped once complete"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_missing_on_the_server_comes_from_peers_and_the_others_from_the_server() {
    let (d, end) = fault_case(Fault::NotFound, "c.bin", 1 << 20, quick(), |d| {
        d.web_seeds
            .first()
            .is_some_and(|w| w.missing_files == 1 && w.message.is_some())
    })
    .await;
    let w = &d.web_seeds[0];
    let m = w.message.as_deref().unwrap();
    assert!(
        m.contains("c.bin") && m.contains("HTTP 404 Not Found"),
        "{m}"
    );
    assert_eq!(w.failures, 0, "a missing file does not back the server off");
    assert!(
        end.web_seeds[0].downloaded > 0,
        "a.bin came from the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickling_server_is_refused_after_the_window_while_a_peer_carries_on() {
    let (d, _) = fault_case(Fault::Trickle, "", 1 << 20, quick(), |d| {
        d.web_seeds
            .first()
            .is_some_and(|w| w.message.as_deref().is_some_and(|m| m.contains("too slow")))
    })
    .await;
    assert!(d.web_seeds[0].failures >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_sending_bad_data_is_dropped_after_three_failed_pieces() {
    // slow peer: the server gets to send (bad) pieces
    let (d, _) = fault_case(Fault::WrongBytes(7), "", 256 << 10, quick(), |d| {
        d.web_seeds
            .first()
            .is_some_and(|w| w.state == WebSeedState::Dropped)
    })
    .await;
    let w = &d.web_seeds[0];
    assert_eq!(w.hash_fails, w.max_hash_fails);
    assert!(w.bad_bytes >= 3 * 64 * 1024, "{w:?}");
    assert!(
        w.message
            .as_deref()
            .unwrap()
            .contains("failed their hash check")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_answers_are_refused_and_bounded() {
    for (fault, says) in [
        (Fault::HugeLength, "wrong Content-Length"),
        (Fault::Endless, "longer than"),
        (Fault::IgnoreRange, "ignored the Range request"),
    ] {
        let (d, _) = fault_case(fault.clone(), "", 1 << 20, quick(), |d| {
            d.web_seeds
                .first()
                .is_some_and(|w| w.message.as_deref().is_some_and(|m| m.contains(says)))
        })
        .await;
        assert_eq!(d.web_seeds[0].hash_fails, 0, "{fault:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_download_limit_applies_to_web_seeds() {
    let dir = temp_dir();
    let made = make(dir.path(), "limited.bin", &[FileSpec::new("x", 8 << 20)]);
    let server = WebSeedServer::start(&made.served);
    let torrent = dir.path().join("l.torrent");
    common::lt::make_web_seed_torrent(
        &made.data,
        &torrent,
        "",
        Some(64 * 1024),
        false,
        &[server.url()],
    );
    let h = start(WebSeedConfig::default(), 1 << 20).await;
    let dst = dir.path().join("dst");
    let started = Instant::now();
    let id = h
        .client
        .add(AddRequest::new(torrent).download_dir(Some(dst.clone())))
        .await
        .unwrap();
    let row = wait_row(&h.client, id, "complete", Duration::from_secs(60), |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    let took = started.elapsed();
    assert_eq!(row.state, TorrentState::Seeding);
    same(&made, &dst);
    // 8 MiB at 1 MiB/s: 8 s, less the limiter's first burst (a quarter second's worth) and
    // what the last requests had read ahead when the download completed (their debt is
    // left to the session's limiter, not slept off by the torrent)
    assert!(took >= Duration::from_millis(6_000), "took {took:?}");
    h.shutdown().await.unwrap();
}

/// The web seeds are kept in the session state (record format 8): a torrent added paused
/// comes back after a restart with its web seed listed before its .torrent is read, and
/// downloads from it when resumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_seeds_are_kept_across_a_restart() {
    let dir = temp_dir();
    let made = make(dir.path(), "kept.bin", &[FileSpec::new("x", 1_000_003)]);
    let server = WebSeedServer::start(&made.served);
    let torrent = dir.path().join("k.torrent");
    common::lt::make_web_seed_torrent(
        &made.data,
        &torrent,
        "",
        Some(32 * 1024),
        false,
        &[server.url()],
    );
    let state = dir.path().join("state");
    let config = || EngineConfig {
        listen_port: 0,
        dht: DhtConfig::off(),
        ..EngineConfig::default()
    };
    let dst = dir.path().join("dst");
    let h = session::start_with_state(config(), &state).await.unwrap();
    let id = h
        .client
        .add(
            AddRequest::new(torrent)
                .download_dir(Some(dst.clone()))
                .paused(true),
        )
        .await
        .unwrap();
    wait_row(&h.client, id, "paused", Duration::from_secs(20), |r| {
        r.state == TorrentState::Paused
    })
    .await;
    assert!(
        server.requests().is_empty(),
        "a paused torrent asks nothing"
    );
    h.shutdown().await.unwrap();

    let h = session::start_with_state(config(), &state).await.unwrap();
    let id = h.client.snapshot().rows[0].id;
    h.client.focus(Some(id)).await.unwrap();
    let d = wait_detail(&h, "the web seed listed", Duration::from_secs(20), |d| {
        d.web_seeds.len() == 1
    })
    .await;
    assert_eq!(d.web_seeds[0].url, server.url());
    assert_eq!(d.web_seeds[0].state, WebSeedState::Idle);
    h.client.resume(id).await.unwrap();
    wait_row(&h.client, id, "complete", Duration::from_secs(60), |r| {
        r.state == TorrentState::Seeding
    })
    .await;
    same(&made, &dst);
    let d = wait_detail(&h, "idle once complete", Duration::from_secs(10), |d| {
        d.web_seeds[0].state == WebSeedState::Idle && d.web_seeds[0].downloaded >= 1_000_003
    })
    .await;
    assert_eq!(d.web_seeds[0].requests, 0);
    h.shutdown().await.unwrap();
}

/// `[webseeds] enabled = false`: the server is never asked, its row stays idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_seeds_switched_off_are_never_asked() {
    let dir = temp_dir();
    let made = make(dir.path(), "off.bin", &[FileSpec::new("x", 100_000)]);
    let server = WebSeedServer::start(&made.served);
    let torrent = dir.path().join("o.torrent");
    common::lt::make_web_seed_torrent(
        &made.data,
        &torrent,
        "",
        Some(16 * 1024),
        false,
        &[server.url()],
    );
    let off = WebSeedConfig {
        enabled: false,
        ..WebSeedConfig::default()
    };
    let h = start(off, 0).await;
    let id = h
        .client
        .add(AddRequest::new(torrent).download_dir(Some(dir.path().join("dst"))))
        .await
        .unwrap();
    h.client.focus(Some(id)).await.unwrap();
    let d = wait_detail(&h, "listed", Duration::from_secs(20), |d| {
        d.web_seeds.len() == 1
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let row = h.client.snapshot().row(id).cloned().unwrap();
    assert_eq!(row.state, TorrentState::Downloading);
    assert_eq!(row.web_seeds, 0);
    assert_eq!(d.web_seeds[0].state, WebSeedState::Idle);
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    h.shutdown().await.unwrap();
}

/// A magnet link's `ws=` web seeds are used once its metadata has come from a peer (here a
/// libtorrent seeder given by `x.pe`, slowed down so that the server does its share).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_magnet_links_web_seeds_are_used_once_the_metadata_has_come() {
    let dir = temp_dir();
    let made = make(
        dir.path(),
        "via magnet",
        &[
            FileSpec::new("a.bin", 1_200_000),
            FileSpec::new("b.bin", 900_001),
        ],
    );
    let server = WebSeedServer::start(&made.served);
    let torrent = dir.path().join("m.torrent");
    // the seeder says it is ready once a tracker heard it; the link names no tracker
    let tracker = TestTracker::start();
    let ih = common::lt::make_web_seed_torrent(
        &made.data,
        &torrent,
        &tracker.url(),
        Some(32 * 1024),
        false,
        &[],
    );
    let mut args = SeedArgs::new(&torrent, &made.served, SEEDER_IP, free_port_on(SEEDER_IP));
    args.upload_limit = Some(64 << 10);
    let _seeder = LtPeer::seed(&args);
    let link = format!(
        "magnet:?xt=urn:btih:{}&dn=via+magnet&x.pe={SEEDER_IP}:{}&ws={}",
        ih.to_hex(),
        args.port,
        server.url()
    );
    let h = start(WebSeedConfig::default(), 0).await;
    let dst = dir.path().join("dst");
    let id = h
        .client
        .add(
            AddRequest::new(ratorrent::api::AddSource::Magnet(link))
                .download_dir(Some(dst.clone())),
        )
        .await
        .unwrap();
    h.client.focus(Some(id)).await.unwrap();
    let row = wait_row(&h.client, id, "complete", Duration::from_secs(90), |r| {
        r.state == TorrentState::Seeding || r.error.is_some()
    })
    .await;
    assert_eq!(row.state, TorrentState::Seeding, "{row:#?}");
    same(&made, &dst);
    let d = wait_detail(&h, "the web seed listed", Duration::from_secs(10), |d| {
        d.web_seeds.len() == 1
    })
    .await;
    assert_eq!(d.web_seeds[0].url, server.url());
    assert!(
        d.web_seeds[0].downloaded > 1 << 20,
        "the server sent most of it: {:?}",
        d.web_seeds[0]
    );
    assert!(!server.requests().is_empty());
    h.shutdown().await.unwrap();
}
