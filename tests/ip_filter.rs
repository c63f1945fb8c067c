//! The IP filter against real libtorrent peers on loopback: a seeder on a blocked address
//! is never dialled (libtorrent sees no connection, our peer list never shows it, the
//! blocked count rises) while a seeder on an open address serves the download; the filter
//! file rewritten to allow it, the blocked seeder is connected after the next look; and a
//! libtorrent peer dialling in from a blocked address is refused before the handshake.

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{LeechArgs, LtPeer, SeedArgs, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{AddRequest, AddSource, EventKind, Snapshot, TorrentState};
use ratorrent::config::engine::{DhtConfig, EngineConfig};
use ratorrent::engine::session;

/// Blocked, then allowed by the rewritten filter.
const BLOCKED_SEEDER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const OPEN_SEEDER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);
/// Blocked throughout; dials in.
const BLOCKED_LEECHER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 5);

fn has_peer_from(s: &Snapshot, ip: Ipv4Addr) -> bool {
    s.detail
        .as_ref()
        .is_some_and(|d| d.peers.iter().any(|p| p.addr.ip() == IpAddr::V4(ip)))
}

/// Wait (blocking this worker) for a stdout line of `peer` starting with `prefix`.
fn line(peer: &mut LtPeer, prefix: &str, timeout: Duration) -> Result<String, String> {
    tokio::task::block_in_place(|| peer.wait_line(prefix, timeout)).map_err(|e| e.0)
}

fn write_filter(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_peers_are_never_dialled_nor_accepted_until_the_filter_allows_them() {
    common::require_libtorrent();
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let data = dir.path().join("src").join("filtered.bin");
    std::fs::create_dir_all(data.parent().unwrap()).unwrap();
    common::payload::write_file(&data, 8 << 20, 0x1f11).unwrap();
    let torrent = dir.path().join("filtered.torrent");
    make_torrent(&data, &torrent, &tracker.url(), Some(64 * 1024));
    // both seeders only answer (no dials of their own) and report who connected
    let seed = |ip, limit| {
        let mut a = SeedArgs::new(&torrent, data.parent().unwrap(), ip, free_port_on(ip));
        a.upload_limit = limit;
        a.extra = vec!["--report-peers".into(), "--no-outgoing".into()];
        LtPeer::seed(&a)
    };
    let mut blocked = seed(BLOCKED_SEEDER, None);
    // slow: the download is still going when the filter is rewritten
    let mut open = seed(OPEN_SEEDER, Some(400 * 1024));
    // eMule lines, one range per blocked host, plus a line that cannot be read
    let filter = dir.path().join("ipfilter.dat");
    write_filter(
        &filter,
        "# test filter\n\
         127.000.000.002 - 127.000.000.002 , 000 , the first seeder\n\
         127.000.000.005 - 127.000.000.005 , 000 , the leecher\n\
         this line is not a range\n",
    );
    let config = EngineConfig {
        download_dir: dir.path().join("dst"),
        listen_port: 0,
        dht: DhtConfig::off(),
        ip_filter: Some(filter.clone()),
        ip_filter_poll: Duration::from_millis(300),
        ..EngineConfig::default()
    };
    let h = session::start(config).await.unwrap();
    let id = h
        .client
        .add(AddRequest::new(AddSource::File(torrent.clone())))
        .await
        .unwrap();
    h.client.focus(Some(id)).await.unwrap();

    // the open seeder serves; the blocked one is held back (counted), never in our list
    let serving = tokio::time::timeout(
        Duration::from_secs(10),
        h.client.wait_for(|s| {
            assert!(!has_peer_from(s, BLOCKED_SEEDER), "dialled a blocked peer");
            has_peer_from(s, OPEN_SEEDER) && s.global.blocked > 0
        }),
    )
    .await;
    let s = h.client.snapshot();
    assert!(
        serving.is_ok(),
        "open seeder connected, blocked counted: {:?}",
        s.global
    );
    assert_eq!(s.global.ip_filter_ranges, Some(2));
    let log = h.client.recent_events().await.unwrap();
    let loaded = log
        .iter()
        .find(|e| e.kind == EventKind::IpFilter)
        .expect("the load is in the session log");
    assert!(
        loaded.message.contains("2 ranges") && loaded.message.contains("1 malformed lines"),
        "{}",
        loaded.message
    );
    line(&mut open, "PEER 127.0.0.1:", Duration::from_secs(5)).expect("the open seeder saw us");
    // a while with the download running: libtorrent on the blocked address hears nothing
    let quiet = line(&mut blocked, "PEER 127.0.0.1:", Duration::from_secs(2));
    assert!(
        quiet.is_err(),
        "the blocked seeder saw a connection: {quiet:?}"
    );
    assert!(!has_peer_from(&h.client.snapshot(), BLOCKED_SEEDER));
    let done = h.client.snapshot().rows[0].done;
    assert!(
        done < 8 << 20,
        "still downloading when the filter changes ({done} bytes)"
    );

    // rewritten: the seeder's range now has access level 200 (allowed); the leecher stays
    write_filter(
        &filter,
        "127.000.000.002 - 127.000.000.002 , 200 , allowed now\n\
         127.000.000.005 - 127.000.000.005 , 000 , the leecher\n\
         # padding so the size changes too\n",
    );
    let t = Instant::now();
    let connected = tokio::time::timeout(
        Duration::from_secs(8),
        h.client.wait_for(|s| has_peer_from(s, BLOCKED_SEEDER)),
    )
    .await;
    assert!(
        connected.is_ok(),
        "the allowed seeder was never connected after the reload: {:?}",
        h.client.recent_events().await.unwrap()
    );
    println!(
        "connected to the allowed seeder {:?} after the rewrite",
        t.elapsed()
    );
    assert_eq!(h.client.snapshot().global.ip_filter_ranges, Some(1));
    line(&mut blocked, "PEER 127.0.0.1:", Duration::from_secs(5))
        .expect("libtorrent on the allowed address saw us");
    let seeding = tokio::time::timeout(
        Duration::from_secs(15),
        h.client.wait_for(|s| {
            s.rows
                .first()
                .is_some_and(|r| r.state == TorrentState::Seeding)
        }),
    )
    .await;
    assert!(
        seeding.is_ok(),
        "download done: {:?}",
        h.client.snapshot().rows
    );
    common::compare_files(&data, &dir.path().join("dst").join("filtered.bin")).unwrap();

    // a libtorrent leecher on a blocked address dials in: refused before the handshake
    let before = h.client.snapshot().global.blocked;
    let port = h.listen_port;
    let mut la = LeechArgs::new(
        &torrent,
        &dir.path().join("leecher"),
        BLOCKED_LEECHER,
        free_port_on(BLOCKED_LEECHER),
    );
    la.connect = vec![SocketAddr::from((Ipv4Addr::LOCALHOST, port))];
    la.timeout_s = 30;
    let leecher = LtPeer::leech(&la);
    let refused = tokio::time::timeout(
        Duration::from_secs(8),
        h.client.wait_for(|s| {
            assert!(
                !has_peer_from(s, BLOCKED_LEECHER),
                "a blocked peer was admitted"
            );
            s.global.blocked > before
        }),
    )
    .await;
    assert!(
        refused.is_ok(),
        "no refusal counted: {:?}",
        h.client.snapshot().global
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!has_peer_from(&h.client.snapshot(), BLOCKED_LEECHER));
    drop(leecher);
    h.shutdown().await.unwrap();
}
