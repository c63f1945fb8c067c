//! Peer exchange (BEP 11) with real libtorrent peers on loopback, both ways: ratorrent
//! learns a peer that only a libtorrent seeder's `ut_pex` message names, and two libtorrent
//! leechers that know only a ratorrent seeder learn each other from its `ut_pex` messages.

mod common;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use common::rat::Rat;
use common::{
    LeechArgs, LtPeer, SeedArgs, TestTracker, free_port, free_port_on, make_torrent, temp_dir,
};
use ratorrent::api::{AddRequest, AddSource, PeerSource};
use ratorrent::engine::session;

const SEEDER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const OTHER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 4);
const OTHER2_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 5);

/// 16 MiB in 64 KiB pieces.
fn payload(dir: &Path, tracker: &str) -> (std::path::PathBuf, std::path::PathBuf, String) {
    let data = dir.join("src").join("pex.bin");
    std::fs::create_dir_all(data.parent().unwrap()).unwrap();
    common::payload::write_file(&data, 16 << 20, 0x9e11).unwrap();
    let torrent = dir.join("pex.torrent");
    let ih = make_torrent(&data, &torrent, tracker, Some(64 * 1024));
    (data, torrent, ih.to_hex())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ratorrent_learns_a_peer_named_only_by_a_libtorrent_seeders_pex() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let (data, torrent, ih) = payload(dir.path(), &tracker.url());
    // the seeder, slow enough that the download is still going when its ut_pex comes
    let mut sa = SeedArgs::new(
        &torrent,
        data.parent().unwrap(),
        SEEDER_IP,
        free_port_on(SEEDER_IP),
    );
    sa.upload_limit = Some(256 * 1024);
    sa.extra = vec!["--pex".into()];
    let seeder = LtPeer::seed(&sa);
    // a slow leecher connected to the seeder; it offers no ut_pex, so it never learns of
    // ratorrent and never dials it: the only way ratorrent finds it is the seeder's list
    let mut la = LeechArgs::new(
        &torrent,
        &dir.path().join("other"),
        OTHER_IP,
        free_port_on(OTHER_IP),
    );
    la.download_limit = Some(64 * 1024);
    la.timeout_s = 120;
    la.connect = vec![SocketAddr::V4(seeder.addr())];
    let other = LtPeer::leech(&la);
    // ratorrent: a magnet naming only the seeder, no tracker
    let state = temp_dir();
    let config = ratorrent::config::engine::EngineConfig {
        download_dir: dir.path().join("dst"),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    };
    assert!(config.pex, "peer exchange is on by default");
    let h = session::start_with_state(config, state.path())
        .await
        .unwrap();
    let link = format!("magnet:?xt=urn:btih:{ih}&x.pe={}", seeder.addr());
    let id = h
        .client
        .add(AddRequest::new(AddSource::Magnet(link)))
        .await
        .unwrap();
    h.client.focus(Some(id)).await.unwrap();
    let other_addr = SocketAddr::V4(other.addr());
    let found = tokio::time::timeout(
        Duration::from_secs(60),
        h.client.wait_for(|s| {
            s.detail
                .as_ref()
                .is_some_and(|d| d.peers.iter().any(|p| p.addr == other_addr))
        }),
    )
    .await
    .map(|s| {
        let d = s.unwrap().detail.clone().unwrap();
        let p = d.peers.iter().find(|p| p.addr == other_addr).unwrap();
        (p.source, d.peer_sources.clone())
    });
    let detail = format!(
        "{:#?}",
        h.client.snapshot().detail.as_ref().map(|d| &d.peers)
    );
    h.shutdown().await.unwrap();
    match found {
        Ok((source, counts)) => {
            assert_eq!(
                source,
                PeerSource::Pex,
                "the other leecher was reached through ut_pex"
            );
            let pex = counts.iter().find(|c| c.source == PeerSource::Pex);
            assert!(
                pex.is_some_and(|c| c.known >= 1 && c.connected >= 1),
                "the detail view counts the peers ut_pex gave: {counts:?}"
            );
            assert!(
                counts
                    .iter()
                    .any(|c| c.source == PeerSource::Magnet && c.known >= 1),
                "and the one x.pe named: {counts:?}"
            );
        }
        Err(_) => panic!(
            "ratorrent never connected to {} (named only by the seeder's ut_pex); peers: {detail}",
            other.addr()
        ),
    }
}

#[test]
fn libtorrent_leechers_learn_each_other_from_a_ratorrent_seeders_pex() {
    let dir = temp_dir();
    // nobody answers this tracker: the leechers know only ratorrent
    let (data, torrent, _ih) = payload(dir.path(), "http://127.0.0.1:9/announce");
    let port = free_port();
    let mut rat = Rat::download(&torrent, data.parent().unwrap(), port, &["--seed"]);
    rat.wait_stdout("seeding until interrupted", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}", rat.output()));
    let leecher = |ip: Ipv4Addr, name: &str| {
        let mut la = LeechArgs::new(&torrent, &dir.path().join(name), ip, free_port_on(ip));
        la.download_limit = Some(128 * 1024);
        la.timeout_s = 120;
        la.connect = vec![SocketAddr::from((Ipv4Addr::LOCALHOST, port))];
        la.extra = vec!["--pex".into(), "--report-peers".into()];
        LtPeer::leech(&la)
    };
    let mut x = leecher(OTHER_IP, "x");
    let mut y = leecher(OTHER2_IP, "y");
    // within a sweep (10 s) of both being connected, ratorrent tells each about the other;
    // whichever dials first reports the other with source "pex"
    let want_y = format!("PEER {}", y.addr());
    let want_x = format!("PEER {}", x.addr());
    let deadline = std::time::Instant::now() + Duration::from_secs(45);
    let mut lines = Vec::new();
    while std::time::Instant::now() < deadline {
        for (peer, want) in [(&mut x, &want_y), (&mut y, &want_x)] {
            if let Ok(l) = peer.wait_line(want, Duration::from_millis(500)) {
                lines.push(l);
            }
        }
        if lines
            .iter()
            .any(|l| l.ends_with("pex") || l.contains("pex,") || l.contains(",pex"))
        {
            break;
        }
    }
    rat.terminate();
    assert!(
        lines.iter().any(|l| l
            .split(' ')
            .nth(2)
            .is_some_and(|s| s.split(',').any(|s| s == "pex"))),
        "no leecher learned the other through ratorrent's ut_pex; lines {lines:?}\n{}\n{}\n{}",
        x.stderr(),
        y.stderr(),
        rat.output()
    );
}
