//! Scrape (BEP 48): once a tracker answers an announce, ratorrent asks it for the torrent's
//! totals and the Trackers panel shows seeds, leechers and completed downloads.

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::{LtPeer, SeedArgs, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{AddRequest, AddSource, Command};
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
    let config = ratorrent::config::Config {
        download_dir: dir.path().join("dst"),
        listen_port: 0,
        dht: ratorrent::config::DhtConfig::off(),
        ..ratorrent::config::Config::default()
    };
    let h = session::start_with_state(config, state.path())
        .await
        .unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    h.commands
        .send(Command::Add(
            AddRequest {
                source: AddSource::File(torrent.clone()),
                download_dir: None,
                paused: false,
                seed: true,
            },
            Some(tx),
        ))
        .await
        .unwrap();
    let id = rx.await.unwrap().unwrap();
    h.commands.send(Command::Focus(Some(id))).await.unwrap();
    let mut snaps = h.snapshots.clone();
    let got = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            {
                let s = snaps.borrow_and_update();
                if let Some(t) = s
                    .detail
                    .as_ref()
                    .and_then(|d| d.trackers.iter().find(|t| t.downloaded.is_some()))
                {
                    return t.clone();
                }
            }
            snaps.changed().await.unwrap();
        }
    })
    .await;
    let trackers = format!(
        "{:#?}",
        h.snapshots
            .borrow()
            .detail
            .as_ref()
            .map(|d| d.trackers.clone())
    );
    let (stx, srx) = tokio::sync::oneshot::channel();
    h.commands.send(Command::Shutdown(stx)).await.unwrap();
    let _ = srx.await;
    let row = got.unwrap_or_else(|_| panic!("no scrape figures shown: {trackers}"));
    assert!(
        row.seeds >= Some(1),
        "the libtorrent seeder is counted: {row:?}"
    );
    assert!(tracker.scrapes() >= 1, "the figures came from a scrape");
}
