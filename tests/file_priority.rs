//! File priorities against a real libtorrent seeder: a skipped file is not created and the
//! pieces wholly inside it are not fetched (its share of the pieces it shares with wanted
//! files waits in the part file); wanting it again downloads the rest and moves those bytes
//! into the file, byte-exact.

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::client::wait_row;
use common::payload::{self, FileSpec};
use common::{LtPeer, SeedArgs, TestTracker, free_port_on, make_torrent, temp_dir};
use ratorrent::api::{AddRequest, FilePriority, TorrentId, TorrentState};
use ratorrent::engine::session::{self, SessionHandle};

const PIECE: u32 = 64 * 1024;

async fn wait_state(h: &SessionHandle, id: TorrentId, ok: impl Fn(TorrentState) -> bool) {
    let within = Duration::from_secs(60);
    wait_row(&h.client, id, "state", within, |r| ok(r.state)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skipped_file_is_not_created_nor_fetched_and_wanting_it_completes_it() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    // b.bin shares its first piece with a.bin and its last with c.bin
    let layout = [
        FileSpec::new("a.bin", 3 * 1024 * 1024 + 100 * 1024),
        FileSpec::new("b.bin", 2 * 1024 * 1024 + 3000),
        FileSpec::new("c.bin", 1024 * 1024 + 5),
    ];
    payload::write_tree(&src.join("p"), &layout, 42).unwrap();
    let torrent = dir.path().join("p.torrent");
    make_torrent(&src.join("p"), &torrent, &tracker.url(), Some(PIECE));
    let ip = Ipv4Addr::new(127, 0, 0, 2);
    let _seeder = LtPeer::seed(&SeedArgs::new(&torrent, &src, ip, free_port_on(ip)));

    let dst = dir.path().join("dst");
    let config = ratorrent::config::engine::EngineConfig {
        download_dir: dst.clone(),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    };
    let h = session::start(config).await.unwrap();
    let request = AddRequest::new(torrent.clone()).paused(true);
    let id = h.client.add(request).await.unwrap();
    h.client
        .set_file_priority(id, vec![1], FilePriority::Skip)
        .await
        .unwrap();
    h.client.resume(id).await.unwrap();
    wait_state(&h, id, |s| s == TorrentState::Seeding).await;

    let row = h.client.snapshot().row(id).unwrap().clone();
    let total: u64 = layout.iter().map(|f| f.len).sum();
    let b = layout[1].len;
    assert_eq!(row.size, total - b, "size counts the wanted files");
    assert_eq!(row.done, row.size);
    assert!(
        row.downloaded <= total - b + 2 * u64::from(PIECE),
        "pieces wholly inside the skipped file were fetched: {} bytes downloaded",
        row.downloaded
    );
    assert!(
        !dst.join("p/b.bin").exists(),
        "a skipped file is not created"
    );
    common::compare_files(&src.join("p/a.bin"), &dst.join("p/a.bin")).unwrap();
    common::compare_files(&src.join("p/c.bin"), &dst.join("p/c.bin")).unwrap();
    let parts: Vec<_> = std::fs::read_dir(&dst)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".parts"))
        .collect();
    assert_eq!(
        parts.len(),
        1,
        "boundary bytes of b.bin wait in the part file"
    );

    // want it again: it downloads, the boundary bytes move in, the part file goes
    h.client
        .set_file_priority(id, vec![1], FilePriority::Normal)
        .await
        .unwrap();
    wait_state(&h, id, |s| s == TorrentState::Downloading).await;
    wait_state(&h, id, |s| s == TorrentState::Seeding).await;
    common::compare_files(&src.join("p/b.bin"), &dst.join("p/b.bin")).unwrap();
    assert!(!parts[0].path().exists(), "the part file is removed");
    let row = h.client.snapshot().row(id).unwrap().clone();
    assert_eq!(row.size, total);
    assert_eq!(row.pieces_have, row.pieces_total);
    h.shutdown().await.unwrap();
}
