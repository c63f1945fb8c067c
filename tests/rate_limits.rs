//! Session-wide rate limits hold against real libtorrent peers (lower bounds on duration
//! only: a loaded machine can make a transfer slower, never faster).

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::payload::{self, FileSpec};
use common::rat::Rat;
use common::{
    LeechArgs, LtPeer, SeedArgs, TestTracker, free_port, free_port_on, make_torrent, temp_dir,
};

const LIMIT: u64 = 4 << 20; // 4 MiB/s
const SIZE: u64 = 12 << 20; // 12 MiB: ≥ 2.75 s at the limit, after a 1 MiB burst

#[test]
fn download_rate_limit_is_respected() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("f.bin", SIZE)], 1).unwrap();
    let torrent = dir.path().join("f.torrent");
    make_torrent(
        &src.join("f.bin"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    let ip = Ipv4Addr::new(127, 0, 0, 2);
    let _seeder = LtPeer::seed(&SeedArgs::new(&torrent, &src, ip, free_port_on(ip)));

    let dst = dir.path().join("dst");
    let port = free_port().to_string();
    let start = Instant::now();
    let mut rat = Rat::spawn(
        &[
            "download",
            torrent.to_str().unwrap(),
            "-o",
            dst.to_str().unwrap(),
            "--port",
            &port,
        ],
        &format!("download_rate_limit = {LIMIT}\n"),
    );
    let st = rat.wait(Duration::from_secs(60)).unwrap();
    let took = start.elapsed();
    assert!(st.success(), "{}", rat.output());
    common::compare_files(&src.join("f.bin"), &dst.join("f.bin")).unwrap();
    assert!(
        took >= Duration::from_millis(2500),
        "12 MiB at 4 MiB/s took only {took:?}"
    );
}

#[test]
fn upload_rate_limit_is_respected() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("f.bin", SIZE)], 2).unwrap();
    let torrent = dir.path().join("f.torrent");
    let ih = make_torrent(
        &src.join("f.bin"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    let port = free_port();
    let port_s = port.to_string();
    let rat = Rat::spawn(
        &[
            "download",
            torrent.to_str().unwrap(),
            "-o",
            src.to_str().unwrap(),
            "--port",
            &port_s,
            "--seed",
        ],
        &format!("upload_rate_limit = {LIMIT}\n"),
    );
    tracker
        .wait_for_announce(Duration::from_secs(30), |a| {
            a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));

    let ip = Ipv4Addr::new(127, 0, 0, 3);
    let start = Instant::now();
    let mut leecher = LtPeer::leech(&LeechArgs::new(
        &torrent,
        &dir.path().join("dst"),
        ip,
        free_port_on(ip),
    ));
    leecher
        .wait_done(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    let took = start.elapsed();
    common::compare_files(&src.join("f.bin"), &dir.path().join("dst").join("f.bin")).unwrap();
    assert!(
        took >= Duration::from_millis(2500),
        "12 MiB at 4 MiB/s took only {took:?}"
    );
}

/// A limit set on one torrent at run time (the TUI's per-torrent limit) holds against a real
/// leecher, with no session-wide limit; the row shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_torrent_upload_limit_set_live_is_respected() {
    use ratorrent::api::AddRequest;
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    payload::write_tree(&src, &[FileSpec::new("f.bin", SIZE)], 3).unwrap();
    let torrent = dir.path().join("f.torrent");
    let ih = make_torrent(
        &src.join("f.bin"),
        &torrent,
        &tracker.url(),
        Some(256 * 1024),
    );
    let config = ratorrent::config::engine::EngineConfig {
        download_dir: src.clone(),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    };
    let h = ratorrent::engine::session::start(config).await.unwrap();
    let id = h
        .client
        .add(AddRequest::new(torrent.clone()))
        .await
        .unwrap();
    h.client.set_torrent_limits(id, 0, LIMIT).await.unwrap();
    let port = h.listen_port;
    let tracker = std::sync::Arc::new(tracker);
    let t2 = tracker.clone();
    tokio::task::spawn_blocking(move || {
        t2.wait_for_announce(Duration::from_secs(30), |a| {
            a.info_hash == ih && a.addr.port() == port && a.left == Some(0)
        })
        .unwrap();
    })
    .await
    .unwrap();
    let dst = dir.path().join("dst");
    let d2 = dst.clone();
    let torrent2 = torrent.clone();
    let took = tokio::task::spawn_blocking(move || {
        let ip = Ipv4Addr::new(127, 0, 0, 4);
        let start = Instant::now();
        let mut leecher = LtPeer::leech(&LeechArgs::new(&torrent2, &d2, ip, free_port_on(ip)));
        leecher.wait_done(Duration::from_secs(60)).unwrap();
        start.elapsed()
    })
    .await
    .unwrap();
    common::compare_files(&src.join("f.bin"), &dst.join("f.bin")).unwrap();
    assert!(
        took >= Duration::from_millis(2500),
        "12 MiB at a 4 MiB/s torrent limit took only {took:?}"
    );
    let snap = h.client.snapshot();
    assert_eq!(snap.row(id).unwrap().up_limit, LIMIT);
    h.shutdown().await.unwrap();
}
