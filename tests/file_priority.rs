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

/// A file skipped after part of it was written (it stays on disk, shorter than its
/// length) never fails the torrent: in a padded hybrid torrent (libtorrent's default,
/// pad files after each file), the download completes and seeds, and the skipped file keeps
/// exactly the bytes it had.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_skipped_when_partly_written_does_not_fail_a_padded_torrent_at_completion() {
    let tracker = TestTracker::start();
    let dir = temp_dir();
    let src = dir.path().join("src");
    let layout = [
        FileSpec::new("ep1.mkv", 1024 * 1024 + 7000),
        FileSpec::new("ep2.mkv", 2 * 1024 * 1024),
        FileSpec::new("ep10.mkv", 512 * 1024 + 300),
    ];
    payload::write_tree(&src.join("Show"), &layout, 11).unwrap();
    let torrent = dir.path().join("show.torrent");
    common::lt::make_padded_torrent(&src.join("Show"), &torrent, &tracker.url(), Some(PIECE));
    let ip = Ipv4Addr::new(127, 0, 0, 2);
    let _seeder = LtPeer::seed(&SeedArgs::new(&torrent, &src, ip, free_port_on(ip)));

    // ep2.mkv partly downloaded: its first 20 pieces are on disk, the file is short
    let dst = dir.path().join("dst");
    let partial = 20 * u64::from(PIECE);
    std::fs::create_dir_all(dst.join("Show")).unwrap();
    let ep2 = std::fs::read(src.join("Show/ep2.mkv")).unwrap();
    std::fs::write(dst.join("Show/ep2.mkv"), &ep2[..partial as usize]).unwrap();

    let config = ratorrent::config::engine::EngineConfig {
        download_dir: dst.clone(),
        listen_port: 0,
        dht: ratorrent::config::engine::DhtConfig::off(),
        ..ratorrent::config::engine::EngineConfig::default()
    };
    let h = session::start(config).await.unwrap();
    let id = h
        .client
        .add(AddRequest::new(torrent.clone()).paused(true))
        .await
        .unwrap();
    // a hybrid lists its files by name (the v2 file tree is a dictionary): ep1, ep10, ep2
    h.client
        .set_file_priority(id, vec![2], FilePriority::Skip)
        .await
        .unwrap();
    h.client.resume(id).await.unwrap();
    let row = wait_row(
        &h.client,
        id,
        "seeding, not Error",
        Duration::from_secs(60),
        |r| matches!(r.state, TorrentState::Seeding | TorrentState::Error),
    )
    .await;
    assert_eq!(row.state, TorrentState::Seeding, "{:?}", row.error);
    assert_eq!(row.done, row.size);
    println!(
        "skipped ep2.mkv: {} of {} bytes on disk; state {:?}, {} of {} pieces",
        std::fs::metadata(dst.join("Show/ep2.mkv")).unwrap().len(),
        ep2.len(),
        row.state,
        row.pieces_have,
        row.pieces_total
    );
    let now = std::fs::read(dst.join("Show/ep2.mkv")).unwrap();
    let same: Vec<usize> = now
        .chunks(PIECE as usize)
        .zip(ep2.chunks(PIECE as usize))
        .enumerate()
        .filter(|(_, (a, b))| a == b)
        .map(|(i, _)| i)
        .collect();
    println!("ep2 pieces as in the source: {same:?}");
    assert_eq!(&now[..partial as usize], &ep2[..partial as usize]);
    common::compare_files(&src.join("Show/ep1.mkv"), &dst.join("Show/ep1.mkv")).unwrap();
    common::compare_files(&src.join("Show/ep10.mkv"), &dst.join("Show/ep10.mkv")).unwrap();
    h.shutdown().await.unwrap();
}
