//! Scrape (BEP 48): once a tracker answers an announce, ratorrent asks it for the torrent's
//! totals and the Trackers panel shows seeds, leechers and completed downloads.

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::{LtPeer, SeedArgs, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{AddRequest, AddSource};
use ratorrent::engine::session;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trackers_panel_shows_what_a_scrape_says() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let data = dir.path().join("src").join("scrape.bin");
    std::fs::create_dir_all(data.parent().unwrap()).unwrap();
    common::payload::write_file(&data, 1 << 20, 0x5c).unwrap();
    let torrent = dir.path().join("scrape.torrent");
    make_torrent(&data, &torrent, &tracker.url(), Some(64 * 1024));
    let ip = Ipv4Addr::new(127, 0, 0, 2);
    let _seeder = LtPeer::seed(&SeedArgs::new(
        &torrent,
        data.parent().unwrap(),
        ip,
        free_port_on(ip),
    ));
    let state = temp_dir();
    let config = ratorrent::config::engine::EngineConfig {
        download_dir: dir.path().join("dst"),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    };
    let h = session::start_with_state(config, state.path())
        .await
        .unwrap();
    let id = h
        .client
        .add(AddRequest::new(AddSource::File(torrent.clone())))
        .await
        .unwrap();
    h.client.focus(Some(id)).await.unwrap();
    let scraped = |s: &ratorrent::api::Snapshot| {
        s.detail
            .as_ref()
            .and_then(|d| d.trackers.iter().find(|t| t.downloaded.is_some()))
            .cloned()
    };
    let got = tokio::time::timeout(
        Duration::from_secs(30),
        h.client.wait_for(|s| scraped(s).is_some()),
    )
    .await
    .map(|s| scraped(&s.unwrap()).unwrap());
    let trackers = format!(
        "{:#?}",
        h.client
            .snapshot()
            .detail
            .as_ref()
            .map(|d| d.trackers.clone())
    );
    h.shutdown().await.unwrap();
    let row = got.unwrap_or_else(|_| panic!("no scrape figures shown: {trackers}"));
    assert!(
        row.seeds >= Some(1),
        "the libtorrent seeder is counted: {row:?}"
    );
    assert!(tracker.scrapes() >= 1, "the figures came from a scrape");
}
